//! The hand-off from the HTTP side to PHP threads: a FIFO of jobs and a LIFO of idle
//! threads under one mutex. A job that finds an idle thread is handed to the one that
//! went idle last (its caches are warm; threads idle longer stay asleep, and retire when
//! the pool autoscales) and wakes exactly that thread through its own parker: no
//! condition variable, so the woken thread does not contend for the queue's mutex on
//! its way out. Jobs queue only while no thread is idle.
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
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::job::Job;

pub(crate) struct JobQueue {
    state: Mutex<State>,
    /// Only for `wait_closed` (a worker's start-up backoff).
    closed_changed: Condvar,
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
    /// Threads blocked in `next`, the most recently idle last.
    idle: Vec<Arc<Waiter>>,
}

/// A thread blocked in `next`: how to wake it, and the job handed to it.
struct Waiter {
    thread: std::thread::Thread,
    /// Set under the queue's lock by the `push` that chose this thread.
    handoff: Mutex<Option<Box<Job>>>,
    /// Set (after the hand-off or an order) before the unpark; a park that returns
    /// without it is spurious.
    woken: AtomicBool,
}

impl Waiter {
    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

thread_local! {
    /// The calling thread's waiter, made once.
    static WAITER: Arc<Waiter> = Arc::new(Waiter {
        thread: std::thread::current(),
        handoff: Mutex::new(None),
        woken: AtomicBool::new(false),
    });
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
                idle: Vec::new(),
            }),
            closed_changed: Condvar::new(),
            watcher: OnceLock::new(),
            watcher_poked: AtomicBool::new(false),
        }
    }

    /// Hands a job to the most recently idle thread, or queues it when none is idle;
    /// false when the queue is closed (the job is dropped).
    pub(crate) fn push(&self, job: Box<Job>) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return false;
        }
        if let Some(waiter) = state.idle.pop() {
            *waiter.handoff.lock().unwrap() = Some(job);
            drop(state);
            waiter.wake();
            return true;
        }
        state.jobs.push_back((Instant::now(), job));
        drop(state);
        // No idle thread: the autoscaler may want to know.
        self.poke_watcher();
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
        let mut state = self.state.lock().unwrap();
        if let Some(waiter) = state.idle.pop() {
            *waiter.handoff.lock().unwrap() = Some(job);
            drop(state);
            waiter.wake();
            return;
        }
        state.jobs.push_front((Instant::now(), job));
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
        WAITER.with(|me| loop {
            let mut state = self.state.lock().unwrap();
            // After a wake without a job (an order, a late wake from an earlier round)
            // this thread may still be listed: never twice.
            if let Some(at) = state.idle.iter().position(|w| Arc::ptr_eq(w, me)) {
                state.idle.remove(at);
            }
            if let Some(job) = me.handoff.lock().unwrap().take() {
                return Next::Job(job);
            }
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
            me.woken.store(false, Ordering::Relaxed);
            state.idle.push(me.clone());
            drop(state);
            loop {
                match deadline {
                    None => std::thread::park(),
                    Some(deadline) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            let mut state = self.state.lock().unwrap();
                            if let Some(at) = state.idle.iter().position(|w| Arc::ptr_eq(w, me)) {
                                state.idle.remove(at);
                                return Next::TimedOut;
                            }
                            // Chosen meanwhile: its job or order is here (set under the
                            // lock just taken).
                            break;
                        }
                        std::thread::park_timeout(left);
                    }
                }
                if me.woken.load(Ordering::Acquire) {
                    break;
                }
            }
            if let Some(job) = me.handoff.lock().unwrap().take() {
                return Next::Job(job);
            }
        })
    }

    /// Wakes every waiting thread so each looks at its state (an order was given).
    pub(crate) fn wake_all(&self) {
        let idle = std::mem::take(&mut self.state.lock().unwrap().idle);
        for waiter in idle {
            waiter.wake();
        }
    }

    /// Refuses new jobs and wakes everyone (the watcher too).
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap();
        state.closed = true;
        let idle = std::mem::take(&mut state.idle);
        drop(state);
        for waiter in idle {
            waiter.wake();
        }
        self.closed_changed.notify_all();
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
            .closed_changed
            .wait_timeout_while(state, timeout, |s| !s.closed)
            .unwrap();
        state.closed
    }
}
