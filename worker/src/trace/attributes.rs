//! Attribute values and names PHP passes: read, and checked (a bad one throws, whether
//! or not the request is sampled).

use crate::ffi as sys;
use ferrophp_cache::zv;
use ferrophp_trace::{AttrValue, Value};

const IS_NULL: u8 = 1;

/// An attribute value read from PHP: one value, or a list (values borrowed from PHP).
pub(super) enum PhpValue<'a> {
    One(Value<'a>),
    List(Vec<Value<'a>>),
    /// null: ignored (`['user' => $user?->id]` sets nothing when there is no user).
    Skip,
}

/// Reads a PHP value as an attribute value. Err(what is wrong).
///
/// # Safety
/// `v` is a live zval that outlives `'a`.
pub(super) unsafe fn attr_value<'a>(v: *const sys::zval) -> Result<PhpValue<'a>, &'static str> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let v = zv::deref(v);
        Ok(match zv::ztype(v) {
            zv::IS_STRING => PhpValue::One(Value::Str(zv::str_bytes((*v).value.str_))),
            zv::IS_LONG => PhpValue::One(Value::Int((*v).value.lval)),
            zv::IS_DOUBLE => PhpValue::One(Value::Double((*v).value.dval)),
            zv::IS_TRUE => PhpValue::One(Value::Bool(true)),
            zv::IS_FALSE => PhpValue::One(Value::Bool(false)),
            IS_NULL => PhpValue::Skip,
            zv::IS_ARRAY => {
                let mut list = Vec::new();
                let mut expect = 0usize;
                zv::for_each((*v).value.arr, |key, item| {
                    // A list: keys 0, 1, 2, ... in order.
                    if !matches!(key, zv::HKey::Index(i) if i as usize == expect) {
                        return Err("an array value must be a list (keys 0, 1, 2, ...)");
                    }
                    expect += 1;
                    match attr_value(item)? {
                        PhpValue::One(x) => {
                            if let Some(first) = list.first() {
                                if std::mem::discriminant(first) != std::mem::discriminant(&x) {
                                    return Err("an array value must hold one type");
                                }
                            }
                            list.push(x);
                            Ok(())
                        }
                        _ => Err("an array value must hold strings, ints, floats or bools"),
                    }
                })?;
                PhpValue::List(list)
            }
            _ => return Err("must be a string, int, float, bool or a list of one of those"),
        })
    }
}

/// Calls `f(key, value)` for each entry of an attributes array, after checking all of
/// them (so a bad entry sets nothing). Err(message for the exception).
///
/// # Safety
/// `ht` is null or a live array.
pub(super) unsafe fn read_attributes(
    ht: *const sys::HashTable,
    f: impl FnMut(&[u8], AttrValue<'_>),
) -> Result<(), String> {
    // SAFETY: guaranteed by the caller.
    unsafe { read_attributes_as(ht, true, f) }
}

/// As [`read_attributes`]; `check_first` false reads the array once, calling `f` for the
/// entries before a bad one (for a span that is thrown away on error).
///
/// # Safety
/// `ht` is null or a live array.
pub(super) unsafe fn read_attributes_as(
    ht: *const sys::HashTable,
    check_first: bool,
    mut f: impl FnMut(&[u8], AttrValue<'_>),
) -> Result<(), String> {
    if ht.is_null() {
        return Ok(());
    }
    // One entry: its key and value, or what is wrong with it.
    let read = |key: zv::HKey, v: *const sys::zval| -> Result<(&[u8], PhpValue<'_>), String> {
        let zv::HKey::Str(k) = key else {
            return Err("attribute keys must be strings (got an integer key)".to_owned());
        };
        // SAFETY: keys and values of a live array (the caller's), unchanged meanwhile.
        let (k, value) = unsafe { (zv::str_bytes(k), attr_value(v)) };
        if k.is_empty() {
            return Err("attribute keys must not be empty".to_owned());
        }
        let value = value.map_err(|why| {
            format!(
                "attribute {:?} {why}",
                String::from_utf8_lossy(k)
                    .chars()
                    .take(100)
                    .collect::<String>()
            )
        })?;
        Ok((k, value))
    };
    let mut apply = |k: &[u8], value: PhpValue<'_>| match value {
        PhpValue::One(x) => f(k, AttrValue::One(x)),
        PhpValue::List(list) => f(k, AttrValue::Array(&list)),
        PhpValue::Skip => {}
    };
    // SAFETY: guaranteed by the caller; no pass modifies the array.
    unsafe {
        if check_first {
            zv::for_each(ht, |key, v| read(key, v).map(|_| ()))?;
        }
        zv::for_each(ht, |key, v| {
            let (k, value) = read(key, v)?;
            apply(k, value);
            Ok(())
        })
    }
}

/// A span name from PHP; Err for an empty one.
pub(super) fn check_name(name: &[u8], what: &str) -> Result<(), String> {
    if name.is_empty() {
        Err(format!("{what} must not be empty"))
    } else {
        Ok(())
    }
}
