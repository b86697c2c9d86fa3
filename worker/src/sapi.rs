//! The whole SAPI lifecycle in one file: the `sapi_module_struct` PHP calls back into,
//! engine start-up and shut-down, attaching PHP threads, and the life of one request
//! (`php_request_startup` → execute → `php_request_shutdown`).
//!
//! PHP reaches the request in progress through `SG(server_context)`, which points at a
//! [`RequestContext`] living on the executing thread's stack for the whole request
//! (including `php_request_shutdown`, since `$_SERVER` may be built lazily).

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_short, c_void, CStr, CString};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bumpalo::Bump;

use php_sys as sys;

use crate::deadline::Watch;
use crate::php;
use crate::request::{ResponseHead, ResponseSink, ScriptOutcome, ScriptRequest};
use crate::request_context::{current_request, RequestContext, RequestStrings, SinkCell};
use crate::server_vars;

/// Which SAPI the engine presents to scripts (`PHP_SAPI`, `php_sapi_name()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SapiName {
    /// "ferrophp", the application server. OPcache only runs under SAPI names on its
    /// allow-list; scripts/build-php.sh adds this one.
    #[default]
    Server,
    /// "cli", as `php` (`ferrophp php-cli`): tools that insist on the CLI run (Symfony
    /// Console, artisan, MediaWiki maintenance), `opcache.enable_cli` and `apc.enable_cli`
    /// apply as with `php`, and phpinfo() prints text.
    Cli,
    /// "cli-server", as `php -S` (`ferrophp php-cli -S`): front controllers commonly let
    /// static files through with `if (PHP_SAPI === 'cli-server' && is_file(...)) return
    /// false;`, which only works under this name. On OPcache's own allow-list.
    DevServer,
}

impl SapiName {
    pub fn as_cstr(self) -> &'static CStr {
        match self {
            SapiName::Server => c"ferrophp",
            SapiName::Cli => c"cli",
            SapiName::DevServer => c"cli-server",
        }
    }
}
const SAPI_PRETTY_NAME: &CStr = c"ferrophp PHP application server";

/// Where PHP's log lines (errors with `log_errors=1`, `error_log()`) go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTarget {
    /// Raw lines on stderr, like the `php` CLI.
    Stderr,
    /// `tracing` events at a level matching the PHP error type.
    Tracing,
}

/// Process-wide settings PHP reads at module start-up.
pub(crate) struct ModuleSettings {
    /// `key=value` lines, applied after php.ini (like `php -d`).
    pub ini_entries: String,
    /// Use this php.ini (file or directory) instead of the build's default search.
    pub php_ini: Option<std::path::PathBuf>,
    /// Skip php.ini entirely (`php -n`).
    pub no_php_ini: bool,
    /// Defaults php.ini may override.
    pub ini_defaults: Vec<(String, String)>,
    pub log_target: LogTarget,
    pub sapi_name: SapiName,
}

static LOG_TARGET: std::sync::OnceLock<LogTarget> = std::sync::OnceLock::new();
static INI_DEFAULTS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// The SAPI module and the strings it points to, which PHP uses until module shutdown.
pub(crate) struct StartedModule(*mut sys::sapi_module_struct);

// SAFETY: the module is only touched by the engine's main thread, which owns this value.
unsafe impl Send for StartedModule {}

