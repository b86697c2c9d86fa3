//! The one error type of the crate: what a caller (a PHP function, an admin endpoint) can
//! be told when a queue operation or a schedule cannot be done.

use std::fmt;

/// Why a queue or scheduler operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobsError {
    /// The payload is larger than the configured limit; nothing was stored.
    PayloadTooLarge {
        /// The payload's size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },
    /// An argument is out of range or malformed (queue name, priority, cron expression, ...).
    InvalidArgument(String),
    /// The lease is no longer valid: the job was acknowledged or failed already, or its
    /// visibility timeout passed and it went back to the queue (another worker may hold it).
    LeaseLost {
        /// The job's id.
        id: String,
    },
    /// No dead job with this id in this queue.
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The local store failed (disk full, I/O error, corrupt file).
    Storage(String),
    /// The Redis backend is unreachable or answered with an error; the operation did not
    /// happen (a dispatch that fails this way stored nothing the caller can rely on).
    Unavailable(String),
    /// The queue was closed (the server is shutting down).
    Closed,
}

impl fmt::Display for JobsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PayloadTooLarge { size, limit } => {
                write!(f, "job payload of {size} bytes exceeds the limit of {limit} bytes")
            }
            Self::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Self::LeaseLost { id } => write!(
                f,
                "job {id} is no longer leased to this worker (already acknowledged or failed, or its visibility timeout passed)"
            ),
            Self::NotFound { id } => write!(f, "no dead job {id}"),
            Self::Storage(why) => write!(f, "job store error: {why}"),
            Self::Unavailable(why) => write!(f, "job backend unavailable: {why}"),
            Self::Closed => f.write_str("job queue is closed"),
        }
    }
}

impl std::error::Error for JobsError {}

impl From<fjall::Error> for JobsError {
    fn from(e: fjall::Error) -> Self {
        Self::Storage(e.to_string())
    }
}

impl From<redis::RedisError> for JobsError {
    fn from(e: redis::RedisError) -> Self {
        Self::Unavailable(e.to_string())
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, JobsError>;
