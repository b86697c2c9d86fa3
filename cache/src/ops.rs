//! The cache's operations, written once for both PHP front ends: `UserCache\Cache`
//! (`api.rs`) and the `apcu_*` layer (`apcu.rs`). A front end parses its PHP arguments,
//! checks them by its own API's rules (key length, TTL, `apc.enabled`), calls one of
//! these and turns the result into its API's return value, warning or exception; the
//! operations themselves neither parse arguments nor report errors, except that a PHP
//! exception thrown while building or producing a value stays pending.
//!
//! Each operation is one cache call on this thread ([`epoch::in_call`]): whatever it
//! reads from the index stays allocated until it returns. This file also holds the
//! process's one cache and the points where a thread hands back what it held.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use php_sys as sys;

use super::epoch::{self, ThreadRec};
use super::ffi;
use super::table::{self, Mode, Node, StoreResult, Table, Value};
use super::value::{self, FreezeError, Frozen};
use super::zv;

static CACHE: OnceLock<Table> = OnceLock::new();

/// Default `usercache.memory_limit`.
pub(crate) const DEFAULT_LIMIT: usize = 64 << 20;

/// The process's cache (made at module start-up by [`install`]; with the default limits
/// if that did not run).
pub(crate) fn cache() -> &'static Table {
    CACHE.get_or_init(|| Table::new(DEFAULT_LIMIT, DEFAULT_LIMIT / 4, DEFAULT_LIMIT / 1024))
}

/// Makes `table` the process's cache (module start-up; a second call changes nothing).
pub(crate) fn install(table: Table) {
    let _ = CACHE.set(table);
}

/// Frees all cache memory, if a cache was made. Only when no PHP thread runs (module
/// shutdown).
pub(crate) fn destroy() {
    if let Some(t) = CACHE.get() {
        t.destroy();
    }
}

/// Merges this thread's LRU touches into the index and frees what no thread can reach
/// any more (never blocks: with the writer lock taken, that waits for the next time).
pub(crate) fn flush_touches() {
    epoch::with_local(|local| {
        let mut touches = local.touches.borrow_mut();
        cache().quiesce(&mut touches);
    });
}

/// Frees what no thread can reach any more, once this thread holds nothing (its request's
/// variables are destroyed).
pub(crate) fn reclaim() {
    let mut none = Vec::new();
    cache().quiesce(&mut none);
}

/// What [`fetch_into`] found.
pub(crate) enum Fetched {
    /// The value is in the destination.
    Hit,
    /// No live entry: the destination is untouched.
    Miss,
    /// The value could not be rebuilt; a PHP exception is pending.
    Failed,
}

/// Looks `key` up and writes its value into `dst` (zero-copy where possible; a deep copy
/// with `force_copy`, or while retired memory is over its cap).
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable.
pub(crate) unsafe fn fetch_into(
    key: &[u8],
    hash: u64,
    dst: *mut sys::zval,
    force_copy: bool,
) -> Fetched {
    let table = cache();
    epoch::in_call(|local| match table.lookup(hash, key) {
        Some(node) if !(node.expires != 0 && node.expired(table::now())) => {
            epoch::bump(&local.rec.hits);
            if let Ok(mut t) = local.touches.try_borrow_mut() {
                let id = node.touch_id();
                if t.last() != Some(&id) && t.len() < 8192 {
                    t.push(id);
                }
            }
            match &node.value {
                Value::Scalar(z) => {
                    // SAFETY: `dst` is writable (guaranteed by the caller) and a stored
                    // scalar needs no refcounting.
                    unsafe { zv::copy_plain(dst, z) };
                    Fetched::Hit
                }
                Value::Block(b) => {
                    let copy = force_copy || table.copying();
                    // SAFETY: on a PHP thread in a request with `dst` writable (guaranteed
                    // by the caller). A shared block stays reachable by this thread until
                    // its request ends because its reader bit is set before it is handed
                    // out (epoch.rs); a copied one only needs to live during this call.
                    let ok = unsafe {
                        if copy || !value::shares_memory(b) {
                            value::thaw_copy(b, dst)
                        } else {
                            epoch::mark_reader(local, &b.readers);
                            value::thaw(b, dst)
                        }
                    };
                    if ok {
                        Fetched::Hit
                    } else {
                        Fetched::Failed
                    }
                }
            }
        }
        _ => {
            epoch::bump(&local.rec.misses);
            Fetched::Miss
        }
    })
}

