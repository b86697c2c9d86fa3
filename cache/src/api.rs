//! The static methods of `UserCache\Cache` (arginfo in cache/usercache.c, stubs in
//! cache/stubs/UserCache.php) and the operations they share with the apcu_* layer.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use php_sys as sys;

use super::cache;
use super::epoch::{self, ThreadRec};
use super::errors::{self, Exception};
use super::ffi;
use super::table::{self, Mode, StoreResult, Value};
use super::value::{self, FreezeError, Frozen};
use super::zv;

/// Keys are 1 to 4096 bytes.
pub(crate) const MAX_KEY: usize = 4096;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// Checks a key argument; throws the ValueError itself.
pub(crate) fn valid_key(arg: u32, key: &[u8]) -> bool {
    if key.is_empty() {
        errors::argument_value_error(arg, "must not be empty");
        return false;
    }
    if key.len() > MAX_KEY {
        errors::argument_value_error(arg, "must be at most 4096 bytes long");
        return false;
    }
    true
}

fn valid_ttl(arg: u32, ttl: sys::zend_long) -> bool {
    if ttl < 0 {
        errors::argument_value_error(arg, "must be greater than or equal to 0");
        return false;
    }
    true
}

// ---------------------------------------------------------------------------------------
// Shared operations.
// ---------------------------------------------------------------------------------------

pub(crate) enum Fetched {
    Hit,
    Miss,
    /// A PHP exception is pending.
    Failed,
}

/// Looks `key` up and writes its value into `dst` (zero-copy where possible).
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable.
pub(crate) unsafe fn fetch_into(key: &[u8], hash: u64, dst: Rv, force_copy: bool) -> Fetched {
    let table = cache();
    epoch::with_local(|local| {
        epoch::enter(local);
        let result = match table.lookup(hash, key) {
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
                        // SAFETY: scalars need no refcounting.
                        unsafe { zv::copy_plain(dst, z) };
                        Fetched::Hit
                    }
                    Value::Block(b) => {
                        let copy = force_copy
                            || table.retired_bytes.load(Ordering::Relaxed) > table.retired_cap;
                        // SAFETY: the block is reachable by this thread until its request
                        // ends (a reader bit is set first when sharing), see epoch.rs.
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
        };
        epoch::leave(local);
        result
    })
}

/// Freezes and stores `value`. False (with an exception or a false return) on failure.
///
/// # Safety
/// On a PHP thread inside a request; `value` live.
pub(crate) unsafe fn store_value(
    key: &[u8],
    hash: u64,
    value: *const sys::zval,
    ttl: u64,
    mode: Mode,
) -> Result<bool, ()> {
    // SAFETY: guaranteed by the caller.
    match unsafe { try_store_value(key, hash, value, ttl, mode) } {
        Ok(stored) => Ok(stored),
        Err(FreezeError::Refused(msg)) => {
            errors::throw(Exception::Cache, &msg);
            Err(())
        }
        Err(FreezeError::Thrown) => Err(()),
    }
}

/// [`store_value`] that leaves reporting a refusal to the caller (the apcu_* layer warns
/// where APCu warns).
///
/// # Safety
/// As for [`store_value`].
pub(crate) unsafe fn try_store_value(
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
    let r = epoch::with_local(|local| {
        epoch::enter(local);
        let r = table.store(hash, key, value, ttl, mode);
        epoch::leave(local);
        r
    });
    Ok(matches!(r, StoreResult::Stored))
}

pub(crate) fn exists(key: &[u8], hash: u64) -> bool {
    let table = cache();
    epoch::with_local(|local| {
        epoch::enter(local);
        let r = table
            .lookup(hash, key)
            .is_some_and(|n| !n.expired(table::now()));
        epoch::leave(local);
        r
    })
}

pub(crate) fn delete(key: &[u8], hash: u64) -> bool {
    epoch::with_local(|local| {
        epoch::enter(local);
        let r = cache().delete(hash, key);
        epoch::leave(local);
        r
    })
}

