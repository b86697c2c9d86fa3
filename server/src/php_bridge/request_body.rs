//! The request body on its way into PHP: a task pulls it off the connection into a small
//! bounded channel (enforcing the size limit and the body timeout), PHP's `read_post`
//! reads that channel on the PHP thread, and [`BodyState`] tells the handler how the
//! body ended (a [`BodyErrorKind`], whatever protocol carried it), so an answer to a
//! truncated body never passes for a normal one.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use crate::body::{BodyErrorKind, RequestBody};

/// Request body chunks in flight between the client and a PHP thread.
const BODY_DEPTH: usize = 4;

/// What PHP reads the request body from: nothing when the request has none, else the
/// channel a task fills from the connection ([`feed_body`]), recording in `state` how
/// the body ended.
pub(super) fn body_reader(
    body: RequestBody,
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
        || !http_body::Body::is_end_stream(&body);
    if !has_body {
        return Box::new(io::empty());
    }
    let (tx, rx) = mpsc::channel(BODY_DEPTH);
    tokio::spawn(feed_body(body, tx, limit, idle, state.share()));
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

impl BodyState {
    /// A handle on the same state, for the task feeding the body.
    fn share(&mut self) -> BodyState {
        BodyState(Some(self.0.get_or_insert_with(Default::default).clone()))
    }

    fn set(&self, failure: BodyErrorKind) {
        if let Some(state) = &self.0 {
            state.store(failure as u8, Ordering::Release);
        }
    }

    /// How the body broke off, if it did.
    pub(super) fn failure(&self) -> Option<BodyErrorKind> {
        BodyErrorKind::from_u8(self.0.as_ref()?.load(Ordering::Acquire))
    }
}

/// Pulls the request body off the connection into the channel PHP reads from, enforcing
/// the body size limit on bodies without a Content-Length. A body that breaks off is
/// recorded in `state` before PHP can see the error.
///
/// The protocol's header timeout ends with the head: without `idle` a client trickling its body
/// a byte a minute would hold a PHP thread (blocked in `read_post`) for as long as it
/// likes. Only waits on the client count; waiting for PHP to take a chunk does not.
async fn feed_body(
    mut body: RequestBody,
    tx: mpsc::Sender<io::Result<Bytes>>,
    limit: u64,
    idle: Duration,
    state: BodyState,
) {
    let mut total = 0u64;
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(_) => {
                tracing::debug!("request body stalled for {idle:?}");
                state.set(BodyErrorKind::Stalled);
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
                tracing::debug!("request body broke off ({:?}): {e}", e.kind());
                state.set(e.kind());
                let _ = tx
                    .send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, e)))
                    .await;
                return;
            }
        };
        total += chunk.len() as u64;
        if total > limit {
            state.set(BodyErrorKind::TooLarge);
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
