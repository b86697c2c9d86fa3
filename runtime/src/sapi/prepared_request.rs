//! A request made ready for PHP ([`PreparedRequest`]): the context SAPI callbacks see and
//! the strings `SG(request_info)` points at, in the thread's arena. It is installed on
//! its PHP thread for the engine request, which also begins the request's trace, and
//! uninstalled after, which ends it.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::time::{SystemTime, UNIX_EPOCH};

use bumpalo::Bump;

use php_sys as sys;

use crate::deadline::Watch;
use crate::php;
use crate::request::{ResponseSink, ScriptOutcome, ScriptRequest};
use crate::request_context::{RequestContext, RequestStrings, SinkCell};
use crate::server_vars;
use crate::trace;

fn c_string(bytes: &[u8]) -> Option<CString> {
    CString::new(bytes).ok()
}

/// A NUL-terminated copy of `bytes` in the arena; None when `bytes` contains a NUL.
fn arena_c_str<'a>(arena: &'a Bump, bytes: &[u8]) -> Option<&'a CStr> {
    if bytes.contains(&0) {
        return None;
    }
    let layout = std::alloc::Layout::array::<u8>(bytes.len() + 1).ok()?;
    let ptr = arena.alloc_layout(layout).as_ptr();
    // SAFETY: `ptr` is a fresh arena allocation of bytes.len() + 1 bytes, valid for 'a;
    // filling it completely (the bytes, then the NUL) before making a slice of it means no
    // byte is read uninitialised (and none is written twice, unlike a zero fill first).
    let buf = unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len());
        ptr.add(bytes.len()).write(0);
        std::slice::from_raw_parts(ptr, bytes.len() + 1)
    };
    // SAFETY: exactly one NUL, at the end (checked above that `bytes` has none).
    Some(unsafe { CStr::from_bytes_with_nul_unchecked(buf) })
}

/// Every `Cookie` header joined with `"; "` (what PHP parses into `$_COOKIE`), NUL-terminated
/// in the arena; None without a Cookie header or when one contains a NUL.
fn joined_cookies<'a>(
    arena: &'a Bump,
    cookies: http::header::GetAll<'_, http::HeaderValue>,
) -> Option<&'a CStr> {
    let mut values = cookies.iter();
    let first = values.next()?.as_bytes();
    if values.next().is_none() {
        // One header, the usual case: a single copy (and no byte-by-byte pushes).
        return arena_c_str(arena, first);
    }
    let buf = server_vars::join_values(arena, &cookies, b"; ", true);
    if buf[..buf.len() - 1].contains(&0) {
        return None;
    }
    CStr::from_bytes_with_nul(buf).ok()
}

/// A request made ready for PHP: the context SAPI callbacks see, and everything
/// `SG(request_info)` will point at. Per-request strings live in the thread's arena.
pub(crate) struct PreparedRequest<'a> {
    pub(crate) ctx: RequestContext<'a>,
    argv: Vec<CString>,
    argv_ptrs: Vec<*mut c_char>,
    authorization: Option<&'a CStr>,
    content_length: i64,
    keep_working_directory: bool,
    pub(crate) define_std_streams: bool,
    /// The router script to run first (`ScriptRequest::router`).
    pub(crate) router: Option<&'a CStr>,
    /// Installed for the engine request by `install` (`crate::trace`).
    trace: Option<ferrophp_trace::RequestTrace>,
}