/// `increment`/`decrement`: Some(new value), or None when the entry is not an int (or no
/// room).
pub(crate) fn add_to(key: &[u8], hash: u64, step: i64, ttl: u64) -> Option<i64> {
    epoch::with_local(|local| {
        epoch::enter(local);
        let r = cache().update(hash, key, ttl, |cur| {
            let old = match cur {
                None => 0,
                Some(Value::Scalar(z)) if zv::type_of(z) == zv::IS_LONG => {
                    // SAFETY: an IS_LONG zval's value is lval.
                    unsafe { z.value.lval }
                }
                Some(_) => return Err(None),
            };
            let new = old.wrapping_add(step);
            Ok((Value::Scalar(zv::long(new)), Some(new)))
        });
        epoch::leave(local);
        r.flatten()
    })
}

pub(crate) fn cas(key: &[u8], hash: u64, old: i64, new: i64) -> bool {
    epoch::with_local(|local| {
        epoch::enter(local);
        let r = cache().update(hash, key, 0, |cur| match cur {
            // SAFETY: an IS_LONG zval's value is lval.
            Some(Value::Scalar(z))
                if zv::type_of(z) == zv::IS_LONG && unsafe { z.value.lval } == old =>
            {
                Ok((Value::Scalar(zv::long(new)), true))
            }
            _ => Err(false),
        });
        epoch::leave(local);
        r.unwrap_or(false)
    })
}

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

/// `remember`: the cached value, or the producer's (stored) result.
///
/// # Safety
/// On a PHP thread inside a request; `producer` callable; `args` passed to it.
pub(crate) unsafe fn remember(
    key: &[u8],
    hash: u64,
    producer: *mut sys::zval,
    args: &mut [sys::zval],
    ttl: u64,
    dst: Rv,
) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        remember_with(key, hash, producer, args, dst, false, |v| {
            store_value(key, hash, v, ttl, Mode::Overwrite)
        })
    }
}

