//! Runs a PHP script for an HTTP request: turns the hyper request into a
//! `worker::ScriptRequest`, streams the body in, and streams PHP's output back out.
//!
//! Output is buffered on the PHP thread until it reaches [`STREAM_THRESHOLD`], the script
//! calls `flush()`, or the script ends. A response that ends first goes out in one piece
//! with a Content-Length; anything longer or flushed is streamed through a small bounded
//! channel, so a 100 MB response never sits whole in memory and a slow client slows the
//! script down instead of growing a buffer.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use worker::{
    CgiRequest, Disconnected, Engine, Placement, ResponseHead, ResponseSink, ScriptRequest,
    ServerName, Target, STALLED_AFTER,
};

use crate::body::{self, ResponseBody};
use crate::peer::{strip_port, Connection};

/// Output up to this size is sent as one response with a Content-Length.
const STREAM_THRESHOLD: usize = 64 * 1024;
/// Chunks in flight between a PHP thread and its client.
const STREAM_DEPTH: usize = 8;
/// Request body chunks in flight between the client and a PHP thread.
const BODY_DEPTH: usize = 4;

/// What every PHP request shares: the engine, the thread permits and the limits.
pub struct PhpRunner {
    pub engine: Engine,
    /// Permits per pool: what may be in a pool at once. A request waits for one here, and
    /// then possibly in the pool's queue, up to `max_wait` in all before a 503.
    pub permits: PoolPermits,
    pub max_wait: Duration,
    pub max_body_size: u64,
    /// Longest wait for the next piece of a request body (slowloris on the body).
    pub body_timeout: Duration,
    /// Longest a PHP thread waits for the client to take streamed output.
    pub send_timeout: Duration,
    pub env: Arc<[(std::ffi::CString, std::ffi::CString)]>,
    pub server_name: Option<Arc<str>>,
    /// `--sendfile-dir`: PHP may answer with a file from there (X-Sendfile).
    pub sendfile: Option<crate::sendfile::Sendfile>,
}

/// What may be in each pool at once ([`Engine::max_in_flight`]: about three requests per
/// thread its ceiling allows; requests past the threads running now wait in the engine's
/// queue, which is what makes an autoscaling pool grow), for the classic pool and each
/// worker.
pub struct PoolPermits {
    classic: Arc<Semaphore>,
    workers: Vec<Arc<Semaphore>>,
}

impl PoolPermits {
    /// Sized from the running engine's pools.
    pub fn for_engine(engine: &Engine, workers: usize) -> PoolPermits {
        let permits = |target| Arc::new(Semaphore::new(engine.max_in_flight(target)));
        PoolPermits {
            classic: permits(Target::Classic),
            workers: (0..workers).map(|i| permits(Target::Worker(i))).collect(),
        }
    }

    /// The permits of `target`'s pool.
    pub fn of(&self, target: Target) -> &Arc<Semaphore> {
        match target {
            Target::Classic => &self.classic,
            Target::Worker(i) => &self.workers[i],
        }
    }
}

/// Called (once) when the PHP side gives up on a client that stopped reading a
/// streamed response: hyper holds that response's body until the client reads again,
/// which may be never, so the connection must not count it as a request in flight
/// (`serve/connection.rs` then lets its idle timeout close the connection and free what
/// it holds).
#[derive(Clone)]
pub struct OnStall(pub Arc<dyn Fn() + Send + Sync>);

/// The script and the URL parts routing decided.
pub struct Script {
    /// The document root it was routed in (the release it runs from).
    pub document_root: Arc<str>,
    pub filename: PathBuf,
    pub script_name: String,
    pub path_info: String,
    pub document_uri: String,
}

impl PhpRunner {
    pub async fn run(
        &self,
        req: Request<Incoming>,
        conn: &Connection,
        script: Script,
        target: Target,
    ) -> Response<ResponseBody> {
        self.run_with_router(req, conn, script, target, None)
            .await
            .unwrap_or_else(|| {
                body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            })
    }

    /// [`PhpRunner::run`] with a `php -S` router script running first (see
    /// `ScriptRequest::router`). None: the router declined a request whose script is the
    /// router itself (a static file or nothing), which the caller then answers.
    pub async fn run_with_router(
        &self,
        req: Request<Incoming>,
        conn: &Connection,
        script: Script,
        target: Target,
        router: Option<std::path::PathBuf>,
    ) -> Option<Response<ResponseBody>> {
        let declared_length = req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared_length.is_some_and(|n| n > self.max_body_size) {
            return Some(body::text_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large",
            ));
        }