impl<'a> PreparedRequest<'a> {
    /// `watch`: the calling PHP thread's, for a job (its sink then lives there).
    pub(crate) fn new(
        request: ScriptRequest,
        arena: &'a Bump,
        watch: Option<std::sync::Arc<Watch>>,
    ) -> Result<Self, ScriptOutcome> {
        let ScriptRequest {
            script_filename,
            cgi,
            argv,
            server_vars,
            import_environment,
            keep_working_directory,
            define_std_streams,
            body,
            sink,
            router,
            trace,
        } = request;
        let router = match router {
            Some(r) => Some(
                arena_c_str(arena, r.as_os_str().as_bytes()).ok_or(ScriptOutcome {
                    exit_status: 1,
                    not_found: true,
                })?,
            ),
            None => None,
        };

        let Some(script_c) = arena_c_str(arena, script_filename.as_os_str().as_bytes()) else {
            return Err(ScriptOutcome {
                exit_status: 1,
                not_found: true,
            });
        };
        let mut strings = RequestStrings {
            script_filename: script_c,
            ..Default::default()
        };
        let mut content_length = 0;
        let mut authorization = None;
        if let Some(cgi) = &cgi {
            strings.method = arena_c_str(arena, cgi.method.as_str().as_bytes());
            strings.request_uri = arena_c_str(arena, cgi.request_uri().as_bytes());
            strings.query_string = arena_c_str(arena, cgi.query_string().as_bytes());
            strings.content_type = cgi
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| arena_c_str(arena, v.as_bytes()));
            strings.cookie = joined_cookies(arena, cgi.headers.get_all(http::header::COOKIE));
            content_length = cgi
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<i64>().ok())
                .unwrap_or(0);
            authorization = cgi
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| arena_c_str(arena, v.as_bytes()));
        }

        let sink = match watch {
            Some(watch) => {
                *watch.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
                SinkCell::Watched(watch)
            }
            None => SinkCell::Own(RefCell::new(sink)),
        };
        let ctx = RequestContext {
            sink,
            body: RefCell::new(body),
            cgi,
            c_strings: strings,
            arena,
            server_vars: server_vars
                .into_iter()
                .filter_map(|(k, v)| CString::new(k).ok().map(|k| (k, v)))
                .collect(),
            import_environment,
            worker_request: false,
            disconnected: Cell::new(false),
            script_started: Cell::new(false),
            finished: Cell::new(false),
            started_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            written: Cell::new(0),
        };
        // argv must outlive the request: PHP reads it while building $argv.
        let argv: Vec<CString> = argv.iter().filter_map(|a| c_string(a.as_bytes())).collect();
        // HTTP requests have no argv: no pointer array (and no allocation) for them.
        let argv_ptrs: Vec<*mut c_char> = if argv.is_empty() {
            Vec::new()
        } else {
            argv.iter()
                .map(|a| a.as_ptr() as *mut c_char)
                .chain(std::iter::once(std::ptr::null_mut()))
                .collect()
        };
        Ok(PreparedRequest {
            ctx,
            argv,
            argv_ptrs,
            authorization,
            content_length,
            keep_working_directory,
            define_std_streams,
            router,
            trace,
        })
    }

    /// Points `SG(server_context)` and `SG(request_info)` at this request. `self` must stay
    /// where it is until [`PreparedRequest::uninstall`].
    pub(crate) fn install(&mut self) {
        let opt_ptr = |s: &Option<&CStr>| s.map_or(std::ptr::null(), |c| c.as_ptr());
        php::set_server_context(&self.ctx as *const RequestContext as *mut c_void);
        let strings = &self.ctx.c_strings;
        // SAFETY: we are on a PHP thread; every pointer stored in request_info stays valid
        // until uninstall clears it (self does not move meanwhile).
        unsafe {
            let sg = php::sapi_globals().as_ptr();
            let info = &mut (*sg).request_info;
            info.argc = self.argv.len() as c_int;
            info.argv = if self.argv.is_empty() {
                std::ptr::null_mut()
            } else {
                self.argv_ptrs.as_mut_ptr()
            };
            info.path_translated = strings.script_filename.as_ptr() as *mut c_char;
            info.request_method = opt_ptr(&strings.method);
            info.query_string = opt_ptr(&strings.query_string) as *mut c_char;
            info.request_uri = opt_ptr(&strings.request_uri) as *mut c_char;
            info.content_type = opt_ptr(&strings.content_type);
            info.content_length = self.content_length;
            info.cookie_data = std::ptr::null_mut();
            (*sg).sapi_headers.http_response_code = 200;
            if self.keep_working_directory {
                (*sg).options |= sys::SAPI_OPTION_NO_CHDIR as c_int;
            } else {
                (*sg).options &= !(sys::SAPI_OPTION_NO_CHDIR as c_int);
            }
            // PHP_AUTH_USER/PW/DIGEST: PHP parses the header into emalloc'd request_info
            // fields and frees them at deactivation.
            sys::php_handle_auth_data(opt_ptr(&self.authorization));
        }
        trace::request_begin(self.trace.take());
    }

    /// Points `SG(server_context)` at this request again after the value moved (the
    /// `SG(request_info)` pointers lead into the arena and `argv`'s heap buffer, which do
    /// not move with it). `self` must stay where it is until [`PreparedRequest::uninstall`].
    pub(crate) fn reinstall_context(&self) {
        php::set_server_context(&self.ctx as *const RequestContext as *mut c_void);
    }

    /// Clears every pointer `install` stored and hands back the sink, so the caller can
    /// complete the response (None: the watchdog took it, and answered the client).
    pub(crate) fn uninstall(self) -> Option<Box<dyn ResponseSink>> {
        trace::request_end(self.ctx.written.get());
        php::set_server_context(std::ptr::null_mut());
        // SAFETY: plain writes to this thread's SAPI globals.
        unsafe {
            let info = &mut (*php::sapi_globals().as_ptr()).request_info;
            info.argc = 0;
            info.argv = std::ptr::null_mut();
            info.path_translated = std::ptr::null_mut();
            info.request_method = std::ptr::null();
            info.query_string = std::ptr::null_mut();
            info.request_uri = std::ptr::null_mut();
            info.content_type = std::ptr::null();
            info.cookie_data = std::ptr::null_mut();
        }
        self.ctx.sink.into_inner()
    }

    pub(crate) fn script_filename(&self) -> &'a CStr {
        self.ctx.c_strings.script_filename
    }
}
