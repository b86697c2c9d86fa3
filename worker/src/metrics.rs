//! The static methods of `Ferrophp\Metrics` (declared in worker/stubs/Metrics.stub.php,
//! whose generated arginfo names each body `zim_Ferrophp_Metrics_<method>`; the class is
//! registered by c/metrics.c): PHP's door into the process-wide metrics registry
//! (`ferrophp_metrics::global()`), which the admin `/metrics` endpoint and push mode
//! read.
//!
//! Recording goes to the calling PHP thread's own shard, so `observe()` costs the same
//! whatever other threads do. The common call shapes (string name, int/float value,
//! optional array of tags) are read straight from the call frame; anything else goes
//! through `zend_parse_parameters`, which coerces or throws PHP's own TypeErrors.

use std::cell::RefCell;
use std::ffi::CString;
use std::io::Write;

use crate::ffi as sys;
use ferrophp_metrics::{global, Error, Op, TagBuf, Value};

use ferrophp_cache::zv;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

thread_local! {
    /// The tags of the current call, rebuilt in place on every call (no allocation once
    /// the buffer has grown to the largest tag set the thread has seen).
    static TAGS: RefCell<TagBuf> = RefCell::new(TagBuf::new());
}

/// MINIT: registers `Ferrophp\Metrics` and `Ferrophp\MetricsException`.
pub(crate) fn module_startup() {
    // SAFETY: MINIT of our module, on the engine's main thread.
    unsafe { sys::ferrophp_metrics_register_classes() };
}

/// Throws `Ferrophp\MetricsException` (an InvalidArgumentException) with `msg`.
fn throw(msg: &str) {
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: on a PHP thread inside a call; the class was registered at MINIT; PHP
    // copies the message.
    unsafe { sys::zend_throw_exception(sys::ferrophp_metrics_exception_ce, msg.as_ptr(), 0) };
}

/// The arguments of a recording call.
struct Args {
    name: *mut sys::zend_string,
    value: f64,
    tags: *mut sys::HashTable,
}

/// Reads `(string $name, int|float $value [, array $tags])`. `value_required`: false for
/// `increment` (its value defaults to 1). None when PHP threw.
///
/// # Safety
/// `ed` is the running internal call's frame.
unsafe fn read_args(ed: Ed, value_required: bool) -> Option<Args> {
    // SAFETY: guaranteed by the caller; arguments are read only below `num_args`.
    unsafe {
        let argc = zv::num_args(ed);
        let min = if value_required { 2 } else { 1 };
        if (min..=3).contains(&argc) {
            let name = zv::call_arg(ed, 1);
            if zv::ztype(name) == zv::IS_STRING {
                let value = if argc >= 2 {
                    let v = zv::call_arg(ed, 2);
                    match zv::ztype(v) {
                        zv::IS_DOUBLE => Some((*v).value.dval),
                        zv::IS_LONG => Some((*v).value.lval as f64),
                        _ => None,
                    }
                } else {
                    Some(1.0)
                };
                let tags = if argc == 3 {
                    let t = zv::call_arg(ed, 3);
                    (zv::ztype(t) == zv::IS_ARRAY).then(|| (*t).value.arr)
                } else {
                    Some(std::ptr::null_mut())
                };
                if let (Some(value), Some(tags)) = (value, tags) {
                    return Some(Args {
                        name: (*name).value.str_,
                        value,
                        tags,
                    });
                }
            }
        }
        // Slow path: PHP's own coercions and errors (TypeError, ArgumentCountError).
        let mut name: *mut sys::zend_string = std::ptr::null_mut();
        let mut value: f64 = 1.0;
        let mut tags: *mut sys::HashTable = std::ptr::null_mut();
        let spec = if value_required { c"Sd|h" } else { c"S|dh" };
        if sys::zend_parse_parameters(argc, spec.as_ptr(), &mut name, &mut value, &mut tags)
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return None;
        }
        Some(Args { name, value, tags })
    }
}

