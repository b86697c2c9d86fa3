//! The export side: a bounded queue of encoded spans that request threads push into (one
//! lock, no I/O, no allocation but a recycled buffer), and one OS thread,
//! `ferrophp-otlp`, that drains it in batches and POSTs each batch to the collector as an
//! `ExportTraceServiceRequest` (OTLP/HTTP, `application/x-protobuf`).
//!
//! A slow or unreachable collector only delays that thread: the queue fills, and spans
//! pushed into a full queue are dropped and counted (`stats::SPANS_DROPPED_QUEUE_FULL`),
//! which costs the pushing request one lock. A failed export drops its batch (counted);
//! one retry happens only on a kept-alive connection the collector had closed. At
//! shutdown the thread sends everything queued before it stops.
//!
//! ```text
//! message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
//! message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
//! message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
//! message Resource { repeated KeyValue attributes = 1; }
//! message InstrumentationScope { string name = 1; string version = 2; }
//! message ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1; }
//! message ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2; }
//! ```

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ferrophp_metrics::wire::{put_nested, put_tag, put_varint, Field, Reader, LEN};

use crate::config::{Batch, Config, Endpoint};
use crate::span::{AttrValue, Limits, SpanData, Value};
use crate::stats;

/// Most bytes of encoded spans the queue holds, whatever the span count: a few spans
/// with huge attributes must not hold unbounded memory either.
const MAX_QUEUE_BYTES: usize = 64 << 20;
/// Recycled buffers kept, and the largest kept (bigger ones are freed).
const FREE_BUFFERS: usize = 256;
const MAX_RECYCLED_CAPACITY: usize = 64 << 10;

/// Encoded spans (a run of `ScopeSpans.spans` fields) and how many.
pub struct Chunk {
    /// The encoded `spans` fields, back to back.
    pub bytes: Vec<u8>,
    /// How many spans `bytes` holds.
    pub spans: u32,
}

struct State {
    chunks: VecDeque<Chunk>,
    spans: usize,
    bytes: usize,
    /// Set by shutdown: the thread sends what is queued and ends; pushes are refused.
    closing: bool,
    free: Vec<Vec<u8>>,
}

pub(crate) struct Queue {
    state: Mutex<State>,
    wake: Condvar,
    batch: Batch,
}

impl Queue {
    fn new(batch: Batch) -> Queue {
        Queue {
            state: Mutex::new(State {
                chunks: VecDeque::new(),
                spans: 0,
                bytes: 0,
                closing: false,
                free: Vec::new(),
            }),
            wake: Condvar::new(),
            batch,
        }
    }

    /// An empty buffer, recycled when one is free.
    pub(crate) fn buffer(&self) -> Vec<u8> {
        self.state
            .lock()
            .unwrap()
            .free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(1024))
    }

    fn recycle(state: &mut State, mut buf: Vec<u8>) {
        if state.free.len() < FREE_BUFFERS && buf.capacity() <= MAX_RECYCLED_CAPACITY {
            buf.clear();
            state.free.push(buf);
        }
    }

    /// Queues `chunk`, or drops and counts it when the queue is full or closed.
    pub(crate) fn push(&self, chunk: Chunk) {
        if chunk.spans == 0 {
            if chunk.bytes.capacity() > 0 {
                Self::recycle(&mut self.state.lock().unwrap(), chunk.bytes);
            }
            return;
        }
        let mut state = self.state.lock().unwrap();
        if state.closing {
            stats::SPANS_DROPPED_SHUTDOWN.fetch_add(chunk.spans as u64, Ordering::Relaxed);
            Self::recycle(&mut state, chunk.bytes);
            return;
        }
        if state.spans + chunk.spans as usize > self.batch.max_queue_size
            || state.bytes + chunk.bytes.len() > MAX_QUEUE_BYTES
        {
            stats::SPANS_DROPPED_QUEUE_FULL.fetch_add(chunk.spans as u64, Ordering::Relaxed);
            Self::recycle(&mut state, chunk.bytes);
            return;
        }
        state.spans += chunk.spans as usize;
        state.bytes += chunk.bytes.len();
        state.chunks.push_back(chunk);
        if state.spans >= self.batch.max_export_batch_size {
            self.wake.notify_one();
        }
    }

    /// Spans waiting now.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().unwrap().spans
    }

    /// Waits for a batch (full, or the oldest span waited `schedule_delay`, or closing)
    /// and takes it. None when closing and nothing is left.
    fn take_batch(&self, last_export: &mut Instant, out: &mut Vec<Chunk>) -> bool {
        let mut state = self.state.lock().unwrap();
        loop {
            let due = last_export.elapsed() >= self.batch.schedule_delay;
            if state.spans >= self.batch.max_export_batch_size
                || (state.spans > 0 && (due || state.closing))
            {
                break;
            }
            if state.closing {
                return false;
            }
            if due {
                // Nothing waited that long: start the clock at the next span.
                *last_export = Instant::now();
            }
            let wait = self
                .batch
                .schedule_delay
                .saturating_sub(last_export.elapsed())
                .max(Duration::from_millis(1));
            state = self.wake.wait_timeout(state, wait).unwrap().0;
        }
        let mut spans = 0;
        while let Some(chunk) = state.chunks.front() {
            if spans > 0 && spans + chunk.spans as usize > self.batch.max_export_batch_size {
                break;
            }
            let chunk = state.chunks.pop_front().unwrap();
            spans += chunk.spans as usize;
            state.spans -= chunk.spans as usize;
            state.bytes -= chunk.bytes.len();
            out.push(chunk);
        }
        *last_export = Instant::now();
        true
    }

    fn close(&self) {
        self.state.lock().unwrap().closing = true;
        self.wake.notify_all();
    }
}