        // A free permit is the common case: take it without arming a timer. `wait_started`
        // starts the `max_wait` clock once the request has to wait, here or in the queue.
        let semaphore = self.permits.of(target);
        let mut wait_started = None;
        let permit = match semaphore.clone().try_acquire_owned() {
            Ok(permit) => {
                crate::metrics::thread_acquired(Duration::ZERO);
                Ok(permit)
            }
            Err(_) => {
                let _queued = crate::metrics::Queued::enter(target.pool_index());
                let waiting = *wait_started.insert(Instant::now());
                match tokio::time::timeout(self.max_wait, semaphore.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => {
                        crate::metrics::thread_acquired(waiting.elapsed());
                        Ok(permit)
                    }
                    _ => {
                        crate::metrics::thread_wait_timed_out();
                        Err(())
                    }
                }
            }
        };
        let Ok(permit) = permit else {
            return Some(all_threads_busy());
        };

        let (mut parts, incoming) = req.into_parts();
        let interim = parts.extensions.remove::<crate::interim::Hints>();
        let on_stall = parts.extensions.remove::<OnStall>();
        let trace = parts.extensions.remove::<ferrophp_trace::RequestTrace>();
        if let Some(trace) = &trace {
            crate::traces::php_route(trace, &parts.method, &script.script_name);
        }
        // Set when the body breaks off (malformed chunk, reset stream, client gone) or a
        // body without Content-Length turns out to exceed the limit: PHP then saw a
        // truncated body, so the response must not look like a normal one.
        let mut body_state = BodyState::default();
        // Not only Content-Length/Transfer-Encoding: an HTTP/2 body may come as DATA
        // frames with neither header, and only the stream's end says there is none.
        let has_body = declared_length.is_some_and(|n| n > 0)
            || parts.headers.contains_key(http::header::TRANSFER_ENCODING)
            || !http_body::Body::is_end_stream(&incoming);
        let body: Box<dyn Read + Send> = if has_body {
            let (tx, rx) = mpsc::channel(BODY_DEPTH);
            tokio::spawn(feed_body(
                incoming,
                tx,
                self.max_body_size,
                self.body_timeout,
                body_state.share(),
            ));
            Box::new(BodyReader {
                rx,
                current: Bytes::new(),
                failed: None,
            })
        } else {
            Box::new(io::empty())
        };

        drop_ambiguous_headers(&mut parts.headers);
        let sendfile = self
            .sendfile
            .as_ref()
            .map(|s| (s, s.prepare_request(&parts.method, &mut parts.headers)));
        let server_name = server_name(
            &parts.headers,
            &parts.uri,
            self.server_name.as_ref(),
            conn.local_addr,
        );
        let cgi = CgiRequest {
            method: parts.method,
            // Moved, not copied: REQUEST_URI and QUERY_STRING are read from it in place.
            target: parts.uri.into(),
            version: parts.version,
            headers: parts.headers,
            remote_addr: conn.remote_addr,
            local_addr: conn.local_addr,
            https: conn.https,
            server_name,
            document_root: script.document_root,
            script_name: script.script_name,
            path_info: script.path_info,
            document_uri: script.document_uri,
            env: self.env.clone(),
        };

