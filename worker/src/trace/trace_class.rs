//! `Ferrophp\Trace`'s static methods: starting a span, the request's server span, and
//! what an outgoing call should carry (`traceparent`, `tracestate`).

use std::sync::atomic::Ordering;

use crate::ffi as sys;
use ferrophp_cache::zv;
use ferrophp_trace::{self as ft, Kind, SpanContext};

use super::attributes::{check_name, read_attributes, read_attributes_as};
use super::php_call::{no_args, return_bool, return_null, return_str, throw, Ed, Rv};
use super::propagation::{current_context, incoming_context, incoming_tracestate};
use super::state::{Slot, SERVER_SPAN, STATE};

/// Fills a new Span object in `rv`.
fn new_span_object(rv: Rv, generation: u64, index: u32, ctx: &SpanContext) {
    // SAFETY: rv is this call's return slot; the ref is the new object's, zeroed.
    unsafe {
        let r = &mut *sys::ferrophp_span_create(rv);
        r.generation = generation;
        r.index = index;
        r.flags = ctx.flags;
        r.trace_id = ctx.trace_id.0;
        r.span_id = ctx.span_id.0;
    }
}

/// `Trace::span(string $name, array $attributes = [], int $kind = Span::KIND_INTERNAL): Span`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_span(ed: Ed, rv: Rv) {
    let mut name: *mut sys::zend_string = std::ptr::null_mut();
    let mut attributes: *mut sys::HashTable = std::ptr::null_mut();
    let mut kind: sys::zend_long = Kind::Internal as sys::zend_long;
    // SAFETY: ed is the running call's frame; arguments are read below num_args only.
    unsafe {
        let argc = zv::num_args(ed);
        let fast = (1..=3).contains(&argc) && {
            let n = zv::call_arg(ed, 1);
            let a = (argc >= 2).then(|| zv::call_arg(ed, 2));
            let k = (argc == 3).then(|| zv::call_arg(ed, 3));
            let ok = zv::ztype(n) == zv::IS_STRING
                && a.is_none_or(|a| zv::ztype(a) == zv::IS_ARRAY)
                && k.is_none_or(|k| zv::ztype(k) == zv::IS_LONG);
            if ok {
                name = (*n).value.str_;
                attributes = a.map_or(std::ptr::null_mut(), |a| (*a).value.arr);
                kind = k.map_or(kind, |k| (*k).value.lval);
            }
            ok
        };
        if !fast
            && sys::zend_parse_parameters(
                argc,
                c"S|hl".as_ptr(),
                &mut name,
                &mut attributes,
                &mut kind,
            ) != sys::ZEND_RESULT_CODE_SUCCESS
        {
            return;
        }
    }
    // SAFETY: the name argument is a live string for the whole call.
    let name = unsafe { zv::str_bytes(name) };
    let Some(kind) = Kind::from_i64(kind) else {
        throw(&format!(
            "span kind {kind} does not exist (use the Span::KIND_* constants)"
        ));
        return;
    };
    if let Err(why) = check_name(name, "a span name") {
        throw(&why);
        return;
    }
    let made = STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return Ok((0, 0, SpanContext::default()));
        };
        let s = &mut *s;
        let parent = current_context(s);
        let sampled = s.request.is_some();
        let tracing = ft::get();
        let (Some(parent), true, Some(tracing)) = (parent, sampled, tracing) else {
            // Not recorded: check the attributes all the same (bad input fails alike).
            // SAFETY: null or the live argument array.
            unsafe { read_attributes(attributes, |_, _| {}) }?;
            return Ok((0, 0, parent.unwrap_or_default()));
        };
        if s.used >= tracing.max_spans_per_request as usize {
            ft::stats::SPANS_DROPPED_LIMIT.fetch_add(1, Ordering::Relaxed);
            // SAFETY: null or the live argument array.
            unsafe { read_attributes(attributes, |_, _| {}) }?;
            return Ok((0, 0, parent));
        }
        let index = s.used;
        if s.slots.len() <= index {
            s.slots.push(Slot::default());
        }
        let limits = tracing.limits;
        let slot = &mut s.slots[index];
        slot.data.reset();
        // One pass, no search for earlier keys: the span is new (and dropped on error),
        // and the keys of one array are distinct.
        // SAFETY: null or the live argument array.
        unsafe {
            read_attributes_as(attributes, false, |k, v| {
                slot.data.push_attribute(k, v, &limits)
            })
        }?;
        let ctx = SpanContext {
            trace_id: parent.trace_id,
            span_id: ft::ids::new_span_id(),
            flags: parent.flags,
        };
        let data = &mut slot.data;
        data.trace_id = ctx.trace_id;
        data.span_id = ctx.span_id;
        data.parent = Some(parent.span_id);
        data.flags = ctx.flags;
        data.kind = kind;
        data.set_name(name);
        data.start_unix_nano = ft::now_unix_nano();
        slot.open = true;
        s.used += 1;
        s.stack.push(index as u32);
        Ok::<_, String>((s.generation, index as u32, ctx))
    });
    match made {
        Ok((generation, index, ctx)) => new_span_object(rv, generation, index, &ctx),
        Err(why) => throw(&why),
    }
}

/// `Trace::traceparent(): ?string`: the `traceparent` for an outgoing call made now
/// (from the innermost open span); when tracing is off, the request's own as received.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_traceparent(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let ctx = thread_current_context();
    match ctx {
        Some(ctx) => return_str(rv, &ctx.traceparent()),
        None => return_null(rv),
    }
}

/// `Trace::tracestate(): ?string`: the request's `tracestate` (propagated unchanged).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_tracestate(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    // Only with a valid traceparent (the specification: no tracestate without one).
    // Whether sampled or not, the trace goes on with the caller's trace id.
    let with_parent = incoming_context().is_some();
    match with_parent.then(incoming_tracestate).flatten() {
        Some(state) => return_str(rv, state.as_bytes()),
        None => return_null(rv),
    }
}

/// `Trace::traceId(): ?string`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_traceId(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let ctx = thread_current_context();
    match ctx {
        Some(ctx) => return_str(rv, &ctx.trace_id.hex()),
        None => return_null(rv),
    }
}

/// `Trace::isSampled(): bool`: this request's spans are recorded and exported.
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_isSampled(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let sampled = STATE.with(|s| s.try_borrow().is_ok_and(|s| s.request.is_some()));
    return_bool(rv, sampled);
}

/// `Trace::server(): Span`: the request's server span (not recording when unsampled or
/// outside an HTTP request).
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Trace_server(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let (generation, ctx) = STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return (0, SpanContext::default());
        };
        match &s.request {
            Some(r) => (s.generation, r.context),
            None => (0, current_context(&mut s).unwrap_or_default()),
        }
    });
    new_span_object(rv, generation, SERVER_SPAN, &ctx);
}

/// The context an outgoing call made now carries, read from this thread's trace state
/// (None while the state is borrowed elsewhere, or with no request traced).
fn thread_current_context() -> Option<SpanContext> {
    STATE.with(|s| {
        s.try_borrow_mut()
            .ok()
            .and_then(|mut s| current_context(&mut s))
    })
}
