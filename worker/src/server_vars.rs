//! Builds `$_SERVER` for an HTTP request: the CGI/1.1 variables, every request header as
//! `HTTP_*`, and the configured environment, registered through PHP's safe path.

use std::ffi::{CStr, CString};

use php_sys as sys;

use crate::php;
use crate::request::CgiRequest;

/// Registers every `$_SERVER` entry for `cgi` into `track_vars`.
pub(crate) fn register_cgi_variables(
    cgi: &CgiRequest,
    script_filename: &[u8],
    track_vars: *mut sys::zval,
) {
    let add = |name: &CStr, value: &[u8]| php::register_variable(name, value, track_vars);

    for (name, value) in cgi.env.iter() {
        add(name, value.as_bytes());
    }
    for name in cgi.headers.keys() {
        // httpoxy: a client-sent Proxy header must never become HTTP_PROXY.
        if name == "proxy" {
            continue;
        }
        let separator: &[u8] = if name == http::header::COOKIE {
            b"; "
        } else {
            b", "
        };
        let mut joined = Vec::new();
        for (i, v) in cgi.headers.get_all(name).iter().enumerate() {
            if i > 0 {
                joined.extend_from_slice(separator);
            }
            joined.extend_from_slice(v.as_bytes());
        }
        let var = header_variable_name(name.as_str());
        add(&var, &joined);
    }

    let header =
        |name: http::header::HeaderName| cgi.headers.get(name).map_or(&b""[..], |v| v.as_bytes());
    add(c"CONTENT_TYPE", header(http::header::CONTENT_TYPE));
    add(c"CONTENT_LENGTH", header(http::header::CONTENT_LENGTH));
    add(c"SCRIPT_FILENAME", script_filename);
    add(c"SCRIPT_NAME", cgi.script_name.as_bytes());
    add(c"PATH_INFO", cgi.path_info.as_bytes());
    if !cgi.path_info.is_empty() {
        let mut translated = cgi.document_root.as_bytes().to_vec();
        translated.extend_from_slice(cgi.path_info.as_bytes());
        add(c"PATH_TRANSLATED", &translated);
    }
    let mut php_self = cgi.script_name.as_bytes().to_vec();
    php_self.extend_from_slice(cgi.path_info.as_bytes());
    add(c"PHP_SELF", &php_self);
    add(c"REQUEST_URI", cgi.request_uri.as_bytes());
    add(c"DOCUMENT_URI", cgi.document_uri.as_bytes());
    add(c"DOCUMENT_ROOT", cgi.document_root.as_bytes());
    add(c"QUERY_STRING", cgi.query_string.as_bytes());
    add(c"REQUEST_METHOD", cgi.method.as_str().as_bytes());
    add(c"SERVER_PROTOCOL", protocol(cgi.version).as_bytes());
    add(c"GATEWAY_INTERFACE", b"CGI/1.1");
    add(
        c"SERVER_SOFTWARE",
        concat!("ferrophp/", env!("CARGO_PKG_VERSION")).as_bytes(),
    );
    add(
        c"REQUEST_SCHEME",
        if cgi.https { b"https" } else { b"http" },
    );
    if cgi.https {
        add(c"HTTPS", b"on");
    }
    add(c"REMOTE_ADDR", cgi.remote_addr.ip().to_string().as_bytes());
    add(
        c"REMOTE_PORT",
        cgi.remote_addr.port().to_string().as_bytes(),
    );
    add(c"SERVER_ADDR", cgi.local_addr.ip().to_string().as_bytes());
    add(c"SERVER_PORT", cgi.local_addr.port().to_string().as_bytes());
    add(c"SERVER_NAME", cgi.server_name.as_bytes());
    add(c"REDIRECT_STATUS", b"200");
}

/// `SERVER_PROTOCOL` text for an HTTP version.
pub(crate) fn protocol(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// `user-agent` → `HTTP_USER_AGENT`. Header names from `http` are lowercase ASCII tokens.
fn header_variable_name(name: &str) -> CString {
    let mut var = Vec::with_capacity(5 + name.len() + 1);
    var.extend_from_slice(b"HTTP_");
    var.extend(name.bytes().map(|b| {
        if b == b'-' {
            b'_'
        } else {
            b.to_ascii_uppercase()
        }
    }));
    // Header names are tokens: no NUL can occur.
    CString::new(var).expect("header names contain no NUL")
}
