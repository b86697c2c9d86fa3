//! Background workers (`--background-worker script.php[,N]`): PHP threads that run a
//! long-lived script in a loop, outside any HTTP request: a queue consumer
//! (`Ferrophp\Jobs::take()`), Symfony's `messenger:consume`, anything supervisord ran.
//!
//! Each thread runs the script as one engine request (output to the log, no deadline),
//! and when it ends runs it again: at once after a run that lasted [`QUICK_EXIT`] or
//! more and exited with status 0, else after a backoff that doubles from 100 ms up to
//! [`MAX_BACKOFF`] while the runs keep failing (an exit status other than 0, a fatal
//! error, a script that returns at once), so a broken script never spins. The threads
//! are told to stop through a [`StopSignal`]: `Background::shouldStop()` turns true and a
//! blocked `Jobs::take()` returns null at once. At engine shutdown a script that has not
//! ended [`BackgroundConfig::stop_timeout`] later is left running and the process exits
//! without PHP's shutdown (`pool.rs`, `Pool::stop`). A restart (a reload, a deploy, the
//! admin endpoint: [`BackgroundPool::restart`]) raises the signal of the current
//! generation and puts a fresh one in its place: each script finishes its job, returns,
//! and runs again at once (a deploy's new release, since the script's path is kept as
//! configured, symlinks unresolved). The thread's state is `busy` while
//! its script runs, `restarting` during a backoff; each run counts as one request in the
//! pool's statistics, a failed one as a crash.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bumpalo::Bump;
use jobs::StopSignal;

use crate::observe::{PoolKind, Slot};
use crate::pool::{Exit, Pool, Role};
use crate::request::{Disconnected, ResponseHead, ResponseSink, ScriptRequest};
use crate::sapi;
use crate::scale::Scaling;
use crate::thread_state::ThreadState;

/// A run shorter than this counts as failing (backoff), whatever its exit status.
pub(crate) const QUICK_EXIT: Duration = Duration::from_secs(1);
/// The longest wait between two failing runs.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a stopping background script may take to end, unless configured.
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// One background script and how to run it.
#[derive(Debug, Clone)]
pub struct BackgroundConfig {
    /// The script each thread runs in a loop.
    pub script: PathBuf,
    /// PHP threads running it.
    pub threads: usize,
    /// `$_SERVER` entries and `getenv()` values of its runs, over the server's.
    pub env: Vec<(String, String)>,
    /// How long its threads may take to end once told to stop.
    pub stop_timeout: Duration,
    /// What metrics, `/threads` and logs call it (None: its script's path).
    pub name: Option<String>,
}

impl BackgroundConfig {
    /// `threads` threads running `script`, with the defaults.
    pub fn new(script: PathBuf, threads: usize) -> Self {
        BackgroundConfig {
            script,
            threads,
            env: Vec::new(),
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            name: None,
        }
    }
}

/// The role of a background script's threads.
pub(crate) struct Background {
    config: BackgroundConfig,
    /// The signal runs started now get; a restart raises it and replaces it.
    generation: std::sync::Mutex<StopSignal>,
    /// The engine stops: no run starts any more.
    stopping: std::sync::atomic::AtomicBool,
}

impl Background {
    fn stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::Acquire)
    }

    fn current(&self) -> StopSignal {
        self.generation.lock().unwrap().clone()
    }
}

impl Pool<Background> {
    /// Tells every running script to stop; each runs again at once once it returned.
    pub(crate) fn restart(&self) {
        let old = std::mem::take(&mut *self.role.generation.lock().unwrap());
        old.stop();
        self.stats.restart();
    }
}

pub(crate) type BackgroundPool = Pool<Background>;

/// Starts a background script's threads (they run at once; nothing waits for them).
pub(crate) fn start(config: BackgroundConfig) -> Result<Arc<BackgroundPool>, String> {
    if !config.script.is_file() {
        return Err(format!(
            "background worker script {} does not exist",
            config.script.display()
        ));
    }
    let threads = config.threads.max(1);
    let scaling = Scaling {
        min: threads,
        max: threads,
        // Never read: background threads do not autoscale.
        max_idle: Duration::from_secs(3600),
    };
    let name = config
        .name
        .clone()
        .unwrap_or_else(|| config.script.display().to_string());
    let role = Background {
        config,
        generation: std::sync::Mutex::new(StopSignal::new()),
        stopping: std::sync::atomic::AtomicBool::new(false),
    };
    Pool::start(role, name, scaling).map_err(|e| format!("cannot spawn a background thread: {e}"))
}

