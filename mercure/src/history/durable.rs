//! The durable history: updates in fjall (`<data-dir>/mercure/`), surviving a restart.
//! Two keyspaces: `updates` (sequence number, big-endian, to the stored update) and `ids`
//! (id to the sequence number of its newest use). Bounded: past `max_updates` the oldest
//! entries are deleted, a batch at a time.

use std::path::Path;
use std::sync::{Arc, Mutex};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::{replay_from, History, Replay};
use crate::update::{Published, StoredUpdate};

/// Deletes happen once the log is this many entries past its bound (amortized trims).
const TRIM_SLACK: u64 = 64;

/// A bounded log in fjall.
pub(crate) struct DurableHistory {
    db: Database,
    updates: Keyspace,
    ids: Keyspace,
    max_updates: u64,
    state: Mutex<State>,
}

struct State {
    /// The oldest sequence number kept (0: none yet).
    first: u64,
    /// The newest entry.
    last: Option<(u64, String)>,
}

fn key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

fn seq_of(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

impl DurableHistory {
    /// Opens (or creates) the history in `dir`.
    pub(crate) fn open(dir: &Path, max_updates: usize) -> Result<DurableHistory, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let db = Database::builder(dir)
            .open()
            .map_err(|e| format!("cannot open the Mercure history in {}: {e}", dir.display()))?;
        let updates = db
            .keyspace("updates", KeyspaceCreateOptions::default)
            .map_err(|e| e.to_string())?;
        let ids = db
            .keyspace("ids", KeyspaceCreateOptions::default)
            .map_err(|e| e.to_string())?;
        let first = match updates.first_key_value() {
            Some(g) => g.key().ok().as_deref().and_then(seq_of).unwrap_or(0),
            None => 0,
        };
        let last = match updates.last_key_value() {
            Some(g) => {
                let (k, v) = g.into_inner().map_err(|e| e.to_string())?;
                let id = StoredUpdate::decode(&v).map(|s| s.id).unwrap_or_default();
                seq_of(&k).map(|s| (s, id))
            }
            None => None,
        };
        Ok(DurableHistory {
            db,
            updates,
            ids,
            max_updates: max_updates as u64,
            state: Mutex::new(State { first, last }),
        })
    }

    fn trim(&self, state: &mut State, newest: u64) -> Result<(), fjall::Error> {
        if state.first == 0 || newest + 1 - state.first <= self.max_updates + TRIM_SLACK {
            return Ok(());
        }
        let keep_from = newest + 1 - self.max_updates;
        let mut batch = self.db.batch();
        for item in self.updates.range(key(state.first)..key(keep_from)) {
            let (k, v) = item.into_inner()?;
            if let Some(stored) = StoredUpdate::decode(&v) {
                if self.ids.get(stored.id.as_bytes())?.as_deref() == Some(&k[..]) {
                    batch.remove(&self.ids, stored.id.into_bytes());
                }
            }
            batch.remove(&self.updates, k);
        }
        batch.commit()?;
        state.first = keep_from;
        Ok(())
    }
}

impl History for DurableHistory {
    fn append(&self, seq: u64, published: &Arc<Published>, stored: &[u8]) -> Result<(), String> {
        if self.max_updates == 0 {
            return Ok(());
        }
        let mut state = self.state.lock().unwrap();
        let mut batch = self.db.batch();
        batch.insert(&self.updates, key(seq), stored);
        batch.insert(&self.ids, published.id.as_bytes(), key(seq));
        let result = batch.commit().and_then(|()| {
            if state.first == 0 {
                state.first = seq;
            }
            state.last = Some((seq, published.id.clone()));
            self.trim(&mut state, seq)
        });
        // Written to the OS (survives the process, not the machine) at each publish.
        result
            .and_then(|()| self.db.persist(PersistMode::Buffer))
            .map_err(|e| format!("cannot write the update history: {e}"))
    }

    fn replay(
        &self,
        last_event_id: &str,
        up_to: u64,
        wanted: &dyn Fn(&Published) -> bool,
    ) -> Replay {
        let found = self
            .ids
            .get(last_event_id.as_bytes())
            .ok()
            .flatten()
            .and_then(|v| seq_of(&v));
        let from = match found {
            Some(at) => at + 1,
            None => 0,
        };
        let entries = self
            .updates
            .range(key(from)..=key(up_to))
            .filter_map(|item| {
                let (k, v) = item.into_inner().ok()?;
                let seq = seq_of(&k)?;
                Some((seq, StoredUpdate::decode(&v)?.into_published()))
            });
        replay_from(last_event_id, found, entries, wanted)
    }

    fn last(&self) -> Option<(u64, String)> {
        self.state.lock().unwrap().last.clone()
    }

    fn len(&self) -> usize {
        let state = self.state.lock().unwrap();
        match &state.last {
            Some((last, _)) if state.first > 0 => (last + 1 - state.first) as usize,
            _ => 0,
        }
    }

    fn persists(&self) -> bool {
        true
    }

    fn flush(&self) {
        if let Err(e) = self.db.persist(PersistMode::SyncAll) {
            tracing::error!(error = %e, "mercure: cannot sync the update history");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::{Update, EARLIEST};

    fn append(h: &DurableHistory, seq: u64, id: &str) {
        let u = Update {
            id: Some(id.into()),
            ..Update::new("t", format!("data {id}"))
        };
        let stored = StoredUpdate::new(id, &u).encode();
        h.append(seq, &Arc::new(Published::from_update(u)), &stored)
            .unwrap();
    }

    #[test]
    fn survives_reopening_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        {
            let h = DurableHistory::open(dir.path(), 100).unwrap();
            for i in 1..=300u64 {
                append(&h, i, &format!("id{i}"));
            }
            assert!(h.len() <= 100 + TRIM_SLACK as usize, "{}", h.len());
            assert_eq!(h.last(), Some((300, "id300".into())));
        }
        let h = DurableHistory::open(dir.path(), 100).unwrap();
        assert_eq!(h.last(), Some((300, "id300".into())));
        let r = h.replay("id297", 300, &|_| true);
        assert_eq!(r.events.len(), 3);
        assert_eq!(r.last_event_id, "id297");
        assert!(std::str::from_utf8(&r.events[0])
            .unwrap()
            .contains("data id298"));
        // Trimmed ids are gone: unknown, no replay.
        let r = h.replay("id1", 300, &|_| true);
        assert!(r.events.is_empty());
        assert_eq!(r.last_event_id, "id300");
        let r = h.replay(EARLIEST, 300, &|_| true);
        assert!(r.events.len() >= 100 && r.events.len() <= 164);
    }
}
