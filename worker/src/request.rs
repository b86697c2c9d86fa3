//! What a script run is given and what it gives back: the plain Rust interface between
//! the runtime and whoever feeds it (the HTTP server, `php-cli`, tests).
//!
//! A [`ScriptRequest`] goes in; output and the response head leave through its
//! [`ResponseSink`] while the script runs; a [`ScriptOutcome`] says how it ended.

use std::ffi::CString;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One execution of one PHP script.
pub struct ScriptRequest {
    /// The script to run (`SCRIPT_FILENAME`), shared with whoever routed the request
    /// (the server's route cache hands out the same path to every request for it).
    pub script_filename: Arc<Path>,
    /// The HTTP request this run answers (None for CLI runs): fills `SG(request_info)`
    /// and the CGI/1.1 part of `$_SERVER`.
    pub cgi: Option<CgiRequest>,
    /// `$argv` (the script name first, as in the `php` CLI). Empty for HTTP requests.
    pub argv: Vec<String>,
    /// Entries added to `$_SERVER` after the imported environment.
    pub server_vars: Vec<(String, Vec<u8>)>,
    /// Import the process environment into `$_SERVER` and `getenv()` (the CLI does).
    pub import_environment: bool,
    /// Leave the virtual working directory alone instead of moving into the script's
    /// directory (the CLI keeps the caller's directory; php-fpm moves).
    pub keep_working_directory: bool,
    /// Define the CLI's `STDIN`, `STDOUT` and `STDERR` constants before the script runs.
    pub define_std_streams: bool,
    /// Request body (`php://input`, `$_POST`). Empty for CLI runs.
    pub body: Box<dyn Read + Send>,
    /// Where the response head and output go.
    pub sink: Box<dyn ResponseSink>,
    /// A router script (`php -S ... router.php`) that runs first, in the same request.
    /// When it returns `false` the request goes on with `script_filename`, or, when that
    /// is the router itself, [`ResponseSink::declined`] hands it back to the caller.
    pub router: Option<PathBuf>,
    /// The request's place in a trace (`ferrophp_trace`): its context for
    /// `Ferrophp\Trace`, and its server span when sampled. None: not traced.
    pub trace: Option<ferrophp_trace::RequestTrace>,
}

impl ScriptRequest {
    /// A request for `script` (copied) with nothing else set: no argv, no body, output to
    /// `sink`.
    pub fn new(script: impl AsRef<Path>, sink: Box<dyn ResponseSink>) -> Self {
        Self::shared(Arc::from(script.as_ref()), sink)
    }

    /// [`ScriptRequest::new`] for a script path that is already shared (nothing copied).
    pub fn shared(script: Arc<Path>, sink: Box<dyn ResponseSink>) -> Self {
        ScriptRequest {
            script_filename: script,
            cgi: None,
            argv: Vec::new(),
            server_vars: Vec::new(),
            import_environment: false,
            keep_working_directory: false,
            define_std_streams: false,
            body: Box::new(io::empty()),
            sink,
            router: None,
            trace: None,
        }
    }
}

/// The HTTP side of a script run: the request head as received plus what routing decided.
#[derive(Debug, Clone)]
pub struct CgiRequest {
    /// `REQUEST_METHOD`.
    pub method: http::Method,
    /// The request target as received: `REQUEST_URI` and `QUERY_STRING`.
    pub target: RequestTarget,
    /// The HTTP version (`SERVER_PROTOCOL`, and the protocol PHP answers with).
    pub version: http::Version,
    /// The request headers, each an `HTTP_*` variable.
    pub headers: http::HeaderMap,
    /// The client's address (`REMOTE_ADDR`, `REMOTE_PORT`).
    pub remote_addr: SocketAddr,
    /// The address the connection came in on (`SERVER_ADDR`, `SERVER_PORT`).
    pub local_addr: SocketAddr,
    /// The connection is TLS (`HTTPS=on`, `REQUEST_SCHEME=https`).
    pub https: bool,
    /// `SERVER_NAME`: the Host header without port, else the configured name.
    pub server_name: ServerName,
    /// `DOCUMENT_ROOT`: the document root the request was routed in.
    pub document_root: Arc<str>,
    /// URL path of the script (`/index.php`). Shared, as the next two, with the routing
    /// decision the server caches.
    pub script_name: Arc<str>,
    /// Decoded remainder after the script (`/foo` in `/index.php/foo`), or empty.
    pub path_info: Arc<str>,
    /// Decoded, normalised request path (nginx's `$uri`).
    pub document_uri: Arc<str>,
    /// Configured environment variables, added to `$_SERVER` and visible to `getenv()`.
    pub env: EnvList,
}

