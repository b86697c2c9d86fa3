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
//! So each distinct environment becomes a [`Template`](environment::Template) once, a persistent array of
//! permanent strings, and a request's `$_SERVER` starts as one block copy of it; only the
//! request's own variables are inserted one by one.
//!
//! The naive reference path the benchmark measures this one against, and the switch
//! between them, live in `diagnostics.rs`, compiled only with the `bench-fixtures`
//! feature: a production build has neither nor any per-request check for them.
//!
//! Layout: this file registers a request's variables (the fast path: [`Registrar`]);
//! `keys` makes the permanent keys of the known variables once; `environment` the keys
//! and templates of the configured environment; `text` the byte work (header variable
//! names, numbers and addresses as text, joined headers), free of PHP calls so it can be
//! fuzzed (`crate::fuzzing`). Dependencies go one way: this file → environment → keys →
//! text.

mod environment;
mod keys;
mod text;

use std::ffi::CStr;
use std::fmt::Write as _;

use crate::ffi as sys;
use bumpalo::Bump;

use crate::php;
use crate::request::CgiRequest;
use environment::with_thread_env;
use keys::{known_keys, Cgi, Key, KnownKeys, CGI_NAMES};

pub(crate) use keys::init;
pub(crate) use text::{
    decimal, header_variable_name, ipv4_text, join_values, protocol, verbatim_variable_name,
    HeaderTable, COMMON_HEADERS, SERVER_SOFTWARE,
};

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
