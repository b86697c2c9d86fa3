//! The subscribers of a hub, indexed for fan-out, and fan-out itself.
//!
//! Matching every subscriber's selectors against every update costs O(subscribers) regex
//! runs per update. Instead subscribers are indexed by their selectors: exact topics in a
//! hash map (one lookup per update topic), `*` in one set, and URI templates by template,
//! each distinct template evaluated at most once per update topic, and only when its
//! literal prefix (the text before its first expression) is a prefix of the topic. A
//! subscriber reached through several selectors is offered the update once (a sequence
//! stamp), and a private update is checked against its token's selectors with the results
//! of each distinct selector remembered for the update.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::selector::Selector;
use crate::subscriber::{Push, Subscriber};
use crate::update::Published;

/// Slot numbers of subscribers.
type Slots = HashSet<u32>;

struct TemplateEntry {
    selector: Arc<Selector>,
    subscribers: Slots,
    /// The sequence number of the last update that matched it.
    matched_seq: u64,
}

/// The registered subscribers and their index.
#[derive(Default)]
pub(crate) struct Registry {
    slots: Vec<Option<Arc<Subscriber>>>,
    free: Vec<u32>,
    count: usize,
    any: Slots,
    exact: HashMap<Box<str>, Slots>,
    templates: HashMap<Box<str>, TemplateEntry>,
    /// Literal prefix -> templates having it.
    by_prefix: HashMap<Box<str>, Vec<Box<str>>>,
    /// Lengths of the prefixes in `by_prefix`, with how many prefixes have each.
    prefix_lengths: BTreeMap<usize, usize>,
}

/// The result of one fan-out.
#[derive(Debug, Default)]
pub(crate) struct Fanout {
    /// Subscribers whose buffer took the update.
    pub(crate) delivered: u64,
    /// Subscribers closed because their buffer was full.
    pub(crate) overflowed: u64,
    /// Events lost with them.
    pub(crate) lost: u64,
}

impl Registry {
    /// Subscribers registered.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Every registered subscriber.
    pub(crate) fn subscribers(&self) -> impl Iterator<Item = &Arc<Subscriber>> {
        self.slots.iter().flatten()
    }