impl CgiRequest {
    /// `REQUEST_URI`: the request target exactly as received (path and query).
    pub fn request_uri(&self) -> &str {
        self.target.request_uri()
    }

    /// `QUERY_STRING`: the part after `?`, as received; empty when there is none.
    pub fn query_string(&self) -> &str {
        self.target.query_string()
    }
}

/// A request's target (path and query). An HTTP request's `Uri` is kept as it came, so
/// passing it on copies nothing; other callers (tests, fixtures) may give any text,
/// including bytes a `Uri` refuses.
#[derive(Debug, Clone)]
pub struct RequestTarget(TargetRepr);

#[derive(Debug, Clone)]
enum TargetRepr {
    Uri(http::Uri),
    Text(String),
}

impl RequestTarget {
    /// The path and query of `uri` (`/` when it has none, as for `OPTIONS *`).
    pub fn request_uri(&self) -> &str {
        match &self.0 {
            TargetRepr::Uri(uri) => uri.path_and_query().map_or("/", |pq| pq.as_str()),
            TargetRepr::Text(text) => text,
        }
    }

    /// The part after the first `?`; empty when there is none.
    pub fn query_string(&self) -> &str {
        match &self.0 {
            TargetRepr::Uri(uri) => uri.query().unwrap_or(""),
            TargetRepr::Text(text) => text.split_once('?').map_or("", |(_, q)| q),
        }
    }
}

impl From<http::Uri> for RequestTarget {
    fn from(uri: http::Uri) -> Self {
        RequestTarget(TargetRepr::Uri(uri))
    }
}

/// `path?query` as given, for requests that did not come as an HTTP `Uri`.
impl From<String> for RequestTarget {
    fn from(text: String) -> Self {
        RequestTarget(TargetRepr::Text(text))
    }
}

impl From<&str> for RequestTarget {
    fn from(text: &str) -> Self {
        RequestTarget(TargetRepr::Text(text.to_owned()))
    }
}

/// `SERVER_NAME`: usually the request's own Host header without its port, shared with
/// the header map instead of copied; else a name of its own (configured, or the local
/// address).
#[derive(Debug, Clone)]
pub struct ServerName(NameRepr);

#[derive(Debug, Clone)]
enum NameRepr {
    /// The first `len` bytes of a header value.
    Prefix(http::HeaderValue, usize),
    Name(Arc<str>),
}

impl ServerName {
    /// The first `len` bytes of `value` (a Host header without its `:port`); all of it
    /// when `len` is longer.
    pub fn host_prefix(value: http::HeaderValue, len: usize) -> Self {
        let len = len.min(value.len());
        ServerName(NameRepr::Prefix(value, len))
    }

    /// The name as `SERVER_NAME` gives it.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            NameRepr::Prefix(value, len) => &value.as_bytes()[..*len],
            NameRepr::Name(name) => name.as_bytes(),
        }
    }
}

impl From<Arc<str>> for ServerName {
    fn from(name: Arc<str>) -> Self {
        ServerName(NameRepr::Name(name))
    }
}

impl From<&str> for ServerName {
    fn from(name: &str) -> Self {
        ServerName(NameRepr::Name(name.into()))
    }
}

