//! Freeze: a request value becomes a [`Block`] (on store). Strings are copied into the
//! block's arena as permanent strings (short ones deduplicated), arrays of shareable
//! values become immutable persistent arrays, and anything holding objects becomes a
//! [`GNode`] recipe; a value that cannot be rebuilt is refused with its path.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::AtomicU64;

use php_sys as sys;

use super::{call_isolated, Block, FreezeError, Frozen, GNode, Key, Root, MAX_DEPTH};
use crate::arena::StringArena;
use crate::ffi;
use crate::zv::{self, HKey};

/// A hasher for keys that already are PHP string hashes: one multiply.
#[derive(Default)]
struct PhpHash(u64);

impl Hasher for PhpHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, h: u64) {
        // PHP's DJB hash leaves the top bits of short strings nearly constant, and the
        // map takes its control bytes from those: spread the low bits up.
        self.0 = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Copies `bytes` (whose PHP hash is `h`) into a new permanent PHP string in `arena`.
fn permanent_string(arena: &mut StringArena, bytes: &[u8], h: u64) -> *mut sys::zend_string {
    // _ZSTR_STRUCT_SIZE: header, bytes, NUL, rounded up to 8.
    let size = (std::mem::offset_of!(sys::zend_string, val) + bytes.len() + 1)
        .next_multiple_of(StringArena::ALIGN);
    let mem = arena.alloc(size);
    // SAFETY: `mem` is `size` writable bytes aligned to 8: the header, `bytes` and a NUL.
    unsafe {
        ffi::ferrophp_uc_permanent_string_at(
            mem.as_ptr().cast(),
            bytes.as_ptr().cast(),
            bytes.len(),
            h,
        )
    }
}

/// One step of the path to a value inside the stored value, for error messages. Names
/// point at the value's own keys (alive for the whole freeze), so that the path costs no
/// allocation unless a refusal formats it.
enum Seg {
    Index(i64),
    Key(*mut sys::zend_string),
    PropIndex(i64),
    /// A properties-table key, possibly mangled ("\0Class\0name"): shown without prefix.
    Prop(*mut sys::zend_string),
}

/// Builds a block from a request value.
struct Freezer {
    strings: StringArena,
    arrays: Vec<*mut sys::HashTable>,
    /// Bytes owned besides the string arena.
    bytes: usize,
    /// Short strings already copied into this block, by PHP hash (mostly repeated keys).
    dedup: HashMap<u64, *mut sys::zend_string, BuildHasherDefault<PhpHash>>,
    /// Object handle → id, for identity and cycles.
    seen: HashMap<u32, u32>,
    next_id: u32,
    path: Vec<Seg>,
}

/// Freezes `value` (a live request zval) for storage.
///
/// # Safety
/// On a PHP thread inside a request; `value` is live for the call.
pub(crate) unsafe fn freeze(value: *const sys::zval) -> Result<Frozen, FreezeError> {
    let outer = value;
    // SAFETY: guaranteed by the caller.
    let value = unsafe { zv::deref(value) };
    // SAFETY: `value` is live (guaranteed by the caller); a scalar is a plain 16-byte
    // value, copied as is.
    unsafe {
        if matches!(
            zv::ztype(value),
            zv::IS_NULL | zv::IS_FALSE | zv::IS_TRUE | zv::IS_LONG | zv::IS_DOUBLE
        ) {
            return Ok(Frozen::Scalar(*value));
        }
    }
    let mut f = Freezer::new();
    // SAFETY: on a PHP thread in a request and `value` live (guaranteed by the caller).
    let node = unsafe { f.node(value, 0) };
    let root = match node {
        Ok(GNode::Plain(z)) => Root::Plain(z),
        Ok(g) => Root::Graph(g),
        Err(Unshareable::WholeValue) => {
            // An object with its own serialization: its serialize() output may point back
            // at objects elsewhere in the value (`r:N;`), which only one serialize() of
            // the whole value keeps, as APCu does. Start again with just that.
            drop(f.finish(Root::Plain(zv::null())));
            // serialize() would quietly write a resource as `i:0;`: refuse it as the
            // recipe walk does (APCu's native copy warns for it too).
            // SAFETY: `value` is live (guaranteed by the caller).
            if unsafe { contains_resource(value, 0, &mut HashSet::new()) } {
                return Err(FreezeError::Refused(
                    "cannot store a resource (in a value stored through serialize())".into(),
                ));
            }
            let mut f = Freezer::new();
            // SAFETY: on a PHP thread in a request; `outer` and the value it refers to
            // are live (guaranteed by the caller), and `outer` is a reference when
            // `shared_reference` says so.
            let node = unsafe {
                if shared_reference(outer) {
                    // `$v = [&$v]; apcu_store(['k' => &$v])`: the value's contents point
                    // back at the value itself, which only a wrapper serializes.
                    f.serialized_wrapped(outer)
                } else {
                    f.serialized(value)
                }
            };
            return match node {
                Ok(g) => Ok(Frozen::Block(f.finish(Root::Graph(g)))),
                Err(e) => {
                    drop(f.finish(Root::Plain(zv::null())));
                    Err(e)
                }
            };
        }
        Err(Unshareable::Error(e)) => {
            // Nothing was published: free what was built (Block's Drop does it).
            drop(f.finish(Root::Plain(zv::null())));
            return Err(e);
        }
    };
    Ok(Frozen::Block(f.finish(root)))
}

/// Why the recipe walk stopped: the value cannot be stored, or it must be stored whole
/// through `serialize()`.
enum Unshareable {
    Error(FreezeError),
    WholeValue,
}

impl From<FreezeError> for Unshareable {
    fn from(e: FreezeError) -> Unshareable {
        Unshareable::Error(e)
    }
}

impl Freezer {
    fn new() -> Freezer {
        Freezer {
            strings: StringArena::default(),
            arrays: Vec::new(),
            bytes: std::mem::size_of::<Block>(),
            dedup: HashMap::default(),
            seen: HashMap::new(),
            next_id: 0,
            path: Vec::new(),
        }
    }