/// Starts the engine on the calling thread, which becomes the engine's main PHP thread
/// and must later call [`engine_shutdown`]. Once per process.
pub(crate) fn engine_startup(settings: &ModuleSettings) -> Result<StartedModule, String> {
    let _ = LOG_TARGET.set(settings.log_target);
    // The release tree's defaults first, so the caller's own defaults win over them.
    let mut defaults = crate::layout::ini_defaults();
    defaults.extend(settings.ini_defaults.iter().cloned());
    let _ = INI_DEFAULTS.set(defaults);
    let name = settings.sapi_name.as_cstr();
    let module: &'static mut sys::sapi_module_struct = Box::leak(Box::new(sapi_module(name)));
    let ini = CString::new(settings.ini_entries.clone())
        .map_err(|_| "ini entries contain a NUL byte".to_owned())?;
    let ini_path = match &settings.php_ini {
        Some(p) => Some(
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| "php.ini path contains a NUL byte".to_owned())?,
        ),
        None => None,
    };

    // SAFETY: called once per process (enforced by Engine::start) on a thread that has
    // not touched PHP; php_tsrm_startup allocates this thread's TSRM context.
    unsafe {
        if !sys::php_tsrm_startup() {
            return Err("php_tsrm_startup failed".into());
        }
        sys::ferrophp_thread_started();
        sys::zend_update_current_locale();
        sys::sapi_startup(module);
    }
    // sapi_startup clears ini_entries; set our settings after it, before module start-up.
    module.ini_entries = ini.into_raw();
    if let Some(p) = ini_path {
        module.php_ini_path_override = p.into_raw();
    }
    module.php_ini_ignore = c_int::from(settings.no_php_ini);
    // phpinfo() prints text under the CLI (as sapi/cli sets it), HTML for HTTP.
    module.phpinfo_as_text = c_int::from(settings.sapi_name == SapiName::Cli);
    module.php_ini_ignore_cwd = 1;
    // PHP looks for php.ini next to its binary (after -c and PHPRC): ours, wherever the
    // release tree was moved.
    if let Some(exe) = std::env::current_exe()
        .ok()
        .and_then(|p| CString::new(p.into_os_string().into_vec()).ok())
    {
        module.executable_location = exe.into_raw();
    }

    // SAFETY: registers a plain function pointer PHP calls once during module start-up.
    unsafe { sys::ferrophp_on_post_startup(Some(crate::opcache_guard::install)) };
    // SAFETY: no PHP code runs yet and no other thread touches PHP; the pointer is PHP's
    // global hook for filling $_ENV (and the CLI's $_SERVER), replaced once as FrankenPHP
    // does.
    unsafe {
        let _ = PROCESS_ENV_IMPORT.set(sys::php_import_environment_variables);
        sys::php_import_environment_variables = Some(import_environment);
    }
    // SAFETY: module is 'static and fully initialised; sapi_startup ran on this thread.
    let started = unsafe { sys::php_module_startup(module, sys::ferrophp_module_entry()) };
    if started != sys::ZEND_RESULT_CODE_SUCCESS {
        return Err("php_module_startup failed (see the errors above)".into());
    }
    server_vars::init();
    crate::deadline::install();
    // SAFETY: module start-up is done and no request runs yet; the shim only swaps the
    // treat_data pointer of PHP's global sapi_module for its wrapper.
    let fast_input = unsafe { sys::ferrophp_install_treat_data() };
    #[cfg(feature = "bench-fixtures")]
    crate::diagnostics::record_fast_input_installed(fast_input);
    tracing::debug!(fast_input, "$_COOKIE and $_GET parsing");
    Ok(StartedModule(module))
}

/// Shuts the engine down. Only after every other PHP thread has released its context.
pub(crate) fn engine_shutdown(module: StartedModule) {
    // SAFETY: called once, on the thread that ran engine_startup, after all pool threads
    // have called ts_free_thread (Engine joins them first). PHP no longer reads the
    // module once tsrm_shutdown returns, so its box and strings can be freed.
    unsafe {
        sys::php_module_shutdown();
        sys::sapi_shutdown();
        sys::tsrm_shutdown();
        let module = Box::from_raw(module.0);
        for s in [
            module.ini_entries,
            module.php_ini_path_override,
            module.executable_location,
        ] {
            if !s.is_null() {
                drop(CString::from_raw(s));
            }
        }
    }
}

