//! Traces for ferrophp: W3C Trace Context in, spans out over OTLP/HTTP protobuf.
//!
//! - [`context`]: `traceparent`/`tracestate` parsing and formatting, trace and span ids.
//! - [`ids`]: new ids from a per-thread generator (no lock, no system call).
//! - [`sampler`]: `OTEL_TRACES_SAMPLER` (parent-based `always_on` by default).
//! - [`span`]: a span's data and its OTLP encoding, written by the thread that ends it.
//! - [`config`]: the `OTEL_*` environment variables.
//! - `export`: the bounded queue and the `ferrophp-otlp` exporter thread.
//! - [`stats`]: counters for `/metrics`.
//!
//! Tracing is process-wide: [`install`] once at start-up, [`get`] on the request path
//! (None when tracing is off: one atomic load). A sampled request gets a [`RequestTrace`]
//! from [`Tracing::start_request`]: its context and its [`ServerSpan`], shared by the
//! HTTP side and the PHP thread and exported when the last of them lets go of it.
//!
//! Why not the OpenTelemetry SDK: `benches/otel-sdk-cost` measures it (docs/tracing.md);
//! a child span costs about three times the 300 ns budget of `Trace::span()` there,
//! mostly allocation of its attribute and event vectors and the batch processor's
//! channel. Here a span is encoded into reused buffers on its own thread and handed over
//! with one lock per request.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

pub mod config;
pub mod context;
mod export;
pub mod ids;
pub mod sampler;
pub mod span;
pub mod stats;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use config::Config;
pub use context::{parse_traceparent, parse_tracestate, SpanContext, SpanId, TraceId, SAMPLED};
pub use export::Chunk;
pub use span::{AttrValue, Kind, Limits, SpanData, StatusCode, Value};

/// Tracing as configured at start-up.
pub struct Tracing {
    /// Which requests are recorded.
    pub sampler: sampler::Sampler,
    /// Per-span limits.
    pub limits: Limits,
    /// Spans PHP may start per request.
    pub max_spans_per_request: u32,
    exporter: export::Exporter,
    endpoint: String,
}

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// Starts tracing (the exporter thread) with `config`. Once per process; a second call
/// returns the first's.
pub fn install(config: Config) -> Result<&'static Tracing, String> {
    if let Some(t) = TRACING.get() {
        return Ok(t);
    }
    let exporter = export::Exporter::start(&config)
        .map_err(|e| format!("cannot start the trace exporter thread: {e}"))?;
    let _ = TRACING.set(Tracing {
        sampler: config.sampler,
        limits: config.limits,
        max_spans_per_request: config.max_spans_per_request,
        exporter,
        endpoint: config.endpoint.url(),
    });
    Ok(TRACING.get().expect("just set"))
}

/// Tracing, when it is on.
#[inline]
pub fn get() -> Option<&'static Tracing> {
    TRACING.get()
}

