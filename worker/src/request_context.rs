//! The request in progress on a PHP thread: the [`RequestContext`] that
//! `SG(server_context)` points at while a request runs, and the one way to reach it,
//! [`current_request`].
//!
//! The SAPI fills it and installs it (`sapi`); the SAPI's callbacks, the PHP functions we
//! add (`functions`) and tracing (`trace`) read it. It is a module of its own so that
//! those readers do not depend on the SAPI, which calls into tracing at each request's
//! start and end: dependencies go one way, sapi → trace → request_context.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::io::Read;

use bumpalo::Bump;

use crate::deadline::Watch;
use crate::php;
use crate::request::{CgiRequest, Disconnected, ResponseSink};

/// Where a request's output goes: a sink of its own, or, for a job, the sink held in the
/// PHP thread's deadline [`Watch`], which the watchdog takes away (answering the client)
/// if it retires the thread.
pub(crate) enum SinkCell {
    /// The request's own sink (a worker's boot request, a CLI run).
    Own(RefCell<Box<dyn ResponseSink>>),
    /// The sink of a job, held where the watchdog can take it.
    Watched(std::sync::Arc<Watch>),
}

impl SinkCell {
    /// Runs `f` on the sink; None once the watchdog took it.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut dyn ResponseSink) -> R) -> Option<R> {
        match self {
            SinkCell::Own(cell) => Some(f(cell.borrow_mut().as_mut())),
            SinkCell::Watched(watch) => watch
                .sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .map(|sink| f(sink.as_mut())),
        }
    }

    /// Output calls that fail once the sink is gone, as for a client that went away.
    pub(crate) fn send(
        &self,
        f: impl FnOnce(&mut dyn ResponseSink) -> Result<(), Disconnected>,
    ) -> Result<(), Disconnected> {
        self.with(f).unwrap_or(Err(Disconnected))
    }

    /// The sink itself, once the request is over; None when the watchdog took it.
    pub(crate) fn into_inner(self) -> Option<Box<dyn ResponseSink>> {
        match self {
            SinkCell::Own(cell) => Some(cell.into_inner()),
            SinkCell::Watched(watch) => watch.sink.lock().unwrap_or_else(|e| e.into_inner()).take(),
        }
    }
}

/// The request in progress on this thread, as seen by SAPI callbacks.
pub(crate) struct RequestContext<'a> {
    /// Where the response goes.
    pub(crate) sink: SinkCell,
    /// The request body PHP reads (`php://input`, `$_POST`).
    pub(crate) body: RefCell<Box<dyn Read + Send>>,
    /// The HTTP request; None for a run without one (a worker's boot request, the CLI).
    pub(crate) cgi: Option<CgiRequest>,
    /// NUL-terminated copies `SG(request_info)` points into; they outlive the request.
    pub(crate) c_strings: RequestStrings<'a>,
    /// The PHP thread's per-request arena (reset by the pool after the request).
    pub(crate) arena: &'a Bump,
    /// Extra `$_SERVER` entries the caller gave (`ScriptRequest::server_vars`).
    pub(crate) server_vars: Vec<(CString, Vec<u8>)>,
    /// `$_SERVER` starts with the process environment (`ScriptRequest::import_environment`).
    pub(crate) import_environment: bool,
    /// Served by a worker script: `$_SERVER['FRANKENPHP_WORKER']` is set.
    pub(crate) worker_request: bool,
    /// The client went away (or the body broke off): output is not sent any more.
    pub(crate) disconnected: Cell<bool>,
    /// The script (or the worker's handler) has started: before that, PHP is still
    /// reading the body at request start-up.
    pub(crate) script_started: Cell<bool>,
    /// `fastcgi_finish_request()` ended the response; output is now discarded.
    pub(crate) finished: Cell<bool>,
    /// When the request started, in seconds since the Unix epoch (`REQUEST_TIME_FLOAT`).
    pub(crate) started_at: f64,
    /// Response body bytes the script wrote (for the trace's server span).
    pub(crate) written: Cell<u64>,
}

/// The strings of a request `SG(request_info)` points at, NUL-terminated in the arena.
#[derive(Default)]
pub(crate) struct RequestStrings<'a> {
    /// The script to run (`SG(request_info).path_translated`).
    pub(crate) script_filename: &'a CStr,
    /// The request method, for an HTTP request.
    pub(crate) method: Option<&'a CStr>,
    /// The request target as received.
    pub(crate) request_uri: Option<&'a CStr>,
    /// The query string, without its `?`.
    pub(crate) query_string: Option<&'a CStr>,
    /// The `Content-Type` header.
    pub(crate) content_type: Option<&'a CStr>,
    /// Every `Cookie` header, joined (what PHP parses into `$_COOKIE`).
    pub(crate) cookie: Option<&'a CStr>,
}

impl RequestContext<'_> {
    /// Delivers everything buffered and ends the client's response.
    pub(crate) fn finish_response(&self) {
        self.sink.with(|sink| sink.finish());
        self.finished.set(true);
    }
}

/// The request running on the calling PHP thread, if any: for the SAPI's callbacks and
/// the PHP functions we implement.
pub(crate) fn current_request() -> Option<&'static RequestContext<'static>> {
    let ptr = php::server_context() as *const RequestContext<'static>;
    // SAFETY: SG(server_context) is either NULL or points at the RequestContext of the
    // PreparedRequest installed on this thread, which stays where it is (and is only shared
    // immutably) until its uninstall resets the pointer to NULL.
    unsafe { ptr.as_ref() }
}