/// Gives the calling (new) thread its own TSRM context, for its whole life, and its own
/// umask, working directory and locale: PHP's `umask()`, `chdir()` and `setlocale()` act
/// on process-wide state that one request must not change under the others.
pub(crate) fn attach_thread() {
    // SAFETY: unshare(CLONE_FS) only detaches this thread's umask, cwd and root from the
    // rest of the process (each starts as a copy); no pointer is involved. On failure
    // (a seccomp filter, say) the thread keeps sharing them, as before.
    if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
        tracing::warn!(
            "unshare(CLONE_FS) failed ({}): umask() in one request affects the others",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: the engine is started (threads are spawned after engine_startup) and this
    // thread has no context yet; ts_resource_ex(0, NULL) allocates one for it. The locale
    // reset makes this thread's own locale object (and updates PHP's view of it).
    unsafe {
        sys::ts_resource_ex(0, std::ptr::null_mut());
        sys::ferrophp_thread_started();
        sys::ferrophp_locale_thread_reset();
    }
    crate::stack::remember_bounds();
}

/// Releases the calling thread's TSRM context. Must be the thread's last PHP call.
pub(crate) fn detach_thread() {
    // SAFETY: this thread attached with attach_thread and runs no request now; the
    // execution timer run_script kept alive is this thread's own, deleted once; the
    // persistent list is this thread's own and its destructors run outside a request
    // anyway (at module shutdown, normally); so is the locale object, unused once the
    // thread's PHP context is gone.
    unsafe {
        sys::ferrophp_execution_timer_release();
        // Persistent connections close before TSRM frees module globals their
        // destructors use (pgsql's would write into freed memory).
        sys::ferrophp_persistent_list_release();
        sys::ts_free_thread();
        sys::ferrophp_locale_thread_release();
    }
}

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
    router: Option<&'a CStr>,
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
        crate::trace::request_begin(self.trace.take());
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
        crate::trace::request_end(self.ctx.written.get());
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

/// Runs one script as one PHP request on the calling PHP thread. Per-request strings go
/// into `arena`, which the caller resets afterwards. `watch`: as for
/// [`PreparedRequest::new`].
pub(crate) fn run_script(
    request: ScriptRequest,
    arena: &Bump,
    watch: Option<std::sync::Arc<Watch>>,
) -> ScriptOutcome {
    forget_stale_resolutions();
    let mut prepared = match PreparedRequest::new(request, arena, watch) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    prepared.install();
    let mut outcome = ScriptOutcome {
        exit_status: 0,
        not_found: false,
    };
    php::reset_exit_status();
    // SAFETY: request_info is filled and the server context set.
    if unsafe { sys::php_request_startup() } != sys::ZEND_RESULT_CODE_SUCCESS {
        outcome.exit_status = 255;
    } else {
        if prepared.define_std_streams {
            define_std_stream_constants();
        }
        if prepared.ctx.start_script() {
            outcome = match prepared.router {
                Some(router) => {
                    let (routed, declined) = execute_router(router);
                    match declined {
                        false => routed,
                        true if router == prepared.script_filename() => {
                            prepared.ctx.sink.with(|sink| sink.declined());
                            routed
                        }
                        true => execute_file(prepared.script_filename()),
                    }
                }
                None => execute_file(prepared.script_filename()),
            };
        }
        // SAFETY: a request is active on this thread; php_request_shutdown guards itself
        // with zend_try internally. The shim hides EG(pid) from shutdown_executor so the
        // thread's execution timer survives for the next request (disarmed by
        // zend_unset_timeout as usual), and puts it back right after.
        unsafe {
            // A save handler a bailout cut short must still close (its session lock).
            sys::ferrophp_session_handler_unwind();
            let timer = sys::ferrophp_execution_timer_keep();
            sys::php_request_shutdown(std::ptr::null_mut());
            sys::ferrophp_execution_timer_restore(timer);
        }
    }
    if let Some(mut sink) = prepared.uninstall() {
        sink.finish();
    }
    outcome
}

/// The CLI's STDIN/STDOUT/STDERR constants, as plain PHP: no C needed for three fopen()s.
fn define_std_stream_constants() {
    const PRELUDE: &CStr = c"define('STDIN', fopen('php://stdin', 'rb')); \
        define('STDOUT', fopen('php://stdout', 'wb')); define('STDERR', fopen('php://stderr', 'wb'));";
    // SAFETY: a request is active; the shim wraps zend_eval_string in zend_try.
    unsafe { sys::ferrophp_try_eval_string(PRELUDE.as_ptr(), c"ferrophp std streams".as_ptr()) };
}

extern "C" {
    // Exported by libphp (CWD_API); declared here rather than in php-sys's allowlist, as
    // observe.rs does for zend_memory_usage. Empties the calling thread's realpath cache
    // (CWDG is per thread under ZTS): what `clearstatcache(true)` does.
    fn realpath_cache_clean();
}

/// Raised when paths PHP resolved may now resolve elsewhere (a deploy switched a
/// `current` symlink); each PHP thread compares it with the value it last saw.
static RESOLVED_PATHS_EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static SEEN_RESOLVED_PATHS_EPOCH: Cell<u64> = const { Cell::new(0) };
}