/// [`remember`] with the caller's store (`apcu_entry` reports refusals as APCu does).
/// `store` returns Err when an exception is pending; the produced value is returned
/// whether or not it was stored.
///
/// # Safety
/// As for [`remember`].
pub(crate) unsafe fn remember_with(
    key: &[u8],
    hash: u64,
    producer: *mut sys::zval,
    args: &mut [sys::zval],
    dst: Rv,
    reentrant: bool,
    store: impl FnOnce(*const sys::zval) -> Result<bool, ()>,
) {
    let flight = loop {
        // SAFETY: guaranteed by the caller.
        match unsafe { fetch_into(key, hash, dst, false) } {
            Fetched::Hit | Fetched::Failed => return,
            Fetched::Miss => {}
        }
        let (me, my_request) = epoch::with_local(|l| (l.rec.clone(), epoch::current_request(l)));
        let mut map = flights().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(key).cloned() {
            drop(map);
            if Arc::ptr_eq(&f.owner, &me) && f.owner_request == my_request {
                if reentrant {
                    // apcu_entry inside its own producer for the same key: APCu runs the
                    // inner producer at once (its lock is recursive).
                    break None;
                }
                errors::throw(
                    Exception::Cache,
                    "remember(): the producer for this key called remember() for the same key",
                );
                return;
            }
            // Wait for the producer's value (never for the whole cache). A producer whose
            // request died (fatal error) is abandoned: take over.
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
    {
        let mut produced = sys::zval::default();
        // SAFETY: calling the user's producer; it may throw (then `produced` is UNDEF).
        let ok = unsafe {
            ffi::ferrophp_uc_call(
                producer,
                &mut produced,
                args.len() as u32,
                args.as_mut_ptr(),
            )
        };
        if !ok || zv::has_exception() {
            // SAFETY: releases whatever the call returned.
            unsafe { ffi::ferrophp_uc_zval_dtor(&mut produced) };
            end(&flight);
            return;
        }
        // SAFETY: `produced` is a live value we own.
        let stored = store(&produced);
        end(&flight);
        if stored.is_err() {
            // SAFETY: as above.
            unsafe { ffi::ferrophp_uc_zval_dtor(&mut produced) };
            return;
        }
        // SAFETY: the produced value moves into the return slot.
        unsafe { *dst = produced };
    }
}

/// `info()` as a PHP array.
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable.
pub(crate) unsafe fn info_into(dst: Rv) {
    let t = cache();
    let (hits, misses, threads) = epoch::stats();
    let longs: [(&str, u64); 14] = [
        ("entries", t.entries.load(Ordering::Relaxed) as u64),
        (
            "memory_used",
            (t.live_bytes.load(Ordering::Relaxed) + t.retired_bytes.load(Ordering::Relaxed)) as u64,
        ),
        ("memory_live", t.live_bytes.load(Ordering::Relaxed) as u64),
        ("memory_limit", t.limit as u64),
        (
            "retired_bytes",
            t.retired_bytes.load(Ordering::Relaxed) as u64,
        ),
        ("retired_limit", t.retired_cap as u64),
        ("hits", hits),
        ("misses", misses),
        ("stores", t.stores.load(Ordering::Relaxed)),
        ("evictions", t.evictions.load(Ordering::Relaxed)),
        ("expunges", t.expunges.load(Ordering::Relaxed)),
        ("reclaimed", t.reclaimed.load(Ordering::Relaxed)),
        ("full_failures", t.full_failures.load(Ordering::Relaxed)),
        ("threads", threads as u64),
    ];
    // SAFETY: builds a fresh request array in the return slot.
    unsafe {
        zv::set_new_array(dst, 16);
        for (k, v) in longs {
            sys::add_assoc_long_ex(dst, k.as_ptr().cast(), k.len(), v as sys::zend_long);
        }
        let k = "copy_mode";
        sys::add_assoc_bool_ex(
            dst,
            k.as_ptr().cast(),
            k.len(),
            super::worker_restart_recommended(),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Method handlers.
// ---------------------------------------------------------------------------------------

unsafe fn store_impl(ed: Ed, rv: Rv, mode: Mode) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: as in fetch_impl, the fast path reads only the slots `num_args` says were
    // passed, when no coercion is needed (a string key, an int TTL); everything else goes
    // through zend_parse_parameters, whose "Sz|l" matches the three out-pointers.
    unsafe {
        let n = zv::num_args(ed);
        if (n == 2 || n == 3)
            && zv::ztype(zv::call_arg(ed, 1)) == zv::IS_STRING
            && (n == 2 || zv::ztype(zv::call_arg(ed, 3)) == zv::IS_LONG)
        {
            key = (*zv::call_arg(ed, 1)).value.str_;
            value = zv::call_arg(ed, 2);
            if n == 3 {
                ttl = (*zv::call_arg(ed, 3)).value.lval;
            }
        } else if sys::zend_parse_parameters(n, c"Sz|l".as_ptr(), &mut key, &mut value, &mut ttl)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) || !valid_ttl(3, ttl) {
            return;
        }
        if let Ok(stored) = store_value(k, h, value, ttl as u64, mode) {
            *rv = zv::bool_(stored);
        }
    }
}

/// `store(string $key, mixed $value, int $ttl = 0): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_store(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's frame and return slot.
    unsafe { store_impl(ed, rv, Mode::Overwrite) }
}

/// `add(string $key, mixed $value, int $ttl = 0): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_add(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { store_impl(ed, rv, Mode::Add) }
}

unsafe fn fetch_impl(ed: Ed, rv: Rv, copy: bool) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut default: *mut sys::zval = std::ptr::null_mut();
    let mut found: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: the fast path reads exactly the slots `num_args` says were passed, as the
    // Z_PARAM_* macros do: a string key needs no coercion, and "z" hands out the argument
    // slots themselves (`found` being the by-reference one). Anything else goes through
    // zend_parse_parameters for coercion and the usual TypeError; "S|zz" matches the
    // out-pointers.
    unsafe {
        let n = zv::num_args(ed);
        if (1..=3).contains(&n) && zv::ztype(zv::call_arg(ed, 1)) == zv::IS_STRING {
            key = (*zv::call_arg(ed, 1)).value.str_;
            if n >= 2 {
                default = zv::call_arg(ed, 2);
            }
            if n == 3 {
                found = zv::call_arg(ed, 3);
            }
        } else if sys::zend_parse_parameters(
            n,
            c"S|zz".as_ptr(),
            &mut key,
            &mut default,
            &mut found,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) {
            return;
        }
        let hit = match fetch_into(k, h, rv, copy) {
            Fetched::Hit => true,
            Fetched::Failed => return,
            Fetched::Miss => {
                if default.is_null() {
                    *rv = zv::null();
                } else {
                    *rv = *default;
                    ffi::ferrophp_uc_try_addref(rv);
                }
                false
            }
        };
        if !found.is_null() {
            ffi::ferrophp_uc_assign_ref_bool(found, hit);
        }
    }
}

