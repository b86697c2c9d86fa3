//! Tracing on the PHP thread: `Ferrophp\Trace` and `Ferrophp\Span` (arginfo and the Span
//! object's layout in php-sys/trace.c, stubs in worker/stubs/Trace.php), the request's
//! trace state, and what PHP's error observer and throw hook tell it about uncaught
//! exceptions and fatal errors.
//!
//! A request's trace arrives with its [`ScriptRequest`](crate::ScriptRequest)
//! (`ferrophp_trace::RequestTrace`: its context and, when sampled, its server span) and is
//! installed for the life of the engine request by [`request_begin`] / [`request_end`]
//! (classic and worker mode alike: `sapi::PreparedRequest::install`/`uninstall`). Spans
//! PHP starts live in this thread's slots, reused request after request; each is encoded
//! into the thread's output buffer when it ends (by `end()`, when its object is freed, or
//! at the end of the request, whichever comes first), and the buffer goes to the export
//! queue once per request. A span object names its request by a generation number, so a
//! span kept in a worker's static past its request turns into a no-op.
//!
//! Nothing here throws for a volume limit (spans per request, attributes, events: capped
//! and counted); programming errors (an empty name, an attribute that is not a string,
//! int, float, bool or list of one of those, a status code that does not exist) throw
//! `Ferrophp\TraceException`, whether or not the request is sampled.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::Ordering;

use ferrophp_cache::zv;
use ferrophp_trace::{
    self as ft, AttrValue, Kind, Limits, RequestTrace, SpanContext, SpanData, SpanId, StatusCode,
    TraceId, Value,
};
use php_sys as sys;

use crate::request_context::current_request;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// The slot index a Span object of the request's server span carries.
const SERVER_SPAN: u32 = u32::MAX;

const IS_NULL: u8 = 1;

/// One span PHP started in the current request.
#[derive(Default)]
struct Slot {
    data: SpanData,
    open: bool,
}

/// The trace of the request running on this thread.
struct State {
    request: Option<RequestTrace>,
    /// Bumped by every engine request; 0 is never used (it marks non-recording spans).
    generation: u64,
    /// Spans of this request (`used` of them); kept across requests for their buffers.
    slots: Vec<Slot>,
    used: usize,
    /// Open spans, oldest first: the last is the parent of the next span.
    stack: Vec<u32>,
    /// Spans ended in this request, encoded; and how many.
    out: Vec<u8>,
    out_spans: u32,
    /// The last exception thrown in this request (class, message), for the server span
    /// when it turns out to be uncaught.
    thrown: Option<(String, String)>,
    /// When the PHP thread took the request (queue wait = this - the span's start).
    began_unix_nano: u64,
    /// The context of a request that is traced but not sampled, made when PHP first
    /// asks for it (the HTTP side passes nothing for such requests: nothing records
    /// them, so any new span id serves, and most requests never ask).
    unsampled: Option<SpanContext>,
}

thread_local! {
    static STATE: RefCell<State> = const {
        RefCell::new(State {
            request: None,
            generation: 0,
            slots: Vec::new(),
            used: 0,
            stack: Vec::new(),
            out: Vec::new(),
            out_spans: 0,
            thrown: None,
            began_unix_nano: 0,
            unsampled: None,
        })
    };
}

/// MINIT: registers the classes, the error observer and the throw hook.
pub(crate) fn module_startup() {
    // SAFETY: MINIT of our module, on the engine's main thread, before any request.
    unsafe { sys::ferrophp_trace_register_classes() };
}

/// The engine request for `trace` begins on this thread (None: a request without a
/// trace, such as a worker's boot request or a CLI run).
pub(crate) fn request_begin(trace: Option<RequestTrace>) {
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        s.generation += 1;
        // Spans of the last request all ended with it (request_end); this only makes sure.
        let used = s.used;
        for slot in &mut s.slots[..used] {
            slot.open = false;
        }
        s.used = 0;
        s.stack.clear();
        s.thrown = None;
        s.unsampled = None;
        s.began_unix_nano = match &trace {
            Some(_) => ft::now_unix_nano(),
            None => 0,
        };
        s.request = trace;
    });
}

