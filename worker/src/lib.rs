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

mod background;
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
mod mercure_publish;
mod metrics;
mod module;
pub mod observe;
mod opcache_guard;
mod php;
mod php_jobs;
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

pub use background::{BackgroundConfig, DEFAULT_STOP_TIMEOUT as DEFAULT_BACKGROUND_STOP_TIMEOUT};
pub use deadline::{
    stats as deadline_stats, DeadlineConfig, DeadlineStats, ReplaceHook, SlowEntry, SlowFrame,
    SlowSink, DEFAULT_RETIRE_GRACE,
};
pub use mercure_publish::set_mercure_hub;
pub use observe::{PoolId, PoolKind};
pub use queue::{Placement, Ticket, STALLED_AFTER};
pub use request::{
    env_list, BufferSink, CgiRequest, Disconnected, EnvList, RequestTarget, ResponseHead,
    ResponseSink, ScriptOutcome, ScriptRequest, ServerName,
};
pub use sapi::{LogTarget, SapiName};
pub use spawn::DEFAULT_PHP_STACK_SIZE;
pub use worker_mode::{MemoryGrowth, WorkerConfig};

/// The process's job queue, once opened (by the first `Ferrophp\Jobs` call, or at start-up
/// when background workers run): for `/metrics`, the admin view and the scheduler.
pub fn jobs_queue() -> Option<std::sync::Arc<jobs::Queue>> {
    php_jobs::opened()
}

/// The process's job queue, opened now if it was not yet (the scheduler's store).
pub fn open_jobs_queue() -> Result<std::sync::Arc<jobs::Queue>, String> {
    php_jobs::open()
}

/// Whether an [`open_jobs_queue`] error says another process holds the local store (the
/// one a `--supervise` reload replaces, until it exits): worth retrying.
pub fn jobs_queue_held_elsewhere(error: &str) -> bool {
    php_jobs::held_elsewhere(error)
}

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
    /// Background scripts, each with its own PHP threads running it in a loop.
    pub background: Vec<BackgroundConfig>,
    /// Where `Ferrophp\Jobs` keeps jobs (None: no store known; its calls throw).
    pub jobs: Option<jobs::QueueConfig>,
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
            background: Vec::new(),
            jobs: None,
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
    pools: Vec<EnginePool>,
}

impl EngineControl {
    /// The worker pools with their index in [`EngineConfig::workers`].
    fn workers(&self) -> impl Iterator<Item = (usize, &std::sync::Arc<worker_mode::WorkerPool>)> {
        self.pools.iter().filter_map(|pool| match pool {
            EnginePool::Worker { index, pool } => Some((*index, pool)),
            EnginePool::Classic(_) | EnginePool::Background { .. } => None,
        })
    }

    /// Rolling restart of every worker: each thread is replaced, one at a time, by a new
    /// one that boots the script again, and only once the new one serves does an old one
    /// drain (after its current request). No request is dropped and each pool keeps its
    /// ready threads throughout. Returns at once; the roll goes on in the background.
    pub fn restart_workers(&self) {
        for (_, pool) in self.workers() {
            pool.restart(None);
        }
        self.restart_background();
    }

    /// Tells every background script to stop; each thread runs its script again as soon
    /// as it returned (see `background.rs`).
    pub fn restart_background(&self) {
        for pool in &self.pools {
            if let EnginePool::Background { pool } = pool {
                pool.restart();
            }
        }
    }

    /// [`EngineControl::restart_workers`] with each worker's script at a new path (one
    /// per worker, in the order of [`EngineConfig::workers`]: a new release's), that
    /// release's document root beside (see [`WorkerConfig::document_root`]). A pool whose
    /// new threads never serve (the new script fails to boot) stops its roll and keeps
    /// the old threads and script.
    pub fn restart_workers_at(
        &self,
        scripts: &[std::path::PathBuf],
        document_root: Option<std::sync::Arc<str>>,
    ) {
        for (index, pool) in self.workers() {
            if let Some(script) = scripts.get(index) {
                pool.restart(Some(worker_mode::Release {
                    script: script.clone(),
                    document_root: document_root.clone(),
                }));
            }
        }
        self.restart_background();
    }

