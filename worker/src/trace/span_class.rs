//! `Ferrophp\Span`'s methods, and the end of a span when its object is freed. A Span
//! object names its span by request generation and slot: a span of another request, an
//! ended span and a non-recording span do nothing.

use crate::ffi as sys;
use ferrophp_cache::zv;
use ferrophp_trace::{
    self as ft, AttrValue, Limits, SpanContext, SpanData, SpanId, StatusCode, TraceId,
};

use super::attributes::{attr_value, check_name, read_attributes, PhpValue};
use super::exceptions::{describe, describe_into, exception_event, Described};
use super::php_call::{no_args, return_bool, return_null, return_str, throw, Ed, Rv};
use super::state::{end_slot, SERVER_SPAN, STATE};

/// Runs `f` on the span `$this` names, if it is still recording. A span of another
/// request, an ended span and a non-recording span do nothing.
fn with_this<R>(ed: Ed, f: impl FnOnce(&mut SpanData, &Limits) -> R) -> Option<R> {
    // SAFETY: ed is the running Span method's frame.
    let r = unsafe { sys::ferrophp_span_this(ed).as_ref() }?;
    if r.generation == 0 {
        return None;
    }
    let limits = ft::get()?.limits;
    STATE.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        if s.generation != r.generation {
            return None;
        }
        if r.index == SERVER_SPAN {
            let server = s.request.as_ref()?.server.clone();
            drop(s);
            return Some(server.with(f));
        }
        if r.index as usize >= s.used {
            return None;
        }
        let slot = s.slots.get_mut(r.index as usize)?;
        slot.open.then(|| f(&mut slot.data, &limits))
    })
}

fn return_this(ed: Ed, rv: Rv) {
    // SAFETY: ed is the running Span method's frame, rv its return slot.
    unsafe { sys::ferrophp_span_return_this(ed, rv) };
}

/// `Span::setAttribute(string $key, mixed $value): static`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_setAttribute(ed: Ed, rv: Rv) {
    let mut key: *mut sys::zend_string = std::ptr::null_mut();
    let mut value: *mut sys::zval = std::ptr::null_mut();
    // SAFETY: "Sz" fills a zend_string and a zval pointer.
    if unsafe { sys::zend_parse_parameters(zv::num_args(ed), c"Sz".as_ptr(), &mut key, &mut value) }
        != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the arguments live for the whole call.
    let (key, parsed) = unsafe { (zv::str_bytes(key), attr_value(value)) };
    let result = if key.is_empty() {
        Err("attribute keys must not be empty".to_owned())
    } else {
        parsed.map_err(|why| format!("attribute {:?} {why}", String::from_utf8_lossy(key)))
    };
    match result {
        Ok(PhpValue::One(v)) => {
            with_this(ed, |d, l| d.set_attribute(key, AttrValue::One(v), l));
        }
        Ok(PhpValue::List(list)) => {
            with_this(ed, |d, l| d.set_attribute(key, AttrValue::Array(&list), l));
        }
        Ok(PhpValue::Skip) => {}
        Err(why) => {
            throw(&why);
            return;
        }
    }
    return_this(ed, rv);
}

/// `Span::setAttributes(array $attributes): static`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_setAttributes(ed: Ed, rv: Rv) {
    let mut attributes: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: "h" fills a HashTable pointer.
    if unsafe { sys::zend_parse_parameters(zv::num_args(ed), c"h".as_ptr(), &mut attributes) }
        != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the argument array lives for the whole call; checked before anything is set.
    if let Err(why) = unsafe { read_attributes(attributes, |_, _| {}) } {
        throw(&why);
        return;
    }
    with_this(ed, |d, l| {
        // SAFETY: the argument array, live for the whole call.
        let _ = unsafe { read_attributes(attributes, |k, v| d.set_attribute(k, v, l)) };
    });
    return_this(ed, rv);
}

/// `Span::addEvent(string $name, array $attributes = []): static`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_addEvent(ed: Ed, rv: Rv) {
    let mut name: *mut sys::zend_string = std::ptr::null_mut();
    let mut attributes: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: "S|h" fills a zend_string and a HashTable pointer.
    if unsafe {
        sys::zend_parse_parameters(
            zv::num_args(ed),
            c"S|h".as_ptr(),
            &mut name,
            &mut attributes,
        )
    } != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the arguments live for the whole call.
    let name = unsafe { zv::str_bytes(name) };
    let checked = check_name(name, "an event name").and_then(|()| {
        // SAFETY: null or the argument array, live for the whole call.
        unsafe { read_attributes(attributes, |_, _| {}) }
    });
    if let Err(why) = checked {
        throw(&why);
        return;
    }
    let now = ft::now_unix_nano();
    with_this(ed, |d, l| {
        d.add_event(now, name, l, |e| {
            // SAFETY: null or the argument array, live for the whole call.
            let _ = unsafe { read_attributes(attributes, |k, v| e.push(k, v)) };
        })
    });
    return_this(ed, rv);
}

