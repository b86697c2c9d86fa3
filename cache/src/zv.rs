//! The FFI edge of the cache: reading and writing `zval`s, PHP strings and hash tables.
//! These are the `Z_*`/`ZVAL_*` macros of `zend_types.h` spelled in Rust, each a small
//! function whose safety contract is "the pointer is a live zval/string/array". The items
//! marked `pub` are also what the worker crate's `Ferrophp\Metrics` functions read their
//! arguments and build their results with; the rest is the cache's own.

use std::ffi::c_char;
use std::ptr::NonNull;

use php_sys as sys;

use super::ffi;

// zend_types.h type tags (the low byte of `u1.type_info`).
pub(crate) const IS_UNDEF: u8 = 0;
pub(crate) const IS_NULL: u8 = 1;
/// `false`.
pub const IS_FALSE: u8 = 2;
/// `true`.
pub const IS_TRUE: u8 = 3;
/// An int (`value.lval`).
pub const IS_LONG: u8 = 4;
/// A float (`value.dval`).
pub const IS_DOUBLE: u8 = 5;
/// A string (`value.str_`).
pub const IS_STRING: u8 = 6;
/// An array (`value.arr`).
pub const IS_ARRAY: u8 = 7;
pub(crate) const IS_OBJECT: u8 = 8;
pub(crate) const IS_RESOURCE: u8 = 9;
pub(crate) const IS_REFERENCE: u8 = 10;
pub(crate) const IS_INDIRECT: u8 = 12;

/// `IS_TYPE_REFCOUNTED << Z_TYPE_FLAGS_SHIFT`.
const REFCOUNTED: u32 = 1 << 8;
/// `IS_STRING_EX`: a refcounted (request) string.
const IS_STRING_EX: u32 = IS_STRING as u32 | REFCOUNTED;
/// `IS_OBJECT_EX`: refcounted and collectable.
const IS_OBJECT_EX: u32 = IS_OBJECT as u32 | REFCOUNTED | (1 << 9);

/// `ZEND_ACC_*` class flags (zend_compile.h).
pub(crate) const ZEND_ACC_ENUM: u32 = 1 << 28;
pub(crate) const ZEND_ACC_NOT_SERIALIZABLE: u32 = 1 << 29;
/// `ZEND_INTERNAL_CLASS` (`zend_class_entry.type`).
pub(crate) const ZEND_INTERNAL_CLASS: u8 = 1;

/// `Z_TYPE_P`.
///
/// # Safety
/// `zv` points to a live zval.
#[inline]
pub unsafe fn ztype(zv: *const sys::zval) -> u8 {
    // SAFETY: guaranteed by the caller.
    unsafe { (*zv).u1.type_info as u8 }
}

/// The type tag of a zval we hold by reference (every zval has `type_info` set).
#[inline]
pub(crate) fn type_of(zv: &sys::zval) -> u8 {
    // SAFETY: `u1.type_info` is the whole of `u1`, initialised for every zval.
    unsafe { zv.u1.type_info as u8 }
}

/// The int a zval we hold by reference holds, if it is an int (`Z_LVAL` after checking
/// the type).
pub(crate) fn long_of(zv: &sys::zval) -> Option<i64> {
    if type_of(zv) != IS_LONG {
        return None;
    }
    // SAFETY: an IS_LONG zval's value is `lval`.
    Some(unsafe { zv.value.lval })
}

/// `ZVAL_DEREF` + `ZVAL_DEINDIRECT`: the zval a reference or indirect slot points to.
///
/// # Safety
/// `zv` points to a live zval.
#[inline]
pub unsafe fn deref(mut zv: *const sys::zval) -> *const sys::zval {
    // SAFETY: a reference's `val` and an indirect's target are live zvals while `zv` is.
    unsafe {
        if ztype(zv) == IS_INDIRECT {
            zv = (*zv).value.zv;
        }
        if ztype(zv) == IS_REFERENCE {
            zv = &(*(*zv).value.ref_).val;
        }
    }
    zv
}

/// `ZEND_NUM_ARGS()`: the number of arguments the running internal call received.
///
/// # Safety
/// `ed` is the frame of the running internal call.
#[inline]
pub unsafe fn num_args(ed: *const sys::zend_execute_data) -> u32 {
    // SAFETY: guaranteed by the caller; `This.u2.num_args` is set by the call opcode.
    unsafe { (*ed).This.u2.num_args }
}

