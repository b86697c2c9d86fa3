//! `apcu_*` functions backed by the shared cache, registered only when APCu itself is not
//! loaded (and `usercache.apcu_compat` is on), so applications and framework adapters
//! written for APCu share one cache across threads unchanged. Semantics follow APCu's
//! documentation: bad keys return false instead of throwing, arrays of keys are accepted
//! where APCu accepts them.

use php_sys as sys;

use super::api::{self, Fetched, MAX_KEY};
use super::table::Mode;
use super::zv;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

fn hash(k: &[u8]) -> u64 {
    // SAFETY: zend_hash_func reads `len` bytes.
    unsafe { sys::zend_hash_func(k.as_ptr().cast(), k.len()) }
}

fn ok_key(k: &[u8]) -> bool {
    !k.is_empty() && k.len() <= MAX_KEY
}

/// # Safety
/// `ed` is the running call's frame.
unsafe fn argc(ed: Ed) -> u32 {
    // SAFETY: guaranteed by the caller.
    unsafe { zv::num_args(ed) }
}

/// `apcu_fetch(string|array $key, bool &$success = null): mixed`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_fetch(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut success: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "z|z" matches the out-pointers; PHP passes this call's frame and slot.
    unsafe {
        if sys::zend_parse_parameters(argc(ed), c"z|z".as_ptr(), &mut key, &mut success)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let mut ok = false;
        if zv::ztype(key) == zv::IS_ARRAY {
            let mut keys = Vec::new();
            let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                if let Some(k) = api::key_from_zval(v) {
                    keys.push(k);
                }
                Ok(())
            });
            let ht = zv::set_new_array(rv, keys.len() as u32);
            for k in keys {
                if !ok_key(&k) {
                    continue;
                }
                let mut v = sys::zval::default();
                match api::fetch_into(&k, hash(&k), &mut v, false) {
                    Fetched::Hit => api::insert_bytes_key(ht, &k, &mut v),
                    Fetched::Miss => {}
                    Fetched::Failed => return,
                }
            }
            ok = true;
        } else if let Some(k) = api::key_from_zval(key) {
            *rv = zv::bool_(false);
            if ok_key(&k) {
                match api::fetch_into(&k, hash(&k), rv, false) {
                    Fetched::Hit => ok = true,
                    Fetched::Miss => *rv = zv::bool_(false),
                    Fetched::Failed => return,
                }
            }
        } else {
            *rv = zv::bool_(false);
        }
        if !success.is_null() {
            sys::ferrophp_uc_assign_ref_bool(success, ok);
        }
    }
}

unsafe fn store_impl(ed: Ed, rv: Rv, mode: Mode) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "z|zl" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(argc(ed), c"z|zl".as_ptr(), &mut key, &mut value, &mut ttl)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let ttl = ttl.max(0) as u64;
        if zv::ztype(key) == zv::IS_ARRAY {
            // apcu_store(array $values, $unused = null, int $ttl = 0): failed keys => -1.
            let mut failed = Vec::new();
            let r = zv::for_each((*key).value.arr, |k, v| {
                let k = match k {
                    zv::HKey::Index(i) => i.to_string().into_bytes(),
                    zv::HKey::Str(s) => zv::str_bytes(s).to_vec(),
                };
                if !ok_key(&k) {
                    failed.push(k);
                    return Ok(());
                }
                match api::store_value(&k, hash(&k), v, ttl, mode) {
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
                api::insert_bytes_key(ht, &k, &mut v);
            }
            return;
        }
        let Some(k) = api::key_from_zval(key) else {
            *rv = zv::bool_(false);
            return;
        };
        if value.is_null() || !ok_key(&k) {
            *rv = zv::bool_(false);
            return;
        }
        if let Ok(stored) = api::store_value(&k, hash(&k), value, ttl, mode) {
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

/// `apcu_delete(string|array $key): bool|array` (array: the keys that failed).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_delete(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "z" matches one zval out-pointer.
    unsafe {
        if sys::zend_parse_parameters(argc(ed), c"z".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            let mut keys = Vec::new();
            let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                keys.push(api::key_from_zval(v).unwrap_or_default());
                Ok(())
            });
            zv::set_new_array(rv, 0);
            for k in keys {
                if !ok_key(&k) || !api::delete(&k, hash(&k)) {
                    sys::add_next_index_stringl(rv, k.as_ptr().cast(), k.len());
                }
            }
            return;
        }
        let k = api::key_from_zval(key).unwrap_or_default();
        *rv = zv::bool_(ok_key(&k) && api::delete(&k, hash(&k)));
    }
}