/// The `Resource` and `InstrumentationScope` fields every request starts with.
fn envelope_parts(resource: &[(String, String)]) -> (Vec<u8>, Vec<u8>) {
    let limits = Limits {
        attributes: u32::MAX,
        ..Limits::default()
    };
    // Resource { attributes = 1 }: encoded with the span's KeyValue writer through a
    // scratch span (its attributes are field 9; rewritten as field 1 below).
    let mut scratch = SpanData::default();
    for (k, v) in resource {
        scratch.push_attribute(k.as_str(), AttrValue::One(Value::Text(v)), &limits);
    }
    let mut encoded = Vec::new();
    scratch.encode_into(&mut encoded);
    let mut resource_field = Vec::new();
    put_nested(&mut resource_field, 1, |o| {
        // Copy each `attributes` (9) field of the scratch span as field 1.
        let mut r = Reader::new(&encoded);
        if let Ok(Some((_, Field::Len(span)))) = r.next_field() {
            let mut r = Reader::new(span);
            while let Ok(Some((f, v))) = r.next_field() {
                if let (9, Field::Len(kv)) = (f, v) {
                    put_tag(o, 1, LEN);
                    put_varint(o, kv.len() as u64);
                    o.extend_from_slice(kv);
                }
            }
        }
    });
    let mut scope_field = Vec::new();
    put_nested(&mut scope_field, 1, |o| {
        put_tag(o, 1, LEN);
        put_varint(o, 8);
        o.extend_from_slice(b"ferrophp");
        let version = env!("CARGO_PKG_VERSION");
        put_tag(o, 2, LEN);
        put_varint(o, version.len() as u64);
        o.extend_from_slice(version.as_bytes());
    });
    (resource_field, scope_field)
}

