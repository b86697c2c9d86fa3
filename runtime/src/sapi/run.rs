//! One script as one PHP request on the calling PHP thread (`php_request_startup` →
//! execute → `php_request_shutdown`), and what a run checks first: that the script
//! exists, and whether a deploy made the thread's realpath cache stale.

use std::cell::{Cell, RefCell};
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bumpalo::Bump;

use php_sys as sys;

use super::prepared_request::PreparedRequest;
use crate::deadline::Watch;
use crate::php;
use crate::request::{ScriptOutcome, ScriptRequest};

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
fn execute_file(script: &CStr) -> ScriptOutcome {
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