/// Fills `buf` from a PHP tags array (string keys, scalar values). Err(message) for
/// anything else.
///
/// # Safety
/// `ht` is null or a live array.
unsafe fn fill_tags(buf: &mut TagBuf, ht: *const sys::HashTable) -> Result<(), String> {
    buf.clear();
    if ht.is_null() {
        return Ok(());
    }
    // SAFETY: guaranteed by the caller; keys and values are live while we read them.
    unsafe {
        zv::for_each(ht, |key, v| {
            let zv::HKey::Str(k) = key else {
                return Err(
                    "tags must be an array of string => scalar (got an integer key)".to_owned(),
                );
            };
            let k = zv::str_bytes(k);
            let v = zv::deref(v);
            match zv::ztype(v) {
                zv::IS_STRING => buf.push(k, zv::str_bytes((*v).value.str_)),
                zv::IS_LONG => buf.push_with(k, |b| {
                    let _ = write!(b, "{}", (*v).value.lval);
                }),
                zv::IS_DOUBLE => buf.push_with(k, |b| {
                    let _ = write!(b, "{}", (*v).value.dval);
                }),
                zv::IS_TRUE => buf.push(k, b"true"),
                zv::IS_FALSE => buf.push(k, b"false"),
                _ => {
                    return Err(format!(
                        "tags must be an array of string => scalar: tag {:?} is not a scalar",
                        String::from_utf8_lossy(k)
                    ))
                }
            }
            Ok(())
        })
    }
}

/// Records one call's operation; throws on invalid input.
///
/// # Safety
/// `ed` is the running internal call's frame.
unsafe fn record(ed: Ed, value_required: bool, op: fn(f64) -> Op) {
    // SAFETY: guaranteed by the caller.
    let Some(args) = (unsafe { read_args(ed, value_required) }) else {
        return;
    };
    let result = TAGS.with(|cell| {
        let mut tags = cell.borrow_mut();
        // SAFETY: `args.tags` is null or the caller's live array.
        unsafe { fill_tags(&mut tags, args.tags) }?;
        // SAFETY: the name argument is a live string for the whole call.
        let name = unsafe { zv::str_bytes(args.name) };
        global()
            .record(name, &tags, op(args.value))
            .map_err(|e: Error| e.to_string())
    });
    if let Err(msg) = result {
        throw(&msg);
    }
}

/// `observe(string $name, float $value, array $tags = []): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Metrics_observe(ed: Ed, _rv: Rv) {
    // SAFETY: called by the engine with the running call's frame.
    unsafe { record(ed, true, Op::Observe) }
}

/// `increment(string $name, int|float $by = 1, array $tags = []): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Metrics_increment(ed: Ed, _rv: Rv) {
    // SAFETY: called by the engine with the running call's frame.
    unsafe { record(ed, false, Op::Add) }
}

/// `gauge(string $name, float $value, array $tags = []): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Metrics_gauge(ed: Ed, _rv: Rv) {
    // SAFETY: called by the engine with the running call's frame.
    unsafe { record(ed, true, Op::Set) }
}

/// `quantile(string $name, float $q, array $tags = []): ?float`: the distribution merged
/// across every thread; null when the series does not exist (or holds no values).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Metrics_quantile(ed: Ed, rv: Rv) {
    // SAFETY: called by the engine with the running call's frame and its writable return
    // slot.
    unsafe {
        let Some(args) = read_args(ed, true) else {
            return;
        };
        if !(0.0..=1.0).contains(&args.value) {
            throw(&format!(
                "quantile must be between 0 and 1, got {}",
                args.value
            ));
            return;
        }
        let r = TAGS.with(|cell| {
            let mut tags = cell.borrow_mut();
            fill_tags(&mut tags, args.tags)?;
            Ok::<_, String>(
                global()
                    .distribution(zv::str_bytes(args.name), &tags)
                    .and_then(|s| s.quantile(args.value)),
            )
        });
        match r {
            Ok(Some(v)) => zv::copy_plain(rv, &zv::double(v)),
            Ok(None) => zv::copy_plain(rv, &zv::null()),
            Err(msg) => throw(&msg),
        }
    }
}

