//! Builds `$_SERVER` for an HTTP request: the CGI/1.1 variables, every request header as
//! `HTTP_*`, and the configured environment.
//!
//! The fast path writes every byte string it has to make (header variable names, joined
//! duplicate headers, ports and addresses as text, `PHP_SELF`...) into the PHP thread's
//! bump arena, so building `$_SERVER` allocates nothing on the Rust heap once the arena
//! has grown to the request's shape. Keys of the known variables (the CGI set and the
//! common request headers) are permanent, pre-hashed PHP strings made once at start-up
//! and inserted directly; uncommon header names take PHP's own registration path, with
//! its name mangling. Each value is copied into PHP request memory exactly once, because
//! PHP frees it and worker code may keep it.
//!
//! The naive path (a `CString` per value, `php_register_variable_safe` for everything) is
//! kept as the reference the benchmark measures the fast path against.

use std::ffi::{c_char, CStr};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use bumpalo::Bump;
use php_sys as sys;

use crate::php;
use crate::request::CgiRequest;

/// Request headers whose `HTTP_*` keys are made once at start-up. Sorted: looked up by
/// binary search. `proxy` is absent on purpose (see httpoxy below).
const COMMON_HEADERS: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-datetime",
    "accept-encoding",
    "accept-language",
    "access-control-request-headers",
    "access-control-request-method",
    "authorization",
    "baggage",
    "cache-control",
    "cdn-loop",
    "cf-connecting-ip",
    "cf-ipcountry",
    "cf-ray",
    "cf-visitor",
    "connection",
    "content-encoding",
    "content-length",
    "content-md5",
    "content-type",
    "cookie",
    "date",
    "dnt",
    "early-data",
    "expect",
    "forwarded",
    "from",
    "host",
    "http2-settings",
    "hx-current-url",
    "hx-request",
    "hx-target",
    "hx-trigger",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "keep-alive",
    "max-forwards",
    "origin",
    "pragma",
    "prefer",
    "priority",
    "proxy-authorization",
    "purpose",
    "range",
    "referer",
    "sec-ch-ua",
    "sec-ch-ua-arch",
    "sec-ch-ua-bitness",
    "sec-ch-ua-full-version-list",
    "sec-ch-ua-mobile",
    "sec-ch-ua-model",
    "sec-ch-ua-platform",
    "sec-ch-ua-platform-version",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "sec-gpc",
    "sec-purpose",
    "sec-websocket-extensions",
    "sec-websocket-key",
    "sec-websocket-protocol",
    "sec-websocket-version",
    "te",
    "traceparent",
    "tracestate",
    "trailer",
    "transfer-encoding",
    "true-client-ip",
    "upgrade",
    "upgrade-insecure-requests",
    "user-agent",
    "via",
    "warning",
    "x-amz-content-sha256",
    "x-amz-date",
    "x-amz-security-token",
    "x-api-key",
    "x-b3-parentspanid",
    "x-b3-sampled",
    "x-b3-spanid",
    "x-b3-traceid",
    "x-client-ip",
    "x-cluster-client-ip",
    "x-correlation-id",
    "x-csrf-token",
    "x-do-not-track",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-forwarded-proto",
    "x-forwarded-server",
    "x-github-delivery",
    "x-github-event",
    "x-http-method-override",
    "x-hub-signature",
    "x-hub-signature-256",
    "x-inertia",
    "x-inertia-version",
    "x-livewire",
    "x-original-host",
    "x-original-uri",
    "x-original-url",
    "x-pjax",
    "x-purpose",
    "x-real-ip",
    "x-request-id",
    "x-requested-with",
    "x-rewrite-url",
    "x-scheme",
    "x-turbo-request-id",
    "x-ua-compatible",
    "x-wap-profile",
    "x-xsrf-token",
];

