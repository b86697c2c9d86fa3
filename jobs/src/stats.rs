//! Totals since start for `/metrics`: what the queue and the scheduler did in this
//! process, as relaxed atomic counters (each increment is one uncontended-in-practice
//! atomic add; nothing here is read on a hot path).

use std::sync::atomic::{AtomicU64, Ordering};

/// Queue totals since this process opened the queue.
#[derive(Debug, Default)]
pub struct QueueStats {
    pub(crate) dispatched: AtomicU64,
    pub(crate) deduplicated: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) taken: AtomicU64,
    pub(crate) acked: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dead: AtomicU64,
    pub(crate) expired: AtomicU64,
}

/// A copy of [`QueueStats`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueTotals {
    /// Jobs stored by a dispatch.
    pub dispatched: u64,
    /// Dispatches that found their unique key taken and stored nothing.
    pub deduplicated: u64,
    /// Dispatches refused (payload too large, bad option).
    pub refused: u64,
    /// Leases handed out.
    pub taken: u64,
    /// Jobs acknowledged.
    pub acked: u64,
    /// Failures reported by workers.
    pub failed: u64,
    /// Jobs put back for another attempt (after a failure or an expired lease).
    pub retried: u64,
    /// Jobs moved to a dead-letter list.
    pub dead: u64,
    /// Leases whose visibility timeout passed.
    pub expired: u64,
}

impl QueueStats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The totals now.
    pub fn totals(&self) -> QueueTotals {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        QueueTotals {
            dispatched: get(&self.dispatched),
            deduplicated: get(&self.deduplicated),
            refused: get(&self.refused),
            taken: get(&self.taken),
            acked: get(&self.acked),
            failed: get(&self.failed),
            retried: get(&self.retried),
            dead: get(&self.dead),
            expired: get(&self.expired),
        }
    }
}
