//! The body types every handler sees, whatever protocol carried the request: the
//! [`RequestBody`] a handler takes (with the [`BodyError`] kinds the PHP bridge tells
//! apart) and the [`ResponseBody`] it returns, plus small constructors for the common
//! response shapes.
//!
//! A protocol hands its own body type over once per request ([`RequestBody::new`]): one
//! allocation for a body still to come, none for a request without one; frames then pass
//! through one dynamic call each, never another allocation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};

/// A boxed, streaming response body. Errors end the response early (connection closed).
pub(crate) type ResponseBody = BoxBody<Bytes, std::io::Error>;

/// A request body, boxed so that handlers never name a protocol's own body type (hyper's
/// `Incoming` for HTTP/1.1 and HTTP/2, a QUIC stream for HTTP/3).
pub(crate) struct RequestBody(BoxBody<Bytes, BodyError>);

impl RequestBody {
    /// `body` as a request body, its errors sorted into kinds by `error`. A body that has
    /// already ended (a GET, a zero Content-Length) is dropped for the empty body, which
    /// needs no allocation.
    pub(crate) fn new<B, F>(body: B, error: F) -> RequestBody
    where
        B: Body<Data = Bytes> + Send + Sync + 'static,
        F: FnMut(B::Error) -> BodyError + Send + Sync + 'static,
    {
        if body.is_end_stream() {
            return RequestBody::empty();
        }
        RequestBody(body.map_err(error).boxed())
    }

    /// A request without a body.
    pub(crate) fn empty() -> RequestBody {
        RequestBody(
            Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed(),
        )
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    #[inline]
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        Pin::new(&mut self.0).poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// Why a request body did not arrive whole. The kind decides the answer (413, 408, 400)
/// when the body breaks off before the response has started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BodyErrorKind {
    /// Longer than `--max-body-size`.
    TooLarge = 1,
    /// No body bytes for `--body-timeout-ms`.
    Stalled = 2,
    /// The stream or connection ended before the body did (reset, client gone).
    Reset = 3,
    /// The framing broke the protocol (a bad chunk, more data than declared).
    Malformed = 4,
}

impl BodyErrorKind {
    /// The kind stored as `kind as u8`, for state shared through an atomic.
    pub(crate) fn from_u8(n: u8) -> Option<BodyErrorKind> {
        Some(match n {
            1 => BodyErrorKind::TooLarge,
            2 => BodyErrorKind::Stalled,
            3 => BodyErrorKind::Reset,
            4 => BodyErrorKind::Malformed,
            _ => return None,
        })
    }
}

/// A request body's failure: its kind, and the protocol's own error for the log.
#[derive(Debug)]
pub(crate) struct BodyError {
    kind: BodyErrorKind,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl BodyError {
    pub(crate) fn new(
        kind: BodyErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> BodyError {
        BodyError {
            kind,
            source: source.into(),
        }
    }

    pub(crate) fn kind(&self) -> BodyErrorKind {
        self.kind
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

pub(crate) fn empty() -> ResponseBody {
    Empty::<Bytes>::new()
        .map_err(|never| match never {})
        .boxed()
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A plain-text response with the given status, for errors the server produces itself.
pub(crate) fn text_response(
    status: http::StatusCode,
    message: &str,
) -> http::Response<ResponseBody> {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(http::header::CONTENT_LENGTH, message.len() + 1)
        .body(full(format!("{message}\n")))
        .expect("valid static response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_body_becomes_the_empty_one_and_errors_keep_their_kind() {
        let ended = RequestBody::new(Full::new(Bytes::new()), |never| match never {});
        assert!(ended.is_end_stream());
        let failing = http_body_util::StreamBody::new(futures_util::stream::iter([Err::<
            Frame<Bytes>,
            std::io::Error,
        >(
            std::io::ErrorKind::InvalidData.into(),
        )]));
        let mut body = RequestBody::new(failing, |e| BodyError::new(BodyErrorKind::Malformed, e));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let frame = runtime.block_on(body.frame()).unwrap();
        assert_eq!(frame.unwrap_err().kind(), BodyErrorKind::Malformed);
        for kind in [
            BodyErrorKind::TooLarge,
            BodyErrorKind::Stalled,
            BodyErrorKind::Reset,
            BodyErrorKind::Malformed,
        ] {
            assert_eq!(BodyErrorKind::from_u8(kind as u8), Some(kind));
        }
        assert_eq!(BodyErrorKind::from_u8(0), None);
    }
}
