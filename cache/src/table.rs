//! The shared index and everything that changes it.
//!
//! Readers walk a fixed array of bucket chains with plain atomic loads: no lock, no
//! counter, no access time written. Nodes are immutable once published; an overwrite
//! links a new node in place of the old one and retires the old one (see epoch.rs).
//!
//! Writers (store, delete, increment, eviction, reclamation) take one mutex. Memory is
//! bounded by an O(1) check of two atomic counters (live + retired bytes against the
//! limit); when full, a store evicts expired entries first (a min-heap of expiry times),
//! then the least recently used (an intrusive list over a slab, O(1) per eviction).
//! Recency comes from per-thread touch buffers merged at request end, so reads never
//! write shared memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use php_sys as sys;

use super::epoch::{self, Snapshot};
use super::value::Block;

/// What a node holds: a scalar inline, or a block.
pub(crate) enum Value {
    Scalar(sys::zval),
    Block(Box<Block>),
}

// SAFETY: a scalar zval holds no pointer; blocks are Send + Sync (value.rs).
unsafe impl Send for Value {}
// SAFETY: shared references only read a value: a scalar zval is plain data, and blocks
// are Sync (value.rs).
unsafe impl Sync for Value {}

pub(crate) struct Node {
    next: AtomicPtr<Node>,
    hash: u64,
    key: Box<[u8]>,
    /// Unix seconds after which the entry is gone; 0 = never.
    pub(crate) expires: u64,
    pub(crate) value: Value,
    /// LRU slab position and generation.
    slot: u32,
    gen: u32,
    bytes: usize,
    /// Unix seconds when this value was stored, and the store's sequence number (the
    /// order APCUIterator and apcu_cache_info list entries in).
    pub(crate) created: u64,
    pub(crate) seq: u64,
}

impl Node {
    pub(crate) fn expired(&self, now: u64) -> bool {
        self.expires != 0 && now >= self.expires
    }

    pub(crate) fn touch_id(&self) -> (u32, u32) {
        (self.slot, self.gen)
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// Bytes this entry counts against the limit.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Wall clock in seconds (TTL resolution, as APCu), from the kernel's tick-updated coarse
/// clock: every store reads it, and the precise clock cost a tenth of a small store here.
pub(crate) fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0 {
        return ts.tv_sec as u64;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Clone, Copy)]
struct Slot {
    prev: u32,
    next: u32,
    gen: u32,
    node: *mut Node,
}

const NIL: u32 = u32::MAX;

struct Retired {
    node: *mut Node,
    epoch: u64,
}

/// State only writers touch, under [`Table::writer`].
struct Writer {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    entries: usize,
    expiry: BinaryHeap<Reverse<(u64, u32, u32)>>,
    retired: Vec<Retired>,
    ops_since_reclaim: u32,
    next_seq: u64,
}

// SAFETY: the raw node pointers are owned by the table and only used under the mutex.
unsafe impl Send for Writer {}

pub(crate) struct Table {
    buckets: Box<[AtomicPtr<Node>]>,
    mask: u64,
    writer: Mutex<Writer>,
    pub(crate) limit: usize,
    pub(crate) retired_cap: usize,
    pub(crate) live_bytes: AtomicUsize,
    pub(crate) retired_bytes: AtomicUsize,
    pub(crate) entries: AtomicUsize,
    pub(crate) stores: AtomicU64,
    pub(crate) evictions: AtomicU64,
    pub(crate) expunges: AtomicU64,
    pub(crate) reclaimed: AtomicU64,
    pub(crate) full_failures: AtomicU64,
}

/// How a store treats an existing key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Overwrite,
    /// Only when absent (or expired).
    Add,
}

pub(crate) enum StoreResult {
    Stored,
    Exists,
    /// Larger than the limit even with everything else evicted.
    TooBig,
}

impl Table {
    pub(crate) fn new(limit: usize, retired_cap: usize, buckets: usize) -> Table {
        let n = buckets.next_power_of_two().max(1024);
        Table {
            buckets: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            mask: n as u64 - 1,
            writer: Mutex::new(Writer {
                slots: Vec::new(),
                free: Vec::new(),
                head: NIL,
                tail: NIL,
                entries: 0,
                expiry: BinaryHeap::new(),
                retired: Vec::new(),
                ops_since_reclaim: 0,
                next_seq: 0,
            }),
            limit,
            retired_cap,
            live_bytes: AtomicUsize::new(0),
            retired_bytes: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            stores: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            expunges: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            full_failures: AtomicU64::new(0),
        }
    }

