//! APCu's info functions in APCu's shapes: `apcu_cache_info`, `apcu_key_info` and
//! `apcu_sma_info`, from the shared counters and listings (`ops.rs`). Per-entry hit
//! counts and access times are not kept (reads never write shared memory): hits are
//! reported as 0 and the access time as the creation time.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use php_sys as sys;

use super::{on, Ed, Rv, START_TIME, TTL};
use crate::errors;
use crate::ops;
use crate::zv::{self, parse_args};

/// `apcu_cache_info(bool $limited = false): array|false`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_cache_info(ed: Ed, rv: Rv) {
    let mut limited = false;
    // SAFETY: PHP passes this call's frame and return slot; "|b" matches one bool
    // out-pointer.
    if !unsafe { parse_args!(ed, c"|b", &mut limited) } {
        return;
    }
    // SAFETY: PHP passes this call's return slot, writable; the arrays are built fresh
    // in request memory and each moves into its parent.
    unsafe {
        if !on() {
            errors::warn("No APC info available.  Perhaps APC is not enabled? Check apc.enabled in your ini file");
            *rv = zv::bool_(false);
            return;
        }
        let c = ops::counters();
        zv::set_new_array(rv, 16);
        zv::add_assoc_long(rv, "num_slots", c.slots as i64);
        zv::add_assoc_long(rv, "ttl", TTL.load(Ordering::Relaxed) as i64);
        zv::add_assoc_double(rv, "num_hits", c.hits as f64);
        zv::add_assoc_double(rv, "num_misses", c.misses as f64);
        zv::add_assoc_double(rv, "num_inserts", c.stores as f64);
        zv::add_assoc_long(rv, "num_entries", c.entries as i64);
        zv::add_assoc_double(rv, "expunges", (c.evictions + c.expunges) as f64);
        zv::add_assoc_long(rv, "start_time", START_TIME.load(Ordering::Relaxed) as i64);
        zv::add_assoc_double(rv, "mem_size", c.live_bytes as f64);
        zv::add_assoc_string(rv, "memory_type", b"mmap");
        if limited {
            return;
        }
        let entries = ops::entries();
        let mut list = sys::zval::default();
        let list_ht = zv::set_new_array(&mut list, entries.len() as u32);
        let mut slots = BTreeMap::<u64, i64>::new();
        let mask = c.slots - 1;
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
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_key_info(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: PHP passes this call's frame and return slot; "S" matches one string
    // out-pointer, a live string of the call; the result array is built fresh.
    unsafe {
        if !parse_args!(ed, c"S", &mut key) {
            return;
        }
        *rv = zv::null();
        if !on() {
            return;
        }
        let (k, h) = zv::str_key(key);
        if let Some(m) = ops::entry(k, h) {
            zv::set_new_array(rv, 7);
            zv::add_assoc_long(rv, "hits", 0);
            zv::add_assoc_long(rv, "access_time", m.created as i64);
            zv::add_assoc_long(rv, "mtime", m.created as i64);
            zv::add_assoc_long(rv, "creation_time", m.created as i64);
            zv::add_assoc_long(rv, "deletion_time", 0);
            zv::add_assoc_long(rv, "ttl", m.ttl as i64);
            zv::add_assoc_long(rv, "refs", 0);
        }
    }
}

/// `apcu_sma_info(bool $limited = false): array|false`: one segment of the cache's
/// memory limit; the free memory as one block.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_zif_apcu_sma_info(ed: Ed, rv: Rv) {
    let mut limited = false;
    let c = ops::counters();
    let used = c.memory_used();
    let avail = c.memory_limit.saturating_sub(used);
    // SAFETY: PHP passes this call's frame and return slot; "|b" matches one bool
    // out-pointer.
    if !unsafe { parse_args!(ed, c"|b", &mut limited) } {
        return;
    }
    // SAFETY: PHP passes this call's return slot, writable; the arrays are built fresh
    // in request memory and each moves into its parent.
    unsafe {
        if !on() {
            errors::warn("No APC SMA info available.  Perhaps APC is disabled via apc.enabled?");
            *rv = zv::bool_(false);
            return;
        }
        zv::set_new_array(rv, 4);
        zv::add_assoc_long(rv, "num_seg", 1);
        zv::add_assoc_double(rv, "seg_size", c.memory_limit as f64);
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
