//! Push mode's pure part: turning cumulative snapshots into per-interval payloads
//! (what changed since the previous interval) and the bounded queue of payloads waiting
//! for an unreachable collector (oldest dropped first, drops counted). The network side
//! lives in the server.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::proto::{Kind, Payload, PayloadSeries};
use crate::registry::{Registry, Value};

// Process-wide push counters, exported on `/metrics`.

/// Payloads the collector accepted.
pub static PAYLOADS_SENT: AtomicU64 = AtomicU64::new(0);
/// Payloads dropped because the queue was full (the collector unreachable too long).
pub static PAYLOADS_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Failed attempts to send a payload (counted by the server's sender).
pub static SEND_FAILURES: AtomicU64 = AtomicU64::new(0);

/// Builds one payload per interval and queues it until sent.
pub struct Pusher {
    /// Cumulative value of each series at the previous interval, by series id.
    prev: HashMap<u32, Value>,
    queue: VecDeque<Vec<u8>>,
    capacity: usize,
    /// `key:value` tags added to every series (the instance's name).
    common_tags: Vec<(String, String)>,
}

impl Pusher {
    /// `capacity`: most payloads kept while the collector is unreachable (at least 1).
    pub fn new(capacity: usize) -> Pusher {
        Pusher {
            prev: HashMap::new(),
            queue: VecDeque::new(),
            capacity: capacity.max(1),
            common_tags: Vec::new(),
        }
    }

    /// Adds `key:value` to the tags of every series pushed (a series' own tag of the same
    /// key wins): what a scraper would add as a target label, such as `instance`.
    pub fn with_tag(mut self, key: &str, value: &str) -> Pusher {
        self.common_tags.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The payload for the interval ending now: every series that changed since the
    /// previous call (distributions and counters as increases, gauges as values), each
    /// sketch encoded once. Queued; when the queue is full its oldest payload is dropped.
    pub fn collect(&mut self, registry: &Registry, now_unix_ms: u64, interval_ms: u64) {
        let snap = registry.snapshot();
        let mut series = Vec::new();
        for s in snap.series {
            let mut tags: Vec<(&str, &str)> = s
                .meta
                .tags
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            for (k, v) in &self.common_tags {
                if !tags.iter().any(|(own, _)| own == k) {
                    tags.push((k, v));
                }
            }
            tags.sort_unstable_by_key(|(k, _)| *k);
            let tags = tags.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            let prev = self.prev.get(&s.id);
            let item = match (&s.value, prev) {
                (Value::Distribution(now), prev) => {
                    let d = match prev {
                        Some(Value::Distribution(p)) => now.delta_since(p),
                        _ => now.clone(),
                    };
                    (d.count() > 0.0).then(|| PayloadSeries {
                        name: s.meta.name.clone(),
                        tags,
                        kind: Kind::Distribution,
                        value: 0.0,
                        sum: d.sum(),
                        count: d.count(),
                        sketch: Some(d),
                    })
                }
                (Value::Counter(now), prev) => {
                    let d = match prev {
                        Some(Value::Counter(p)) => now - p,
                        _ => *now,
                    };
                    (d != 0.0).then(|| PayloadSeries {
                        name: s.meta.name.clone(),
                        tags,
                        kind: Kind::Counter,
                        sketch: None,
                        value: d,
                        sum: 0.0,
                        count: 0.0,
                    })
                }
                (Value::Gauge(v), _) => Some(PayloadSeries {
                    name: s.meta.name.clone(),
                    tags,
                    kind: Kind::Gauge,
                    sketch: None,
                    value: *v,
                    sum: 0.0,
                    count: 0.0,
                }),
            };
            series.extend(item);
            self.prev.insert(s.id, s.value);
        }
        let payload = Payload {
            series,
            timestamp_unix_ms: now_unix_ms,
            interval_ms,
            dropped_series: snap.dropped,
            dropped_payloads: PAYLOADS_DROPPED.load(Ordering::Relaxed),
        };
        if self.queue.len() >= self.capacity {
            self.queue.pop_front();
            PAYLOADS_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        self.queue.push_back(payload.encode());
    }

    /// The oldest payload not yet delivered.
    pub fn front(&self) -> Option<&[u8]> {
        self.queue.front().map(Vec::as_slice)
    }

    /// The front payload was delivered.
    pub fn delivered(&mut self) {
        if self.queue.pop_front().is_some() {
            PAYLOADS_SENT.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Payloads waiting to be delivered.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Config, Op, TagBuf};

    #[test]
    fn deltas_and_bounded_queue() {
        let r = Registry::new(Config::default());
        let none = TagBuf::new();
        let mut p = Pusher::new(2);
        for i in 0..10 {
            r.record(b"lat", &none, Op::Observe(i as f64 + 1.0))
                .unwrap();
        }
        r.record(b"n", &none, Op::Add(3.0)).unwrap();
        p.collect(&r, 1, 10);
        for i in 0..5 {
            r.record(b"lat", &none, Op::Observe(i as f64 + 1.0))
                .unwrap();
        }
        p.collect(&r, 2, 10);
        let a = Payload::decode(p.front().unwrap()).unwrap();
        p.delivered();
        let b = Payload::decode(p.front().unwrap()).unwrap();
        assert_eq!(a.series.len(), 2);
        assert_eq!(a.series[0].count, 10.0);
        assert_eq!(a.series[1].value, 3.0);
        assert_eq!(b.series.len(), 1, "the counter did not change");
        assert_eq!(b.series[0].sketch.as_ref().unwrap().count(), 5.0);
        let before = PAYLOADS_DROPPED.load(Ordering::Relaxed);
        p.collect(&r, 3, 10);
        p.collect(&r, 4, 10);
        assert_eq!(p.queued(), 2);
        assert!(PAYLOADS_DROPPED.load(Ordering::Relaxed) > before);
    }

    #[test]
    fn common_tags_join_each_series_in_key_order() {
        let r = Registry::new(Config::default());
        let mut own = TagBuf::new();
        own.push(b"code", b"2xx");
        own.push(b"zone", b"b");
        r.record(b"hits", &own, Op::Add(1.0)).unwrap();
        let mut clash = TagBuf::new();
        clash.push(b"instance", b"own");
        r.record(b"other", &clash, Op::Add(1.0)).unwrap();
        let mut p = Pusher::new(1).with_tag("instance", "app-2");
        p.collect(&r, 1, 10);
        let payload = Payload::decode(p.front().unwrap()).unwrap();
        let tags = |name: &str| {
            payload
                .series
                .iter()
                .find(|s| s.name == name)
                .unwrap()
                .tags
                .clone()
        };
        assert_eq!(tags("hits"), ["code:2xx", "instance:app-2", "zone:b"]);
        assert_eq!(tags("other"), ["instance:own"], "a series' own tag wins");
    }
}
