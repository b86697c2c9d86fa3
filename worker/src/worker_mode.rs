//! Worker mode: a script boots once per PHP thread and then serves many requests in a loop
//! through `ferrophp_handle_request($handler)` (also `frankenphp_handle_request`).
//!
//! Each worker script has its own pool of PHP threads and its own job queue. A thread runs
//! the script as one long PHP request (the *boot* request); each call to
//! `ferrophp_handle_request` blocks for the next job, swaps `SG(server_context)` to that
//! job's request, resets the per-request engine state (output, headers, superglobals,
//! session, time limit, memory peak), calls the handler inside `zend_try`, completes the
//! response, and swaps the boot context back. Globals, statics, ini changes and loaded
//! classes of the application persist between requests: that is the point of the mode.
//!
//! The script ends when `ferrophp_handle_request` returns false (stop, restart,
//! `max_requests`), on `exit()`, or on a fatal error; the slot then boots it again, with
//! growing backoff when it fails before reaching the loop. After `max_requests` the slot
//! throws its PHP state away entirely: a new OS thread with a new TSRM context.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bumpalo::Bump;
use php_sys as sys;

use crate::observe::{self, ThreadState};
use crate::php;
use crate::pool::{php_stack_size, Job};
use crate::queue::{JobQueue, Next};
use crate::request::{
    CgiRequest, Disconnected, ResponseHead, ResponseSink, ScriptOutcome, ScriptRequest,
};
use crate::sapi::{self, PreparedRequest};

/// One worker script and how to run it.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub script: PathBuf,
    /// PHP threads running this script.
    pub threads: usize,
    /// Extra environment: `$_SERVER` entries of the boot request, and `$_SERVER` entries and
    /// `getenv()` values of every request it serves (over the server's env of the same name).
    pub env: Vec<(String, String)>,
    /// Requests one PHP thread serves before its PHP state is rebuilt (0: no limit).
    pub max_requests: u64,
    /// Consecutive failures to reach the request loop at start-up before giving up.
    pub max_startup_failures: u32,
    /// The memory guard: how far a thread's PHP memory may grow above its level right
    /// after boot before that thread's script is restarted (None: no guard).
    pub memory_growth: Option<MemoryGrowth>,
}

/// How much a worker thread's PHP memory (`memory_get_usage()`) may grow, between the
/// moment its script first asks for a request and the end of any later request, before
/// the script is restarted on that thread. `max_requests` bounds a leak by count; this
/// bounds it by what it costs, so a slow leak does not force frequent restarts and a fast
/// one is caught early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryGrowth {
    Bytes(u64),
    /// Percent of the level after boot.
    Percent(f64),
}

impl MemoryGrowth {
    /// `50%`, or bytes with an optional K/M/G suffix (powers of 1024, as in php.ini):
    /// `67108864`, `64M`.
    pub fn parse(text: &str) -> Result<MemoryGrowth, String> {
        let t = text.trim();
        let invalid = || {
            format!("invalid memory growth {text:?}: expected bytes (64M) or a percentage (50%)")
        };
        if let Some(percent) = t.strip_suffix('%') {
            let p: f64 = percent.trim().parse().map_err(|_| invalid())?;
            if !(p.is_finite() && p > 0.0) {
                return Err(invalid());
            }
            return Ok(MemoryGrowth::Percent(p));
        }
        let (digits, unit) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
            _ => (t, 'B'),
        };
        let shift = match unit {
            'B' => 0,
            'K' => 10,
            'M' => 20,
            'G' => 30,
            _ => return Err(invalid()),
        };
        let n: u64 = digits.trim().parse().map_err(|_| invalid())?;
        match n.checked_mul(1 << shift) {
            Some(bytes) if bytes > 0 => Ok(MemoryGrowth::Bytes(bytes)),
            _ => Err(invalid()),
        }
    }

    /// The memory level that triggers a restart, for a thread that booted at `baseline`.
    fn limit(self, baseline: usize) -> usize {
        let growth = match self {
            MemoryGrowth::Bytes(b) => usize::try_from(b).unwrap_or(usize::MAX),
            MemoryGrowth::Percent(p) => (baseline as f64 * p / 100.0) as usize,
        };
        baseline.saturating_add(growth.max(1))
    }
}

