//! [`Queue`]: the API the PHP classes (`Ferrophp\Jobs`, `Ferrophp\Job`) and the server's
//! admin view and metrics call. It picks a backend from [`QueueConfig`], refuses bad input
//! before it reaches a store (payload size, queue names, options), and counts what
//! happens. Every method is synchronous and safe to call from many plain OS threads at
//! once (PHP threads are not async); a take parks its thread until a job comes, its
//! timeout passes, or the queue or the caller's [`StopSignal`] is stopped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::Backend;
use crate::error::{JobsError, Result};
use crate::job::{
    validate_queue_name, DeadJob, DispatchOptions, DispatchOutcome, FailOutcome, Lease, QueueCounts,
};
use crate::local::{Durability, LocalBackend};
use crate::redis::{RedisBackend, RedisOptions};
use crate::schedule::ScheduleStore;
use crate::stats::{QueueStats, QueueTotals};
use crate::stop::StopSignal;

/// The default largest payload: 1 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;

/// Where jobs are kept.
#[derive(Debug, Clone)]
pub enum BackendConfig {
    /// In this process, durable under `<data_dir>/jobs/`.
    Local {
        /// The server's `--data-dir` (the store opens its `jobs/` folder).
        data_dir: PathBuf,
        /// The fsync policy.
        durability: Durability,
    },
    /// On a Redis shared by several instances.
    Redis {
        /// `redis://[user:password@]host:port[/db]`.
        url: String,
        /// Prefix, timeouts, pool size.
        options: RedisOptions,
    },
}

/// How to open a [`Queue`].
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// The store.
    pub backend: BackendConfig,
    /// The largest payload a dispatch accepts, in bytes.
    pub max_payload_bytes: usize,
}

impl QueueConfig {
    /// The local store under `data_dir` with the default fsync policy and payload limit.
    pub fn local(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            backend: BackendConfig::Local {
                data_dir: data_dir.into(),
                durability: Durability::default(),
            },
            max_payload_bytes: DEFAULT_MAX_PAYLOAD,
        }
    }

    /// The Redis store at `url` with default options and payload limit.
    pub fn redis(url: impl Into<String>) -> Self {
        Self {
            backend: BackendConfig::Redis {
                url: url.into(),
                options: RedisOptions::default(),
            },
            max_payload_bytes: DEFAULT_MAX_PAYLOAD,
        }
    }
}

/// A job queue (several named queues in one store).
pub struct Queue {
    backend: Box<dyn Backend>,
    stats: Arc<QueueStats>,
    max_payload: usize,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("max_payload", &self.max_payload)
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// Opens the store `config` names. A local store makes every job that was leased when
    /// the previous process ended deliverable again.
    pub fn open(config: QueueConfig) -> Result<Self> {
        let stats = Arc::new(QueueStats::default());
        let backend: Box<dyn Backend> = match config.backend {
            BackendConfig::Local {
                data_dir,
                durability,
            } => Box::new(LocalBackend::open(
                &data_dir.join("jobs"),
                durability,
                Arc::clone(&stats),
            )?),
            BackendConfig::Redis { url, options } => {
                Box::new(RedisBackend::connect(&url, options, Arc::clone(&stats))?)
            }
        };
        Ok(Self {
            backend,
            stats,
            max_payload: config.max_payload_bytes,
        })
    }

    /// Stores a job and returns its id once it is durable (see [`Durability`]; on Redis,
    /// once Redis has it). With a unique key already held, stores nothing and returns the
    /// holder's id.
    pub fn dispatch(
        &self,
        queue: &str,
        payload: &[u8],
        options: &DispatchOptions,
    ) -> Result<DispatchOutcome> {
        let size_ok = if payload.len() > self.max_payload {
            Err(JobsError::PayloadTooLarge {
                size: payload.len(),
                limit: self.max_payload,
            })
        } else {
            Ok(())
        };
        let checked = validate_queue_name(queue)
            .and(options.validate())
            .and(size_ok);
        if let Err(e) = checked {
            QueueStats::add(&self.stats.refused, 1);
            return Err(e);
        }
        let outcome = self.backend.dispatch(queue, payload, options)?;
        let counter = if outcome.deduplicated {
            &self.stats.deduplicated
        } else {
            &self.stats.dispatched
        };
        QueueStats::add(counter, 1);
        Ok(outcome)
    }