/// The engine request ends: spans still open end now, this request's spans go to the
/// exporter, and the server span gets what the PHP side knows (`bytes_written`: the
/// response body PHP wrote).
pub(crate) fn request_end(bytes_written: u64) {
    let request = STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return None;
        };
        let request = s.request.take()?;
        let server = &request.server;
        let tracing = ft::get()?;
        let now = ft::now_unix_nano();
        let s = &mut *s;
        while let Some(i) = s.stack.pop() {
            end_slot(s, i, now);
        }
        if s.out_spans > 0 {
            let bytes = std::mem::replace(&mut s.out, tracing.buffer());
            tracing.export(ft::Chunk {
                bytes,
                spans: s.out_spans,
            });
            s.out_spans = 0;
        }
        let began = s.began_unix_nano;
        // The PHP side's attributes, and its end, under one lock.
        server.finish(|data, limits| {
            if let Some(name) = std::thread::current().name() {
                data.push_attribute("thread.name", Value::Text(name), limits);
            }
            let wait = began.saturating_sub(data.start_unix_nano) as f64 / 1e6;
            data.push_attribute("ferrophp.queue_wait_ms", Value::Double(wait), limits);
            data.push_attribute(
                "http.response.body.size",
                Value::Int(bytes_written as i64),
                limits,
            );
        });
        Some(request)
    });
    // The server span is queued when its last holder lets go: maybe this one.
    drop(request);
}

/// Ends slot `i` at `now` and encodes it into the request's output.
fn end_slot(s: &mut State, i: u32, now: u64) {
    let slot = &mut s.slots[i as usize];
    if !slot.open {
        return;
    }
    slot.open = false;
    slot.data.end_unix_nano = now;
    slot.data.encode_into(&mut s.out);
    s.out_spans += 1;
    if let Some(at) = s.stack.iter().rposition(|&j| j == i) {
        s.stack.remove(at);
    }
}

/// Throws `Ferrophp\TraceException` with `msg`.
fn throw(msg: &str) {
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: on a PHP thread inside a call; the class was registered at MINIT; PHP
    // copies the message.
    unsafe { sys::zend_throw_exception(sys::ferrophp_trace_exception_ce, msg.as_ptr(), 0) };
}

/// An attribute value read from PHP: one value, or a list (values borrowed from PHP).
enum PhpValue<'a> {
    One(Value<'a>),
    List(Vec<Value<'a>>),
    /// null: ignored (`['user' => $user?->id]` sets nothing when there is no user).
    Skip,
}

/// Reads a PHP value as an attribute value. Err(what is wrong).
///
/// # Safety
/// `v` is a live zval that outlives `'a`.
unsafe fn attr_value<'a>(v: *const sys::zval) -> Result<PhpValue<'a>, &'static str> {
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
unsafe fn read_attributes(
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
unsafe fn read_attributes_as(
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
fn check_name(name: &[u8], what: &str) -> Result<(), String> {
    if name.is_empty() {
        Err(format!("{what} must not be empty"))
    } else {
        Ok(())
    }
}

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

/// The context outgoing calls carry from here. A sampled request: the innermost open
/// span, else the server span. Traced but not sampled: the caller's trace id (or a new
/// one) with a span id of this request's own, flags 00. Tracing off: the caller's
/// `traceparent` as received, so the trace passes through. None outside an HTTP request
/// (or without any context).
fn current_context(s: &mut State) -> Option<SpanContext> {
    if let Some(request) = s.request.as_ref() {
        let mut ctx = request.context;
        if let Some(&i) = s.stack.last() {
            ctx.span_id = s.slots[i as usize].data.span_id;
        }
        return Some(ctx);
    }
    if ft::get().is_none() {
        return incoming_context();
    }
    if let Some(ctx) = s.unsampled {
        return Some(ctx);
    }
    current_request()?.cgi.as_ref()?;
    let ctx = SpanContext {
        trace_id: incoming_context().map_or_else(ft::ids::new_trace_id, |c| c.trace_id),
        span_id: ft::ids::new_span_id(),
        flags: 0,
    };
    s.unsampled = Some(ctx);
    Some(ctx)
}

/// The request's one valid `traceparent` header as received.
fn incoming_context() -> Option<SpanContext> {
    let cgi = current_request()?.cgi.as_ref()?;
    let mut values = cgi.headers.get_all("traceparent").iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    ft::parse_traceparent(first.as_bytes())
}

/// The request's `tracestate`, valid and joined, or None.
fn incoming_tracestate() -> Option<String> {
    let cgi = current_request()?.cgi.as_ref()?;
    ft::parse_tracestate(
        cgi.headers
            .get_all("tracestate")
            .iter()
            .map(|v| v.as_bytes()),
    )
}

/// Returns `bytes` (ASCII) as a PHP string.
fn return_str(rv: Rv, bytes: &[u8]) {
    // SAFETY: rv is this call's return slot; PHP copies the bytes.
    unsafe { sys::ferrophp_zval_stringl(rv, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
}

fn return_null(rv: Rv) {
    // SAFETY: rv is this call's return slot.
    unsafe { zv::copy_plain(rv, &zv::null()) };
}

fn return_bool(rv: Rv, b: bool) {
    // SAFETY: rv is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(rv, b) };
}

/// `zend_parse_parameters_none()`.
fn no_args(ed: Ed) -> bool {
    // SAFETY: ed is the running call's frame.
    if unsafe { zv::num_args(ed) } == 0 {
        return true;
    }
    // SAFETY: inside an internal function call on a PHP thread.
    unsafe { sys::zend_wrong_parameters_none_error() };
    false
}

/// `Trace::span(string $name, array $attributes = [], int $kind = Span::KIND_INTERNAL): Span`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_span(ed: Ed, rv: Rv) {
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
            // SAFETY: as above.
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
        // SAFETY: as above.
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
pub unsafe extern "C" fn ferrophp_trace_traceparent(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let ctx = STATE.with(|s| {
        s.try_borrow_mut()
            .ok()
            .and_then(|mut s| current_context(&mut s))
    });
    match ctx {
        Some(ctx) => return_str(rv, &ctx.traceparent()),
        None => return_null(rv),
    }
}

/// `Trace::tracestate(): ?string`: the request's `tracestate` (propagated unchanged).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_tracestate(ed: Ed, rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_trace_trace_id(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let ctx = STATE.with(|s| {
        s.try_borrow_mut()
            .ok()
            .and_then(|mut s| current_context(&mut s))
    });
    match ctx {
        Some(ctx) => return_str(rv, &ctx.trace_id.hex()),
        None => return_null(rv),
    }
}

/// `Trace::isSampled(): bool`: this request's spans are recorded and exported.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_is_sampled(ed: Ed, rv: Rv) {
    if !no_args(ed) {
        return;
    }
    let sampled = STATE.with(|s| s.try_borrow().is_ok_and(|s| s.request.is_some()));
    return_bool(rv, sampled);
}

/// `Trace::server(): Span`: the request's server span (not recording when unsampled or
/// outside an HTTP request).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_server(ed: Ed, rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_span_set_attribute(ed: Ed, rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_span_set_attributes(ed: Ed, rv: Rv) {
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
        // SAFETY: as above.
        let _ = unsafe { read_attributes(attributes, |k, v| d.set_attribute(k, v, l)) };
    });
    return_this(ed, rv);
}