/// Adds `key => value` (a double) to a request array zval.
///
/// # Safety
/// `arr` is a live request array zval.
unsafe fn put_double(arr: Rv, key: &str, v: f64) {
    // SAFETY: guaranteed by the caller; PHP copies the key.
    unsafe { sys::add_assoc_double_ex(arr, key.as_ptr().cast(), key.len(), v) };
}

/// Adds `key => value` (a string) to a request array zval.
///
/// # Safety
/// `arr` is a live request array zval.
unsafe fn put_string(arr: Rv, key: &str, v: &str) {
    // SAFETY: guaranteed by the caller; PHP copies key and value.
    unsafe {
        sys::add_assoc_stringl_ex(
            arr,
            key.as_ptr().cast(),
            key.len(),
            v.as_ptr().cast_mut().cast(),
            v.len(),
        )
    };
}

/// `snapshot(): array`: `['series' => [...], 'series_count' => int, 'dropped' => int]`,
/// every series merged across threads; distributions carry count, sum, min, max and
/// quantiles 0.5/0.9/0.99, counters and gauges their value.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Metrics_snapshot(ed: Ed, rv: Rv) {
    // SAFETY: called by the engine with the running call's frame and its writable return
    // slot; every array is a fresh request array moved into its parent.
    unsafe {
        if sys::zend_parse_parameters(zv::num_args(ed), c"".as_ptr())
            != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
        let snap = global().snapshot();
        zv::set_new_array(rv, 4);
        let mut list = sys::zval::default();
        let list_ht = zv::set_new_array(&mut list, snap.series.len() as u32);
        for s in &snap.series {
            let mut item = sys::zval::default();
            zv::set_new_array(&mut item, 8);
            put_string(&mut item, "name", &s.meta.name);
            let mut tags = sys::zval::default();
            zv::set_new_array(&mut tags, s.meta.tags.len() as u32);
            for (k, v) in &s.meta.tags {
                put_string(&mut tags, k, v);
            }
            sys::add_assoc_zval_ex(&mut item, c"tags".as_ptr(), 4, &mut tags);
            match &s.value {
                Value::Distribution(d) => {
                    put_string(&mut item, "type", "distribution");
                    sys::add_assoc_long_ex(&mut item, c"count".as_ptr(), 5, d.count() as i64);
                    put_double(&mut item, "sum", d.sum());
                    put_double(&mut item, "min", d.min().unwrap_or(0.0));
                    put_double(&mut item, "max", d.max().unwrap_or(0.0));
                    let mut qs = sys::zval::default();
                    zv::set_new_array(&mut qs, 3);
                    for q in ferrophp_metrics::prometheus::QUANTILES {
                        put_double(&mut qs, &q.to_string(), d.quantile(q).unwrap_or(0.0));
                    }
                    sys::add_assoc_zval_ex(&mut item, c"quantiles".as_ptr(), 9, &mut qs);
                }
                Value::Counter(v) => {
                    put_string(&mut item, "type", "counter");
                    put_double(&mut item, "value", *v);
                }
                Value::Gauge(v) => {
                    put_string(&mut item, "type", "gauge");
                    put_double(&mut item, "value", *v);
                }
            }
            sys::zend_hash_next_index_insert(list_ht, &mut item);
        }
        sys::add_assoc_zval_ex(rv, c"series".as_ptr(), 6, &mut list);
        sys::add_assoc_long_ex(rv, c"series_count".as_ptr(), 12, snap.series_count as i64);
        sys::add_assoc_long_ex(rv, c"dropped".as_ptr(), 7, snap.dropped as i64);
    }
}