/// `fetch(string $key, mixed $default = null, ?bool &$found = null): mixed`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_fetch(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { fetch_impl(ed, rv, false) }
}

/// `fetchCopy(string $key, mixed $default = null): mixed`: a deep copy (the copy-on-read
/// reference the benchmark compares against).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_fetch_copy(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { fetch_impl(ed, rv, true) }
}

/// `fetchMultiple(array $keys): array` (found keys only, in input order). The input's
/// key strings (and their cached hashes) become the result's keys: no copies.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_fetch_multiple(ed: Ed, rv: Rv) {
    let mut keys: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: "h" matches one HashTable out-pointer; the rest reads the caller's array and
    // fills a fresh request array in the return slot.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"h".as_ptr(), &mut keys)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let bad = zv::for_each(keys, |_, v| match zv::ztype(zv::deref(v)) {
            zv::IS_STRING | zv::IS_LONG => Ok(()),
            _ => Err(()),
        });
        if bad.is_err() {
            errors::argument_type_error(1, "must contain only string keys");
            return;
        }
        let ht = zv::set_new_array(rv, zv::count(keys));
        let _ = zv::for_each(keys, |_, v| {
            let v = zv::deref(v);
            let mut out = sys::zval::default();
            if zv::ztype(v) == zv::IS_LONG {
                let k = (*v).value.lval.to_string().into_bytes();
                return match fetch_into(&k, zv::hash_bytes(&k), &mut out, false) {
                    Fetched::Hit => {
                        zv::insert_bytes_key(ht, &k, &mut out);
                        Ok(())
                    }
                    Fetched::Miss => Ok(()),
                    Fetched::Failed => Err(()),
                };
            }
            let s = (*v).value.str_;
            let (k, h) = zv::str_key(s);
            if k.is_empty() || k.len() > MAX_KEY {
                return Ok(());
            }
            match fetch_into(k, h, &mut out, false) {
                Fetched::Hit => {
                    let mut idx: sys::zend_ulong = 0;
                    if ffi::ferrophp_uc_numeric_key(k.as_ptr().cast(), k.len(), &mut idx) {
                        zv::insert(ht, &zv::HKey::Index(idx as i64), &mut out);
                    } else {
                        // PHP takes its own reference to a non-interned key.
                        zv::insert(ht, &zv::HKey::Str(s), &mut out);
                    }
                    Ok(())
                }
                Fetched::Miss => Ok(()),
                Fetched::Failed => Err(()),
            }
        });
    }
}

/// `storeMultiple(array $values, int $ttl = 0): array` (keys that failed).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_store_multiple(ed: Ed, rv: Rv) {
    let mut values: *mut sys::HashTable = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "h|l" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"h|l".as_ptr(), &mut values, &mut ttl)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if !valid_ttl(2, ttl) {
            return;
        }
        let mut failed: Vec<Vec<u8>> = Vec::new();
        let r = zv::for_each(values, |key, val| {
            let k = match key {
                zv::HKey::Index(i) => i.to_string().into_bytes(),
                zv::HKey::Str(s) => zv::str_bytes(s).to_vec(),
            };
            if k.is_empty() || k.len() > MAX_KEY {
                failed.push(k);
                return Ok(());
            }
            let h = zv::hash_bytes(&k);
            match store_value(&k, h, val, ttl as u64, Mode::Overwrite) {
                Ok(true) => {}
                Ok(false) => failed.push(k),
                Err(()) => return Err(()),
            }
            Ok(())
        });
        if r.is_err() {
            return;
        }
        zv::set_new_array(rv, failed.len() as u32);
        for k in failed {
            sys::add_next_index_stringl(rv, k.as_ptr().cast(), k.len());
        }
    }
}

