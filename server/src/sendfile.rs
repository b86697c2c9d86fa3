//! `X-Sendfile` / `X-Accel-Redirect`: a PHP response that names a file in the configured
//! private directory is answered with that file, served by the static-file path (ranges,
//! conditional requests, precompressed siblings), after PHP has done its part (access
//! control, statistics, headers).
//!
//! - `X-Accel-Redirect: /reports/q3.pdf` (nginx's form) is a URL path inside the directory:
//!   strictly percent-decoded and normalised like any request path, `/` being the
//!   directory itself.
//! - `X-Sendfile: /srv/private/reports/q3.pdf` (Apache's form) is a filesystem path; it
//!   must lie inside the directory.
//!
//! Either way the file is resolved with symlinks followed and must still be inside the
//! directory: a name that escapes it gets 403 and a warning (the app, not the client,
//! chose it), a missing file 404. Every header PHP set is kept except the two above and
//! those that describe the representation (type, length, encoding, validators, ranges),
//! which come from the file. So that Symfony's `BinaryFileResponse` (with
//! `trustXSendfileTypeHeader()`) uses it unchanged, requests carry `X-Sendfile-Type:
//! X-Accel-Redirect` and `X-Accel-Mapping: DIR=/`, replacing whatever the client sent.
//!
//! Without `--sendfile-dir` nothing here runs, and the headers pass through as any other.

use std::io;
use std::path::{Path, PathBuf};

use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};

use crate::body::{self, ResponseBody};

const X_SENDFILE: HeaderName = HeaderName::from_static("x-sendfile");
const X_ACCEL_REDIRECT: HeaderName = HeaderName::from_static("x-accel-redirect");
const X_SENDFILE_TYPE: HeaderName = HeaderName::from_static("x-sendfile-type");
const X_ACCEL_MAPPING: HeaderName = HeaderName::from_static("x-accel-mapping");

/// Request headers the static-file path reads (ranges, validators, encodings).
const STATIC_REQUEST_HEADERS: [HeaderName; 6] = [
    header::RANGE,
    header::IF_RANGE,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::ACCEPT_ENCODING,
    header::IF_MATCH,
];

/// Response headers that describe PHP's body, which the file replaces.
const REPRESENTATION_HEADERS: [HeaderName; 8] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::CONTENT_RANGE,
    header::ETAG,
    header::LAST_MODIFIED,
    header::ACCEPT_RANGES,
    header::TRANSFER_ENCODING,
];

/// The private directory files may be sent from.
#[derive(Debug)]
pub(crate) struct Sendfile {
    dir: PathBuf,
    mapping: HeaderValue,
}

/// What of the request a sendfile answer needs, copied before the request goes to PHP.
pub(crate) struct RequestFacts {
    head: bool,
    headers: HeaderMap,
}

impl Sendfile {
    pub(crate) fn new(dir: &Path) -> io::Result<Sendfile> {
        let dir = std::fs::canonicalize(dir)?;
        if !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", dir.display()),
            ));
        }
        let mapping = HeaderValue::from_str(&format!("{}=/", dir.display())).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the sendfile directory's path cannot be sent in a header",
            )
        })?;
        Ok(Sendfile { dir, mapping })
    }

    /// Tells the app how to hand files over, and keeps what answering with a file needs.
    pub(crate) fn prepare_request(&self, method: &Method, headers: &mut HeaderMap) -> RequestFacts {
        headers.insert(
            X_SENDFILE_TYPE,
            HeaderValue::from_static("X-Accel-Redirect"),
        );
        headers.insert(X_ACCEL_MAPPING, self.mapping.clone());
        let mut kept = HeaderMap::new();
        for name in STATIC_REQUEST_HEADERS {
            for value in headers.get_all(&name) {
                kept.append(name.clone(), value.clone());
            }
        }
        RequestFacts {
            head: *method == Method::HEAD,
            headers: kept,
        }
    }

    /// The file response that replaces PHP's, when PHP asked for one.
    pub(crate) async fn intercept(
        &self,
        php: &Response<ResponseBody>,
        request: &RequestFacts,
    ) -> Option<Response<ResponseBody>> {
        let accel = php.headers().get(&X_ACCEL_REDIRECT);
        let sendfile = php.headers().get(&X_SENDFILE);
        let target = match (accel, sendfile) {
            (None, None) => return None,
            (Some(uri), _) => self.resolve_uri(uri),
            (None, Some(path)) => self.resolve_path(path),
        };
        let mut response = match target {
            Ok(path) => {
                // Like nginx's internal redirect: the file is fetched, whatever the method
                // PHP answered (a download after a POST).
                let method = if request.head {
                    Method::HEAD
                } else {
                    Method::GET
                };
                crate::static_files::serve(&path, &method, &request.headers).await
            }
            Err(status) => {
                body::text_response(status, status.canonical_reason().unwrap_or("Refused"))
            }
        };
        let headers = response.headers_mut();
        for (name, value) in php.headers() {
            if name == X_ACCEL_REDIRECT
                || name == X_SENDFILE
                || REPRESENTATION_HEADERS.contains(name)
            {
                continue;
            }
            headers.append(name.clone(), value.clone());
        }
        Some(response)
    }

    fn resolve_uri(&self, uri: &HeaderValue) -> Result<PathBuf, StatusCode> {
        let raw = uri.to_str().map_err(|_| self.refuse("not text", uri))?;
        // Only the path: a query string means nothing to a file.
        let raw = raw.split(['?', '#']).next().unwrap_or("");
        let raw = if raw.starts_with('/') {
            raw.to_owned()
        } else {
            format!("/{raw}")
        };
        let path = crate::routing::normalize(&raw).map_err(|why| self.refuse(why, uri))?;
        if path.split('/').any(|segment| segment == "..") {
            return Err(self.refuse("leaves the directory", uri));
        }
        self.inside(&self.dir.join(path.trim_start_matches('/')), uri)
    }

    fn resolve_path(&self, value: &HeaderValue) -> Result<PathBuf, StatusCode> {
        let raw = value.to_str().map_err(|_| self.refuse("not text", value))?;
        let path = Path::new(raw);
        if !path.is_absolute() {
            return Err(self.refuse("not an absolute path", value));
        }
        self.inside(path, value)
    }

    /// `path` with symlinks resolved, if that is a file inside the directory.
    fn inside(&self, path: &Path, named: &HeaderValue) -> Result<PathBuf, StatusCode> {
        match std::fs::canonicalize(path) {
            Ok(real) if real.starts_with(&self.dir) => Ok(real),
            Ok(_) => Err(self.refuse("resolves outside the sendfile directory", named)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StatusCode::NOT_FOUND),
            Err(e) => {
                tracing::warn!(file = ?named, "X-Sendfile/X-Accel-Redirect: {e}");
                Err(StatusCode::FORBIDDEN)
            }
        }
    }

    fn refuse(&self, why: &str, named: &HeaderValue) -> StatusCode {
        tracing::warn!(
            file = ?named,
            dir = %self.dir.display(),
            "refusing X-Sendfile/X-Accel-Redirect: {why}"
        );
        StatusCode::FORBIDDEN
    }
}
