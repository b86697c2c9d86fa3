//! How a job lies in the local store: its id as the key (8 bytes, big-endian, so keys sort
//! in dispatch order) and a small record of everything but the payload (postcard), which
//! is rewritten on every state change while the payload, in its own keyspace, is written
//! once.

use serde::{Deserialize, Serialize};

use crate::error::{JobsError, Result};
use crate::job::Backoff;

/// Where a job is in its life, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum StoredState {
    /// Can be taken.
    Ready,
    /// Can be taken from this time (ms since the epoch).
    Delayed { due_ms: u64 },
    /// Handed to a worker. Leases do not survive the process: at open such a job is
    /// delivered again (its attempt is already counted, so a job that kills its worker
    /// every time still reaches the dead-letter list).
    Taken,
    /// On the dead-letter list since this time.
    Dead { at_ms: u64 },
}

/// Everything about a job except its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobRecord {
    pub(crate) queue: String,
    pub(crate) priority: i16,
    pub(crate) attempts: u32,
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) unique_key: Option<String>,
    pub(crate) visibility_ms: u64,
    pub(crate) state: StoredState,
    pub(crate) last_error: Option<String>,
}

impl JobRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        // A record of plain fields always serializes.
        postcard::to_stdvec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        postcard::from_bytes(bytes)
            .map_err(|e| JobsError::Storage(format!("unreadable job record: {e}")))
    }
}

/// The store key of a job id.
pub(crate) fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// The job id of a store key.
pub(crate) fn id_of_key(key: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| JobsError::Storage(format!("job key of {} bytes", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// The id as callers see it: 16 hex digits.
pub(crate) fn format_id(id: u64) -> String {
    format!("{id:016x}")
}

/// The id of a string from [`format_id`]; `None` for anything else.
pub(crate) fn parse_id(id: &str) -> Option<u64> {
    if id.len() == 16 {
        u64::from_str_radix(id, 16).ok()
    } else {
        None
    }
}