/// The CGI variables, in the order they are registered.
#[derive(Clone, Copy)]
#[repr(usize)]
enum Cgi {
    ContentType,
    ContentLength,
    ScriptFilename,
    ScriptName,
    PathInfo,
    PathTranslated,
    PhpSelf,
    RequestUri,
    DocumentUri,
    DocumentRoot,
    QueryString,
    RequestMethod,
    ServerProtocol,
    GatewayInterface,
    ServerSoftware,
    RequestScheme,
    Https,
    RemoteAddr,
    RemotePort,
    ServerAddr,
    ServerPort,
    ServerName,
    RedirectStatus,
    FrankenphpWorker,
}

const CGI_NAMES: &[&str] = &[
    "CONTENT_TYPE",
    "CONTENT_LENGTH",
    "SCRIPT_FILENAME",
    "SCRIPT_NAME",
    "PATH_INFO",
    "PATH_TRANSLATED",
    "PHP_SELF",
    "REQUEST_URI",
    "DOCUMENT_URI",
    "DOCUMENT_ROOT",
    "QUERY_STRING",
    "REQUEST_METHOD",
    "SERVER_PROTOCOL",
    "GATEWAY_INTERFACE",
    "SERVER_SOFTWARE",
    "REQUEST_SCHEME",
    "HTTPS",
    "REMOTE_ADDR",
    "REMOTE_PORT",
    "SERVER_ADDR",
    "SERVER_PORT",
    "SERVER_NAME",
    "REDIRECT_STATUS",
    "FRANKENPHP_WORKER",
];

// Every Cgi variant has a name.
const _: () = assert!(CGI_NAMES.len() == Cgi::FrankenphpWorker as usize + 1);

const SERVER_SOFTWARE: &[u8] = concat!("ferrophp/", env!("CARGO_PKG_VERSION")).as_bytes();

/// Permanent PHP strings for the known keys; read-only once built.
struct KnownKeys {
    cgi: Vec<Key>,
    headers: Vec<Key>,
    /// filter.default is unsafe_raw: values need not pass the input filter.
    raw_filter: bool,
}

#[derive(Clone, Copy)]
struct Key(*mut sys::zend_string);

// SAFETY: the strings are permanent, interned-flagged and pre-hashed: no thread ever
// writes to them (refcounting skips interned strings), so sharing them is sound.
unsafe impl Send for Key {}
unsafe impl Sync for Key {}

static KNOWN_KEYS: OnceLock<KnownKeys> = OnceLock::new();
static NAIVE: AtomicBool = AtomicBool::new(false);

/// Switches to the naive reference path (benchmarks compare both in one process).
pub(crate) fn set_naive(naive: bool) {
    NAIVE.store(naive, Ordering::Relaxed);
}

/// Makes the permanent keys. Called once, on the engine's main thread after module
/// start-up, before any request runs.
pub(crate) fn init() {
    debug_assert!(
        COMMON_HEADERS.windows(2).all(|w| w[0] < w[1]),
        "COMMON_HEADERS unsorted"
    );
    KNOWN_KEYS.get_or_init(|| {
        let make = |name: &str| {
            // SAFETY: creates a persistent string; the engine is started.
            Key(unsafe { sys::ferrophp_permanent_string(name.as_ptr().cast(), name.len()) })
        };
        let headers = COMMON_HEADERS
            .iter()
            .map(|h| {
                let mut var = String::from("HTTP_");
                var.extend(h.chars().map(|c| {
                    if c == '-' {
                        '_'
                    } else {
                        c.to_ascii_uppercase()
                    }
                }));
                make(&var)
            })
            .collect();
        KnownKeys {
            cgi: CGI_NAMES.iter().map(|n| make(n)).collect(),
            headers,
            raw_filter: filter_default_is_raw(),
        }
    });
}

fn filter_default_is_raw() -> bool {
    let name = c"filter.default";
    let mut exists = false;
    // SAFETY: reads an ini value after module start-up; NULL when the filter extension
    // is absent (then nothing filters anyway).
    let value = unsafe {
        sys::zend_ini_string_ex(
            name.as_ptr() as *mut c_char,
            name.to_bytes().len(),
            0,
            &mut exists,
        )
    };
    // SAFETY: ini strings are NUL-terminated and live for the process.
    !exists || value.is_null() || matches!(unsafe { php::c_bytes(value) }, b"" | b"unsafe_raw")
}