/// Freezes `value` and stores it under `key` for `ttl` seconds (0: no expiry). Ok(false)
/// when it was not stored (an existing key with [`Mode::Add`], or no room); Err when the
/// value cannot be stored, for the front end to report in its API's way.
///
/// # Safety
/// On a PHP thread inside a request; `value` live.
pub(crate) unsafe fn store(
    key: &[u8],
    hash: u64,
    value: *const sys::zval,
    ttl: u64,
    mode: Mode,
) -> Result<bool, FreezeError> {
    // SAFETY: guaranteed by the caller.
    let frozen = unsafe { value::freeze(value) }?;
    let value = match frozen {
        Frozen::Scalar(z) => Value::Scalar(z),
        Frozen::Block(b) => Value::Block(b),
    };
    let table = cache();
    let r = epoch::in_call(|_| table.store(hash, key, value, ttl, mode));
    Ok(matches!(r, StoreResult::Stored))
}

/// Whether `key` has a live (unexpired) entry.
pub(crate) fn exists(key: &[u8], hash: u64) -> bool {
    let table = cache();
    epoch::in_call(|_| {
        table
            .lookup(hash, key)
            .is_some_and(|n| !n.expired(table::now()))
    })
}

/// Removes `key`; whether a live entry was removed.
pub(crate) fn delete(key: &[u8], hash: u64) -> bool {
    epoch::in_call(|_| cache().delete(hash, key))
}

/// Removes every entry.
pub(crate) fn clear() {
    epoch::in_call(|_| cache().clear());
}

/// Adds `step` to the int stored under `key` (an absent key counts as 0 and is created
/// with `ttl`); Some(new value), or None when the entry is not an int (or no room).
pub(crate) fn add_to(key: &[u8], hash: u64, step: i64, ttl: u64) -> Option<i64> {
    let r = epoch::in_call(|_| {
        cache().update(hash, key, ttl, |cur| {
            let old = match cur {
                None => 0,
                Some(Value::Scalar(z)) => zv::long_of(z).ok_or(None)?,
                Some(Value::Block(_)) => return Err(None),
            };
            let new = old.wrapping_add(step);
            Ok((Value::Scalar(zv::long(new)), Some(new)))
        })
    });
    r.flatten()
}

/// Compare-and-swap of an int entry: stores `new` when the entry holds the int `old`.
pub(crate) fn cas(key: &[u8], hash: u64, old: i64, new: i64) -> bool {
    let r = epoch::in_call(|_| {
        cache().update(hash, key, 0, |cur| match cur {
            Some(Value::Scalar(z)) if zv::long_of(z) == Some(old) => {
                Ok((Value::Scalar(zv::long(new)), true))
            }
            _ => Err(false),
        })
    });
    r.unwrap_or(false)
}

// ---------------------------------------------------------------------------------------
// Fetch or produce (`remember`, `apcu_entry`).
// ---------------------------------------------------------------------------------------

/// One producer per key at a time, across threads.
struct Flight {
    done: Mutex<bool>,
    cv: Condvar,
    owner: Arc<ThreadRec>,
    owner_request: u64,
}

fn flights() -> &'static Mutex<HashMap<Vec<u8>, Arc<Flight>>> {
    static F: OnceLock<Mutex<HashMap<Vec<u8>, Arc<Flight>>>> = OnceLock::new();
    F.get_or_init(|| Mutex::new(HashMap::new()))
}

