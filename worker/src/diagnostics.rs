//! Test and benchmark fixtures, compiled only with the `bench-fixtures` feature (which
//! this crate's own tests, `ferrophp-benches` and nothing in the server binary enable):
//! a callback around the building of `$_SERVER`, switches back to naive or PHP's own
//! paths for comparison (the naive `$_SERVER` path itself lives here), and the request
//! shape the allocation test and the benchmark share. Without the feature, production
//! requests pay no check for any of it.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::ffi as sys;
use bumpalo::Bump;

use crate::php;
use crate::request::CgiRequest;
use crate::server_vars::{protocol, SERVER_SOFTWARE};

/// What happens around the building of `$_SERVER`, on the PHP thread doing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerVarsEvent {
    /// About to build.
    Start,
    /// Done.
    End {
        /// The PHP thread's arena capacity at this point.
        arena_bytes: usize,
    },
}

static SERVER_VARS_HOOK: OnceLock<fn(ServerVarsEvent)> = OnceLock::new();

/// Installs the hook (once per process). It runs on PHP threads and must not call PHP.
pub fn set_server_vars_hook(hook: fn(ServerVarsEvent)) -> bool {
    SERVER_VARS_HOOK.set(hook).is_ok()
}

fn server_vars_event(event: ServerVarsEvent) {
    if let Some(hook) = SERVER_VARS_HOOK.get() {
        hook(event);
    }
}

static NAIVE_SERVER_VARS: AtomicBool = AtomicBool::new(false);

/// Builds `$_SERVER` through the naive reference path (a `CString` per value,
/// `php_register_variable_safe` for every entry) instead of the arena path, for the
/// benchmark that measures one against the other.
pub fn use_naive_server_vars(naive: bool) {
    NAIVE_SERVER_VARS.store(naive, Ordering::Relaxed);
}

/// `$_SERVER` as `server_vars::register_with_arena` builds it, with the fixtures: the
/// hook around the build, and the path `use_naive_server_vars` chose.
pub(crate) fn register_cgi_variables(
    cgi: &CgiRequest,
    script_filename: &[u8],
    track_vars: *mut sys::zval,
    arena: &Bump,
) {
    server_vars_event(ServerVarsEvent::Start);
    if NAIVE_SERVER_VARS.load(Ordering::Relaxed) {
        register_naive(cgi, script_filename, track_vars);
    } else {
        crate::server_vars::register_with_arena(cgi, script_filename, track_vars, arena);
    }
    server_vars_event(ServerVarsEvent::End {
        arena_bytes: arena.allocated_bytes(),
    });
}

/// The reference path: a `CString` per name and value, `php_register_variable_safe` for
/// every entry. Same result, none of the care.
fn register_naive(cgi: &CgiRequest, script_filename: &[u8], track_vars: *mut sys::zval) {
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
    add("REQUEST_URI", cgi.request_uri().as_bytes());
    add("DOCUMENT_URI", cgi.document_uri.as_bytes());
    add("DOCUMENT_ROOT", cgi.document_root.as_bytes());
    add("QUERY_STRING", cgi.query_string().as_bytes());
    add("REQUEST_METHOD", cgi.method.as_str().as_bytes());
    add("SERVER_PROTOCOL", protocol(cgi.version).as_bytes());
    add("GATEWAY_INTERFACE", b"CGI/1.1");
    add("SERVER_SOFTWARE", SERVER_SOFTWARE);
    add("REQUEST_SCHEME", if cgi.https { b"https" } else { b"http" });
    add("HTTPS", if cgi.https { b"on" } else { b"" });
    add("REMOTE_ADDR", cgi.remote_addr.ip().to_string().as_bytes());
    add("REMOTE_HOST", cgi.remote_addr.ip().to_string().as_bytes());
    add("REMOTE_PORT", cgi.remote_addr.port().to_string().as_bytes());
    add("SERVER_ADDR", cgi.local_addr.ip().to_string().as_bytes());
    add("SERVER_PORT", cgi.local_addr.port().to_string().as_bytes());
    add("SERVER_NAME", cgi.server_name.as_bytes());
    add("REDIRECT_STATUS", b"200");
}