    /// Registers `subscriber`; returns its slot.
    pub(crate) fn insert(&mut self, subscriber: Arc<Subscriber>) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        for selector in subscriber.selectors.iter() {
            match &**selector {
                Selector::Any => {
                    self.any.insert(slot);
                }
                Selector::Exact(topic) => {
                    self.exact.entry(topic.clone()).or_default().insert(slot);
                }
                Selector::Template(t) => {
                    let raw = t.raw();
                    if !self.templates.contains_key(raw) {
                        let prefix = t.literal_prefix();
                        // Counts templates per prefix length (removal undoes it per template).
                        *self.prefix_lengths.entry(prefix.len()).or_default() += 1;
                        self.by_prefix
                            .entry(prefix.into())
                            .or_default()
                            .push(raw.into());
                        self.templates.insert(
                            raw.into(),
                            TemplateEntry {
                                selector: selector.clone(),
                                subscribers: Slots::default(),
                                matched_seq: 0,
                            },
                        );
                    }
                    if let Some(entry) = self.templates.get_mut(raw) {
                        entry.subscribers.insert(slot);
                    }
                }
            }
        }
        self.slots[slot as usize] = Some(subscriber);
        self.count += 1;
        slot
    }

    /// Unregisters the subscriber in `slot` (if it is still `subscriber`).
    pub(crate) fn remove(&mut self, slot: u32, subscriber: &Arc<Subscriber>) -> bool {
        match self.slots.get(slot as usize) {
            Some(Some(s)) if Arc::ptr_eq(s, subscriber) => {}
            _ => return false,
        }
        for selector in subscriber.selectors.iter() {
            match &**selector {
                Selector::Any => {
                    self.any.remove(&slot);
                }
                Selector::Exact(topic) => {
                    if let Some(set) = self.exact.get_mut(&**topic) {
                        set.remove(&slot);
                        if set.is_empty() {
                            self.exact.remove(&**topic);
                        }
                    }
                }
                Selector::Template(t) => {
                    let Some(entry) = self.templates.get_mut(t.raw()) else {
                        continue;
                    };
                    entry.subscribers.remove(&slot);
                    if entry.subscribers.is_empty() {
                        self.templates.remove(t.raw());
                        let prefix = t.literal_prefix();
                        if let Some(list) = self.by_prefix.get_mut(prefix) {
                            list.retain(|r| **r != *t.raw());
                            if list.is_empty() {
                                self.by_prefix.remove(prefix);
                            }
                        }
                        if let Some(n) = self.prefix_lengths.get_mut(&prefix.len()) {
                            *n -= 1;
                            if *n == 0 {
                                self.prefix_lengths.remove(&prefix.len());
                            }
                        }
                    }
                }
            }
        }
        self.slots[slot as usize] = None;
        self.free.push(slot);
        self.count -= 1;
        true
    }

    /// Offers update `seq` to every subscriber entitled to it. Subscribers whose buffer
    /// overflows are closed and unregistered here.
    pub(crate) fn fan_out(&mut self, seq: u64, update: &Published) -> Fanout {
        let mut out = Fanout::default();
        let mut private_memo: HashMap<*const Selector, bool> = HashMap::new();
        let mut overflowed: Vec<u32> = Vec::new();
        let Registry {
            slots,
            any,
            exact,
            templates,
            by_prefix,
            prefix_lengths,
            ..
        } = self;
        let mut offer = |slot: u32, out: &mut Fanout| {
            let Some(sub) = slots.get(slot as usize).and_then(Option::as_ref) else {
                return;
            };
            if sub.last_seq.swap(seq, Ordering::Relaxed) == seq {
                return;
            }
            if update.private {
                let Some(allowed) = sub.private.as_deref() else {
                    return;
                };
                let ok = allowed.iter().any(|s| {
                    *private_memo
                        .entry(Arc::as_ptr(s))
                        .or_insert_with(|| s.matches_any(&update.topics))
                });
                if !ok {
                    return;
                }
            }
            match sub.push(&update.event) {
                Push::Queued => out.delivered += 1,
                Push::Overflow(lost) => {
                    out.overflowed += 1;
                    out.lost += lost as u64;
                    overflowed.push(slot);
                }
                Push::Closed => {}
            }
        };
        for &slot in any.iter() {
            offer(slot, &mut out);
        }
        for topic in update.topics.iter() {
            if let Some(set) = exact.get(topic.as_str()) {
                for &slot in set {
                    offer(slot, &mut out);
                }
            }
            for &len in prefix_lengths.keys() {
                if len > topic.len() {
                    break;
                }
                if !topic.is_char_boundary(len) {
                    continue;
                }
                let Some(raws) = by_prefix.get(&topic[..len]) else {
                    continue;
                };
                for raw in raws {
                    let Some(entry) = templates.get_mut(raw) else {
                        continue;
                    };
                    if entry.matched_seq == seq || !entry.selector.matches(topic) {
                        continue;
                    }
                    entry.matched_seq = seq;
                    for &slot in &entry.subscribers {
                        offer(slot, &mut out);
                    }
                }
            }
        }
        for slot in overflowed {
            if let Some(Some(sub)) = self.slots.get(slot as usize).cloned() {
                self.remove(slot, &sub);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::Update;

    fn sub(selectors: &[&str], private: Option<&[&str]>, cap: usize) -> Arc<Subscriber> {
        let compile = |v: &[&str]| {
            v.iter()
                .map(|s| Arc::new(Selector::parse(s)))
                .collect::<Vec<_>>()
        };
        Arc::new(Subscriber::new(
            "s".into(),
            compile(selectors).into(),
            private.map(|p| compile(p).into()),
            None,
            cap,
        ))
    }

    fn publish(topics: &[&str], private: bool) -> Published {
        Published::from_update(Update {
            topics: topics.iter().map(|s| s.to_string()).collect(),
            private,
            ..Update::default()
        })
    }

    #[test]
    fn index_agrees_with_the_plain_rule_and_dedupes() {
        let mut r = Registry::default();
        let subs = [
            sub(&["a", "b/{x}", "*"], None, 10),
            sub(&["b/{x}"], Some(&["b/1"]), 10),
            sub(&["c"], Some(&["*"]), 10),
            sub(&["{+any}"], None, 10),
        ];
        for s in &subs {
            r.insert(s.clone());
        }
        let updates = [
            publish(&["a", "b/1"], false),
            publish(&["b/1"], true),
            publish(&["b/2", "c"], true),
            publish(&["zzz"], false),
        ];
        for (i, u) in updates.iter().enumerate() {
            let out = r.fan_out(i as u64 + 1, u);
            let expected = subs.iter().filter(|s| s.wants(u)).count() as u64;
            assert_eq!(out.delivered, expected, "update {i}");
        }
        // Subscriber 0 (three selectors matching the first update) got it once.
        let n = |s: &Arc<Subscriber>| {
            let mut n = 0;
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            while let std::task::Poll::Ready(Some(_)) = s.poll_queue(&mut cx) {
                n += 1;
            }
            n
        };
        assert_eq!(n(&subs[0]), 2); // updates 0 and 3 (private ones need a claim)
        assert_eq!(n(&subs[1]), 2); // 0 and 1
        assert_eq!(n(&subs[2]), 1); // 2
        assert_eq!(n(&subs[3]), 2);
    }

    #[test]
    fn removal_cleans_the_index() {
        let mut r = Registry::default();
        let a = sub(&["x/{id}", "e", "*"], None, 10);
        let b = sub(&["x/{id}"], None, 10);
        let sa = r.insert(a.clone());
        let sb = r.insert(b.clone());
        assert!(r.remove(sa, &a));
        assert!(!r.remove(sa, &a));
        assert_eq!(r.fan_out(1, &publish(&["x/1"], false)).delivered, 1);
        assert!(r.remove(sb, &b));
        assert!(r.exact.is_empty() && r.templates.is_empty() && r.any.is_empty());
        assert!(r.by_prefix.is_empty() && r.prefix_lengths.is_empty());
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn a_full_buffer_closes_only_that_subscriber() {
        let mut r = Registry::default();
        let slow = sub(&["t"], None, 2);
        let fast = sub(&["t"], None, 100);
        r.insert(slow.clone());
        r.insert(fast.clone());
        let mut total = Fanout::default();
        for seq in 1..=5 {
            let out = r.fan_out(seq, &publish(&["t"], false));
            total.delivered += out.delivered;
            total.overflowed += out.overflowed;
            total.lost += out.lost;
        }
        assert_eq!(total.overflowed, 1);
        assert_eq!(total.lost, 3);
        assert_eq!(total.delivered, 2 + 5);
        assert_eq!(r.len(), 1);
        assert!(slow.close_reason().is_some());
        assert!(fast.close_reason().is_none());
    }
}
