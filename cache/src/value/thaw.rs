//! Thaw: a [`Block`] becomes a PHP value again (on fetch): a 16-byte copy of a shared
//! string or immutable array, a rebuild of a [`GNode`] recipe (objects, enums,
//! serialized values), or, when the caller asks, a deep copy into request memory that
//! points nowhere into the block.

use php_sys as sys;

use super::{call_isolated, Block, GNode, Key, Root};
use crate::errors::{self, Exception};
use crate::ffi;
use crate::zv::{self, HKey};

/// Whether fetching this block hands out pointers into it (anything but a scalar copy).
pub(crate) fn shares_memory(block: &Block) -> bool {
    match &block.root {
        Root::Plain(z) => matches!(zv::type_of(z), zv::IS_STRING | zv::IS_ARRAY),
        Root::Graph(_) => true,
    }
}

/// Writes the stored value into `dst`: zero-copy for strings and arrays, a rebuild for
/// values with objects. False when a PHP exception was thrown (class not found, ...).
///
/// # Safety
/// On a PHP thread inside a request; `dst` writable; the block stays alive for as long
/// as the request can reach the value (see epoch.rs).
pub(crate) unsafe fn thaw(block: &Block, dst: *mut sys::zval) -> bool {
    match &block.root {
        Root::Plain(z) => {
            // SAFETY: a plain root needs no refcounting.
            unsafe { zv::copy_plain(dst, z) };
            true
        }
        Root::Graph(g) => {
            let mut cx = Rebuild::new(block.objects);
            // SAFETY: guaranteed by the caller.
            unsafe { build(g, dst, &mut cx, false) }
        }
    }
}

/// One rebuild: the objects built so far (by id) and the classes looked up so far (a value
/// with 100 objects of one class looks the class and its property slots up once).
struct Rebuild {
    objects: Vec<*mut sys::zend_object>,
    classes: Vec<ClassMemo>,
}

struct ClassMemo {
    name: *mut sys::zend_string,
    ce: *mut sys::zend_class_entry,
    /// Stored property key → slot offset in the object (-1: not a declared slot). Objects
    /// of one class list their properties in the same order, so position `i` is tried
    /// first.
    slots: Vec<(*mut sys::zend_string, isize)>,
}

impl Rebuild {
    fn new(objects: u32) -> Rebuild {
        Rebuild {
            objects: vec![std::ptr::null_mut(); objects as usize],
            classes: Vec::new(),
        }
    }

    /// `zend_lookup_class` (may autoload), memoised per stored class name; returns the
    /// memo's index.
    ///
    /// # Safety
    /// On a PHP thread inside a request; `name` is a live string.
    unsafe fn class(&mut self, name: *mut sys::zend_string) -> Option<usize> {
        if let Some(i) = self.classes.iter().position(|c| c.name == name) {
            return Some(i);
        }
        // SAFETY: guaranteed by the caller.
        let ce = unsafe { sys::zend_lookup_class(name) };
        if ce.is_null() {
            return None;
        }
        self.classes.push(ClassMemo {
            name,
            ce,
            slots: Vec::new(),
        });
        Some(self.classes.len() - 1)
    }

    /// The slot offset of the `i`th stored property `key` of class memo `class`, or None
    /// when it is not a declared instance property.
    ///
    /// # Safety
    /// On a PHP thread inside a request; `key` is a live string.
    unsafe fn slot(&mut self, class: usize, i: usize, key: *mut sys::zend_string) -> Option<usize> {
        let memo = &mut self.classes[class];
        let offset = match memo.slots.get(i) {
            Some(&(k, off)) if k == key => off,
            _ => match memo.slots.iter().find(|(k, _)| *k == key) {
                Some(&(_, off)) => off,
                None => {
                    // SAFETY: guaranteed by the caller; `ce` is a live class.
                    let off = unsafe { ffi::ferrophp_uc_property_offset(memo.ce, key) };
                    memo.slots.push((key, off));
                    off
                }
            },
        };
        usize::try_from(offset).ok()
    }
}