/// Whether c/input.c's `$_COOKIE`/`$_GET` fast path could be installed at start-up (it
/// still defers to PHP per request when the configuration asks for it).
static FAST_INPUT_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Records what `ferrophp_install_treat_data` answered at engine start-up.
pub(crate) fn record_fast_input_installed(installed: bool) {
    FAST_INPUT_INSTALLED.store(installed, Ordering::Relaxed);
}

/// Parses `$_COOKIE` and `$_GET` with PHP's own `treat_data` instead of c/input.c's fast
/// path for plain names, so tests can compare the two. Process-wide.
pub fn use_php_input_parser(php: bool) {
    // SAFETY: an atomic store to a flag c/input.c reads when a request parses its input.
    unsafe { sys::ferrophp_set_fast_input(!php) }
}

/// Whether the `$_COOKIE`/`$_GET` fast path was installed when the engine started.
pub fn fast_input_parser_installed() -> bool {
    FAST_INPUT_INSTALLED.load(Ordering::Relaxed)
}

/// The request of FrankenPHP's `BenchmarkServerSuperGlobal`, as ferrophp sees it: a GET
/// with 16 Firefox headers (including a 2 KB Cookie) and 19 configured environment
/// variables. Shared by the allocation test and the benchmark so both measure one shape.
pub fn browser_request(document_root: &str, script_name: &str) -> CgiRequest {
    const HEADERS: &[(&str, &str)] = &[
        ("host", "localhost"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/111.0",
        ),
        (
            "accept",
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
        ),
        ("accept-language", "fr,fr-FR;q=0.8,en-US;q=0.5,en;q=0.3"),
        ("accept-encoding", "gzip, deflate, br"),
        ("connection", "keep-alive"),
        ("upgrade-insecure-requests", "1"),
        ("sec-fetch-dest", "document"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-user", "?1"),
        ("dnt", "1"),
        ("sec-gpc", "1"),
        ("pragma", "no-cache"),
        ("cache-control", "no-cache"),
    ];
    let mut headers = http::HeaderMap::new();
    for (name, value) in HEADERS {
        headers.insert(*name, http::HeaderValue::from_static(value));
    }
    let cookie: String = (0..64)
        .map(|i| format!("cookie_{i:02}=value{i:022}; "))
        .collect();
    headers.insert(
        "cookie",
        http::HeaderValue::from_str(cookie.trim_end_matches("; ")).unwrap(),
    );
    let env: Vec<(CString, CString)> = [
        "APP_ENV=prod",
        "APP_DEBUG=0",
        "APP_SECRET=0123456789abcdef0123456789abcdef",
        "DATABASE_URL=postgresql://app:secret@127.0.0.1:5432/app?serverVersion=15&charset=utf8",
        "REDIS_URL=redis://127.0.0.1:6379",
        "MAILER_DSN=smtp://localhost:1025",
        "MESSENGER_TRANSPORT_DSN=doctrine://default?auto_setup=0",
        "LOCK_DSN=flock",
        "CORS_ALLOW_ORIGIN=^https?://(localhost|127\\.0\\.0\\.1)(:[0-9]+)?$",
        "TRUSTED_PROXIES=127.0.0.1",
        "TRUSTED_HOSTS=^localhost$",
        "APP_URL=http://localhost",
        "LOG_CHANNEL=stderr",
        "CACHE_DRIVER=apcu",
        "SESSION_DRIVER=file",
        "QUEUE_CONNECTION=sync",
        "HOME=/var/www",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "TZ=UTC",
    ]
    .iter()
    .map(|kv| {
        let (k, v) = kv.split_once('=').unwrap();
        (CString::new(k).unwrap(), CString::new(v).unwrap())
    })
    .collect();
    CgiRequest {
        method: http::Method::GET,
        target: format!("{script_name}?foo=bar&baz=qux").into(),
        version: http::Version::HTTP_11,
        headers,
        remote_addr: "127.0.0.1:51234".parse().unwrap(),
        local_addr: "127.0.0.1:8080".parse().unwrap(),
        https: false,
        server_name: "localhost".into(),
        document_root: document_root.into(),
        script_name: script_name.into(),
        path_info: "".into(),
        document_uri: script_name.into(),
        env: env.into(),
    }
}