/// `ZEND_CALL_ARG(ed, n)`: the `n`th (1-based) argument slot of an internal call, as the
/// fast parameter-parsing macros read it. Only valid for `n <= num_args(ed)`.
///
/// # Safety
/// `ed` is the frame of the running internal call and `1 <= n <= num_args(ed)`.
#[inline]
pub unsafe fn call_arg(ed: *mut sys::zend_execute_data, n: u32) -> *mut sys::zval {
    // ZEND_CALL_FRAME_SLOT: arguments follow the frame, rounded up to whole zvals.
    const FRAME_SLOT: usize =
        std::mem::size_of::<sys::zend_execute_data>().div_ceil(std::mem::size_of::<sys::zval>());
    // SAFETY: guaranteed by the caller; the VM lays the arguments out right after the frame.
    unsafe { ed.cast::<sys::zval>().add(FRAME_SLOT + n as usize - 1) }
}

/// Writes a zval that needs no reference counting (scalar, interned string, immutable
/// array): a plain copy of the 16 bytes, like `ZVAL_COPY_VALUE` on such a value.
///
/// # Safety
/// `dst` is writable; `src` is not refcounted.
#[inline]
pub unsafe fn copy_plain(dst: *mut sys::zval, src: &sys::zval) {
    // SAFETY: guaranteed by the caller; zval is plain old data.
    unsafe {
        (*dst).value = src.value;
        (*dst).u1.type_info = src.u1.type_info;
    }
}

/// A zval value for a scalar.
pub(crate) fn scalar(type_: u8, value: sys::zend_value) -> sys::zval {
    sys::zval {
        value,
        u1: sys::_zval_struct__bindgen_ty_1 {
            type_info: type_ as u32,
        },
        ..Default::default()
    }
}

/// A `null` zval.
pub fn null() -> sys::zval {
    scalar(IS_NULL, sys::zend_value { lval: 0 })
}

/// A bool zval.
pub(crate) fn bool_(b: bool) -> sys::zval {
    scalar(
        if b { IS_TRUE } else { IS_FALSE },
        sys::zend_value { lval: 0 },
    )
}

/// An int zval.
pub(crate) fn long(v: i64) -> sys::zval {
    scalar(IS_LONG, sys::zend_value { lval: v })
}

/// A float zval.
pub fn double(v: f64) -> sys::zval {
    scalar(IS_DOUBLE, sys::zend_value { dval: v })
}

/// `ZVAL_INTERNED_STR`: a non-refcounted string zval (the string must be interned-flagged).
pub(crate) fn interned_str(s: *mut sys::zend_string) -> sys::zval {
    scalar(IS_STRING, sys::zend_value { str_: s })
}

/// An immutable array zval (`ZVAL_ARR` without the refcounted flag, as OPcache does).
pub(crate) fn immutable_arr(ht: *mut sys::HashTable) -> sys::zval {
    scalar(IS_ARRAY, sys::zend_value { arr: ht })
}

/// The empty immutable array (`ZVAL_EMPTY_ARRAY`).
pub(crate) fn empty_arr() -> sys::zval {
    // zend_empty_array is a process-wide immutable constant; we only take its address.
    immutable_arr(std::ptr::addr_of!(sys::zend_empty_array) as *mut sys::HashTable)
}

/// `ZVAL_STR` of a fresh request string (refcount 1, owned by the zval).
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable.
pub(crate) unsafe fn set_request_string(dst: *mut sys::zval, bytes: &[u8]) {
    // SAFETY: zend_string_init copies `bytes` into request memory.
    unsafe {
        let s = ffi::ferrophp_uc_request_string(bytes.as_ptr().cast::<c_char>(), bytes.len());
        (*dst).value.str_ = s;
        (*dst).u1.type_info = IS_STRING_EX;
    }
}

/// `ZVAL_ARR` of a fresh request array of `size` elements.
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable.
pub unsafe fn set_new_array(dst: *mut sys::zval, size: u32) -> *mut sys::HashTable {
    // SAFETY: _zend_new_array allocates a refcount-1 array in request memory.
    unsafe {
        let ht = sys::_zend_new_array(size);
        (*dst).value.arr = ht;
        (*dst).u1.type_info = IS_ARRAY as u32 | REFCOUNTED | (1 << 9);
        ht
    }
}