/// Registers every `$_SERVER` entry for `cgi` into `track_vars`.
pub(crate) fn register_cgi_variables(
    cgi: &CgiRequest,
    script_filename: &[u8],
    worker: bool,
    track_vars: *mut sys::zval,
    arena: &Bump,
) {
    match KNOWN_KEYS.get() {
        Some(keys) if !NAIVE.load(Ordering::Relaxed) => {
            let mut out = Registrar {
                keys,
                arena,
                track_vars,
                table: std::ptr::null_mut(),
            };
            // SAFETY: track_vars is the array PHP passed to register_server_variables.
            out.table = unsafe { sys::ferrophp_array(track_vars) };
            let expected = cgi.env.len() + cgi.headers.keys_len() + CGI_NAMES.len();
            // SAFETY: sizing a live array once up front so it never rehashes.
            unsafe { sys::zend_hash_extend(out.table, expected as u32, false) };
            fill(&mut out, cgi, script_filename);
            if worker {
                out.cgi(Cgi::FrankenphpWorker, b"1");
            }
        }
        _ => {
            register_naive(cgi, script_filename, track_vars);
            if worker {
                php::register_variable(c"FRANKENPHP_WORKER", b"1", track_vars);
            }
        }
    }
}

/// Where the fast path writes: the table, the known keys, and the arena for bytes.
struct Registrar<'a> {
    keys: &'a KnownKeys,
    arena: &'a Bump,
    track_vars: *mut sys::zval,
    table: *mut sys::HashTable,
}

impl<'a> Registrar<'a> {
    fn cgi(&mut self, var: Cgi, value: &[u8]) {
        let key = self.keys.cgi[var as usize];
        self.known(key, CGI_NAMES[var as usize], value);
    }

    fn known(&mut self, key: Key, name: &str, value: &[u8]) {
        if self.keys.raw_filter {
            // SAFETY: key is a permanent string; PHP copies value into request memory.
            unsafe {
                sys::ferrophp_hash_update_stringl(
                    self.table,
                    key.0,
                    value.as_ptr().cast(),
                    value.len(),
                )
            };
        } else {
            self.filtered(name, value);
        }
    }

    /// The safe path: PHP's own registration (mangles odd names) behind the input filter.
    fn by_name(&mut self, name: &str, value: &[u8]) {
        if self.keys.raw_filter {
            let name = self.c_str(name.as_bytes());
            php::register_variable(name, value, self.track_vars);
        } else {
            self.filtered(name, value);
        }
    }

    /// Passes the value through `filter.default` first, as PHP's own SAPIs do.
    fn filtered(&mut self, name: &str, value: &[u8]) {
        let name = self.c_str(name.as_bytes());
        let mut val = php::estrndup(value);
        let mut new_len = 0usize;
        // SAFETY: val is emalloc'd (the filter may efree and replace it); name is
        // NUL-terminated in the arena.
        let keep = unsafe {
            sys::ferrophp_input_filter(
                sys::PARSE_SERVER as i32,
                name.as_ptr(),
                &mut val,
                value.len(),
                &mut new_len,
            )
        };
        if keep != 0 {
            // SAFETY: the filter left a valid emalloc'd string of new_len bytes in val.
            let filtered = unsafe { std::slice::from_raw_parts(val.cast::<u8>(), new_len) };
            php::register_variable(name, filtered, self.track_vars);
        }
        // SAFETY: val is ours to free (emalloc'd by us or by the filter).
        unsafe { sys::_efree(val.cast()) };
    }

    /// A NUL-terminated copy in the arena.
    fn c_str(&self, bytes: &[u8]) -> &'a CStr {
        let buf = self.arena.alloc_slice_fill_copy(bytes.len() + 1, 0u8);
        buf[..bytes.len()].copy_from_slice(bytes);
        CStr::from_bytes_until_nul(buf).unwrap_or(c"")
    }

    fn concat(&self, parts: &[&[u8]]) -> &'a [u8] {
        let len = parts.iter().map(|p| p.len()).sum();
        let buf = self.arena.alloc_slice_fill_copy(len, 0u8);
        let mut at = 0;
        for p in parts {
            buf[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        buf
    }

    fn display(&self, value: impl std::fmt::Display) -> &'a [u8] {
        let mut s = bumpalo::collections::String::new_in(self.arena);
        let _ = write!(s, "{value}");
        s.into_bump_str().as_bytes()
    }
}