fn end_flight(key: &[u8], flight: &Arc<Flight>) {
    let mut map = flights().lock().unwrap_or_else(|e| e.into_inner());
    if map.get(key).is_some_and(|f| Arc::ptr_eq(f, flight)) {
        map.remove(key);
    }
    drop(map);
    *flight.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
    flight.cv.notify_all();
}

/// What [`remember`] does when the producer for a key asks for the same key again (on
/// the same thread, in the same request).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reentry {
    /// Run the inner producer at once, as APCu's `apcu_entry` does (its lock is
    /// recursive).
    Produce,
    /// Give up: [`remember`] returns [`Remembered::Reentered`].
    Refuse,
}

/// How [`remember`] ended.
#[derive(PartialEq, Eq)]
pub(crate) enum Remembered {
    /// `dst` holds the cached or the produced value, or a PHP exception is pending.
    Done,
    /// Refused re-entry ([`Reentry::Refuse`]): nothing written, nothing thrown.
    Reentered,
}

/// The cached value of `key` in `dst`, or else the value `producer(args...)` returns,
/// passed to `store` and then written to `dst` whether or not it was stored. `store`
/// returns Err when a PHP exception is pending (then `dst` is left alone). Only one
/// thread produces a key's value at a time; the others wait for it (never for the whole
/// cache), and take over from a producer whose request died.
///
/// # Safety
/// On a PHP thread inside a request; `producer` callable; `args` live and passed to it;
/// `dst` writable.
pub(crate) unsafe fn remember(
    key: &[u8],
    hash: u64,
    producer: *mut sys::zval,
    args: &mut [sys::zval],
    dst: *mut sys::zval,
    reentry: Reentry,
    store: impl FnOnce(*const sys::zval) -> Result<bool, ()>,
) -> Remembered {
    let flight = loop {
        // SAFETY: guaranteed by the caller.
        match unsafe { fetch_into(key, hash, dst, false) } {
            Fetched::Hit | Fetched::Failed => return Remembered::Done,
            Fetched::Miss => {}
        }
        let (me, my_request) = epoch::with_local(|l| (l.rec.clone(), epoch::current_request(l)));
        let mut map = flights().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(key).cloned() {
            drop(map);
            if Arc::ptr_eq(&f.owner, &me) && f.owner_request == my_request {
                match reentry {
                    Reentry::Produce => break None,
                    Reentry::Refuse => return Remembered::Reentered,
                }
            }
            // Wait for the producer's value. A producer whose request died (fatal error)
            // is abandoned: take over.
            let mut done = f.done.lock().unwrap_or_else(|e| e.into_inner());
            while !*done {
                let (d, _) =
                    f.cv.wait_timeout(done, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner());
                done = d;
                if f.owner.request() != f.owner_request {
                    drop(done);
                    end_flight(key, &f);
                    break;
                }
            }
            continue;
        }
        let flight = Arc::new(Flight {
            done: Mutex::new(false),
            cv: Condvar::new(),
            owner: me,
            owner_request: my_request,
        });
        map.insert(key.to_vec(), flight.clone());
        drop(map);
        break Some(flight);
    };
    let end = |flight: &Option<Arc<Flight>>| {
        if let Some(f) = flight {
            end_flight(key, f);
        }
    };
    let mut produced = sys::zval::default();
    // SAFETY: `producer` is callable and `args` live (guaranteed by the caller); the
    // call may throw, leaving `produced` UNDEF.
    let ok = unsafe {
        ffi::ferrophp_uc_call(
            producer,
            &mut produced,
            args.len() as u32,
            args.as_mut_ptr(),
        )
    };
    if !ok || zv::has_exception() {
        // SAFETY: `produced` is ours: whatever the call returned is released.
        unsafe { ffi::ferrophp_uc_zval_dtor(&mut produced) };
        end(&flight);
        return Remembered::Done;
    }
    let stored = store(&produced);
    end(&flight);
    if stored.is_err() {
        // SAFETY: `produced` is ours and not handed out: it is released here.
        unsafe { ffi::ferrophp_uc_zval_dtor(&mut produced) };
        return Remembered::Done;
    }
    // SAFETY: `dst` is writable (guaranteed by the caller); the produced value's
    // reference moves into it.
    unsafe { *dst = produced };
    Remembered::Done
}

