//! Builds `$_SERVER` for an HTTP request: the CGI/1.1 variables, every request header as
//! `HTTP_*`, and the configured environment.
//!
//! The fast path writes every byte string it has to make (header variable names, joined
//! duplicate headers, ports and addresses as text, `PHP_SELF`...) into the PHP thread's
//! bump arena, so building `$_SERVER` allocates nothing on the Rust heap once the arena
//! has grown to the request's shape. Keys of the known variables (the CGI set and the
//! common request headers) are permanent, pre-hashed PHP strings made once at start-up
//! and inserted directly; so are the names of the configured environment, made the first
//! time each is seen (a thread remembers the keys of the environment it last served).
//! Uncommon header names take PHP's own registration path, with its name mangling. Each
//! value is copied into PHP request memory exactly once, because PHP frees it and worker
//! code may keep it.
//!
//! The environment is the same for every request of a server, and as FrankenPHP does we
//! put all of it in `$_SERVER` (dozens of variables, hundreds under Kubernetes): inserting
//! it variable by variable was a third of a worker request's `$_SERVER` build (callgrind).
//! So each distinct environment becomes a [`Template`] once, a persistent array of
//! permanent strings, and a request's `$_SERVER` starts as one block copy of it; only the
//! request's own variables are inserted one by one.
//!
//! The naive reference path the benchmark measures this one against, and the switch
//! between them, live in `diagnostics.rs`, compiled only with the `bench-fixtures`
//! feature: a production build has neither nor any per-request check for them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use bumpalo::Bump;
use php_sys as sys;

use crate::php;
use crate::request::{CgiRequest, EnvList};

/// Request headers whose `HTTP_*` keys are made once at start-up, found through
/// [`HeaderTable`]. Sorted (kept so for review). `proxy` is absent on purpose (see httpoxy
/// below).
pub(crate) const COMMON_HEADERS: &[&str] = &[
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
    RemoteHost,
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
    "REMOTE_HOST",
];

// Every Cgi variant has a name.
const _: () = assert!(CGI_NAMES.len() == Cgi::RemoteHost as usize + 1);

pub(crate) const SERVER_SOFTWARE: &[u8] =
    concat!("ferrophp/", env!("CARGO_PKG_VERSION")).as_bytes();

/// Permanent PHP strings for the known keys; read-only once built.
struct KnownKeys {
    cgi: Vec<Key>,
    headers: Vec<Key>,
    header_table: HeaderTable,
    /// filter.default is unsafe_raw: values need not pass the input filter.
    raw_filter: bool,
}

impl KnownKeys {
    /// The permanent `HTTP_*` key of a common request header (`name` in lowercase).
    fn header_index(&self, name: &str) -> Option<Key> {
        self.header_table
            .find(name.as_bytes())
            .map(|i| self.headers[i])
    }
}

/// An open-addressing table of [`COMMON_HEADERS`] positions keyed by FNV-1a of the name:
/// a lookup hashes the name once and usually compares one string, where a binary search
/// compared seven.
pub(crate) struct HeaderTable {
    /// Position + 1 in COMMON_HEADERS; 0 is an empty slot.
    slots: Vec<u16>,
}

impl HeaderTable {
    pub(crate) fn new() -> HeaderTable {
        let size = (COMMON_HEADERS.len() * 4).next_power_of_two();
        let mut slots = vec![0u16; size];
        for (i, name) in COMMON_HEADERS.iter().enumerate() {
            let mut at = fnv1a(name.as_bytes()) & (size - 1);
            while slots[at] != 0 {
                at = (at + 1) & (size - 1);
            }
            slots[at] = (i + 1) as u16;
        }
        HeaderTable { slots }
    }

    pub(crate) fn find(&self, name: &[u8]) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut at = fnv1a(name) & mask;
        loop {
            let slot = self.slots[at] as usize;
            if slot == 0 {
                return None;
            }
            if COMMON_HEADERS[slot - 1].as_bytes() == name {
                return Some(slot - 1);
            }
            at = (at + 1) & mask;
        }
    }
}

fn fnv1a(bytes: &[u8]) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as usize
}

