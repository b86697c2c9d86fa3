//! `apcu_*` functions, the `APCUIterator` class, the `APC_ITER_*`/`APC_LIST_*` constants
//! and the `apc.*` ini entries, backed by the shared cache and registered only when APCu
//! itself is not loaded (and `usercache.apcu_compat` is on), so applications and
//! framework adapters written for APCu share one cache across threads unchanged.
//! Semantics follow APCu 5.1.22 (its own test suite runs against this layer:
//! scripts/apcu-suite.sh, docs/apcu-compat.md): any string is a key (the empty one too),
//! values that APCu refuses with a warning (resources) are refused with the same warning
//! and `false`, arrays of keys are accepted where APCu accepts them, and the info
//! functions return APCu's shapes.

use std::collections::HashSet;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use php_sys as sys;

use super::api::{self, Fetched};
use super::epoch;
use super::errors::{self, Exception};
use super::ffi;
use super::table::{self, Mode};
use super::value::FreezeError;
use super::zv;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// `apc.enabled` as configured at start-up (a PHP_INI_SYSTEM entry), and off under the
/// "cli" SAPI (`ferrophp php-cli`) unless `apc.enable_cli` is on, as in APCu.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Unix time the layer started (`apcu_cache_info()['start_time']`).
static START_TIME: AtomicU64 = AtomicU64::new(0);
/// `apc.ttl` (reported by `apcu_cache_info()`).
static TTL: AtomicU64 = AtomicU64::new(0);

fn ini_bool(v: Option<String>, default: bool) -> bool {
    match v {
        None => default,
        Some(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no" | "none" | ""
        ),
    }
}

