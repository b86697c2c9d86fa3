//! `apcu_*` functions, the `APCUIterator` class, the `APC_ITER_*`/`APC_LIST_*` constants
//! and the `apc.*` ini entries, backed by the shared cache and registered only when APCu
//! itself is not loaded (and `usercache.apcu_compat` is on), so applications and
//! framework adapters written for APCu share one cache across threads unchanged.
//! Semantics follow APCu 5.1.22 (its own test suite runs against this layer:
//! scripts/apcu-suite.sh, docs/apcu-compat.md): any string is a key (the empty one too),
//! values that APCu refuses with a warning (resources) are refused with the same warning
//! and `false`, arrays of keys are accepted where APCu accepts them, and the info
//! functions return APCu's shapes.
//!
//! Like `api.rs`, this is an adapter over the shared operations (`ops.rs`): it
//! translates APCu's arguments, its `apc.enabled` switch and its ways of reporting
//! failures. This file holds start-up and the functions that read and write entries;
//! [`info`] the info functions, [`iterator`] `APCUIterator`.
//!
//! The functions, the class and the constants are declared in `cache/stubs/apcu.stub.php`;
//! each body is `ferrophp_zif_apcu_<name>` (`ferrophp_zim_APCUIterator_<method>`), the
//! prefix keeping them apart from APCu's own symbols (see `apcu.c`).

mod info;
mod iterator;

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use php_sys as sys;

use super::errors;
use super::ffi;
use super::ini;
use super::ops::{self, Fetched, Reentry};
use super::table::{self, Mode};
use super::value::FreezeError;
use super::zv::{self, parse_args};

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// `apc.enabled` as configured at start-up (a PHP_INI_SYSTEM entry), and off under the
/// "cli" SAPI (`ferrophp php-cli`) unless `apc.enable_cli` is on, as in APCu.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Unix time the layer started (`apcu_cache_info()['start_time']`).
static START_TIME: AtomicU64 = AtomicU64::new(0);
/// `apc.ttl` (reported by `apcu_cache_info()`).
static TTL: AtomicU64 = AtomicU64::new(0);

/// MINIT: registers the APCu surface unless APCu is loaded or `usercache.apcu_compat` is
/// off. True when registered.
pub(crate) fn module_startup(module_number: c_int) -> bool {
    let compat = ini::flag(c"usercache.apcu_compat", true);
    // SAFETY: module_registry holds every extension that will start (all are registered
    // before the first MINIT runs), so this sees APCu whatever the load order.
    let apcu_loaded = unsafe { !ffi::ferrophp_uc_find_module(c"apcu".as_ptr(), 4).is_null() };
    if !compat || apcu_loaded {
        return false;
    }
    // SAFETY: static tables registered once, during our module's MINIT.
    unsafe { ffi::ferrophp_uc_register_apcu(module_number) };
    // As APCu's MINIT: under the SAPI named "cli" the cache is off unless
    // apc.enable_cli (default 0) says otherwise; `ini_get('apc.enabled')` keeps its value.
    // SAFETY: sapi_module is PHP's global SAPI description, filled in before any MINIT;
    // its name is a NUL-terminated static string.
    let cli = unsafe {
        let name = sys::sapi_module.name;
        !name.is_null() && std::ffi::CStr::from_ptr(name).to_bytes() == b"cli"
    };
    let enable_cli = ini::flag(c"apc.enable_cli", false);
    ENABLED.store(
        ini::flag(c"apc.enabled", true) && (enable_cli || !cli),
        Ordering::Relaxed,
    );
    TTL.store(
        ini::string(c"apc.ttl")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        Ordering::Relaxed,
    );
    START_TIME.store(table::now(), Ordering::Relaxed);
    true
}

/// A scalar key argument converted to a string as APCu's `convert_to_string` does (ints,
/// floats, bools, null, objects with __toString). None when conversion threw.
///
/// # Safety
/// On a PHP thread inside a request; `zv` live.
unsafe fn converted_key(zv: *const sys::zval) -> Option<Vec<u8>> {
    // SAFETY: guaranteed by the caller.
    if let Some(k) = unsafe { zv::key_bytes(zv) } {
        return Some(k);
    }
    let mut out = sys::zval::default();
    // SAFETY: guaranteed by the caller; strval()'s result is ours and released.
    let k = unsafe {
        zv::call_with_value(c"strval", &mut out, zv::deref(zv));
        let k = zv::string_bytes(&out);
        ffi::ferrophp_uc_zval_dtor(&mut out);
        k
    };
    if zv::has_exception() {
        return None;
    }
    k
}

