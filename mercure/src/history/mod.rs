//! The hub's history of published updates, for reconnection (`Last-Event-ID`,
//! `lastEventID`, `earliest`): a bounded log in memory ([`memory`], the default and the
//! mirror of a Redis stream) or in fjall under the data directory ([`durable`], which
//! survives a restart).
//!
//! Each entry carries the hub's sequence number. The hub appends under the same lock under
//! which it fans out and registers subscribers, so a subscriber registered when the
//! sequence was `S` receives entries up to `S` from the history and everything after `S`
//! live: no gap and no duplicate between the two.

pub(crate) mod durable;
pub(crate) mod memory;

use std::sync::Arc;

use bytes::Bytes;

use crate::update::{Published, EARLIEST};

/// What a reconnecting subscriber gets from the history.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// The events to send before the live ones, oldest first.
    pub(crate) events: Vec<Bytes>,
    /// The `Last-Event-ID` response header: the id of the event preceding the first one
    /// sent (the requested one when found), the newest event the subscriber may see when
    /// the requested id is unknown (so it can tell that it lost updates), or `earliest`.
    pub(crate) last_event_id: String,
}

/// A history store. Appends come in sequence order, under the hub's lock.
pub(crate) trait History: Send + Sync {
    /// Records `published` as entry `seq`; `stored` is its [`crate::update::StoredUpdate`]
    /// encoding, for stores that persist. An error is the hub's to log and count: the
    /// update is still delivered live.
    fn append(&self, seq: u64, published: &Arc<Published>, stored: &[u8]) -> Result<(), String>;

    /// The entries after the one whose id is `last_event_id` (or all, for `earliest`), up
    /// to entry `up_to`, that `wanted` accepts.
    fn replay(
        &self,
        last_event_id: &str,
        up_to: u64,
        wanted: &dyn Fn(&Published) -> bool,
    ) -> Replay;

    /// The newest entry's sequence number and id.
    fn last(&self) -> Option<(u64, String)>;

    /// Entries held.
    fn len(&self) -> usize;

    /// Writes what is buffered to disk (nothing for memory).
    fn flush(&self) {}

    /// Whether [`History::append`] uses its `stored` argument (so the hub encodes it only
    /// then).
    fn persists(&self) -> bool {
        false
    }
}

/// The bounds of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// At most this many updates.
    pub max_updates: usize,
    /// At most this many bytes of encoded events (memory only; the newest entry is always
    /// kept).
    pub max_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> HistoryLimits {
        HistoryLimits {
            max_updates: 1000,
            max_bytes: 16 << 20,
        }
    }
}

/// Replays over entries given oldest first (a helper shared by the stores): `entries`
/// yields `(seq, id, published)` for `seq <= up_to`, starting after `found` when the id
/// was found at that seq, from the beginning for `earliest`.
pub(crate) fn replay_from<I>(
    last_event_id: &str,
    found: Option<u64>,
    entries: I,
    wanted: &dyn Fn(&Published) -> bool,
) -> Replay
where
    I: Iterator<Item = (u64, Arc<Published>)>,
{
    let mut replay = Replay::default();
    if last_event_id == EARLIEST {
        replay.last_event_id = EARLIEST.to_owned();
        replay.events = entries
            .filter(|(_, p)| wanted(p))
            .map(|(_, p)| p.event.clone())
            .collect();
        return replay;
    }
    match found {
        Some(at) => {
            replay.last_event_id = last_event_id.to_owned();
            replay.events = entries
                .filter(|(seq, p)| *seq > at && wanted(p))
                .map(|(_, p)| p.event.clone())
                .collect();
        }
        None => {
            // Unknown id (never seen, or evicted): nothing is replayed, and the header names
            // the newest event this subscriber may see, so it can tell it lost some.
            replay.last_event_id = entries
                .filter(|(_, p)| wanted(p))
                .last()
                .map_or_else(|| EARLIEST.to_owned(), |(_, p)| p.id.clone());
        }
    }
    replay
}
