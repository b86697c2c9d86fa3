//! PHP's response on its way out: the sink a PHP thread writes to, which buffers output
//! until it reaches [`STREAM_THRESHOLD`], the script calls `flush()`, or the script ends.
//! A response that ends first goes out in one piece with a Content-Length; anything
//! longer or flushed is streamed through a small bounded channel, so a 100 MB response
//! never sits whole in memory and a slow client slows the script down instead of growing
//! a buffer. A client that takes nothing for `send_timeout` is given up on ([`OnStall`]).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use worker::{Disconnected, ResponseHead, ResponseSink};

use super::request_body::BodyState;
use crate::body::{self, ResponseBody};

/// Output up to this size is sent as one response with a Content-Length.
const STREAM_THRESHOLD: usize = 64 * 1024;
/// Chunks in flight between a PHP thread and its client.
const STREAM_DEPTH: usize = 8;

/// Called (once) when the PHP side gives up on a client that stopped reading a
/// streamed response: hyper holds that response's body until the client reads again,
/// which may be never, so the connection must not count it as a request in flight
/// (`serve/connection/` then lets its idle timeout close the connection and free what
/// it holds).
#[derive(Clone)]
pub(crate) struct OnStall(pub Arc<dyn Fn() + Send + Sync>);

/// The response head plus either the whole body or the stream that will carry it.
pub(super) struct Reply {
    head: ResponseHead,
    pub(super) body: ReplyBody,
}

pub(super) enum ReplyBody {
    Complete(Bytes),
    Streaming {
        rx: mpsc::Receiver<Bytes>,
        /// Set by the PHP thread when it gave up on a client that stopped reading.
        stalled: Arc<AtomicBool>,
    },
    /// The router script declined the request (`ResponseSink::declined`).
    Declined,
}

/// The response for PHP's reply: its status and headers, and its body whole or
/// streamed.
pub(super) fn build_response(reply: Reply, body_state: BodyState) -> Response<ResponseBody> {
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
            None if body_state.failure().is_some() => Some(Err(io::Error::new(
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

/// The PHP thread's end of a response (see the module doc for the buffering policy).
pub(super) struct HttpSink {
    state: SinkState,
    buf: BytesMut,
    /// Where 1xx responses go: the request's protocol's handle, if it has one (`interim.rs`).
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
    /// A sink that buffers until the response streams; `reply` takes the head and the
    /// body (or its stream), and `permit` is held until the script ends.
    pub(super) fn new(
        reply: oneshot::Sender<Reply>,
        interim: Option<crate::interim::Hints>,
        on_stall: Option<OnStall>,
        send_timeout: Duration,
        permit: OwnedSemaphorePermit,
    ) -> HttpSink {
        HttpSink {
            state: SinkState::Buffering { head: None, reply },
            buf: BytesMut::new(),
            interim,
            stalled: None,
            on_stall,
            send_timeout,
            runtime: tokio::runtime::Handle::current(),
            _permit: permit,
        }
    }

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