    fn finish(self, root: Root) -> Box<Block> {
        Box::new(Block {
            root,
            bytes: self.bytes + self.strings.allocated(),
            _strings: self.strings,
            arrays: self.arrays,
            readers: AtomicU64::new(0),
            objects: self.next_id,
        })
    }

    fn path_string(&self) -> String {
        let mut out = String::from("$value");
        for seg in &self.path {
            match seg {
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Key(k) => {
                    // SAFETY: path keys belong to the value being frozen (see `Seg`).
                    let k = unsafe { zv::str_bytes(*k) };
                    let _ = write!(out, "['{}']", String::from_utf8_lossy(k));
                }
                Seg::PropIndex(i) => {
                    let _ = write!(out, "->{i}");
                }
                Seg::Prop(p) => {
                    // SAFETY: path keys belong to the value being frozen (see `Seg`).
                    let p = unsafe { zv::str_bytes(*p) };
                    let shown = p.rsplit(|&b| b == 0).next().unwrap_or(p);
                    let _ = write!(out, "->{}", String::from_utf8_lossy(shown));
                }
            }
        }
        out
    }

    fn refuse(&self, what: &str) -> FreezeError {
        FreezeError::Refused(format!("cannot store {what} at {}", self.path_string()))
    }

    /// A permanent copy of `bytes` owned by this block.
    fn string(&mut self, bytes: &[u8]) -> *mut sys::zend_string {
        self.string_hashed(bytes, zv::hash_bytes(bytes))
    }

    /// A permanent copy of request string `s` (reusing its hash when it has one).
    ///
    /// # Safety
    /// `s` is a live string of the value being frozen.
    unsafe fn zend_string(&mut self, s: *mut sys::zend_string) -> *mut sys::zend_string {
        // SAFETY: guaranteed by the caller; computing the hash writes only to a string of
        // this request (shared strings always carry theirs).
        unsafe { self.string_hashed(zv::str_bytes(s), zv::str_hash(s)) }
    }