fn varint_len(v: u64) -> usize {
    let mut n = 1;
    let mut v = v >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// The `ExportTraceServiceRequest` for `chunks`, into `out`.
fn encode_request(out: &mut Vec<u8>, resource: &[u8], scope: &[u8], chunks: &[Chunk]) {
    out.clear();
    let spans: usize = chunks.iter().map(|c| c.bytes.len()).sum();
    let scope_spans = scope.len() + spans;
    let resource_spans = resource.len() + 1 + varint_len(scope_spans as u64) + scope_spans;
    put_tag(out, 1, LEN);
    put_varint(out, resource_spans as u64);
    out.extend_from_slice(resource);
    put_tag(out, 2, LEN);
    put_varint(out, scope_spans as u64);
    out.extend_from_slice(scope);
    for c in chunks {
        out.extend_from_slice(&c.bytes);
    }
}

/// `partial_success.rejected_spans` of an `ExportTraceServiceResponse` (0 if absent).
fn rejected_spans(body: &[u8]) -> u64 {
    let mut r = Reader::new(body);
    while let Ok(Some((f, v))) = r.next_field() {
        if let (1, Field::Len(partial)) = (f, v) {
            let mut p = Reader::new(partial);
            while let Ok(Some((f, v))) = p.next_field() {
                if let (1, Field::Varint(n)) = (f, v) {
                    return n;
                }
            }
        }
    }
    0
}

/// One keep-alive HTTP/1.1 connection to the collector, made when first needed.
struct Client {
    endpoint: Endpoint,
    head: String,
    timeout: Duration,
    conn: Option<BufReader<TcpStream>>,
}

/// How a POST ended.
enum Posted {
    /// 2xx, with the response body.
    Ok(Vec<u8>),
    Failed(String),
}

impl Client {
    fn new(config: &Config) -> Client {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\n\
             User-Agent: ferrophp/{}\r\n",
            config.endpoint.path,
            config.endpoint.authority,
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in &config.headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        Client {
            endpoint: config.endpoint.clone(),
            head,
            timeout: config.timeout.min(config.batch.export_timeout),
            conn: None,
        }
    }

    fn connect(&self) -> std::io::Result<BufReader<TcpStream>> {
        let deadline = Instant::now() + self.timeout;
        let mut last = None;
        for addr in self.endpoint.address.to_socket_addrs()? {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(&addr, left) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Ok(BufReader::new(s));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
    }

    fn post(&mut self, body: &[u8]) -> Posted {
        let reused = self.conn.is_some();
        match self.try_post(body) {
            Ok(posted) => posted,
            // The collector may close an idle kept-alive connection: once more on a new one.
            Err(_) if reused => {
                self.conn = None;
                self.try_post(body)
                    .unwrap_or_else(|e| Posted::Failed(e.to_string()))
            }
            Err(e) => {
                self.conn = None;
                Posted::Failed(e.to_string())
            }
        }
    }

    fn try_post(&mut self, body: &[u8]) -> std::io::Result<Posted> {
        if self.conn.is_none() {
            self.conn = Some(self.connect()?);
        }
        let deadline = Instant::now() + self.timeout;
        let conn = self.conn.as_mut().unwrap();
        let left = || {
            Some(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            )
        };
        conn.get_ref().set_write_timeout(left())?;
        let mut request = Vec::with_capacity(self.head.len() + 32 + body.len());
        request.extend_from_slice(self.head.as_bytes());
        request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);
        conn.get_mut().write_all(&request)?;
        conn.get_ref().set_read_timeout(left())?;
        let mut line = String::new();
        if conn.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let (mut length, mut chunked, mut close) = (None, false, line.starts_with("HTTP/1.0"));
        loop {
            line.clear();
            if conn.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let (k, v) = (k.trim(), v.trim());
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.parse::<usize>().ok();
                } else if k.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = v.eq_ignore_ascii_case("chunked");
                } else if k.eq_ignore_ascii_case("connection") {
                    close = v.eq_ignore_ascii_case("close");
                }
            }
        }
        let mut answer = Vec::new();
        if chunked {
            loop {
                line.clear();
                conn.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| std::io::Error::other("bad chunk size"))?;
                if size == 0 {
                    // Trailers, then the blank line.
                    loop {
                        line.clear();
                        if conn.read_line(&mut line)? == 0 || line.trim().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let at = answer.len();
                answer.resize(at + size, 0);
                conn.read_exact(&mut answer[at..])?;
                line.clear();
                conn.read_line(&mut line)?;
            }
        } else if let Some(n) = length {
            answer.resize(n.min(1 << 20), 0);
            conn.read_exact(&mut answer)?;
        } else {
            // No length: the body ends with the connection.
            conn.read_to_end(&mut answer)?;
            close = true;
        }
        if close {
            self.conn = None;
        }
        Ok(if (200..300).contains(&status) {
            Posted::Ok(answer)
        } else {
            Posted::Failed(format!("collector answered {status}"))
        })
    }
}