#[derive(Clone, Copy)]
struct Key(*mut sys::zend_string);

// SAFETY: the strings are permanent, interned-flagged and pre-hashed: no thread ever
// writes to them (refcounting skips interned strings), so sharing them is sound.
unsafe impl Send for Key {}
unsafe impl Sync for Key {}

static KNOWN_KEYS: OnceLock<KnownKeys> = OnceLock::new();

/// Makes the permanent keys. Called once, on the engine's main thread after module
/// start-up, before any request runs.
pub(crate) fn init() {
    debug_assert!(
        COMMON_HEADERS.windows(2).all(|w| w[0] < w[1]),
        "COMMON_HEADERS unsorted"
    );
    known_keys();
}

/// The permanent keys: made by `init`, or (should a request ever come first) by the first
/// request, which is also after module start-up; never a second path without them.
fn known_keys() -> &'static KnownKeys {
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
            header_table: HeaderTable::new(),
            raw_filter: filter_default_is_raw(),
        }
    })
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

/// Registers every `$_SERVER` entry for `cgi` into `track_vars`: the fast path (see the
/// module doc).
pub(crate) fn register_with_arena(
    cgi: &CgiRequest,
    script_filename: &[u8],
    track_vars: *mut sys::zval,
    arena: &Bump,
) {
    let mut out = Registrar {
        keys: known_keys(),
        arena,
        track_vars,
        table: std::ptr::null_mut(),
    };
    with_thread_env(&cgi.env, |env| {
        // A filter sees each value as it is registered: no copies of unfiltered ones.
        let template = env.template.filter(|_| out.keys.raw_filter);
        if let Some(template) = template {
            // SAFETY: track_vars is the empty array PHP just made for $_SERVER (PHP reads
            // the array back from the zval after this callback); the template is sealed.
            unsafe { sys::ferrophp_server_start_from(track_vars, template.0) };
        }
        // SAFETY: track_vars is the array PHP passed to register_server_variables (or the
        // copy that replaced it).
        out.table = unsafe { sys::ferrophp_array(track_vars) };
        if template.is_none() {
            // The environment one variable at a time (a filter, or names PHP mangles).
            let expected = cgi.env.len() + cgi.headers.keys_len() + CGI_NAMES.len();
            // SAFETY: sizing a live array once up front so it never rehashes.
            unsafe { sys::zend_hash_extend(out.table, expected as u32, false) };
            for ((name, value), key) in cgi.env.iter().zip(&env.keys) {
                match key {
                    Some(key) if out.keys.raw_filter => out.insert(*key, value.as_bytes()),
                    _ => out.by_name(name.to_str().unwrap_or_default(), value.as_bytes()),
                }
            }
        }
    });
    fill(&mut out, cgi, script_filename);
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
            self.insert(key, value);
        } else {
            self.filtered(name, value);
        }
    }

    /// `table[key] = value` with no filter (only when `raw_filter`).
    fn insert(&mut self, key: Key, value: &[u8]) {
        // SAFETY: key is a permanent string; PHP copies value into request memory.
        unsafe {
            sys::ferrophp_hash_update_stringl(self.table, key.0, value.as_ptr().cast(), value.len())
        };
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

    /// An address as `Display` writes it; IPv4 without the formatting machinery.
    fn ip(&self, ip: std::net::IpAddr) -> &'a [u8] {
        let std::net::IpAddr::V4(v4) = ip else {
            return self.display(ip);
        };
        let mut buf = [0u8; 15];
        let len = ipv4_text(v4, &mut buf);
        self.arena.alloc_slice_copy(&buf[..len])
    }

    fn port(&self, port: u16) -> &'a [u8] {
        let mut buf = [0u8; 5];
        let len = decimal(u32::from(port), &mut buf);
        self.arena.alloc_slice_copy(&buf[..len])
    }

    fn display(&self, value: impl std::fmt::Display) -> &'a [u8] {
        let mut s = bumpalo::collections::String::new_in(self.arena);
        let _ = write!(s, "{value}");
        s.into_bump_str().as_bytes()
    }
}