/// `ZVAL_OBJ_COPY`.
///
/// # Safety
/// `obj` is a live object; `dst` writable.
pub(crate) unsafe fn set_object_copy(dst: *mut sys::zval, obj: *mut sys::zend_object) {
    // SAFETY: guaranteed by the caller; the new zval owns one more reference.
    unsafe {
        (*obj).gc.refcount += 1;
        (*dst).value.obj = obj;
        (*dst).u1.type_info = IS_OBJECT_EX;
    }
}

/// The bytes of a zend_string.
///
/// # Safety
/// `s` is a live string and outlives `'a`.
#[inline]
pub unsafe fn str_bytes<'a>(s: *const sys::zend_string) -> &'a [u8] {
    // SAFETY: a zend_string holds `len` bytes inline from `val`.
    unsafe { std::slice::from_raw_parts((*s).val.as_ptr().cast::<u8>(), (*s).len) }
}

/// `ZSTR_H` after `zend_string_hash_val` (computes and caches it when missing, which
/// writes only to this request's own string or an already-hashed interned one).
///
/// # Safety
/// `s` is a live string owned by this thread's request or interned.
#[inline]
pub(crate) unsafe fn str_hash(s: *mut sys::zend_string) -> u64 {
    // SAFETY: guaranteed by the caller.
    unsafe {
        if (*s).h == 0 {
            sys::zend_string_hash_func(s);
        }
        (*s).h
    }
}

/// PHP's hash of `bytes` (`zend_hash_func`, the function `ZSTR_H` caches), the hash the
/// index is keyed by.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    // SAFETY: zend_hash_func only reads `len` bytes from the pointer.
    unsafe { sys::zend_hash_func(bytes.as_ptr().cast::<c_char>(), bytes.len()) }
}

/// A key string's bytes and its hash (computed and cached in the string when missing).
///
/// # Safety
/// As for [`str_hash`]; `s` outlives `'a`.
pub(crate) unsafe fn str_key<'a>(s: *mut sys::zend_string) -> (&'a [u8], u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { (str_bytes(s), str_hash(s)) }
}

/// The bytes of a string zval (after references), or None for any other type.
///
/// # Safety
/// `zv` points to a live zval.
pub(crate) unsafe fn string_bytes(zv: *const sys::zval) -> Option<Vec<u8>> {
    // SAFETY: guaranteed by the caller; a string zval's value is a live string.
    unsafe {
        let zv = deref(zv);
        (ztype(zv) == IS_STRING).then(|| str_bytes((*zv).value.str_).to_vec())
    }
}

/// A cache key given as an array element: a string's bytes, or an int as its decimal
/// string (what the int was as an array key). None for any other type.
///
/// # Safety
/// `zv` points to a live zval.
pub(crate) unsafe fn key_bytes(zv: *const sys::zval) -> Option<Vec<u8>> {
    // SAFETY: guaranteed by the caller; the value read matches the type tag.
    unsafe {
        let zv = deref(zv);
        match ztype(zv) {
            IS_STRING => Some(str_bytes((*zv).value.str_).to_vec()),
            IS_LONG => Some((*zv).value.lval.to_string().into_bytes()),
            _ => None,
        }
    }
}

/// An array key as the bytes of a cache key (an int key as its decimal string).
///
/// # Safety
/// A string key is a live string.
pub(crate) unsafe fn hkey_bytes(key: &HKey) -> Vec<u8> {
    match key {
        HKey::Index(i) => i.to_string().into_bytes(),
        // SAFETY: guaranteed by the caller.
        HKey::Str(s) => unsafe { str_bytes(*s) }.to_vec(),
    }
}

/// Calls the global PHP function `name` with `value` as its one argument (the call
/// holds its own reference to it); the result goes to `ret`. False when the call failed.
///
/// # Safety
/// On a PHP thread inside a request; `value` live; `ret` receives an owned value.
pub(crate) unsafe fn call_with_value(
    name: &std::ffi::CStr,
    ret: *mut sys::zval,
    value: *const sys::zval,
) -> bool {
    // SAFETY: guaranteed by the caller; the argument's extra reference is released after
    // the call.
    unsafe {
        let mut arg = *value;
        ffi::ferrophp_uc_try_addref(&mut arg);
        let ok = call_function(name, ret, std::slice::from_mut(&mut arg));
        ffi::ferrophp_uc_zval_dtor(&mut arg);
        ok
    }
}

