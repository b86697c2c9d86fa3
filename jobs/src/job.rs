//! The plain types that cross the queue's API: what a dispatch asks for
//! ([`DispatchOptions`], [`Backoff`]), what a take hands out ([`Lease`]), what a failure
//! leads to ([`FailOutcome`]), and what the admin view and metrics read ([`QueueCounts`],
//! [`DeadJob`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::{JobsError, Result};

/// The range a job's priority must lie in; higher runs first within a queue.
pub const PRIORITY_RANGE: std::ops::RangeInclusive<i16> = -1000..=1000;

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 128;

/// The longest unique key, in bytes.
pub const MAX_UNIQUE_KEY: usize = 512;

/// How long a failed job waits before its next attempt:
/// `min(initial * factor^(attempt-1), max)`, then shortened by a random fraction of at
/// most `jitter` so that jobs failing together do not retry together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Backoff {
    /// The delay before the second attempt.
    pub initial: Duration,
    /// The growth per attempt (1 keeps the delay fixed).
    pub factor: u32,
    /// The longest delay.
    pub max: Duration,
    /// The largest fraction (0.0 to 1.0) taken off a delay at random.
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            factor: 2,
            max: Duration::from_secs(3600),
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// No delay between attempts.
    pub const NONE: Self = Self {
        initial: Duration::ZERO,
        factor: 1,
        max: Duration::ZERO,
        jitter: 0.0,
    };

    /// The delay after `failed_attempts` failed attempts (1 for the first failure).
    pub fn delay(&self, failed_attempts: u32) -> Duration {
        let exponent = failed_attempts.saturating_sub(1).min(63);
        let growth = u64::from(self.factor.max(1))
            .checked_pow(exponent)
            .unwrap_or(u64::MAX);
        let base_ms = u64::try_from(self.initial.as_millis()).unwrap_or(u64::MAX);
        let max_ms = u64::try_from(self.max.as_millis()).unwrap_or(u64::MAX);
        let delay_ms = base_ms.saturating_mul(growth).min(max_ms);
        let jitter = self.jitter.clamp(0.0, 1.0);
        // Float math on a delay in ms: precision below a millisecond does not matter.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let shortened = (delay_ms as f64 * (1.0 - jitter * fastrand::f64())) as u64;
        Duration::from_millis(shortened)
    }

    fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(JobsError::InvalidArgument(format!(
                "backoff jitter must be between 0 and 1, got {}",
                self.jitter
            )));
        }
        Ok(())
    }
}

/// What a dispatch asks for besides the payload.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchOptions {
    /// Hold the job back this long before it can be taken.
    pub delay: Duration,
    /// Higher first within a queue ([`PRIORITY_RANGE`]); equal priorities run in dispatch
    /// order.
    pub priority: i16,
    /// Attempts before the job goes to the dead-letter list (a take counts as an attempt,
    /// so a job whose worker keeps dying is dead-lettered too).
    pub max_attempts: u32,
    /// The wait between attempts.
    pub backoff: Backoff,
    /// At most one job with this key in the queue (ready, delayed or running) at a time: a
    /// second dispatch while the first is there stores nothing and returns the first
    /// job's id ([`DispatchOutcome::deduplicated`]). The key is freed when the job is
    /// acknowledged or dead-lettered; a retry keeps it.
    pub unique_key: Option<String>,
    /// How long a take leases the job: a lease neither acknowledged, failed nor extended
    /// within this time counts as a failed attempt and the job is delivered again.
    pub visibility_timeout: Duration,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            priority: 0,
            max_attempts: 3,
            backoff: Backoff::default(),
            unique_key: None,
            visibility_timeout: Duration::from_secs(300),
        }
    }
}

impl DispatchOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if !PRIORITY_RANGE.contains(&self.priority) {
            return Err(JobsError::InvalidArgument(format!(
                "priority {} is outside {}..={}",
                self.priority,
                PRIORITY_RANGE.start(),
                PRIORITY_RANGE.end()
            )));
        }
        if self.max_attempts == 0 {
            return Err(JobsError::InvalidArgument(
                "max_attempts must be at least 1".into(),
            ));
        }
        if self.visibility_timeout < Duration::from_millis(100) {
            return Err(JobsError::InvalidArgument(
                "visibility timeout must be at least 100 ms".into(),
            ));
        }
        if let Some(key) = &self.unique_key {
            if key.is_empty() || key.len() > MAX_UNIQUE_KEY {
                return Err(JobsError::InvalidArgument(format!(
                    "unique key must be 1 to {MAX_UNIQUE_KEY} bytes"
                )));
            }
        }
        self.backoff.validate()
    }
}