fn fill(out: &mut Registrar<'_>, cgi: &CgiRequest, script_filename: &[u8]) {
    for (name, value) in cgi.env.iter() {
        let name = name.to_str().unwrap_or_default();
        out.by_name(name, value.as_bytes());
    }
    for name in cgi.headers.keys() {
        let name = name.as_str();
        // httpoxy: a client-sent Proxy header must never become HTTP_PROXY.
        if name == "proxy" {
            continue;
        }
        let mut values = cgi.headers.get_all(name).iter();
        let first = values.next().map_or(&b""[..], |v| v.as_bytes());
        let value = match values.next() {
            None => first,
            Some(second) => {
                let separator: &[u8] = if name == "cookie" { b"; " } else { b", " };
                let mut joined = bumpalo::collections::Vec::new_in(out.arena);
                joined.extend_from_slice(first);
                for v in std::iter::once(second).chain(values) {
                    joined.extend_from_slice(separator);
                    joined.extend_from_slice(v.as_bytes());
                }
                joined.into_bump_slice()
            }
        };
        match COMMON_HEADERS.binary_search(&name) {
            Ok(i) if out.keys.raw_filter => {
                let key = out.keys.headers[i];
                // SAFETY: key is a permanent string; PHP copies value into request memory.
                unsafe {
                    sys::ferrophp_hash_update_stringl(
                        out.table,
                        key.0,
                        value.as_ptr().cast(),
                        value.len(),
                    )
                };
            }
            _ => {
                let var = header_variable_name(out.arena, name);
                out.by_name(var, value);
            }
        }
    }

    let header =
        |name: http::header::HeaderName| cgi.headers.get(name).map_or(&b""[..], |v| v.as_bytes());
    out.cgi(Cgi::ContentType, header(http::header::CONTENT_TYPE));
    out.cgi(Cgi::ContentLength, header(http::header::CONTENT_LENGTH));
    out.cgi(Cgi::ScriptFilename, script_filename);
    out.cgi(Cgi::ScriptName, cgi.script_name.as_bytes());
    out.cgi(Cgi::PathInfo, cgi.path_info.as_bytes());
    if !cgi.path_info.is_empty() {
        let translated = out.concat(&[cgi.document_root.as_bytes(), cgi.path_info.as_bytes()]);
        out.cgi(Cgi::PathTranslated, translated);
    }
    let php_self = out.concat(&[cgi.script_name.as_bytes(), cgi.path_info.as_bytes()]);
    out.cgi(Cgi::PhpSelf, php_self);
    out.cgi(Cgi::RequestUri, cgi.request_uri.as_bytes());
    out.cgi(Cgi::DocumentUri, cgi.document_uri.as_bytes());
    out.cgi(Cgi::DocumentRoot, cgi.document_root.as_bytes());
    out.cgi(Cgi::QueryString, cgi.query_string.as_bytes());
    out.cgi(Cgi::RequestMethod, cgi.method.as_str().as_bytes());
    out.cgi(Cgi::ServerProtocol, protocol(cgi.version).as_bytes());
    out.cgi(Cgi::GatewayInterface, b"CGI/1.1");
    out.cgi(Cgi::ServerSoftware, SERVER_SOFTWARE);
    out.cgi(
        Cgi::RequestScheme,
        if cgi.https { b"https" } else { b"http" },
    );
    if cgi.https {
        out.cgi(Cgi::Https, b"on");
    }
    let remote_addr = out.display(cgi.remote_addr.ip());
    out.cgi(Cgi::RemoteAddr, remote_addr);
    let remote_port = out.display(cgi.remote_addr.port());
    out.cgi(Cgi::RemotePort, remote_port);
    let server_addr = out.display(cgi.local_addr.ip());
    out.cgi(Cgi::ServerAddr, server_addr);
    let server_port = out.display(cgi.local_addr.port());
    out.cgi(Cgi::ServerPort, server_port);
    out.cgi(Cgi::ServerName, cgi.server_name.as_bytes());
    out.cgi(Cgi::RedirectStatus, b"200");
}