impl WorkerConfig {
    pub fn new(script: impl Into<PathBuf>, threads: usize) -> Self {
        WorkerConfig {
            script: script.into(),
            threads,
            env: Vec::new(),
            max_requests: 0,
            max_startup_failures: 5,
            memory_growth: None,
        }
    }
}

/// Why a worker script's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    Stop,
    Restart,
    MaxRequests,
    /// The memory guard fired: restart this thread's script only.
    MemoryGrowth,
    /// The script ended by itself or crashed: exit(), a fatal error, or it returned.
    Ended,
}

/// An environment list as `CgiRequest::env` holds it.
type EnvList = Arc<[(CString, CString)]>;

/// State shared by the threads of one worker script.
pub(crate) struct WorkerPool {
    config: WorkerConfig,
    /// `config.env` as C strings, for the requests' `$_SERVER` and `getenv()`.
    env: EnvList,
    /// Jobs for this worker; its epoch moves on at every restart.
    pub(crate) queue: JobQueue,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stopping: AtomicBool,
    startup: Mutex<Startup>,
    startup_changed: Condvar,
    requests_served: AtomicU64,
    restarts: AtomicU64,
    /// What the admin endpoints show (observe.rs).
    stats: Arc<observe::PoolStats>,
}

#[derive(Default)]
struct Startup {
    ready: usize,
    failed: Option<String>,
}

impl WorkerPool {
    /// Spawns the worker's threads and waits until each has reached the request loop, or
    /// one has failed `max_startup_failures` times in a row.
    pub(crate) fn start(config: WorkerConfig) -> Result<Arc<WorkerPool>, String> {
        if !config.script.is_file() {
            return Err(format!(
                "worker script {} does not exist",
                config.script.display()
            ));
        }
        let threads = config.threads.max(1);
        let env = crate::request::env_list(&config.env);
        let stats = observe::PoolStats::register(config.script.display().to_string(), true);
        let pool = Arc::new(WorkerPool {
            env,
            config,
            queue: JobQueue::new(),
            threads: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            startup: Mutex::new(Startup::default()),
            startup_changed: Condvar::new(),
            requests_served: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            stats,
        });
        for slot in 0..threads {
            spawn_slot(pool.clone(), slot)
                .map_err(|e| format!("cannot spawn a worker thread: {e}"))?;
        }
        let mut startup = pool.startup.lock().unwrap();
        while startup.ready < threads && startup.failed.is_none() {
            startup = pool.startup_changed.wait(startup).unwrap();
        }
        if let Some(why) = startup.failed.clone() {
            drop(startup);
            pool.stop();
            return Err(why);
        }
        drop(startup);
        Ok(pool)
    }

    /// Restarts every thread's script after its current request (no request is dropped:
    /// queued jobs wait for the rebooted scripts).
    pub(crate) fn restart(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.queue.bump_epoch();
    }

    /// Stops every thread after its current request and waits for them.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.queue.close();
        // Threads may hand over to replacements while we join: drain until none is left.
        loop {
            let handles: Vec<_> = self.threads.lock().unwrap().drain(..).collect();
            if handles.is_empty() {
                break;
            }
            for h in handles {
                let _ = h.join();
            }
        }
    }

    pub(crate) fn requests_served(&self) -> u64 {
        self.requests_served.load(Ordering::Relaxed)
    }

    fn report_ready(&self) {
        self.startup.lock().unwrap().ready += 1;
        self.startup_changed.notify_all();
    }

    fn report_startup_failure(&self, why: String) {
        let mut startup = self.startup.lock().unwrap();
        if startup.failed.is_none() {
            startup.failed = Some(why);
        }
        self.startup_changed.notify_all();
    }
}