    /// Short strings are deduplicated within the block (repeated keys of a list of
    /// records, property names); the map is keyed by PHP's own hash of the bytes.
    fn string_hashed(&mut self, bytes: &[u8], h: u64) -> *mut sys::zend_string {
        let short = bytes.len() <= 64;
        if short {
            if let Some(&s) = self.dedup.get(&h) {
                // SAFETY: strings in `dedup` were made by this freezer and live in its arena.
                if unsafe { zv::str_bytes(s) } == bytes {
                    return s;
                }
            }
        }
        let s = permanent_string(&mut self.strings, bytes, h);
        if short {
            self.dedup.entry(h).or_insert(s);
        }
        s
    }

    /// # Safety
    /// `zv` is a live request zval.
    unsafe fn node(&mut self, zv: *const sys::zval, depth: usize) -> Result<GNode, Unshareable> {
        if depth > MAX_DEPTH {
            return Err(self
                .refuse("a value nested too deep (or a recursive reference)")
                .into());
        }
        // SAFETY: guaranteed by the caller.
        if unsafe { shared_reference(zv) } {
            // A PHP reference another slot also holds (`[&$x, &$x]`, `$a[] = &$a`): a
            // recipe would copy each side and lose the aliasing. serialize() of the whole
            // value keeps it (R:N), as APCu keeps it.
            return Err(Unshareable::WholeValue);
        }
        // SAFETY: guaranteed by the caller.
        let zv = unsafe { zv::deref(zv) };
        // SAFETY: `zv` is live (guaranteed by the caller), and each value read below
        // matches the type tag checked first.
        unsafe {
            match zv::ztype(zv) {
                zv::IS_UNDEF
                | zv::IS_NULL
                | zv::IS_FALSE
                | zv::IS_TRUE
                | zv::IS_LONG
                | zv::IS_DOUBLE => Ok(GNode::Plain(*zv)),
                zv::IS_STRING => {
                    let s = self.zend_string((*zv).value.str_);
                    Ok(GNode::Plain(zv::interned_str(s)))
                }
                zv::IS_ARRAY => self.array((*zv).value.arr, depth),
                zv::IS_OBJECT => self.object((*zv).value.obj, depth),
                zv::IS_RESOURCE => Err(self.refuse("a resource").into()),
                _ => Err(self.refuse("a value of this type").into()),
            }
        }
    }

