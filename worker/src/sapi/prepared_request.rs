//! A request made ready for PHP ([`PreparedRequest`]): the context SAPI callbacks see and
//! the strings `SG(request_info)` points at, in the thread's arena, bound into the scope
//! that c/request_scope.c installs for the engine request (which also begins the
//! request's trace) and uninstalls after it.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::time::{SystemTime, UNIX_EPOCH};

use bumpalo::Bump;

use crate::ffi as sys;

use crate::deadline::Watch;
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
    /// Begun with the engine request by `bind` (`crate::trace`).
    trace: Option<ferrophp_trace::RequestTrace>,
    /// What C installs and reports back (see `bind`).
    scope: sys::ferrophp_request_scope,
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
            scope: sys::ferrophp_request_scope::default(),
        })
    }

    /// The request as its scope (`ferrophp_request_scope`, c/request_scope.c): what
    /// C installs in `SG(server_context)` and `SG(request_info)`, with the job's deadlines
    /// (`deadline::enter_job`; None for a request that is no client's job) and whether the
    /// script exists. Also begins the request's trace. `self` must stay where it is until
    /// the scope is uninstalled, which the C side does at the end of the request.
    pub(crate) fn bind(
        &mut self,
        deadline: Option<(i64, i64)>,
        script_exists: bool,
    ) -> *mut sys::ferrophp_request_scope {
        let opt_ptr = |s: &Option<&CStr>| s.map_or(std::ptr::null(), |c| c.as_ptr());
        let strings = &self.ctx.c_strings;
        let (request_timeout_ns, slowlog_ns) = deadline.unwrap_or_default();
        self.scope = sys::ferrophp_request_scope {
            server_context: &self.ctx as *const RequestContext as *mut c_void,
            path_translated: strings.script_filename.as_ptr() as *mut c_char,
            request_method: opt_ptr(&strings.method),
            query_string: opt_ptr(&strings.query_string) as *mut c_char,
            request_uri: opt_ptr(&strings.request_uri) as *mut c_char,
            content_type: opt_ptr(&strings.content_type),
            authorization: opt_ptr(&self.authorization),
            content_length: self.content_length,
            argc: self.argv.len() as c_int,
            argv: if self.argv.is_empty() {
                std::ptr::null_mut()
            } else {
                self.argv_ptrs.as_mut_ptr()
            },
            keep_working_directory: self.keep_working_directory,
            disconnected: self.ctx.disconnected.as_ptr(),
            script_started: self.ctx.script_started.as_ptr(),
            deadline: deadline.is_some(),
            request_timeout_ns,
            slowlog_ns,
            router: opt_ptr(&self.router),
            script_exists,
            define_std_streams: self.define_std_streams,
            exit_status: 0,
            not_found: false,
            expired: sys::FERROPHP_EXPIRED_NONE,
            heap_bytes: 0,
        };
        trace::request_begin(self.trace.take());
        &mut self.scope
    }

    /// What the request's run left in its scope: how the script ended.
    pub(crate) fn outcome(&self) -> ScriptOutcome {
        ScriptOutcome {
            exit_status: self.scope.exit_status,
            not_found: self.scope.not_found,
        }
    }

    /// Why the request's deadline passed, read when its scope was uninstalled
    /// (`FERROPHP_EXPIRED_*`).
    pub(crate) fn expired(&self) -> u32 {
        self.scope.expired
    }

    /// What the thread's PHP heap held from the OS when a worker request responded.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.scope.heap_bytes
    }

    /// After the C side uninstalled the scope: ends the request's trace and hands back
    /// the sink, so the caller can complete the response (None: the watchdog took it, and
    /// answered the client).
    pub(crate) fn finish(self) -> Option<Box<dyn ResponseSink>> {
        trace::request_end(self.ctx.written.get());
        self.ctx.sink.into_inner()
    }

    /// Uninstalls the scope from the C side's globals, for a request kept installed
    /// past its own end (a worker request whose handler ended the script).
    pub(crate) fn uninstall(&mut self) {
        // SAFETY: on the PHP thread the scope was installed on; it only clears this
        // thread's SAPI globals and ends its deadline.
        unsafe { sys::ferrophp_request_uninstall(&mut self.scope) };
    }

    pub(crate) fn script_filename(&self) -> &'a CStr {
        self.ctx.c_strings.script_filename
    }
}
