//! The series registry: name + sorted tags -> series id, and per-thread shards holding
//! each thread's own sketches, counters and gauges.
//!
//! Recording never writes memory another thread writes: each thread owns a shard (its
//! cells behind its own mutex, which only a scrape ever contends for) and a private cache
//! from series key to id. The shared index is touched only the first time a thread sees
//! a series. A scrape locks each shard once and adds its cells into one accumulator per
//! series, so its cost is linear in (threads x series), never pairwise re-encoding.
//!
//! The cap on distinct series is an atomic counter checked when a series is created;
//! beyond it new series are dropped (and counted), existing ones keep recording.
//!
//! This file owns the registry itself (recording, registering, merging for a scrape);
//! series names, tags and their rules live in `registry/series.rs`, the per-thread values
//! and the snapshot in `registry/cells.rs`, the key cache's hasher in
//! `registry/fast_hash.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::proto::Kind;
use crate::sketch::{DDSketch, Mapping, DEFAULT_RELATIVE_ACCURACY};

mod cells;
mod fast_hash;
mod series;

pub use cells::{SeriesSnapshot, Snapshot, Value};
pub use series::{valid_name, valid_tag_key, Error, KindOrd, SeriesMeta, TagBuf};

use cells::{merge_cells, Cell, ShardData};
use fast_hash::{process_seed, FastHashBuilder};
use series::{canonical_key, MAX_TAG_VALUE};

/// Registry settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Relative accuracy of every distribution (0 < alpha < 1).
    pub relative_accuracy: f64,
    /// Most distinct series (name + tags); beyond it new series are dropped.
    pub max_series: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            relative_accuracy: DEFAULT_RELATIVE_ACCURACY,
            max_series: 10_000,
        }
    }
}

impl Config {
    /// Defaults overridden by `FERROPHP_METRICS_RELATIVE_ACCURACY` and
    /// `FERROPHP_METRICS_MAX_SERIES` (how php-cli and tests configure the registry; the
    /// server also accepts them as flags).
    pub fn from_env() -> Config {
        let mut c = Config::default();
        if let Some(a) = std::env::var("FERROPHP_METRICS_RELATIVE_ACCURACY")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|a| *a > 0.0 && *a < 1.0)
        {
            c.relative_accuracy = a;
        }
        if let Some(n) = std::env::var("FERROPHP_METRICS_MAX_SERIES")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            c.max_series = n;
        }
        c
    }
}

#[derive(Default)]
struct Index {
    ids: HashMap<Box<[u8]>, u32>,
    kinds: HashMap<String, Kind>,
    metas: Vec<Arc<SeriesMeta>>,
}

