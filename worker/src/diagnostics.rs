//! Hooks that let tests and benchmarks observe the runtime from inside without changing
//! it: a callback around the building of `$_SERVER` (unset, the normal case, it costs one
//! atomic load per request), and switches back to PHP's own paths for comparison.

use std::sync::OnceLock;

/// What happens around the building of `$_SERVER`, on the PHP thread doing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerVarsEvent {
    Start,
    /// Done; `arena_bytes` is the PHP thread's arena capacity at this point.
    End {
        arena_bytes: usize,
    },
}

static SERVER_VARS_HOOK: OnceLock<fn(ServerVarsEvent)> = OnceLock::new();

/// Installs the hook (once per process). It runs on PHP threads and must not call PHP.
pub fn set_server_vars_hook(hook: fn(ServerVarsEvent)) -> bool {
    SERVER_VARS_HOOK.set(hook).is_ok()
}

pub(crate) fn server_vars_event(event: ServerVarsEvent) {
    if let Some(hook) = SERVER_VARS_HOOK.get() {
        hook(event);
    }
}

/// Builds `$_SERVER` through the naive reference path (a `CString` per value,
/// `php_register_variable_safe` for every entry) instead of the arena path, for the
/// benchmark that measures one against the other.
pub fn use_naive_server_vars(naive: bool) {
    crate::server_vars::set_naive(naive);
}

/// Parses `$_COOKIE` and `$_GET` with PHP's own `treat_data` instead of the shim's fast
/// path for plain names, so tests can compare the two. Process-wide.
pub fn use_php_input_parser(php: bool) {
    // SAFETY: an atomic store to a flag the shim reads when a request parses its input.
    unsafe { php_sys::ferrophp_set_fast_input(!php) }
}

/// Whether the `$_COOKIE`/`$_GET` fast path was installed when the engine started.
pub fn fast_input_parser_installed() -> bool {
    crate::sapi::FAST_INPUT_INSTALLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The request of FrankenPHP's `BenchmarkServerSuperGlobal`, as ferrophp sees it: a GET
/// with 16 Firefox headers (including a 2 KB Cookie) and 19 configured environment
/// variables. Shared by the allocation test and the benchmark so both measure one shape.
pub fn browser_request(document_root: &str, script_name: &str) -> crate::CgiRequest {
    use std::ffi::CString;
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
    crate::CgiRequest {
        method: http::Method::GET,
        request_uri: format!("{script_name}?foo=bar&baz=qux"),
        query_string: "foo=bar&baz=qux".into(),
        version: http::Version::HTTP_11,
        headers,
        remote_addr: "127.0.0.1:51234".parse().unwrap(),
        local_addr: "127.0.0.1:8080".parse().unwrap(),
        https: false,
        server_name: "localhost".into(),
        document_root: document_root.into(),
        script_name: script_name.into(),
        path_info: String::new(),
        document_uri: script_name.into(),
        env: env.into(),
    }
}
