//! `APCUIterator`: walks the live entries whose key matches a search (a regex, a list of
//! keys, or everything) in the order they were stored, a chunk of items at a time, and
//! `apcu_delete(APCUIterator)`. The state lives in a box behind the object (its C side
//! is in apcu.c); the constants are APCu's `APC_ITER_*` and `APC_LIST_*`.

use std::collections::HashSet;

use php_sys as sys;

use super::{delete, exists, fetch_into, on, Ed, Rv};
use crate::errors::{self, Exception};
use crate::ffi;
use crate::ops::{self, EntryMeta, Fetched};
use crate::zv::{self, parse_args};

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
    pending: Option<Vec<EntryMeta>>,
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
        match self.regex_matches(key) {
            None => true,
            Some(n) => n.is_some_and(|n| n > 0),
        }
    }

    /// Whether the search regex compiles (preg_match() on "" does not return false).
    fn regex_compiles(&self) -> bool {
        self.regex_matches(b"") != Some(None)
    }

    /// `preg_match($regex, $subject)` as an int (None: it returned false), or None when
    /// there is no regex.
    fn regex_matches(&self, subject: &[u8]) -> Option<Option<i64>> {
        let re = self.regex.as_ref()?;
        let mut args = [*re, sys::zval::default()];
        let mut out = sys::zval::default();
        // SAFETY: called inside an iterator method on the PHP thread; preg_match gets its
        // own references to both arguments, which are released with its result.
        unsafe {
            ffi::ferrophp_uc_try_addref(&mut args[0]);
            zv::set_request_string(&mut args[1], subject);
            zv::call_function(c"preg_match", &mut out, &mut args);
            let n = (zv::ztype(&out) == zv::IS_LONG).then_some(out.value.lval);
            ffi::ferrophp_uc_zval_dtor(&mut out);
            for a in &mut args {
                ffi::ferrophp_uc_zval_dtor(a);
            }
            Some(n)
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
            for m in ops::entries() {
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
    fn item(&self, m: &EntryMeta) -> Option<sys::zval> {
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
            for m in ops::entries() {
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
pub(crate) unsafe extern "C" fn ferrophp_apcu_iterator_drop(state: *mut std::ffi::c_void) {
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

/// The state of `$this` for a method that takes no arguments: None after PHP threw the
/// ArgumentCountError, or after [`this_state`] threw.
///
/// # Safety
/// `ed` is the frame of a running APCUIterator method.
unsafe fn method_state<'a>(ed: Ed) -> Option<&'a mut IterState> {
    // SAFETY: guaranteed by the caller; "" matches no out-pointers.
    unsafe { parse_args!(ed, c"").then(|| this_state(ed)).flatten() }
}

/// `APCUIterator::__construct(array|string|null $search = null, int $format = APC_ITER_ALL,
/// int $chunk_size = 0, int $list = APC_LIST_ACTIVE)`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator___construct(ed: Ed, _rv: Rv) {
    let mut search: *mut sys::zval = std::ptr::null_mut();
    let mut format: sys::zend_long = ITER_ALL as sys::zend_long;
    let mut chunk: sys::zend_long = 0;
    let mut list: sys::zend_long = LIST_ACTIVE as sys::zend_long;
    // SAFETY: "|z!lll" matches the out-pointers; the state slot belongs to $this.
    unsafe {
        if !parse_args!(
            ed,
            c"|z!lll",
            &mut search,
            &mut format,
            &mut chunk,
            &mut list
        ) {
            return;
        }
        if !on() {
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
        let state = Box::new(IterState {
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
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_rewind(ed: Ed, _rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        let Some(it) = method_state(ed) else { return };
        it.pending = None;
        it.key_idx = 0;
        it.fetch();
    }
}

/// `APCUIterator::valid(): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_valid(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        let Some(it) = method_state(ed) else { return };
        if it.stack_idx == it.stack.len() {
            it.fetch();
        }
        *rv = zv::bool_(!it.stack.is_empty());
    }
}

/// `APCUIterator::current(): mixed`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_current(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method; the returned item gets its own reference.
    unsafe {
        let Some(it) = method_state(ed) else { return };
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
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_key(ed: Ed, rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        let Some(it) = method_state(ed) else { return };
        if it.stack_idx == it.stack.len() && it.fetch() == 0 {
            errors::throw(Exception::Error, "Cannot call key() on invalid iterator");
            return;
        }
        zv::set_request_string(rv, &it.stack[it.stack_idx].0);
    }
}

/// `APCUIterator::next(): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_next(ed: Ed, _rv: Rv) {
    // SAFETY: a running APCUIterator method.
    unsafe {
        let Some(it) = method_state(ed) else { return };
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
        let Some(it) = method_state(ed) else { return };
        *rv = zv::long(pick(it.totals()));
    }
}

/// `APCUIterator::getTotalHits(): int` (0: per-entry hits are not counted).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_getTotalHits(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { total(ed, rv, |t| t.2) }
}

/// `APCUIterator::getTotalSize(): int`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_getTotalSize(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { total(ed, rv, |t| t.1) }
}

/// `APCUIterator::getTotalCount(): int`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn ferrophp_zim_APCUIterator_getTotalCount(ed: Ed, rv: Rv) {
    // SAFETY: PHP passes this method call's frame and return slot.
    unsafe { total(ed, rv, |t| t.0) }
}

/// `apcu_delete(APCUIterator)`: deletes every entry the iterator walks (from the start).
///
/// # Safety
/// On a PHP thread inside a request; `obj` is a live object zval.
pub(super) unsafe fn delete_walked(obj: *mut sys::zval) -> bool {
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
        for m in ops::entries() {
            if it.matches(&m.key) {
                delete(&m.key, m.hash);
            }
        }
        true
    }
}
