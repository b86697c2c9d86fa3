//! The in-memory history: a ring of the newest updates, bounded in count and in bytes,
//! with an index from id to sequence number so a reconnection finds its place without a
//! scan.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::{replay_from, History, HistoryLimits, Replay};
use crate::update::Published;

/// A bounded log in memory.
pub(crate) struct MemoryHistory {
    limits: HistoryLimits,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    /// Oldest first; sequence numbers are consecutive.
    entries: VecDeque<(u64, Arc<Published>)>,
    /// The newest entry of each id (an id may be reused).
    by_id: HashMap<String, u64>,
    bytes: usize,
}

impl MemoryHistory {
    pub(crate) fn new(limits: HistoryLimits) -> MemoryHistory {
        MemoryHistory {
            limits,
            log: Mutex::new(Log::default()),
        }
    }
}

fn entry_bytes(p: &Published) -> usize {
    p.event.len() + p.id.len() + p.topics.iter().map(String::len).sum::<usize>() + 64
}

impl History for MemoryHistory {
    fn append(&self, seq: u64, published: &Arc<Published>, _stored: &[u8]) -> Result<(), String> {
        if self.limits.max_updates == 0 {
            return Ok(());
        }
        let mut log = self.log.lock().unwrap();
        // A gap (entries skipped while none were kept) restarts the ring.
        if log.entries.back().is_some_and(|(last, _)| last + 1 != seq) {
            *log = Log::default();
        }
        log.bytes += entry_bytes(published);
        log.by_id.insert(published.id.clone(), seq);
        log.entries.push_back((seq, published.clone()));
        while log.entries.len() > self.limits.max_updates
            || (log.bytes > self.limits.max_bytes && log.entries.len() > 1)
        {
            let (old_seq, old) = log.entries.pop_front().expect("not empty");
            log.bytes -= entry_bytes(&old);
            if log.by_id.get(&old.id) == Some(&old_seq) {
                log.by_id.remove(&old.id);
            }
        }
        Ok(())
    }

    fn replay(
        &self,
        last_event_id: &str,
        up_to: u64,
        wanted: &dyn Fn(&Published) -> bool,
    ) -> Replay {
        let log = self.log.lock().unwrap();
        let found = log.by_id.get(last_event_id).copied();
        let first = log.entries.front().map_or(0, |(s, _)| *s);
        // Entries are consecutive: start at the found one directly.
        let skip = match found {
            Some(at) => (at + 1).saturating_sub(first) as usize,
            None => 0,
        };
        let entries = log
            .entries
            .iter()
            .skip(skip)
            .take_while(|(seq, _)| *seq <= up_to)
            .map(|(s, p)| (*s, p.clone()));
        replay_from(last_event_id, found, entries, wanted)
    }

    fn last(&self) -> Option<(u64, String)> {
        let log = self.log.lock().unwrap();
        log.entries.back().map(|(s, p)| (*s, p.id.clone()))
    }

    fn len(&self) -> usize {
        self.log.lock().unwrap().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::{Update, EARLIEST};

    fn published(id: &str, topic: &str) -> Arc<Published> {
        Arc::new(Published::from_update(Update {
            id: Some(id.into()),
            ..Update::new(topic, id)
        }))
    }

    fn ids(r: &Replay) -> Vec<String> {
        r.events
            .iter()
            .map(|e| {
                let s = std::str::from_utf8(e).unwrap();
                s.lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("id: ")
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn replay_after_an_id_up_to_the_snapshot() {
        let h = MemoryHistory::new(HistoryLimits::default());
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            h.append(
                i as u64 + 1,
                &published(id, if i % 2 == 0 { "x" } else { "y" }),
                &[],
            )
            .unwrap();
        }
        let all = |_: &Published| true;
        let r = h.replay("b", 4, &all);
        assert_eq!(ids(&r), ["c", "d"]);
        assert_eq!(r.last_event_id, "b");
        // Entries after the snapshot come live, not from here.
        assert_eq!(ids(&h.replay("b", 3, &all)), ["c"]);
        let r = h.replay(EARLIEST, 4, &all);
        assert_eq!(ids(&r), ["a", "b", "c", "d"]);
        assert_eq!(r.last_event_id, EARLIEST);
        // Filtered by what the subscriber may see.
        let only_x = |p: &Published| &*p.topics[0] == "x";
        assert_eq!(ids(&h.replay("a", 4, &only_x)), ["c"]);
        // Unknown id: nothing, and the newest event it may see.
        let r = h.replay("zzz", 4, &only_x);
        assert!(r.events.is_empty());
        assert_eq!(r.last_event_id, "c");
        let none = |_: &Published| false;
        assert_eq!(h.replay("zzz", 4, &none).last_event_id, EARLIEST);
        assert_eq!(h.last(), Some((4, "d".into())));
    }

    #[test]
    fn bounded_in_count_and_bytes() {
        let h = MemoryHistory::new(HistoryLimits {
            max_updates: 3,
            max_bytes: usize::MAX,
        });
        for i in 1..=10u64 {
            h.append(i, &published(&format!("id{i}"), "t"), &[])
                .unwrap();
        }
        assert_eq!(h.len(), 3);
        let r = h.replay("id2", 10, &|_| true);
        assert!(r.events.is_empty(), "evicted ids are unknown");
        assert_eq!(r.last_event_id, "id10");
        assert_eq!(ids(&h.replay("id8", 10, &|_| true)), ["id9", "id10"]);
        let small = MemoryHistory::new(HistoryLimits {
            max_updates: 100,
            max_bytes: 1,
        });
        small.append(1, &published("a", "t"), &[]).unwrap();
        small.append(2, &published("b", "t"), &[]).unwrap();
        assert_eq!(
            small.len(),
            1,
            "the newest is kept even when over the byte bound"
        );
    }

    #[test]
    fn a_reused_id_resumes_after_its_newest_use() {
        let h = MemoryHistory::new(HistoryLimits::default());
        h.append(1, &published("same", "t"), &[]).unwrap();
        h.append(2, &published("other", "t"), &[]).unwrap();
        h.append(3, &published("same", "t"), &[]).unwrap();
        h.append(4, &published("last", "t"), &[]).unwrap();
        assert_eq!(ids(&h.replay("same", 4, &|_| true)), ["last"]);
    }
}