/// Everything but the environment: the request headers, then the CGI variables.
fn fill(out: &mut Registrar<'_>, cgi: &CgiRequest, script_filename: &[u8]) {
    if cgi.headers.len() == cgi.headers.keys_len() {
        // No header repeats (the usual case): one pass over the values, no lookups.
        for (header, value) in cgi.headers.iter() {
            header_variable(out, header.as_str(), value.as_bytes());
        }
    } else {
        for header in cgi.headers.keys() {
            // By HeaderName, not by &str: a &str key would be parsed again on every lookup.
            let all = cgi.headers.get_all(header);
            let mut values = all.iter();
            let first = values.next().map_or(&b""[..], |v| v.as_bytes());
            let value = if values.next().is_none() {
                first
            } else {
                let separator: &[u8] = if header == http::header::COOKIE {
                    b"; "
                } else {
                    b", "
                };
                join_values(out.arena, &all, separator, false)
            };
            header_variable(out, header.as_str(), value);
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
    out.cgi(Cgi::RequestUri, cgi.request_uri().as_bytes());
    out.cgi(Cgi::DocumentUri, cgi.document_uri.as_bytes());
    out.cgi(Cgi::DocumentRoot, cgi.document_root.as_bytes());
    out.cgi(Cgi::QueryString, cgi.query_string().as_bytes());
    out.cgi(Cgi::RequestMethod, cgi.method.as_str().as_bytes());
    out.cgi(Cgi::ServerProtocol, protocol(cgi.version).as_bytes());
    out.cgi(Cgi::GatewayInterface, b"CGI/1.1");
    out.cgi(Cgi::ServerSoftware, SERVER_SOFTWARE);
    out.cgi(
        Cgi::RequestScheme,
        if cgi.https { b"https" } else { b"http" },
    );
    // Always defined, "on" or empty, as FrankenPHP does (Apache sets it only for TLS;
    // `!empty($_SERVER['HTTPS'])` is what apps test either way).
    out.cgi(Cgi::Https, if cgi.https { b"on" } else { b"" });
    let remote_addr = out.ip(cgi.remote_addr.ip());
    out.cgi(Cgi::RemoteAddr, remote_addr);
    // No reverse DNS lookup (like Apache's HostnameLookups Off): the address, as
    // FrankenPHP sets it.
    out.cgi(Cgi::RemoteHost, remote_addr);
    let remote_port = out.port(cgi.remote_addr.port());
    out.cgi(Cgi::RemotePort, remote_port);
    let server_addr = out.ip(cgi.local_addr.ip());
    out.cgi(Cgi::ServerAddr, server_addr);
    let server_port = out.port(cgi.local_addr.port());
    out.cgi(Cgi::ServerPort, server_port);
    out.cgi(Cgi::ServerName, cgi.server_name.as_bytes());
    out.cgi(Cgi::RedirectStatus, b"200");
}

/// The values of a repeated header joined by `separator` in the arena (one exact
/// allocation, whole-slice copies), NUL-terminated when `nul`: the one way both
/// `$_SERVER['HTTP_*']` and `SG(request_info).cookie_data` join repeated headers.
pub(crate) fn join_values<'a>(
    arena: &'a Bump,
    values: &http::header::GetAll<'_, http::HeaderValue>,
    separator: &[u8],
    nul: bool,
) -> &'a [u8] {
    let count = values.iter().count();
    let len = values.iter().map(|v| v.len()).sum::<usize>()
        + separator.len() * count.saturating_sub(1)
        + usize::from(nul);
    let buf = arena.alloc_slice_fill_copy(len, 0u8);
    let mut at = 0;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            buf[at..at + separator.len()].copy_from_slice(separator);
            at += separator.len();
        }
        buf[at..at + v.len()].copy_from_slice(v.as_bytes());
        at += v.len();
    }
    buf
}

/// Distinct environment variable names given permanent keys, at most (the rest take PHP's
/// registration path): keys are never freed, since worker scripts may keep arrays that use
/// them.
const ENV_KEY_LIMIT: usize = 1024;

/// Permanent keys of configured environment variable names, shared by every thread.
static ENV_KEYS: Mutex<Option<HashMap<Vec<u8>, Key>>> = Mutex::new(None);