/// Makes every PHP thread empty its realpath cache before its next request. PHP keeps
/// each path it resolved (`include`, `realpath()`, `open_basedir` checks, `__DIR__`-free
/// relative includes) for `realpath_cache_ttl` (120 s): after `current` moved to a new
/// release, a path spelled through the link would still lead into the old one. A request
/// running meanwhile keeps its resolutions to the end (the old release's files).
pub(crate) fn forget_resolved_paths() {
    RESOLVED_PATHS_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// On a PHP thread, outside any request: empties its realpath cache once after each
/// [`forget_resolved_paths`]. One relaxed load per request otherwise.
fn forget_stale_resolutions() {
    let epoch = RESOLVED_PATHS_EPOCH.load(Ordering::Acquire);
    SEEN_RESOLVED_PATHS_EPOCH.with(|seen| {
        if seen.get() != epoch {
            seen.set(epoch);
            // SAFETY: on a PHP thread attached to TSRM (run_script runs only there),
            // between requests: the cache is this thread's own and nothing holds one of
            // its entries.
            unsafe { realpath_cache_clean() };
        }
    });
}

/// How long a thread trusts that a script it found is still there. OPcache trusts its
/// cached copy of a script for `opcache.revalidate_freq` (2 s by default) without looking
/// at the file either, and routing caches its decisions for 1 s.
const SCRIPT_EXISTS_TTL: Duration = Duration::from_secs(1);

thread_local! {
    /// The last script this thread found, and when: a stat of the whole path costs more
    /// than a microsecond, for an answer that is the same request after request.
    static LAST_SCRIPT: RefCell<(Vec<u8>, Option<Instant>)> = const { RefCell::new((Vec::new(), None)) };
}

/// The script is a regular file. A positive answer is reused for the same path within
/// [`SCRIPT_EXISTS_TTL`]; a missing file is looked for every time.
fn script_exists(path: &[u8]) -> bool {
    LAST_SCRIPT.with(|last| {
        let mut last = last.borrow_mut();
        let now = Instant::now();
        if last.0 == path
            && last
                .1
                .is_some_and(|t| now.duration_since(t) < SCRIPT_EXISTS_TTL)
        {
            return true;
        }
        let exists = std::path::Path::new(std::ffi::OsStr::from_bytes(path)).is_file();
        if exists {
            last.0.clear();
            last.0.extend_from_slice(path);
            last.1 = Some(now);
        } else {
            last.1 = None;
        }
        exists
    })
}

/// Runs a router script (`php -S`) in the active request: its outcome, and whether it
/// returned `false`.
fn execute_router(router: &CStr) -> (ScriptOutcome, bool) {
    let mut handle = sys::zend_file_handle::default();
    // SAFETY: handle is a fresh zeroed struct; zend_stream_init_filename copies the name.
    unsafe { sys::zend_stream_init_filename(&mut handle, router.as_ptr()) };
    let mut declined = false;
    // SAFETY: a request is active; the shim runs the script inside zend_try.
    unsafe { sys::ferrophp_try_execute_router(&mut handle, &mut declined) };
    // SAFETY: the handle was initialised above and is destroyed exactly once.
    unsafe { sys::zend_destroy_file_handle(&mut handle) };
    let outcome = ScriptOutcome {
        exit_status: php::exit_status(),
        not_found: false,
    };
    (outcome, declined)
}

/// Opens and executes the primary script of the active request.
pub(crate) fn execute_file(script: &CStr) -> ScriptOutcome {
    let mut handle = sys::zend_file_handle::default();
    // SAFETY: handle is a fresh zeroed struct; zend_stream_init_filename copies the name.
    unsafe { sys::zend_stream_init_filename(&mut handle, script.as_ptr()) };
    // php_execute_script reports "Failed opening required" for a missing file; the CLI
    // says "Could not open input file" instead and exits 1, which callers expect.
    let exists = script_exists(script.to_bytes());
    let mut outcome = ScriptOutcome {
        exit_status: 0,
        not_found: !exists,
    };
    if exists {
        let mut succeeded = false;
        // SAFETY: a request is active; the shim runs php_execute_script inside zend_try so
        // a bailout lands in C, never in this frame.
        unsafe { sys::ferrophp_try_execute_script(&mut handle, &mut succeeded) };
        outcome.exit_status = php::exit_status();
    } else {
        outcome.exit_status = 1;
    }
    // SAFETY: the handle was initialised above and is destroyed exactly once.
    unsafe { sys::zend_destroy_file_handle(&mut handle) };
    outcome
}

// ---------------------------------------------------------------------------------------
// SAPI callbacks. PHP calls these on PHP threads only.
// ---------------------------------------------------------------------------------------

fn sapi_module(name: &'static CStr) -> sys::sapi_module_struct {
    sys::sapi_module_struct {
        name: name.as_ptr() as *mut c_char,
        pretty_name: SAPI_PRETTY_NAME.as_ptr() as *mut c_char,
        startup: Some(on_startup),
        activate: Some(on_activate),
        getenv: Some(on_getenv),
        ub_write: Some(on_ub_write),
        flush: Some(on_flush),
        sapi_error: Some(sys::zend_error),
        send_headers: Some(on_send_headers),
        read_post: Some(on_read_post),
        read_cookies: Some(on_read_cookies),
        register_server_variables: Some(on_register_server_variables),
        log_message: Some(on_log_message),
        get_request_time: Some(on_get_request_time),
        ini_defaults: Some(on_ini_defaults),
        // Forgets the realpath cache entries of the request's uploaded files (see the shim).
        deactivate: Some(sys::ferrophp_sapi_deactivate),
        // SAFETY: a static table defined in the shim.
        additional_functions: unsafe { sys::ferrophp_sapi_functions.as_ptr() },
        ..Default::default()
    }
}

unsafe extern "C" fn on_ini_defaults(configuration: *mut sys::HashTable) {
    for (name, value) in INI_DEFAULTS.get().into_iter().flatten() {
        // SAFETY: PHP passes its configuration hash during start-up; the shim copies both
        // strings into persistent memory.
        unsafe {
            sys::ferrophp_ini_default(
                configuration,
                name.as_ptr().cast(),
                name.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
    }
}

unsafe extern "C" fn on_startup(module: *mut sys::sapi_module_struct) -> c_int {
    // SAFETY: PHP passes the module it was started with.
    unsafe { sys::php_module_startup(module, sys::ferrophp_module_entry()) as c_int }
}

unsafe extern "C" fn on_ub_write(str_: *const c_char, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    // SAFETY: PHP passes `len` readable bytes at `str_`.
    let bytes = unsafe { std::slice::from_raw_parts(str_.cast::<u8>(), len) };
    let Some(ctx) = current_request() else {
        // Output outside any request (module start-up warnings): stderr is all we have.
        eprint!("{}", String::from_utf8_lossy(bytes));
        return len;
    };
    if ctx.finished.get() {
        // After fastcgi_finish_request() output is discarded, as under php-fpm.
        return len;
    }
    if !ctx.disconnected.get() {
        let result = ctx.sink.send(|sink| sink.write(bytes));
        if result.is_ok() {
            ctx.written.set(ctx.written.get() + len as u64);
            return len;
        }
        ctx.disconnected.set(true);
    }
    client_gone();
    0
}

/// The client went away: PHP marks the connection aborted and, unless the script set
/// ignore_user_abort, ends it (a bailout). Callers must hold nothing that needs dropping.
fn client_gone() {
    // SAFETY: on a PHP thread inside a request; may longjmp to the request's zend_try.
    unsafe { sys::php_handle_aborted_connection() };
}

unsafe extern "C" fn on_flush(_server_context: *mut c_void) {
    let Some(ctx) = current_request() else {
        return;
    };
    if ctx.finished.get() {
        return;
    }
    if !ctx.disconnected.get() {
        let result = ctx.sink.send(|sink| sink.flush());
        if result.is_ok() {
            return;
        }
        ctx.disconnected.set(true);
    }
    client_gone();
}

unsafe extern "C" fn on_send_headers(headers: *mut sys::sapi_headers_struct) -> c_int {
    let Some(ctx) = current_request() else {
        return sys::SAPI_HEADER_SENT_SUCCESSFULLY as c_int;
    };
    // SAFETY: PHP passes SG(sapi_headers), valid for this call.
    let head = unsafe { response_head(&*headers) };
    if ctx.sink.send(|sink| sink.send_head(head)).is_err() {
        ctx.disconnected.set(true);
    }
    sys::SAPI_HEADER_SENT_SUCCESSFULLY as c_int
}

/// The most header lines a response takes from PHP: far more than any real response
/// has, and well under the most a `HeaderMap` holds, so hyper can still add its own
/// (`date`, `connection`: at the limit its insert would panic and drop the connection).
const MAX_HEADER_LINES: usize = 16 * 1024;

/// Reads PHP's header list into a [`ResponseHead`]: one `HeaderValue` per line, no
/// other copy (standard names are constants; other names are lower-cased once). Lines
/// that are not valid HTTP fields are dropped with a warning, as are lines past
/// [`MAX_HEADER_LINES`] (a panic here would abort the process: PHP called us).
///
/// # Safety
/// `headers` must be the live `SG(sapi_headers)` of this thread.
pub(crate) unsafe fn response_head(headers: &sys::sapi_headers_struct) -> ResponseHead {
    let status = match headers.http_response_code {
        code @ 100..=999 => code as u16,
        _ => 200,
    };
    // No line, no allocation; else the map is made once at its final size.
    let mut map = http::HeaderMap::try_with_capacity(headers.headers.count.min(MAX_HEADER_LINES))
        .unwrap_or_default();
    // SAFETY: guaranteed by the caller; the list is not changed while we read it.
    for (name, value) in unsafe { header_lines(headers) } {
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name),
            header_value(name, value),
        ) else {
            tracing::warn!(
                header = %String::from_utf8_lossy(name),
                "dropping a response header PHP set that is not valid HTTP"
            );
            continue;
        };
        if map.len() >= MAX_HEADER_LINES || map.try_append(name, value).is_err() {
            tracing::warn!("dropping response headers PHP set past the first {MAX_HEADER_LINES}");
            break;
        }
    }
    ResponseHead {
        status,
        headers: map,
    }
}

/// How many `Content-Type` values a PHP thread keeps for reuse.
const KNOWN_CONTENT_TYPES: usize = 4;

thread_local! {
    /// The last few `Content-Type` values this thread sent. Nearly every response has
    /// one (PHP adds its default) and an application sends few different ones: a clone
    /// of a known value shares its bytes (a reference count) where a new value would be
    /// an allocation. A new value costs one more allocation, once (sharing it).
    static CONTENT_TYPES: RefCell<([Option<http::HeaderValue>; KNOWN_CONTENT_TYPES], usize)> =
        const { RefCell::new(([None, None, None, None], 0)) };
}

/// The field value of a header line; a `Content-Type` this thread sent recently is
/// reused.
fn header_value(
    name: &[u8],
    value: &[u8],
) -> Result<http::HeaderValue, http::header::InvalidHeaderValue> {
    if !name.eq_ignore_ascii_case(b"content-type") {
        return http::HeaderValue::from_bytes(value);
    }
    CONTENT_TYPES.with(|known| {
        let (slots, next) = &mut *known.borrow_mut();
        if let Some(found) = slots.iter().flatten().find(|v| v.as_bytes() == value) {
            return Ok(found.clone());
        }
        let made = http::HeaderValue::from_bytes(value)?;
        slots[*next] = Some(made.clone());
        *next = (*next + 1) % KNOWN_CONTENT_TYPES;
        Ok(made)
    })
}

/// PHP's header lines as `(name, value)`, split at the first colon and trimmed, in the
/// order PHP keeps them; lines without a colon are skipped. A name is trimmed of Unicode
/// whitespace when it is UTF-8 (of ASCII whitespace otherwise), as `str::trim` would.
///
/// # Safety
/// `headers` must be the live `SG(sapi_headers)` of this thread, unchanged while the
/// iterator is in use.
pub(crate) unsafe fn header_lines<'a>(
    headers: &'a sys::sapi_headers_struct,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    let mut element = headers.headers.head;
    std::iter::from_fn(move || {
        while !element.is_null() {
            // SAFETY: zend_llist elements store a sapi_header_struct inline in `data`.
            let header = unsafe { &*((*element).data.as_ptr() as *const sys::sapi_header_struct) };
            // SAFETY: walking the list PHP owns; `next` is NULL at the end.
            element = unsafe { (*element).next };
            if header.header.is_null() {
                continue;
            }
            // SAFETY: header points at `header_len` bytes owned by PHP, which outlive the
            // borrow of `headers`.
            let line = unsafe {
                std::slice::from_raw_parts(header.header.cast::<u8>(), header.header_len)
            };
            if let Some(colon) = line.iter().position(|&b| b == b':') {
                let name = &line[..colon];
                let name = match std::str::from_utf8(name) {
                    Ok(text) => text.trim().as_bytes(),
                    Err(_) => name.trim_ascii(),
                };
                return Some((name, line[colon + 1..].trim_ascii()));
            }
        }
        None
    })
}