/// Fills a freshly created object's declared property slots directly (what
/// object_properties_load does, without the temporary array and the per-property
/// lookups). False, with nothing written, when some property is not a declared slot or
/// the object already has a properties table: the caller then takes the general path.
///
/// # Safety
/// As for [`build`]; `obj` was just created by `object_init_ex` with class memo `class`.
unsafe fn fill_declared(
    obj: *mut sys::zend_object,
    class: usize,
    props: &[(Key, GNode)],
    cx: &mut Rebuild,
    copy: bool,
) -> Option<bool> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        if !(*obj).properties.is_null() {
            return None;
        }
        let mut offsets = [0usize; 16];
        if props.len() > offsets.len() {
            return None;
        }
        for (i, (key, _)) in props.iter().enumerate() {
            let Key::Str(name) = key else { return None };
            offsets[i] = cx.slot(class, i, *name)?;
        }
        for ((_, item), &offset) in props.iter().zip(&offsets) {
            let mut v = sys::zval::default();
            if !build(item, &mut v, cx, copy) {
                return Some(false); // the caller releases the object, slots all valid
            }
            // SAFETY: `offset` is a declared slot of this object's class (OBJ_PROP); it
            // holds the default value object_init_ex copied in, released here.
            let slot = obj.cast::<u8>().add(offset).cast::<sys::zval>();
            ffi::ferrophp_uc_zval_dtor(slot);
            *slot = v;
        }
        Some(true)
    }
}

/// Builds `node` into `dst`; with `copy`, shared parts are deep-copied into the request.
///
/// # Safety
/// As for [`thaw`].
unsafe fn build(node: &GNode, dst: *mut sys::zval, cx: &mut Rebuild, copy: bool) -> bool {
    // SAFETY: guaranteed by the caller for every FFI call below; all zvals written are
    // owned by `dst` (or released on failure).
    unsafe {
        match node {
            GNode::Plain(z) if copy => {
                deep_copy(z, dst);
                true
            }
            GNode::Plain(z) => {
                zv::copy_plain(dst, z);
                true
            }
            GNode::Array(items) => {
                let ht = zv::set_new_array(dst, items.len() as u32);
                for (key, item) in items {
                    let mut v = sys::zval::default();
                    if !build(item, &mut v, cx, copy) {
                        return false; // dst (owning ht) is released by the caller
                    }
                    insert_key(ht, key, &mut v, copy);
                }
                true
            }
            GNode::Object { id, class, props } => {
                *dst = zv::null();
                let Some(memo) = cx.class(*class) else {
                    if !zv::has_exception() {
                        errors::throw(
                            Exception::Cache,
                            &format!(
                                "cannot rebuild a cached object: class {} not found",
                                String::from_utf8_lossy(zv::str_bytes(*class))
                            ),
                        );
                    }
                    return false;
                };
                let ce = cx.classes[memo].ce;
                if sys::object_init_ex(dst, ce) != sys::ZEND_RESULT_CODE_SUCCESS {
                    *dst = zv::null();
                    return false;
                }
                let obj = (*dst).value.obj;
                cx.objects[*id as usize] = obj;
                if let Some(ok) = fill_declared(obj, memo, props, cx, copy) {
                    return ok && !zv::has_exception();
                }
                let mut tmp = sys::zval::default();
                let ht = zv::set_new_array(&mut tmp, props.len() as u32);
                for (key, item) in props {
                    let mut v = sys::zval::default();
                    if !build(item, &mut v, cx, copy) {
                        ffi::ferrophp_uc_zval_dtor(&mut tmp);
                        return false;
                    }
                    insert_key(ht, key, &mut v, copy);
                }
                // Protected properties are only visible from the class's own scope.
                let eg = zv::executor_globals().as_ptr();
                let prev_scope = (*eg).fake_scope;
                (*eg).fake_scope = ce;
                sys::object_properties_load(obj, ht);
                (*eg).fake_scope = prev_scope;
                ffi::ferrophp_uc_zval_dtor(&mut tmp);
                !zv::has_exception()
            }
            GNode::Ref(id) => {
                let obj = cx.objects[*id as usize];
                if obj.is_null() {
                    *dst = zv::null();
                } else {
                    zv::set_object_copy(dst, obj);
                }
                true
            }
            GNode::Enum { class, case } => {
                *dst = zv::null();
                let Some(memo) = cx.class(*class) else {
                    if !zv::has_exception() {
                        errors::throw(
                            Exception::Cache,
                            &format!(
                                "cannot rebuild a cached enum: {} not found",
                                String::from_utf8_lossy(zv::str_bytes(*class))
                            ),
                        );
                    }
                    return false;
                };
                let ce = cx.classes[memo].ce;
                let obj = sys::zend_enum_get_case(ce, *case);
                if obj.is_null() {
                    return false;
                }
                zv::set_object_copy(dst, obj);
                true
            }
            GNode::Serialized { id, data, wrapped } => {
                *dst = zv::null();
                if !call_isolated(c"unserialize", dst, &zv::interned_str(*data))
                    || zv::has_exception()
                {
                    return false;
                }
                if *wrapped {
                    // The value is element 0 of the wrapper, taken out of its reference.
                    let mut wrapper = *dst;
                    *dst = zv::null();
                    if zv::ztype(&wrapper) == zv::IS_ARRAY {
                        let mut first = None;
                        let _ = zv::for_each::<()>(wrapper.value.arr, |_, v| {
                            first.get_or_insert(*zv::deref(v));
                            Ok(())
                        });
                        if let Some(v) = first {
                            *dst = v;
                            ffi::ferrophp_uc_try_addref(dst);
                        }
                    }
                    ffi::ferrophp_uc_zval_dtor(&mut wrapper);
                }
                if zv::ztype(dst) == zv::IS_OBJECT {
                    cx.objects[*id as usize] = (*dst).value.obj;
                }
                true
            }
        }
    }
}

