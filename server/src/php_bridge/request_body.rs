//! The request body on its way into PHP: a task pulls it off the connection into a small
//! bounded channel (enforcing the size limit and the body timeout), PHP's `read_post`
//! reads that channel on the PHP thread, and [`BodyState`] tells the handler how the
//! body ended, so an answer to a truncated body never passes for a normal one.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::mpsc;

/// Request body chunks in flight between the client and a PHP thread.
const BODY_DEPTH: usize = 4;

/// What PHP reads the request body from: nothing when the request has none, else the
/// channel a task fills from the connection ([`feed_body`]), recording in `state` how
/// the body ended.
pub(super) fn body_reader(
    incoming: Incoming,
    headers: &http::HeaderMap,
    declared_length: Option<u64>,
    limit: u64,
    idle: Duration,
    state: &mut BodyState,
) -> Box<dyn Read + Send> {
    // Not only Content-Length/Transfer-Encoding: an HTTP/2 body may come as DATA
    // frames with neither header, and only the stream's end says there is none.
    let has_body = declared_length.is_some_and(|n| n > 0)
        || headers.contains_key(http::header::TRANSFER_ENCODING)
        || !http_body::Body::is_end_stream(&incoming);
    if !has_body {
        return Box::new(io::empty());
    }
    let (tx, rx) = mpsc::channel(BODY_DEPTH);
    tokio::spawn(feed_body(incoming, tx, limit, idle, state.share()));
    Box::new(BodyReader {
        rx,
        current: Bytes::new(),
        failed: None,
    })
}

/// How a request body ended, shared by the task feeding it and the request's handler.
/// Shared state is only allocated for a request that has a body ([`BodyState::share`]):
/// without one nothing can fail, and the handler's state stays `None`.
#[derive(Default)]
pub(super) struct BodyState(Option<Arc<AtomicU8>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum BodyFailure {
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

    pub(super) fn get(&self) -> BodyFailure {
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