fn spawn_slot(pool: Arc<WorkerPool>, slot: usize) -> std::io::Result<()> {
    let name = format!("php-worker-{slot}");
    let handle = std::thread::Builder::new()
        .name(name)
        .stack_size(php_stack_size())
        .spawn({
            let pool = pool.clone();
            move || slot_main(pool, slot)
        })?;
    pool.threads.lock().unwrap().push(handle);
    Ok(())
}

/// The life of one PHP thread of a worker: boot the script, serve, reboot as needed.
fn slot_main(pool: Arc<WorkerPool>, slot: usize) {
    sapi::attach_thread();
    let observed = observe::register(&pool.stats);
    let boot_arena = Bump::new();
    let mut failures: u32 = 0;
    let mut ever_ready = false;
    let end = loop {
        if pool.stopping.load(Ordering::SeqCst) {
            break RunEnd::Stop;
        }
        let thread = WorkerThread {
            pool: &pool,
            epoch: pool.queue.epoch(),
            request_arena: RefCell::new(Bump::with_capacity(16 * 1024)),
            served: Cell::new(0),
            ready: Cell::new(false),
            memory_limit: Cell::new(usize::MAX),
            handling: Cell::new(false),
            end: Cell::new(RunEnd::Ended),
            env_cache: RefCell::new(None),
        };
        CURRENT.with(|c| c.set(&thread as *const WorkerThread as *const ()));
        pool.stats.boot();
        observed.set_state(ThreadState::Booting);
        // As FrankenPHP does for workers: a client that goes away must not end the worker
        // script (PHP's abort is a bailout, which would reboot it for every dropped
        // connection); the handler sees connection_aborted() instead. The script may still
        // call ignore_user_abort(false) itself.
        // SAFETY: this thread is attached to PHP; PG is its own, and no request runs yet.
        unsafe { (*sys::ferrophp_core_globals()).ignore_user_abort = true };
        let outcome = sapi::run_script(boot_request(&pool.config), &boot_arena);
        CURRENT.with(|c| c.set(std::ptr::null()));
        crate::stack::release_deep_pages();
        let reached_loop = thread.ready.get();
        let end = thread.end.get();
        drop(thread);
        observed.set_ready(false);
        match end {
            RunEnd::Restart => pool.stats.restart(),
            RunEnd::MemoryGrowth => {
                pool.stats.restart();
                pool.stats.memory_restart();
            }
            RunEnd::Ended => pool.stats.crash(),
            RunEnd::Stop | RunEnd::MaxRequests => {}
        }

        if reached_loop {
            failures = 0;
            ever_ready = true;
        }
        match end {
            RunEnd::Stop | RunEnd::MaxRequests => break end,
            RunEnd::Restart | RunEnd::MemoryGrowth => continue,
            // A script that leaves its loop and ends with status 0 restarts itself on
            // purpose (Octane's MAX_REQUESTS, FrankenPHP's worker-restart pattern): not
            // worth a warning. A non-zero status is a crash, logged above debug level as
            // FrankenPHP does.
            RunEnd::Ended if reached_loop && outcome.exit_status == 0 => {
                tracing::info!(
                    script = %pool.config.script.display(),
                    exit_status = outcome.exit_status,
                    "worker script ended; booting it again"
                );
            }
            RunEnd::Ended if reached_loop => {
                tracing::warn!(
                    script = %pool.config.script.display(),
                    exit_status = outcome.exit_status,
                    "worker script ended (exit or fatal error); booting it again"
                );
            }
            RunEnd::Ended => {
                failures += 1;
                let why = format!(
                    "worker script {} ended before reaching ferrophp_handle_request() \
                     (exit status {}; see the PHP errors logged above)",
                    pool.config.script.display(),
                    outcome.exit_status
                );
                tracing::error!(slot, failures, "{why}");
                if !ever_ready && failures >= pool.config.max_startup_failures.max(1) {
                    pool.report_startup_failure(format!("{why}, {failures} times in a row"));
                    break RunEnd::Stop;
                }
                let backoff = Duration::from_millis(50u64 << failures.min(7));
                observed.set_state(ThreadState::Backoff);
                if pool.queue.wait_closed(backoff) {
                    break RunEnd::Stop;
                }
            }
        }
    };
    drop(observed);
    sapi::detach_thread();
    if end == RunEnd::MaxRequests && !pool.stopping.load(Ordering::SeqCst) {
        // A fresh OS thread, hence a fresh TSRM context: the only cure for leaks.
        if let Err(e) = spawn_slot(pool.clone(), slot) {
            tracing::error!("cannot replace a worker thread: {e}");
        }
    }
}