/// MINIT: registers the APCu surface unless APCu is loaded or `usercache.apcu_compat` is
/// off. True when registered.
pub(crate) fn module_startup(module_number: c_int) -> bool {
    let compat = ini_bool(super::ini_string(c"usercache.apcu_compat"), true);
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
    let enable_cli = ini_bool(super::ini_string(c"apc.enable_cli"), false);
    ENABLED.store(
        ini_bool(super::ini_string(c"apc.enabled"), true) && (enable_cli || !cli),
        Ordering::Relaxed,
    );
    TTL.store(
        super::ini_string(c"apc.ttl")
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
    // SAFETY: guaranteed by the caller; strval() gets its own reference and the result
    // is released.
    unsafe {
        if let Some(k) = zv::key_bytes(zv) {
            return Some(k);
        }
        let mut arg = *zv::deref(zv);
        ffi::ferrophp_uc_try_addref(&mut arg);
        let mut out = sys::zval::default();
        zv::call_function(c"strval", &mut out, std::slice::from_mut(&mut arg));
        ffi::ferrophp_uc_zval_dtor(&mut arg);
        let k = zv::string_bytes(&out);
        ffi::ferrophp_uc_zval_dtor(&mut out);
        if zv::has_exception() {
            return None;
        }
        k
    }
}

/// Whether `apc.enabled` is on. When it is off, the layer behaves as APCu does when
/// disabled: stores fail, fetches miss, the info functions warn and return false,
/// APCUIterator cannot be built.
fn on() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// [`api::fetch_into`] unless disabled.
///
/// # Safety
/// As for [`api::fetch_into`].
unsafe fn fetch_into(key: &[u8], hash: u64, dst: Rv, force_copy: bool) -> Fetched {
    if !on() {
        return Fetched::Miss;
    }
    // SAFETY: guaranteed by the caller.
    unsafe { api::fetch_into(key, hash, dst, force_copy) }
}

fn exists(key: &[u8], hash: u64) -> bool {
    on() && api::exists(key, hash)
}

fn delete(key: &[u8], hash: u64) -> bool {
    on() && api::delete(key, hash)
}

fn add_to(key: &[u8], hash: u64, step: i64, ttl: u64) -> Option<i64> {
    if !on() {
        return None;
    }
    api::add_to(key, hash, step, ttl)
}

fn cas(key: &[u8], hash: u64, old: i64, new: i64) -> bool {
    on() && api::cas(key, hash, old, new)
}

/// Stores one value the way APCu reports failures: a resource is refused with APCu's
/// warning; other values our freezer refuses (closures, generators, internal objects)
/// go to PHP's serialize(), which throws the exception APCu's serializer throws. Err:
/// an exception is pending.
///
/// # Safety
/// On a PHP thread inside a request; `value` live.
unsafe fn store_one(key: &[u8], value: *const sys::zval, ttl: i64, mode: Mode) -> Result<bool, ()> {
    if !on() {
        return Ok(false);
    }
    // SAFETY: guaranteed by the caller.
    match unsafe { api::try_store_value(key, zv::hash_bytes(key), value, ttl.max(0) as u64, mode) }
    {
        Ok(true) if ttl < 0 => {
            // APCu stores an entry that is already expired: it replaced the old value
            // and is never seen again.
            api::delete(key, zv::hash_bytes(key));
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
            // SAFETY: arg holds its own reference for the call; results are released.
            unsafe {
                let mut arg = *value;
                ffi::ferrophp_uc_try_addref(&mut arg);
                zv::call_function(c"serialize", &mut out, std::slice::from_mut(&mut arg));
                ffi::ferrophp_uc_zval_dtor(&mut arg);
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
pub unsafe extern "C" fn ferrophp_apcu_fetch(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut success: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "z|z" matches the out-pointers; PHP passes this call's frame and slot.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"z|z".as_ptr(), &mut key, &mut success)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let mut ok = false;
        if zv::ztype(key) == zv::IS_ARRAY {
            let mut keys = Vec::new();
            let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                match zv::string_bytes(v) {
                    Some(k) => keys.push(k),
                    None => errors::warn("apc_fetch() expects a string or array of strings."),
                }
                Ok(())
            });
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

unsafe fn store_impl(ed: Ed, rv: Rv, mode: Mode) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "z|zl" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"z|zl".as_ptr(),
            &mut key,
            &mut value,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            // apcu_store(array $values, $unused = null, int $ttl = 0): failed keys => -1.
            let mut failed = Vec::new();
            let r = zv::for_each((*key).value.arr, |k, v| {
                let k = match k {
                    zv::HKey::Index(i) => i.to_string().into_bytes(),
                    zv::HKey::Str(s) => zv::str_bytes(s).to_vec(),
                };
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
pub unsafe extern "C" fn ferrophp_apcu_store(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { store_impl(ed, rv, Mode::Overwrite) }
}

/// `apcu_add(...)`: like apcu_store, only when absent.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_add(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { store_impl(ed, rv, Mode::Add) }
}

const DELETE_EXPECTS: &str =
    "apc_delete() expects a string, array of strings, or APCIterator instance";

/// `apcu_delete(APCUIterator|array|string $key): bool|array` (array: the entries that
/// were not deleted, as given).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_delete(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "z" matches one zval out-pointer.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"z".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
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
            zv::IS_OBJECT => *rv = zv::bool_(iterator_delete(key)),
            _ => {
                errors::warn(DELETE_EXPECTS);
                *rv = zv::bool_(false);
            }
        }
    }
}

/// `apcu_exists(string|array $key): bool|array` (array: existing keys => true).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_exists(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"z".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            let mut keys = Vec::new();
            let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                match zv::string_bytes(v) {
                    Some(k) => keys.push(k),
                    None => errors::warn("apc_exists() expects a string or array of strings."),
                }
                Ok(())
            });
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

unsafe fn inc_impl(ed: Ed, rv: Rv, sign: i64) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut step: sys::zend_long = 1;
    let mut success: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "S|lzl" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"S|lzl".as_ptr(),
            &mut key,
            &mut step,
            &mut success,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let k = zv::str_bytes(key);
        let r = add_to(
            k,
            zv::str_hash(key),
            step.wrapping_mul(sign),
            ttl.max(0) as u64,
        );
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
pub unsafe extern "C" fn ferrophp_apcu_inc(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { inc_impl(ed, rv, 1) }
}

/// `apcu_dec(...)`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_dec(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { inc_impl(ed, rv, -1) }
}

/// `apcu_cas(string $key, int $old, int $new): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_cas(ed: Ed, rv: Rv) {
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
        let k = zv::str_bytes(key);
        *rv = zv::bool_(cas(k, zv::str_hash(key), old, new));
    }
}