        let (reply_tx, reply_rx) = oneshot::channel();
        let sink = HttpSink {
            state: SinkState::Buffering {
                head: None,
                reply: reply_tx,
            },
            buf: BytesMut::new(),
            interim,
            stalled: None,
            on_stall,
            send_timeout: self.send_timeout,
            runtime: tokio::runtime::Handle::current(),
            _permit: permit,
        };
        let mut request = ScriptRequest::new(script.filename, Box::new(sink));
        request.cgi = Some(cgi);
        request.body = body;
        request.router = router;
        request.trace = trace;
        let placement = match self.engine.dispatch(target, request) {
            Ok(placement) => placement,
            Err(_) => {
                return Some(body::text_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable",
                ))
            }
        };
        let mut reply_rx = reply_rx;
        let reply = match placement {
            Placement::Running => reply_rx.await,
            // Queued behind busy threads: the timers are armed only now. If it is still
            // queued after STALLED_AFTER, the pool looks again whether its running threads
            // stalled (and an idle one should take it); at the deadline the request leaves
            // the queue unless a thread has taken it meanwhile.
            Placement::Queued(ticket) => {
                let deadline = wait_started.unwrap_or_else(Instant::now) + self.max_wait;
                let nudge_at = (Instant::now() + STALLED_AFTER).min(deadline);
                match tokio::time::timeout_at(nudge_at.into(), &mut reply_rx).await {
                    Ok(reply) => reply,
                    Err(_) => {
                        self.engine.nudge(target);
                        match tokio::time::timeout_at(deadline.into(), &mut reply_rx).await {
                            Ok(reply) => reply,
                            Err(_) if self.engine.withdraw(target, ticket) => {
                                crate::metrics::thread_wait_timed_out();
                                return Some(all_threads_busy());
                            }
                            Err(_) => reply_rx.await,
                        }
                    }
                }
            }
        };

        Some(match reply {
            Ok(Reply {
                body: ReplyBody::Declined,
                ..
            }) => return None,
            // The script read a body that broke off and answered anyway (it may ignore the
            // abort): refuse the request instead of passing that answer on.
            Ok(reply) => match body_state.get() {
                BodyFailure::None => {
                    let response = build_response(reply, body_state);
                    if let Some((sendfile, request)) = sendfile {
                        if let Some(file) = sendfile.intercept(&response, &request).await {
                            return Some(file);
                        }
                    }
                    response
                }
                BodyFailure::TooLarge => {
                    body::text_response(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large")
                }
                BodyFailure::Broken => body::text_response(StatusCode::BAD_REQUEST, "Bad Request"),
                BodyFailure::TimedOut => {
                    body::text_response(StatusCode::REQUEST_TIMEOUT, "Request Timeout")
                }
            },
            Err(_) => {
                body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            }
        })
    }
}

/// The 503 of a request that waited `max_wait` for a PHP thread.
fn all_threads_busy() -> Response<ResponseBody> {
    let mut resp = body::text_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: all PHP threads are busy",
    );
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// `SERVER_NAME`: the Host header without its port (sharing the header's bytes), else
/// the URI's host (an absolute-form target), the configured name, or the local address.
fn server_name(
    headers: &http::HeaderMap,
    uri: &http::Uri,
    configured: Option<&Arc<str>>,
    local_addr: SocketAddr,
) -> ServerName {
    if let Some(host) = headers.get(http::header::HOST) {
        if let Ok(text) = host.to_str() {
            return ServerName::host_prefix(host.clone(), strip_port(text).len());
        }
    }
    match (uri.host(), configured) {
        (Some(host), _) => ServerName::from(host),
        (None, Some(name)) => ServerName::from(name.clone()),
        (None, None) => ServerName::from(local_addr.ip().to_string()),
    }
}

/// The response head plus either the whole body or the stream that will carry it.
struct Reply {
    head: ResponseHead,
    body: ReplyBody,
}

enum ReplyBody {
    Complete(Bytes),
    Streaming {
        rx: mpsc::Receiver<Bytes>,
        /// Set by the PHP thread when it gave up on a client that stopped reading.
        stalled: Arc<AtomicBool>,
    },
    /// The router script declined the request (`ResponseSink::declined`).
    Declined,
}

