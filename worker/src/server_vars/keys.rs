//! The permanent, pre-hashed PHP strings for the keys of the known variables (the CGI
//! set and the `HTTP_*` names of the common request headers), made once after module
//! start-up and shared read-only by every thread.

use std::ffi::c_char;
use std::sync::OnceLock;

use crate::ffi as sys;

use super::text::{HeaderTable, COMMON_HEADERS};
use crate::php;

/// The CGI variables, in the order they are registered.
#[derive(Clone, Copy)]
#[repr(usize)]
pub(super) enum Cgi {
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

pub(super) const CGI_NAMES: &[&str] = &[
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

/// Permanent PHP strings for the known keys; read-only once built.
pub(super) struct KnownKeys {
    pub(super) cgi: Vec<Key>,
    headers: Vec<Key>,
    header_table: HeaderTable,
    /// filter.default is unsafe_raw: values need not pass the input filter.
    pub(super) raw_filter: bool,
}

impl KnownKeys {
    /// The permanent `HTTP_*` key of a common request header (`name` in lowercase).
    pub(super) fn header_index(&self, name: &str) -> Option<Key> {
        self.header_table
            .find(name.as_bytes())
            .map(|i| self.headers[i])
    }
}

#[derive(Clone, Copy)]
pub(super) struct Key(pub(super) *mut sys::zend_string);

// SAFETY: the strings are permanent, interned-flagged and pre-hashed: no thread ever
// writes to them (refcounting skips interned strings), so sharing them is sound.
unsafe impl Send for Key {}
// SAFETY: as for Send: nothing writes to a permanent interned string, so shared
// references from many threads only ever read it.
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
pub(super) fn known_keys() -> &'static KnownKeys {
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