/// `apcu_entry(string $key, callable $callback, int $ttl = 0): mixed` — the callback
/// receives the key; its value is returned whether or not it could be stored (a
/// resource is refused with APCu's warning, as by apcu_store).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_entry(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: all-zero is the "empty" fcall info ZPP's "f" fills in.
    let mut fci: sys::zend_fcall_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut fcc: sys::zend_fcall_info_cache = unsafe { std::mem::zeroed() };
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "Sf|l" matches the out-pointers (a non-callable is a TypeError, as in APCu).
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"Sf|l".as_ptr(),
            &mut key,
            &mut fci,
            &mut fcc,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        *rv = zv::null();
        if !on() {
            return;
        }
        let k = zv::str_bytes(key);
        let mut arg = sys::zval::default();
        zv::set_request_string(&mut arg, k);
        api::remember_with(
            k,
            zv::str_hash(key),
            &mut fci.function_name,
            std::slice::from_mut(&mut arg),
            rv,
            true,
            // Exclusive, as APCu's entry store: a value stored meanwhile (by a nested
            // apcu_entry or apcu_store) stays.
            |v| store_one(k, v, ttl, Mode::Add),
        );
        ffi::ferrophp_uc_zval_dtor(&mut arg);
    }
}

/// `apcu_clear_cache(): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_clear_cache(ed: Ed, rv: Rv) {
    // SAFETY: the same body as UserCache\Cache::clear() (a no-op when disabled).
    unsafe {
        if !on() {
            if sys::zend_parse_parameters(zv::num_args(ed), c"".as_ptr())
                == sys::ZEND_RESULT_CODE_SUCCESS
            {
                *rv = zv::bool_(true);
            }
            return;
        }
        api::ferrophp_uc_clear(ed, rv)
    }
}

/// What the listings report about one live entry.
struct Meta {
    key: Vec<u8>,
    hash: u64,
    ttl: u64,
    created: u64,
    bytes: usize,
}

/// The live (unexpired) entries in the order they were stored, optionally filtered.
fn live_entries(mut keep: impl FnMut(&[u8]) -> bool) -> Vec<Meta> {
    let table = super::cache();
    let now = table::now();
    let mut out: Vec<(u64, Meta)> = Vec::new();
    epoch::with_local(|local| {
        epoch::enter(local);
        table.for_each_node(|n| {
            if n.expired(now) || !keep(n.key()) {
                return;
            }
            out.push((
                n.seq,
                Meta {
                    key: n.key().to_vec(),
                    hash: n.hash(),
                    ttl: if n.expires == 0 {
                        0
                    } else {
                        n.expires.saturating_sub(n.created)
                    },
                    created: n.created,
                    bytes: n.bytes(),
                },
            ));
        });
        epoch::leave(local);
    });
    out.sort_unstable_by_key(|(seq, _)| *seq);
    out.into_iter().map(|(_, m)| m).collect()
}