fn build_response(reply: Reply, body_state: BodyState) -> Response<ResponseBody> {
    let complete = matches!(reply.body, ReplyBody::Complete(_));
    let body = match reply.body {
        ReplyBody::Complete(bytes) => body::full(bytes),
        ReplyBody::Declined => body::full(Bytes::new()),
        ReplyBody::Streaming { rx, stalled } => {
            let stream = futures_stream(rx, body_state, stalled);
            StreamBody::new(stream).boxed()
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(reply.head.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    // Made on the PHP thread (invalid lines already dropped there): taken as it is.
    let mut headers = reply.head.headers;
    // With the whole body at hand, hyper computes the length; a script's own value
    // could only disagree with it.
    if complete && headers.contains_key(http::header::CONTENT_LENGTH) {
        headers = without(headers, &http::header::CONTENT_LENGTH);
    }
    *response.headers_mut() = headers;
    response
}

/// `headers` without `name`, the others in their order (`HeaderMap::remove` would move
/// the last header into the removed one's place).
fn without(headers: http::HeaderMap, name: &HeaderName) -> http::HeaderMap {
    let mut kept = http::HeaderMap::with_capacity(headers.keys_len());
    let mut current = None;
    for (next, value) in headers {
        if let Some(next) = next {
            current = Some(next);
        }
        match &current {
            Some(current) if current != name => {
                kept.append(current.clone(), value);
            }
            _ => {}
        }
    }
    kept
}

/// Adapts the chunk receiver into the `Stream` of frames `StreamBody` wants. If the
/// request body broke off or overflowed the limit while the response was streaming, or
/// the PHP thread stopped waiting for a client that does not read, the body ends with an
/// error (the connection or stream is cut) instead of looking complete.
fn futures_stream(
    mut rx: mpsc::Receiver<Bytes>,
    body_state: BodyState,
    stalled: Arc<AtomicBool>,
) -> impl futures_core::Stream<Item = Result<Frame<Bytes>, io::Error>> + Send + Sync + 'static {
    futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|chunk| match chunk {
            Some(bytes) => Some(Ok(Frame::data(bytes))),
            None if body_state.get() != BodyFailure::None => Some(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request body incomplete",
            ))),
            None if stalled.load(Ordering::Acquire) => Some(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading the response",
            ))),
            None => None,
        })
    })
}

/// How a request body ended, shared by the task feeding it and the request's handler.
/// Shared state is only allocated for a request that has a body ([`BodyState::share`]):
/// without one nothing can fail, and the handler's state stays `None`.
#[derive(Default)]
struct BodyState(Option<Arc<AtomicU8>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum BodyFailure {
    None = 0,
    TooLarge = 1,
    /// Malformed framing, a reset stream or a client gone mid-body.
    Broken = 2,
    /// No body bytes for the body timeout.
    TimedOut = 3,
}

impl BodyState {
    /// A handle on the same state, for the task feeding the body.
    fn share(&mut self) -> BodyState {
        BodyState(Some(self.0.get_or_insert_with(Default::default).clone()))
    }

    fn set(&self, failure: BodyFailure) {
        if let Some(state) = &self.0 {
            state.store(failure as u8, Ordering::Release);
        }
    }

    fn get(&self) -> BodyFailure {
        match self
            .0
            .as_ref()
            .map_or(0, |state| state.load(Ordering::Acquire))
        {
            0 => BodyFailure::None,
            1 => BodyFailure::TooLarge,
            3 => BodyFailure::TimedOut,
            _ => BodyFailure::Broken,
        }
    }
}

/// Removes request headers whose names could pass for another header once PHP turns them
/// into `$_SERVER` keys: `X_Forwarded_For` and `X-Forwarded-For` both become
/// `HTTP_X_FORWARDED_FOR`, so a client could spoof what a proxy in front of us set (and
/// `Content_Type` would pose as `HTTP_CONTENT_TYPE`); PHP also turns `.` into `_` in
/// variable names, so `X.Forwarded.For` would collide too. Like nginx's defaults
/// (`ignore_invalid_headers on`, `underscores_in_headers off`), only names made of
/// letters, digits and `-` are kept; hyper has already refused names that are not HTTP
/// tokens. Other names are rare: the common case costs one scan and no allocation.
pub(crate) fn drop_ambiguous_headers(headers: &mut http::HeaderMap) {
    let ambiguous = |name: &HeaderName| {
        !name
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !headers.keys().any(ambiguous) {
        return;
    }
    let names: Vec<HeaderName> = headers.keys().filter(|n| ambiguous(n)).cloned().collect();
    for name in names {
        tracing::debug!(header = %name, "dropping a request header with an ambiguous name");
        headers.remove(&name);
    }
}

/// Pulls the request body off the connection into the channel PHP reads from, enforcing
/// the body size limit on bodies without a Content-Length. A body that breaks off is
/// recorded in `state` before PHP can see the error.
///
/// hyper's header timeout ends with the head: without `idle` a client trickling its body
/// a byte a minute would hold a PHP thread (blocked in `read_post`) for as long as it
/// likes. Only waits on the client count; waiting for PHP to take a chunk does not.
async fn feed_body(
    mut incoming: Incoming,
    tx: mpsc::Sender<io::Result<Bytes>>,
    limit: u64,
    idle: Duration,
    state: BodyState,
) {
    let mut total = 0u64;
    loop {
        let frame = match tokio::time::timeout(idle, incoming.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(_) => {
                tracing::debug!("request body stalled for {idle:?}");
                state.set(BodyFailure::TimedOut);
                let _ = tx
                    .send(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "request body timed out",
                    )))
                    .await;
                return;
            }
        };
        let chunk = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue, // trailers
            },
            Err(e) => {
                tracing::debug!("request body broke off: {e}");
                state.set(BodyFailure::Broken);
                let _ = tx
                    .send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, e)))
                    .await;
                return;
            }
        };
        total += chunk.len() as u64;
        if total > limit {
            state.set(BodyFailure::TooLarge);
            let _ = tx
                .send(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "request body too large",
                )))
                .await;
            return;
        }
        if tx.send(Ok(chunk)).await.is_err() {
            return; // PHP stopped reading
        }
    }
}

