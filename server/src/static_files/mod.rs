//! Serving one static file with HTTP semantics: GET/HEAD, content type, validators
//! (strong ETag, Last-Modified), conditional requests (304), single byte ranges (206/416)
//! and precompressed `.br`/`.gz` siblings. Which file to serve, and whether it may be
//! served at all, is decided earlier by [`crate::routing`].
//!
//! The parts: `open.rs` (which file, or its cached bytes), `encoding.rs` (Content-Type
//! and precompressed siblings), `conditional.rs` (validators, 304, byte ranges) and
//! `read.rs` (the body: its first chunk read in the hop that opens the file, the rest
//! streamed).
//!
//! # The content cache
//!
//! A file up to the cache's per-file limit that has settled (unchanged for 2 s) is read
//! whole on its first GET and kept as shared `Bytes` in [`crate::static_cache`]; later
//! requests find it there through the stats the hop makes anyway (identical device,
//! inode, size, mtime and ctime, or it is a miss) and answer with a slice of it as one
//! frame: no open, no pread, no further hops. HEAD, 304 and 416 responses never fill
//! the cache; a file too large, too fresh, or written while it was read streams as
//! `read.rs` describes. A cached body is a snapshot in our own memory, so truncating the
//! file cannot hurt a response in flight: it completes with the bytes of the version it
//! started with, and the next request sees the change. In `compare --only static-1mb`
//! (wrk, 32 connections) the server's CPU per request went from 310-450 us (cache off)
//! to 190-230 us, level with nginx's sendfile (210-240 us), at 1.03-1.96x its req/s
//! (medians of four 3-round runs on the shared machine) and a lower p99.
//!
//! The revalidating stats stay in the hop. Taking them on the async thread instead (and
//! hopping only on a miss) saved about 10% of server CPU per request for the 1 MB file,
//! but gave fewer req/s in 8 of 9 alternating wrk runs on the shared 2-core machine
//! (the blocking pool's threads get their share of a contended CPU; the runtime's alone
//! get less) and a stat on a slow filesystem would stall every connection of that
//! runtime thread.

mod conditional;
mod encoding;
mod open;
mod read;

use std::io;
use std::path::Path;

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode};

use crate::body::{self, ResponseBody};
use conditional::{etag, if_range_holds, not_modified, parse_range, ByteRange};
use encoding::{content_type, preferred_encodings, Encoding};
use open::open;

/// Request headers the response depends on besides Accept-Encoding (consumed before the
/// hop): copied into the blocking task (an empty map allocates nothing).
const CONDITIONAL_HEADERS: [header::HeaderName; 4] = [
    header::RANGE,
    header::IF_RANGE,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
];

