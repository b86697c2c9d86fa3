//! Process-wide counters for `/metrics` (`ferrophp_trace_*`). Most are written by the
//! exporter thread or under the queue's lock; only the limit counters are bumped on a
//! request's thread, and only when a limit is hit.

use std::sync::atomic::AtomicU64;

/// Spans the collector accepted.
pub static SPANS_EXPORTED: AtomicU64 = AtomicU64::new(0);
/// Spans dropped because the queue was full (the collector slow or down).
pub static SPANS_DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
/// Spans in exports that failed (connection refused, timeout, non-2xx answer).
pub static SPANS_DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);
/// Spans the collector answered as rejected (`partial_success.rejected_spans`).
pub static SPANS_REJECTED: AtomicU64 = AtomicU64::new(0);
/// Spans PHP asked for past the per-request limit (not recorded).
pub static SPANS_DROPPED_LIMIT: AtomicU64 = AtomicU64::new(0);
/// Spans that ended after the exporter shut down.
pub static SPANS_DROPPED_SHUTDOWN: AtomicU64 = AtomicU64::new(0);
/// Attributes past the per-span or per-event limit.
pub static ATTRIBUTES_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Events past the per-span limit.
pub static EVENTS_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Export requests (HTTP POSTs) that succeeded.
pub static EXPORTS_SUCCEEDED: AtomicU64 = AtomicU64::new(0);
/// Export requests (HTTP POSTs) that failed.
pub static EXPORTS_FAILED: AtomicU64 = AtomicU64::new(0);
