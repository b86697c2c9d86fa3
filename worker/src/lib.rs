//! ferrophp's workers: the persistent PHP threads that both modes run on. This crate
//! starts the embedded engine, keeps pools of long-lived PHP threads (classic threads that
//! run each request's script, worker-mode threads that loop in a booted app), and runs
//! scripts on them. It knows nothing of HTTP or sockets: callers hand it a
//! [`ScriptRequest`] and receive output through a [`ResponseSink`].
//!
//! Layout (a module named like a folder is one: `sapi/`, `trace/`, `server_vars/`,
//! `worker_mode/`, each with its parts listed in its own module doc):
//! - The engine and a request in it: [`sapi`] (engine start-up and shut-down, attaching
//!   PHP threads, the `sapi_module_struct` callbacks, preparing and installing a request,
//!   running a script, reading the response head); `request_context` (the request in
//!   progress on a thread, which `SG(server_context)` points at); `server_vars`
//!   (`$_SERVER`); `module` (our PHP extension's lifecycle), `functions` (the PHP functions
//!   the SAPI adds), `metrics` and `trace` (`Ferrophp\Metrics`, `Ferrophp\Trace` and
//!   `Ferrophp\Span`), `env` (`putenv()` per thread), `opcache_guard`, `stack`; `php` the
//!   FFI edge helpers.
//! - The PHP threads: `thread_state` (each thread's state machine), `spawn` (how every PHP
//!   thread starts), `pool` (a pool of threads of one role), `classic` and `worker_mode`
//!   (the two roles), `queue` and `job` (the hand-off), `scale` (autoscaling), `deadline`
//!   (request deadlines through blocking calls, retiring stuck threads, the slow log).
//! - Around them: [`request`] the plain types crossing the boundary, [`observe`] what an
//!   operator sees of the threads and pools, [`cli`] PHP's own CLI, [`layout`] where a
//!   release tree keeps PHP's files, `diagnostics` and `fuzzing` test fixtures and fuzz
//!   entry points.
//!
//! Dependencies go one way: roles → pool → scale/queue → job, and nothing imports a role
//! or the pool back; roles → sapi → trace → request_context, and whatever needs the
//! request in progress (the SAPI's callbacks, `functions`, `trace`) reads it from
//! `request_context`, never from the SAPI.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

mod classic;
pub mod cli;
mod deadline;
#[cfg(feature = "bench-fixtures")]
pub mod diagnostics;
mod env;
mod ffi;
mod functions;
#[doc(hidden)]
pub mod fuzzing;
mod job;
pub mod layout;
mod metrics;
mod module;
pub mod observe;
mod opcache_guard;
mod php;
mod pool;
mod queue;
pub mod request;
mod request_context;
pub mod sapi;
mod scale;
mod server_vars;
mod spawn;
mod stack;
mod thread_state;
mod trace;
mod worker_mode;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub use deadline::{
    stats as deadline_stats, DeadlineConfig, DeadlineStats, ReplaceHook, SlowEntry, SlowFrame,
    SlowSink, DEFAULT_RETIRE_GRACE,
};
pub use queue::{Placement, Ticket, STALLED_AFTER};
pub use request::{
    env_list, BufferSink, CgiRequest, Disconnected, EnvList, RequestTarget, ResponseHead,
    ResponseSink, ScriptOutcome, ScriptRequest, ServerName,
};
pub use sapi::{LogTarget, SapiName};
pub use spawn::DEFAULT_PHP_STACK_SIZE;
pub use worker_mode::{MemoryGrowth, WorkerConfig};

/// Requests in flight per thread a pool may run: see [`Engine::max_in_flight`].
const IN_FLIGHT_PER_THREAD: usize = 3;

/// Smaller stacks than this would not even start PHP reliably.
pub const MIN_PHP_STACK_SIZE: usize = 2 * 1024 * 1024;

/// How long an autoscaled thread may idle before it ends, unless configured.
pub const DEFAULT_MAX_IDLE_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// PHP version the runtime was built against.
pub const PHP_VERSION: &str = php_sys::PHP_VERSION_STRING;

