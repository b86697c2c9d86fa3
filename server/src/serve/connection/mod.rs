//! HTTP/1.1 and HTTP/2 on one byte stream (plain TCP or TLS alike; the listener did the
//! handshake): hyper's auto builder with its limits, each request handed to `dispatch`
//! as an `http::Request<RequestBody>` with the protocol's 1xx handle ([`interim`]) in its
//! extensions, [`FirstBytesDeadline`] (first bytes and idle timeouts, fed by
//! [`Activity`]), and the graceful-shutdown watcher. `h3.rs`: HTTP/3 on one QUIC
//! connection, into the same `dispatch`.

pub(super) mod h3;
mod interim;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::io::{AsyncRead, AsyncWrite};

use super::app::App;
use super::dispatch::handle;
use crate::body::{BodyError, BodyErrorKind, RequestBody, ResponseBody};
use crate::config::ServeConfig;
use crate::interim::Hints;
use crate::peer::Connection;
use crate::php_bridge::OnStall;
use interim::{Http2Informational, Interim, InterimIo};

/// Streams one HTTP/2 connection may have open; more are refused (REFUSED_STREAM). Each
/// open stream is at most one PHP request waiting for a thread (or 503 after max_wait).
const H2_MAX_CONCURRENT_STREAMS: u32 = 100;
/// Streams the client opened and reset before we took them, allowed at once before the
/// connection gets GOAWAY (h2's rapid-reset guard; h2's own default).
const H2_MAX_PENDING_RESETS: usize = 20;
/// Streams we reset because the client broke the protocol, before GOAWAY (hyper's default).
const H2_MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// What every HTTP/1.1 and HTTP/2 connection shares, whichever listener accepted it.
pub(super) struct Connections {
    pub(super) app: Arc<App>,
    pub(super) builder: auto::Builder<TokioExecutor>,
    /// For the TLS handshake and the first bytes of a request.
    pub(super) header_timeout: Duration,
    /// For a connection with no request in flight.
    pub(super) idle_timeout: Duration,
    /// The largest request head (HTTP/3's field section; hyper has its own copy).
    pub(super) max_header_size: usize,
    /// `Alt-Svc` for HTTP/1.1 and HTTP/2 responses over TLS when HTTP/3 is served.
    pub(super) alt_svc: Option<http::HeaderValue>,
    /// Cancelled when the server starts draining: HTTP/3 connections send GOAWAY (hyper's
    /// connections learn it from their graceful watcher).
    pub(super) draining: tokio_util::sync::CancellationToken,
}

/// The `Alt-Svc` value that sends browsers to HTTP/3 on `port` (RFC 7838), remembered
/// for a day (`ma`, as Caddy and nginx advertise).
pub(super) fn alt_svc(port: u16) -> http::HeaderValue {
    http::HeaderValue::from_str(&format!("h3=\":{port}\"; ma=86400"))
        .expect("a port is a valid header value")
}

/// hyper's builder with the server's limits. Keep-alive is off for the development
/// server (`dev`): php -S closes each connection after its response, and its test harnesses
/// read until the connection closes. The development server also writes header names in
/// Title-Case instead of hyper's lower case: php -S sends them as the script wrote them
/// (`X-Foo: 1`), and scripts read them back case-sensitively (`get_headers($url, true)`
/// keys, PHP's own `ext/standard/tests/url/get_headers_error_003.phpt`).
pub(super) fn http_builder(config: &ServeConfig, dev: bool) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(config.max_header_size)
        .keep_alive(!dev)
        .title_case_headers(dev);
    // hyper's and h2's defaults already bound the HTTP/2 floods (CVE-2023-44487 rapid
    // reset, CONTINUATION floods, streams reset by our own errors); they are spelled out
    // so that a dependency update cannot loosen them unnoticed. http_hostile.rs attacks
    // each one.
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(config.max_header_size as u32)
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .max_pending_accept_reset_streams(H2_MAX_PENDING_RESETS)
        .max_local_error_reset_streams(H2_MAX_LOCAL_ERROR_RESETS);
    builder
}

/// Serves HTTP/1.1 or HTTP/2 on `io` to the connection's end (or until graceful shutdown
/// ends it). `conn` says where it came from and whether it is TLS.
pub(super) async fn serve<T>(io: T, conn: Connection, shared: &Connections, watcher: Watcher)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = Arc::new(conn);
    let activity = Activity::new();
    // 1xx responses (103 Early Hints) for this connection's HTTP/1.1 requests.
    let interim = Arc::new(Interim::default());
    let http1_hints = Hints::new(interim.clone());
    let requests = activity.clone();
    let app = shared.app.clone();
    let alt_svc = shared.alt_svc.clone().filter(|_| conn.https);
    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let app = app.clone();
        let conn = conn.clone();
        let (mut parts, incoming) = req.into_parts();
        if parts.version == http::Version::HTTP_11 {
            parts.extensions.insert(http1_hints.clone());
        } else if let Some(sender) = parts.extensions.remove::<hyper::ext::InformationalSender>() {
            parts
                .extensions
                .insert(Hints::new(Arc::new(Http2Informational(sender))));
        }
        // Held until the response body is done (or dropped), so a long download or a
        // slow script never counts as idle; released early if PHP gives up on a client
        // that stopped reading.
        let in_flight = requests.begin();
        parts.extensions.insert(OnStall(in_flight.release_hook()));
        let req = http::Request::from_parts(parts, RequestBody::new(incoming, body_error));
        let alt_svc = alt_svc.clone();
        async move {
            let mut response = handle(&app, req, &conn).await;
            if let Some(alt_svc) = alt_svc {
                response
                    .headers_mut()
                    .entry(http::header::ALT_SVC)
                    .or_insert(alt_svc);
            }
            Ok::<_, Infallible>(response.map(|b| InFlightBody::new(b, in_flight)))
        }
    });
    let io = TokioIo::new(FirstBytesDeadline::new(
        InterimIo::new(io, interim),
        shared.header_timeout,
        shared.idle_timeout,
        activity,
    ));
    let served = shared.builder.serve_connection_with_upgrades(io, service);
    // An error ends this connection only.
    let _ = watcher.watch(served).await;
}