impl Role for Background {
    const KIND: PoolKind = PoolKind::Background;
    const PREFIX: &'static str = "php-bg";
    const DRAIN_ON_STOP: bool = false;

    fn stopping(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Release);
        self.current().stop();
    }

    fn stop_timeout(&self) -> Option<Duration> {
        Some(self.config.stop_timeout)
    }

    fn run(pool: &Arc<BackgroundPool>, slot: &Slot) -> Exit {
        let role = &pool.role;
        let state = &slot.state;
        if state.booted().is_err() {
            return Exit::Stopped;
        }
        slot.set_ready(true);
        let arena = Bump::new();
        let mut failures: u32 = 0;
        let script = role.config.script.display().to_string();
        loop {
            let stop = role.current();
            if role.stopping() || state.take_job().is_err() {
                break;
            }
            pool.stats.boot();
            slot.begin("BACKGROUND", &script);
            crate::php_jobs::set_thread_stop(Some(stop.clone()));
            crate::env::preset(&role.config.env);
            let started = Instant::now();
            let outcome = sapi::run_script(run_request(&role.config), &arena, false);
            let ran = started.elapsed();
            crate::php_jobs::set_thread_stop(None);
            slot.end();
            crate::stack::release_deep_pages(Duration::MAX);
            if state.get() == ThreadState::Retired {
                state.drain_self("back from the run it was retired in");
                return Exit::Abandoned;
            }
            if role.stopping() {
                break;
            }
            if stop.is_stopped() {
                // Restarted: told to stop, it did; the next run starts at once.
                failures = 0;
                tracing::info!(script, "background script restarted");
                if state.job_done().is_err() {
                    break;
                }
                continue;
            }
            let failed = outcome.exit_status != 0 || outcome.not_found || ran < QUICK_EXIT;
            if !failed {
                failures = 0;
                pool.stats.restart();
                tracing::debug!(script, "background script ended; running it again");
                if state.job_done().is_err() {
                    break;
                }
                continue;
            }
            failures += 1;
            pool.stats.crash();
            let backoff = Duration::from_millis(100u64 << failures.min(10).saturating_sub(1))
                .min(MAX_BACKOFF);
            tracing::warn!(
                script,
                exit_status = outcome.exit_status,
                ran_ms = ran.as_millis() as u64,
                failures,
                backoff_ms = backoff.as_millis() as u64,
                "background script ended (exit status, fatal error, or returned within {QUICK_EXIT:?}); \
                 running it again after a backoff"
            );
            if state.restart_self("background script failed").is_err() {
                break;
            }
            if pool.queue.wait_closed(backoff) || role.stopping() {
                break;
            }
            if state.reboot().is_err() || state.booted().is_err() {
                break;
            }
        }
        slot.set_ready(false);
        state.drain_self("stopped");
        Exit::Stopped
    }
}

/// One run of the script: a request with the server's environment and the script's
/// own, output to the log.
fn run_request(config: &BackgroundConfig) -> ScriptRequest {
    let path = &config.script;
    let script = path.to_string_lossy().into_owned();
    let mut request = ScriptRequest::new(path, Box::new(LogSink));
    request.import_environment = true;
    request.server_vars = config
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .chain([
            ("FERROPHP_BACKGROUND".to_string(), b"1".to_vec()),
            ("SCRIPT_FILENAME".to_string(), script.clone().into_bytes()),
            ("SCRIPT_NAME".to_string(), script.clone().into_bytes()),
            ("PHP_SELF".to_string(), script.into_bytes()),
        ])
        .collect();
    request
}

/// A background script's output goes to the log.
struct LogSink;

impl ResponseSink for LogSink {
    fn send_head(&mut self, _head: ResponseHead) -> Result<(), Disconnected> {
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected> {
        tracing::info!(target: "php", "background output: {}", String::from_utf8_lossy(bytes).trim_end());
        Ok(())
    }
}
