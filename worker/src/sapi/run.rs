//! One script as one PHP request on the calling PHP thread (one call into
//! c/request_scope.c: `php_request_startup` → the router or script →
//! `php_request_shutdown`), and what a run checks first: that the script exists, and
//! whether a deploy made the thread's realpath cache stale.

use std::cell::{Cell, RefCell};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bumpalo::Bump;

use crate::ffi as sys;

use super::prepared_request::PreparedRequest;
use crate::deadline;
use crate::request::{ScriptOutcome, ScriptRequest};
use crate::request_context::current_request;

/// Runs one script as one PHP request on the calling PHP thread. Per-request strings go
/// into `arena`, which the caller resets afterwards. `job`: a client's job, which gets the
/// thread's deadlines (its sink lives in the thread's deadline watch meanwhile); not the
/// boot request of a worker script.
pub(crate) fn run_script(request: ScriptRequest, arena: &Bump, job: bool) -> ScriptOutcome {
    forget_stale_resolutions();
    let watch = if job { deadline::current() } else { None };
    let mut prepared = match PreparedRequest::new(request, arena, watch) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    let exists = script_exists(prepared.script_filename().to_bytes());
    let deadline = job.then(deadline::enter_job);
    let scope = prepared.bind(deadline, exists);
    // SAFETY: on a PHP thread outside any request; the scope points into `prepared`,
    // which stays put until the call returns, and the C side runs every engine step that
    // may bail out inside its own zend_try.
    unsafe { sys::ferrophp_request_run(scope) };
    let outcome = prepared.outcome();
    if job {
        deadline::leave_job(prepared.expired());
    }
    if let Some(mut sink) = prepared.finish() {
        sink.finish();
    }
    outcome
}

/// A php -S router returned false for itself (`ferrophp_request_run`): the server answers
/// the request instead, and what PHP sends from now on is dropped.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_request_router_declined() {
    if let Some(request) = current_request() {
        request.sink.with(|sink| sink.declined());
    }
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