    /// # Safety
    /// `ht` is a live request (or immutable) array.
    unsafe fn array(
        &mut self,
        ht: *mut sys::HashTable,
        depth: usize,
    ) -> Result<GNode, Unshareable> {
        // SAFETY: guaranteed by the caller.
        let n = unsafe { zv::count(ht) };
        if n == 0 {
            return Ok(GNode::Plain(zv::empty_arr()));
        }
        // Room for a key and a value per element of a big array without rehashing on the
        // way (small ones would pay for a table they mostly do not need).
        if n >= 64 {
            self.dedup.reserve(2 * n as usize);
        }
        // SAFETY: guaranteed by the caller.
        if let Some(is_list) = unsafe { flat_scalars(ht) } {
            // The common case (lists and maps of scalars and strings): straight into the
            // immutable array, with no recipe built first (nothing in it can be refused).
            // SAFETY: `ht` is live (guaranteed by the caller) and only plain values are
            // pushed (flat_scalars checked every element); element zvals and their
            // strings are live while `ht` is.
            let arr = unsafe {
                self.immutable_array(n, is_list, |f, push| {
                    let _ = zv::for_each(ht, |key, val| {
                        let val = zv::deref(val);
                        let z = if zv::ztype(val) == zv::IS_STRING {
                            zv::interned_str(f.zend_string((*val).value.str_))
                        } else {
                            *val
                        };
                        let key = match key {
                            HKey::Index(i) => Key::Index(i),
                            HKey::Str(s) => Key::Str(f.zend_string(s)),
                        };
                        push(&key, z);
                        Ok::<(), ()>(())
                    });
                })
            };
            return Ok(GNode::Plain(zv::immutable_arr(arr)));
        }
        let mut items: Vec<(Key, GNode)> = Vec::with_capacity(n as usize);
        let mut plain = true;
        let mut is_list = true;
        // SAFETY: we only read `ht`; element zvals are live while it is.
        unsafe {
            zv::for_each(ht, |key, val| {
                let key = match key {
                    HKey::Index(i) => {
                        is_list &= i == items.len() as i64;
                        self.path.push(Seg::Index(i));
                        Key::Index(i)
                    }
                    HKey::Str(s) => {
                        is_list = false;
                        self.path.push(Seg::Key(s));
                        Key::Str(self.zend_string(s))
                    }
                };
                let node = self.node(val, depth + 1)?;
                self.path.pop();
                plain &= matches!(node, GNode::Plain(_));
                items.push((key, node));
                Ok::<(), Unshareable>(())
            })?;
        }
        if !plain {
            return Ok(GNode::Array(items));
        }
        // Every element is shareable: build the immutable array.
        // SAFETY: every item is a plain zval (checked above).
        let arr = unsafe {
            self.immutable_array(n, is_list, |_, push| {
                for (key, node) in &items {
                    let GNode::Plain(z) = node else {
                        unreachable!()
                    };
                    push(key, *z);
                }
            })
        };
        Ok(GNode::Plain(zv::immutable_arr(arr)))
    }

    /// A persistent immutable array of `n` elements that `fill` adds through `push`
    /// (plain zvals: scalars, permanent strings, immutable arrays; permanent keys), owned
    /// by the block.
    ///
    /// # Safety
    /// Everything pushed is plain, and `fill` pushes `n` distinct keys (in order 0..n when
    /// `is_list`).
    unsafe fn immutable_array(
        &mut self,
        n: u32,
        is_list: bool,
        fill: impl FnOnce(&mut Freezer, &mut dyn FnMut(&Key, sys::zval)),
    ) -> *mut sys::HashTable {
        // SAFETY: the shim allocates a persistent hash table of the right kind; we insert
        // plain zvals (no refcount) under permanent keys, then flag it immutable.
        unsafe {
            let arr = ffi::ferrophp_uc_persistent_array(n, is_list);
            fill(self, &mut |key, mut z| match key {
                Key::Index(i) => {
                    sys::zend_hash_index_add_new(arr, *i as sys::zend_ulong, &mut z);
                }
                Key::Str(s) => {
                    sys::zend_hash_add_new(arr, *s, &mut z);
                }
            });
            ffi::ferrophp_uc_array_make_immutable(arr);
            self.bytes += 56 + (*arr).nTableSize as usize * if is_list { 16 } else { 32 + 8 };
            self.arrays.push(arr);
            arr
        }
    }