    /// Leases the next job of the first of `queues` that has one (so list queues by
    /// precedence), waiting up to `timeout` (zero: do not wait). `None` on timeout or when
    /// the queue is closed.
    pub fn take(&self, queues: &[&str], timeout: Duration) -> Result<Option<Lease>> {
        self.take_or_stop(queues, timeout, &StopSignal::new())
    }

    /// As [`take`](Self::take), and returns `None` early once `stop` is raised (a worker
    /// thread being retired).
    pub fn take_or_stop(
        &self,
        queues: &[&str],
        timeout: Duration,
        stop: &StopSignal,
    ) -> Result<Option<Lease>> {
        if queues.is_empty() {
            return Err(JobsError::InvalidArgument(
                "take needs at least one queue".into(),
            ));
        }
        for q in queues {
            validate_queue_name(q)?;
        }
        let lease = self.backend.take(queues, timeout, stop)?;
        if lease.is_some() {
            QueueStats::add(&self.stats.taken, 1);
        }
        Ok(lease)
    }

    /// Marks a leased job done; it is deleted.
    pub fn ack(&self, lease: &Lease) -> Result<()> {
        self.backend.ack(lease)?;
        QueueStats::add(&self.stats.acked, 1);
        Ok(())
    }

    /// Records a failed attempt: the job is retried after its backoff, or goes to the
    /// dead-letter list when that was its last attempt.
    pub fn fail(&self, lease: &Lease, reason: Option<&str>) -> Result<FailOutcome> {
        let outcome = self.backend.fail(lease, reason.unwrap_or("failed"))?;
        QueueStats::add(&self.stats.failed, 1);
        let counter = match outcome {
            FailOutcome::Retry { .. } => &self.stats.retried,
            FailOutcome::Dead => &self.stats.dead,
        };
        QueueStats::add(counter, 1);
        Ok(outcome)
    }

    /// Keeps a lease for `visibility` from now (a long job's heartbeat).
    pub fn extend(&self, lease: &Lease, visibility: Duration) -> Result<()> {
        self.backend.extend(lease, visibility)
    }

    /// The queues that have held a job.
    pub fn queues(&self) -> Result<Vec<String>> {
        self.backend.queues()
    }

    /// A queue's counts (kept up to date as jobs move; no scan).
    pub fn counts(&self, queue: &str) -> Result<QueueCounts> {
        validate_queue_name(queue)?;
        self.backend.counts(queue)
    }

    /// A page of a queue's dead-letter list, oldest first.
    pub fn dead_jobs(&self, queue: &str, offset: usize, limit: usize) -> Result<Vec<DeadJob>> {
        validate_queue_name(queue)?;
        self.backend.dead_jobs(queue, offset, limit)
    }

    /// Puts a dead job back in its queue with its attempts reset.
    pub fn retry_dead(&self, queue: &str, id: &str) -> Result<()> {
        validate_queue_name(queue)?;
        self.backend.retry_dead(queue, id)
    }

    /// Deletes one dead job (`Some(id)`) or all of a queue's; returns how many.
    pub fn purge_dead(&self, queue: &str, id: Option<&str>) -> Result<u64> {
        validate_queue_name(queue)?;
        self.backend.purge_dead(queue, id)
    }

    /// This process's totals since the queue was opened.
    pub fn totals(&self) -> QueueTotals {
        self.stats.totals()
    }

    /// The largest payload a dispatch accepts.
    pub fn max_payload_bytes(&self) -> usize {
        self.max_payload
    }

    /// Where a [`Scheduler`](crate::Scheduler) on this store keeps its state.
    pub fn schedule_store(&self) -> Arc<dyn ScheduleStore> {
        self.backend.schedule_store()
    }

    /// Wakes every blocked take (they return `None`) and makes later takes return at once.
    pub fn close(&self) {
        self.backend.close();
    }
}