/// Checks a queue name: 1 to [`MAX_QUEUE_NAME`] bytes of letters, digits and `_-.:`.
pub fn validate_queue_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_QUEUE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(JobsError::InvalidArgument(format!(
            "queue name {name:?} must be 1 to {MAX_QUEUE_NAME} characters of letters, digits and _-.:"
        )))
    }
}

/// What a dispatch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchOutcome {
    /// The job's id (for a deduplicated dispatch, the id of the job already queued).
    pub id: String,
    /// True when a job with the same unique key was already in the queue and nothing new
    /// was stored.
    pub deduplicated: bool,
}

/// A job handed to one worker until it acknowledges, fails or extends it, or its
/// visibility timeout passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The job's id, as dispatch returned it.
    pub id: String,
    /// The queue it was taken from.
    pub queue: String,
    /// The payload, as dispatched.
    pub payload: Vec<u8>,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// The attempts allowed before the job is dead-lettered.
    pub max_attempts: u32,
    /// Tells this lease from a later one of the same job (after an expiry).
    pub(crate) token: u64,
}

/// What failing a job led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// The job will be delivered again at (about) this time.
    Retry {
        /// When the next attempt can be taken.
        at: SystemTime,
    },
    /// The job used its last attempt and is on its queue's dead-letter list.
    Dead,
}

/// A queue's job counts, maintained as jobs move (never counted by scanning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Jobs that can be taken now.
    pub ready: u64,
    /// Jobs waiting for their delay or retry backoff.
    pub delayed: u64,
    /// Jobs leased to a worker.
    pub running: u64,
    /// Jobs on the dead-letter list.
    pub dead: u64,
}

/// A job on a dead-letter list, for the admin view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadJob {
    /// The job's id.
    pub id: String,
    /// Its queue.
    pub queue: String,
    /// The payload, as dispatched.
    pub payload: Vec<u8>,
    /// The attempts it used.
    pub attempts: u32,
    /// The last failure's reason.
    pub reason: String,
    /// When it was dead-lettered.
    pub failed_at: SystemTime,
}

/// Milliseconds since the Unix epoch, the crate's stored time unit.
pub(crate) fn now_ms() -> u64 {
    to_ms(SystemTime::now())
}

pub(crate) fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The epoch millisecond `after` from now, rounded up: a job delayed by 300 ms is
/// never handed out 299.4 ms later because the clock's fraction was dropped.
pub(crate) fn due_ms_after(after: Duration) -> u64 {
    SystemTime::now()
        .checked_add(after)
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_micros().div_ceil(1000)).unwrap_or(u64::MAX))
        .unwrap_or(u64::MAX)
}

pub(crate) fn from_ms(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

pub(crate) fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters_down() {
        let b = Backoff {
            initial: Duration::from_secs(1),
            factor: 3,
            max: Duration::from_secs(20),
            jitter: 0.0,
        };
        let secs: Vec<u64> = (1..=5).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 3, 9, 20, 20]);
        assert_eq!(b.delay(10_000), Duration::from_secs(20));
        let jittered = Backoff { jitter: 0.5, ..b };
        for _ in 0..100 {
            let d = jittered.delay(2);
            assert!(
                d >= Duration::from_millis(1500) && d <= Duration::from_secs(3),
                "{d:?}"
            );
        }
        assert_eq!(Backoff::NONE.delay(7), Duration::ZERO);
    }

    #[test]
    fn options_are_checked() {
        let ok = DispatchOptions::default();
        assert!(ok.validate().is_ok());
        let bad = [
            DispatchOptions {
                priority: 1001,
                ..ok.clone()
            },
            DispatchOptions {
                max_attempts: 0,
                ..ok.clone()
            },
            DispatchOptions {
                visibility_timeout: Duration::from_millis(5),
                ..ok.clone()
            },
            DispatchOptions {
                unique_key: Some(String::new()),
                ..ok.clone()
            },
            DispatchOptions {
                unique_key: Some("k".repeat(MAX_UNIQUE_KEY + 1)),
                ..ok.clone()
            },
            DispatchOptions {
                backoff: Backoff {
                    jitter: 1.5,
                    ..Backoff::default()
                },
                ..ok
            },
        ];
        for opts in bad {
            assert!(
                matches!(opts.validate(), Err(JobsError::InvalidArgument(_))),
                "{opts:?}"
            );
        }
        assert!(validate_queue_name("emails:high-1.x_y").is_ok());
    }
}