impl From<String> for ServerName {
    fn from(name: String) -> Self {
        ServerName(NameRepr::Name(name.into()))
    }
}

/// Configured environment variables as the C strings `$_SERVER` and `getenv()` need,
/// shared by every request.
pub type EnvList = Arc<[(CString, CString)]>;

/// An [`EnvList`] from names and values. Entries containing a NUL byte cannot be
/// expressed and are dropped.
pub fn env_list(vars: &[(String, String)]) -> EnvList {
    vars.iter()
        .filter_map(|(k, v)| {
            Some((
                CString::new(k.as_str()).ok()?,
                CString::new(v.as_str()).ok()?,
            ))
        })
        .collect()
}

/// Status line and headers exactly as the script set them, as HTTP fields: made on the
/// PHP thread, so the response takes them as they are. Header lines that are not valid
/// HTTP (a name with a space, a value with a control character) were dropped, with a
/// warning, when the head was read from PHP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status code (200 unless the script chose another).
    pub status: u16,
    /// In the order PHP keeps them; a repeated name (`Set-Cookie`) keeps every value, in
    /// order, listed with the first one (`HeaderMap`'s order, which the response has).
    pub headers: http::HeaderMap,
}

impl Default for ResponseHead {
    /// 200 and no header: what a script that set nothing answers.
    fn default() -> Self {
        ResponseHead {
            status: 200,
            headers: http::HeaderMap::new(),
        }
    }
}

/// The client went away: output can no longer be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// Receives a script's response. Called on the PHP thread, in order: `send_head` once
/// (before the first body byte), then `write`/`flush` any number of times.
pub trait ResponseSink: Send {
    /// The response's status and headers, once, before the first body byte.
    fn send_head(&mut self, head: ResponseHead) -> Result<(), Disconnected>;
    /// A 1xx response (`headers_send(103)` for Early Hints) before the final head.
    /// Sinks that cannot deliver one drop it.
    fn send_informational(&mut self, _head: ResponseHead) -> Result<(), Disconnected> {
        Ok(())
    }
    /// Body bytes, in order.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected>;
    /// PHP flushed its output (`flush()`): pass on what is buffered.
    fn flush(&mut self) -> Result<(), Disconnected> {
        Ok(())
    }
    /// The response is complete (`fastcgi_finish_request()`): deliver what is buffered and
    /// end the body, while the script may go on running. Later writes are discarded.
    fn finish(&mut self) {
        let _ = self.flush();
    }
    /// The router script returned `false` (see [`ScriptRequest::router`]): the caller
    /// answers the request itself, and what PHP sends from now on is dropped. Sinks
    /// that already passed output on keep that response.
    fn declined(&mut self) {}
    /// The PHP thread running this request was retired, stuck past the request's
    /// deadline (called on the watchdog's thread, never while the PHP thread uses the
    /// sink): answer the client with a gateway timeout, or cut a response already under
    /// way; it must never look complete. The PHP thread sees its client gone.
    fn abandon(self: Box<Self>) {}
}

/// How a script run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// `exit(N)`, or 255 after a fatal error or uncaught exception, else 0.
    pub exit_status: i32,
    /// The script file could not be opened.
    pub not_found: bool,
}

/// Collects output in memory; for tests and small internal uses.
#[derive(Debug, Default)]
pub struct BufferSink {
    /// The head, once sent.
    pub head: Option<ResponseHead>,
    /// The body so far.
    pub body: Vec<u8>,
}

impl ResponseSink for std::sync::Arc<std::sync::Mutex<BufferSink>> {
    fn send_head(&mut self, head: ResponseHead) -> Result<(), Disconnected> {
        self.lock().expect("sink lock").head = Some(head);
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected> {
        self.lock()
            .expect("sink lock")
            .body
            .extend_from_slice(bytes);
        Ok(())
    }
}