/// `apcu_cache_info(bool $limited = false): array|false`, in APCu's shape. Per-entry hit
/// counts and access times are not kept (reads never write shared memory): `num_hits`
/// is 0 and `access_time` the creation time.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_cache_info(ed: Ed, rv: Rv) {
    let mut limited = false;
    // SAFETY: "|b" matches one bool out-pointer; the arrays are built in request memory.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"|b".as_ptr(), &mut limited)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if !on() {
            errors::warn("No APC info available.  Perhaps APC is not enabled? Check apc.enabled in your ini file");
            *rv = zv::bool_(false);
            return;
        }
        let t = super::cache();
        let (hits, misses, _) = epoch::stats();
        zv::set_new_array(rv, 16);
        zv::add_assoc_long(rv, "num_slots", t.slots() as i64);
        zv::add_assoc_long(rv, "ttl", TTL.load(Ordering::Relaxed) as i64);
        zv::add_assoc_double(rv, "num_hits", hits as f64);
        zv::add_assoc_double(rv, "num_misses", misses as f64);
        zv::add_assoc_double(rv, "num_inserts", t.stores.load(Ordering::Relaxed) as f64);
        zv::add_assoc_long(rv, "num_entries", t.entries.load(Ordering::Relaxed) as i64);
        zv::add_assoc_double(
            rv,
            "expunges",
            (t.evictions.load(Ordering::Relaxed) + t.expunges.load(Ordering::Relaxed)) as f64,
        );
        zv::add_assoc_long(rv, "start_time", START_TIME.load(Ordering::Relaxed) as i64);
        zv::add_assoc_double(rv, "mem_size", t.live_bytes.load(Ordering::Relaxed) as f64);
        let mt = "mmap";
        sys::add_assoc_stringl_ex(
            rv,
            c"memory_type".as_ptr(),
            11,
            mt.as_ptr().cast(),
            mt.len(),
        );
        if limited {
            return;
        }
        let entries = live_entries(|_| true);
        let mut list = sys::zval::default();
        let list_ht = zv::set_new_array(&mut list, entries.len() as u32);
        let mut slots = std::collections::BTreeMap::<u64, i64>::new();
        let mask = t.slots() as u64 - 1;
        for (i, m) in entries.iter().enumerate() {
            let mut link = sys::zval::default();
            zv::set_new_array(&mut link, 9);
            let mut info = sys::zval::default();
            zv::set_request_string(&mut info, &m.key);
            zv::add_assoc_zval(&mut link, "info", &mut info);
            zv::add_assoc_long(&mut link, "ttl", m.ttl as i64);
            zv::add_assoc_double(&mut link, "num_hits", 0.0);
            zv::add_assoc_long(&mut link, "mtime", m.created as i64);
            zv::add_assoc_long(&mut link, "creation_time", m.created as i64);
            zv::add_assoc_long(&mut link, "deletion_time", 0);
            zv::add_assoc_long(&mut link, "access_time", m.created as i64);
            zv::add_assoc_long(&mut link, "ref_count", 0);
            zv::add_assoc_long(&mut link, "mem_size", m.bytes as i64);
            zv::insert(list_ht, &zv::HKey::Index(i as i64), &mut link);
            *slots.entry(m.hash & mask).or_default() += 1;
        }
        zv::add_assoc_zval(rv, "cache_list", &mut list);
        let mut deleted = sys::zval::default();
        zv::set_new_array(&mut deleted, 0);
        zv::add_assoc_zval(rv, "deleted_list", &mut deleted);
        let mut dist = sys::zval::default();
        zv::set_new_array(&mut dist, slots.len() as u32);
        for (slot, n) in slots {
            sys::add_index_long(&mut dist, slot as sys::zend_ulong, n as sys::zend_long);
        }
        zv::add_assoc_zval(rv, "slot_distribution", &mut dist);
    }
}

/// `apcu_key_info(string $key): ?array` (null when absent or expired).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_key_info(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: "S" matches one string out-pointer.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"S".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        *rv = zv::null();
        if !on() {
            return;
        }
        let k = zv::str_bytes(key);
        let h = zv::str_hash(key);
        let table = super::cache();
        let now = table::now();
        let found = epoch::with_local(|local| {
            epoch::enter(local);
            let r = table.lookup(h, k).filter(|n| !n.expired(now)).map(|n| {
                let ttl = if n.expires == 0 {
                    0
                } else {
                    n.expires.saturating_sub(n.created)
                };
                (n.created, ttl)
            });
            epoch::leave(local);
            r
        });
        *rv = zv::null();
        if let Some((created, ttl)) = found {
            zv::set_new_array(rv, 7);
            zv::add_assoc_long(rv, "hits", 0);
            zv::add_assoc_long(rv, "access_time", created as i64);
            zv::add_assoc_long(rv, "mtime", created as i64);
            zv::add_assoc_long(rv, "creation_time", created as i64);
            zv::add_assoc_long(rv, "deletion_time", 0);
            zv::add_assoc_long(rv, "ttl", ttl as i64);
            zv::add_assoc_long(rv, "refs", 0);
        }
    }
}

