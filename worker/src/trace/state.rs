//! The trace state of the request running on this thread: its trace, the spans PHP
//! started (in slots reused request after request), the open ones, and the spans ended
//! so far, encoded for the exporter.

use std::cell::RefCell;

use ferrophp_trace::{RequestTrace, SpanContext, SpanData};

/// The slot index a Span object of the request's server span carries.
pub(super) const SERVER_SPAN: u32 = u32::MAX;

/// One span PHP started in the current request.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) data: SpanData,
    pub(super) open: bool,
}

/// The trace of the request running on this thread.
pub(super) struct State {
    pub(super) request: Option<RequestTrace>,
    /// Bumped by every engine request; 0 is never used (it marks non-recording spans).
    pub(super) generation: u64,
    /// Spans of this request (`used` of them); kept across requests for their buffers.
    pub(super) slots: Vec<Slot>,
    pub(super) used: usize,
    /// Open spans, oldest first: the last is the parent of the next span.
    pub(super) stack: Vec<u32>,
    /// Spans ended in this request, encoded; and how many.
    pub(super) out: Vec<u8>,
    pub(super) out_spans: u32,
    /// The last exception thrown in this request (class, message), for the server span
    /// when it turns out to be uncaught.
    pub(super) thrown: Option<(String, String)>,
    /// When the PHP thread took the request (queue wait = this - the span's start).
    pub(super) began_unix_nano: u64,
    /// The context of a request that is traced but not sampled, made when PHP first
    /// asks for it (the HTTP side passes nothing for such requests: nothing records
    /// them, so any new span id serves, and most requests never ask).
    pub(super) unsampled: Option<SpanContext>,
}

thread_local! {
    pub(super) static STATE: RefCell<State> = const {
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

/// Ends slot `i` at `now` and encodes it into the request's output.
pub(super) fn end_slot(s: &mut State, i: u32, now: u64) {
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