/// The long-lived request the worker script runs in.
fn boot_request(config: &WorkerConfig) -> ScriptRequest {
    let script = config.script.to_string_lossy().into_owned();
    let mut request = ScriptRequest::new(config.script.clone(), Box::new(LogSink));
    request.import_environment = true;
    request.server_vars = config
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .chain([
            ("FRANKENPHP_WORKER".to_string(), b"1".to_vec()),
            ("SCRIPT_FILENAME".to_string(), script.clone().into_bytes()),
            ("SCRIPT_NAME".to_string(), script.clone().into_bytes()),
            ("PHP_SELF".to_string(), script.into_bytes()),
        ])
        .collect();
    request
}

/// Output of the worker script outside any request goes to the log.
struct LogSink;

impl ResponseSink for LogSink {
    fn send_head(&mut self, _head: ResponseHead) -> Result<(), Disconnected> {
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected> {
        tracing::info!(target: "php", "worker output: {}", String::from_utf8_lossy(bytes).trim_end());
        Ok(())
    }
}

/// What `ferrophp_handle_request` needs, for the worker script running on this thread.
struct WorkerThread<'a> {
    pool: &'a Arc<WorkerPool>,
    /// The queue's epoch when this run of the script booted; a newer one means restart.
    epoch: u64,
    request_arena: RefCell<Bump>,
    served: Cell<u64>,
    ready: Cell<bool>,
    /// The memory guard's trigger level, set when the script first asks for a request.
    memory_limit: Cell<usize>,
    handling: Cell<bool>,
    end: Cell<RunEnd>,
    /// The last server env seen and that env with the worker's env merged in.
    env_cache: RefCell<Option<(EnvList, EnvList)>>,
}

thread_local! {
    /// The WorkerThread of the worker script running on this thread (erased lifetime;
    /// set only while slot_main's run_script call is on the stack).
    static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

fn current_worker<'a>() -> Option<&'a WorkerThread<'a>> {
    let ptr = CURRENT.with(|c| c.get()) as *const WorkerThread;
    // SAFETY: CURRENT points at the WorkerThread on slot_main's stack while the worker
    // script runs, which is the only time PHP code can call us; it is cleared before that
    // value is dropped.
    unsafe { ptr.as_ref() }
}