    /// # Safety
    /// `obj` is a live object of this request.
    unsafe fn object(
        &mut self,
        obj: *mut sys::zend_object,
        depth: usize,
    ) -> Result<GNode, Unshareable> {
        // SAFETY: guaranteed by the caller, for every read below.
        unsafe {
            let handle = (*obj).handle;
            if let Some(&id) = self.seen.get(&handle) {
                return Ok(GNode::Ref(id));
            }
            let ce = (*obj).ce;
            let flags = (*ce).ce_flags;
            let class_name = zv::str_bytes((*ce).name).to_vec();
            if flags & zv::ZEND_ACC_ENUM != 0 {
                let case = zv::str_bytes(ffi::ferrophp_uc_enum_case_name(obj)).to_vec();
                return Ok(GNode::Enum {
                    class: self.string(&class_name),
                    case: self.string(&case),
                });
            }
            let name = String::from_utf8_lossy(&class_name).into_owned();
            if flags & zv::ZEND_ACC_NOT_SERIALIZABLE != 0 {
                let what = if name == "Closure" {
                    "a Closure".to_owned()
                } else {
                    format!("an object of class {name}")
                };
                return Err(self.refuse(&what).into());
            }
            let id = self.next_id;
            self.next_id += 1;
            self.seen.insert(handle, id);
            if has_custom_serialization(ce) {
                return Err(Unshareable::WholeValue);
            }
            if !rebuildable(ce) {
                return Err(self
                    .refuse(&format!(
                        "an object of internal class {name} (it cannot be rebuilt)"
                    ))
                    .into());
            }
            let props_ht = ffi::ferrophp_uc_object_properties(obj);
            let mut props = Vec::new();
            if !props_ht.is_null() {
                zv::for_each(props_ht, |key, val| {
                    let val = zv::deref(val);
                    if zv::ztype(val) == zv::IS_UNDEF {
                        return Ok::<(), Unshareable>(()); // uninitialised typed property
                    }
                    let key = match key {
                        HKey::Index(i) => {
                            self.path.push(Seg::PropIndex(i));
                            Key::Index(i)
                        }
                        HKey::Str(s) => {
                            self.path.push(Seg::Prop(s));
                            Key::Str(self.zend_string(s))
                        }
                    };
                    let node = self.node(val, depth + 1)?;
                    self.path.pop();
                    props.push((key, node));
                    Ok(())
                })?;
            }
            self.bytes += 32;
            Ok(GNode::Object {
                id,
                class: self.string(&class_name),
                props,
            })
        }
    }

    /// The whole value as `serialize()` output (object id 0 when it is an object).
    ///
    /// # Safety
    /// On a PHP thread inside a request; `value` is a live request zval.
    unsafe fn serialized(&mut self, value: *const sys::zval) -> Result<GNode, FreezeError> {
        let mut out = sys::zval::default();
        // SAFETY: guaranteed by the caller; the call holds its own reference to the value;
        // PHP's serialize() runs each class's protocol; we release what we got back.
        unsafe {
            let ok = call_isolated(c"serialize", &mut out, value);
            if !ok || zv::has_exception() || zv::ztype(&out) != zv::IS_STRING {
                ffi::ferrophp_uc_zval_dtor(&mut out);
                if zv::has_exception() {
                    return Err(FreezeError::Thrown);
                }
                return Err(self.refuse("a value whose serialization failed"));
            }
            let data = self.string(zv::str_bytes(out.value.str_));
            ffi::ferrophp_uc_zval_dtor(&mut out);
            self.next_id = 1;
            Ok(GNode::Serialized {
                id: 0,
                data,
                wrapped: false,
            })
        }
    }