unsafe extern "C" fn on_read_post(buffer: *mut c_char, count: usize) -> usize {
    let Some(ctx) = current_request() else {
        return 0;
    };
    // SAFETY: PHP passes a writable buffer of `count` bytes.
    let buf = unsafe { std::slice::from_raw_parts_mut(buffer.cast::<u8>(), count) };
    let mut filled = 0;
    let mut failed = false;
    {
        let mut body = ctx.body.borrow_mut();
        while filled < count {
            match body.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
    }
    if failed {
        // The body broke off (malformed chunk, client gone, or over the size limit): a
        // truncated body must never look complete to the script. Returning the bytes read
        // so far would not do: PHP takes a short read as the end of the body.
        ctx.disconnected.set(true);
        if ctx.script_started.get() {
            client_gone();
        } else {
            // PHP's POST handlers are reading the body at request start-up: a bailout
            // now would skip their clean-up (rfc1867 registers an upload's temp file, to
            // be deleted at request end, only once the file is complete; the file and its
            // descriptor would be left behind). They see the end of the body instead, and
            // the script is not started (body_broke_off).
            // SAFETY: on a PHP thread inside a request; PG is this thread's.
            unsafe {
                (*sys::ferrophp_core_globals()).connection_status |=
                    sys::PHP_CONNECTION_ABORTED as c_short
            };
        }
        return 0;
    }
    filled
}

unsafe extern "C" fn on_read_cookies() -> *mut c_char {
    current_request()
        .and_then(|ctx| ctx.c_strings.cookie.as_ref())
        .map_or(std::ptr::null_mut(), |c| c.as_ptr() as *mut c_char)
}

/// Runs inside php_request_startup after sapi_activate reset the protocol to HTTP/1.0.
unsafe extern "C" fn on_activate() -> c_int {
    if let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) {
        let proto_num = match cgi.version {
            http::Version::HTTP_09 => 900,
            http::Version::HTTP_10 => 1000,
            http::Version::HTTP_11 => 1001,
            http::Version::HTTP_2 => 2000,
            _ => 3000,
        };
        // SAFETY: plain write of a field of this thread's SAPI globals.
        unsafe { (*php::sapi_globals().as_ptr()).request_info.proto_num = proto_num };
    }
    sys::ZEND_RESULT_CODE_SUCCESS as c_int
}