/// The string elements of an array of keys; every other element is skipped with
/// `warning`, as APCu does.
///
/// # Safety
/// `keys` is a live array.
unsafe fn string_keys(keys: *const sys::HashTable, warning: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // SAFETY: guaranteed by the caller; the elements are live while the array is.
    let _ = unsafe {
        zv::for_each::<()>(keys, |_, v| {
            match zv::string_bytes(v) {
                Some(k) => out.push(k),
                None => errors::warn(warning),
            }
            Ok(())
        })
    };
    out
}

/// Whether `apc.enabled` is on. When it is off, the layer behaves as APCu does when
/// disabled: stores fail, fetches miss, the info functions warn and return false,
/// APCUIterator cannot be built.
fn on() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// [`ops::fetch_into`] unless disabled.
///
/// # Safety
/// As for [`ops::fetch_into`].
unsafe fn fetch_into(key: &[u8], hash: u64, dst: Rv, force_copy: bool) -> Fetched {
    if !on() {
        return Fetched::Miss;
    }
    // SAFETY: guaranteed by the caller.
    unsafe { ops::fetch_into(key, hash, dst, force_copy) }
}

/// [`ops::exists`] unless disabled.
fn exists(key: &[u8], hash: u64) -> bool {
    on() && ops::exists(key, hash)
}

/// [`ops::delete`] unless disabled.
fn delete(key: &[u8], hash: u64) -> bool {
    on() && ops::delete(key, hash)
}

/// Stores one value the way APCu reports failures: a resource is refused with APCu's
/// warning; other values our freezer refuses (closures, generators, internal objects)
/// go to PHP's serialize(), which throws the exception APCu's serializer throws. A
/// negative TTL stores an entry that is already expired. Err: an exception is pending.
///
/// # Safety
/// On a PHP thread inside a request; `value` live.
unsafe fn store_one(key: &[u8], value: *const sys::zval, ttl: i64, mode: Mode) -> Result<bool, ()> {
    if !on() {
        return Ok(false);
    }
    let hash = zv::hash_bytes(key);
    // SAFETY: guaranteed by the caller.
    match unsafe { ops::store(key, hash, value, ttl.max(0) as u64, mode) } {
        Ok(true) if ttl < 0 => {
            // APCu stores an entry that is already expired: it replaced the old value
            // and is never seen again.
            ops::delete(key, hash);
            Ok(true)
        }
        Ok(stored) => Ok(stored),
        Err(FreezeError::Thrown) => Err(()),
        Err(FreezeError::Refused(msg)) => {
            if msg.contains("a resource") {
                errors::warn("Cannot store resources in apcu cache");
                return Ok(false);
            }
            let mut out = sys::zval::default();
            // SAFETY: guaranteed by the caller; serialize()'s result is ours and released.
            unsafe {
                zv::call_with_value(c"serialize", &mut out, value);
                ffi::ferrophp_uc_zval_dtor(&mut out);
            }
            if zv::has_exception() {
                return Err(());
            }
            errors::warn(&msg);
            Ok(false)
        }
    }
}

/// `apcu_fetch(string|array $key, bool &$success = null): mixed`
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_fetch(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut success: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "z|z" matches the
    // out-pointers, live arguments of the call.
    unsafe {
        if !parse_args!(ed, c"z|z", &mut key, &mut success) {
            return;
        }
        let mut ok = false;
        if zv::ztype(key) == zv::IS_ARRAY {
            let keys = string_keys(
                (*key).value.arr,
                "apc_fetch() expects a string or array of strings.",
            );
            let ht = zv::set_new_array(rv, keys.len() as u32);
            for k in keys {
                let mut v = sys::zval::default();
                match fetch_into(&k, zv::hash_bytes(&k), &mut v, false) {
                    Fetched::Hit => zv::insert_bytes_key(ht, &k, &mut v),
                    Fetched::Miss => {}
                    Fetched::Failed => return,
                }
            }
            ok = true;
        } else if let Some(k) = converted_key(key) {
            // APCu takes any string as a key, the empty one included.
            *rv = zv::bool_(false);
            match fetch_into(&k, zv::hash_bytes(&k), rv, false) {
                Fetched::Hit => ok = true,
                Fetched::Miss => *rv = zv::bool_(false),
                Fetched::Failed => return,
            }
        } else if zv::has_exception() {
            return;
        } else {
            errors::warn("apc_fetch() expects a string or array of strings.");
            *rv = zv::bool_(false);
        }
        if !success.is_null() {
            ffi::ferrophp_uc_assign_ref_bool(success, ok);
        }
    }
}