    /// Paths PHP resolved through symlinks may name other files now (a deploy switched a
    /// `current` link): each PHP thread empties its realpath cache before its next
    /// request (`sapi::forget_resolved_paths`).
    pub fn forget_resolved_paths(&self) {
        sapi::forget_resolved_paths();
    }

    /// Queues a script run on the classic pool (a scheduled task); the receiver yields
    /// its outcome once it ran. Never blocks.
    pub fn submit(
        &self,
        request: ScriptRequest,
    ) -> Result<tokio::sync::oneshot::Receiver<ScriptOutcome>, EngineStopped> {
        let classic = self
            .pools
            .iter()
            .find(|pool| pool.target() == Some(Target::Classic))
            .ok_or(EngineStopped)?;
        let (done, rx) = tokio::sync::oneshot::channel();
        classic
            .queue()
            .push(job::Job::new(request, Some(done)))
            .ok_or(EngineStopped)?;
        Ok(rx)
    }

    /// Requests served so far by each worker, in the order of [`EngineConfig::workers`].
    pub fn worker_requests_served(&self) -> Vec<u64> {
        let mut served: Vec<(usize, u64)> = self
            .workers()
            .map(|(index, pool)| (index, pool.requests_served()))
            .collect();
        served.sort_unstable_by_key(|&(index, _)| index);
        served.into_iter().map(|(_, n)| n).collect()
    }
}

/// Which PHP threads run a request: the server's name for one of the engine's pools, by
/// what the pool is, never by where it sits in the engine's list (a pool's place among
/// the process's pools is its [`PoolId`]: [`Engine::pool_id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The classic pool: each request runs its script from scratch.
    Classic,
    /// The worker script at this index of [`EngineConfig::workers`].
    Worker(usize),
}

impl Target {
    /// The kind of the pool it names.
    pub fn kind(self) -> PoolKind {
        match self {
            Target::Classic => PoolKind::Classic,
            Target::Worker(_) => PoolKind::Worker,
        }
    }
}

/// One pool of a running engine: its threads, by kind. The engine keeps a list of them,
/// in the order they started; a new kind of PHP thread is one more variant here, one in
/// [`PoolSpec`] and one in [`PoolKind`].
#[derive(Clone)]
enum EnginePool {
    /// The classic pool.
    Classic(std::sync::Arc<classic::ClassicPool>),
    /// The threads of the worker script at `index` of [`EngineConfig::workers`].
    Worker {
        index: usize,
        pool: std::sync::Arc<worker_mode::WorkerPool>,
    },
    /// The threads of one background script of [`EngineConfig::background`] (they take
    /// no requests: no [`Target`] names them).
    Background {
        pool: std::sync::Arc<background::BackgroundPool>,
    },
}

impl EnginePool {
    /// The name the server gives this pool (None: a background pool).
    fn target(&self) -> Option<Target> {
        match self {
            EnginePool::Classic(_) => Some(Target::Classic),
            EnginePool::Worker { index, .. } => Some(Target::Worker(*index)),
            EnginePool::Background { .. } => None,
        }
    }

    fn queue(&self) -> &queue::JobQueue {
        match self {
            EnginePool::Classic(pool) => &pool.queue,
            EnginePool::Worker { pool, .. } => &pool.queue,
            EnginePool::Background { pool } => &pool.queue,
        }
    }

    fn scaling(&self) -> &scale::Scaling {
        match self {
            EnginePool::Classic(pool) => &pool.scaling,
            EnginePool::Worker { pool, .. } => &pool.scaling,
            EnginePool::Background { pool } => &pool.scaling,
        }
    }

    fn id(&self) -> PoolId {
        match self {
            EnginePool::Classic(pool) => pool.stats.id,
            EnginePool::Worker { pool, .. } => pool.stats.id,
            EnginePool::Background { pool } => pool.stats.id,
        }
    }

    /// Stops its threads (as its role says: classic threads finish the queued jobs,
    /// worker threads their current request) and waits for them.
    fn stop(&self) {
        match self {
            EnginePool::Classic(pool) => pool.stop(),
            EnginePool::Worker { pool, .. } => pool.stop(),
            EnginePool::Background { pool } => pool.stop(),
        }
    }
}