thread_local! {
    /// The keys and template of the last environment this thread registered (compared by
    /// pointer, as the server shares one `Arc` between requests, else by content), so a
    /// steady configuration costs no lookup in the shared maps and no allocation.
    static THREAD_ENV: RefCell<Option<ThreadEnv>> = const { RefCell::new(None) };
}

struct ThreadEnv {
    env: EnvList,
    keys: Vec<Option<Key>>,
    template: Option<Template>,
}

/// Runs `f` with this thread's keys and template for `env`, making them if `env` is not
/// the environment it served last.
fn with_thread_env<R>(env: &EnvList, f: impl FnOnce(&ThreadEnv) -> R) -> R {
    THREAD_ENV.with(|cache| {
        let mut cache = cache.borrow_mut();
        match &mut *cache {
            Some(known) if Arc::ptr_eq(&known.env, env) => {}
            // Another Arc with the same names (a caller that builds the list per request):
            // the same keys, and the same template unless the values changed.
            Some(known) if same_names(&known.env, env) => {
                if known.env[..] != env[..] {
                    known.template = env_template(env, &known.keys);
                }
                known.env = env.clone();
            }
            _ => {
                let keys = env_keys(env);
                let template = env_template(env, &keys);
                *cache = Some(ThreadEnv {
                    env: env.clone(),
                    keys,
                    template,
                });
            }
        }
        f(cache.as_ref().expect("set above"))
    })
}

/// A sealed persistent array holding one environment as `$_SERVER` starts with it.
#[derive(Clone, Copy)]
struct Template(*mut sys::HashTable);

// SAFETY: sealed (immutable) once built, before any thread sees it, and made only of
// permanent interned strings, which no copy or refcount ever writes to.
unsafe impl Send for Template {}
unsafe impl Sync for Template {}

/// Distinct environments given a template, at most; like keys, templates are never freed
/// (request copies and worker scripts share their strings).
const ENV_TEMPLATE_LIMIT: usize = 16;

/// Room a template leaves for a request's own variables (the CGI set and its headers), so
/// that the copy takes them without growing.
const TEMPLATE_REQUEST_ROOM: usize = CGI_NAMES.len() + 32;

/// Every environment's template, shared by every thread.
static ENV_TEMPLATES: Mutex<Vec<(EnvList, Template)>> = Mutex::new(Vec::new());

/// The template of `env`, made on first use; None when some name has no permanent key
/// (PHP's own path must mangle it) or the limit is reached.
fn env_template(env: &EnvList, keys: &[Option<Key>]) -> Option<Template> {
    if keys.iter().any(Option::is_none) {
        return None;
    }
    let mut templates = ENV_TEMPLATES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, template)) = templates
        .iter()
        .find(|(known, _)| Arc::ptr_eq(known, env) || known[..] == env[..])
    {
        return Some(*template);
    }
    if templates.len() >= ENV_TEMPLATE_LIMIT {
        return None;
    }
    let capacity = env.len() + TEMPLATE_REQUEST_ROOM;
    // SAFETY: on a PHP thread of a started engine; a persistent array nobody else sees
    // until it is sealed and published below.
    let table = unsafe { sys::ferrophp_server_template_new(capacity as u32) };
    for ((_, value), key) in env.iter().zip(keys.iter().flatten()) {
        let value = value.to_bytes();
        // SAFETY: creates a permanent string (never freed: copies share it); the key is
        // permanent too.
        unsafe {
            let value = sys::ferrophp_permanent_string(value.as_ptr().cast(), value.len());
            sys::ferrophp_server_template_add(table, key.0, value);
        }
    }
    // SAFETY: filled; no write after this.
    unsafe { sys::ferrophp_server_template_seal(table) };
    templates.push((env.clone(), Template(table)));
    Some(Template(table))
}