/// A set of series. The process has one ([`global`]); tests make their own.
pub struct Registry {
    id: usize,
    config: Config,
    mapping: Mapping,
    index: Mutex<Index>,
    series_count: AtomicUsize,
    dropped: AtomicU64,
    shards: Mutex<Vec<Arc<Mutex<ShardData>>>>,
    /// Cells of threads that exited: kept so their observations stay in the totals.
    retired: Mutex<ShardData>,
    started: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a shard leaves plain numbers behind: keep using them.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A series resolved once (see [`Registry::series`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesId {
    id: u32,
    kind: Kind,
}

/// What one call records.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// Adds a value to a distribution.
    Observe(f64),
    /// Increments a counter (by a non-negative amount).
    Add(f64),
    /// Sets a gauge.
    Set(f64),
}

impl Op {
    fn kind(self) -> Kind {
        match self {
            Op::Observe(_) => Kind::Distribution,
            Op::Add(_) => Kind::Counter,
            Op::Set(_) => Kind::Gauge,
        }
    }
}

/// A thread's view of one registry.
struct Local {
    registry: Arc<Registry>,
    shard: Arc<Mutex<ShardData>>,
    cache: HashMap<Box<[u8]>, (u32, Kind), FastHashBuilder>,
    key: Vec<u8>,
    order: Vec<u32>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.registry.retire(&self.shard);
    }
}

thread_local! {
    /// Usually one entry (the global registry); tests add more.
    static LOCALS: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

impl Registry {
    /// An empty registry; an invalid relative accuracy falls back to the default.
    pub fn new(config: Config) -> Arc<Registry> {
        let mapping = Mapping::new(config.relative_accuracy)
            .unwrap_or_else(|| Mapping::new(DEFAULT_RELATIVE_ACCURACY).unwrap());
        Arc::new(Registry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            config,
            mapping,
            index: Mutex::new(Index::default()),
            series_count: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            shards: Mutex::new(Vec::new()),
            retired: Mutex::new(ShardData::default()),
            started: Instant::now(),
        })
    }

    /// The settings it was made with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The mapping every distribution of this registry uses.
    pub fn mapping(&self) -> Mapping {
        self.mapping
    }

    /// Distinct series so far (O(1)).
    pub fn series_count(&self) -> usize {
        self.series_count.load(Ordering::Relaxed)
    }

    /// Records dropped by the series cap so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Number of live thread shards.
    pub fn shard_count(&self) -> usize {
        lock(&self.shards).len()
    }

    fn with_local<R>(self: &Arc<Self>, f: impl FnOnce(&mut Local) -> R) -> R {
        LOCALS.with(|cell| {
            let mut locals = cell.borrow_mut();
            let pos = match locals.iter().position(|l| l.registry.id == self.id) {
                Some(p) => p,
                None => {
                    let shard = Arc::new(Mutex::new(ShardData::default()));
                    lock(&self.shards).push(shard.clone());
                    locals.push(Local {
                        registry: self.clone(),
                        shard,
                        cache: HashMap::with_hasher(FastHashBuilder(process_seed())),
                        key: Vec::with_capacity(128),
                        order: Vec::with_capacity(8),
                    });
                    locals.len() - 1
                }
            };
            f(&mut locals[pos])
        })
    }

    /// Records `op` into series `name` + `tags` on the calling thread's shard. Ok(false)
    /// when the series cap dropped it.
    pub fn record(self: &Arc<Self>, name: &[u8], tags: &TagBuf, op: Op) -> Result<bool, Error> {
        let v = match op {
            Op::Observe(v) | Op::Add(v) | Op::Set(v) => v,
        };
        if !v.is_finite() {
            return Err(Error::NotFinite(v));
        }
        if let Op::Add(v) = op {
            if v < 0.0 {
                return Err(Error::NegativeIncrement(v));
            }
        }
        let kind = op.kind();
        self.with_local(|local| {
            canonical_key(&mut local.key, &mut local.order, name, tags);
            let id = match local.cache.get(local.key.as_slice()) {
                Some(&(id, k)) if k == kind => id,
                Some(&(_, existing)) => {
                    return Err(Error::KindMismatch {
                        name: String::from_utf8_lossy(name).into_owned(),
                        existing,
                        wanted: kind,
                    })
                }
                None => match self.register(&local.key, &local.order, name, tags, kind)? {
                    Some(id) => {
                        local
                            .cache
                            .insert(local.key.clone().into_boxed_slice(), (id, kind));
                        id
                    }
                    None => return Ok(false),
                },
            };
            let mut shard = lock(&local.shard);
            self.apply(&mut shard, id, op);
            Ok(true)
        })
    }

    /// Resolves a series once so that hot callers (the server's per-request latency)
    /// record by id, skipping key building and hashing. None when the cap dropped it.
    pub fn series(
        self: &Arc<Self>,
        name: &[u8],
        tags: &TagBuf,
        kind: Kind,
    ) -> Result<Option<SeriesId>, Error> {
        let mut key = Vec::new();
        let mut order = Vec::new();
        canonical_key(&mut key, &mut order, name, tags);
        Ok(self
            .register(&key, &order, name, tags, kind)?
            .map(|id| SeriesId { id, kind }))
    }

    /// Records into a series resolved by [`Registry::series`]. An `op` of another kind
    /// than the series' is ignored (a programming error, caught in tests).
    #[inline]
    pub fn record_series(self: &Arc<Self>, series: SeriesId, op: Op) {
        debug_assert_eq!(op.kind(), series.kind);
        if op.kind() != series.kind {
            return;
        }
        self.with_local(|local| {
            let mut shard = lock(&local.shard);
            self.apply(&mut shard, series.id, op);
        })
    }

    #[inline]
    fn apply(&self, shard: &mut ShardData, id: u32, op: Op) {
        let idx = id as usize;
        if shard.cells.len() <= idx {
            shard.cells.resize_with(idx + 1, || None);
        }
        let cell = &mut shard.cells[idx];
        match (cell, op) {
            (Some(Cell::Dist(s)), Op::Observe(v)) => s.add(v),
            (Some(Cell::Counter(c)), Op::Add(v)) => *c += v,
            (Some(Cell::Gauge(g, at)), Op::Set(v)) => {
                *g = v;
                *at = self.started.elapsed().as_nanos() as u64;
            }
            (slot, op) => {
                *slot = Some(match op {
                    Op::Observe(v) => {
                        let mut s = DDSketch::new(self.mapping);
                        s.add(v);
                        Cell::Dist(Box::new(s))
                    }
                    Op::Add(v) => Cell::Counter(v),
                    Op::Set(v) => Cell::Gauge(v, self.started.elapsed().as_nanos() as u64),
                })
            }
        }
    }

    /// First sighting of a key on this thread: find or create the series.
    #[cold]
    fn register(
        &self,
        key: &[u8],
        order: &[u32],
        name: &[u8],
        tags: &TagBuf,
        kind: Kind,
    ) -> Result<Option<u32>, Error> {
        let mut index = lock(&self.index);
        if let Some(&id) = index.ids.get(key) {
            let existing = index.metas[id as usize].kind();
            if existing != kind {
                return Err(Error::KindMismatch {
                    name: String::from_utf8_lossy(name).into_owned(),
                    existing,
                    wanted: kind,
                });
            }
            return Ok(Some(id));
        }
        let name_s = match std::str::from_utf8(name) {
            Ok(n) if valid_name(name) => n,
            _ => {
                return Err(Error::InvalidName(
                    String::from_utf8_lossy(name).into_owned(),
                ))
            }
        };
        let mut pairs = Vec::with_capacity(order.len());
        let mut prev: Option<&[u8]> = None;
        for &i in order {
            let k = tags.key(i as usize);
            let v = tags.value(i as usize);
            if !valid_tag_key(k) {
                return Err(Error::InvalidTagKey(
                    String::from_utf8_lossy(k).into_owned(),
                ));
            }
            if prev == Some(k) {
                return Err(Error::DuplicateTag(String::from_utf8_lossy(k).into_owned()));
            }
            prev = Some(k);
            if v.len() > MAX_TAG_VALUE {
                return Err(Error::TagValueTooLong(
                    String::from_utf8_lossy(k).into_owned(),
                ));
            }
            pairs.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ));
        }
        if let Some(&existing) = index.kinds.get(name_s) {
            if existing != kind {
                return Err(Error::KindMismatch {
                    name: name_s.to_owned(),
                    existing,
                    wanted: kind,
                });
            }
        }
        // The O(1) cap: one atomic read, never a count of the index.
        if self.series_count.load(Ordering::Relaxed) >= self.config.max_series {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let id = index.metas.len() as u32;
        index.metas.push(Arc::new(SeriesMeta {
            name: name_s.to_owned(),
            tags: pairs,
            kind: KindOrd(kind as u8),
        }));
        index.ids.insert(key.into(), id);
        index.kinds.insert(name_s.to_owned(), kind);
        self.series_count.fetch_add(1, Ordering::Relaxed);
        Ok(Some(id))
    }

