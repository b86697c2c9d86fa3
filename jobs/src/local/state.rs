//! The local store's in-memory index of its jobs: per queue the ready jobs in take order,
//! the counts, the dead-letter list, the unique keys held and the threads waiting; across
//! queues the delay and lease timers. Rebuilt from the store at open; changed only after
//! the store accepted the matching write, so it never claims what the disk does not hold.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::Thread;

use super::record::{JobRecord, StoredState};
use crate::job::QueueCounts;

/// A live job: its stored record plus what only lives in memory.
pub(crate) struct Job {
    pub(crate) record: JobRecord,
    /// Position among equal priorities (dispatch or requeue order).
    order: u64,
    /// The current lease's token and deadline while taken.
    pub(crate) lease: Option<(u64, u64)>,
}

/// A thread parked in a take, woken by a dispatch to one of its queues.
pub(crate) struct Waiter {
    pub(crate) thread: Thread,
    pub(crate) woken: AtomicBool,
}

#[derive(Default)]
pub(crate) struct QueueIndex {
    /// (higher priority first, then order, id).
    ready: BTreeSet<(Reverse<i16>, u64, u64)>,
    delayed: u64,
    running: u64,
    pub(crate) dead: BTreeSet<u64>,
    pub(crate) unique: HashMap<String, u64>,
    waiters: Vec<Arc<Waiter>>,
}

/// Every live job of the store, indexed.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) jobs: HashMap<u64, Job>,
    pub(crate) queues: HashMap<String, QueueIndex>,
    /// (due ms, id) of delayed jobs.
    delayed: BTreeSet<(u64, u64)>,
    /// (deadline ms, id) of leased jobs.
    leases: BTreeSet<(u64, u64)>,
    next_order: u64,
}

impl State {
    pub(crate) fn queue(&mut self, name: &str) -> &mut QueueIndex {
        if !self.queues.contains_key(name) {
            self.queues.insert(name.to_owned(), QueueIndex::default());
        }
        // Inserted just above when missing.
        self.queues.get_mut(name).unwrap_or_else(|| unreachable!())
    }

    pub(crate) fn unique_holder(&self, queue: &str, key: &str) -> Option<u64> {
        self.queues
            .get(queue)
            .and_then(|q| q.unique.get(key).copied())
    }

    /// Adds a job that is not leased (ready, delayed or dead) to the indexes.
    pub(crate) fn insert(&mut self, id: u64, record: JobRecord) {
        let order = self.next_order;
        self.next_order += 1;
        let queue = self.queue(&record.queue);
        if let Some(key) = &record.unique_key {
            if !matches!(record.state, StoredState::Dead { .. }) {
                queue.unique.insert(key.clone(), id);
            }
        }
        match record.state {
            StoredState::Ready | StoredState::Taken => {
                queue.ready.insert((Reverse(record.priority), order, id));
            }
            StoredState::Delayed { due_ms } => {
                queue.delayed += 1;
                self.delayed.insert((due_ms, id));
            }
            StoredState::Dead { .. } => {
                queue.dead.insert(id);
            }
        }
        self.jobs.insert(
            id,
            Job {
                record,
                order,
                lease: None,
            },
        );
    }

    /// Takes a job out of every index (it stays in `jobs` only if the caller puts it back).
    pub(crate) fn detach(&mut self, id: u64) -> Option<Job> {
        let job = self.jobs.remove(&id)?;
        let record = &job.record;
        let queue = self.queues.get_mut(&record.queue)?;
        if let Some((_, deadline)) = job.lease {
            queue.running -= 1;
            self.leases.remove(&(deadline, id));
        } else {
            match record.state {
                StoredState::Ready | StoredState::Taken => {
                    queue
                        .ready
                        .remove(&(Reverse(record.priority), job.order, id));
                }
                StoredState::Delayed { due_ms } => {
                    queue.delayed -= 1;
                    self.delayed.remove(&(due_ms, id));
                }
                StoredState::Dead { .. } => {
                    queue.dead.remove(&id);
                }
            }
        }
        Some(job)
    }

