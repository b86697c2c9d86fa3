//! The static methods of `UserCache\Cache` (declared in cache/stubs/UserCache.stub.php,
//! whose generated arginfo names each body `zim_UserCache_Cache_<method>`): each parses its PHP arguments, checks them by this API's
//! rules (keys of 1 to 4096 bytes, TTLs of 0 or more), runs the shared operation
//! (`ops.rs`) and returns its result. Bad arguments are ValueErrors and TypeErrors; a
//! value the cache cannot store is a `UserCache\Exception`.

use php_sys as sys;

use super::errors::{self, Exception};
use super::ffi;
use super::ops::{self, Fetched, Reentry, Remembered};
use super::table::Mode;
use super::value::FreezeError;
use super::zv::{self, parse_args};

/// Keys are 1 to 4096 bytes.
const MAX_KEY: usize = 4096;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// Checks a key argument; throws the ValueError itself.
fn valid_key(arg: u32, key: &[u8]) -> bool {
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

/// Whether a key taken from an array argument is one this API accepts (the
/// array-taking methods skip or report the others instead of throwing).
fn acceptable_key(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY
}

fn valid_ttl(arg: u32, ttl: sys::zend_long) -> bool {
    if ttl < 0 {
        errors::argument_value_error(arg, "must be greater than or equal to 0");
        return false;
    }
    true
}

/// [`ops::store`] that throws `UserCache\Exception` for a value the cache refuses. Err:
/// an exception is pending.
///
/// # Safety
/// As for [`ops::store`].
unsafe fn store_value(
    key: &[u8],
    hash: u64,
    value: *const sys::zval,
    ttl: u64,
    mode: Mode,
) -> Result<bool, ()> {
    // SAFETY: guaranteed by the caller.
    match unsafe { ops::store(key, hash, value, ttl, mode) } {
        Ok(stored) => Ok(stored),
        Err(FreezeError::Refused(msg)) => {
            errors::throw(Exception::Cache, &msg);
            Err(())
        }
        Err(FreezeError::Thrown) => Err(()),
    }
}

/// Fills `rv` with a fresh list of `keys` (the keys an array-taking method reports).
///
/// # Safety
/// On a PHP thread inside a request; `rv` writable.
unsafe fn return_key_list(rv: Rv, keys: Vec<Vec<u8>>) {
    // SAFETY: guaranteed by the caller; PHP copies each key into the new array.
    unsafe {
        zv::set_new_array(rv, keys.len() as u32);
        for k in keys {
            sys::add_next_index_stringl(rv, k.as_ptr().cast(), k.len());
        }
    }
}

/// # Safety
/// `ed` and `rv` are the running method's frame and return slot.
unsafe fn store_impl(ed: Ed, rv: Rv, mode: Mode) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: `ed` is the running call's frame (guaranteed by the caller). The fast path
    // reads only the slots `num_args` says were passed, when no coercion is needed (a
    // string key, an int TTL), as the Z_PARAM_* macros do; everything else goes through
    // zend_parse_parameters, whose "Sz|l" matches the three out-pointers.
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
        } else if !parse_args!(ed, c"Sz|l", &mut key, &mut value, &mut ttl) {
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
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_store(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { store_impl(ed, rv, Mode::Overwrite) }
}

/// `add(string $key, mixed $value, int $ttl = 0): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_add(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { store_impl(ed, rv, Mode::Add) }
}

/// # Safety
/// `ed` and `rv` are the running method's frame and return slot.
unsafe fn fetch_impl(ed: Ed, rv: Rv, copy: bool) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut default: *mut sys::zval = std::ptr::null_mut();
    let mut found: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: guaranteed by the caller. The fast path reads exactly the slots `num_args`
    // says were passed, as the Z_PARAM_* macros do: a string key needs no coercion, and
    // "z" hands out the argument slots themselves (`found` being the by-reference one).
    // Anything else goes through zend_parse_parameters for coercion and the usual
    // TypeError; "S|zz" matches the out-pointers.
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
        } else if !parse_args!(ed, c"S|zz", &mut key, &mut default, &mut found) {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) {
            return;
        }
        let hit = match ops::fetch_into(k, h, rv, copy) {
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
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_fetch(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { fetch_impl(ed, rv, false) }
}

/// `fetchCopy(string $key, mixed $default = null): mixed`: a deep copy (the copy-on-read
/// reference the benchmark compares against).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_fetchCopy(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { fetch_impl(ed, rv, true) }
}