/// `Read` over the body channel, for PHP's `read_post` on the PHP thread.
struct BodyReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    /// Once the body failed, every later read fails too: the feeding task is gone after
    /// sending its one error, and an empty channel must not read as a clean end of body.
    failed: Option<io::ErrorKind>,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            if let Some(kind) = self.failed {
                return Err(io::Error::new(kind, "request body incomplete"));
            }
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => {
                    self.failed = Some(e.kind());
                    return Err(e);
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// The PHP thread's end of a response (see the module doc for the buffering policy).
struct HttpSink {
    state: SinkState,
    buf: BytesMut,
    /// Where 1xx responses go (HTTP/1.1 and HTTP/2 requests; see `interim.rs`).
    interim: Option<crate::interim::Hints>,
    /// Shared with the response stream once it streams: set when `send_timeout` ran
    /// out. A response sent whole never needs it (and costs no allocation for it).
    stalled: Option<Arc<AtomicBool>>,
    on_stall: Option<OnStall>,
    send_timeout: Duration,
    /// For a timed wait on the stream channel from this (non-tokio) thread.
    runtime: tokio::runtime::Handle,
    /// The PHP thread this request holds. The sink lives on that thread until the script
    /// ends (which can be long after the response, with fastcgi_finish_request), so
    /// dropping it there frees the thread for the next request without another task.
    _permit: OwnedSemaphorePermit,
}

enum SinkState {
    Buffering {
        head: Option<ResponseHead>,
        reply: oneshot::Sender<Reply>,
    },
    Streaming(mpsc::Sender<Bytes>),
    Done,
    /// The router declined: what PHP sends is dropped (the caller answers).
    Declined,
}

impl HttpSink {
    /// Sends the head and switches to streaming (a no-op when already streaming).
    fn start_streaming(&mut self) -> Result<(), Disconnected> {
        if let SinkState::Buffering { .. } = self.state {
            let SinkState::Buffering { head, reply } =
                std::mem::replace(&mut self.state, SinkState::Done)
            else {
                unreachable!()
            };
            let (tx, rx) = mpsc::channel(STREAM_DEPTH);
            let head = head.unwrap_or_default();
            let stalled = self.stalled.get_or_insert_with(Default::default).clone();
            reply
                .send(Reply {
                    head,
                    body: ReplyBody::Streaming { rx, stalled },
                })
                .map_err(|_| Disconnected)?;
            self.state = SinkState::Streaming(tx);
        }
        Ok(())
    }

    fn send_buffered(&mut self) -> Result<(), Disconnected> {
        if let SinkState::Streaming(tx) = &self.state {
            if !self.buf.is_empty() {
                let chunk = self.buf.split().freeze();
                if self.send_chunk(tx, chunk).is_err() {
                    // The stream must not end as if complete: mark it before the sender
                    // is dropped.
                    self.mark_stalled();
                    self.state = SinkState::Done;
                    return Err(Disconnected);
                }
            }
        }
        Ok(())
    }

    fn mark_stalled(&self) {
        if let Some(stalled) = &self.stalled {
            stalled.store(true, Ordering::Release);
        }
        if let Some(OnStall(hook)) = &self.on_stall {
            hook();
        }
    }

    /// Hands a chunk to the response stream, waiting at most `send_timeout` for room: a
    /// client that stops reading (a closed HTTP/2 flow-control window, a full TCP
    /// window) would otherwise hold this PHP thread forever.
    fn send_chunk(&self, tx: &mpsc::Sender<Bytes>, chunk: Bytes) -> Result<(), ()> {
        let chunk = match tx.try_send(chunk) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(()),
            Err(mpsc::error::TrySendError::Full(chunk)) => chunk,
        };
        // The timer must be made inside the runtime: this is a PHP thread.
        let wait = async { tokio::time::timeout(self.send_timeout, tx.send(chunk)).await };
        match self.runtime.block_on(wait) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(()),
            Err(_) => {
                tracing::debug!(
                    "client took no output for {:?}: response cut",
                    self.send_timeout
                );
                Err(())
            }
        }
    }
}