impl WorkerThread<'_> {
    /// Blocks for the next job, or None when the script should end.
    fn next_job(&self) -> Option<Box<Job>> {
        if !self.ready.get() {
            self.ready.set(true);
            if let Some(growth) = self.pool.config.memory_growth {
                self.memory_limit
                    .set(growth.limit(observe::php_memory_usage(false)));
            }
            self.pool.report_ready();
            observe::set_ready(true);
        } else if self.pool.config.memory_growth.is_some() {
            let used = observe::php_memory_usage(false);
            if used > self.memory_limit.get() {
                tracing::warn!(
                    script = %self.pool.config.script.display(),
                    used_bytes = used,
                    limit_bytes = self.memory_limit.get(),
                    served = self.served.get(),
                    "worker memory grew past --worker-memory-growth; restarting this thread's script"
                );
                self.end.set(RunEnd::MemoryGrowth);
                return None;
            }
        }
        observe::set_state(ThreadState::Idle);
        let max = self.pool.config.max_requests;
        if max > 0 && self.served.get() >= max {
            self.end.set(RunEnd::MaxRequests);
            return None;
        }
        // Cache values this script fetched stay pinned while it lives; when too much
        // retired cache memory is pinned, a reboot of the script releases it.
        if self.served.get() > 0 && ferrophp_cache::worker_restart_recommended() {
            self.end.set(RunEnd::Restart);
            return None;
        }
        match self.pool.queue.next(self.epoch) {
            Next::Job(job) => Some(job),
            Next::NewEpoch => {
                self.end.set(RunEnd::Restart);
                None
            }
            Next::Closed => {
                self.end.set(RunEnd::Stop);
                None
            }
        }
    }

    /// Gives a request the worker's `env` (in `$_SERVER` and for `getenv()`), ahead of
    /// and overriding the server's own env. The merged list is cached per server env.
    fn add_worker_env(&self, cgi: &mut CgiRequest) {
        let worker_env = &self.pool.env;
        if worker_env.is_empty() {
            return;
        }
        let mut cache = self.env_cache.borrow_mut();
        if let Some((server, merged)) = cache.as_ref() {
            if Arc::ptr_eq(server, &cgi.env) {
                cgi.env = merged.clone();
                return;
            }
        }
        let merged: EnvList = worker_env
            .iter()
            .cloned()
            .chain(
                cgi.env
                    .iter()
                    .filter(|(k, _)| !worker_env.iter().any(|(w, _)| w == k))
                    .cloned(),
            )
            .collect();
        *cache = Some((cgi.env.clone(), merged.clone()));
        cgi.env = merged;
    }

    /// Serves one job; true when the worker script must end (exit or fatal error).
    fn serve(
        &self,
        job: Box<Job>,
        fci: &mut sys::zend_fcall_info,
        fcc: &mut sys::zend_fcall_info_cache,
    ) -> bool {
        let Job { mut request, done } = *job;
        match request.cgi.as_ref() {
            Some(cgi) => observe::request_begin(cgi.method.as_str(), &cgi.request_uri),
            None => observe::request_begin("RUN", ""),
        }
        if let Some(cgi) = request.cgi.as_mut() {
            self.add_worker_env(cgi);
        }
        let mut arena = self.request_arena.borrow_mut();
        let mut prepared = match PreparedRequest::new(request, &arena) {
            Ok(p) => p,
            Err(outcome) => {
                observe::request_end();
                let _ = done.send(outcome);
                return false;
            }
        };
        prepared.ctx.worker_request = true;
        let boot_context = php::server_context();
        // SAFETY (this and every shim call below): on this worker's PHP thread, inside the
        // boot request; every shim call wraps its engine calls in zend_try, so no bailout
        // crosses us. Output the script buffered outside the handler is flushed here,
        // while the boot context still receives it.
        let release_bailed = unsafe { sys::ferrophp_worker_output_release() };
        self.handling.set(true);
        prepared.install();
        php::reset_exit_status();

        let mut ends_script = release_bailed || unsafe { sys::ferrophp_worker_request_startup() };
        if !ends_script && prepared.ctx.start_script() {
            ends_script = unsafe { sys::ferrophp_try_call(fci, fcc) };
        }
        if !ends_script && php::has_exception() {
            if php::exception_is_exit() {
                ends_script = true;
            } else {
                // Logged as "Uncaught ..."; the response becomes a 500 if nothing was sent.
                unsafe { sys::ferrophp_report_exception() };
            }
        }
        let flush_bailed = unsafe { sys::ferrophp_try_void(Some(flush_output)) };
        if ends_script && !php::headers_sent() {
            // The worker died on this request and nothing reached the client.
            php::set_response_code(500);
        }
        let shutdown_bailed = unsafe { sys::ferrophp_worker_request_shutdown() };
        // Counted before the response completes, so a client that has its response also
        // sees it in the counts (the admin /health endpoint).
        self.served.set(self.served.get() + 1);
        self.pool.requests_served.fetch_add(1, Ordering::Relaxed);
        observe::request_end();
        prepared.ctx.finish_response();
        let finish_bailed = unsafe { sys::ferrophp_worker_request_finish() };
        let exit_status = if ends_script { php::exit_status() } else { 0 };

        drop(prepared.uninstall());
        php::set_server_context(boot_context);
        self.handling.set(false);
        arena.reset();
        drop(arena);
        let _ = done.send(ScriptOutcome {
            exit_status,
            not_found: false,
        });
        ferrophp_cache::on_request_end();
        // The handler has returned: nothing of it is left below this frame.
        crate::stack::release_deep_pages();
        ends_script || flush_bailed || shutdown_bailed || finish_bailed
    }
}