/// `Span::addEvent(string $name, array $attributes = []): static`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_span_add_event(ed: Ed, rv: Rv) {
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
    // SAFETY: as above.
    let checked = check_name(name, "an event name")
        .and_then(|()| unsafe { read_attributes(attributes, |_, _| {}) });
    if let Err(why) = checked {
        throw(&why);
        return;
    }
    let now = ft::now_unix_nano();
    with_this(ed, |d, l| {
        d.add_event(now, name, l, |e| {
            // SAFETY: as above.
            let _ = unsafe { read_attributes(attributes, |k, v| e.push(k, v)) };
        })
    });
    return_this(ed, rv);
}

/// A Throwable's class, message and trace, as `ferrophp_trace_describe_throwable` gives.
#[derive(Default)]
struct Described {
    class: String,
    message: String,
    trace: String,
}

unsafe extern "C" fn describe_into(
    ctx: *mut c_void,
    cls: *const c_char,
    cls_len: usize,
    msg: *const c_char,
    msg_len: usize,
    trace: *const c_char,
    trace_len: usize,
) {
    // SAFETY: ctx is the Described the caller passed; the strings are live for this call.
    unsafe {
        let d = &mut *ctx.cast::<Described>();
        let text = |p: *const c_char, n: usize| {
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), n)).into_owned()
        };
        d.class = text(cls, cls_len);
        d.message = text(msg, msg_len);
        d.trace = text(trace, trace_len);
    }
}

