//! 1xx responses on the protocols hyper serves, which hyper 1's server cannot send on its
//! own: each request gets a [`crate::interim::Hints`] backed by one of the two below.
//!
//! HTTP/1.1 ([`Interim`]):
//! Every connection's I/O is wrapped in an [`InterimIo`] that shares an [`Interim`] queue
//! with the connection's requests. A script's sink serializes the 1xx head into the queue
//! and wakes the connection task; the wrapper writes queued bytes from `poll_flush`, which
//! hyper's dispatcher calls on every turn and only with its own write buffer empty (so the
//! hint leaves while the script is still running, between two responses), or just before
//! the bytes hyper writes next when those start a new response (so a hint always precedes
//! its final head); see [`InterimIo`]. HTTP/1.0 clients do not expect 1xx responses and
//! get none.
//!
//! HTTP/2 ([`Http2Informational`]): the socket carries hyper's framing, so the head goes
//! to hyper instead, as a `Response<()>` for the `InformationalSender` our patched hyper
//! puts in each request (`third_party/patches/`); hyper's stream task writes it as a
//! HEADERS frame before the final response's.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::interim::SendInformational;

/// HTTP/2: one request's stream, through the sender hyper put in its extensions.
pub(super) struct Http2Informational(pub(super) hyper::ext::InformationalSender);

impl SendInformational for Http2Informational {
    fn send_informational(&self, status: http::StatusCode, headers: &http::HeaderMap) {
        let mut response = http::Response::new(());
        *response.status_mut() = status;
        *response.headers_mut() = headers.clone();
        // A hint that comes too late is dropped, as on HTTP/1.1.
        let _ = self.0.send(response);
    }
}

/// HTTP/1.1: the 1xx responses waiting to be written on one connection. The common case
/// (nothing queued) costs the connection an atomic load and a waker registration per poll.
#[derive(Default)]
pub(super) struct Interim {
    pending: Mutex<Vec<u8>>,
    /// Set with bytes in `pending`; cleared, under its lock, once they are written.
    has_pending: AtomicBool,
    /// The connection task, woken to write what was queued.
    waker: AtomicWaker,
}

impl SendInformational for Interim {
    /// Queues the response as HTTP/1.1 bytes and wakes the connection.
    fn send_informational(&self, status: http::StatusCode, headers: &http::HeaderMap) {
        let mut bytes = Vec::with_capacity(128);
        let reason = status.canonical_reason().unwrap_or("Informational");
        bytes.extend_from_slice(format!("HTTP/1.1 {} {reason}\r\n", status.as_u16()).as_bytes());
        // Valid fields only: the worker dropped the others when it made the head.
        for (name, value) in headers {
            bytes.extend_from_slice(name.as_str().as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"\r\n");
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.extend_from_slice(&bytes);
            self.has_pending.store(true, Ordering::Release);
        }
        self.waker.wake();
    }
}

/// A connection's I/O with the [`Interim`] queue in front of its writes.
///
/// hyper calls `poll_flush` on its I/O only once its own write buffer is empty, so queued
/// bytes written from `poll_flush` can never land inside a response. From `poll_write`
/// they are written first only while `clean` (no hyper bytes since hyper's last flush):
/// what hyper writes then starts a new response, whose 1xx must precede it. Otherwise (a
/// previous response's tail still in hyper's buffer, possible when hyper dispatched the
/// next request before flushing) their order cannot be told, and the hint is dropped.
pub(super) struct InterimIo<T> {
    inner: T,
    interim: Arc<Interim>,
    clean: bool,
}

impl<T> InterimIo<T> {
    pub(super) fn new(inner: T, interim: Arc<Interim>) -> Self {
        InterimIo {
            inner,
            interim,
            clean: true,
        }
    }
}

impl<T: AsyncWrite + Unpin> InterimIo<T> {
    /// Writes the queued bytes; Ready(Ok) once none are left.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Register before looking, so a send after the look wakes this task.
        self.interim.waker.register(cx.waker());
        if !self.interim.has_pending.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        let mut pending = self
            .interim
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while !pending.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &pending) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    pending.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.interim.has_pending.store(false, Ordering::Release);
        Poll::Ready(Ok(()))
    }

    /// Before hyper's own bytes: queued bytes go first when that order is known.
    fn before_hyper_write(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.clean {
            return self.drain(cx);
        }
        self.interim.waker.register(cx.waker());
        if self.interim.has_pending.load(Ordering::Acquire) {
            let mut pending = self
                .interim
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            pending.clear();
            self.interim.has_pending.store(false, Ordering::Release);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for InterimIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.interim.waker.register(cx.waker());
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for InterimIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.before_hyper_write(cx) {
            Poll::Ready(Ok(())) => {
                let written = Pin::new(&mut self.inner).poll_write(cx, buf);
                if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
                    self.clean = false;
                }
                written
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.before_hyper_write(cx) {
            Poll::Ready(Ok(())) => {
                let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
                if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
                    self.clean = false;
                }
                written
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // hyper's buffer is empty whenever it flushes its I/O.
        self.clean = true;
        match self.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A hint with no response to follow is of no use.
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
