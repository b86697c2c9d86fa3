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
//! `max_requests`, idle retirement), on `exit()`, or on a fatal error; an `exit()` or a
//! fatal error inside the handler leaves that request installed while the script shuts
//! down, so what the shutdown prints (shutdown functions, destructors, output buffers)
//! is that request's response, as under FrankenPHP or a classic `exit()`. The thread then
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
    /// The document root of the release the script belongs to. A request this worker
    /// serves reports it as `DOCUMENT_ROOT` (and the thread's own script as
    /// `SCRIPT_FILENAME`), whichever release routed the request: while a rolling restart
    /// moves the threads to a new release, a thread still running the old one answers
    /// with the old one's paths (None: the request's own).
    pub document_root: Option<Arc<str>>,
    /// What metrics, `/threads` and logs call this worker (None: its script's path). The
    /// server gives the script as configured: `/srv/app/current/public/worker.php` keeps
    /// naming it across deploys, while `script` follows the link to each release.
    pub name: Option<String>,
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
            document_root: None,
            name: None,
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
    /// The script threads boot from now on, and the one the threads last rolled to
    /// booted (put back if a rolling restart to a new path never gets a thread to serve).
    script: std::sync::Mutex<Scripts>,
    /// `config.env` as C strings, for the requests' `$_SERVER` and `getenv()`.
    env: EnvList,
    requests_served: AtomicU64,
    restarts: AtomicU64,
}

#[derive(Debug, Clone)]
struct Scripts {
    current: Release,
    proven: Release,
}

