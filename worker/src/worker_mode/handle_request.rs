//! The Rust side of `ferrophp_handle_request($handler)` (also `frankenphp_handle_request`,
//! whose engine sequence is c/request_scope.c's): the worker thread between two
//! requests (the memory guard, `max_requests`, cache pressure, orders, idle retirement),
//! and the three moments of a request the C side hands over: next (prepare the job),
//! respond (the response goes out), done (the job ends).

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::ffi as sys;
use bumpalo::Bump;

use super::{Release, RunEnd, WorkerPool};
use crate::deadline;
use crate::job::Job;
use crate::observe::{self, Slot};
use crate::queue::{Next, OnClose};
use crate::request::{CgiRequest, EnvList, ScriptOutcome};
use crate::sapi::PreparedRequest;
use crate::thread_state::ThreadState;

/// What `ferrophp_handle_request` needs, for the worker script running on this thread.
/// The thread's state (booting, idle, busy, ordered to restart or stop) is its slot's.
pub(super) struct WorkerThread<'a> {
    pool: &'a Arc<WorkerPool>,
    slot: &'a Slot,
    /// The request being served, from `ferrophp_worker_next` to `ferrophp_worker_done`
    /// (or, when its handler ended the script, to [`WorkerThread::finish_ending`]).
    /// Declared before `request_arena`, which it borrows, so it is dropped first.
    in_flight: RefCell<Option<InFlight>>,
    /// Set when the in-flight request's handler ended the script: its exit status.
    ending: Cell<Option<i32>>,
    /// How long the in-flight request ran, from its response on.
    ran: Cell<std::time::Duration>,
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

/// The request a worker thread serves. Its scope is installed by the C side
/// (`ferrophp_handle_request` in c/request_scope.c) and points into it, so once in
/// [`WorkerThread::in_flight`] it stays there, untouched by `&mut`, until it is taken out
/// at its end. When its handler ends the script (`exit()`, a fatal error) it stays
/// installed while the script's engine request shuts down: PHP's `php_request_shutdown`
/// then runs the shutdown functions and destructors and flushes the output buffers into
/// this request's response, sends its headers, writes its session and deactivates it, as
/// FrankenPHP (whose `exit()` bails out of the handler straight into the script's
/// shutdown) and a classic request do. Symfony's `dd()` prints from a destructor after
/// `exit()`.
struct InFlight {
    /// Borrows the `request_arena` of the [`WorkerThread`] holding it (its lifetime is
    /// erased in [`WorkerThread::begin`], which states why that holds).
    prepared: PreparedRequest<'static>,
    done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
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
            in_flight: RefCell::new(None),
            ending: Cell::new(None),
            ran: Cell::new(std::time::Duration::ZERO),
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