    /// The id of an existing series.
    fn lookup(&self, name: &[u8], tags: &TagBuf) -> Option<u32> {
        let mut key = Vec::new();
        let mut order = Vec::new();
        canonical_key(&mut key, &mut order, name, tags);
        lock(&self.index).ids.get(key.as_slice()).copied()
    }

    /// A thread that exits hands its cells to the retired accumulator.
    fn retire(&self, shard: &Arc<Mutex<ShardData>>) {
        lock(&self.shards).retain(|s| !Arc::ptr_eq(s, shard));
        let data = std::mem::take(&mut *lock(shard));
        let mut retired = lock(&self.retired);
        merge_cells(&mut retired.cells, &data.cells);
    }

    /// One series merged across threads (None when unknown or not a distribution).
    pub fn distribution(&self, name: &[u8], tags: &TagBuf) -> Option<DDSketch> {
        let id = self.lookup(name, tags)? as usize;
        let mut acc: Option<Cell> = None;
        let shards: Vec<_> = lock(&self.shards).clone();
        for s in shards.iter().map(|s| lock(s)) {
            if let Some(Some(c)) = s.cells.get(id) {
                c.merge_into(&mut acc);
            }
        }
        if let Some(Some(c)) = lock(&self.retired).cells.get(id) {
            c.merge_into(&mut acc);
        }
        match acc {
            Some(Cell::Dist(s)) => Some(*s),
            _ => None,
        }
    }

    /// Every series merged across threads: each shard locked once, each cell added once.
    pub fn snapshot(&self) -> Snapshot {
        let metas: Vec<Arc<SeriesMeta>> = lock(&self.index).metas.clone();
        let mut acc: Vec<Option<Cell>> = vec![None; metas.len()];
        let shards: Vec<_> = lock(&self.shards).clone();
        for s in &shards {
            let data = lock(s);
            merge_cells(&mut acc, &data.cells);
        }
        merge_cells(&mut acc, &lock(&self.retired).cells);
        let mut series: Vec<SeriesSnapshot> = acc
            .into_iter()
            .enumerate()
            .filter_map(|(id, c)| {
                let value = match c? {
                    Cell::Dist(s) => Value::Distribution(*s),
                    Cell::Counter(v) => Value::Counter(v),
                    Cell::Gauge(v, _) => Value::Gauge(v),
                };
                Some(SeriesSnapshot {
                    id: id as u32,
                    meta: metas.get(id)?.clone(),
                    value,
                })
            })
            .collect();
        series.sort_by(|a, b| a.meta.cmp(&b.meta));
        Snapshot {
            series,
            series_count: self.series_count(),
            dropped: self.dropped(),
        }
    }
}

