//! The classic PHP thread: takes a job from its pool's queue, runs the script from
//! scratch (one engine request per job), and waits for the next. It has nothing to boot,
//! so it leaves `Booting` at once; it retires when it idled `max_idle` above the floor,
//! and ends once its queue is closed and drained, or once back from a request the
//! deadline watchdog gave it up in (`deadline.rs`: another thread took its place).

use std::sync::Arc;

use crate::observe::{PoolKind, Slot};
use crate::pool::{Exit, Pool, Role};
use crate::queue::{Next, OnClose};
use crate::sapi;
use crate::thread_state::ThreadState;

/// The classic pool's role.
pub(crate) struct Classic;

pub(crate) type ClassicPool = Pool<Classic>;

impl Role for Classic {
    const KIND: PoolKind = PoolKind::Classic;
    const PREFIX: &'static str = "php";
    const DRAIN_ON_STOP: bool = true;

    fn run(pool: &Arc<Pool<Classic>>, slot: &Slot) -> Exit {
        let state = &slot.state;
        if state.booted().is_err() {
            return Exit::Stopped;
        }
        // What the thread's heap holds before any request: the admin view shows it even
        // for a thread the LIFO hand-off has not needed yet.
        slot.record_memory();
        // Per-request strings ($_SERVER and request_info): reset, not freed, between
        // requests, so a steady stream of similar requests allocates nothing here.
        let mut arena = bumpalo::Bump::with_capacity(16 * 1024);
        let idle_timeout = pool.scaling.idle_timeout();
        loop {
            match pool.queue.next(OnClose::Drain, &|| false, idle_timeout) {
                Next::Job(job) => {
                    let job = *job;
                    let _ = state.take_job();
                    match job.request.cgi.as_ref() {
                        Some(cgi) => slot.begin(cgi.method.as_str(), cgi.request_uri()),
                        None => slot.begin("RUN", &job.request.script_filename.to_string_lossy()),
                    }
                    let outcome = sapi::run_script(job.request, &arena, true);
                    let ran = slot.end();
                    arena.reset();
                    crate::job::report(job.done, outcome);
                    crate::stack::release_deep_pages(ran);
                    if state.job_done() == Err(ThreadState::Retired) {
                        state.drain_self("back from the request it was retired in");
                        return Exit::Abandoned;
                    }
                }
                Next::TimedOut => {
                    if pool.try_retire() {
                        state.drain_self("idle above the floor");
                        return Exit::Retired;
                    }
                }
                Next::Closed | Next::Interrupted => {
                    state.drain_self("queue closed");
                    return Exit::Stopped;
                }
            }
        }
    }
}