    /// `serialize([&$value])` for a value that is a reference its own contents hold.
    ///
    /// # Safety
    /// As for [`Freezer::serialized`]; `reference` is an IS_REFERENCE zval.
    unsafe fn serialized_wrapped(
        &mut self,
        reference: *const sys::zval,
    ) -> Result<GNode, FreezeError> {
        // SAFETY: the wrapper array holds its own reference count on the reference and
        // is released (with that count) before returning.
        unsafe {
            let mut wrapper = sys::zval::default();
            let ht = zv::set_new_array(&mut wrapper, 1);
            let mut elem = *reference;
            ffi::ferrophp_uc_try_addref(&mut elem);
            zv::insert(ht, &HKey::Index(0), &mut elem);
            let r = self.serialized(&wrapper);
            ffi::ferrophp_uc_zval_dtor(&mut wrapper);
            match r? {
                GNode::Serialized { id, data, .. } => Ok(GNode::Serialized {
                    id,
                    data,
                    wrapped: true,
                }),
                other => Ok(other),
            }
        }
    }
}

/// Whether every element of `ht` is a scalar or a string (after references), and if so
/// whether its keys are exactly 0..n in order (a list). None when something needs the
/// general path (nested arrays, objects, resources, ...).
///
/// # Safety
/// `ht` is a live array.
unsafe fn flat_scalars(ht: *mut sys::HashTable) -> Option<bool> {
    let mut is_list = true;
    let mut next = 0i64;
    // SAFETY: guaranteed by the caller; we only read.
    let all = unsafe {
        zv::for_each(ht, |key, val| {
            match key {
                HKey::Index(i) => is_list &= i == next,
                HKey::Str(_) => is_list = false,
            }
            next += 1;
            if !shared_reference(val)
                && matches!(
                    zv::ztype(zv::deref(val)),
                    zv::IS_NULL
                        | zv::IS_FALSE
                        | zv::IS_TRUE
                        | zv::IS_LONG
                        | zv::IS_DOUBLE
                        | zv::IS_STRING
                )
            {
                Ok(())
            } else {
                Err(())
            }
        })
    };
    all.ok().map(|()| is_list)
}

/// Whether a resource is reachable from `zv` through arrays and references (objects
/// serialize themselves and are not entered). `seen` stops cycles through references.
///
/// # Safety
/// `zv` is a live zval.
unsafe fn contains_resource(
    zv: *const sys::zval,
    depth: usize,
    seen: &mut HashSet<*const sys::HashTable>,
) -> bool {
    // SAFETY: guaranteed by the caller; we only read.
    unsafe {
        let zv = zv::deref(zv);
        match zv::ztype(zv) {
            zv::IS_RESOURCE => true,
            zv::IS_ARRAY if depth <= MAX_DEPTH => {
                let ht = (*zv).value.arr;
                if !seen.insert(ht) {
                    return false;
                }
                zv::for_each(ht, |_, v| {
                    if contains_resource(v, depth + 1, seen) {
                        Err(())
                    } else {
                        Ok(())
                    }
                })
                .is_err()
            }
            _ => false,
        }
    }
}

/// Whether `zv` is a PHP reference (`&`) held by more than this one slot, i.e. one whose
/// aliasing a copy would lose.
///
/// # Safety
/// `zv` is a live zval.
unsafe fn shared_reference(zv: *const sys::zval) -> bool {
    // SAFETY: guaranteed by the caller; an IS_REFERENCE zval points at a live
    // zend_reference whose header holds its refcount.
    unsafe { zv::ztype(zv) == zv::IS_REFERENCE && (*(*zv).value.ref_).gc.refcount > 1 }
}

/// A class with its own (un)serialization protocol.
///
/// # Safety
/// `ce` is a live class entry.
unsafe fn has_custom_serialization(ce: *mut sys::zend_class_entry) -> bool {
    // SAFETY: guaranteed by the caller; plain reads of the class entry.
    unsafe {
        !(*ce).__serialize.is_null()
            || !(*ce).__unserialize.is_null()
            || (*ce).serialize.is_some()
            || (*ce).unserialize.is_some()
            || ffi::ferrophp_uc_class_has_method(ce, c"__sleep".as_ptr(), 7)
            || ffi::ferrophp_uc_class_has_method(ce, c"__wakeup".as_ptr(), 8)
    }
}

/// User classes (and stdClass) whose ancestors are all user classes: rebuilt from
/// their property table by `object_init_ex` + `object_properties_load`.
///
/// # Safety
/// `ce` is a live class entry.
unsafe fn rebuildable(mut ce: *mut sys::zend_class_entry) -> bool {
    // SAFETY: guaranteed by the caller; parents of a live class are live.
    unsafe {
        let std_class = std::ptr::addr_of!(sys::zend_standard_class_def).read();
        while !ce.is_null() {
            if (*ce).type_ as u8 == zv::ZEND_INTERNAL_CLASS && ce != std_class {
                return false;
            }
            ce = (*ce).__bindgen_anon_1.parent;
        }
    }
    true
}