/// `fetchMultiple(array $keys): array` (found keys only, in input order). The input's
/// key strings (and their cached hashes) become the result's keys: no copies.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_fetchMultiple(ed: Ed, rv: Rv) {
    let mut keys: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "h" matches one HashTable
    // out-pointer; the rest reads the caller's array and fills a fresh request array in
    // the return slot.
    unsafe {
        if !parse_args!(ed, c"h", &mut keys) {
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
                return match ops::fetch_into(&k, zv::hash_bytes(&k), &mut out, false) {
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
            if !acceptable_key(k) {
                return Ok(());
            }
            match ops::fetch_into(k, h, &mut out, false) {
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
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_storeMultiple(ed: Ed, rv: Rv) {
    let mut values: *mut sys::HashTable = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: PHP passes this call's frame and return slot; "h|l" matches the
    // out-pointers; the values are live elements of the caller's array.
    unsafe {
        if !parse_args!(ed, c"h|l", &mut values, &mut ttl) || !valid_ttl(2, ttl) {
            return;
        }
        let mut failed: Vec<Vec<u8>> = Vec::new();
        let r = zv::for_each(values, |key, val| {
            let k = zv::hkey_bytes(&key);
            if !acceptable_key(&k) {
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
        if r.is_ok() {
            return_key_list(rv, failed);
        }
    }
}

/// `exists(string $key): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_exists(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "S" matches one string
    // out-pointer, a live string of the call.
    unsafe {
        if !parse_args!(ed, c"S", &mut key) {
            return;
        }
        let (k, h) = zv::str_key(key);
        if valid_key(1, k) {
            *rv = zv::bool_(ops::exists(k, h));
        }
    }
}

/// `delete(string|array $key): bool|array` — for an array, the keys that did not exist.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_delete(ed: Ed, rv: Rv) {
    let mut arg: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "z" matches one zval
    // out-pointer, a live argument of the call.
    unsafe {
        if !parse_args!(ed, c"z", &mut arg) {
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
                keys.retain(|k| !acceptable_key(k) || !ops::delete(k, zv::hash_bytes(k)));
                return_key_list(rv, keys);
            }
            zv::IS_STRING | zv::IS_LONG => {
                let k = zv::key_bytes(arg).unwrap_or_default();
                if valid_key(1, &k) {
                    *rv = zv::bool_(ops::delete(&k, zv::hash_bytes(&k)));
                }
            }
            _ => errors::argument_type_error(1, "must be of type array|string"),
        }
    }
}

/// # Safety
/// `ed` and `rv` are the running method's frame and return slot.
unsafe fn add_impl(ed: Ed, rv: Rv, sign: i64) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut step: sys::zend_long = 1;
    let mut ttl: sys::zend_long = 0;
    // SAFETY: guaranteed by the caller; "S|ll" matches the out-pointers.
    unsafe {
        if !parse_args!(ed, c"S|ll", &mut key, &mut step, &mut ttl) {
            return;
        }
        let (k, h) = zv::str_key(key);
        if !valid_key(1, k) || !valid_ttl(3, ttl) {
            return;
        }
        *rv = match ops::add_to(k, h, step.wrapping_mul(sign), ttl as u64) {
            Some(n) => zv::long(n),
            None => zv::bool_(false),
        };
    }
}

/// `increment(string $key, int $step = 1, int $ttl = 0): int|false`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_increment(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { add_impl(ed, rv, 1) }
}

/// `decrement(string $key, int $step = 1, int $ttl = 0): int|false`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_decrement(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { add_impl(ed, rv, -1) }
}

/// `cas(string $key, int $old, int $new): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_cas(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut old: sys::zend_long = 0;
    let mut new: sys::zend_long = 0;
    // SAFETY: PHP passes this call's frame and return slot; "Sll" matches the
    // out-pointers.
    unsafe {
        if !parse_args!(ed, c"Sll", &mut key, &mut old, &mut new) {
            return;
        }
        let (k, h) = zv::str_key(key);
        if valid_key(1, k) {
            *rv = zv::bool_(ops::cas(k, h, old, new));
        }
    }
}

/// `remember(string $key, callable $producer, int $ttl = 0): mixed`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_remember(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut producer: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: PHP passes this call's frame and return slot; "Sz|l" matches the
    // out-pointers; the producer is checked callable before it is called.
    unsafe {
        if !parse_args!(ed, c"Sz|l", &mut key, &mut producer, &mut ttl) {
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
        let store = |v| store_value(k, h, v, ttl as u64, Mode::Overwrite);
        if ops::remember(k, h, producer, &mut [], rv, Reentry::Refuse, store)
            == Remembered::Reentered
        {
            errors::throw(
                Exception::Cache,
                "remember(): the producer for this key called remember() for the same key",
            );
        }
    }
}

/// `clear(): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_clear(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's frame and return slot; "" accepts no arguments
    // (ArgumentCountError otherwise).
    unsafe {
        if parse_args!(ed, c"") {
            ops::clear();
            *rv = zv::bool_(true);
        }
    }
}

/// `info(): array`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_UserCache_Cache_info(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's frame and return slot; "" accepts no arguments.
    if !unsafe { parse_args!(ed, c"") } {
        return;
    }
    let c = ops::counters();
    let longs: [(&str, u64); 14] = [
        ("entries", c.entries),
        ("memory_used", c.memory_used()),
        ("memory_live", c.live_bytes),
        ("memory_limit", c.memory_limit),
        ("retired_bytes", c.retired_bytes),
        ("retired_limit", c.retired_limit),
        ("hits", c.hits),
        ("misses", c.misses),
        ("stores", c.stores),
        ("evictions", c.evictions),
        ("expunges", c.expunges),
        ("reclaimed", c.reclaimed),
        ("full_failures", c.full_failures),
        ("threads", c.threads),
    ];
    // SAFETY: builds a fresh request array in the return slot PHP passed.
    unsafe {
        zv::set_new_array(rv, 16);
        for (k, v) in longs {
            zv::add_assoc_long(rv, k, v as i64);
        }
        zv::add_assoc_bool(rv, "copy_mode", c.copying);
    }
}