/// `apcu_sma_info(bool $limited = false): array|false`, in APCu's shape: one segment of
/// the cache's memory limit; the free memory as one block.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_sma_info(ed: Ed, rv: Rv) {
    let mut limited = false;
    let t = super::cache();
    let used = t.live_bytes.load(Ordering::Relaxed) + t.retired_bytes.load(Ordering::Relaxed);
    let avail = t.limit.saturating_sub(used);
    // SAFETY: "|b" matches one bool out-pointer; builds fresh arrays in the return slot.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"|b".as_ptr(), &mut limited)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if !on() {
            errors::warn("No APC SMA info available.  Perhaps APC is disabled via apc.enabled?");
            *rv = zv::bool_(false);
            return;
        }
        zv::set_new_array(rv, 4);
        zv::add_assoc_long(rv, "num_seg", 1);
        zv::add_assoc_double(rv, "seg_size", t.limit as f64);
        zv::add_assoc_double(rv, "avail_mem", avail as f64);
        if limited {
            return;
        }
        let mut block = sys::zval::default();
        zv::set_new_array(&mut block, 2);
        zv::add_assoc_long(&mut block, "size", avail as i64);
        zv::add_assoc_long(&mut block, "offset", used as i64);
        let mut seg = sys::zval::default();
        let seg_ht = zv::set_new_array(&mut seg, 1);
        zv::insert(seg_ht, &zv::HKey::Index(0), &mut block);
        let mut lists = sys::zval::default();
        let lists_ht = zv::set_new_array(&mut lists, 1);
        zv::insert(lists_ht, &zv::HKey::Index(0), &mut seg);
        zv::add_assoc_zval(rv, "block_lists", &mut lists);
    }
}

/// `apcu_enabled(): bool` (`apc.enabled`, and `apc.enable_cli` under the "cli" SAPI).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_enabled(_ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's return slot.
    unsafe { *rv = zv::bool_(ENABLED.load(Ordering::Relaxed)) };
}

// ---------------------------------------------------------------------------------------
// APCUIterator
// ---------------------------------------------------------------------------------------

const ITER_TYPE: i64 = 1 << 0;
const ITER_KEY: i64 = 1 << 1;
const ITER_VALUE: i64 = 1 << 2;
const ITER_NUM_HITS: i64 = 1 << 3;
const ITER_MTIME: i64 = 1 << 4;
const ITER_CTIME: i64 = 1 << 5;
const ITER_DTIME: i64 = 1 << 6;
const ITER_ATIME: i64 = 1 << 7;
const ITER_REFCOUNT: i64 = 1 << 8;
const ITER_MEM_SIZE: i64 = 1 << 9;
const ITER_TTL: i64 = 1 << 10;
const ITER_ALL: i64 = 0xffff_ffff;
const LIST_ACTIVE: i64 = 1;
const LIST_DELETED: i64 = 2;
const DEFAULT_CHUNK: usize = 100;

/// One APCUIterator's state (boxed behind the object's state pointer). Like APCu, it
/// builds its items a chunk at a time, so an entry changed after its chunk was built is
/// seen as it was; the keys it walks are those that matched when the walk (re)started,
/// in the order they were stored.
struct IterState {
    format: i64,
    deleted_list: bool,
    /// The search regex (a request string zval we hold a reference to).
    regex: Option<sys::zval>,
    /// The search as a set of keys.
    keys: Option<HashSet<Vec<u8>>>,
    chunk: usize,
    pending: Option<Vec<Meta>>,
    cursor: usize,
    stack: Vec<(Vec<u8>, sys::zval)>,
    stack_idx: usize,
    key_idx: i64,
    totals: Option<(i64, i64, i64)>,
}

impl IterState {
    fn matches(&self, key: &[u8]) -> bool {
        if let Some(keys) = &self.keys {
            return keys.contains(key);
        }
        let Some(re) = &self.regex else {
            return true;
        };
        // SAFETY: called inside an iterator method on the PHP thread; preg_match gets
        // its own references and everything returned is released.
        unsafe {
            let mut args = [*re, sys::zval::default()];
            ffi::ferrophp_uc_try_addref(&mut args[0]);
            zv::set_request_string(&mut args[1], key);
            let mut out = sys::zval::default();
            zv::call_function(c"preg_match", &mut out, &mut args);
            let hit = zv::ztype(&out) == zv::IS_LONG && out.value.lval > 0;
            ffi::ferrophp_uc_zval_dtor(&mut out);
            for a in &mut args {
                ffi::ferrophp_uc_zval_dtor(a);
            }
            hit
        }
    }