/// How to start the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Number of classic PHP threads (the floor when it autoscales).
    pub threads: usize,
    /// The most classic PHP threads autoscaling may run (`threads` or less: no
    /// autoscaling).
    pub max_threads: usize,
    /// How long a thread above its pool's floor may wait for a request before it ends.
    pub max_idle_time: std::time::Duration,
    /// ini settings applied after php.ini, in order (like `php -d key=value`).
    pub ini: Vec<(String, String)>,
    /// A php.ini file or directory to use instead of the build's default.
    pub php_ini: Option<std::path::PathBuf>,
    /// Do not read any php.ini.
    pub no_php_ini: bool,
    /// ini defaults that a php.ini may still override.
    pub ini_defaults: Vec<(String, String)>,
    /// Worker scripts, each with its own PHP threads (in addition to `threads`).
    pub workers: Vec<WorkerConfig>,
    /// Where PHP's log lines (`log_errors`, `error_log()`) go.
    pub log_target: LogTarget,
    /// The SAPI name scripts see: "ferrophp", or "cli" / "cli-server" when ferrophp stands
    /// in for `php` / `php -S` ([`SapiName`]).
    pub sapi_name: SapiName,
    /// Stack size of every PHP thread, in bytes: bounds how deep recursion through C
    /// frames may go before memory_limit stops it (docs/operating.md).
    pub php_stack_size: usize,
    /// Request deadlines, retiring stuck threads, the slow log.
    pub deadlines: DeadlineConfig,
    /// What the engine calls back (the slow log, a stuck process's replacement).
    pub hooks: EngineHooks,
}

/// What the engine calls back, from its own threads.
#[derive(Clone, Default)]
pub struct EngineHooks {
    /// Receives each slow-log entry (default: a `slowlog` warning in the log).
    pub slow_log: Option<SlowSink>,
    /// Called once when more threads are stuck than `max_retired_threads`: the process
    /// should drain and exit for its supervisor to start a fresh one.
    pub replace_process: Option<ReplaceHook>,
}

impl std::fmt::Debug for EngineHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineHooks")
            .field("slow_log", &self.slow_log.is_some())
            .field("replace_process", &self.replace_process.is_some())
            .finish()
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            threads: 1,
            max_threads: 0,
            max_idle_time: DEFAULT_MAX_IDLE_TIME,
            ini: Vec::new(),
            php_ini: None,
            no_php_ini: false,
            ini_defaults: Vec::new(),
            workers: Vec::new(),
            log_target: LogTarget::Tracing,
            sapi_name: SapiName::Server,
            php_stack_size: spawn::DEFAULT_PHP_STACK_SIZE,
            deadlines: DeadlineConfig::default(),
            hooks: EngineHooks::default(),
        }
    }
}

/// Where PHP's configuration came from, as `php --ini` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniFiles {
    /// The build's default php.ini directory (`PHP_CONFIG_FILE_PATH`).
    pub config_file_path: String,
    /// The php.ini that was read, if any.
    pub loaded: Option<String>,
    /// The directory scanned for more .ini files (`PHP_INI_SCAN_DIR` or the build's).
    pub scan_dir: Option<String>,
    /// The files read from it, separated by ",\n" as PHP lists them.
    pub scanned: Option<String>,
}

/// Why the engine did not start.
#[derive(Debug)]
pub enum EngineError {
    /// PHP can be started once per process.
    AlreadyStarted,
    /// PHP's start-up failed, a worker script never reached its request loop, or a PHP
    /// thread could not be spawned; the message says which.
    Startup(String),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::AlreadyStarted => {
                write!(f, "the PHP engine was already started in this process")
            }
            EngineError::Startup(msg) => write!(f, "PHP engine start-up failed: {msg}"),
        }
    }
}

impl std::error::Error for EngineError {}

/// The engine is closed for good: it was shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStopped;

static STARTED: AtomicBool = AtomicBool::new(false);

/// Restarts and observes the worker scripts of a running engine.
#[derive(Clone)]
pub struct EngineControl {
    workers: Vec<std::sync::Arc<worker_mode::WorkerPool>>,
}

impl EngineControl {
    /// Rolling restart of every worker: each thread is replaced, one at a time, by a new
    /// one that boots the script again, and only once the new one serves does an old one
    /// drain (after its current request). No request is dropped and each pool keeps its
    /// ready threads throughout. Returns at once; the roll goes on in the background.
    pub fn restart_workers(&self) {
        for pool in &self.workers {
            pool.restart(None);
        }
    }

    /// [`EngineControl::restart_workers`] with each worker's script at a new path (one
    /// per worker, in order: a new release's), that release's document root beside (see
    /// [`WorkerConfig::document_root`]). A pool whose new threads never serve (the new
    /// script fails to boot) stops its roll and keeps the old threads and script.
    pub fn restart_workers_at(
        &self,
        scripts: &[std::path::PathBuf],
        document_root: Option<std::sync::Arc<str>>,
    ) {
        for (pool, script) in self.workers.iter().zip(scripts) {
            pool.restart(Some(worker_mode::Release {
                script: script.clone(),
                document_root: document_root.clone(),
            }));
        }
    }

    /// Paths PHP resolved through symlinks may name other files now (a deploy switched a
    /// `current` link): each PHP thread empties its realpath cache before its next
    /// request (`sapi::forget_resolved_paths`).
    pub fn forget_resolved_paths(&self) {
        sapi::forget_resolved_paths();
    }

