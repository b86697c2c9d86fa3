//! `ferrophp_handle_request($handler)` (also `frankenphp_handle_request`): the worker
//! thread between two requests (the memory guard, `max_requests`, cache pressure, orders,
//! idle retirement), and the serving of one request inside the script's boot request.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bumpalo::Bump;
use php_sys as sys;

use super::{Release, RunEnd, WorkerPool};
use crate::deadline;
use crate::job::Job;
use crate::observe::{self, Slot};
use crate::php;
use crate::queue::{Next, OnClose};
use crate::request::{CgiRequest, EnvList, ScriptOutcome};
use crate::sapi::PreparedRequest;
use crate::thread_state::ThreadState;

/// What `ferrophp_handle_request` needs, for the worker script running on this thread.
/// The thread's state (booting, idle, busy, ordered to restart or stop) is its slot's.
pub(super) struct WorkerThread<'a> {
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
    pub(super) reached_loop: Cell<bool>,
    /// The memory guard's trigger level, set when the script first asks for a request.
    memory_limit: Cell<usize>,
    /// Why this run ends, once next_job decided it.
    pub(super) end: Cell<RunEnd>,
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
    pub(super) static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

fn current_worker<'a>() -> Option<&'a WorkerThread<'a>> {
    let ptr = CURRENT.with(|c| c.get()) as *const WorkerThread;
    // SAFETY: CURRENT points at the WorkerThread on slot_main's stack while the worker
    // script runs, which is the only time PHP code can call us; it is cleared before that
    // value is dropped.
    unsafe { ptr.as_ref() }
}

impl<'a> WorkerThread<'a> {
    /// The thread's state for one run of the script that booted `release`.
    pub(super) fn new(pool: &'a Arc<WorkerPool>, slot: &'a Slot, release: &'a Release) -> Self {
        WorkerThread {
            pool,
            slot,
            ending: RefCell::new(None),
            release,
            request_arena: RefCell::new(Bump::with_capacity(16 * 1024)),
            served: Cell::new(0),
            reached_loop: Cell::new(false),
            memory_limit: Cell::new(usize::MAX),
            end: Cell::new(RunEnd::Ended),
            env_cache: RefCell::new(None),
        }
    }

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
        // Every shim call below runs its engine calls inside zend_try: a bailout lands in
        // C and comes back as `true`, never crossing these frames.
        // Output the script buffered outside the handler is flushed here, while the boot
        // context still receives it.
        // SAFETY: on this worker's PHP thread, inside the boot request, with the boot
        // context still installed; the shim catches any bailout.
        let release_bailed = unsafe { sys::ferrophp_worker_output_release() };
        prepared.install();
        php::reset_exit_status();

        let mut ends_script = release_bailed || {
            // SAFETY: on this worker's PHP thread, inside the boot request, with the job's
            // request installed; the shim catches any bailout.
            unsafe { sys::ferrophp_worker_request_startup() }
        };
        if !ends_script && prepared.ctx.start_script() {
            // SAFETY: fci and fcc are the handler `zend_parse_parameters` filled for this
            // call of ferrophp_handle_request, still live; the request is started; the
            // shim calls it inside zend_try.
            ends_script = unsafe { sys::ferrophp_try_call(fci, fcc) };
        }
        if !ends_script && php::has_exception() {
            if php::exception_is_exit() {
                ends_script = true;
            } else {
                // Logged as "Uncaught ..."; the response becomes a 500 if nothing was sent.
                // SAFETY: on this worker's PHP thread inside the request, with an exception
                // pending; the shim reports it inside zend_try.
                unsafe { sys::ferrophp_report_exception() };
            }
        }
        if ends_script {
            // exit() or a fatal error: the script's shutdown finishes this request.
            self.keep_until_shutdown(prepared, done);
            return true;
        }
        // SAFETY: on this worker's PHP thread inside the request; flush_output only ends
        // the output buffers, inside the shim's zend_try.
        let flush_bailed = unsafe { sys::ferrophp_try_void(Some(flush_output)) };
        // SAFETY: on this worker's PHP thread inside the started request; the shim
        // catches any bailout.
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
        // SAFETY: on this worker's PHP thread, after the request's shutdown and with it
        // still installed (its body stream and SAPI state are freed here); the shim
        // catches any bailout.
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
    pub(super) fn finish_ending(&self) {
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
pub(crate) unsafe extern "C" fn ferrophp_fn_handle_request(
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