    /// Whether the search regex compiles (preg_match() on "" does not return false).
    fn regex_compiles(&mut self) -> bool {
        let Some(re) = &self.regex else {
            return true;
        };
        // SAFETY: as in `matches`.
        unsafe {
            let mut args = [*re, sys::zval::default()];
            ffi::ferrophp_uc_try_addref(&mut args[0]);
            zv::set_request_string(&mut args[1], b"");
            let mut out = sys::zval::default();
            zv::call_function(c"preg_match", &mut out, &mut args);
            let ok = zv::ztype(&out) == zv::IS_LONG;
            ffi::ferrophp_uc_zval_dtor(&mut out);
            for a in &mut args {
                ffi::ferrophp_uc_zval_dtor(a);
            }
            ok
        }
    }

    fn clear_stack(&mut self) {
        for (_, mut v) in self.stack.drain(..) {
            // SAFETY: items are request values this state owns.
            unsafe { ffi::ferrophp_uc_zval_dtor(&mut v) };
        }
        self.stack_idx = 0;
    }

    /// Builds the next chunk of items; their number (0: the walk is over).
    fn fetch(&mut self) -> usize {
        self.clear_stack();
        if self.deleted_list {
            return 0; // retired entries are not listed (see docs/apcu-compat.md)
        }
        if self.pending.is_none() {
            let mut matched = Vec::new();
            for m in live_entries(|_| true) {
                if self.matches(&m.key) {
                    matched.push(m);
                }
            }
            self.pending = Some(matched);
            self.cursor = 0;
        }
        let pending = self.pending.take().unwrap_or_default();
        while self.stack.is_empty() && self.cursor < pending.len() {
            let end = (self.cursor + self.chunk).min(pending.len());
            for m in &pending[self.cursor..end] {
                if let Some(item) = self.item(m) {
                    self.stack.push((m.key.clone(), item));
                }
            }
            self.cursor = end;
        }
        self.pending = Some(pending);
        self.stack.len()
    }

    /// The item array for one entry, or None when it is gone.
    fn item(&self, m: &Meta) -> Option<sys::zval> {
        let f = self.format;
        // SAFETY: builds a request array; the value is fetched as apcu_fetch would.
        unsafe {
            let mut value = sys::zval::default();
            if f & ITER_VALUE != 0 {
                match fetch_into(&m.key, m.hash, &mut value, false) {
                    Fetched::Hit => {}
                    Fetched::Miss | Fetched::Failed => return None,
                }
            } else if !exists(&m.key, m.hash) {
                return None;
            }
            let mut a = sys::zval::default();
            zv::set_new_array(&mut a, 11);
            if f & ITER_TYPE != 0 {
                let t = "user";
                sys::add_assoc_stringl_ex(&mut a, c"type".as_ptr(), 4, t.as_ptr().cast(), t.len());
            }
            if f & ITER_KEY != 0 {
                let mut k = sys::zval::default();
                zv::set_request_string(&mut k, &m.key);
                zv::add_assoc_zval(&mut a, "key", &mut k);
            }
            if f & ITER_VALUE != 0 {
                zv::add_assoc_zval(&mut a, "value", &mut value);
            }
            let created = m.created as i64;
            for (bit, name, v) in [
                (ITER_NUM_HITS, "num_hits", 0),
                (ITER_MTIME, "mtime", created),
                (ITER_CTIME, "creation_time", created),
                (ITER_DTIME, "deletion_time", 0),
                (ITER_ATIME, "access_time", created),
                (ITER_REFCOUNT, "ref_count", 0),
                (ITER_MEM_SIZE, "mem_size", m.bytes as i64),
                (ITER_TTL, "ttl", m.ttl as i64),
            ] {
                if f & bit != 0 {
                    zv::add_assoc_long(&mut a, name, v);
                }
            }
            Some(a)
        }
    }