/// # Safety
/// `ed` and `rv` are the running function's frame and return slot.
unsafe fn store_impl(ed: Ed, rv: Rv, mode: Mode) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: guaranteed by the caller; "z|zl" matches the out-pointers, live arguments
    // of the call.
    unsafe {
        if !parse_args!(ed, c"z|zl", &mut key, &mut value, &mut ttl) {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            // apcu_store(array $values, $unused = null, int $ttl = 0): failed keys => -1.
            let mut failed = Vec::new();
            let r = zv::for_each((*key).value.arr, |k, v| {
                let k = zv::hkey_bytes(&k);
                match store_one(&k, v, ttl, mode) {
                    Ok(true) => Ok(()),
                    Ok(false) => {
                        failed.push(k);
                        Ok(())
                    }
                    Err(()) => Err(()),
                }
            });
            if r.is_err() {
                return;
            }
            let ht = zv::set_new_array(rv, failed.len() as u32);
            for k in failed {
                let mut v = zv::long(-1);
                zv::insert_bytes_key(ht, &k, &mut v);
            }
            return;
        }
        let Some(k) = zv::string_bytes(key) else {
            errors::warn(
                "apc_store expects key parameter to be a string or an array of key/value pairs.",
            );
            *rv = zv::bool_(false);
            return;
        };
        if value.is_null() {
            *rv = zv::bool_(false);
            return;
        }
        if let Ok(stored) = store_one(&k, value, ttl, mode) {
            *rv = zv::bool_(stored);
        }
    }
}

/// `apcu_store(string|array $key, mixed $var = UNKNOWN, int $ttl = 0): bool|array`
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_store(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this function call's frame and return slot.
    unsafe { store_impl(ed, rv, Mode::Overwrite) }
}

/// `apcu_add(...)`: like apcu_store, only when absent.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_add(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this function call's frame and return slot.
    unsafe { store_impl(ed, rv, Mode::Add) }
}

const DELETE_EXPECTS: &str =
    "apc_delete() expects a string, array of strings, or APCIterator instance";

/// `apcu_delete(APCUIterator|array|string $key): bool|array` (array: the entries that
/// were not deleted, as given).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_delete(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "z" matches one zval
    // out-pointer, a live argument of the call.
    unsafe {
        if !parse_args!(ed, c"z", &mut key) {
            return;
        }
        match zv::ztype(key) {
            zv::IS_STRING => {
                let k = zv::str_bytes((*key).value.str_);
                *rv = zv::bool_(delete(k, zv::hash_bytes(k)));
            }
            zv::IS_ARRAY => {
                let mut failed: Vec<sys::zval> = Vec::new();
                let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                    let v = zv::deref(v);
                    let deleted = match zv::string_bytes(v) {
                        Some(k) => delete(&k, zv::hash_bytes(&k)),
                        None => {
                            errors::warn(DELETE_EXPECTS);
                            false
                        }
                    };
                    if !deleted {
                        let mut copy = *v;
                        ffi::ferrophp_uc_try_addref(&mut copy);
                        failed.push(copy);
                    }
                    Ok(())
                });
                let ht = zv::set_new_array(rv, failed.len() as u32);
                for (i, mut v) in failed.into_iter().enumerate() {
                    zv::insert(ht, &zv::HKey::Index(i as i64), &mut v);
                }
            }
            zv::IS_OBJECT => *rv = zv::bool_(iterator::delete_walked(key)),
            _ => {
                errors::warn(DELETE_EXPECTS);
                *rv = zv::bool_(false);
            }
        }
    }
}

