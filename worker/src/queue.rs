//! The hand-off from the HTTP side to PHP threads: a FIFO of jobs under one mutex, with
//! sleeping threads woken by a condition variable.
//!
//! Not a spinning channel on purpose: PHP threads outnumber cores, and a receiver that
//! spins or yields before sleeping steals the CPU from the threads that would feed it.
//! A waiting thread also wakes for an order to it (`wake_all`: its state changed, see
//! `thread_state.rs`), for `close` (stop), or when it has been idle long enough to retire.
//!
//! The queue also tells the autoscaler (`scale.rs`) when a job is queued with no idle
//! thread to take it: one atomic swap on that path, nothing on the others. It imports
//! only [`Job`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::job::Job;

pub(crate) struct JobQueue {
    state: Mutex<State>,
    wake: Condvar,
    /// The autoscaler's thread, woken when jobs wait with no idle thread.
    watcher: OnceLock<std::thread::Thread>,
    /// Set when the watcher was woken and has not looked yet (so a saturated queue wakes
    /// it once, not per job).
    watcher_poked: AtomicBool,
}

struct State {
    /// Each job with the moment it was queued (what the autoscaler's rule reads).
    jobs: VecDeque<(Instant, Box<Job>)>,
    closed: bool,
    /// Threads blocked in `next` right now.
    idle: usize,
}

/// What a waiting thread got.
pub(crate) enum Next {
    Job(Box<Job>),
    /// The thread's own state changed (an order): it should look at it.
    Interrupted,
    /// Nothing came for the idle timeout it asked for.
    TimedOut,
    Closed,
}

/// How `next` treats a closed queue.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnClose {
    /// Classic threads: finish the jobs already queued, then stop.
    Drain,
    /// Worker threads: stop at once (queued jobs are dropped: their clients get an error).
    Stop,
}

impl JobQueue {
    pub(crate) fn new() -> JobQueue {
        JobQueue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                closed: false,
                idle: 0,
            }),
            wake: Condvar::new(),
            watcher: OnceLock::new(),
            watcher_poked: AtomicBool::new(false),
        }
    }

    /// Queues a job; false when the queue is closed (the job is dropped).
    pub(crate) fn push(&self, job: Box<Job>) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return false;
        }
        state.jobs.push_back((Instant::now(), job));
        let starved = state.jobs.len() > state.idle;
        drop(state);
        self.wake.notify_one();
        if starved {
            self.poke_watcher();
        }
        true
    }

    fn poke_watcher(&self) {
        if let Some(watcher) = self.watcher.get() {
            if !self.watcher_poked.swap(true, Ordering::AcqRel) {
                watcher.unpark();
            }
        }
    }

    /// Puts back a job a thread took but cannot serve (an order reached it first), ahead
    /// of the others, as it was.
    pub(crate) fn push_front(&self, job: Box<Job>) {
        self.state
            .lock()
            .unwrap()
            .jobs
            .push_front((Instant::now(), job));
        self.wake.notify_one();
    }

    /// Makes the calling thread the one `push` wakes when jobs wait with no idle thread.
    pub(crate) fn set_watcher(&self) {
        let _ = self.watcher.set(std::thread::current());
    }

    /// For the watcher: clears the poke it woke for.
    pub(crate) fn watcher_looked(&self) {
        self.watcher_poked.store(false, Ordering::Release);
    }

    /// How long the oldest queued job has waited, if one is queued.
    pub(crate) fn oldest_wait(&self) -> Option<Duration> {
        let state = self.state.lock().unwrap();
        state.jobs.front().map(|(queued, _)| queued.elapsed())
    }

    /// The next job, waiting for one. Returns early when `interrupted()` holds (checked
    /// before each wait, under the lock that `wake_all` takes, so no order is missed),
    /// when the queue is closed (as `on_close` says), or after `idle_timeout` without a
    /// job.
    pub(crate) fn next(
        &self,
        on_close: OnClose,
        interrupted: &dyn Fn() -> bool,
        idle_timeout: Option<Duration>,
    ) -> Next {
        let deadline = idle_timeout.map(|t| Instant::now() + t);
        let mut state = self.state.lock().unwrap();
        loop {
            if state.closed && on_close == OnClose::Stop {
                return Next::Closed;
            }
            if interrupted() {
                return Next::Interrupted;
            }
            if let Some((_, job)) = state.jobs.pop_front() {
                return Next::Job(job);
            }
            if state.closed {
                return Next::Closed;
            }
            state.idle += 1;
            state = match deadline {
                None => self.wake.wait(state).unwrap(),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        state.idle -= 1;
                        return Next::TimedOut;
                    }
                    self.wake.wait_timeout(state, left).unwrap().0
                }
            };
            state.idle -= 1;
        }
    }

    /// Wakes every waiting thread so each looks at its state (an order was given).
    pub(crate) fn wake_all(&self) {
        drop(self.state.lock().unwrap());
        self.wake.notify_all();
    }

    /// Refuses new jobs and wakes everyone (the watcher too).
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.wake.notify_all();
        if let Some(watcher) = self.watcher.get() {
            watcher.unpark();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().unwrap().closed
    }

    /// Sleeps up to `timeout` unless the queue is closed meanwhile; true if closed.
    pub(crate) fn wait_closed(&self, timeout: Duration) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .wake
            .wait_timeout_while(state, timeout, |s| !s.closed)
            .unwrap();
        state.closed
    }
}
