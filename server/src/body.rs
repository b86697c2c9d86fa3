//! The one response body type every handler returns (static files, PHP, errors), and
//! small constructors for the common shapes.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};

/// A boxed, streaming response body. Errors end the response early (connection closed).
pub(crate) type ResponseBody = BoxBody<Bytes, std::io::Error>;

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
