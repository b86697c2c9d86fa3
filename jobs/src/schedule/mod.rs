//! The scheduler: `[[schedule]]` entries (a cron expression in a time zone, or a fixed
//! interval) fired on a thread of its own and handed to the caller's runner, with no
//! overlapping runs unless allowed, a missed-run policy across restarts, jitter, and, on
//! a shared Redis, one run per fire time across instances.
//!
//! Parts: [`spec`] (what an entry is, and when it fires), `scheduler` (the thread and the
//! run hand-off), and here the [`ScheduleStore`] each queue backend provides (the local
//! store for last runs; Redis for last runs plus the leases).

mod scheduler;
pub mod spec;

pub use scheduler::{EntryTotals, Run, RunOutcome, Scheduler};
pub use spec::{MissedRuns, ScheduleEntry, Task, Trigger};

use std::time::Duration;

use crate::error::Result;

/// What a scheduler asks the store when a fire time comes.
#[derive(Debug, Clone, Copy)]
pub struct ClaimArgs {
    /// How long the claim of one fire time is remembered (longer than instances can
    /// disagree about when it is due).
    pub fire_lease: Duration,
    /// Whether the entry may run while its previous run goes on.
    pub allow_overlap: bool,
    /// This run's id.
    pub run_id: u64,
    /// The longest a run may count as going on when its instance died without finishing.
    pub max_run: Duration,
}

/// The answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This instance runs it.
    Run,
    /// Another instance claimed this fire time.
    Taken,
    /// The previous run (on some instance) still goes on and overlap is not allowed.
    Overlap,
}

/// Where a scheduler keeps what must outlive it, obtained from
/// [`Queue::schedule_store`](crate::Queue::schedule_store).
pub trait ScheduleStore: Send + Sync {
    /// The last fire time (ms since the epoch) an instance claimed for `entry`.
    fn last_fire(&self, entry: &str) -> Result<Option<u64>>;
    /// Claims `entry`'s run for `fire_ms`, recording it as the last fire time.
    fn claim(&self, entry: &str, fire_ms: u64, args: &ClaimArgs) -> Result<Claim>;
    /// Ends the run `run_id` of `entry` (frees the no-overlap marker).
    fn finish(&self, entry: &str, run_id: u64) -> Result<()>;
}
