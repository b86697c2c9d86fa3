//! HTTP/3 (RFC 9114) on one QUIC connection (the listener did the handshake,
//! `listeners/quic.rs`): hyperium's `h3` over `h3-quinn`, each request stream on its own
//! task, turned into the same `http::Request<RequestBody>` the HTTP/1.1 and HTTP/2 paths
//! hand to `dispatch` (version `HTTP/3.0`, so PHP sees `SERVER_PROTOCOL` `HTTP/3.0` and
//! `HTTPS` on), with a [`Hints`] for 103 Early Hints, and its response streamed back.
//!
//! Limits, as HTTP/2's: the request head within `--max-header-size` (h3 answers 431
//! beyond it), the body within `--max-body-size` (the PHP bridge, as for every protocol),
//! [`MAX_STREAMS`](crate::serve::listeners) streams at once (QUIC stream credit), a
//! connection with no request in flight for `--idle-timeout-ms` closed with GOAWAY. On
//! shutdown (`Connections::draining`) the connection sends GOAWAY, finishes the requests
//! it accepted and closes; the graceful watcher it holds keeps `shutdown::drain` waiting
//! for that, as it does for an HTTP/2 connection.

use std::pin::pin;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::{Buf, Bytes};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper_util::server::graceful::Watcher;

use super::{Activity, Connections};
use crate::body::{BodyError, BodyErrorKind, RequestBody, ResponseBody};
use crate::interim::{Hints, SendInformational};
use crate::peer::Connection;
use crate::php_bridge::OnStall;
use crate::serve::app::App;
use crate::serve::dispatch::handle;

type SendStream = ::h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;
type RecvStream = ::h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// HTTP/3's H3_NO_ERROR: how a connection we close on purpose ends.
const H3_NO_ERROR: u32 = 0x100;

/// After GOAWAY on shutdown and the last response: how long the client may take to
/// close the connection itself. Closing it from here at once would discard response
/// bytes QUIC has not delivered yet (quinn's `close` drops unsent stream data); a client
/// that got everything closes first (browsers do after GOAWAY, once their streams end).
const CLOSE_LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// 1xx heads a request may have waiting to be written at once; more are dropped, as a
/// hint may be.
const HINTS_DEPTH: usize = 4;

/// Serves HTTP/3 on `quic` until the client closes it, it idles out, or shutdown drains
/// it. `conn` says where it came from.
pub(in crate::serve) async fn serve(
    quic: quinn::Connection,
    conn: Connection,
    shared: &Connections,
    watcher: Watcher,
) {
    // Held to the end: graceful shutdown waits for this connection.
    let _watcher = watcher;
    let built = ::h3::server::builder()
        .max_field_section_size(shared.max_header_size as u64)
        .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await;
    let Ok(mut h3) = built else {
        return;
    };
    let conn = Arc::new(conn);
    let activity = Activity::new();
    // The request streams' tasks. Dropped with the connection when it fails, which
    // aborts them: their handlers are dropped, as hyper drops an HTTP/2 connection's.
    let mut requests = tokio::task::JoinSet::new();
    let idle = shared.idle_timeout;
    let mut idle_timer = pin!(tokio::time::sleep(idle));
    // Set once GOAWAY has gone: the connection ends when its last request does.
    let mut closing = false;
    // Set when GOAWAY went out with responses perhaps still on their way.
    let mut linger = false;
    loop {
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    let app = shared.app.clone();
                    let conn = conn.clone();
                    let activity = activity.clone();
                    requests.spawn(async move {
                        if let Ok((req, stream)) = resolver.resolve_request().await {
                            request(app, conn, activity, req, stream).await;
                        }
                    });
                }
                // The client's GOAWAY, all its requests done.
                Ok(None) => break,
                // The client closed the connection, or broke the protocol (h3 has told it
                // why); other connections go on.
                Err(e) => {
                    tracing::debug!(remote = %conn.remote_addr, "HTTP/3 connection ended: {e}");
                    break;
                }
            },
            // GOAWAY names the stream after the last one accepted (h3's `shutdown(n)`
            // adds n to it): every request taken is one the client knows was processed,
            // later ones it may retry elsewhere.
            () = shared.draining.cancelled(), if !closing => {
                closing = true;
                linger = true;
                let _ = h3.shutdown(1).await;
            }
            // Idle: no request in flight for `idle`. Requests that PHP gave up on (a client
            // that stopped reading) no longer count, so one more idle period after GOAWAY
            // ends the connection even if such a response never drains.
            () = &mut idle_timer, if !linger => {
                if closing {
                    break;
                }
                let now = Instant::now();
                match activity.idle_deadline(idle) {
                    Some(at) if at <= now => {
                        closing = true;
                        let _ = h3.shutdown(1).await;
                        idle_timer.as_mut().reset((now + idle).into());
                    }
                    Some(at) => idle_timer.as_mut().reset(at.into()),
                    None => idle_timer.as_mut().reset((now + idle).into()),
                }
            }
            // Finished request tasks, reaped as they end.
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            () = std::future::ready(()), if closing && requests.is_empty() => break,
        }
    }
    if linger {
        let _ = tokio::time::timeout(CLOSE_LINGER, quic.closed()).await;
    }
    quic.close(H3_NO_ERROR.into(), b"");
}

