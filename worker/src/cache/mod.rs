//! `UserCache\Cache`: one cache of PHP values shared by every PHP thread of the process,
//! with zero-copy reads of strings and arrays. See docs/usercache.md for the design.
//!
//! - [`value`]: freezing a PHP value into an immutable block, thawing it on fetch;
//!   [`arena`]: the chunks a block's strings are carved from.
//! - [`table`]: the lock-free-read index, memory limit, eviction.
//! - [`epoch`]: when retired memory may be freed (no shared writes on reads).
//! - [`api`]: the PHP methods; [`apcu`]: the optional `apcu_*` functions.
//!
//! Engine hooks (module.rs calls them): [`module_startup`], [`request_startup`],
//! [`request_shutdown`], the post-deactivate hook registered at start-up, and
//! [`module_shutdown`]. The worker loop (worker_mode.rs) should call [`on_request_end`]
//! after each HTTP request it serves and may restart its script when
//! [`worker_restart_recommended`] says so; nothing else is needed for safety.

mod apcu;
pub(crate) mod api;
pub(crate) mod arena;
pub(crate) mod epoch;
/// For `observe::cache()` (the admin `/metrics`).
pub(crate) use epoch::stats as epoch_stats;
pub(crate) mod table;
mod value;
pub(crate) mod zv;

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use php_sys as sys;

use table::Table;

static CACHE: OnceLock<Table> = OnceLock::new();

/// Default `usercache.memory_limit`.
const DEFAULT_LIMIT: usize = 64 << 20;

/// The process's cache (created at module start-up; with defaults if that did not run).
pub(crate) fn cache() -> &'static Table {
    CACHE.get_or_init(|| Table::new(DEFAULT_LIMIT, DEFAULT_LIMIT / 4, DEFAULT_LIMIT / 1024))
}

/// Parses an ini size: `64M`, `512k`, `1G`, or bytes.
pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

pub(crate) fn ini_string(name: &CStr) -> Option<String> {
    // SAFETY: reads a registered ini entry's current value (a NUL-terminated string PHP
    // owns) during module start-up.
    unsafe {
        let mut exists = false;
        let v = sys::zend_ini_string_ex(
            name.as_ptr() as *mut _,
            name.to_bytes().len(),
            0,
            &mut exists,
        );
        if v.is_null() || !exists {
            return None;
        }
        Some(CStr::from_ptr(v).to_string_lossy().into_owned())
    }
}

/// MINIT: ini entries, classes, the cache itself, the optional apcu_* functions, and the
/// post-deactivate hook (the point where a request's variables are gone).
pub(crate) fn module_startup(module_number: c_int) {
    // SAFETY: MINIT of our module, on the engine's main thread.
    unsafe {
        sys::ferrophp_uc_register_ini(module_number);
        sys::ferrophp_uc_register_classes();
    }
    let apcu = apcu::module_startup(module_number);
    // Without a usercache.memory_limit of its own, an app's apc.shm_size sizes the cache.
    // SAFETY: reads the configuration hash during MINIT.
    let own_limit =
        unsafe { sys::ferrophp_uc_ini_configured(c"usercache.memory_limit".as_ptr(), 22) };
    let limit_ini = if apcu && !own_limit {
        c"apc.shm_size"
    } else {
        c"usercache.memory_limit"
    };
    let limit = ini_string(limit_ini)
        .and_then(|s| parse_size(&s))
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_LIMIT);
    let retired = ini_string(c"usercache.retired_limit")
        .and_then(|s| parse_size(&s))
        .filter(|&n| n > 0)
        .unwrap_or(limit / 4);
    let hint = ini_string(c"usercache.entries_hint")
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(limit / 1024);
    let _ = CACHE.set(Table::new(limit, retired, hint));

    // SAFETY: looks up the registered copy of our own module entry; zend_post_deactivate
    // handlers are collected after every MINIT ran, so setting ours here takes effect.
    unsafe {
        let me = sys::ferrophp_uc_find_module(c"ferrophp".as_ptr(), 8);
        if !me.is_null() && (*me).post_deactivate_func.is_none() {
            (*me).post_deactivate_func = Some(sys::ferrophp_uc_post_deactivate);
        }
    }
}

/// MSHUTDOWN: every PHP thread has stopped; free all cache memory.
pub(crate) fn module_shutdown() {
    if let Some(t) = CACHE.get() {
        t.destroy();
    }
}

/// RINIT: this thread may now hand out values until its request ends.
pub(crate) fn request_startup() {
    epoch::request_start();
}

/// RSHUTDOWN: merge this request's LRU touches (variables are still alive here).
pub(crate) fn request_shutdown() {
    flush_touches();
}

fn flush_touches() {
    epoch::with_local(|local| {
        let mut touches = local.touches.borrow_mut();
        cache().quiesce(&mut touches);
    });
}

/// Post-deactivate: the request's variables are destroyed; this thread holds nothing.
#[no_mangle]
pub extern "C" fn ferrophp_uc_post_deactivate() -> sys::zend_result {
    epoch::request_end();
    let mut none = Vec::new();
    cache().quiesce(&mut none);
    sys::ZEND_RESULT_CODE_SUCCESS
}

/// Worker mode: call after each HTTP request a worker script served (outside any cache
/// call). Merges LRU touches, frees what can be freed, and clears a cache call left open
/// by a fatal error inside the handler. It is *not* a quiescent point: the worker's
/// variables live on, so blocks it fetched stay pinned until its script ends.
pub(crate) fn on_request_end() {
    epoch::reset_active();
    flush_touches();
}

/// Worker mode: true when retired memory pinned by long-lived scripts is over
/// `usercache.retired_limit`; restarting worker scripts releases it. Fetches copy
/// instead of sharing meanwhile, so memory stays bounded either way.
pub(crate) fn worker_restart_recommended() -> bool {
    let t = cache();
    t.retired_bytes.load(std::sync::atomic::Ordering::Relaxed) > t.retired_cap
}