/// Inserts `val` into request array `ht` under a key given as bytes (numeric strings
/// become integer keys, as PHP's symtable does).
///
/// # Safety
/// `ht` a writable request array; `val`'s reference moves into it.
pub(crate) unsafe fn insert_bytes_key(ht: *mut sys::HashTable, key: &[u8], val: *mut sys::zval) {
    let mut idx: sys::zend_ulong = 0;
    // SAFETY: the shim only reads `len` bytes of the key.
    if unsafe { ffi::ferrophp_uc_numeric_key(key.as_ptr().cast(), key.len(), &mut idx) } {
        // SAFETY: guaranteed by the caller.
        unsafe { insert(ht, &HKey::Index(idx as i64), val) };
        return;
    }
    let mut k = sys::zval::default();
    // SAFETY: guaranteed by the caller (on a PHP thread in a request); the request key
    // string is released after PHP took its own reference to it.
    unsafe {
        set_request_string(&mut k, key);
        insert(ht, &HKey::Str(k.value.str_), val);
        ffi::ferrophp_uc_zval_dtor(&mut k);
    }
}

/// `add_assoc_long_ex`: `arr[k] = v`.
///
/// # Safety
/// `arr` is a writable request array zval.
pub(crate) unsafe fn add_assoc_long(arr: *mut sys::zval, k: &str, v: i64) {
    // SAFETY: guaranteed by the caller; PHP copies the key.
    unsafe { sys::add_assoc_long_ex(arr, k.as_ptr().cast(), k.len(), v as sys::zend_long) };
}

/// `add_assoc_double_ex`: `arr[k] = v`.
///
/// # Safety
/// `arr` is a writable request array zval.
pub(crate) unsafe fn add_assoc_double(arr: *mut sys::zval, k: &str, v: f64) {
    // SAFETY: guaranteed by the caller; PHP copies the key.
    unsafe { sys::add_assoc_double_ex(arr, k.as_ptr().cast(), k.len(), v) };
}

/// `add_assoc_bool_ex`: `arr[k] = v`.
///
/// # Safety
/// `arr` is a writable request array zval.
pub(crate) unsafe fn add_assoc_bool(arr: *mut sys::zval, k: &str, v: bool) {
    // SAFETY: guaranteed by the caller; PHP copies the key.
    unsafe { sys::add_assoc_bool_ex(arr, k.as_ptr().cast(), k.len(), v) };
}

/// `add_assoc_stringl_ex`: `arr[k] = v` (a fresh request string).
///
/// # Safety
/// `arr` is a writable request array zval.
pub(crate) unsafe fn add_assoc_string(arr: *mut sys::zval, k: &str, v: &[u8]) {
    // SAFETY: guaranteed by the caller; PHP copies the key and the value.
    unsafe {
        sys::add_assoc_stringl_ex(arr, k.as_ptr().cast(), k.len(), v.as_ptr().cast(), v.len())
    };
}

/// `add_assoc_zval_ex`: `arr[k] = *v`, taking over `v`'s reference.
///
/// # Safety
/// `arr` is a writable request array zval; `v`'s reference moves into it.
pub(crate) unsafe fn add_assoc_zval(arr: *mut sys::zval, k: &str, v: *mut sys::zval) {
    // SAFETY: guaranteed by the caller; PHP copies the key.
    unsafe { sys::add_assoc_zval_ex(arr, k.as_ptr().cast(), k.len(), v) };
}

/// Calls the global PHP function `name` with `args`; false when the call failed.
///
/// # Safety
/// On a PHP thread inside a request; `args` are live; `ret` receives an owned value.
pub(crate) unsafe fn call_function(
    name: &std::ffi::CStr,
    ret: *mut sys::zval,
    args: &mut [sys::zval],
) -> bool {
    let mut f = sys::zval::default();
    // SAFETY: guaranteed by the caller; the function name is a fresh request string,
    // released after the call.
    unsafe {
        set_request_string(&mut f, name.to_bytes());
        let ok = ffi::ferrophp_uc_call(&mut f, ret, args.len() as u32, args.as_mut_ptr());
        ffi::ferrophp_uc_zval_dtor(&mut f);
        ok
    }
}