/// A pool the configuration asks for, as [`Engine::start`] starts it.
enum PoolSpec {
    /// The classic pool, with its floor and ceiling.
    Classic(scale::Scaling),
    /// The worker script at `index` of [`EngineConfig::workers`].
    Worker { index: usize, config: WorkerConfig },
    /// A background script.
    Background(BackgroundConfig),
}

impl EngineConfig {
    /// The pools to start, in order: the classic pool, each worker script, then each
    /// background script (stopped first).
    fn pool_specs(&self) -> Vec<PoolSpec> {
        let threads = self.threads.max(1);
        let classic = PoolSpec::Classic(scale::Scaling {
            min: threads,
            max: self.max_threads.max(threads),
            max_idle: self.max_idle_time,
        });
        let workers = self
            .workers
            .iter()
            .enumerate()
            .map(|(index, config)| PoolSpec::Worker {
                index,
                config: config.clone(),
            });
        let background = self.background.iter().cloned().map(PoolSpec::Background);
        std::iter::once(classic)
            .chain(workers)
            .chain(background)
            .collect()
    }

    /// What PHP's start-up needs of the configuration.
    fn module_settings(&self) -> sapi::ModuleSettings {
        sapi::ModuleSettings {
            ini_entries: self.ini.iter().map(|(k, v)| format!("{k}={v}\n")).collect(),
            php_ini: self.php_ini.clone(),
            no_php_ini: self.no_php_ini,
            ini_defaults: self.ini_defaults.clone(),
            log_target: self.log_target,
            sapi_name: self.sapi_name,
        }
    }
}

/// Starts one pool, on the engine's main thread after PHP's start-up, and waits until
/// its floor of threads serves (a worker script's threads have reached their loop).
fn start_pool(spec: PoolSpec, max_idle: std::time::Duration) -> Result<EnginePool, String> {
    match spec {
        PoolSpec::Classic(scaling) => {
            pool::Pool::start(classic::Classic, "classic".into(), scaling)
                .map(EnginePool::Classic)
                .map_err(|e| format!("cannot spawn PHP threads: {e}"))
        }
        PoolSpec::Worker { index, config } => {
            worker_mode::start(config, max_idle).map(|pool| EnginePool::Worker { index, pool })
        }
        PoolSpec::Background(config) => {
            background::start(config).map(|pool| EnginePool::Background { pool })
        }
    }
}

/// The running PHP engine and its pools of threads. Dropping it shuts PHP down cleanly.
pub struct Engine {
    /// Every pool, in the order they started.
    pools: Vec<EnginePool>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    main: Option<JoinHandle<()>>,
}

/// What the engine's main thread reports once its pools started, or why they did not.
type Ready = Result<Vec<EnginePool>, String>;

