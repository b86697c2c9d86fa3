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
//! `max_requests`, idle retirement), on `exit()`, or on a fatal error; the thread then
//! boots it again, with growing backoff when it fails before reaching the loop. After
//! `max_requests` the thread throws its PHP state away entirely: a new OS thread with a
//! new TSRM context. Every step is a transition of the thread's state machine
//! (`thread_state.rs`): this module is the worker thread's role (`Role for Worker`); its
//! pool is `pool.rs`'s, its spawning `spawn.rs`'s.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bumpalo::Bump;
use php_sys as sys;

use crate::deadline;
use crate::job::Job;
use crate::observe::{self, Slot};
use crate::php;
use crate::pool::{Exit, Pool, Role};
use crate::queue::{Next, OnClose};
use crate::request::{
    CgiRequest, Disconnected, EnvList, ResponseHead, ResponseSink, ScriptOutcome, ScriptRequest,
};
use crate::sapi::{self, PreparedRequest};
use crate::scale::Scaling;
use crate::thread_state::ThreadState;

/// One worker script and how to run it.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub script: PathBuf,
    /// PHP threads running this script (the floor when it autoscales).
    pub threads: usize,
    /// The most threads autoscaling may give it (`threads` or less: no autoscaling).
    pub max_threads: usize,
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
            max_threads: threads,
            env: Vec::new(),
            max_requests: 0,
            max_startup_failures: 5,
            memory_growth: None,
        }
    }
}

/// Why a worker script's run ended: the reason the thread's state machine moved on,
/// kept for the bookkeeping after the run (counters, logs, what comes next).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    /// Draining: a stop order or the queue closed.
    Stop,
    /// Restarting: an order, or cache pressure.
    Restart,
    /// Draining: the thread is replaced by a fresh OS thread.
    MaxRequests,
    /// Restarting: the memory guard fired for this thread's script.
    MemoryGrowth,
    /// Draining: idle above the pool's floor.
    Retire,
    /// The script ended by itself or crashed: exit(), a fatal error, or it returned.
    Ended,
}

/// The role of a worker script's threads: what they share.
pub(crate) struct Worker {
    config: WorkerConfig,
    /// `config.env` as C strings, for the requests' `$_SERVER` and `getenv()`.
    env: EnvList,
    requests_served: AtomicU64,
    restarts: AtomicU64,
}

/// The threads of one worker script.
pub(crate) type WorkerPool = Pool<Worker>;

/// Spawns a worker script's floor of threads and waits until each has reached the
/// request loop, or one has failed `max_startup_failures` times in a row.
pub(crate) fn start(config: WorkerConfig, max_idle: Duration) -> Result<Arc<WorkerPool>, String> {
    if !config.script.is_file() {
        return Err(format!(
            "worker script {} does not exist",
            config.script.display()
        ));
    }
    let threads = config.threads.max(1);
    let scaling = Scaling {
        min: threads,
        max: config.max_threads.max(threads),
        max_idle,
    };
    let stats = observe::PoolStats::register(config.script.display().to_string(), true);
    let role = Worker {
        env: crate::request::env_list(&config.env),
        config,
        requests_served: AtomicU64::new(0),
        restarts: AtomicU64::new(0),
    };
    let pool = Pool::start(role, stats, scaling)
        .map_err(|e| format!("cannot spawn a worker thread: {e}"))?;
    if let Err(why) = pool.wait_booted() {
        pool.stop();
        return Err(why);
    }
    Ok(pool)
}

impl Pool<Worker> {
    /// Restarts every thread's script after its current request (no request is dropped:
    /// queued jobs wait for the rebooted scripts).
    pub(crate) fn restart(&self) {
        self.role.restarts.fetch_add(1, Ordering::Relaxed);
        self.restart_all();
    }

    pub(crate) fn requests_served(&self) -> u64 {
        self.role.requests_served.load(Ordering::Relaxed)
    }
}

impl Role for Worker {
    const PREFIX: &'static str = "php-worker";
    const DRAIN_ON_STOP: bool = false;