    /// Prepares `job` as the thread's in-flight request and returns its scope for the C
    /// side to install; None when the job was answered without PHP (a request PHP cannot
    /// take, such as a path with a NUL).
    fn begin(&self, job: Box<Job>) -> Option<*mut sys::ferrophp_request_scope> {
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
            if *request.script_filename != *self.release.script {
                request.script_filename = Arc::from(self.release.script.as_path());
            }
        }
        // SAFETY: only the lifetime is erased. The arena lives in `self`, which outlives
        // every in-flight request (field order drops `in_flight` first), and is reset only
        // by `done`, after the request that borrows it was taken out and dropped; no
        // `RefCell` guard of it is held meanwhile, so that reset's `borrow_mut` succeeds.
        let arena: &'static Bump = unsafe { &*self.request_arena.as_ptr() };
        let prepared = match PreparedRequest::new(request, arena, deadline::current()) {
            Ok(p) => p,
            Err(outcome) => {
                self.slot.end();
                let _ = self.slot.state.job_done();
                crate::job::report(done, outcome);
                return None;
            }
        };
        let mut in_flight = self.in_flight.borrow_mut();
        let in_flight = in_flight.insert(InFlight { prepared, done });
        in_flight.prepared.ctx.worker_request = true;
        Some(in_flight.prepared.bind(Some(deadline::enter_job()), true))
    }

    /// The request's engine shutdown is done: counts it and sends its response.
    fn respond(&self) {
        // Counted before the response completes, so a client that has its response also
        // sees it in the counts (the admin /health endpoint).
        self.count_served();
        if let Some(in_flight) = self.in_flight.borrow().as_ref() {
            let heap = in_flight.prepared.heap_bytes();
            self.ran.set(self.slot.end_with_heap(heap));
            in_flight.prepared.ctx.finish_response();
        }
    }

    fn count_served(&self) {
        self.served.set(self.served.get() + 1);
        self.pool
            .role
            .requests_served
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The request is uninstalled: ends its job. True when the script must end (the
    /// watchdog retired this thread meanwhile).
    fn done(&self) -> bool {
        let Some(InFlight { prepared, done }) = self.in_flight.borrow_mut().take() else {
            return false;
        };
        let expired = prepared.expired();
        drop(prepared.finish());
        deadline::leave_job(expired);
        // Busy → Idle; an order that came meanwhile is found by the next next_job. A
        // thread retired meanwhile ends its script (Role::run then lets it go).
        let retired = self.slot.state.job_done() == Err(ThreadState::Retired);
        self.request_arena.borrow_mut().reset();
        crate::job::report(
            done,
            ScriptOutcome {
                exit_status: 0,
                not_found: false,
            },
        );
        ferrophp_cache::on_request_end();
        // The handler has returned: nothing of it is left below this frame.
        crate::stack::release_deep_pages(self.ran.get());
        retired
    }

    /// After the script's engine request ended: the response of the request whose handler
    /// ended the script is complete; hand it over and count it.
    pub(super) fn finish_ending(&self) {
        let Some(exit_status) = self.ending.take() else {
            return;
        };
        let Some(InFlight { mut prepared, done }) = self.in_flight.borrow_mut().take() else {
            return;
        };
        self.slot.end();
        prepared.ctx.finish_response();
        // The request's deadlines covered the script's shutdown too (a destructor may
        // block); they end with its response.
        prepared.uninstall();
        let expired = prepared.expired();
        drop(prepared.finish());
        deadline::leave_job(expired);
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

/// `ferrophp_handle_request` (c/request_scope.c) asks for the next request: blocks
/// until there is one, prepares it and hands its scope over (`FERROPHP_WORKER_*` says
/// what happened instead when there is none).
///
/// # Safety
/// Called by the C side on a PHP thread, with `scope` valid for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_worker_next(
    scope: *mut *mut sys::ferrophp_request_scope,
) -> c_int {
    let Some(worker) = current_worker() else {
        return sys::FERROPHP_WORKER_NOT_WORKER as c_int;
    };
    if worker.slot.state.get() == ThreadState::Busy {
        return sys::FERROPHP_WORKER_BUSY as c_int;
    }
    let Some(job) = worker.next_job() else {
        return sys::FERROPHP_WORKER_END as c_int;
    };
    match worker.begin(job) {
        Some(prepared) => {
            // SAFETY: the caller's out-pointer, valid for this write.
            unsafe { *scope = prepared };
            sys::FERROPHP_WORKER_REQUEST as c_int
        }
        None => sys::FERROPHP_WORKER_SKIPPED as c_int,
    }
}

/// The in-flight request's engine shutdown is done (request_scope.c): its response goes out.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_worker_respond() {
    if let Some(worker) = current_worker() {
        worker.respond();
    }
}

/// The in-flight request is uninstalled (request_scope.c): its job ends. True when the
/// worker script must end.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_worker_done() -> bool {
    current_worker().is_some_and(|worker| worker.done())
}

/// The in-flight request's handler ended the script with `exit_status`
/// (request_scope.c): the request stays installed for the script's shutdown, and
/// [`WorkerThread::finish_ending`] completes it.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_worker_ending(exit_status: c_int) {
    if let Some(worker) = current_worker() {
        // Counted now, as a request that returns is counted before its response completes.
        worker.count_served();
        worker.ending.set(Some(exit_status));
    }
}
