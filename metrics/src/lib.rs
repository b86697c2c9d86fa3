//! Metrics for ferrophp: DDSketch distributions, counters and gauges that PHP code and
//! the server record on their own threads without shared writes, merged exactly at
//! scrape or push time.
//!
//! - [`sketch`]: the DDSketch (logarithmic mapping, dense stores), bin-compatible with
//!   DataDog's reference implementations.
//! - [`proto`]: the canonical `ddsketch.proto` encoding and the push envelope.
//! - [`wire`]: protobuf wire-format writers and reader (also used by the OTLP exporter).
//! - [`registry`]: series (name + sorted tags), the per-thread shards, the series cap.
//! - [`prometheus`]: text exposition for `GET /metrics`.
//! - [`push`]: per-interval deltas for push mode and the bounded payload queue.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

pub mod prometheus;
pub mod proto;
pub mod push;
pub mod registry;
pub mod sketch;
pub mod wire;

pub use proto::Kind;
pub use registry::{
    configure, global, Config, Error, Op, Registry, SeriesId, Snapshot, TagBuf, Value,
};
pub use sketch::{DDSketch, DenseStore, Mapping};
