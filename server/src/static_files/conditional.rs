//! Conditional and range requests on a static file: its validators (a strong ETag per
//! representation, Last-Modified), If-None-Match and If-Modified-Since (304), and a
//! single byte range with If-Range (206, 416; several ranges get the whole file).

use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{self, HeaderMap};

use super::encoding::Encoding;

/// A strong ETag from mtime (nanoseconds) and size. Each encoding gets its own tag: strong
/// validators must differ between representations whose bytes differ.
pub(super) fn etag(modified: SystemTime, size: u64, encoding: Option<Encoding>) -> String {
    let nanos = modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match encoding {
        Some(encoding) => format!("\"{nanos:x}-{size:x}-{}\"", encoding.extension()),
        None => format!("\"{nanos:x}-{size:x}\""),
    }
}

/// Whole seconds since the epoch: HTTP dates carry no finer time.
fn unix_seconds(time: SystemTime) -> Option<u64> {
    time.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// RFC 9110 §13.2.2: If-None-Match (weak comparison) wins; If-Modified-Since only counts
/// when If-None-Match is absent.
pub(super) fn not_modified(
    headers: &HeaderMap,
    etag: Option<&str>,
    modified: Option<SystemTime>,
) -> bool {
    let mut none_match = headers.get_all(header::IF_NONE_MATCH).iter().peekable();
    if none_match.peek().is_some() {
        return none_match
            .filter_map(|v| v.to_str().ok())
            .any(|list| list.trim() == "*" || etag.is_some_and(|e| etag_list_contains(list, e)));
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    match (
        since.and_then(unix_seconds),
        modified.and_then(unix_seconds),
    ) {
        (Some(since), Some(modified)) => modified <= since,
        _ => false,
    }
}

/// Whether the comma-separated entity-tag `list` contains `etag` by weak comparison
/// (`W/` prefixes ignored). Parsed tag by tag because tags may contain commas.
fn etag_list_contains(list: &str, etag: &str) -> bool {
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        rest = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(close) = rest.strip_prefix('"').and_then(|r| r.find('"')) else {
            return false;
        };
        let (tag, tail) = rest.split_at(close + 2);
        if tag == etag {
            return true;
        }
        rest = tail;
    }
}

/// If-Range (RFC 9110 §13.1.5): the range applies only if the representation is unchanged,
/// judged by a strong ETag match or an exact Last-Modified date match.
pub(super) fn if_range_holds(
    headers: &HeaderMap,
    etag: Option<&str>,
    modified: Option<SystemTime>,
) -> bool {
    let Some(value) = headers.get(header::IF_RANGE) else {
        return true;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let value = value.trim();
    if value.starts_with('"') {
        return etag == Some(value);
    }
    if value.starts_with("W/") {
        return false;
    }
    match (httpdate::parse_http_date(value), modified) {
        (Ok(date), Some(modified)) => unix_seconds(date) == unix_seconds(modified),
        _ => false,
    }
}

/// What a Range header asks of a file of known size.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ByteRange {
    /// No usable Range: serve the whole file.
    Ignore,
    /// Inclusive byte offsets.
    Satisfiable {
        start: u64,
        end: u64,
    },
    Unsatisfiable,
}

/// A single `bytes=` range of a file of `size` bytes; anything else is ignored.
pub(super) fn parse_range(value: &str, size: u64) -> ByteRange {
    let value = value.trim();
    let spec = match value.get(..6) {
        Some(unit) if unit.eq_ignore_ascii_case("bytes=") => value[6..].trim(),
        _ => return ByteRange::Ignore,
    };
    // Several ranges would need a multipart/byteranges body; RFC 9110 lets a server ignore
    // Range, so they get the full 200 response instead.
    if spec.contains(',') {
        return ByteRange::Ignore;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return ByteRange::Ignore;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // Suffix range: the last `n` bytes.
        return match number(last) {
            None => ByteRange::Ignore,
            Some(0) => ByteRange::Unsatisfiable,
            Some(_) if size == 0 => ByteRange::Unsatisfiable,
            Some(n) => ByteRange::Satisfiable {
                start: size.saturating_sub(n),
                end: size - 1,
            },
        };
    }
    let Some(start) = number(first) else {
        return ByteRange::Ignore;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match number(last) {
            Some(end) if end >= start => end,
            _ => return ByteRange::Ignore,
        }
    };
    if start >= size {
        return ByteRange::Unsatisfiable;
    }
    ByteRange::Satisfiable {
        start,
        end: end.min(size - 1),
    }
}

/// A non-empty run of ASCII digits (`str::parse` alone would also accept a leading '+').
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_files::tests::{dir, get, h, CSS};
    use http::StatusCode;

    #[tokio::test]
    async fn if_none_match() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let etag = h(&headers, header::ETAG).to_owned();
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        for inm in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"a,b\", \"other\",{etag}"),
            "*".to_owned(),
        ] {
            let (status, headers, body) = get(&path, &[("if-none-match", &inm)]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{inm}");
            assert!(body.is_empty());
            assert_eq!(h(&headers, header::ETAG), etag);
            assert_eq!(h(&headers, header::LAST_MODIFIED), lm);
            assert!(headers.get(header::CONTENT_LENGTH).is_none());
        }
        let (status, _, body) = get(&path, &[("if-none-match", "\"stale\"")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, CSS.as_bytes());
        // A non-matching If-None-Match overrides a matching If-Modified-Since.
        let (status, _, _) = get(
            &path,
            &[("if-none-match", "\"stale\""), ("if-modified-since", &lm)],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn if_modified_since() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        let (status, headers, body) = get(&path, &[("if-modified-since", &lm)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
        assert!(headers.get(header::ETAG).is_some());
        let old = "Sun, 06 Nov 1994 08:49:37 GMT";
        let (status, _, _) = get(&path, &[("if-modified-since", old)]).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, _) = get(&path, &[("if-modified-since", "garbage")]).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn if_range() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let etag = h(&headers, header::ETAG).to_owned();
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        for (if_range, expected) in [
            (etag.as_str(), StatusCode::PARTIAL_CONTENT),
            (lm.as_str(), StatusCode::PARTIAL_CONTENT),
            ("\"stale\"", StatusCode::OK),
            (&format!("W/{etag}"), StatusCode::OK),
            ("Sun, 06 Nov 1994 08:49:37 GMT", StatusCode::OK),
        ] {
            let (status, _, _) =
                get(&path, &[("range", "bytes=0-1"), ("if-range", if_range)]).await;
            assert_eq!(status, expected, "{if_range}");
        }
    }

    #[tokio::test]
    async fn single_ranges() {
        let d = dir();
        let path = d.path().join("style.css");
        let len = CSS.len();
        for (range, start, end) in [
            ("bytes=0-3", 0, 3),
            ("bytes=5-", 5, len - 1),
            ("bytes=-4", len - 4, len - 1),
            ("bytes=2-9999", 2, len - 1),
            ("bytes=-9999", 0, len - 1),
            ("Bytes= 1-1", 1, 1),
        ] {
            let (status, headers, body) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(body, &CSS.as_bytes()[start..=end], "{range}");
            assert_eq!(
                h(&headers, header::CONTENT_RANGE),
                format!("bytes {start}-{end}/{len}")
            );
            assert_eq!(
                h(&headers, header::CONTENT_LENGTH),
                (end - start + 1).to_string()
            );
        }
    }

    #[tokio::test]
    async fn unsatisfiable_range_is_416() {
        let d = dir();
        let path = d.path().join("style.css");
        for range in ["bytes=1000-", "bytes=1000-2000", "bytes=-0"] {
            let (status, headers, _) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
            assert_eq!(
                h(&headers, header::CONTENT_RANGE),
                format!("bytes */{}", CSS.len())
            );
        }
        std::fs::write(d.path().join("empty.txt"), "").unwrap();
        let (status, _, _) = get(&d.path().join("empty.txt"), &[("range", "bytes=0-")]).await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    }

    #[tokio::test]
    async fn malformed_or_multiple_ranges_get_full_response() {
        let d = dir();
        let path = d.path().join("style.css");
        for range in [
            "bytes=0-1,4-5",
            "bytes=5-2",
            "bytes=abc",
            "bytes=+1-2",
            "bytes=-",
            "items=0-1",
            "bytes=99999999999999999999999-",
        ] {
            let (status, _, body) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::OK, "{range}");
            assert_eq!(body, CSS.as_bytes());
        }
    }
}