/// The process-wide registry (configured once by [`configure`], else from the
/// environment at first use).
pub fn global() -> &'static Arc<Registry> {
    GLOBAL.get_or_init(|| Registry::new(Config::from_env()))
}

static GLOBAL: std::sync::OnceLock<Arc<Registry>> = std::sync::OnceLock::new();

/// Sets the global registry's configuration; false when it was already in use.
pub fn configure(config: Config) -> bool {
    GLOBAL.set(Registry::new(config)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> TagBuf {
        let mut t = TagBuf::new();
        for (k, v) in pairs {
            t.push(k.as_bytes(), v.as_bytes());
        }
        t
    }

    #[test]
    fn tag_order_does_not_matter() {
        let r = Registry::new(Config::default());
        r.record(b"a", &tags(&[("x", "1"), ("y", "2")]), Op::Observe(1.0))
            .unwrap();
        r.record(b"a", &tags(&[("y", "2"), ("x", "1")]), Op::Observe(2.0))
            .unwrap();
        assert_eq!(r.series_count(), 1);
        let s = r
            .distribution(b"a", &tags(&[("x", "1"), ("y", "2")]))
            .unwrap();
        assert_eq!(s.count(), 2.0);
    }

    #[test]
    fn cap_drops_new_series_only() {
        let r = Registry::new(Config {
            max_series: 2,
            ..Config::default()
        });
        let none = TagBuf::new();
        assert!(r.record(b"a", &none, Op::Add(1.0)).unwrap());
        assert!(r.record(b"b", &none, Op::Add(1.0)).unwrap());
        assert!(!r.record(b"c", &none, Op::Add(1.0)).unwrap());
        assert!(r.record(b"a", &none, Op::Add(1.0)).unwrap());
        assert_eq!(r.dropped(), 1);
        assert_eq!(r.series_count(), 2);
    }

    #[test]
    fn validation() {
        let r = Registry::new(Config::default());
        let none = TagBuf::new();
        assert!(matches!(
            r.record(b"1abc", &none, Op::Observe(1.0)),
            Err(Error::InvalidName(_))
        ));
        assert!(matches!(
            r.record(b"a-b", &none, Op::Observe(1.0)),
            Err(Error::InvalidName(_))
        ));
        assert!(matches!(
            r.record(b"ok", &none, Op::Observe(f64::NAN)),
            Err(Error::NotFinite(_))
        ));
        assert!(matches!(
            r.record(b"ok", &tags(&[("bad-key", "v")]), Op::Observe(1.0)),
            Err(Error::InvalidTagKey(_))
        ));
        assert!(matches!(
            r.record(b"ok", &tags(&[("k", "1"), ("k", "2")]), Op::Observe(1.0)),
            Err(Error::DuplicateTag(_))
        ));
        r.record(b"ok", &none, Op::Observe(1.0)).unwrap();
        assert!(matches!(
            r.record(b"ok", &none, Op::Add(1.0)),
            Err(Error::KindMismatch { .. })
        ));
        assert!(matches!(
            r.record(b"ok", &tags(&[("k", "v")]), Op::Set(1.0)),
            Err(Error::KindMismatch { .. })
        ));
    }

    #[test]
    fn threads_merge_and_exited_threads_stay_counted() {
        let r = Registry::new(Config::default());
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let none = TagBuf::new();
                    for i in 0..1000 {
                        r.record(b"lat", &none, Op::Observe((t * 1000 + i + 1) as f64))
                            .unwrap();
                        r.record(b"hits", &none, Op::Add(1.0)).unwrap();
                    }
                    r.record(b"g", &none, Op::Set(t as f64)).unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.shard_count(), 0);
        let snap = r.snapshot();
        let by_name = |n: &str| {
            snap.series
                .iter()
                .find(|s| s.meta.name == n)
                .unwrap()
                .value
                .clone()
        };
        match by_name("lat") {
            Value::Distribution(s) => {
                assert_eq!(s.count(), 4000.0);
                assert_eq!(s.sum(), (1..=4000).sum::<u64>() as f64);
            }
            v => panic!("{v:?}"),
        }
        assert_eq!(by_name("hits"), Value::Counter(4000.0));
    }
}