/// `apcu_exists(string|array $key): bool|array` (array: existing keys => true).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_exists(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "z" matches one zval
    // out-pointer, a live argument of the call.
    unsafe {
        if !parse_args!(ed, c"z", &mut key) {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            let keys = string_keys(
                (*key).value.arr,
                "apc_exists() expects a string or array of strings.",
            );
            let ht = zv::set_new_array(rv, 0);
            for k in keys {
                if exists(&k, zv::hash_bytes(&k)) {
                    let mut t = zv::bool_(true);
                    zv::insert_bytes_key(ht, &k, &mut t);
                }
            }
            return;
        }
        if let Some(k) = converted_key(key) {
            *rv = zv::bool_(exists(&k, zv::hash_bytes(&k)));
        }
    }
}

/// # Safety
/// `ed` and `rv` are the running function's frame and return slot.
unsafe fn inc_impl(ed: Ed, rv: Rv, sign: i64) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut step: sys::zend_long = 1;
    let mut success: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: guaranteed by the caller; "S|lzl" matches the out-pointers.
    unsafe {
        if !parse_args!(ed, c"S|lzl", &mut key, &mut step, &mut success, &mut ttl) {
            return;
        }
        let (k, h) = zv::str_key(key);
        let r = if on() {
            ops::add_to(k, h, step.wrapping_mul(sign), ttl.max(0) as u64)
        } else {
            None
        };
        *rv = match r {
            Some(n) => zv::long(n),
            None => zv::bool_(false),
        };
        if !success.is_null() {
            ffi::ferrophp_uc_assign_ref_bool(success, r.is_some());
        }
    }
}

/// `apcu_inc(string $key, int $step = 1, &$success = null, int $ttl = 0): int|false`
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_inc(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this function call's frame and return slot.
    unsafe { inc_impl(ed, rv, 1) }
}

/// `apcu_dec(...)`
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_dec(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this function call's frame and return slot.
    unsafe { inc_impl(ed, rv, -1) }
}

/// `apcu_cas(string $key, int $old, int $new): bool`
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_cas(ed: Ed, rv: Rv) {
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
        *rv = zv::bool_(on() && ops::cas(k, h, old, new));
    }
}

/// `apcu_entry(string $key, callable $callback, int $ttl = 0): mixed` — the callback
/// receives the key; its value is returned whether or not it could be stored (a
/// resource is refused with APCu's warning, as by apcu_store).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_entry(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: all-zero is the "empty" fcall info ZPP's "f" fills in (plain C structs).
    let mut fci: sys::zend_fcall_info = unsafe { std::mem::zeroed() };
    // SAFETY: all-zero is the "empty" fcall info cache ZPP's "f" fills in (a plain C
    // struct of pointers).
    let mut fcc: sys::zend_fcall_info_cache = unsafe { std::mem::zeroed() };
    let mut ttl: sys::zend_long = 0;
    // SAFETY: PHP passes this call's frame and return slot; "Sf|l" matches the
    // out-pointers (a non-callable is a TypeError, as in APCu), so the function name
    // ZPP filled in is callable; the key argument is a request string released below.
    unsafe {
        if !parse_args!(ed, c"Sf|l", &mut key, &mut fci, &mut fcc, &mut ttl) {
            return;
        }
        *rv = zv::null();
        if !on() {
            return;
        }
        let (k, h) = zv::str_key(key);
        let mut arg = sys::zval::default();
        zv::set_request_string(&mut arg, k);
        ops::remember(
            k,
            h,
            &mut fci.function_name,
            std::slice::from_mut(&mut arg),
            rv,
            Reentry::Produce,
            // Exclusive, as APCu's entry store: a value stored meanwhile (by a nested
            // apcu_entry or apcu_store) stays.
            |v| store_one(k, v, ttl, Mode::Add),
        );
        ffi::ferrophp_uc_zval_dtor(&mut arg);
    }
}

/// `apcu_clear_cache(): bool` (a no-op when disabled).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_clear_cache(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's frame and return slot; "" accepts no arguments.
    unsafe {
        if parse_args!(ed, c"") {
            if on() {
                ops::clear();
            }
            *rv = zv::bool_(true);
        }
    }
}

/// `apcu_enabled(): bool` (`apc.enabled`, and `apc.enable_cli` under the "cli" SAPI).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_enabled(_ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's return slot.
    unsafe { *rv = zv::bool_(on()) };
}
