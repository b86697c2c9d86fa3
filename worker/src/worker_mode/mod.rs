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
//!
//! Layout: this file is the role and its pool (start, rolling restarts to a new
//! release); `config` what the server configures ([`WorkerConfig`], [`MemoryGrowth`]);
//! `boot_loop` the life of one worker thread (boot the script, boot it again when it
//! ends); `handle_request` the PHP function `ferrophp_handle_request` and the serving of
//! each request. Dependencies go one way: boot_loop → handle_request → this file →
//! config.

mod boot_loop;
mod config;
mod handle_request;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::pool::Pool;
use crate::request::EnvList;
use crate::scale::Scaling;

pub use config::{MemoryGrowth, WorkerConfig};

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
    let pool = Pool::start(role, name, scaling)
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
