//! What a script run is given and what it gives back: the plain Rust interface between
//! the runtime and whoever feeds it (the HTTP server, `php-cli`, tests).
//!
//! A [`ScriptRequest`] goes in; output and the response head leave through its
//! [`ResponseSink`] while the script runs; a [`ScriptOutcome`] says how it ended.

use std::ffi::CString;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// One execution of one PHP script.
pub struct ScriptRequest {
    /// The script to run (`SCRIPT_FILENAME`).
    pub script_filename: PathBuf,
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
}

impl ScriptRequest {
    /// A request for `script` with nothing else set: no argv, no body, output to `sink`.
    pub fn new(script: impl Into<PathBuf>, sink: Box<dyn ResponseSink>) -> Self {
        ScriptRequest {
            script_filename: script.into(),
            cgi: None,
            argv: Vec::new(),
            server_vars: Vec::new(),
            import_environment: false,
            keep_working_directory: false,
            define_std_streams: false,
            body: Box::new(io::empty()),
            sink,
            router: None,
        }
    }
}

/// The HTTP side of a script run: the request head as received plus what routing decided.
#[derive(Debug, Clone)]
pub struct CgiRequest {
    pub method: http::Method,
    /// The request target exactly as received (path and query), for `REQUEST_URI`.
    pub request_uri: String,
    /// The part after `?`, as received; empty when there is none.
    pub query_string: String,
    pub version: http::Version,
    pub headers: http::HeaderMap,
    pub remote_addr: SocketAddr,
    pub local_addr: SocketAddr,
    /// The connection is TLS (`HTTPS=on`, `REQUEST_SCHEME=https`).
    pub https: bool,
    /// `SERVER_NAME`: the Host header without port, else the configured name.
    pub server_name: String,
    pub document_root: Arc<str>,
    /// URL path of the script (`/index.php`).
    pub script_name: String,
    /// Decoded remainder after the script (`/foo` in `/index.php/foo`), or empty.
    pub path_info: String,
    /// Decoded, normalised request path (nginx's `$uri`).
    pub document_uri: String,
    /// Configured environment variables, added to `$_SERVER` and visible to `getenv()`.
    pub env: Arc<[(CString, CString)]>,
}

/// Environment variables as the C strings `$_SERVER` and `getenv()` need, shared by
/// every request. Entries containing a NUL byte cannot be expressed and are dropped.
pub fn env_list(vars: &[(String, String)]) -> Arc<[(CString, CString)]> {
    vars.iter()
        .filter_map(|(k, v)| {
            Some((
                CString::new(k.as_str()).ok()?,
                CString::new(v.as_str()).ok()?,
            ))
        })
        .collect()
}

/// Status line and headers exactly as the script set them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// Header lines split at the first colon, in the order PHP keeps them.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// The client went away: output can no longer be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// Receives a script's response. Called on the PHP thread, in order: `send_head` once
/// (before the first body byte), then `write`/`flush` any number of times.
pub trait ResponseSink: Send {
    fn send_head(&mut self, head: ResponseHead) -> Result<(), Disconnected>;
    /// A 1xx response (`headers_send(103)` for Early Hints) before the final head.
    /// Sinks that cannot deliver one drop it.
    fn send_informational(&mut self, _head: ResponseHead) -> Result<(), Disconnected> {
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected>;
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
    pub head: Option<ResponseHead>,
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