/// `apcu_exists(string|array $key): bool|array` (array: existing keys => true).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_exists(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        if sys::zend_parse_parameters(argc(ed), c"z".as_ptr(), &mut key)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        if zv::ztype(key) == zv::IS_ARRAY {
            let mut keys = Vec::new();
            let _ = zv::for_each::<()>((*key).value.arr, |_, v| {
                if let Some(k) = api::key_from_zval(v) {
                    keys.push(k);
                }
                Ok(())
            });
            let ht = zv::set_new_array(rv, 0);
            for k in keys {
                if ok_key(&k) && api::exists(&k, hash(&k)) {
                    let mut t = zv::bool_(true);
                    api::insert_bytes_key(ht, &k, &mut t);
                }
            }
            return;
        }
        let k = api::key_from_zval(key).unwrap_or_default();
        *rv = zv::bool_(ok_key(&k) && api::exists(&k, hash(&k)));
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
            argc(ed),
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
        let r = if ok_key(k) {
            api::add_to(
                k,
                zv::str_hash(key),
                step.wrapping_mul(sign),
                ttl.max(0) as u64,
            )
        } else {
            None
        };
        *rv = match r {
            Some(n) => zv::long(n),
            None => zv::bool_(false),
        };
        if !success.is_null() {
            sys::ferrophp_uc_assign_ref_bool(success, r.is_some());
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
        if sys::zend_parse_parameters(argc(ed), c"Sll".as_ptr(), &mut key, &mut old, &mut new)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let k = zv::str_bytes(key);
        *rv = zv::bool_(ok_key(k) && api::cas(k, zv::str_hash(key), old, new));
    }
}

/// `apcu_entry(string $key, callable $callback, int $ttl = 0): mixed` — the callback
/// receives the key.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_entry(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut producer: *mut sys::zval = std::ptr::null_mut();
    let mut ttl: sys::zend_long = 0;
    // SAFETY: "Sz|l" matches the out-pointers.
    unsafe {
        if sys::zend_parse_parameters(
            argc(ed),
            c"Sz|l".as_ptr(),
            &mut key,
            &mut producer,
            &mut ttl,
        ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let k = zv::str_bytes(key);
        if !ok_key(k) || !sys::ferrophp_uc_is_callable(producer) {
            *rv = zv::bool_(false);
            return;
        }
        let mut arg = sys::zval::default();
        zv::set_request_string(&mut arg, k);
        *rv = zv::null();
        api::remember(
            k,
            zv::str_hash(key),
            producer,
            std::slice::from_mut(&mut arg),
            ttl.max(0) as u64,
            rv,
        );
        sys::ferrophp_uc_zval_dtor(&mut arg);
    }
}

/// `apcu_clear_cache(): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_clear_cache(ed: Ed, rv: Rv) {
    // SAFETY: the same body as UserCache\Cache::clear().
    unsafe { api::ferrophp_uc_clear(ed, rv) }
}

/// `apcu_cache_info(bool $limited = false): array|false` (APCu's summary keys).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_cache_info(_ed: Ed, rv: Rv) {
    // SAFETY: builds the info array in the return slot, then adds APCu's names.
    unsafe {
        api::info_into(rv);
        let info = super::cache();
        let (hits, misses, _) = super::epoch::stats();
        for (k, v) in [
            (
                "num_slots",
                info.entries.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
            ("num_hits", hits as i64),
            ("num_misses", misses as i64),
            (
                "num_entries",
                info.entries.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
            (
                "expunges",
                info.evictions.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
            (
                "mem_size",
                info.live_bytes.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
        ] {
            sys::add_assoc_long_ex(rv, k.as_ptr().cast(), k.len(), k_long(v));
        }
    }
}

fn k_long(v: i64) -> sys::zend_long {
    v as sys::zend_long
}

/// `apcu_sma_info(bool $limited = false): array|false`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_sma_info(_ed: Ed, rv: Rv) {
    let t = super::cache();
    let used = t.live_bytes.load(std::sync::atomic::Ordering::Relaxed)
        + t.retired_bytes.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: builds a fresh array in the return slot.
    unsafe {
        zv::set_new_array(rv, 3);
        for (k, v) in [
            ("num_seg", 1i64),
            ("seg_size", t.limit as i64),
            ("avail_mem", t.limit.saturating_sub(used) as i64),
        ] {
            sys::add_assoc_long_ex(rv, k.as_ptr().cast(), k.len(), v as sys::zend_long);
        }
    }
}

/// `apcu_enabled(): bool`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_apcu_enabled(_ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this call's return slot.
    unsafe { *rv = zv::bool_(true) };
}