/// One request stream: its request through `dispatch`, 1xx heads written while the
/// handler runs, then the response head and body.
async fn request(
    app: Arc<App>,
    conn: Arc<Connection>,
    activity: Activity,
    req: http::Request<()>,
    stream: ::h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
) {
    let head_only = req.method() == http::Method::HEAD;
    let (mut send, recv) = stream.split();
    let (mut parts, ()) = req.into_parts();
    let (hints, mut hint_heads) = tokio::sync::mpsc::channel(HINTS_DEPTH);
    parts
        .extensions
        .insert(Hints::new(Arc::new(Http3Informational(hints))));
    // Held until the response body is done, so a long response never counts as idle.
    let in_flight = activity.begin();
    parts.extensions.insert(OnStall(in_flight.release_hook()));
    let body = RequestBody::new(H3Body::new(recv), body_error);
    let req = http::Request::from_parts(parts, body);
    let mut handled = pin!(handle(&app, req, &conn));
    let response = loop {
        tokio::select! {
            biased;
            response = &mut handled => break response,
            Some(head) = hint_heads.recv() => {
                // A client gone by now also fails the final response below.
                let _ = send.send_response(head).await;
            }
        }
    };
    // Hints queued before the response was ready (a script that sent one and ended at
    // once) still precede it; one sent after the final head would be a protocol error,
    // so none is taken after this.
    hint_heads.close();
    while let Ok(head) = hint_heads.try_recv() {
        let _ = send.send_response(head).await;
    }
    drop(hint_heads);
    respond(&mut send, response, head_only).await;
    drop(in_flight);
}

/// Writes the final response: its head (without the fields HTTP/3 forbids), its body
/// frame by frame as the handler produces it (so backpressure reaches PHP), and the end
/// of the stream. A body that fails midway resets the stream, so the client never takes
/// a cut response for a whole one.
async fn respond(send: &mut SendStream, response: http::Response<ResponseBody>, head_only: bool) {
    let (mut parts, mut body) = response.into_parts();
    // RFC 9114 §4.2: connection-specific fields are malformed in HTTP/3.
    for name in [
        http::header::CONNECTION,
        http::header::TRANSFER_ENCODING,
        http::header::UPGRADE,
        http::HeaderName::from_static("keep-alive"),
        http::HeaderName::from_static("proxy-connection"),
    ] {
        parts.headers.remove(name);
    }
    let no_body = head_only
        || parts.status == http::StatusCode::NO_CONTENT
        || parts.status == http::StatusCode::NOT_MODIFIED;
    if send
        .send_response(http::Response::from_parts(parts, ()))
        .await
        .is_err()
    {
        return;
    }
    if !no_body {
        while let Some(frame) = body.frame().await {
            let sent = match frame {
                Ok(frame) => match frame.into_data() {
                    Ok(data) if data.is_empty() => Ok(()),
                    Ok(data) => send.send_data(data).await,
                    Err(frame) => match frame.into_trailers() {
                        Ok(trailers) => send.send_trailers(trailers).await,
                        Err(_) => Ok(()),
                    },
                },
                Err(e) => {
                    tracing::debug!("response body failed: {e}; resetting the HTTP/3 stream");
                    send.stop_stream(::h3::error::Code::H3_INTERNAL_ERROR);
                    return;
                }
            };
            if sent.is_err() {
                // The client reset the stream or left: PHP learns from the dropped body.
                return;
            }
        }
    }
    let _ = send.finish().await;
}

/// A request stream's body, frame by frame as the client sends it.
struct H3Body {
    stream: RecvStream,
    /// What a first look found before anyone polled (a chunk, or an error).
    first: Option<Result<Bytes, ::h3::error::StreamError>>,
    done: bool,
}

impl H3Body {
    /// The body of `stream`, looked at once without waiting: a request whose stream has
    /// already ended (a GET, whose HEADERS frame came with the stream's FIN) has an
    /// ended body, which `RequestBody::new` turns into the empty body, so the PHP bridge
    /// starts no task to feed it.
    fn new(mut stream: RecvStream) -> H3Body {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let (first, done) = match stream.poll_recv_data(&mut cx) {
            Poll::Ready(Ok(None)) => (None, true),
            Poll::Ready(Ok(Some(mut data))) => {
                (Some(Ok(data.copy_to_bytes(data.remaining()))), false)
            }
            Poll::Ready(Err(e)) => (Some(Err(e)), false),
            // The next poll registers the real waker.
            Poll::Pending => (None, false),
        };
        H3Body {
            stream,
            first,
            done,
        }
    }
}

impl Body for H3Body {
    type Data = Bytes;
    type Error = ::h3::error::StreamError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(first) = self.first.take() {
            if first.is_err() {
                self.done = true;
            }
            return Poll::Ready(Some(first.map(Frame::data)));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match ready!(self.stream.poll_recv_data(cx)) {
            Ok(Some(mut data)) => {
                let bytes = data.copy_to_bytes(data.remaining());
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Ok(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Err(e) => {
                self.done = true;
                Poll::Ready(Some(Err(e)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }
}

/// The kind of a request body's error: an error h3 found on the stream itself (a frame
/// that broke HTTP/3's rules) is malformed; a reset stream or a connection gone is the
/// peer gone.
fn body_error(e: ::h3::error::StreamError) -> BodyError {
    let kind = if matches!(e, ::h3::error::StreamError::StreamError { .. }) {
        BodyErrorKind::Malformed
    } else {
        BodyErrorKind::Reset
    };
    BodyError::new(kind, e)
}

/// HTTP/3: a request's 1xx heads go to its task, which writes each as a HEADERS frame
/// before the final response's.
struct Http3Informational(tokio::sync::mpsc::Sender<http::Response<()>>);

impl SendInformational for Http3Informational {
    fn send_informational(&self, status: http::StatusCode, headers: &http::HeaderMap) {
        let mut head = http::Response::new(());
        *head.status_mut() = status;
        *head.headers_mut() = headers.clone();
        // Too many waiting, or the final head already gone: dropped.
        let _ = self.0.try_send(head);
    }
}