impl ResponseSink for HttpSink {
    fn send_informational(&mut self, head: ResponseHead) -> Result<(), Disconnected> {
        // Only before the final head: afterwards a 1xx would land inside the response.
        if let (SinkState::Buffering { .. }, Some(interim)) = (&self.state, &self.interim) {
            interim.send(&head);
        }
        Ok(())
    }

    fn send_head(&mut self, new_head: ResponseHead) -> Result<(), Disconnected> {
        match &mut self.state {
            SinkState::Buffering { head, .. } => {
                *head = Some(new_head);
                Ok(())
            }
            SinkState::Streaming(_) | SinkState::Declined => Ok(()),
            SinkState::Done => Err(Disconnected),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected> {
        match self.state {
            SinkState::Done => return Err(Disconnected),
            SinkState::Declined => return Ok(()),
            _ => {}
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= STREAM_THRESHOLD {
            self.start_streaming()?;
            self.send_buffered()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Disconnected> {
        match self.state {
            // Nothing to show yet: PHP flushes before any output exists at times.
            SinkState::Buffering { head: None, .. } if self.buf.is_empty() => Ok(()),
            SinkState::Declined => Ok(()),
            SinkState::Done => Err(Disconnected),
            _ => {
                self.start_streaming()?;
                self.send_buffered()
            }
        }
    }

    fn finish(&mut self) {
        match std::mem::replace(&mut self.state, SinkState::Done) {
            SinkState::Buffering { head, reply } => {
                // The buffer itself, not a split of it: a split shares it, which costs
                // an allocation, and the sink writes nothing more.
                let body = ReplyBody::Complete(std::mem::take(&mut self.buf).freeze());
                let _ = reply.send(Reply {
                    head: head.unwrap_or_default(),
                    body,
                });
            }
            SinkState::Streaming(tx) => {
                if !self.buf.is_empty() {
                    let chunk = std::mem::take(&mut self.buf).freeze();
                    if self.send_chunk(&tx, chunk).is_err() {
                        self.mark_stalled();
                    }
                }
            }
            SinkState::Done | SinkState::Declined => {}
        }
    }

    fn abandon(mut self: Box<Self>) {
        match std::mem::replace(&mut self.state, SinkState::Done) {
            SinkState::Buffering { reply, .. } => {
                let mut head = ResponseHead {
                    status: StatusCode::GATEWAY_TIMEOUT.as_u16(),
                    headers: http::HeaderMap::new(),
                };
                head.headers.insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                let _ = reply.send(Reply {
                    head,
                    body: ReplyBody::Complete(Bytes::from_static(
                        b"Gateway Timeout: the request ran past its deadline\n",
                    )),
                });
            }
            // Already under way: cut, never ended as if complete.
            SinkState::Streaming(tx) => {
                self.mark_stalled();
                drop(tx);
            }
            SinkState::Done | SinkState::Declined => {}
        }
        // Dropping the sink releases the pool permit it held.
    }

    fn declined(&mut self) {
        // Only while nothing left and nothing is buffered: output the router already
        // produced stays its response.
        if !matches!(self.state, SinkState::Buffering { .. }) || !self.buf.is_empty() {
            return;
        }
        if let SinkState::Buffering { reply, .. } =
            std::mem::replace(&mut self.state, SinkState::Declined)
        {
            let _ = reply.send(Reply {
                head: ResponseHead::default(),
                body: ReplyBody::Declined,
            });
        }
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        self.finish();
    }
}