/// `exists(string $key): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_exists(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: "S" matches one string out-pointer.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"S".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) {
            return;
        }
        *rv = zv::bool_(exists(k, h));
    }
}

/// `delete(string|array $key): bool|array` — for an array, the keys that did not exist.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_delete(ed: Ed, rv: Rv) {
    let mut arg: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "z" matches one zval out-pointer.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"z".as_ptr(), &mut arg)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        match zv::ztype(arg) {
            zv::IS_ARRAY => {
                let mut keys = Vec::new();
                let bad = zv::for_each((*arg).value.arr, |_, v| match zv::key_bytes(v) {
                    Some(k) => {
                        keys.push(k);
                        Ok(())
                    }
                    None => Err(()),
                });
                if bad.is_err() {
                    errors::argument_type_error(1, "must contain only string keys");
                    return;
                }
                let mut missing = Vec::new();
                for k in keys {
                    if k.is_empty() || k.len() > MAX_KEY || !delete(&k, zv::hash_bytes(&k)) {
                        missing.push(k);
                    }
                }
                zv::set_new_array(rv, missing.len() as u32);
                for k in missing {
                    sys::add_next_index_stringl(rv, k.as_ptr().cast(), k.len());
                }
            }
            zv::IS_STRING | zv::IS_LONG => {
                let k = zv::key_bytes(arg).unwrap_or_default();
                if !valid_key(1, &k) {
                    return;
                }
                *rv = zv::bool_(delete(&k, zv::hash_bytes(&k)));
            }
            _ => errors::argument_type_error(1, "must be of type array|string"),
        }
    }
}

unsafe fn add_impl(ed: Ed, rv: Rv, sign: i64) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut step: sys::zend_long = 1;
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "S|ll" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"S|ll".as_ptr(),
            &mut key,
            &mut step,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) || !valid_ttl(3, ttl) {
            return;
        }
        *rv = match add_to(k, h, step.wrapping_mul(sign), ttl as u64) {
            Some(n) => zv::long(n),
            None => zv::bool_(false),
        };
    }
}

/// `increment(string $key, int $step = 1, int $ttl = 0): int|false`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_increment(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { add_impl(ed, rv, 1) }
}

/// `decrement(string $key, int $step = 1, int $ttl = 0): int|false`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_decrement(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { add_impl(ed, rv, -1) }
}

/// `cas(string $key, int $old, int $new): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_cas(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut old: sys::zend_long = 0;
    let mut new: sys::zend_long = 0;
    // SAFETY: "Sll" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"Sll".as_ptr(),
            &mut key,
            &mut old,
            &mut new,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) {
            return;
        }
        *rv = zv::bool_(cas(k, h, old, new));
    }
}

/// `remember(string $key, callable $producer, int $ttl = 0): mixed`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_remember(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut producer: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "Sz|l" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"Sz|l".as_ptr(),
            &mut key,
            &mut producer,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) || !valid_ttl(3, ttl) {
            return;
        }
        if !ffi::ferrophp_uc_is_callable(producer) {
            errors::argument_type_error(2, "must be a valid callback");
            return;
        }
        *rv = zv::null();
        remember(k, h, producer, &mut [], ttl as u64, rv);
    }
}

/// `clear(): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_clear(ed: Ed, rv: Rv) {
    // SAFETY: "" accepts no arguments (ArgumentCountError otherwise).
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"".as_ptr())
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        epoch::with_local(|local| {
            epoch::enter(local);
            cache().clear();
            epoch::leave(local);
        });
        *rv = zv::bool_(true);
    }
}

/// `info(): array`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_uc_info(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"".as_ptr())
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        info_into(rv);
    }
}