/// `zend_parse_parameters(ZEND_NUM_ARGS(), spec, out...) == SUCCESS`: parses the running
/// internal call's arguments into the out-pointers, one per letter of `spec` as ZPP
/// wants them. On false PHP has thrown (TypeError, ArgumentCountError).
///
/// Expands to unsafe calls: use it inside an `unsafe` block whose SAFETY comment says
/// that `ed` is the running call's frame and that the out-pointers match `spec`.
macro_rules! parse_args {
    ($ed:expr, $spec:literal $(, $out:expr)* $(,)?) => {
        php_sys::zend_parse_parameters($crate::zv::num_args($ed), $spec.as_ptr() $(, $out)*)
            == php_sys::ZEND_RESULT_CODE_SUCCESS
    };
}
pub(crate) use parse_args;

/// One element of a hash table: its key (integer or string) and value slot.
pub enum HKey {
    /// An integer key.
    Index(i64),
    /// A string key (the table's own string).
    Str(*mut sys::zend_string),
}

/// Calls `f` on every element of `ht` in order (ZEND_HASH_FOREACH_KEY_VAL), packed or not.
///
/// # Safety
/// `ht` is a live array that `f` does not modify.
pub unsafe fn for_each<E>(
    ht: *const sys::HashTable,
    mut f: impl FnMut(HKey, *const sys::zval) -> Result<(), E>,
) -> Result<(), E> {
    // SAFETY: we only read the first nNumUsed slots of the data part, skipping UNDEF
    // holes, exactly as the ZEND_HASH_FOREACH macros do.
    unsafe {
        let used = (*ht).nNumUsed as usize;
        if ffi::ferrophp_uc_array_is_packed(ht) {
            let data = (*ht).__bindgen_anon_1.arPacked;
            for i in 0..used {
                let zv = data.add(i);
                if ztype(zv) != IS_UNDEF {
                    f(HKey::Index(i as i64), zv)?;
                }
            }
        } else {
            let data = (*ht).__bindgen_anon_1.arData;
            for i in 0..used {
                let b = data.add(i);
                if ztype(&(*b).val) == IS_UNDEF {
                    continue;
                }
                let key = if (*b).key.is_null() {
                    HKey::Index((*b).h as i64)
                } else {
                    HKey::Str((*b).key)
                };
                f(key, &(*b).val)?;
            }
        }
    }
    Ok(())
}

/// Number of elements (`zend_hash_num_elements`).
///
/// # Safety
/// `ht` is a live array.
pub(crate) unsafe fn count(ht: *const sys::HashTable) -> u32 {
    // SAFETY: guaranteed by the caller.
    unsafe { (*ht).nNumOfElements }
}

/// `ht[key] = *val`, taking over `val`'s reference (zend_hash_(index_)update).
///
/// # Safety
/// `ht` is a live, writable request array; `val` a zval whose reference moves into it.
pub(crate) unsafe fn insert(ht: *mut sys::HashTable, key: &HKey, val: *mut sys::zval) {
    // SAFETY: guaranteed by the caller. Interned keys are not addref'd by PHP; request
    // keys are.
    unsafe {
        match key {
            HKey::Index(i) => {
                sys::zend_hash_index_update(ht, *i as sys::zend_ulong, val);
            }
            HKey::Str(s) => {
                sys::zend_hash_update(ht, *s, val);
            }
        }
    }
}

/// The calling thread's `EG(...)`.
pub(crate) fn executor_globals() -> NonNull<sys::zend_executor_globals> {
    // SAFETY: reads this thread's TSRM slot; on a PHP thread the globals live until it
    // calls ts_free_thread, and off one the pointer is NULL (caught below).
    NonNull::new(unsafe { sys::ferrophp_executor_globals() }).expect("EG() on a non-PHP thread")
}

/// The calling thread's pending exception, if any.
pub(crate) fn has_exception() -> bool {
    // SAFETY: plain read of this PHP thread's executor globals.
    unsafe { !(*executor_globals().as_ptr()).exception.is_null() }
}