    /// Frees a job's unique key if the job holds it.
    pub(crate) fn release_unique(&mut self, id: u64, record: &JobRecord) {
        if let (Some(key), Some(queue)) = (&record.unique_key, self.queues.get_mut(&record.queue)) {
            if queue.unique.get(key) == Some(&id) {
                queue.unique.remove(key);
            }
        }
    }

    /// The next ready job of the first of `queues` that has one, left in place.
    pub(crate) fn peek_ready(&self, queues: &[&str]) -> Option<u64> {
        queues.iter().find_map(|q| {
            self.queues
                .get(*q)
                .and_then(|qi| qi.ready.first())
                .map(|e| e.2)
        })
    }

    /// Marks a ready job leased (its record already rewritten as taken by the caller).
    pub(crate) fn lease(&mut self, id: u64, record: JobRecord, token: u64, deadline_ms: u64) {
        if let Some(mut job) = self.detach(id) {
            job.record = record;
            job.lease = Some((token, deadline_ms));
            let queue = self.queue(&job.record.queue);
            queue.running += 1;
            self.leases.insert((deadline_ms, id));
            self.jobs.insert(id, job);
        }
    }

    pub(crate) fn set_lease_deadline(&mut self, id: u64, deadline_ms: u64) {
        if let Some(job) = self.jobs.get_mut(&id) {
            if let Some((token, old)) = job.lease {
                self.leases.remove(&(old, id));
                self.leases.insert((deadline_ms, id));
                job.lease = Some((token, deadline_ms));
            }
        }
    }

    /// Delayed jobs due by `now_ms`.
    pub(crate) fn due_delayed(&self, now_ms: u64) -> Vec<u64> {
        self.delayed
            .iter()
            .take_while(|(due, _)| *due <= now_ms)
            .map(|e| e.1)
            .collect()
    }

    /// Leases whose deadline passed by `now_ms`.
    pub(crate) fn expired_leases(&self, now_ms: u64) -> Vec<u64> {
        self.leases
            .iter()
            .take_while(|(deadline, _)| *deadline <= now_ms)
            .map(|e| e.1)
            .collect()
    }

    /// The next time a delayed job becomes due or a lease expires.
    pub(crate) fn next_timer(&self) -> Option<u64> {
        let delayed = self.delayed.first().map(|e| e.0);
        let lease = self.leases.first().map(|e| e.0);
        match (delayed, lease) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(crate) fn counts(&self, queue: &str) -> QueueCounts {
        self.queues
            .get(queue)
            .map_or_else(QueueCounts::default, |q| QueueCounts {
                ready: q.ready.len() as u64,
                delayed: q.delayed,
                running: q.running,
                dead: q.dead.len() as u64,
            })
    }

    /// Adds `waiter` to the wait lists of `queues`.
    pub(crate) fn add_waiter(&mut self, queues: &[&str], waiter: &Arc<Waiter>) {
        for q in queues {
            self.queue(q).waiters.push(Arc::clone(waiter));
        }
    }

    pub(crate) fn remove_waiter(&mut self, queues: &[&str], waiter: &Arc<Waiter>) {
        for q in queues {
            if let Some(qi) = self.queues.get_mut(*q) {
                qi.waiters.retain(|w| !Arc::ptr_eq(w, waiter));
            }
        }
    }

    /// Wakes one thread waiting on `queue` that is not woken already.
    pub(crate) fn wake_one(&mut self, queue: &str) {
        let Some(qi) = self.queues.get_mut(queue) else {
            return;
        };
        while let Some(waiter) = qi.waiters.pop() {
            if !waiter.woken.swap(true, Ordering::SeqCst) {
                waiter.thread.unpark();
                return;
            }
        }
    }

    /// Wakes every waiting thread (at close).
    pub(crate) fn wake_all(&mut self) {
        for qi in self.queues.values_mut() {
            for waiter in qi.waiters.drain(..) {
                waiter.woken.store(true, Ordering::SeqCst);
                waiter.thread.unpark();
            }
        }
    }

    pub(crate) fn has_ready(&self, queue: &str) -> bool {
        self.queues.get(queue).is_some_and(|q| !q.ready.is_empty())
    }
}