/// `getenv()` sees the configured environment first; PHP falls back to the process's.
unsafe extern "C" fn on_getenv(name: *const c_char, len: usize) -> *mut c_char {
    let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) else {
        return std::ptr::null_mut();
    };
    // SAFETY: PHP passes `len` readable bytes.
    let name = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    cgi.env
        .iter()
        .find(|(k, _)| k.as_bytes() == name)
        // PHP estrdup()s the value right away; ours lives as long as the request.
        .map_or(std::ptr::null_mut(), |(_, v)| v.as_ptr() as *mut c_char)
}

/// PHP's own `php_import_environment_variables` (the process environment).
static PROCESS_ENV_IMPORT: std::sync::OnceLock<Option<unsafe extern "C" fn(*mut sys::zval)>> =
    std::sync::OnceLock::new();

/// Fills `$_ENV` (when `variables_order` has E) and the CLI's `$_SERVER`: the process
/// environment, then the server's configured environment (`-e`, `[env]`), as
/// FrankenPHP's classic mode does, so `$_ENV` agrees with `getenv()`.
unsafe extern "C" fn import_environment(track_vars: *mut sys::zval) {
    if let Some(Some(import)) = PROCESS_ENV_IMPORT.get() {
        // SAFETY: PHP's function, called with the array PHP passed us.
        unsafe { import(track_vars) };
    }
    let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) else {
        return;
    };
    for (name, value) in cgi.env.iter() {
        php::register_variable(name, value.to_bytes(), track_vars);
    }
}

