//! The hand-off from the HTTP side to PHP threads: a FIFO of jobs under one mutex, with
//! sleeping threads woken by a condition variable.
//!
//! Not a spinning channel on purpose: PHP threads outnumber cores, and a receiver that
//! spins or yields before sleeping steals the CPU from the threads that would feed it.
//! A waiting thread also wakes for a change of `epoch` (restart) or for `close` (stop).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::pool::Job;

pub(crate) struct JobQueue {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    jobs: VecDeque<Box<Job>>,
    closed: bool,
    /// Bumped to ask every waiting thread to come back (a worker restart).
    epoch: u64,
}

/// What a waiting thread got.
pub(crate) enum Next {
    Job(Box<Job>),
    /// The epoch moved on since the thread last looked.
    NewEpoch,
    Closed,
}

impl JobQueue {
    pub(crate) fn new() -> JobQueue {
        JobQueue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                closed: false,
                epoch: 0,
            }),
            wake: Condvar::new(),
        }
    }

    /// Queues a job; false when the queue is closed (the job is dropped).
    pub(crate) fn push(&self, job: Box<Job>) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return false;
        }
        state.jobs.push_back(job);
        drop(state);
        self.wake.notify_one();
        true
    }

    /// The next job, waiting for one; None once the queue is closed and drained.
    pub(crate) fn pop(&self) -> Option<Box<Job>> {
        let mut state = self.state.lock().unwrap();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            if state.closed {
                return None;
            }
            state = self.wake.wait(state).unwrap();
        }
    }

    /// The next job, or an epoch other than `seen_epoch` (checked first, so a restart
    /// requested while busy applies before the next job), or Closed.
    pub(crate) fn next(&self, seen_epoch: u64) -> Next {
        let mut state = self.state.lock().unwrap();
        loop {
            if state.closed {
                return Next::Closed;
            }
            if state.epoch != seen_epoch {
                return Next::NewEpoch;
            }
            if let Some(job) = state.jobs.pop_front() {
                return Next::Job(job);
            }
            state = self.wake.wait(state).unwrap();
        }
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.state.lock().unwrap().epoch
    }

    /// Starts a new epoch and wakes every waiting thread.
    pub(crate) fn bump_epoch(&self) {
        self.state.lock().unwrap().epoch += 1;
        self.wake.notify_all();
    }

    /// Refuses new jobs and wakes everyone. `pop` still drains what is queued; `next`
    /// (worker threads) reports Closed at once.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.wake.notify_all();
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