/// Serves `path` (a regular file the router approved) for `method` with request `headers`.
pub(crate) async fn serve(
    path: &Path,
    method: &Method,
    headers: &HeaderMap,
) -> Response<ResponseBody> {
    let head = *method == Method::HEAD;
    if !head && *method != Method::GET {
        let mut response =
            body::text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    // Range is only defined for GET (RFC 9110 §14.2), so HEAD ignores it.
    let has_range = !head && headers.contains_key(header::RANGE);
    // Range requests get the identity file: byte offsets into a compressed stream are
    // useless to clients that resume or seek in the decoded content.
    let preferred = match has_range {
        true => [None; 2],
        false => preferred_encodings(headers),
    };
    let mut conditions = HeaderMap::new();
    for name in CONDITIONAL_HEADERS {
        if head && name == header::RANGE {
            continue;
        }
        for value in headers.get_all(&name) {
            conditions.append(name.clone(), value.clone());
        }
    }

    // All blocking filesystem work, and the first chunk of the body, in a single hop.
    let owned = path.to_owned();
    let respond = move || respond(&owned, head, preferred, &conditions);
    match tokio::task::spawn_blocking(respond).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => error_response(path, &err),
        Err(join) => {
            tracing::error!(path = %path.display(), "static file task failed: {join}");
            body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

/// The whole response for `path`, with the first chunk of its body read. Blocking.
fn respond(
    path: &Path,
    head: bool,
    preferred: [Option<Encoding>; 2],
    headers: &HeaderMap,
) -> io::Result<Response<ResponseBody>> {
    let opened = open(path, preferred)?;
    let size = opened.meta.len();
    let modified = opened.meta.modified().ok();
    let etag = modified.map(|m| etag(m, size, opened.encoding));
    let last_modified = modified.map(httpdate::fmt_http_date);

    let mut builder = Response::builder();
    if let Some(etag) = &etag {
        builder = builder.header(header::ETAG, etag);
    }
    if let Some(last_modified) = &last_modified {
        builder = builder.header(header::LAST_MODIFIED, last_modified);
    }
    if opened.has_variants {
        builder = builder.header(header::VARY, "Accept-Encoding");
    }

    if not_modified(headers, etag.as_deref(), modified) {
        return Ok(builder
            .status(StatusCode::NOT_MODIFIED)
            .body(body::empty())
            .expect("valid 304 response"));
    }

    builder = builder
        .header(header::CONTENT_TYPE, content_type(path))
        .header(header::ACCEPT_RANGES, "bytes");
    if let Some(encoding) = opened.encoding {
        builder = builder.header(header::CONTENT_ENCODING, encoding.token());
    }

    let range = match headers.get(header::RANGE) {
        Some(value) if if_range_holds(headers, etag.as_deref(), modified) => value
            .to_str()
            .map_or(ByteRange::Ignore, |v| parse_range(v, size)),
        _ => ByteRange::Ignore,
    };
    let (start, len) = match range {
        ByteRange::Ignore => {
            builder = builder.status(StatusCode::OK);
            (0, size)
        }
        ByteRange::Satisfiable { start, end } => {
            builder = builder
                .status(StatusCode::PARTIAL_CONTENT)
                .header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}"));
            (start, end - start + 1)
        }
        ByteRange::Unsatisfiable => {
            let mut response =
                body::text_response(StatusCode::RANGE_NOT_SATISFIABLE, "Range Not Satisfiable");
            let content_range = HeaderValue::from_str(&format!("bytes */{size}"))
                .expect("digits are a valid header value");
            response
                .headers_mut()
                .insert(header::CONTENT_RANGE, content_range);
            return Ok(response);
        }
    };

    let body = match head {
        true => body::empty(),
        false => read::body_of(opened.source, &opened.meta, start, len)?,
    };
    Ok(builder
        .header(header::CONTENT_LENGTH, len)
        .body(body)
        .expect("valid static file response"))
}

/// The response when the file could not be served: 404, 403, or a logged 500.
fn error_response(path: &Path, err: &io::Error) -> Response<ResponseBody> {
    match err.kind() {
        io::ErrorKind::NotFound => body::text_response(StatusCode::NOT_FOUND, "Not Found"),
        io::ErrorKind::PermissionDenied => body::text_response(StatusCode::FORBIDDEN, "Forbidden"),
        _ => {
            tracing::error!(path = %path.display(), "serving static file failed: {err}");
            body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::time::UNIX_EPOCH;

    pub(super) const CSS: &str = "body { color: #333; }\n";
    pub(super) const JS: &str = "console.log('identity');\n";

    pub(super) fn dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("style.css"), CSS).unwrap();
        std::fs::write(dir.path().join("app.js"), JS).unwrap();
        std::fs::write(dir.path().join("app.js.br"), "BROTLI BYTES").unwrap();
        std::fs::write(dir.path().join("app.js.gz"), "GZIP BYTES").unwrap();
        std::fs::write(dir.path().join("only.js"), JS).unwrap();
        std::fs::write(dir.path().join("only.js.gz"), "GZ").unwrap();
        dir
    }

    pub(super) async fn get(
        path: &Path,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Vec<u8>) {
        request(path, Method::GET, headers).await
    }

    pub(super) async fn request(
        path: &Path,
        method: Method,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        let response = serve(path, &method, &map).await;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (parts.status, parts.headers, bytes)
    }

    pub(super) fn h(headers: &HeaderMap, name: header::HeaderName) -> &str {
        headers
            .get(&name)
            .unwrap_or_else(|| panic!("missing {name}"))
            .to_str()
            .unwrap()
    }

    #[tokio::test]
    async fn get_serves_file_with_validators() {
        let d = dir();
        let path = d.path().join("style.css");
        let (status, headers, body) = get(&path, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, CSS.as_bytes());
        assert_eq!(h(&headers, header::CONTENT_TYPE), "text/css; charset=utf-8");
        assert_eq!(h(&headers, header::CONTENT_LENGTH), CSS.len().to_string());
        assert_eq!(h(&headers, header::ACCEPT_RANGES), "bytes");
        let meta = std::fs::metadata(&path).unwrap();
        let nanos = meta
            .modified()
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        assert_eq!(
            h(&headers, header::ETAG),
            format!("\"{nanos:x}-{:x}\"", CSS.len())
        );
        assert_eq!(
            h(&headers, header::LAST_MODIFIED),
            httpdate::fmt_http_date(meta.modified().unwrap())
        );
        assert!(headers.get(header::VARY).is_none());
        assert!(headers.get(header::CONTENT_ENCODING).is_none());
    }

    #[tokio::test]
    async fn head_has_get_headers_and_no_body() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, get_headers, _) = get(&path, &[]).await;
        let (status, headers, body) = request(&path, Method::HEAD, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.is_empty());
        assert_eq!(headers, get_headers);
        // Range is not defined for HEAD and is ignored.
        let (status, headers, _) = request(&path, Method::HEAD, &[("range", "bytes=0-1")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h(&headers, header::CONTENT_LENGTH), CSS.len().to_string());
    }

    #[tokio::test]
    async fn other_methods_are_not_allowed() {
        let d = dir();
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
            let (status, headers, _) = request(&d.path().join("style.css"), method, &[]).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
            assert_eq!(h(&headers, header::ALLOW), "GET, HEAD");
        }
    }
}
