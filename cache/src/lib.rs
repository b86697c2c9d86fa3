//! `UserCache\Cache`: one cache of PHP values shared by every PHP thread of the process,
//! with zero-copy reads of strings and arrays. See docs/usercache.md for the design.
//!
//! The layout, from the PHP surface down (imports only go downwards; nothing imports
//! this file, which holds the engine hooks):
//!
//! - Two PHP front ends, adapters that translate their API's arguments, switches,
//!   results and errors and nothing else: [`api`] (`UserCache\Cache`'s methods) and
//!   [`apcu`] (the optional `apcu_*` functions and `apc.*` entries: `apcu.rs` the
//!   functions that read and write entries, `apcu/info.rs` the info functions,
//!   `apcu/iterator.rs` `APCUIterator`).
//! - [`ops`]: the one implementation of every operation both front ends offer (fetch,
//!   store/add, exists, delete, inc/dec, cas, fetch-or-produce, clear, counters,
//!   listings), and the process's cache itself.
//! - [`table`]: the lock-free-read index, memory limit, eviction.
//! - [`value`]: what a stored value is (an immutable block); `value/freeze.rs` builds one
//!   from a PHP value on store, `value/thaw.rs` makes a PHP value of it on fetch;
//!   [`arena`]: the chunks a block's strings are carved from.
//! - [`epoch`]: when retired memory may be freed (no shared writes on reads).
//! - The FFI edge everything above shares: [`zv`] (reading and building zvals, calling
//!   PHP functions, parsing arguments), [`errors`] (exceptions, argument errors and
//!   warnings, each raised one way), [`ini`] (the ini entries read at start-up), and
//!   the C side (built by `build.rs`: `usercache.c` registers `UserCache\Cache` and holds
//!   one small C function per zval macro, `apcu.c` registers the `apcu_*` layer; their
//!   arginfo and tables are generated from `stubs/*.stub.php`), which [`ffi`] declares.
//!
//! This crate is the whole cache; the worker crate (`ferrophp-worker`) only drives it through the
//! engine hooks below, which its PHP module calls: [`module_startup`] (registers the
//! classes, functions and ini entries), [`request_startup`], [`request_shutdown`], the
//! post-deactivate hook installed at start-up, and [`module_shutdown`]. The worker loop
//! should call [`on_request_end`] after each HTTP request it serves and may restart its
//! script when [`worker_restart_recommended`] says so; nothing else is needed for safety.
//! [`stats`] is for the admin `/metrics`; [`zv`] is shared with the worker crate's own PHP
//! functions; [`fuzzing`] holds the fuzz targets of the pure-Rust parts.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

mod apcu;
mod api;
mod arena;
mod epoch;
mod errors;
mod ffi;
#[doc(hidden)]
pub mod fuzzing;
mod ini;
mod ops;
mod table;
mod value;
pub mod zv;

use std::ffi::{c_int, CStr};

use php_sys as sys;

use table::Table;

/// MINIT of `host_module` (the PHP extension the runtime registers, whose number is
/// `module_number`): ini entries, classes, the cache itself, the optional apcu_*
/// functions, and the host's post-deactivate hook (the point where a request's variables
/// are gone), which the cache takes over.
pub fn module_startup(module_number: c_int, host_module: &CStr) {
    // SAFETY: MINIT of our module, on the engine's main thread.
    unsafe {
        ffi::ferrophp_uc_register_ini(module_number);
        ffi::ferrophp_uc_register_classes();
    }
    let apcu = apcu::module_startup(module_number);
    // Without a usercache.memory_limit of its own, an app's apc.shm_size sizes the cache.
    let limit_ini = if apcu && !ini::configured(c"usercache.memory_limit") {
        c"apc.shm_size"
    } else {
        c"usercache.memory_limit"
    };
    let limit = ini::size(limit_ini)
        .filter(|&n| n > 0)
        .unwrap_or(ops::DEFAULT_LIMIT);
    let retired = ini::size(c"usercache.retired_limit")
        .filter(|&n| n > 0)
        .unwrap_or(limit / 4);
    let hint = ini::string(c"usercache.entries_hint")
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(limit / 1024);
    ops::install(Table::new(limit, retired, hint));

    // SAFETY: looks up the registered copy of the host's module entry; zend_post_deactivate
    // handlers are collected after every MINIT ran, so setting ours here takes effect.
    unsafe {
        let name = host_module.to_bytes();
        let me = ffi::ferrophp_uc_find_module(name.as_ptr().cast(), name.len());
        if !me.is_null() && (*me).post_deactivate_func.is_none() {
            (*me).post_deactivate_func = Some(post_deactivate);
        }
    }
}

/// MSHUTDOWN: every PHP thread has stopped; free all cache memory.
pub fn module_shutdown() {
    ops::destroy();
}

/// RINIT: this thread may now hand out values until its request ends.
pub fn request_startup() {
    epoch::request_start();
}

/// RSHUTDOWN: merge this request's LRU touches (variables are still alive here).
pub fn request_shutdown() {
    ops::flush_touches();
}

/// Post-deactivate: the request's variables are destroyed; this thread holds nothing.
extern "C" fn post_deactivate() -> sys::zend_result {
    epoch::request_end();
    ops::reclaim();
    sys::ZEND_RESULT_CODE_SUCCESS
}

/// Worker mode: call after each HTTP request a worker script served (outside any cache
/// call). Merges LRU touches, frees what can be freed, and clears a cache call left open
/// by a fatal error inside the handler. It is *not* a quiescent point: the worker's
/// variables live on, so blocks it fetched stay pinned until its script ends.
pub fn on_request_end() {
    epoch::reset_active();
    ops::flush_touches();
}

/// Worker mode: true when retired memory pinned by long-lived scripts is over
/// `usercache.retired_limit`; restarting worker scripts releases it. Fetches copy
/// instead of sharing meanwhile, so memory stays bounded either way.
pub fn worker_restart_recommended() -> bool {
    ops::cache().copying()
}

/// The cache's counters: the same numbers as `UserCache\Cache::info()`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Entries in the index (expired ones count until removed).
    pub entries: u64,
    /// Live plus retired (not yet freed) bytes.
    pub memory_used: u64,
    /// `usercache.memory_limit` (or `apc.shm_size`) in bytes.
    pub memory_limit: u64,
    /// Fetches that found a live entry, over every thread.
    pub hits: u64,
    /// Fetches that found nothing (or an expired entry).
    pub misses: u64,
    /// Values stored by `store`/`add` (and their apcu_* forms).
    pub stores: u64,
    /// Live entries evicted to make room, least recently used first.
    pub evictions: u64,
    /// Expired entries removed to make room (before any live one is evicted).
    pub expunges: u64,
}

/// Reads the counters. Hits and misses are per-thread counters (no shared write on the
/// read path), summed over threads here: a scrape's cost, not a request's.
pub fn stats() -> Stats {
    let c = ops::counters();
    Stats {
        entries: c.entries,
        memory_used: c.memory_used(),
        memory_limit: c.memory_limit,
        hits: c.hits,
        misses: c.misses,
        stores: c.stores,
        evictions: c.evictions,
        expunges: c.expunges,
    }
}
