//! What the hub counts, for the server's `/metrics`: plain atomics, and the fan-out
//! latency as a DDSketch recorded under the lock fan-out already holds (no lock of its
//! own on the hot path).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ferrophp_metrics::{DDSketch, Mapping};

/// The hub's counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) subscribers: AtomicU64,
    pub(crate) subscriptions_total: AtomicU64,
    pub(crate) published: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) slow_subscribers_closed: AtomicU64,
    pub(crate) updates_dropped: AtomicU64,
    pub(crate) publish_errors: AtomicU64,
    pub(crate) history_errors: AtomicU64,
    pub(crate) transport_errors: AtomicU64,
    pub(crate) transport_reconnects: AtomicU64,
    pub(crate) transport_connected: AtomicBool,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A copy of the hub's metrics at one moment.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Subscribers connected now (gauge).
    pub subscribers: u64,
    /// Subscribers ever connected.
    pub subscriptions_total: u64,
    /// Updates published through this hub (HTTP, `mercure_publish()`, subscription
    /// events).
    pub published: u64,
    /// Update deliveries to subscriber buffers (one per subscriber reached).
    pub delivered: u64,
    /// Subscribers closed because their buffer was full (too slow to read).
    pub slow_subscribers_closed: u64,
    /// Updates discarded with those subscribers (their buffer plus the one that did not
    /// fit).
    pub updates_dropped: u64,
    /// Publishes that failed (transport down).
    pub publish_errors: u64,
    /// History writes that failed (the update was still delivered live).
    pub history_errors: u64,
    /// Transport errors (a Redis connection lost, a reply that failed).
    pub transport_errors: u64,
    /// Transport reconnections after an error.
    pub transport_reconnects: u64,
    /// Whether the transport is connected and reading (always true for the local one).
    pub transport_connected: bool,
    /// Updates held in the history.
    pub history_len: u64,
    /// Fan-out latency in seconds: from the publish call (or, for an update from another
    /// instance, its arrival) to the update in every matching subscriber's buffer.
    pub fanout_seconds: DDSketch,
}

/// A sketch for fan-out latencies (1% relative accuracy).
pub(crate) fn latency_sketch() -> DDSketch {
    DDSketch::new(Mapping::new(0.01).expect("valid accuracy"))
}

impl Stats {
    pub(crate) fn from_counters(c: &Counters, history_len: usize, fanout: DDSketch) -> Stats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            subscribers: get(&c.subscribers),
            subscriptions_total: get(&c.subscriptions_total),
            published: get(&c.published),
            delivered: get(&c.delivered),
            slow_subscribers_closed: get(&c.slow_subscribers_closed),
            updates_dropped: get(&c.updates_dropped),
            publish_errors: get(&c.publish_errors),
            history_errors: get(&c.history_errors),
            transport_errors: get(&c.transport_errors),
            transport_reconnects: get(&c.transport_reconnects),
            transport_connected: c.transport_connected.load(Ordering::Relaxed),
            history_len: history_len as u64,
            fanout_seconds: fanout,
        }
    }

    /// The fan-out latency at quantile `q` (0..=1), in seconds.
    pub fn fanout_quantile(&self, q: f64) -> Option<f64> {
        self.fanout_seconds.quantile(q)
    }
}