    fn totals(&mut self) -> (i64, i64, i64) {
        if let Some(t) = self.totals {
            return t;
        }
        let (mut count, mut size) = (0i64, 0i64);
        if !self.deleted_list {
            for m in live_entries(|_| true) {
                if self.matches(&m.key) {
                    count += 1;
                    size += m.bytes as i64;
                }
            }
        }
        let t = (count, size, 0);
        self.totals = Some(t);
        t
    }
}

impl Drop for IterState {
    fn drop(&mut self) {
        self.clear_stack();
        if let Some(mut re) = self.regex.take() {
            // SAFETY: our reference to the search string.
            unsafe { ffi::ferrophp_uc_zval_dtor(&mut re) };
        }
    }
}

/// free_obj of APCUIterator: drops the state.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_iterator_drop(state: *mut std::ffi::c_void) {
    if !state.is_null() {
        // SAFETY: the pointer came from Box::into_raw in __construct and is dropped once
        // (the C side clears it).
        drop(unsafe { Box::from_raw(state.cast::<IterState>()) });
    }
}

/// The state of `$this`, or None after throwing "uninitialized" (a subclass constructor
/// that never called the parent's).
///
/// # Safety
/// `ed` is the frame of a running APCUIterator method.
unsafe fn this_state<'a>(ed: Ed) -> Option<&'a mut IterState> {
    // SAFETY: guaranteed by the caller; the slot belongs to the live object.
    unsafe {
        let slot = ffi::ferrophp_apcu_iterator_this(ed);
        if slot.is_null() || (*slot).is_null() {
            errors::throw(Exception::Error, "Trying to use uninitialized APCUIterator");
            return None;
        }
        Some(&mut *(*slot).cast::<IterState>())
    }
}

/// Methods take no arguments: ArgumentCountError otherwise.
///
/// # Safety
/// `ed` is the running call's frame.
unsafe fn no_args(ed: Ed) -> bool {
    // SAFETY: "" matches no out-pointers.
    unsafe {
        sys::zend_parse_parameters(zv::num_args(ed), c"".as_ptr()) == sys::ZEND_RESULT_CODE_SUCCESS
    }
}

/// `APCUIterator::__construct(array|string|null $search = null, int $format = APC_ITER_ALL,
/// int $chunk_size = 0, int $list = APC_LIST_ACTIVE)`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_construct(ed: Ed, _rv: Rv) {
    let mut search: *mut sys::zval = std::ptr::null_mut();
    let mut format: sys::zend_long = ITER_ALL as sys::zend_long;
    let mut chunk: sys::zend_long = 0;
    let mut list: sys::zend_long = LIST_ACTIVE as sys::zend_long;
    // SAFETY: "|z!lll" matches the out-pointers; the state slot belongs to $this.
    unsafe {
        if sys::zend_parse_parameters(
            zv::num_args(ed),
            c"|z!lll".as_ptr(),
            &mut search,
            &mut format,
            &mut chunk,
            &mut list,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if !ENABLED.load(Ordering::Relaxed) {
            errors::throw(Exception::Error, "APC must be enabled to use APCUIterator");
            return;
        }
        if chunk < 0 {
            errors::warn("APCUIterator chunk size must be 0 or greater");
            return;
        }
        if format as i64 > ITER_ALL {
            errors::warn("APCUIterator format is invalid");
            return;
        }
        if list as i64 != LIST_ACTIVE && list as i64 != LIST_DELETED {
            errors::warn("APCUIterator invalid list type");
            return;
        }
        let slot = ffi::ferrophp_apcu_iterator_this(ed);
        if slot.is_null() {
            return;
        }
        let mut regex = None;
        let mut keys = None;
        if !search.is_null() {
            match zv::ztype(search) {
                zv::IS_STRING if zv::str_bytes((*search).value.str_).is_empty() => {}
                zv::IS_STRING => {
                    let mut re = *search;
                    ffi::ferrophp_uc_try_addref(&mut re);
                    regex = Some(re);
                }
                zv::IS_ARRAY => {
                    let mut set = HashSet::new();
                    let _ = zv::for_each::<()>((*search).value.arr, |_, v| {
                        if let Some(k) = zv::key_bytes(v) {
                            set.insert(k);
                        }
                        Ok(())
                    });
                    keys = Some(set);
                }
                _ => {}
            }
        }
        let mut state = Box::new(IterState {
            format: format as i64,
            deleted_list: list as i64 == LIST_DELETED,
            regex,
            keys,
            chunk: if chunk == 0 {
                DEFAULT_CHUNK
            } else {
                chunk as usize
            },
            pending: None,
            cursor: 0,
            stack: Vec::new(),
            stack_idx: 0,
            key_idx: 0,
            totals: None,
        });
        if state.regex.is_some() && !state.regex_compiles() {
            // APCu stops here too (with a fatal error); the iterator stays uninitialised.
            let re = state.regex.map(|r| zv::str_bytes(r.value.str_).to_vec());
            errors::warn(&format!(
                "Could not compile regular expression: {}",
                String::from_utf8_lossy(&re.unwrap_or_default())
            ));
            return;
        }
        if !(*slot).is_null() {
            ferrophp_apcu_iterator_drop(*slot);
        }
        *slot = Box::into_raw(state).cast();
    }
}