/// Adds the semantic conventions' `exception` event.
fn exception_event(
    data: &mut SpanData,
    limits: &Limits,
    e: &Described,
    extra: impl FnOnce(&mut ft::span::EventAttributes<'_>),
) {
    data.add_event(ft::now_unix_nano(), b"exception", limits, |a| {
        a.push("exception.type", Value::Text(&e.class));
        a.push("exception.message", Value::Text(&e.message));
        if !e.trace.is_empty() {
            a.push("exception.stacktrace", Value::Text(&e.trace));
        }
        extra(a);
    });
}

/// `Span::recordException(Throwable $exception, array $attributes = []): static`: an
/// `exception` event (type, message, stack trace). The status is the caller's to set.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_span_record_exception(ed: Ed, rv: Rv) {
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
    // SAFETY: as above.
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
                    // SAFETY: as above.
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
pub unsafe extern "C" fn ferrophp_span_set_status(ed: Ed, rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_span_update_name(ed: Ed, rv: Rv) {
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

/// "Class: message" (the class alone without a message).
fn describe(class: &str, message: &str) -> String {
    if message.is_empty() {
        class.to_owned()
    } else {
        format!("{class}: {message}")
    }
}

/// `Span::end(): void`
#[no_mangle]
pub unsafe extern "C" fn ferrophp_span_end(ed: Ed, _rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_trace_span_released(
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
pub unsafe extern "C" fn ferrophp_span_is_recording(ed: Ed, rv: Rv) {
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
pub unsafe extern "C" fn ferrophp_span_trace_id(ed: Ed, rv: Rv) {
    if no_args(ed) {
        return_str(rv, &this_context(ed).trace_id.hex());
    }
}

/// `Span::spanId(): string` (16 hex digits).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_span_span_id(ed: Ed, rv: Rv) {
    if no_args(ed) {
        return_str(rv, &this_context(ed).span_id.hex());
    }
}

/// `Span::traceparent(): ?string`: the `traceparent` naming this span as the parent
/// (null for a span outside any trace).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_span_traceparent(ed: Ed, rv: Rv) {
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

/// The throw hook asks whether to read the exception: only for a recorded request.
#[no_mangle]
pub extern "C" fn ferrophp_trace_records() -> bool {
    STATE.with(|s| s.try_borrow().is_ok_and(|s| s.request.is_some()))
}

/// An exception was thrown in a recorded request: kept in case it ends uncaught.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_on_throw(
    cls: *const c_char,
    cls_len: usize,
    msg: *const c_char,
    msg_len: usize,
) {
    // SAFETY: the hook passes strings live for this call.
    let (cls, msg) = unsafe {
        (
            std::slice::from_raw_parts(cls.cast::<u8>(), cls_len),
            std::slice::from_raw_parts(msg.cast::<u8>(), msg_len),
        )
    };
    STATE.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            let (c, m) = s.thrown.get_or_insert_with(Default::default);
            c.clear();
            c.push_str(&String::from_utf8_lossy(cls));
            m.clear();
            m.push_str(&String::from_utf8_lossy(msg));
        }
    });
}

/// Error types no handler can catch: the script ends.
const FATAL: c_int =
    (sys::E_ERROR | sys::E_CORE_ERROR | sys::E_COMPILE_ERROR | sys::E_PARSE) as c_int;

fn error_type_name(t: c_int) -> &'static str {
    match t as u32 {
        sys::E_ERROR => "E_ERROR",
        sys::E_CORE_ERROR => "E_CORE_ERROR",
        sys::E_COMPILE_ERROR => "E_COMPILE_ERROR",
        _ => "E_PARSE",
    }
}

/// PHP's error observer: an uncaught exception (reported as a fatal "Uncaught ..."
/// error) or another fatal error marks the server span (and the spans still open) as
/// failed; the exception also becomes an `exception` event on the server span.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_trace_on_error(t: c_int, msg: *const c_char, msg_len: usize) {
    let t = t & !(sys::E_DONT_BAIL as c_int);
    if t & FATAL == 0 {
        return;
    }
    // SAFETY: the observer passes the message, live for this call.
    let message = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), msg_len) };
    let message = String::from_utf8_lossy(message);
    let Some(limits) = ft::get().map(|t| t.limits) else {
        return;
    };
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let Some(server) = s.request.as_ref().map(|r| r.server.clone()) else {
            return;
        };
        let (described, error_type, description) = match message.strip_prefix("Uncaught ") {
            Some(rest) => {
                // The class and message of the last exception thrown (the uncaught one);
                // failing that, what the message starts with ("Class: message in ...").
                let (class, text) = match s.thrown.take() {
                    Some(thrown) => thrown,
                    None => {
                        let head = rest.split(" in ").next().unwrap_or(rest);
                        match head.split_once(": ") {
                            Some((c, m)) => (c.to_owned(), m.to_owned()),
                            None => (head.to_owned(), String::new()),
                        }
                    }
                };
                let description = describe(&class, &text);
                let described = Described {
                    class: class.clone(),
                    message: text,
                    trace: rest.trim_end_matches("\n  thrown").to_owned(),
                };
                (Some(described), class, description)
            }
            None => (
                None,
                error_type_name(t).to_owned(),
                message.lines().next().unwrap_or("").to_owned(),
            ),
        };
        let State { stack, slots, .. } = &mut *s;
        for &i in stack.iter() {
            let d = &mut slots[i as usize].data;
            if d.status != StatusCode::Ok {
                d.status = StatusCode::Error;
                d.status_message.clear();
                d.status_message.push_str(&description);
            }
        }
        drop(s);
        server.with(|d, _| {
            if let Some(e) = &described {
                exception_event(d, &limits, e, |_| {});
            }
            d.set_attribute("error.type", Value::Text(&error_type), &limits);
            d.status = StatusCode::Error;
            d.status_message.clear();
            d.status_message.push_str(&description);
        });
    });
}