fn same_names(a: &[(CString, CString)], b: &[(CString, CString)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
}

/// A key per entry of `env` when PHP would register its name verbatim, else None.
fn env_keys(env: &[(CString, CString)]) -> Vec<Option<Key>> {
    let mut shared = ENV_KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let shared = shared.get_or_insert_with(HashMap::new);
    env.iter()
        .map(|(name, _)| {
            let name = name.to_bytes();
            if std::str::from_utf8(name).is_err() || !verbatim_variable_name(name) {
                return None;
            }
            if let Some(key) = shared.get(name) {
                return Some(*key);
            }
            if shared.len() >= ENV_KEY_LIMIT {
                return None;
            }
            // SAFETY: creates a persistent string; we are on a PHP thread of a started
            // engine.
            let key =
                Key(unsafe { sys::ferrophp_permanent_string(name.as_ptr().cast(), name.len()) });
            shared.insert(name.to_vec(), key);
            Some(key)
        })
        .collect()
}

/// `php_register_variable_ex` stores `name` as this very string key: it has nothing PHP
/// would mangle or treat specially (spaces, dots, `[`), and cannot be a numeric key (which
/// starts with a digit or `-`). Conservative: anything else takes PHP's own path.
pub(crate) fn verbatim_variable_name(name: &[u8]) -> bool {
    !name.is_empty()
        && !matches!(name[0], b'0'..=b'9' | b'-')
        && !name.iter().any(|&b| matches!(b, b' ' | b'.' | b'['))
}

/// Writes `n` in decimal at the start of `out` (large enough), returning the length.
pub(crate) fn decimal(mut n: u32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
}

/// `a.b.c.d` as `Ipv4Addr`'s `Display` writes it, returning the length.
pub(crate) fn ipv4_text(ip: std::net::Ipv4Addr, buf: &mut [u8; 15]) -> usize {
    let mut len = 0;
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            buf[len] = b'.';
            len += 1;
        }
        len += decimal(u32::from(octet), &mut buf[len..]);
    }
    len
}

/// `$_SERVER['HTTP_*']` for one request header (all its values joined).
fn header_variable(out: &mut Registrar<'_>, name: &str, value: &[u8]) {
    // httpoxy: a client-sent Proxy header must never become HTTP_PROXY.
    if name == "proxy" {
        return;
    }
    match out.keys.header_index(name) {
        Some(key) if out.keys.raw_filter => out.insert(key, value),
        _ => {
            let var = header_variable_name(out.arena, name);
            out.by_name(var, value);
        }
    }
}

/// `user-agent` → `HTTP_USER_AGENT`, in the arena. Header names are lowercase tokens.
pub(crate) fn header_variable_name<'a>(arena: &'a Bump, name: &str) -> &'a str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_addresses_read_as_display_writes_them() {
        for n in [0u32, 7, 10, 99, 100, 255, 8080, 51234, 65535, u32::MAX] {
            let mut buf = [0u8; 10];
            let len = decimal(n, &mut buf);
            assert_eq!(&buf[..len], n.to_string().as_bytes());
        }
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.30.40",
            "255.255.255.255",
            "1.0.10.100",
        ] {
            let ip: std::net::Ipv4Addr = ip.parse().unwrap();
            let mut buf = [0u8; 15];
            let len = ipv4_text(ip, &mut buf);
            assert_eq!(&buf[..len], ip.to_string().as_bytes());
        }
    }

    #[test]
    fn header_table_finds_exactly_the_common_headers() {
        let table = HeaderTable::new();
        for (i, name) in COMMON_HEADERS.iter().enumerate() {
            assert_eq!(table.find(name.as_bytes()), Some(i), "{name}");
        }
        for name in ["proxy", "x-custom", "", "accept ", "Accept", "cookies"] {
            assert_eq!(table.find(name.as_bytes()), None, "{name}");
        }
    }

    #[test]
    fn only_names_php_keeps_as_they_are_are_verbatim() {
        for name in ["APP_ENV", "HOME", "a", "_x", "Z9", "__Host-x", "x-y"] {
            assert!(verbatim_variable_name(name.as_bytes()), "{name}");
        }
        for name in ["", "1", "12", "-1", "0x", "a.b", "a b", " a", "a[b]", "a["] {
            assert!(!verbatim_variable_name(name.as_bytes()), "{name}");
        }
    }
}