    /// The life of one PHP thread of a worker: boot the script, serve, reboot as needed.
    fn run(pool: &Arc<WorkerPool>, slot: &Slot) -> Exit {
        let config = &pool.role.config;
        let state = &slot.state;
        let boot_arena = Bump::new();
        let mut failures: u32 = 0;
        let mut ever_ready = false;
        loop {
            let thread = WorkerThread {
                pool,
                slot,
                request_arena: RefCell::new(Bump::with_capacity(16 * 1024)),
                served: Cell::new(0),
                memory_limit: Cell::new(usize::MAX),
                end: Cell::new(RunEnd::Ended),
                env_cache: RefCell::new(None),
            };
            CURRENT.with(|c| c.set(&thread as *const WorkerThread as *const ()));
            pool.stats.boot();
            // As FrankenPHP does for workers: a client that goes away must not end the
            // worker script (PHP's abort is a bailout, which would reboot it for every
            // dropped connection); the handler sees connection_aborted() instead. The
            // script may still call ignore_user_abort(false) itself.
            // SAFETY: this thread is attached to PHP; PG is its own, and no request runs yet.
            unsafe { (*sys::ferrophp_core_globals()).ignore_user_abort = true };
            // SAFETY: on this PHP thread; only resets thread-local bookkeeping.
            unsafe { sys::ferrophp_worker_timer_forget() };
            let outcome = sapi::run_script(boot_request(config), &boot_arena, None);
            CURRENT.with(|c| c.set(std::ptr::null()));
            if state.get() == ThreadState::Retired {
                // The deadline watchdog gave this thread up in a request (another took its
                // place): its script has ended, and it must not boot again.
                state.drain_self("back from the request it was retired in");
                return Exit::Abandoned;
            }
            // The script's whole run, boot included: always worth the check.
            crate::stack::release_deep_pages(std::time::Duration::MAX);
            let end = thread.end.get();
            drop(thread);
            slot.set_ready(false);
            // next_job decides every end but a script that ended by itself; such a script
            // reached its loop if it left Booting (an order during a failed boot moves
            // the state too, but then next_job never ran: still a failure).
            let reached_loop = end != RunEnd::Ended
                || matches!(state.get(), ThreadState::Idle | ThreadState::Busy);
            match end {
                RunEnd::Restart => pool.stats.restart(),
                RunEnd::MemoryGrowth => {
                    pool.stats.restart();
                    pool.stats.memory_restart();
                }
                RunEnd::Ended => pool.stats.crash(),
                RunEnd::Stop | RunEnd::MaxRequests | RunEnd::Retire => {}
            }
            if reached_loop {
                failures = 0;
                ever_ready = true;
            }
            match end {
                RunEnd::Stop => return Exit::Stopped,
                RunEnd::Retire => return Exit::Retired,
                RunEnd::MaxRequests => return Exit::Replace,
                RunEnd::Restart | RunEnd::MemoryGrowth => {}
                // A script that leaves its loop and ends with status 0 restarts itself on
                // purpose (Octane's MAX_REQUESTS, FrankenPHP's worker-restart pattern): not
                // worth a warning. A non-zero status is a crash, logged above debug level
                // as FrankenPHP does.
                RunEnd::Ended if reached_loop && outcome.exit_status == 0 => {
                    tracing::info!(
                        script = %config.script.display(),
                        exit_status = outcome.exit_status,
                        "worker script ended; booting it again"
                    );
                }
                RunEnd::Ended if reached_loop => {
                    tracing::warn!(
                        script = %config.script.display(),
                        exit_status = outcome.exit_status,
                        "worker script ended (exit or fatal error); booting it again"
                    );
                }
                RunEnd::Ended => {
                    failures += 1;
                    let why = format!(
                        "worker script {} ended before reaching ferrophp_handle_request() \
                         (exit status {}; see the PHP errors logged above)",
                        config.script.display(),
                        outcome.exit_status
                    );
                    tracing::error!(thread = state.thread_name(), failures, "{why}");
                    if !ever_ready && failures >= config.max_startup_failures.max(1) {
                        pool.report_startup_failure(format!("{why}, {failures} times in a row"));
                        state.drain_self("startup given up");
                        return Exit::Stopped;
                    }
                    if state.restart_self("boot failed").is_err() {
                        return Exit::Stopped;
                    }
                    let backoff = Duration::from_millis(50u64 << failures.min(7));
                    if pool.queue.wait_closed(backoff) {
                        return Exit::Stopped;
                    }
                }
            }
            if end == RunEnd::Ended && state.restart_self("script ended").is_err() {
                return Exit::Stopped;
            }
            if state.reboot().is_err() {
                return Exit::Stopped;
            }
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
/// The thread's state (booting, idle, busy, ordered to restart or stop) is its slot's.
struct WorkerThread<'a> {
    pool: &'a Arc<WorkerPool>,
    slot: &'a Slot,
    request_arena: RefCell<Bump>,
    served: Cell<u64>,
    /// The memory guard's trigger level, set when the script first asks for a request.
    memory_limit: Cell<usize>,
    /// Why this run ends, once next_job decided it.
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
        let config = &self.pool.role.config;
        let state = &self.slot.state;
        match state.get() {
            ThreadState::Booting => {
                if let Some(growth) = config.memory_growth {
                    self.memory_limit
                        .set(growth.limit(observe::php_memory_usage(false)));
                }
                if let Err(now) = state.booted() {
                    return self.leave(now);
                }
                self.slot.set_ready(true);
                // What the booted script holds, before its first request.
                self.slot.record_memory();
                self.pool.report_booted();
            }
            ThreadState::Idle => {}
            other => return self.leave(other),
        }
        if config.memory_growth.is_some() && self.served.get() > 0 {
            let used = observe::php_memory_usage(false);
            if used > self.memory_limit.get() {
                tracing::warn!(
                    script = %config.script.display(),
                    used_bytes = used,
                    limit_bytes = self.memory_limit.get(),
                    served = self.served.get(),
                    "worker memory grew past --worker-memory-growth; restarting this thread's script"
                );
                return self.restart(RunEnd::MemoryGrowth, "memory guard");
            }
        }
        let max = config.max_requests;
        if max > 0 && self.served.get() >= max {
            // Draining even if a restart order came first: the replacement boots anyway.
            state.drain_self("max_requests");
            self.end.set(RunEnd::MaxRequests);
            return None;
        }
        // Cache values this script fetched stay pinned while it lives; when too much
        // retired cache memory is pinned, a reboot of the script releases it.
        if self.served.get() > 0 && ferrophp_cache::worker_restart_recommended() {
            return self.restart(RunEnd::Restart, "cache pressure");
        }
        let idle_timeout = self.pool.scaling.idle_timeout();
        loop {
            let interrupted = || state.get() != ThreadState::Idle;
            match self
                .pool
                .queue
                .next(OnClose::Stop, &interrupted, idle_timeout)
            {
                Next::Job(job) => match state.take_job() {
                    Ok(()) => return Some(job),
                    Err(now) => {
                        // An order came between the queue's check and here: the job goes
                        // back for a thread that will serve it.
                        self.pool.queue.push_front(job);
                        return self.leave(now);
                    }
                },
                Next::Interrupted => return self.leave(state.get()),
                Next::TimedOut => {
                    if self.pool.try_retire() {
                        state.drain_self("idle above the floor");
                        self.end.set(RunEnd::Retire);
                        return None;
                    }
                }
                Next::Closed => {
                    state.drain_self("queue closed");
                    self.end.set(RunEnd::Stop);
                    return None;
                }
            }
        }
    }

    /// Ends the run because the state moved to `now` (an order, or the thread's own
    /// decision): Restarting reboots the script, anything else stops it.
    fn leave(&self, now: ThreadState) -> Option<Box<Job>> {
        self.end.set(match now {
            ThreadState::Restarting => RunEnd::Restart,
            _ => RunEnd::Stop,
        });
        None
    }

    /// Ends the run to restart this thread's script (unless a stop got there first).
    fn restart(&self, why: RunEnd, log: &'static str) -> Option<Box<Job>> {
        match self.slot.state.restart_self(log) {
            Ok(()) => self.end.set(why),
            Err(_) => self.end.set(RunEnd::Stop),
        }
        None
    }

    /// Gives a request the worker's `env` (in `$_SERVER` and for `getenv()`), ahead of
    /// and overriding the server's own env. The merged list is cached per server env.
    fn add_worker_env(&self, cgi: &mut CgiRequest) {
        let worker_env = &self.pool.role.env;
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
        let Job {
            mut request, done, ..
        } = *job;
        match request.cgi.as_ref() {
            Some(cgi) => self.slot.begin(cgi.method.as_str(), cgi.request_uri()),
            None => self.slot.begin("RUN", ""),
        }
        if let Some(cgi) = request.cgi.as_mut() {
            self.add_worker_env(cgi);
        }
        let mut arena = self.request_arena.borrow_mut();
        deadline::begin_job();
        let mut prepared = match PreparedRequest::new(request, &arena, deadline::current()) {
            Ok(p) => p,
            Err(outcome) => {
                deadline::end_job();
                self.slot.end();
                let _ = self.slot.state.job_done();
                crate::job::report(done, outcome);
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
        if ends_script && !php::headers_sent() && php::response_code() < 500 {
            // The worker died on this request and nothing reached the client (a deadline
            // already chose its 5xx).
            php::set_response_code(500);
        }
        let shutdown_bailed = unsafe { sys::ferrophp_worker_request_shutdown() };
        // Counted before the response completes, so a client that has its response also
        // sees it in the counts (the admin /health endpoint).
        self.served.set(self.served.get() + 1);
        self.pool
            .role
            .requests_served
            .fetch_add(1, Ordering::Relaxed);
        let ran = self.slot.end();
        prepared.ctx.finish_response();
        let finish_bailed = unsafe { sys::ferrophp_worker_request_finish() };
        let exit_status = if ends_script { php::exit_status() } else { 0 };

        drop(prepared.uninstall());
        deadline::end_job();
        php::set_server_context(boot_context);
        // Busy → Idle; an order that came meanwhile is found by the next next_job. A
        // thread retired meanwhile ends its script (Role::run then lets it go).
        let retired = self.slot.state.job_done() == Err(ThreadState::Retired);
        arena.reset();
        drop(arena);
        crate::job::report(
            done,
            ScriptOutcome {
                exit_status,
                not_found: false,
            },
        );
        ferrophp_cache::on_request_end();
        // The handler has returned: nothing of it is left below this frame.
        crate::stack::release_deep_pages(ran);
        ends_script || flush_bailed || shutdown_bailed || finish_bailed || retired
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
        if worker.slot.state.get() == ThreadState::Busy {
            php::throw_error(
                c"ferrophp_handle_request() cannot be called from inside a request handler",
            );
            return;
        }
        match worker.next_job() {
            None => {
                // The script runs on outside any request: no client's timer may end it.
                // SAFETY: on this worker's PHP thread, inside its boot request.
                unsafe { sys::ferrophp_worker_timer_stop() };
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