unsafe extern "C" fn flush_output() {
    // SAFETY: called through ferrophp_try_void on a PHP thread inside a request.
    unsafe { sys::php_output_end_all() };
}

/// `ferrophp_handle_request(callable $handler): bool` (also `frankenphp_handle_request`).
#[no_mangle]
pub unsafe extern "C" fn ferrophp_fn_handle_request(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let mut fci = sys::zend_fcall_info::default();
    let mut fcc = sys::zend_fcall_info_cache::default();
    // SAFETY: "f" fills one zend_fcall_info and one zend_fcall_info_cache.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"f".as_ptr(),
            &mut fci as *mut sys::zend_fcall_info,
            &mut fcc as *mut sys::zend_fcall_info_cache,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    // Everything with a destructor lives in this block, so the bailout below crosses no
    // Rust value that needs dropping.
    let ends_script = {
        let Some(worker) = current_worker() else {
            // FrankenPHP's exception class and message, under the name that was called.
            // SAFETY: inside an internal function call; the message is a C literal.
            unsafe {
                sys::ferrophp_throw_runtime_exception_for_call(
                    c"called while not in worker mode".as_ptr(),
                )
            };
            return;
        };
        if worker.handling.get() {
            php::throw_error(
                c"ferrophp_handle_request() cannot be called from inside a request handler",
            );
            return;
        }
        match worker.next_job() {
            None => {
                // SAFETY: return_value is this call's return slot.
                unsafe { sys::ferrophp_zval_bool(return_value, false) };
                return;
            }
            Some(job) => worker.serve(job, &mut fci, &mut fcc),
        }
    };
    if ends_script {
        // SAFETY: on a PHP thread inside the worker script; the bailout lands in the shim's
        // zend_try around php_execute_script, which then ends the boot request.
        unsafe { sys::ferrophp_bailout() };
    }
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(return_value, true) };
}

#[cfg(test)]
mod tests {
    use super::MemoryGrowth;

    #[test]
    fn memory_growth_parses_bytes_units_and_percentages() {
        assert_eq!(MemoryGrowth::parse("4096"), Ok(MemoryGrowth::Bytes(4096)));
        assert_eq!(
            MemoryGrowth::parse("64K"),
            Ok(MemoryGrowth::Bytes(64 << 10))
        );
        assert_eq!(
            MemoryGrowth::parse("64m"),
            Ok(MemoryGrowth::Bytes(64 << 20))
        );
        assert_eq!(
            MemoryGrowth::parse(" 2G "),
            Ok(MemoryGrowth::Bytes(2 << 30))
        );
        assert_eq!(MemoryGrowth::parse("50%"), Ok(MemoryGrowth::Percent(50.0)));
        assert_eq!(
            MemoryGrowth::parse("12.5%"),
            Ok(MemoryGrowth::Percent(12.5))
        );
        for bad in [
            "",
            "0",
            "0%",
            "-1",
            "-5%",
            "x",
            "12Q",
            "1.5M",
            "NaN%",
            "inf%",
            "99999999999G",
        ] {
            assert!(MemoryGrowth::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn memory_growth_limits_are_relative_to_the_boot_level() {
        assert_eq!(MemoryGrowth::Bytes(1000).limit(5000), 6000);
        assert_eq!(MemoryGrowth::Percent(50.0).limit(4000), 6000);
        // Never a limit at the baseline itself, and no overflow.
        assert_eq!(MemoryGrowth::Percent(0.0001).limit(10), 11);
        assert_eq!(MemoryGrowth::Bytes(u64::MAX).limit(10), usize::MAX);
    }
}
