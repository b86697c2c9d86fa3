//! The life of one PHP thread of a worker (`Role for Worker`): boot the script as one
//! long PHP request, and when it ends (a restart, `max_requests`, a crash, idle
//! retirement) decide what comes next: boot it again (with growing backoff while it
//! fails before reaching its loop), give up, or let the thread go.

use std::sync::Arc;
use std::time::Duration;

use crate::ffi as sys;
use bumpalo::Bump;

use super::handle_request::{WorkerThread, CURRENT};
use super::{RunEnd, Worker, WorkerConfig, WorkerPool};
use crate::observe::{PoolKind, Slot};
use crate::pool::{Exit, Role};
use crate::request::{Disconnected, ResponseHead, ResponseSink, ScriptRequest};
use crate::sapi;
use crate::thread_state::ThreadState;

impl Role for Worker {
    const KIND: PoolKind = PoolKind::Worker;
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
            let thread = WorkerThread::new(pool, slot, &release);
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
            let outcome = sapi::run_script(boot_request(config, script), &boot_arena, false);
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
    let mut request = ScriptRequest::new(path, Box::new(LogSink));
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