/// Where a worker's threads boot from: its script and the document root of its release.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Release {
    pub(crate) script: PathBuf,
    pub(crate) document_root: Option<Arc<str>>,
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
    let name = config
        .name
        .clone()
        .unwrap_or_else(|| config.script.display().to_string());
    let stats = observe::PoolStats::register(name, true);
    let role = Worker {
        env: crate::request::env_list(&config.env),
        script: std::sync::Mutex::new(Scripts {
            current: Release {
                script: config.script.clone(),
                document_root: config.document_root.clone(),
            },
            proven: Release {
                script: config.script.clone(),
                document_root: config.document_root.clone(),
            },
        }),
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

impl Worker {
    /// The release a thread boots now.
    fn release(&self) -> Release {
        self.script.lock().unwrap().current.clone()
    }
}

impl Pool<Worker> {
    /// Replaces every thread, one at a time, by one that boots `release` (a new release's
    /// worker script), or the same script again: a rolling restart (see `pool.rs`). No
    /// request is dropped, and the pool keeps as many threads serving as it had
    /// throughout. Returns at once.
    pub(crate) fn restart(&self, release: Option<Release>) {
        self.role.restarts.fetch_add(1, Ordering::Relaxed);
        if let Some(release) = release {
            let mut scripts = self.role.script.lock().unwrap();
            if scripts.current != release {
                tracing::info!(
                    from = %scripts.current.script.display(),
                    to = %release.script.display(),
                    "worker script moved: rolling the threads over to it"
                );
                scripts.current = release;
            }
        }
        self.roll();
    }

    /// The script new threads boot.
    pub(crate) fn script(&self) -> PathBuf {
        self.role.release().script
    }

    pub(crate) fn requests_served(&self) -> u64 {
        self.role.requests_served.load(Ordering::Relaxed)
    }
}

impl Role for Worker {
    const PREFIX: &'static str = "php-worker";
    const DRAIN_ON_STOP: bool = false;

    fn rolled(&self, complete: bool) {
        let mut scripts = self.script.lock().unwrap();
        if complete {
            scripts.proven = scripts.current.clone();
        } else if scripts.current != scripts.proven {
            tracing::error!(
                script = %scripts.current.script.display(),
                kept = %scripts.proven.script.display(),
                "the new worker script never served: threads boot the previous one again"
            );
            scripts.current = scripts.proven.clone();
        }
    }

    /// The life of one PHP thread of a worker: boot the script, serve, reboot as needed.
    fn run(pool: &Arc<WorkerPool>, slot: &Slot) -> Exit {
        let config = &pool.role.config;
        let state = &slot.state;
        let boot_arena = Bump::new();
        let mut failures: u32 = 0;
        let mut ever_ready = false;
        loop {
            let release = pool.role.release();
            let script = &release.script;
            let thread = WorkerThread {
                pool,
                slot,
                ending: RefCell::new(None),
                release: &release,
                request_arena: RefCell::new(Bump::with_capacity(16 * 1024)),
                served: Cell::new(0),
                reached_loop: Cell::new(false),
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
            let outcome = sapi::run_script(boot_request(config, script), &boot_arena, None);
            // The engine request is over: the request whose handler ended the script (if
            // one did) has all of its response now.
            thread.finish_ending();
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
            // next_job decides every end but a script that ended by itself; such a script
            // reached its loop if next_job saw it leave Booting (an order that lands
            // while it ends moves the state, so the state alone cannot tell).
            let reached_loop = end != RunEnd::Ended || thread.reached_loop.get();
            drop(thread);
            slot.set_ready(false);
            match end {
                RunEnd::Restart => pool.stats.restart(),
                RunEnd::MemoryGrowth => {
                    pool.stats.restart();
                    pool.stats.memory_restart();
                }
                // A script that leaves its loop and ends with status 0 restarts itself on
                // purpose: FrankenPHP counts that as a restart, and so do we.
                RunEnd::Ended if reached_loop && outcome.exit_status == 0 => pool.stats.restart(),
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
                        script = %script.display(),
                        exit_status = outcome.exit_status,
                        "worker script ended; booting it again"
                    );
                }
                RunEnd::Ended if reached_loop => {
                    tracing::warn!(
                        script = %script.display(),
                        exit_status = outcome.exit_status,
                        "worker script ended (exit or fatal error); booting it again"
                    );
                }
                RunEnd::Ended => {
                    failures += 1;
                    let why = format!(
                        "worker script {} ended before reaching ferrophp_handle_request() \
                         (exit status {}; see the PHP errors logged above)",
                        script.display(),
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

/// The long-lived request the worker script (`script`, `config.script` or where a
/// rolling restart moved it) runs in.
fn boot_request(config: &WorkerConfig, path: &std::path::Path) -> ScriptRequest {
    let script = path.to_string_lossy().into_owned();
    let mut request = ScriptRequest::new(path.to_path_buf(), Box::new(LogSink));
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
    /// The request whose handler ended the script, while the script shuts down. Declared
    /// before `request_arena`, which it borrows, so it is dropped first.
    ending: RefCell<Option<EndingRequest>>,
    /// What this run of the script booted.
    release: &'a Release,
    request_arena: RefCell<Bump>,
    served: Cell<u64>,
    /// The script reached its request loop (asked for a request after booting).
    reached_loop: Cell<bool>,
    /// The memory guard's trigger level, set when the script first asks for a request.
    memory_limit: Cell<usize>,
    /// Why this run ends, once next_job decided it.
    end: Cell<RunEnd>,
    /// The last server env seen and that env with the worker's env merged in.
    env_cache: RefCell<Option<(EnvList, EnvList)>>,
}

/// A request whose handler ended the worker script (`exit()`, a fatal error). It stays
/// installed (`SG(server_context)`, `SG(request_info)`) while the engine request of the
/// script shuts down: PHP's `php_request_shutdown` then runs the shutdown functions and
/// destructors and flushes the output buffers into this request's response, sends its
/// headers, writes its session and deactivates it, as FrankenPHP (whose `exit()` bails
/// out of the handler straight into the script's shutdown) and a classic request do.
/// Symfony's `dd()` prints from a destructor after `exit()`.
struct EndingRequest {
    /// Borrows the `request_arena` of the [`WorkerThread`] holding it (its lifetime is
    /// erased in [`WorkerThread::keep_until_shutdown`], which states why that holds).
    prepared: PreparedRequest<'static>,
    done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
    /// What the handler's `exit()` or fatal error set.
    exit_status: i32,
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
                self.reached_loop.set(true);
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
                    script = %self.pool.script().display(),
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
            // The release that runs the request is the one its paths name (see
            // `WorkerConfig::document_root`); they differ only during a rolling restart.
            if let Some(root) = &self.release.document_root {
                if !Arc::ptr_eq(&cgi.document_root, root) && *cgi.document_root != **root {
                    cgi.document_root = root.clone();
                }
            }
            if request.script_filename != self.release.script {
                request.script_filename = self.release.script.clone();
            }
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
        if ends_script {
            // exit() or a fatal error: the script's shutdown finishes this request.
            self.keep_until_shutdown(prepared, done);
            return true;
        }
        let flush_bailed = unsafe { sys::ferrophp_try_void(Some(flush_output)) };
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
                exit_status: 0,
                not_found: false,
            },
        );
        ferrophp_cache::on_request_end();
        // The handler has returned: nothing of it is left below this frame.
        crate::stack::release_deep_pages(ran);
        flush_bailed || shutdown_bailed || finish_bailed || retired
    }

    /// The handler ended the script: leaves its request installed for the script's
    /// shutdown (see [`EndingRequest`]); [`WorkerThread::finish_ending`] completes it.
    fn keep_until_shutdown(
        &self,
        prepared: PreparedRequest<'_>,
        done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
    ) {
        let exit_status = php::exit_status();
        // A crash (a non-zero status: exit(N), a fatal error) before the handler printed
        // anything is a 500 unless it chose a status; a clean exit() keeps 200, as PHP
        // gives. What sits in output buffers counts as printed: PHP flushes them after
        // the shutdown functions and destructors, as it always does.
        // SAFETY: on this worker's PHP thread, inside the request; it only reads the
        // output layer's state.
        let printed = unsafe { sys::ferrophp_worker_output_started() };
        if exit_status != 0 && !printed && php::response_code() == 200 {
            php::set_response_code(500);
        }
        // Counted now, as a request that returns is counted before its response completes.
        self.served.set(self.served.get() + 1);
        self.pool
            .role
            .requests_served
            .fetch_add(1, Ordering::Relaxed);
        // SAFETY: only the lifetime changes. `prepared` borrows `self.request_arena`,
        // which stays untouched until the value is dropped: the arena is reset only by
        // `serve` after a request that returned, and no request is served after this one
        // (the script bails out now; `ferrophp_handle_request` refuses while the thread is
        // Busy, which it stays until `finish_ending`); `finish_ending` drops the value
        // before the run ends, and field order drops `ending` before the arena anyway.
        let prepared: PreparedRequest<'static> = unsafe { std::mem::transmute(prepared) };
        let mut ending = self.ending.borrow_mut();
        let ending = ending.insert(EndingRequest {
            prepared,
            done,
            exit_status,
        });
        // It moved: SG(server_context) must follow it.
        ending.prepared.reinstall_context();
    }

    /// After the script's engine request ended: the response of the request whose handler
    /// ended the script is complete; hand it over and count it.
    fn finish_ending(&self) {
        let Some(EndingRequest {
            prepared,
            done,
            exit_status,
        }) = self.ending.borrow_mut().take()
        else {
            return;
        };
        self.slot.end();
        prepared.ctx.finish_response();
        drop(prepared.uninstall());
        // The request's deadlines covered the script's shutdown too (a destructor may
        // block); they end with its response.
        deadline::end_job();
        // Busy → Idle (or Retired: the script has ended either way); an order that came
        // meanwhile stays for the reboot to find.
        let _ = self.slot.state.job_done();
        crate::job::report(
            done,
            ScriptOutcome {
                exit_status,
                not_found: false,
            },
        );
        ferrophp_cache::on_request_end();
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