/// Nanoseconds since the Unix epoch, now.
#[inline]
pub fn now_unix_nano() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Tracing {
    /// Where spans go.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Spans waiting in the export queue now.
    pub fn queued_spans(&self) -> usize {
        self.exporter.queue.len()
    }

    /// An empty buffer to encode spans into, recycled when one is free.
    pub fn buffer(&self) -> Vec<u8> {
        self.exporter.queue.buffer()
    }

    /// Hands encoded spans to the exporter (dropped and counted when the queue is full).
    pub fn export(&self, chunk: Chunk) {
        self.exporter.queue.push(chunk);
    }

    /// Sends what is queued and stops the exporter thread, waiting at most `timeout`.
    /// Spans ended afterwards are dropped and counted.
    pub fn shutdown(&self, timeout: Duration) -> bool {
        self.exporter.shutdown(timeout)
    }

    /// The trace of a sampled request, which it joins or starts; None when the request is
    /// not sampled (nothing is recorded for it: the PHP thread makes a context only if PHP
    /// asks for one). `traceparent`: the request's one `traceparent` header (None when
    /// absent or repeated); `tracestate`: its `tracestate`, asked for only when the parent
    /// is valid. `start_unix_nano`: when the request arrived.
    pub fn start_request(
        &'static self,
        traceparent: Option<&[u8]>,
        tracestate: impl FnOnce() -> Option<String>,
        start_unix_nano: impl FnOnce() -> u64,
    ) -> Option<RequestTrace> {
        let parent = traceparent.and_then(parse_traceparent);
        let trace_id = parent.map_or_else(ids::new_trace_id, |p| p.trace_id);
        if !self.sampler.should_sample(parent.as_ref(), &trace_id) {
            return None;
        }
        let context = SpanContext {
            trace_id,
            span_id: ids::new_span_id(),
            flags: SAMPLED,
        };
        let server = {
            // Room for the server's attributes: no regrowth while they are added.
            let mut data = SpanData::with_capacity(SERVER_ATTRIBUTE_BYTES);
            data.trace_id = trace_id;
            data.span_id = context.span_id;
            data.parent = parent.map(|p| p.span_id);
            data.parent_remote = parent.is_some();
            data.flags = SAMPLED;
            data.kind = Kind::Server;
            data.start_unix_nano = start_unix_nano();
            if parent.is_some() {
                if let Some(state) = tracestate() {
                    data.trace_state = state;
                }
            }
            ServerSpan(Arc::new(ServerRecord {
                data: Mutex::new(data),
                tracing: self,
            }))
        };
        Some(RequestTrace {
            context,
            remote_parent: parent,
            server,
        })
    }
}

/// What the HTTP server's attributes of a span usually take, encoded.
const SERVER_ATTRIBUTE_BYTES: usize = 640;

/// A sampled request's place in a trace.
#[derive(Clone)]
pub struct RequestTrace {
    /// The server span's context: what outgoing calls name as their parent.
    pub context: SpanContext,
    /// The caller's context, from `traceparent`.
    pub remote_parent: Option<SpanContext>,
    /// The request's server span.
    pub server: ServerSpan,
}

/// A request's server span, shared by whoever handles the request (the HTTP side, the
/// PHP thread). Each calls [`ServerSpan::end_now`] when done with it; the span's end is
/// the latest of those, and it is encoded and queued when the last clone is dropped.
#[derive(Clone)]
pub struct ServerSpan(Arc<ServerRecord>);

struct ServerRecord {
    data: Mutex<SpanData>,
    tracing: &'static Tracing,
}

impl ServerSpan {
    /// Changes the span (name, attributes, events, status).
    pub fn with<R>(&self, f: impl FnOnce(&mut SpanData, &Limits) -> R) -> R {
        let limits = self.0.tracing.limits;
        f(&mut self.0.data.lock().unwrap(), &limits)
    }

    /// This holder is done: the span ends now unless another holder ends it later.
    pub fn end_now(&self) {
        self.finish(|_, _| ());
    }

    /// [`ServerSpan::with`] and [`ServerSpan::end_now`] under one lock.
    pub fn finish<R>(&self, f: impl FnOnce(&mut SpanData, &Limits) -> R) -> R {
        let limits = self.0.tracing.limits;
        let now = now_unix_nano();
        let mut data = self.0.data.lock().unwrap();
        let r = f(&mut data, &limits);
        data.end_unix_nano = data.end_unix_nano.max(now);
        r
    }

    /// The server span's id.
    pub fn span_id(&self) -> SpanId {
        self.0.data.lock().unwrap().span_id
    }
}

impl Drop for ServerRecord {
    fn drop(&mut self) {
        let data = self.data.get_mut().unwrap_or_else(|e| e.into_inner());
        if data.end_unix_nano == 0 {
            data.end_unix_nano = now_unix_nano();
        }
        let mut bytes = self.tracing.buffer();
        data.encode_into(&mut bytes);
        self.tracing.export(Chunk { bytes, spans: 1 });
    }
}