unsafe extern "C" fn on_register_server_variables(track_vars: *mut sys::zval) {
    let Some(ctx) = current_request() else {
        return;
    };
    if ctx.import_environment {
        // SAFETY: php_import_environment_variables is a function pointer PHP sets at
        // start-up; track_vars is the array PHP is building.
        unsafe {
            if let Some(Some(import)) = PROCESS_ENV_IMPORT.get() {
                import(track_vars);
            }
        }
    }
    if let Some(cgi) = &ctx.cgi {
        let script = ctx.c_strings.script_filename.to_bytes();
        // Tests and benchmarks observe this build, or swap in the naive path (feature only).
        #[cfg(feature = "bench-fixtures")]
        crate::diagnostics::register_cgi_variables(cgi, script, track_vars, ctx.arena);
        #[cfg(not(feature = "bench-fixtures"))]
        server_vars::register_with_arena(cgi, script, track_vars, ctx.arena);
        // REMOTE_USER: the Basic authentication user, as FrankenPHP and nginx's
        // fastcgi_params ($remote_user) give it.
        // SAFETY: on a PHP thread inside a request; auth_user is NULL or a NUL-terminated
        // string PHP owns until the request's deactivation.
        let user = unsafe { (*php::sapi_globals().as_ptr()).request_info.auth_user };
        if !user.is_null() {
            // SAFETY: non-null and NUL-terminated (above).
            let user = unsafe { php::c_bytes(user) };
            php::register_variable(c"REMOTE_USER", user, track_vars);
        }
    }
    for (name, value) in &ctx.server_vars {
        php::register_variable(name, value, track_vars);
    }
}

unsafe extern "C" fn on_log_message(message: *const c_char, syslog_type: c_int) {
    // SAFETY: PHP passes a NUL-terminated message.
    let text = String::from_utf8_lossy(unsafe { php::c_bytes(message) });
    match LOG_TARGET.get().copied().unwrap_or(LogTarget::Stderr) {
        LogTarget::Stderr => eprintln!("{text}"),
        // syslog levels: 0-3 error and worse, 4 warning, 5-6 notice/info, 7 debug.
        LogTarget::Tracing => match syslog_type {
            0..=3 => tracing::error!(target: "php", "{text}"),
            4 => tracing::warn!(target: "php", "{text}"),
            5 | 6 => tracing::info!(target: "php", "{text}"),
            _ => tracing::debug!(target: "php", "{text}"),
        },
    }
}

unsafe extern "C" fn on_get_request_time(time: *mut f64) -> sys::zend_result {
    let Some(ctx) = current_request() else {
        return sys::ZEND_RESULT_CODE_FAILURE;
    };
    // SAFETY: PHP passes a valid out pointer.
    unsafe { *time = ctx.started_at };
    sys::ZEND_RESULT_CODE_SUCCESS
}