impl Engine {
    /// Starts PHP on a dedicated main thread and each configured pool on it (the classic
    /// pool, then each worker script, waiting until each worker thread has reached its
    /// request loop), then the deadline watchdog.
    pub fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(EngineError::AlreadyStarted);
        }
        prepare_process(&config);
        php_jobs::configure(config.jobs.clone());
        if !config.background.is_empty() {
            // Background workers take jobs at once: a store that cannot open fails the
            // start, not their first call; but for one held by the process a
            // `--supervise` reload is replacing (it lets go once this one serves), the
            // calls retry on their own (a background script's run fails and backs off).
            match php_jobs::open() {
                Ok(_) => {}
                Err(e) if php_jobs::held_elsewhere(&e) => tracing::warn!(
                    "{e}: jobs wait until it lets go (the process a reload replaces)"
                ),
                Err(e) => return Err(EngineError::Startup(e)),
            }
        }
        let settings = config.module_settings();
        let specs = config.pool_specs();
        let max_idle = config.max_idle_time;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Ready>();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let main = std::thread::Builder::new()
            .name("php-main".into())
            .stack_size(spawn::php_stack_size())
            .spawn(move || php_main(&settings, specs, max_idle, &ready_tx, &stop_rx))
            .map_err(|e| EngineError::Startup(e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok(pools)) => {
                if let Err(e) = deadline::start_watchdog() {
                    tracing::error!("cannot start the deadline watchdog: {e}");
                }
                Ok(Engine {
                    pools,
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

    /// The pool `target` names.
    fn pool(&self, target: Target) -> Option<&EnginePool> {
        self.pools.iter().find(|pool| pool.target() == Some(target))
    }

    fn queue(&self, target: Target) -> Result<&queue::JobQueue, EngineStopped> {
        self.pool(target)
            .map(EnginePool::queue)
            .ok_or(EngineStopped)
    }

    /// The place of `target`'s pool among the process's pools (`observe::pools()`, the
    /// server's per-pool gauges); None when the engine has no such pool.
    pub fn pool_id(&self, target: Target) -> Option<PoolId> {
        self.pool(target).map(EnginePool::id)
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
            pools: self.pools.clone(),
        }
    }

    /// Reboots every worker script after its current request; see [`EngineControl`].
    pub fn restart_workers(&self) {
        self.control().restart_workers();
    }

    /// The most threads `target`'s pool may run (its ceiling when it autoscales).
    pub fn max_threads(&self, target: Target) -> usize {
        self.pool(target).map_or(0, |pool| pool.scaling().max)
    }

    /// How many requests the HTTP side should let be in `target`'s pool at once: three
    /// per thread its ceiling allows (`scale.rs` says why), so a thread that finishes
    /// takes its next request without sleeping. The queued ones still give up at their
    /// deadline ([`Engine::withdraw`]).
    pub fn max_in_flight(&self, target: Target) -> usize {
        self.pool(target)
            .map_or(0, |pool| pool.scaling().max_in_flight())
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
        // The stop signal wakes the main thread, which stops every pool (the classic pool
        // drains its queue) and shuts PHP down.
        self.pools.clear();
        self.stop = None;
        if let Some(main) = self.main.take() {
            let _ = main.join();
        }
        deadline::stop_watchdog();
    }
}

/// What the process needs before the first PHP thread exists: their stack size, the
/// deadlines and slow log (whose threshold also counts slow requests).
fn prepare_process(config: &EngineConfig) {
    spawn::set_php_stack_size(config.php_stack_size.max(MIN_PHP_STACK_SIZE));
    deadline::configure(
        config.deadlines,
        config.hooks.slow_log.clone(),
        config.hooks.replace_process.clone(),
    );
    observe::set_slowlog_threshold(config.deadlines.slowlog);
}

/// The engine's main thread: PHP's start-up, then each pool in order; reports to `ready`
/// and parks until the engine stops (`stop` closes); then stops the pools, the last
/// started first, and shuts PHP down. A pool that fails to start stops the ones before
/// it, and PHP shuts down again.
fn php_main(
    settings: &sapi::ModuleSettings,
    specs: Vec<PoolSpec>,
    max_idle: std::time::Duration,
    ready: &std::sync::mpsc::Sender<Ready>,
    stop: &std::sync::mpsc::Receiver<()>,
) {
    let module = match sapi::engine_startup(settings) {
        Ok(module) => module,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut pools = Vec::with_capacity(specs.len());
    let mut failure = None;
    for spec in specs {
        match start_pool(spec, max_idle) {
            Ok(pool) => pools.push(pool),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    match failure {
        None => {
            let _ = ready.send(Ok(pools.clone()));
            // Parked until the Engine is dropped or shut down.
            let _ = stop.recv();
        }
        Some(e) => {
            let _ = ready.send(Err(e));
        }
    }
    // Blocked takes (background workers', requests') return null now; acks still work.
    php_jobs::close();
    for pool in pools.iter().rev() {
        pool.stop();
    }
    drop(pools);
    let stuck = deadline::stuck_threads() + pool::left_running();
    if stuck > 0 {
        // They may come back into PHP at any moment: shutting it down under them could
        // crash the process on its way out. The module is left as it is (PHP keeps
        // pointing at it until the process exits).
        tracing::warn!(
            "{stuck} retired PHP threads are still stuck: exiting without PHP's shutdown"
        );
        let _left_running = module;
    } else {
        sapi::engine_shutdown(module);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