/// `APCUIterator::rewind(): void`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_rewind(ed: Ed, _rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        it.pending = None;
        it.key_idx = 0;
        it.fetch();
    }
}

/// `APCUIterator::valid(): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_valid(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        if it.stack_idx == it.stack.len() {
            it.fetch();
        }
        *rv = zv::bool_(!it.stack.is_empty());
    }
}

/// `APCUIterator::current(): mixed`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_current(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method; the returned item gets its own reference.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        if it.stack_idx == it.stack.len() && it.fetch() == 0 {
            errors::throw(
                Exception::Error,
                "Cannot call current() on invalid iterator",
            );
            return;
        }
        let mut v = it.stack[it.stack_idx].1;
        ffi::ferrophp_uc_try_addref(&mut v);
        *rv = v;
    }
}

/// `APCUIterator::key(): string|int`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_key(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        if it.stack_idx == it.stack.len() && it.fetch() == 0 {
            errors::throw(Exception::Error, "Cannot call key() on invalid iterator");
            return;
        }
        zv::set_request_string(rv, &it.stack[it.stack_idx].0);
    }
}

/// `APCUIterator::next(): void`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_next(ed: Ed, _rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        if it.stack.is_empty() {
            return;
        }
        it.stack_idx += 1;
        it.key_idx += 1;
    }
}

/// # Safety
/// A running APCUIterator method's frame and return slot.
unsafe fn total(ed: Ed, rv: Rv, pick: fn((i64, i64, i64)) -> i64) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        if !no_args(ed) {
            return;
        }
        let Some(it) = this_state(ed) else { return };
        *rv = zv::long(pick(it.totals()));
    }
}

/// `APCUIterator::getTotalHits(): int` (0: per-entry hits are not counted).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_total_hits(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { total(ed, rv, |t| t.2) }
}

/// `APCUIterator::getTotalSize(): int`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_total_size(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { total(ed, rv, |t| t.1) }
}

/// `APCUIterator::getTotalCount(): int`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_it_total_count(ed: Ed, rv: Rv) {
    // SAFETY: as above.
    unsafe { total(ed, rv, |t| t.0) }
}

/// `apcu_delete(APCUIterator)`: deletes every entry the iterator walks (from the start).
///
/// # Safety
/// On a PHP thread inside a request; `obj` is a live object zval.
unsafe fn iterator_delete(obj: *mut sys::zval) -> bool {
    // SAFETY: guaranteed by the caller; the state belongs to the live object.
    unsafe {
        let slot = ffi::ferrophp_apcu_iterator_state(obj);
        if slot.is_null() {
            errors::warn("apc_delete object argument must be instance of APCUIterator.");
            return false;
        }
        if (*slot).is_null() {
            errors::throw(Exception::Error, "Trying to use uninitialized APCUIterator");
            return false;
        }
        let it = &mut *(*slot).cast::<IterState>();
        if it.deleted_list {
            return true;
        }
        for m in live_entries(|_| true) {
            if it.matches(&m.key) {
                delete(&m.key, m.hash);
            }
        }
        true
    }
}
