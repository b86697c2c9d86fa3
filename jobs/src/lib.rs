//! ferrophp's background work, knowing neither HTTP nor PHP: a durable job queue and a
//! scheduler. The worker crate shows them to PHP (`Ferrophp\Jobs`, `Ferrophp\Job`,
//! `Ferrophp\Background`) and runs scheduled tasks on PHP threads; the server opens the
//! store from its config (`--data-dir`, `--jobs-backend`) and shows counts and totals on
//! `/metrics` and the admin view.
//!
//! - [`Queue`] (`queue`): dispatch, take, ack, fail, extend; counts, dead-letter lists.
//!   Options and the types that cross it are in `job` ([`DispatchOptions`], [`Lease`]...).
//! - Two stores behind one internal trait (`backend`): `local` (fjall under
//!   `<data-dir>/jobs/`, with the fsync policy [`Durability`]) and `redis` (Lua scripts on
//!   one Redis shared by several instances).
//! - [`schedule`]: [`Scheduler`] and its entries, cron and intervals, with its state kept
//!   by the queue's store ([`ScheduleStore`]).
//! - [`StopSignal`] wakes a blocked take; [`QueueTotals`] and [`EntryTotals`] feed metrics.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

mod backend;
mod error;
mod job;
mod local;
mod queue;
mod redis;
pub mod schedule;
mod stats;
mod stop;

pub use error::{JobsError, Result};
pub use job::{
    validate_queue_name, Backoff, DeadJob, DispatchOptions, DispatchOutcome, FailOutcome, Lease,
    QueueCounts, MAX_QUEUE_NAME, MAX_UNIQUE_KEY, PRIORITY_RANGE,
};
pub use local::{Durability, DEFAULT_SYNC_INTERVAL};
pub use queue::{BackendConfig, Queue, QueueConfig, DEFAULT_MAX_PAYLOAD};
pub use redis::RedisOptions;
pub use schedule::{
    Claim, ClaimArgs, EntryTotals, MissedRuns, Run, RunOutcome, ScheduleEntry, ScheduleStore,
    Scheduler, Task, Trigger,
};
pub use stats::{QueueStats, QueueTotals};
pub use stop::StopSignal;
