//! How a job lies in the local store: its id as the key (8 bytes, big-endian, so keys sort
//! in dispatch order); at dispatch one value, the record (postcard) behind its length and
//! followed by the payload; after that, records alone (a few dozen bytes).

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

/// The value a dispatch writes: the record's length (4 bytes, big-endian), the record,
/// the payload.
pub(crate) fn join_job(record: &JobRecord, payload: &[u8]) -> Vec<u8> {
    let encoded = record.encode();
    let len = u32::try_from(encoded.len()).unwrap_or(u32::MAX);
    let mut value = Vec::with_capacity(4 + encoded.len() + payload.len());
    value.extend_from_slice(&len.to_be_bytes());
    value.extend_from_slice(&encoded);
    value.extend_from_slice(payload);
    value
}

/// The record and payload of a value from [`join_job`].
pub(crate) fn split_job(value: &[u8]) -> Result<(JobRecord, &[u8])> {
    let short = || JobsError::Storage(format!("job value of {} bytes is cut short", value.len()));
    let len_bytes: [u8; 4] = value
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(short)?;
    let end = 4 + usize::try_from(u32::from_be_bytes(len_bytes)).map_err(|_| short())?;
    let record = JobRecord::decode(value.get(4..end).ok_or_else(short)?)?;
    Ok((record, &value[end..]))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> JobRecord {
        JobRecord {
            queue: "q".into(),
            priority: -3,
            attempts: 2,
            max_attempts: 5,
            backoff: Backoff::default(),
            unique_key: Some("k".into()),
            visibility_ms: 1000,
            state: StoredState::Delayed { due_ms: 42 },
            last_error: Some("boom".into()),
        }
    }

    #[test]
    fn a_job_value_round_trips_and_a_cut_one_is_an_error() {
        let value = join_job(&record(), b"payload\0bytes");
        let (back, payload) = split_job(&value).unwrap();
        assert_eq!((back, payload), (record(), &b"payload\0bytes"[..]));
        for cut in [0, 3, 10] {
            assert!(matches!(
                split_job(&value[..cut]),
                Err(JobsError::Storage(_))
            ));
        }
        assert!(JobRecord::decode(b"\xff\xff").is_err());
    }

    #[test]
    fn ids_format_and_parse() {
        let id = (7u64 << 40) | 12345;
        assert_eq!(parse_id(&format_id(id)), Some(id));
        assert_eq!(id_of_key(&key(id)).unwrap(), id);
        for bad in ["", "12", "zzzzzzzzzzzzzzzz", "00000000000000000"] {
            assert_eq!(parse_id(bad), None);
        }
    }
}
