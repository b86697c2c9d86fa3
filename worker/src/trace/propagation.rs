//! Propagation: the context outgoing calls carry from the current point of the request,
//! and the `traceparent` and `tracestate` the request came with.

use ferrophp_trace::{self as ft, SpanContext};

use super::state::State;
use crate::request_context::current_request;

/// The context outgoing calls carry from here. A sampled request: the innermost open
/// span, else the server span. Traced but not sampled: the caller's trace id (or a new
/// one) with a span id of this request's own, flags 00. Tracing off: the caller's
/// `traceparent` as received, so the trace passes through. None outside an HTTP request
/// (or without any context).
pub(super) fn current_context(s: &mut State) -> Option<SpanContext> {
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
pub(super) fn incoming_context() -> Option<SpanContext> {
    let cgi = current_request()?.cgi.as_ref()?;
    let mut values = cgi.headers.get_all("traceparent").iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    ft::parse_traceparent(first.as_bytes())
}

/// The request's `tracestate`, valid and joined, or None.
pub(super) fn incoming_tracestate() -> Option<String> {
    let cgi = current_request()?.cgi.as_ref()?;
    ft::parse_tracestate(
        cgi.headers
            .get_all("tracestate")
            .iter()
            .map(|v| v.as_bytes()),
    )
}
