//! The one trait both stores implement: the local one ([`crate::local`], fjall under
//! `--data-dir`) and the shared one ([`crate::redis`]). Same semantics on both; the
//! [`Queue`](crate::Queue) facade validates arguments and counts before calling them.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::job::{DeadJob, DispatchOptions, DispatchOutcome, FailOutcome, Lease, QueueCounts};
use crate::schedule::ScheduleStore;
use crate::stop::StopSignal;

/// A job store. Arguments are validated by the caller.
pub(crate) trait Backend: Send + Sync {
    /// Stores a job; returns once it is as durable as the backend promises.
    fn dispatch(
        &self,
        queue: &str,
        payload: &[u8],
        opts: &DispatchOptions,
    ) -> Result<DispatchOutcome>;
    /// Leases the next job of the first of `queues` that has one, waiting up to
    /// `timeout` (no wait for zero) and returning early with `None` once `stop` is raised.
    fn take(&self, queues: &[&str], timeout: Duration, stop: &StopSignal) -> Result<Option<Lease>>;
    /// Removes a leased job for good.
    fn ack(&self, lease: &Lease) -> Result<()>;
    /// Records a failed attempt: the job is retried after its backoff, or dead-lettered
    /// when it used its last attempt.
    fn fail(&self, lease: &Lease, reason: &str) -> Result<FailOutcome>;
    /// Pushes a lease's deadline to `visibility` from now.
    fn extend(&self, lease: &Lease, visibility: Duration) -> Result<()>;
    /// The queues that have ever held a job.
    fn queues(&self) -> Result<Vec<String>>;
    /// One queue's counts.
    fn counts(&self, queue: &str) -> Result<QueueCounts>;
    /// A page of a queue's dead-letter list, oldest first.
    fn dead_jobs(&self, queue: &str, offset: usize, limit: usize) -> Result<Vec<DeadJob>>;
    /// Puts a dead job back in its queue with a fresh set of attempts.
    fn retry_dead(&self, queue: &str, id: &str) -> Result<()>;
    /// Deletes one dead job, or every dead job of the queue; returns how many went.
    fn purge_dead(&self, queue: &str, id: Option<&str>) -> Result<u64>;
    /// Where the scheduler keeps its last runs (and, shared, its leases).
    fn schedule_store(&self) -> Arc<dyn ScheduleStore>;
    /// Wakes every waiting take and refuses further ones.
    fn close(&self);
}