    fn bucket(&self, hash: u64) -> &AtomicPtr<Node> {
        &self.buckets[(hash & self.mask) as usize]
    }

    /// Finds the live node for `key`. Call between `epoch::enter` and `epoch::leave`: the
    /// node stays allocated until then.
    #[inline]
    pub(crate) fn lookup(&self, hash: u64, key: &[u8]) -> Option<&Node> {
        let mut p = self.bucket(hash).load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: nodes reachable from a bucket are freed only after every thread has
            // left the cache call it was in when they were unlinked (epoch.rs); our caller
            // is inside such a call.
            let node = unsafe { &*p };
            if node.hash == hash && &*node.key == key {
                return Some(node);
            }
            p = node.next.load(Ordering::Acquire);
        }
        None
    }

    /// Whether retired memory is over `usercache.retired_limit`: fetches then copy
    /// instead of sharing, and worker scripts should restart to release what they pin.
    pub(crate) fn copying(&self) -> bool {
        self.retired_bytes.load(Ordering::Relaxed) > self.retired_cap
    }

    /// Number of index buckets (`apcu_cache_info()['num_slots']`).
    pub(crate) fn slots(&self) -> usize {
        self.buckets.len()
    }

    /// Calls `f` for every linked node, bucket by bucket (listing for apcu_cache_info and
    /// APCUIterator; never on a hot path). Call between `epoch::enter` and `epoch::leave`.
    pub(crate) fn for_each_node(&self, mut f: impl FnMut(&Node)) {
        for bucket in self.buckets.iter() {
            let mut p = bucket.load(Ordering::Acquire);
            while !p.is_null() {
                // SAFETY: nodes reachable from a bucket are freed only after every thread
                // has left the cache call it was in when they were unlinked (epoch.rs); our
                // caller is inside such a call.
                let node = unsafe { &*p };
                f(node);
                p = node.next.load(Ordering::Acquire);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Links `value` under `key`. The caller is inside a cache call.
    pub(crate) fn store(
        &self,
        hash: u64,
        key: &[u8],
        value: Value,
        ttl: u64,
        mode: Mode,
    ) -> StoreResult {
        let bytes = entry_bytes(key, &value);
        if bytes > self.limit {
            return StoreResult::TooBig;
        }
        let now = now();
        let mut w = self.lock();
        let existing = self.find_locked(hash, key);
        if mode == Mode::Add {
            if let Some((_, node)) = existing {
                // SAFETY: linked nodes are valid while we hold the writer lock.
                if !unsafe { &*node }.expired(now) {
                    return StoreResult::Exists;
                }
            }
        }
        // The replaced entry stays counted (as retired) until reclaimed: room for all of it.
        if !self.make_room(&mut w, bytes, now) {
            self.full_failures.fetch_add(1, Ordering::Relaxed);
            return StoreResult::TooBig;
        }
        let expires = if ttl == 0 { 0 } else { now + ttl };
        self.link(&mut w, hash, key, value, (expires, now), bytes);
        self.stores.fetch_add(1, Ordering::Relaxed);
        StoreResult::Stored
    }

    /// Atomically replaces the value of `key` with what `f(current)` returns (`Err` leaves
    /// it as it is). `f` sees None for an absent or expired key. None when the new value
    /// does not fit.
    pub(crate) fn update<R>(
        &self,
        hash: u64,
        key: &[u8],
        ttl: u64,
        f: impl FnOnce(Option<&Value>) -> Result<(Value, R), R>,
    ) -> Option<R> {
        let now = now();
        let mut w = self.lock();
        let existing = self.find_locked(hash, key).filter(|(_, n)| {
            // SAFETY: linked nodes are valid under the lock.
            !unsafe { &**n }.expired(now)
        });
        // SAFETY: linked nodes are valid while we hold the writer lock (`w`), which
        // outlives `current`.
        let current = existing.map(|(_, n)| unsafe { &(*n).value });
        let (value, result) = match f(current) {
            Ok(v) => v,
            Err(r) => return Some(r),
        };
        // An update keeps the entry's expiry and creation time, as APCu's in-place update.
        // SAFETY: linked nodes are valid under the writer lock, still held.
        let created = existing.map_or(now, |(_, n)| unsafe { (*n).created });
        let expires = match existing {
            // SAFETY: linked nodes are valid under the writer lock, still held.
            Some((_, n)) => unsafe { (*n).expires },
            None if ttl > 0 => now + ttl,
            None => 0,
        };
        let bytes = entry_bytes(key, &value);
        if !self.make_room(&mut w, bytes, now) {
            self.full_failures.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.link(&mut w, hash, key, value, (expires, created), bytes);
        Some(result)
    }

    /// Publishes a node for `key` with `value`, in place of the current one (retired) or
    /// at the head of its bucket. Looks the key up again: `make_room` may have evicted the
    /// entry being replaced.
    fn link(
        &self,
        w: &mut Writer,
        hash: u64,
        key: &[u8],
        value: Value,
        (expires, created): (u64, u64),
        bytes: usize,
    ) {
        let existing = self.find_locked(hash, key);
        let node = self.new_node(w, hash, key, value, (expires, created), bytes);
        match existing {
            Some((pred, old)) => {
                // SAFETY: both nodes are valid under the lock; readers see either the old
                // or the new node, and the old one's `next` stays intact until reclaimed.
                unsafe {
                    (*node)
                        .next
                        .store((*old).next.load(Ordering::Relaxed), Ordering::Relaxed);
                    pred.store(node, Ordering::Release);
                }
                self.retire(w, old);
            }
            None => {
                let head = self.bucket(hash);
                // SAFETY: the new node is ours until published by the store below.
                unsafe {
                    (*node)
                        .next
                        .store(head.load(Ordering::Relaxed), Ordering::Relaxed)
                };
                head.store(node, Ordering::Release);
                w.entries += 1;
            }
        }
        self.entries.store(w.entries, Ordering::Relaxed);
        self.live_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.maybe_reclaim(w);
    }

    /// Removes `key`; whether a live entry was removed.
    pub(crate) fn delete(&self, hash: u64, key: &[u8]) -> bool {
        let now = now();
        let mut w = self.lock();
        let Some((pred, node)) = self.find_locked(hash, key) else {
            return false;
        };
        // SAFETY: linked nodes are valid under the lock.
        let live = !unsafe { &*node }.expired(now);
        self.unlink(&mut w, pred, node);
        self.maybe_reclaim(&mut w);
        live
    }

    /// Removes every entry.
    pub(crate) fn clear(&self) {
        let mut w = self.lock();
        for b in self.buckets.iter() {
            loop {
                let p = b.load(Ordering::Relaxed);
                if p.is_null() {
                    break;
                }
                self.unlink(&mut w, b, p);
            }
        }
        w.expiry.clear();
        self.reclaim(&mut w);
    }

    /// Applies this thread's LRU touches and frees what no thread can reach. Never
    /// blocks: when another writer holds the lock, the touches wait for the next time.
    pub(crate) fn quiesce(&self, touches: &mut Vec<(u32, u32)>) {
        let Ok(mut w) = self.writer.try_lock() else {
            if touches.len() > 4096 {
                touches.clear();
            }
            return;
        };
        for &(slot, gen) in touches.iter() {
            if let Some(s) = w.slots.get(slot as usize) {
                if s.gen == gen && !s.node.is_null() {
                    lru_unlink(&mut w, slot);
                    lru_push_front(&mut w, slot);
                }
            }
        }
        touches.clear();
        if !w.retired.is_empty() {
            self.reclaim(&mut w);
        }
    }

    /// Frees every node and block. Only when no PHP thread runs (module shutdown).
    pub(crate) fn destroy(&self) {
        self.clear();
        let mut w = self.lock();
        let left = std::mem::take(&mut w.retired);
        for r in left {
            // SAFETY: no thread runs PHP any more: nothing can reach retired nodes.
            drop(unsafe { Box::from_raw(r.node) });
        }
        self.retired_bytes.store(0, Ordering::Relaxed);
    }

    // ---- writer internals (lock held) ----

    fn find_locked(&self, hash: u64, key: &[u8]) -> Option<(&AtomicPtr<Node>, *mut Node)> {
        let mut pred = self.bucket(hash);
        loop {
            let p = pred.load(Ordering::Relaxed);
            if p.is_null() {
                return None;
            }
            // SAFETY: linked nodes are valid under the writer lock.
            let node = unsafe { &*p };
            if node.hash == hash && &*node.key == key {
                return Some((pred, p));
            }
            pred = &node.next;
        }
    }

    fn new_node(
        &self,
        w: &mut Writer,
        hash: u64,
        key: &[u8],
        value: Value,
        (expires, created): (u64, u64),
        bytes: usize,
    ) -> *mut Node {
        let slot = match w.free.pop() {
            Some(s) => s,
            None => {
                w.slots.push(Slot {
                    prev: NIL,
                    next: NIL,
                    gen: 0,
                    node: std::ptr::null_mut(),
                });
                (w.slots.len() - 1) as u32
            }
        };
        let gen = w.slots[slot as usize].gen.wrapping_add(1);
        let node = Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(std::ptr::null_mut()),
            hash,
            key: key.into(),
            expires,
            value,
            slot,
            gen,
            bytes,
            created,
            seq: w.next_seq,
        }));
        w.next_seq += 1;
        let s = &mut w.slots[slot as usize];
        s.gen = gen;
        s.node = node;
        lru_push_front(w, slot);
        if expires != 0 {
            w.expiry.push(Reverse((expires, slot, gen)));
        }
        node
    }

    /// Unlinks `node` (whose predecessor link is `pred`) and retires it.
    fn unlink(&self, w: &mut Writer, pred: &AtomicPtr<Node>, node: *mut Node) {
        // SAFETY: `node` is linked and valid under the lock.
        pred.store(
            unsafe { (*node).next.load(Ordering::Relaxed) },
            Ordering::Release,
        );
        w.entries -= 1;
        self.entries.store(w.entries, Ordering::Relaxed);
        self.retire(w, node);
    }

    /// `node` is no longer reachable from the index: free it once no thread can reach it.
    fn retire(&self, w: &mut Writer, node: *mut Node) {
        // SAFETY: the node was just unlinked under the lock; we own it now.
        let n = unsafe { &*node };
        lru_unlink(w, n.slot);
        let s = &mut w.slots[n.slot as usize];
        s.node = std::ptr::null_mut();
        w.free.push(n.slot);
        self.live_bytes.fetch_sub(n.bytes, Ordering::Relaxed);
        self.retired_bytes.fetch_add(n.bytes, Ordering::Relaxed);
        w.retired.push(Retired {
            node,
            epoch: epoch::retire_epoch(),
        });
    }

    /// Reclaims in batches: each pass costs a process-wide barrier (epoch.rs), so it runs
    /// every 32 writes, or sooner when retired memory passes 1/32 of the limit. Request
    /// ends (`quiesce`) and a full cache (`make_room`) reclaim at once.
    fn maybe_reclaim(&self, w: &mut Writer) {
        w.ops_since_reclaim += 1;
        if !w.retired.is_empty()
            && (w.ops_since_reclaim >= 32
                || self.retired_bytes.load(Ordering::Relaxed) > self.limit / 32)
        {
            self.reclaim(w);
        }
    }

    /// Frees retired nodes (and their blocks) that no thread can reach.
    fn reclaim(&self, w: &mut Writer) {
        w.ops_since_reclaim = 0;
        if w.retired.is_empty() {
            return;
        }
        let snap = Snapshot::take();
        let mut freed = 0usize;
        let mut count = 0u64;
        w.retired.retain(|r| {
            // SAFETY: retired nodes stay allocated until this very check frees them.
            let node = unsafe { &*r.node };
            let readers = match &node.value {
                Value::Block(b) => b.readers.load(Ordering::Acquire),
                Value::Scalar(_) => 0,
            };
            if !snap.can_free(r.epoch, readers) {
                return true;
            }
            freed += node.bytes;
            count += 1;
            // SAFETY: no thread can reach the node or its block any more (epoch.rs).
            drop(unsafe { Box::from_raw(r.node) });
            false
        });
        self.retired_bytes.fetch_sub(freed, Ordering::Relaxed);
        self.reclaimed.fetch_add(count, Ordering::Relaxed);
    }

    /// Evicts until `extra` more bytes fit. Expired entries go first, then the least
    /// recently used. False when even an empty cache could not take it right now
    /// (retired memory still held by running requests).
    fn make_room(&self, w: &mut Writer, extra: usize, now: u64) -> bool {
        let fits = |t: &Table| {
            t.live_bytes.load(Ordering::Relaxed) + t.retired_bytes.load(Ordering::Relaxed) + extra
                <= t.limit
        };
        if fits(self) {
            return true;
        }
        self.reclaim(w);
        // Each round evicts at least the shortfall (expired entries first, then the least
        // recently used), then reclaims once: evicting moves bytes from live to retired,
        // and a reclaim pass costs a process-wide barrier, so it is paid per batch.
        while !fits(self) {
            let used = self.live_bytes.load(Ordering::Relaxed)
                + self.retired_bytes.load(Ordering::Relaxed)
                + extra;
            let mut shortfall = used.saturating_sub(self.limit);
            let mut evicted = false;
            while shortfall > 0 {
                let Some(node) = self.pop_victim(w, now) else {
                    break;
                };
                // SAFETY: the victim is linked and valid under the lock.
                shortfall = shortfall.saturating_sub(unsafe { (*node).bytes });
                self.evict(w, node);
                evicted = true;
            }
            if !evicted {
                break;
            }
            self.reclaim(w);
        }
        // Lazily deleted heap entries: rebuild when they dominate.
        if w.expiry.len() > 2 * w.entries + 1024 {
            let slots = &w.slots;
            let kept: Vec<_> = w
                .expiry
                .drain()
                .filter(|Reverse((_, slot, gen))| {
                    let s = slots[*slot as usize];
                    s.gen == *gen && !s.node.is_null()
                })
                .collect();
            w.expiry = kept.into();
        }
        self.reclaim(w);
        fits(self)
    }

    /// The next entry to evict, counted as an expunge (expired) or an eviction (least
    /// recently used); None when the cache is empty.
    fn pop_victim(&self, w: &mut Writer, now: u64) -> Option<*mut Node> {
        while let Some(&Reverse((exp, slot, gen))) = w.expiry.peek() {
            if exp > now {
                break;
            }
            w.expiry.pop();
            let s = w.slots[slot as usize];
            if s.gen == gen && !s.node.is_null() {
                self.expunges.fetch_add(1, Ordering::Relaxed);
                return Some(s.node);
            }
        }
        if w.tail == NIL {
            return None;
        }
        self.evictions.fetch_add(1, Ordering::Relaxed);
        Some(w.slots[w.tail as usize].node)
    }

    fn evict(&self, w: &mut Writer, node: *mut Node) {
        // SAFETY: the node is linked and valid under the lock.
        let (hash, key) = unsafe { ((*node).hash, &*(*node).key) };
        if let Some((pred, found)) = self.find_locked(hash, key) {
            debug_assert_eq!(found, node);
            self.unlink(w, pred, found);
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.destroy();
    }
}

fn entry_bytes(key: &[u8], value: &Value) -> usize {
    std::mem::size_of::<Node>()
        + key.len()
        + match value {
            Value::Scalar(_) => 0,
            Value::Block(b) => b.bytes,
        }
}

fn lru_unlink(w: &mut Writer, slot: u32) {
    let Slot { prev, next, .. } = w.slots[slot as usize];
    if prev == NIL && next == NIL && w.head != slot {
        return; // not linked
    }
    if prev == NIL {
        w.head = next;
    } else {
        w.slots[prev as usize].next = next;
    }
    if next == NIL {
        w.tail = prev;
    } else {
        w.slots[next as usize].prev = prev;
    }
    let s = &mut w.slots[slot as usize];
    s.prev = NIL;
    s.next = NIL;
}

fn lru_push_front(w: &mut Writer, slot: u32) {
    let old = w.head;
    {
        let s = &mut w.slots[slot as usize];
        s.prev = NIL;
        s.next = old;
    }
    if old != NIL {
        w.slots[old as usize].prev = slot;
    } else {
        w.tail = slot;
    }
    w.head = slot;
}