/// `user-agent` → `HTTP_USER_AGENT`, in the arena. Header names are lowercase tokens.
fn header_variable_name<'a>(arena: &'a Bump, name: &str) -> &'a str {
    let mut var = bumpalo::collections::String::with_capacity_in(5 + name.len(), arena);
    var.push_str("HTTP_");
    var.extend(name.chars().map(|c| {
        if c == '-' {
            '_'
        } else {
            c.to_ascii_uppercase()
        }
    }));
    var.into_bump_str()
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

/// The reference path: a `CString` per name and value, `php_register_variable_safe` for
/// every entry. Same result, none of the care.
fn register_naive(cgi: &CgiRequest, script_filename: &[u8], track_vars: *mut sys::zval) {
    use std::ffi::CString;
    let add = |name: &str, value: &[u8]| {
        let name = CString::new(name).unwrap_or_default();
        let value = CString::new(value).unwrap_or_default();
        php::register_variable(&name, value.as_bytes(), track_vars);
    };
    for (name, value) in cgi.env.iter() {
        add(name.to_str().unwrap_or_default(), value.as_bytes());
    }
    for name in cgi.headers.keys() {
        if name == "proxy" {
            continue;
        }
        let separator = if name == http::header::COOKIE {
            "; "
        } else {
            ", "
        };
        let joined = cgi
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(separator);
        let var = format!(
            "HTTP_{}",
            name.as_str().to_ascii_uppercase().replace('-', "_")
        );
        add(&var, joined.as_bytes());
    }
    let header = |name: http::header::HeaderName| {
        cgi.headers.get(name).map_or(String::new(), |v| {
            String::from_utf8_lossy(v.as_bytes()).into_owned()
        })
    };
    add(
        "CONTENT_TYPE",
        header(http::header::CONTENT_TYPE).as_bytes(),
    );
    add(
        "CONTENT_LENGTH",
        header(http::header::CONTENT_LENGTH).as_bytes(),
    );
    add("SCRIPT_FILENAME", script_filename);
    add("SCRIPT_NAME", cgi.script_name.as_bytes());
    add("PATH_INFO", cgi.path_info.as_bytes());
    if !cgi.path_info.is_empty() {
        add(
            "PATH_TRANSLATED",
            format!("{}{}", cgi.document_root, cgi.path_info).as_bytes(),
        );
    }
    add(
        "PHP_SELF",
        format!("{}{}", cgi.script_name, cgi.path_info).as_bytes(),
    );
    add("REQUEST_URI", cgi.request_uri.as_bytes());
    add("DOCUMENT_URI", cgi.document_uri.as_bytes());
    add("DOCUMENT_ROOT", cgi.document_root.as_bytes());
    add("QUERY_STRING", cgi.query_string.as_bytes());
    add("REQUEST_METHOD", cgi.method.as_str().as_bytes());
    add("SERVER_PROTOCOL", protocol(cgi.version).as_bytes());
    add("GATEWAY_INTERFACE", b"CGI/1.1");
    add("SERVER_SOFTWARE", SERVER_SOFTWARE);
    add("REQUEST_SCHEME", if cgi.https { b"https" } else { b"http" });
    if cgi.https {
        add("HTTPS", b"on");
    }
    add("REMOTE_ADDR", cgi.remote_addr.ip().to_string().as_bytes());
    add("REMOTE_PORT", cgi.remote_addr.port().to_string().as_bytes());
    add("SERVER_ADDR", cgi.local_addr.ip().to_string().as_bytes());
    add("SERVER_PORT", cgi.local_addr.port().to_string().as_bytes());
    add("SERVER_NAME", cgi.server_name.as_bytes());
    add("REDIRECT_STATUS", b"200");
}