// ---------------------------------------------------------------------------------------
// Counters and listings (`info()`, `apcu_cache_info()`, `APCUIterator`, `/metrics`).
// ---------------------------------------------------------------------------------------

/// The cache's counters at one moment (each read on its own, relaxed).
pub(crate) struct Counters {
    pub(crate) entries: u64,
    pub(crate) live_bytes: u64,
    /// Bytes retired (overwritten, deleted) but not yet freed.
    pub(crate) retired_bytes: u64,
    pub(crate) memory_limit: u64,
    pub(crate) retired_limit: u64,
    /// Index buckets.
    pub(crate) slots: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// PHP threads with a cache record.
    pub(crate) threads: u64,
    /// Fetches copy instead of sharing ([`Table::copying`]).
    pub(crate) copying: bool,
    pub(crate) stores: u64,
    pub(crate) evictions: u64,
    pub(crate) expunges: u64,
    pub(crate) reclaimed: u64,
    pub(crate) full_failures: u64,
}

impl Counters {
    /// Live plus retired bytes: what counts against the memory limit.
    pub(crate) fn memory_used(&self) -> u64 {
        self.live_bytes + self.retired_bytes
    }
}

/// Reads the counters. Hits and misses are per-thread counters (no shared write on the
/// read path), summed over threads here: a scrape's cost, not a request's.
pub(crate) fn counters() -> Counters {
    let t = cache();
    let (hits, misses, threads) = epoch::stats();
    Counters {
        entries: t.entries.load(Ordering::Relaxed) as u64,
        live_bytes: t.live_bytes.load(Ordering::Relaxed) as u64,
        retired_bytes: t.retired_bytes.load(Ordering::Relaxed) as u64,
        memory_limit: t.limit as u64,
        retired_limit: t.retired_cap as u64,
        slots: t.slots() as u64,
        hits,
        misses,
        threads: threads as u64,
        copying: t.copying(),
        stores: t.stores.load(Ordering::Relaxed),
        evictions: t.evictions.load(Ordering::Relaxed),
        expunges: t.expunges.load(Ordering::Relaxed),
        reclaimed: t.reclaimed.load(Ordering::Relaxed),
        full_failures: t.full_failures.load(Ordering::Relaxed),
    }
}

/// What the listings report about one live entry.
pub(crate) struct EntryMeta {
    pub(crate) key: Vec<u8>,
    pub(crate) hash: u64,
    /// The TTL it was stored with (0: none).
    pub(crate) ttl: u64,
    /// Unix time it was stored.
    pub(crate) created: u64,
    /// Bytes it counts against the limit.
    pub(crate) bytes: usize,
}

impl EntryMeta {
    fn of(n: &Node) -> EntryMeta {
        EntryMeta {
            key: n.key().to_vec(),
            hash: n.hash(),
            ttl: if n.expires == 0 {
                0
            } else {
                n.expires.saturating_sub(n.created)
            },
            created: n.created,
            bytes: n.bytes(),
        }
    }
}

/// The live (unexpired) entries in the order they were stored.
pub(crate) fn entries() -> Vec<EntryMeta> {
    let table = cache();
    let now = table::now();
    let mut out: Vec<(u64, EntryMeta)> = Vec::new();
    epoch::in_call(|_| {
        table.for_each_node(|n| {
            if !n.expired(now) {
                out.push((n.seq, EntryMeta::of(n)));
            }
        });
    });
    out.sort_unstable_by_key(|(seq, _)| *seq);
    out.into_iter().map(|(_, m)| m).collect()
}

/// The live entry of `key`, if any.
pub(crate) fn entry(key: &[u8], hash: u64) -> Option<EntryMeta> {
    let table = cache();
    let now = table::now();
    epoch::in_call(|_| {
        table
            .lookup(hash, key)
            .filter(|n| !n.expired(now))
            .map(EntryMeta::of)
    })
}