/// `ht[key] = v`; with `copy`, a string key is first copied into request memory.
///
/// # Safety
/// `ht` is a writable request array; `v`'s reference moves into it.
unsafe fn insert_key(ht: *mut sys::HashTable, key: &Key, v: *mut sys::zval, copy: bool) {
    // SAFETY: guaranteed by the caller; the request key copy is released after PHP took
    // its own reference.
    unsafe {
        match key {
            Key::Index(i) => zv::insert(ht, &HKey::Index(*i), v),
            Key::Str(s) if copy => {
                let mut k = sys::zval::default();
                zv::set_request_string(&mut k, zv::str_bytes(*s));
                zv::insert(ht, &HKey::Str(k.value.str_), v);
                ffi::ferrophp_uc_zval_dtor(&mut k);
            }
            Key::Str(s) => zv::insert(ht, &HKey::Str(*s), v),
        }
    }
}

/// Writes a deep copy of the stored value into request memory: nothing in the result
/// points into the block (the copy-on-read path and the fallback when retired memory is
/// over its cap).
///
/// # Safety
/// As for [`thaw`], but the block need only stay alive during the call.
pub(crate) unsafe fn thaw_copy(block: &Block, dst: *mut sys::zval) -> bool {
    // SAFETY: guaranteed by the caller.
    unsafe {
        match &block.root {
            Root::Plain(z) => {
                deep_copy(z, dst);
                true
            }
            Root::Graph(g) => {
                let mut cx = Rebuild::new(block.objects);
                build(g, dst, &mut cx, true)
            }
        }
    }
}

/// Copies a shareable value (scalar, cache string, immutable array) into request memory.
///
/// # Safety
/// On a PHP thread inside a request; `src` live, `dst` writable.
unsafe fn deep_copy(src: *const sys::zval, dst: *mut sys::zval) {
    // SAFETY: guaranteed by the caller, recursively.
    unsafe {
        match zv::ztype(src) {
            zv::IS_STRING => zv::set_request_string(dst, zv::str_bytes((*src).value.str_)),
            zv::IS_ARRAY => {
                let src_ht = (*src).value.arr;
                let ht = zv::set_new_array(dst, zv::count(src_ht));
                let _ = zv::for_each::<()>(src_ht, |key, val| {
                    let mut v = sys::zval::default();
                    deep_copy(val, &mut v);
                    match key {
                        HKey::Index(i) => zv::insert(ht, &HKey::Index(i), &mut v),
                        HKey::Str(s) => {
                            let mut k = sys::zval::default();
                            zv::set_request_string(&mut k, zv::str_bytes(s));
                            zv::insert(ht, &HKey::Str(k.value.str_), &mut v);
                            ffi::ferrophp_uc_zval_dtor(&mut k);
                        }
                    }
                    Ok(())
                });
            }
            _ => {
                *dst = *src;
                ffi::ferrophp_uc_try_addref(dst);
            }
        }
    }
}