/// The kind of a request body's error from hyper: framing that breaks HTTP/1.1's rules
/// (a bad chunk size or terminator) is malformed; anything else (the connection closed
/// mid-body, an HTTP/2 stream reset or connection error) is the peer gone.
fn body_error(e: hyper::Error) -> BodyError {
    let mut source = std::error::Error::source(&e);
    let mut kind = BodyErrorKind::Reset;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput
            ) {
                kind = BodyErrorKind::Malformed;
            }
            break;
        }
        source = cause.source();
    }
    BodyError::new(kind, e)
}

/// Which requests of one connection are in flight, and since when none has been: what
/// the idle timeout of [`FirstBytesDeadline`] looks at.
#[derive(Clone)]
struct Activity(Arc<ActivityState>);

struct ActivityState {
    origin: Instant,
    in_flight: std::sync::atomic::AtomicUsize,
    /// Milliseconds after `origin` when the last request ended.
    idle_since_ms: std::sync::atomic::AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity(Arc::new(ActivityState {
            origin: Instant::now(),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            idle_since_ms: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    fn begin(&self) -> InFlight {
        self.0
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        InFlight(Arc::new(InFlightState {
            activity: self.0.clone(),
            released: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// When the connection may be closed as idle, if no request is in flight.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        use std::sync::atomic::Ordering;
        if self.0.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.0.idle_since_ms.load(Ordering::Acquire));
        Some(self.0.origin + since + idle)
    }
}

/// One request in flight; dropped when its response body is done or dropped.
struct InFlight(Arc<InFlightState>);

struct InFlightState {
    activity: Arc<ActivityState>,
    released: std::sync::atomic::AtomicBool,
}

impl InFlightState {
    /// Stops counting the request (once, whichever comes first: the end of its body or
    /// the PHP side giving up on the client).
    fn release(&self) {
        use std::sync::atomic::Ordering;
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let now = self.activity.origin.elapsed().as_millis() as u64;
        self.activity.idle_since_ms.fetch_max(now, Ordering::AcqRel);
        self.activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    fn release_hook(&self) -> Arc<dyn Fn() + Send + Sync> {
        let state = self.0.clone();
        Arc::new(move || state.release())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A response body that keeps its request counted as in flight until it is done.
struct InFlightBody {
    inner: ResponseBody,
    _in_flight: InFlight,
}

impl InFlightBody {
    fn new(inner: ResponseBody, in_flight: InFlight) -> Self {
        InFlightBody {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl http_body::Body for InFlightBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Bounds the time a client may take to send the first bytes on a connection, and the
/// time a connection may stay open with no request in flight.
///
/// hyper-util's protocol detection (HTTP/1 or the HTTP/2 preface) reads before hyper's own
/// header timeout is armed and has no deadline of its own, so a client that connected and
/// sent nothing, or a prefix of the HTTP/2 preface, held its connection forever. Reads
/// fail with `TimedOut` after the header deadline until the preface length (24 bytes) has
/// been read or a response has been written. After that, hyper's header timeout bounds an
/// idle HTTP/1 keep-alive connection, but nothing bounds an idle HTTP/2 connection (PINGs
/// and SETTINGS keep it busy without a request): reads fail once no request has been in
/// flight for `idle`.
struct FirstBytesDeadline<T> {
    inner: T,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Still before the first bytes (the header deadline is armed).
    first_bytes: bool,
    read: usize,
    idle: Duration,
    activity: Activity,
}

impl<T> FirstBytesDeadline<T> {
    const PREFACE_LEN: usize = 24;

    fn new(inner: T, timeout: Duration, idle: Duration, activity: Activity) -> Self {
        FirstBytesDeadline {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            first_bytes: true,
            read: 0,
            idle,
            activity,
        }
    }

    fn first_bytes_done(&mut self) {
        if self.first_bytes {
            self.first_bytes = false;
            self.rearm();
        }
    }

    /// Points the timer at the idle deadline (or one idle period ahead while requests
    /// are in flight); true if that deadline has passed.
    fn rearm(&mut self) -> bool {
        let now = Instant::now();
        match self.activity.idle_deadline(self.idle) {
            Some(at) if at <= now => true,
            Some(at) => {
                self.deadline.as_mut().reset(at.into());
                false
            }
            None => {
                self.deadline.as_mut().reset((now + self.idle).into());
                false
            }
        }
    }
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstBytesDeadline<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::future::Future;
        use std::task::Poll;
        let this = &mut *self;
        let before = buf.filled().len();
        match std::pin::Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.read += buf.filled().len() - before;
                if this.read >= Self::PREFACE_LEN {
                    this.first_bytes_done();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                while this.deadline.as_mut().poll(cx).is_ready() {
                    if this.first_bytes {
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no request in time",
                        )));
                    }
                    if this.rearm() {
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "connection idle",
                        )));
                    }
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstBytesDeadline<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.first_bytes_done();
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.first_bytes_done();
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