/// `Span::recordException(Throwable $exception, array $attributes = []): static`: an
/// `exception` event (type, message, stack trace). The status is the caller's to set.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_recordException(ed: Ed, rv: Rv) {
    let mut exception: *mut sys::zval = std::ptr::null_mut();
    let mut attributes: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: "z|h" fills a zval and a HashTable pointer; the arginfo requires a Throwable.
    if unsafe {
        sys::zend_parse_parameters(
            zv::num_args(ed),
            c"z|h".as_ptr(),
            &mut exception,
            &mut attributes,
        )
    } != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: null or the argument array, live for the whole call.
    if let Err(why) = unsafe { read_attributes(attributes, |_, _| {}) } {
        throw(&why);
        return;
    }
    let recording = with_this(ed, |_, _| ()).is_some();
    if recording {
        let mut described = Described::default();
        // SAFETY: exception is the live argument; the callback only fills `described`.
        let is_throwable = unsafe {
            sys::ferrophp_trace_describe_throwable(
                exception,
                true,
                Some(describe_into),
                (&mut described as *mut Described).cast(),
            )
        };
        if is_throwable {
            with_this(ed, |d, l| {
                exception_event(d, l, &described, |a| {
                    // SAFETY: null or the argument array, live for the whole call.
                    let _ = unsafe { read_attributes(attributes, |k, v| a.push(k, v)) };
                })
            });
        }
    }
    return_this(ed, rv);
}

/// `Span::setStatus(int $code, string $description = ''): static`, with the
/// specification's rules: Unset is ignored, Ok is final, a description only goes with
/// Error.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_setStatus(ed: Ed, rv: Rv) {
    let mut code: sys::zend_long = 0;
    let mut description: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: "l|S" fills a zend_long and a zend_string pointer.
    if unsafe {
        sys::zend_parse_parameters(
            zv::num_args(ed),
            c"l|S".as_ptr(),
            &mut code,
            &mut description,
        )
    } != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    let code = match code {
        0 => StatusCode::Unset,
        1 => StatusCode::Ok,
        2 => StatusCode::Error,
        other => {
            throw(&format!(
                "status code {other} does not exist (use the Span::STATUS_* constants)"
            ));
            return;
        }
    };
    let description = if description.is_null() {
        &[][..]
    } else {
        // SAFETY: the argument lives for the whole call.
        unsafe { zv::str_bytes(description) }
    };
    with_this(ed, |d, _| {
        if code == StatusCode::Unset || d.status == StatusCode::Ok {
            return;
        }
        d.status = code;
        d.status_message.clear();
        if code == StatusCode::Error {
            d.status_message
                .push_str(&String::from_utf8_lossy(description));
        }
    });
    return_this(ed, rv);
}

/// `Span::updateName(string $name): static`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_updateName(ed: Ed, rv: Rv) {
    let mut name: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: "S" fills a zend_string pointer.
    if unsafe { sys::zend_parse_parameters(zv::num_args(ed), c"S".as_ptr(), &mut name) }
        != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the argument lives for the whole call.
    let name = unsafe { zv::str_bytes(name) };
    if let Err(why) = check_name(name, "a span name") {
        throw(&why);
        return;
    }
    with_this(ed, |d, _| d.set_name(name));
    return_this(ed, rv);
}

/// Ends the span `r` names if it is open in the current request (the server span ends
/// with its request, never earlier). `failed`: an exception is unwinding through the
/// span's scope (the last one thrown): the span gets status Error with its class and
/// message, unless it was set to Ok.
fn end_ref(r: &sys::ferrophp_span_ref, failed: bool) {
    if r.generation == 0 || r.index == SERVER_SPAN {
        return;
    }
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        if s.generation != r.generation || (r.index as usize) >= s.used {
            return;
        }
        let s = &mut *s;
        let slot = &mut s.slots[r.index as usize];
        if !slot.open {
            // Ended already (end() then free, the usual order): nothing to do.
            return;
        }
        if failed && slot.data.status != StatusCode::Ok {
            slot.data.status = StatusCode::Error;
            slot.data.status_message.clear();
            if let Some((class, message)) = &s.thrown {
                slot.data.status_message.push_str(&describe(class, message));
            }
        }
        end_slot(s, r.index, ft::now_unix_nano());
    });
}

/// `Span::end(): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_end(ed: Ed, _rv: Rv) {
    if !no_args(ed) {
        return;
    }
    // SAFETY: ed is the running Span method's frame.
    if let Some(r) = unsafe { sys::ferrophp_span_this(ed).as_ref() } {
        end_ref(r, false);
    }
}

/// free_obj of a Span: a span nobody can end any more ends now (failed, when an
/// exception is unwinding its scope).
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_trace_span_released(
    r: *const sys::ferrophp_span_ref,
    unwinding: bool,
) {
    // SAFETY: the object's own ref, alive during free_obj.
    if let Some(r) = unsafe { r.as_ref() } {
        end_ref(r, unwinding);
    }
}

/// `Span::isRecording(): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_isRecording(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    return_bool(rv, with_this(ed, |_, _| ()).is_some());
}

fn this_context(ed: Ed) -> SpanContext {
    // SAFETY: ed is the running Span method's frame.
    match unsafe { sys::ferrophp_span_this(ed).as_ref() } {
        Some(r) => SpanContext {
            trace_id: TraceId(r.trace_id),
            span_id: SpanId(r.span_id),
            flags: r.flags,
        },
        None => SpanContext::default(),
    }
}

/// `Span::traceId(): string` (32 hex digits; zeros for a span outside any trace).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_traceId(ed: Ed, rv: Rv) {
    if no_args(ed) {
        return_str(rv, &this_context(ed).trace_id.hex());
    }
}

/// `Span::spanId(): string` (16 hex digits).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_spanId(ed: Ed, rv: Rv) {
    if no_args(ed) {
        return_str(rv, &this_context(ed).span_id.hex());
    }
}

/// `Span::traceparent(): ?string`: the `traceparent` naming this span as the parent
/// (null for a span outside any trace).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Span_traceparent(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let ctx = this_context(ed);
    if ctx.trace_id.is_valid() && ctx.span_id.is_valid() {
        return_str(rv, &ctx.traceparent());
    } else {
        return_null(rv);
    }
}
