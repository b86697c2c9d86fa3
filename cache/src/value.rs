//! Stored values: how a PHP value becomes a [`Block`] (freeze, on store) and how a block
//! becomes a PHP value again (thaw, on fetch).
//!
//! A block owns persistent (malloc) PHP structures that any thread may read once the
//! block is published: strings flagged interned + persistent + permanent with their hash
//! computed, and arrays flagged `IS_ARRAY_IMMUTABLE` whose elements are all such values.
//! The engine never writes to either and never touches their refcounts; it copies an
//! immutable array (one level) on the first write. Fetching such a value is a 16-byte
//! zval copy, whatever its size.
//!
//! Values containing objects cannot be shared (object handles are per request): they are
//! stored as a recipe ([`GNode`]) rebuilt per fetch, whose object-free parts are still
//! immutable arrays shared zero-copy. Objects keep their identity and cycles inside one
//! value through ids. Enums are stored as class + case; classes with their own
//! serialization (`__serialize`, `__sleep`/`__wakeup`, `Serializable`) go through
//! `serialize()`/`unserialize()`; closures, resources and internal objects that cannot be
//! rebuilt are refused with the path of the offending part.
//!
//! This file holds the block's layout (what a stored value is made of) and what freeze
//! and thaw share; [`freeze`](mod@freeze) builds blocks, [`thaw`](mod@thaw) turns them
//! back into PHP values.

mod freeze;
mod thaw;

use std::sync::atomic::AtomicU64;

use php_sys as sys;

use super::arena::StringArena;
use super::ffi;
use super::zv;

pub(crate) use freeze::freeze;
pub(crate) use thaw::{shares_memory, thaw, thaw_copy};

/// Nesting deeper than this is refused (it is also how recursive references end).
const MAX_DEPTH: usize = 512;

/// A stored key of an array or object property table.
pub(crate) enum Key {
    Index(i64),
    Str(*mut sys::zend_string),
}

/// A value containing objects, rebuilt per fetch.
pub(crate) enum GNode {
    /// A value needing no rebuild (scalar, shared string, immutable array).
    Plain(sys::zval),
    Array(Vec<(Key, GNode)>),
    Object {
        id: u32,
        class: *mut sys::zend_string,
        props: Vec<(Key, GNode)>,
    },
    /// The object with this id, already built earlier in the same value.
    Ref(u32),
    Enum {
        class: *mut sys::zend_string,
        case: *mut sys::zend_string,
    },
    /// `serialize()` output of the whole value (it holds an object with its own
    /// serialization protocol, or a PHP reference whose aliasing must survive). With
    /// `wrapped`, the data is `serialize([&$value])` (the value itself was a reference
    /// that its own contents point back at) and the value is element 0.
    Serialized {
        id: u32,
        data: *mut sys::zend_string,
        wrapped: bool,
    },
}

pub(crate) enum Root {
    Plain(sys::zval),
    Graph(GNode),
}

/// An immutable stored value and the persistent memory it owns.
pub(crate) struct Block {
    pub(crate) root: Root,
    /// Owns the memory of every string the block points to; freed when it drops.
    _strings: StringArena,
    arrays: Vec<*mut sys::HashTable>,
    /// Approximate bytes owned (what the memory limit counts).
    pub(crate) bytes: usize,
    /// Thread slots (see epoch.rs) that handed this block out zero-copy. Each bit is set
    /// once per thread for the block's whole life, never per fetch.
    pub(crate) readers: AtomicU64,
    /// The object count (ids) a rebuild needs.
    objects: u32,
}

// SAFETY: after construction a block is never written (except `readers`, an atomic); the
// persistent PHP structures it points to are immutable and flagged so that the engine
// never writes to them or touches their refcounts, from any thread.
unsafe impl Send for Block {}
// SAFETY: shared references only read the block: its one mutable part, `readers`, is an
// atomic, and the PHP structures it points to are immutable and never refcounted by the
// engine, so any number of threads may read them at once.
unsafe impl Sync for Block {}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: the block exclusively owns these allocations (made by the freezer), and
        // dropping it means no thread can reach them any more (see epoch.rs).
        unsafe {
            for &ht in &self.arrays {
                ffi::ferrophp_uc_persistent_array_free(ht);
            }
        }
        // The strings go with `_strings`, dropped after this.
    }
}

/// Why a value cannot be stored.
pub(crate) enum FreezeError {
    /// Refused (closure, resource, ...): the message names the path.
    Refused(String),
    /// A PHP exception is pending (thrown by `__serialize`, `__sleep`, ...).
    Thrown,
}

/// What a store produced: a scalar inline in the index, or a block.
pub(crate) enum Frozen {
    Scalar(sys::zval),
    Block(Box<Block>),
}

/// [`zv::call_with_value`] for serialize()/unserialize() with a context of their own:
/// called from inside a user's `__serialize`/`unserialize` (a cache call in a
/// Serializable class), PHP would otherwise join the outer call's back-reference table,
/// and `R:`/`r:` numbers would point into the wrong value (APCu bug 76145).
///
/// # Safety
/// As for [`zv::call_with_value`].
unsafe fn call_isolated(
    name: &std::ffi::CStr,
    ret: *mut sys::zval,
    value: *const sys::zval,
) -> bool {
    // SAFETY: guaranteed by the caller; the lock is a per-thread counter restored below
    // (a bailout out of the call ends the request, which resets it).
    unsafe {
        ffi::ferrophp_uc_serialize_lock(1);
        let ok = zv::call_with_value(name, ret, value);
        ffi::ferrophp_uc_serialize_lock(-1);
        ok
    }
}
