//! Tracing on the PHP thread: `Ferrophp\Trace` and `Ferrophp\Span` (declared in
//! worker/stubs/Trace.stub.php; the Span object's layout and the classes' registration in
//! c/trace.c), the request's
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
//!
//! Layout: this module installs a request's trace ([`request_begin`], [`request_end`]);
//! `state` is the thread's trace state (the request's trace, its span slots, the encoded
//! output); `trace_class` and `span_class` are the methods of `Ferrophp\Trace` and
//! `Ferrophp\Span`; `propagation` the context outgoing calls carry (and the incoming
//! `traceparent`/`tracestate`); `exceptions` what the throw hook and the error observer
//! report; `attributes` and `php_call` read what PHP passes and answer it. Dependencies
//! go one way: the two classes → propagation, exceptions, attributes, php_call; all of
//! them → state; none imports this module. The request itself (its headers) is read
//! through `crate::request_context`, never through the SAPI, which calls in here.

mod attributes;
mod exceptions;
mod php_call;
mod propagation;
mod span_class;
mod state;
mod trace_class;

use crate::ffi as sys;
use ferrophp_trace::{self as ft, RequestTrace, Value};

use state::{end_slot, STATE};

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

/// The parent a span recorded outside PHP's own (`mercure_publish()`'s publish span)
/// names: the innermost open span, else the server span; None unless the request is
/// sampled.
pub(crate) fn sampled_parent() -> Option<ft::SpanContext> {
    STATE.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        s.request.as_ref()?;
        propagation::current_context(&mut s)
    })
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