    /// Requests served so far by each worker.
    pub fn worker_requests_served(&self) -> Vec<u64> {
        self.workers.iter().map(|p| p.requests_served()).collect()
    }
}

/// Which PHP threads run a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The classic pool: each request runs its script from scratch.
    Classic,
    /// The worker script at this index of [`EngineConfig::workers`].
    Worker(usize),
}

impl Target {
    /// The pool's position in `observe::pools()` (and the server's per-pool metrics):
    /// the classic pool first, then the workers in order.
    pub fn pool_index(self) -> usize {
        match self {
            Target::Classic => 0,
            Target::Worker(i) => i + 1,
        }
    }
}

/// The running PHP engine and its threads. Dropping it shuts PHP down cleanly.
pub struct Engine {
    classic: std::sync::Arc<classic::ClassicPool>,
    workers: Vec<std::sync::Arc<worker_mode::WorkerPool>>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    main: Option<JoinHandle<()>>,
}

type Ready = Result<
    (
        std::sync::Arc<classic::ClassicPool>,
        Vec<std::sync::Arc<worker_mode::WorkerPool>>,
    ),
    String,
>;

impl Engine {
    /// Starts PHP on a dedicated main thread, spawns the PHP threads, and boots the worker
    /// scripts (waiting until each worker thread has reached its request loop).
    pub fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(EngineError::AlreadyStarted);
        }
        let settings = sapi::ModuleSettings {
            ini_entries: config
                .ini
                .iter()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect(),
            php_ini: config.php_ini.clone(),
            no_php_ini: config.no_php_ini,
            ini_defaults: config.ini_defaults.clone(),
            log_target: config.log_target,
            sapi_name: config.sapi_name,
        };
        let threads = config.threads.max(1);
        // Before the first PHP thread (php-main) is spawned; the engine starts once.
        spawn::set_php_stack_size(config.php_stack_size.max(MIN_PHP_STACK_SIZE));
        deadline::configure(
            config.deadlines,
            config.hooks.slow_log.clone(),
            config.hooks.replace_process.clone(),
        );
        let classic_scaling = scale::Scaling {
            min: threads,
            max: config.max_threads.max(threads),
            max_idle: config.max_idle_time,
        };
        let max_idle = config.max_idle_time;
        let worker_configs = config.workers.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Ready>();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let main = std::thread::Builder::new()
            .name("php-main".into())
            .stack_size(spawn::php_stack_size())
            .spawn(move || {
                let module = match sapi::engine_startup(&settings) {
                    Ok(module) => module,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let stats = observe::PoolStats::register("classic".into(), false);
                let pool = match pool::Pool::start(classic::Classic, stats, classic_scaling) {
                    Ok(pool) => pool,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("cannot spawn PHP threads: {e}")));
                        sapi::engine_shutdown(module);
                        return;
                    }
                };
                let mut workers = Vec::new();
                let mut failure = None;
                for config in worker_configs {
                    match worker_mode::start(config, max_idle) {
                        Ok(w) => workers.push(w),
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                match failure {
                    None => {
                        let pools = workers.clone();
                        let _ = ready_tx.send(Ok((pool.clone(), workers)));
                        // Park until the Engine is dropped or shut down.
                        let _ = stop_rx.recv();
                        for p in &pools {
                            p.stop();
                        }
                    }
                    Some(e) => {
                        for p in &workers {
                            p.stop();
                        }
                        let _ = ready_tx.send(Err(e));
                    }
                }
                pool.stop();
                drop(pool);
                let stuck = deadline::stuck_threads();
                if stuck > 0 {
                    // They may come back into PHP at any moment: shutting it down under
                    // them could crash the process on its way out. The module is left
                    // as it is (PHP keeps pointing at it until the process exits).
                    tracing::warn!(
                        "{stuck} retired PHP threads are still stuck: exiting without PHP's shutdown"
                    );
                    let _left_running = module;
                } else {
                    sapi::engine_shutdown(module);
                }
            })
            .map_err(|e| EngineError::Startup(e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok((classic, workers))) => {
                if let Err(e) = deadline::start_watchdog() {
                    tracing::error!("cannot start the deadline watchdog: {e}");
                }
                Ok(Engine {
                    classic,
                    workers,
                    stop: Some(stop_tx),
                    main: Some(main),
                })
            }
            Ok(Err(msg)) => {
                let _ = main.join();
                Err(EngineError::Startup(msg))
            }
            Err(_) => {
                let _ = main.join();
                Err(EngineError::Startup(
                    "the PHP main thread died during start-up".into(),
                ))
            }
        }
    }

    /// Queues a script run on the classic pool; see [`Engine::submit_to`].
    pub fn submit(
        &self,
        request: ScriptRequest,
    ) -> Result<tokio::sync::oneshot::Receiver<ScriptOutcome>, EngineStopped> {
        self.submit_to(Target::Classic, request)
    }

    /// Queues a request for `target`; the receiver yields its outcome once it has been
    /// served. Never blocks: callers bound what is in flight (see
    /// [`Engine::max_in_flight`]).
    pub fn submit_to(
        &self,
        target: Target,
        request: ScriptRequest,
    ) -> Result<tokio::sync::oneshot::Receiver<ScriptOutcome>, EngineStopped> {
        let (done, rx) = tokio::sync::oneshot::channel();
        self.queue(target)?
            .push(job::Job::new(request, Some(done)))
            .ok_or(EngineStopped)?;
        Ok(rx)
    }

    /// Hands a request to `target`'s pool for callers that learn everything through the
    /// request's sink (the HTTP side): says whether a thread runs it now or it waits in
    /// the queue, from where [`Engine::withdraw`] can take it back. Never blocks.
    pub fn dispatch(
        &self,
        target: Target,
        request: ScriptRequest,
    ) -> Result<Placement, EngineStopped> {
        self.queue(target)?
            .push(job::Job::new(request, None))
            .ok_or(EngineStopped)
    }

    /// For a request still queued [`STALLED_AFTER`] after `dispatch`: hands the pool's
    /// front job to an idle thread if the running threads have stalled since (blocked or
    /// on long requests), as the next `dispatch` would. Never blocks.
    pub fn nudge(&self, target: Target) {
        if let Ok(queue) = self.queue(target) {
            queue.nudge();
        }
    }

    /// Takes a queued request back before any thread has taken it (its caller stopped
    /// waiting): true when it was still queued, and is now dropped with its sink. False
    /// when a thread already runs it: its response will come.
    pub fn withdraw(&self, target: Target, ticket: Ticket) -> bool {
        let Ok(queue) = self.queue(target) else {
            return false;
        };
        // Dropped outside the queue's lock: the sink's drop may wake its receiver.
        let job = queue.withdraw(ticket);
        job.is_some()
    }

    fn queue(&self, target: Target) -> Result<&queue::JobQueue, EngineStopped> {
        match target {
            Target::Classic => Ok(&self.classic.queue),
            Target::Worker(i) => Ok(&self.workers.get(i).ok_or(EngineStopped)?.queue),
        }
    }

    /// Runs a script and waits for it to end. Not for use on an async runtime thread.
    pub fn run(&self, request: ScriptRequest) -> Result<ScriptOutcome, EngineStopped> {
        self.submit(request)?
            .blocking_recv()
            .map_err(|_| EngineStopped)
    }

    /// A handle for restarting and observing workers from elsewhere (signal handlers,
    /// the admin endpoint, the file watcher) without owning the engine.
    pub fn control(&self) -> EngineControl {
        EngineControl {
            workers: self.workers.clone(),
        }
    }

    /// Reboots every worker script after its current request; see [`EngineControl`].
    pub fn restart_workers(&self) {
        self.control().restart_workers();
    }

    /// The most threads `target`'s pool may run (its ceiling when it autoscales).
    pub fn max_threads(&self, target: Target) -> usize {
        match target {
            Target::Classic => self.classic.scaling.max,
            Target::Worker(i) => self.workers.get(i).map_or(0, |w| w.scaling.max),
        }
    }

    /// How many requests the HTTP side should let be in `target`'s pool at once: three
    /// per thread its ceiling allows, so each thread has one request running and about two
    /// queued behind it. A thread that finishes then takes its next request without
    /// sleeping, which saves a wake-up (a futex call and a context switch) per request
    /// under load. The queued ones still give up at their deadline ([`Engine::withdraw`]).
    /// Measured on worker hello (A/B, 2 cores, 32 connections, 4 threads): 1 -> 2 per
    /// thread +14% req/s and -20% CPU per request, 2 -> 3 about +5%, 3 -> 4 nothing.
    pub fn max_in_flight(&self, target: Target) -> usize {
        self.max_threads(target) * IN_FLIGHT_PER_THREAD
    }

    /// The ini files PHP's start-up looked for and read (what `php --ini` prints).
    pub fn ini_files(&self) -> IniFiles {
        php::ini_files()
    }

    /// Lets running scripts finish, stops every PHP thread and shuts PHP down.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        // The stop signal wakes the main thread, which stops the workers, drains and joins
        // the classic pool, and shuts PHP down.
        self.workers.clear();
        self.stop = None;
        if let Some(main) = self.main.take() {
            let _ = main.join();
        }
        deadline::stop_watchdog();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
