//! What a static file is sent as: its media type (Content-Type, from the extension) and
//! its content coding, a precompressed `.br` or `.gz` sibling the client accepts
//! (Accept-Encoding, with the server's preference on ties).

use std::path::{Path, PathBuf};

use http::header::{self, HeaderMap, HeaderValue};

/// A content coding a precompressed sibling may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    /// Server preference when the client's q-values tie.
    pub(super) const ALL: [Encoding; 2] = [Encoding::Brotli, Encoding::Gzip];

    pub(super) fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }

    pub(super) fn extension(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gz",
        }
    }

    pub(super) fn sibling(self, path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".");
        name.push(self.extension());
        name.into()
    }
}

/// Encodings the client accepts (q > 0), best first; ties go to [`Encoding::ALL`] order.
pub(super) fn preferred_encodings(headers: &HeaderMap) -> [Option<Encoding>; 2] {
    let mut explicit = [None::<f32>; 2];
    let mut wildcard = None::<f32>;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            if coding.is_empty() {
                continue;
            }
            let q = parts
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                // An unparsable q-value is treated as refusal rather than guessed at.
                .map_or(1.0, |(_, v)| v.trim().parse::<f32>().unwrap_or(0.0));
            if coding == "*" {
                wildcard = Some(q);
            } else if coding.eq_ignore_ascii_case("br") {
                explicit[0] = Some(q);
            } else if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                explicit[1] = Some(q);
            }
        }
    }
    let q = |i: usize| explicit[i].or(wildcard).unwrap_or(0.0);
    let (br, gzip) = (q(0), q(1));
    let ordered = if gzip > br {
        [Encoding::Gzip, Encoding::Brotli]
    } else {
        Encoding::ALL
    };
    let acceptable = |e: Encoding| {
        let q = if e == Encoding::Brotli { br } else { gzip };
        (q > 0.0).then_some(e)
    };
    [acceptable(ordered[0]), acceptable(ordered[1])]
}

/// The Content-Type for `path`, from its extension; text (and JavaScript) as UTF-8.
pub(super) fn content_type(path: &Path) -> HeaderValue {
    let value = match mime_guess::from_path(path).first() {
        Some(mime)
            if mime.type_() == mime_guess::mime::TEXT
                || mime.essence_str() == "application/javascript" =>
        {
            format!("{}; charset=utf-8", mime.essence_str())
        }
        Some(mime) => mime.essence_str().to_owned(),
        None => return HeaderValue::from_static("application/octet-stream"),
    };
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_files::tests::{dir, get, h, JS};
    use http::StatusCode;

    #[tokio::test]
    async fn content_type_fallbacks() {
        let d = dir();
        std::fs::write(d.path().join("blob.unknownext"), "x").unwrap();
        std::fs::write(d.path().join("pic.png"), "x").unwrap();
        let (_, headers, _) = get(&d.path().join("blob.unknownext"), &[]).await;
        assert_eq!(
            h(&headers, header::CONTENT_TYPE),
            "application/octet-stream"
        );
        let (_, headers, _) = get(&d.path().join("pic.png"), &[]).await;
        assert_eq!(h(&headers, header::CONTENT_TYPE), "image/png");
        let (_, headers, _) = get(&d.path().join("app.js"), &[]).await;
        assert!(h(&headers, header::CONTENT_TYPE).ends_with("javascript; charset=utf-8"));
    }

    #[tokio::test]
    async fn precompressed_siblings() {
        let d = dir();
        let path = d.path().join("app.js");
        for (accept, encoding, body) in [
            ("gzip, deflate, br", Some("br"), "BROTLI BYTES"),
            ("br", Some("br"), "BROTLI BYTES"),
            ("gzip", Some("gzip"), "GZIP BYTES"),
            ("x-gzip", Some("gzip"), "GZIP BYTES"),
            ("br;q=0, gzip", Some("gzip"), "GZIP BYTES"),
            ("br;q=0.2, gzip;q=0.8", Some("gzip"), "GZIP BYTES"),
            ("*", Some("br"), "BROTLI BYTES"),
            ("*, br;q=0", Some("gzip"), "GZIP BYTES"),
            ("br;q=0, gzip;q=0", None, JS),
            ("identity", None, JS),
            ("", None, JS),
        ] {
            let (status, headers, got) = get(&path, &[("accept-encoding", accept)]).await;
            assert_eq!(status, StatusCode::OK, "{accept}");
            assert_eq!(got, body.as_bytes(), "{accept}");
            assert_eq!(
                headers
                    .get(header::CONTENT_ENCODING)
                    .map(|v| v.to_str().unwrap()),
                encoding,
                "{accept}"
            );
            assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
            assert!(h(&headers, header::CONTENT_TYPE).ends_with("javascript; charset=utf-8"));
            assert_eq!(h(&headers, header::CONTENT_LENGTH), body.len().to_string());
        }
        // No header at all: identity, still varying.
        let (_, headers, got) = get(&path, &[]).await;
        assert_eq!(got, JS.as_bytes());
        assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
        // Only a .gz sibling: br is wanted but missing.
        let (_, headers, got) = get(
            &d.path().join("only.js"),
            &[("accept-encoding", "br, gzip")],
        )
        .await;
        assert_eq!(got, b"GZ");
        assert_eq!(h(&headers, header::CONTENT_ENCODING), "gzip");
    }

    #[tokio::test]
    async fn precompressed_etags_and_ranges() {
        let d = dir();
        let path = d.path().join("app.js");
        let (_, identity, _) = get(&path, &[]).await;
        let (_, br, _) = get(&path, &[("accept-encoding", "br")]).await;
        let br_etag = h(&br, header::ETAG).to_owned();
        assert_ne!(h(&identity, header::ETAG), br_etag);
        assert!(br_etag.ends_with("-br\""));
        let (status, headers, _) = get(
            &path,
            &[("accept-encoding", "br"), ("if-none-match", &br_etag)],
        )
        .await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
        // Ranges always address the identity bytes.
        let (status, headers, body) = get(
            &path,
            &[("accept-encoding", "br, gzip"), ("range", "bytes=0-6")],
        )
        .await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(body, &JS.as_bytes()[..7]);
        assert!(headers.get(header::CONTENT_ENCODING).is_none());
    }
}