/// The exporter thread's loop: take a batch, send it, count the outcome; at close, send
/// the rest and return.
fn run(queue: Arc<Queue>, config: Config) {
    let (resource, scope) = envelope_parts(&config.resource);
    let mut client = Client::new(&config);
    let mut last_export = Instant::now();
    let mut batch = Vec::new();
    let mut body = Vec::new();
    let mut failing = false;
    while queue.take_batch(&mut last_export, &mut batch) {
        let spans: u64 = batch.iter().map(|c| c.spans as u64).sum();
        encode_request(&mut body, &resource, &scope, &batch);
        match client.post(&body) {
            Posted::Ok(answer) => {
                let rejected = rejected_spans(&answer).min(spans);
                stats::EXPORTS_SUCCEEDED.fetch_add(1, Ordering::Relaxed);
                stats::SPANS_EXPORTED.fetch_add(spans - rejected, Ordering::Relaxed);
                stats::SPANS_REJECTED.fetch_add(rejected, Ordering::Relaxed);
                if failing {
                    tracing::info!("trace export to {} works again", config.endpoint.url());
                    failing = false;
                }
            }
            Posted::Failed(why) => {
                stats::EXPORTS_FAILED.fetch_add(1, Ordering::Relaxed);
                stats::SPANS_DROPPED_EXPORT_FAILED.fetch_add(spans, Ordering::Relaxed);
                // Once per outage at warn; each failure at debug.
                if !failing {
                    tracing::warn!(
                        "trace export to {} failed ({why}); dropping spans until it works \
                         (ferrophp_trace_spans_dropped_total counts them)",
                        config.endpoint.url()
                    );
                    failing = true;
                } else {
                    tracing::debug!("trace export failed: {why}");
                }
            }
        }
        let mut state = queue.state.lock().unwrap();
        for chunk in batch.drain(..) {
            Queue::recycle(&mut state, chunk.bytes);
        }
    }
}

/// The running exporter: its queue and its thread.
pub(crate) struct Exporter {
    pub(crate) queue: Arc<Queue>,
    thread: Mutex<Option<(std::thread::JoinHandle<()>, std::sync::mpsc::Receiver<()>)>>,
}

impl Exporter {
    pub(crate) fn start(config: &Config) -> std::io::Result<Exporter> {
        let queue = Arc::new(Queue::new(config.batch));
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let q = queue.clone();
        let config = config.clone();
        let thread = std::thread::Builder::new()
            .name("ferrophp-otlp".into())
            .spawn(move || {
                run(q, config);
                let _ = done_tx.send(());
            })?;
        Ok(Exporter {
            queue,
            thread: Mutex::new(Some((thread, done_rx))),
        })
    }

    /// Sends everything queued and stops the thread, waiting at most `timeout`. True
    /// when the thread finished in time.
    pub(crate) fn shutdown(&self, timeout: Duration) -> bool {
        self.queue.close();
        let Some((thread, done)) = self.thread.lock().unwrap().take() else {
            return true;
        };
        if done.recv_timeout(timeout).is_ok() {
            let _ = thread.join();
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lengths_match_the_nested_messages() {
        let (resource, scope) = envelope_parts(&[("service.name".into(), "s".repeat(300))]);
        let mut span = SpanData::default();
        span.set_name(b"x");
        let mut chunk = Vec::new();
        for _ in 0..50 {
            span.encode_into(&mut chunk);
        }
        let chunks = [Chunk {
            bytes: chunk,
            spans: 50,
        }];
        let mut out = Vec::new();
        encode_request(&mut out, &resource, &scope, &chunks);
        // One resource_spans field spanning the whole request; inside it the resource and
        // one scope_spans field spanning the rest; inside that the scope and 50 spans.
        let mut r = Reader::new(&out);
        let Ok(Some((1, Field::Len(rs)))) = r.next_field() else {
            panic!()
        };
        assert_eq!(r.remaining(), 0);
        let mut r = Reader::new(rs);
        let Ok(Some((1, Field::Len(_)))) = r.next_field() else {
            panic!()
        };
        let Ok(Some((2, Field::Len(ss)))) = r.next_field() else {
            panic!()
        };
        assert_eq!(r.remaining(), 0);
        let mut r = Reader::new(ss);
        let Ok(Some((1, Field::Len(_)))) = r.next_field() else {
            panic!()
        };
        let mut spans = 0;
        while let Ok(Some((2, Field::Len(_)))) = r.next_field() {
            spans += 1;
        }
        assert_eq!(spans, 50);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let q = Queue::new(Batch {
            max_queue_size: 3,
            ..Batch::default()
        });
        let before = stats::SPANS_DROPPED_QUEUE_FULL.load(Ordering::Relaxed);
        for _ in 0..5 {
            q.push(Chunk {
                bytes: vec![1, 2, 3],
                spans: 1,
            });
        }
        assert_eq!(q.len(), 3);
        assert!(stats::SPANS_DROPPED_QUEUE_FULL.load(Ordering::Relaxed) - before >= 2);
    }

    #[test]
    fn rejected_spans_are_read_from_a_partial_success() {
        // partial_success { rejected_spans: 3, error_message: "x" }
        let body = [0x0a, 0x05, 0x08, 0x03, 0x12, 0x01, b'x'];
        assert_eq!(rejected_spans(&body), 3);
        assert_eq!(rejected_spans(&[]), 0);
    }
}
