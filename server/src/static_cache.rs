//! The in-memory content cache of hot static files: whole bodies as shared [`Bytes`], so a
//! cached file is answered without open, pread or a copy; the socket write reads the
//! shared bytes (rustls and h2 read them in user space, which is safe: they are ours, not
//! a mapping of the file).
//!
//! # Never stale
//!
//! An entry is keyed by the path the bytes were read from and carries the identity they
//! were read with: device, inode, size, mtime and ctime with nanoseconds. Every request
//! still stats the path (the stat `static_files` makes anyway to check it is a
//! regular file), and only an identical identity is a hit. A rename over the file
//! changes the inode; a rewrite in place, even to the same size, changes ctime (which no
//! one can set back, unlike mtime); a deleted file fails the stat. Anything else is a
//! miss, which reads the file afresh and replaces the entry.
//!
//! That holds only if two versions of a file can never share a ctime. The kernel stamps
//! ctime from a clock that advances in ticks (a few ms; a whole second on filesystems
//! with second granularity, two on FAT), so a second write in the same tick as the one
//! we cached would go unseen. (Linux 6.13+ stamps a fine-grained ctime after a stat on
//! ext4, xfs, btrfs and tmpfs, which closes this, but not older kernels or other
//! filesystems.) Hence [`StaticCache::admit`] refuses a file whose ctime is not at least
//! [`SETTLE`] older than the clock read before its stat: any later write is then stamped
//! with a later ctime. A file changed that recently is served by the streaming path, as
//! it would be without the cache; it is cached once it has settled. The bytes are read
//! between two stats of the open handle and cached only if both agree, so a write during
//! the read is not cached either.
//!
//! # Bounds
//!
//! Total bytes (`--static-cache-mb`, [`DEFAULT_MB`]) and one file's bytes (a quarter of
//! the total, at most [`MAX_FILE`]): larger files stream as before. The map is
//! `quick_cache`: sharded, a scan-resistant Clock-PRO variant weighted by bytes (a burst
//! of one-off files does not flush the hot ones), a hit costs a shard's read lock and
//! bumps the entry's small use counter until it saturates; no background work, and
//! three crates new to the lock file (moka's expiry, listeners and per-read bookkeeping
//! queues are unused here and cost more crates). It refuses an entry heavier than 97%
//! of a shard, so the shard count is chosen to keep each shard above the per-file
//! maximum.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use bytes::Bytes;

/// Cache size when `--static-cache-mb` is not given, in MiB.
pub(crate) const DEFAULT_MB: u64 = 64;

/// The largest file cached whatever the total (a quarter of the total below 16 MiB).
pub(crate) const MAX_FILE: u64 = 4 * 1024 * 1024;

/// How long a file must have been left unchanged (by ctime) before it is cached: above
/// the coarsest timestamp granularity of common filesystems (FAT: 2 s).
const SETTLE: Duration = Duration::from_millis(2100);

/// Roughly what an entry costs besides its body (map slot, key, identity).
const ENTRY_OVERHEAD: u64 = 256;

/// What the cached bytes were read with; any difference means the file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    pub(crate) fn of(meta: &Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What the cache has for a path.
pub(crate) enum Lookup {
    /// The bytes of the file as stat'ed.
    Hit(Bytes),
    /// Bytes of another version of the file.
    Stale,
    Absent,
}

#[derive(Clone)]
struct Entry {
    identity: Identity,
    bytes: Bytes,
}

#[derive(Clone)]
struct Weigher;

impl quick_cache::Weighter<PathBuf, Entry> for Weigher {
    fn weight(&self, key: &PathBuf, entry: &Entry) -> u64 {
        entry.bytes.len() as u64 + key.as_os_str().len() as u64 + ENTRY_OVERHEAD
    }
}

/// The bounded map, its per-file limit, and how its lookups went.
pub(crate) struct StaticCache {
    map: quick_cache::sync::Cache<PathBuf, Entry, Weigher>,
    max_file: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    stale: AtomicU64,
}

/// What the cache holds and how its lookups went since start (the `/metrics` figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stats {
    pub hits: u64,
    /// Lookups that found no entry for the path.
    pub misses: u64,
    /// Lookups that found an entry for a file that has changed since.
    pub stale: u64,
    pub entries: u64,
    /// What the entries weigh: their bodies plus a small overhead each.
    pub bytes: u64,
}

impl StaticCache {
    /// A cache of at most `total` bytes; None when `total` is 0 (disabled).
    pub(crate) fn new(total: u64) -> Option<StaticCache> {
        if total == 0 {
            return None;
        }
        let max_file = (total / 4).min(MAX_FILE);
        // Powers of two (quick_cache rounds up), each shard at least 1.25 x max_file + an
        // entry's overhead, at most 16 (less lock contention buys little beyond that).
        let per_shard_min = (max_file + ENTRY_OVERHEAD + 4096) * 5 / 4;
        let mut shards = 16usize;
        while shards > 1 && total / (shards as u64) < per_shard_min {
            shards /= 2;
        }
        let options = quick_cache::OptionsBuilder::new()
            .shards(shards)
            // Only sizes the slot tables; assets of ~32 KiB on average.
            .estimated_items_capacity(((total / (32 * 1024)) as usize).clamp(64, 65_536))
            .weight_capacity(total)
            .build()
            .expect("every option is set");
        let map = quick_cache::sync::Cache::with_options(
            options,
            Weigher,
            Default::default(),
            Default::default(),
        );
        Some(StaticCache {
            map,
            max_file,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stale: AtomicU64::new(0),
        })
    }

    /// The cached body of `path` if it was read with exactly the identity `meta` shows now.
    pub(crate) fn lookup(&self, path: &Path, meta: &Metadata) -> Lookup {
        let (lookup, counter) = match self.map.get(path) {
            None => (Lookup::Absent, &self.misses),
            Some(entry) if entry.identity == Identity::of(meta) => {
                (Lookup::Hit(entry.bytes), &self.hits)
            }
            Some(_) => (Lookup::Stale, &self.stale),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        lookup
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            entries: self.map.len() as u64,
            bytes: self.map.weight(),
        }
    }

    /// Whether a file of this size is small enough to be cached.
    pub(crate) fn fits(&self, meta: &Metadata) -> bool {
        meta.size() <= self.max_file
    }

    /// Whether a file with this metadata (from its open handle, taken after the clock
    /// read `now`) may be cached: small enough, and settled (see the module doc).
    pub(crate) fn admit(&self, meta: &Metadata, now: SystemTime) -> bool {
        if !self.fits(meta) {
            return false;
        }
        let ctime = SystemTime::UNIX_EPOCH
            .checked_add(Duration::new(
                meta.ctime().max(0) as u64,
                meta.ctime_nsec().clamp(0, 999_999_999) as u32,
            ))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        now.duration_since(ctime).is_ok_and(|age| age >= SETTLE)
    }

    /// Stores `bytes`, read from `path` with `identity`, replacing any older entry.
    pub(crate) fn insert(&self, path: &Path, identity: Identity, bytes: Bytes) {
        self.map.insert(path.to_owned(), Entry { identity, bytes });
    }

    /// Drops the entry of `path` (a file that is gone or no longer cacheable).
    pub(crate) fn remove(&self, path: &Path) {
        self.map.remove(path);
    }

    #[cfg(test)]
    pub(crate) fn weight(&self) -> u64 {
        self.stats().bytes
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, path: &Path) -> bool {
        self.map.contains_key(path)
    }
}

static CACHE: OnceLock<Option<StaticCache>> = OnceLock::new();

/// Sets the process's cache size in MiB (0 disables it). The first call wins (a process
/// serves one configuration); until one is made, [`DEFAULT_MB`] applies.
pub(crate) fn configure(mb: u64) {
    let _ = CACHE.set(StaticCache::new(mb.saturating_mul(1024 * 1024)));
}

/// The process's cache, None when disabled.
pub(crate) fn cache() -> Option<&'static StaticCache> {
    CACHE
        .get_or_init(|| StaticCache::new(DEFAULT_MB * 1024 * 1024))
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_total() {
        assert!(StaticCache::new(0).is_none());
        let c = StaticCache::new(64 << 20).unwrap();
        assert_eq!(c.max_file, MAX_FILE);
        // Every shard must accept a file of the per-file maximum.
        assert!(c.map.shard_capacity() * 97 / 100 >= MAX_FILE + 4096);
        let small = StaticCache::new(1 << 20).unwrap();
        assert_eq!(small.max_file, 256 << 10);
        assert!(small.map.shard_capacity() * 97 / 100 >= small.max_file + 4096);
    }

    #[test]
    fn full_sized_entries_are_kept_and_the_total_is_bounded() {
        let c = StaticCache::new(16 << 20).unwrap();
        let meta = std::fs::metadata("/").unwrap();
        let id = Identity::of(&meta);
        let body = Bytes::from(vec![7u8; c.max_file as usize]);
        c.insert(Path::new("/a"), id, body.clone());
        assert!(c.contains(Path::new("/a")), "a file of max_file bytes fits");
        for i in 0..32 {
            c.insert(Path::new(&format!("/f{i}")), id, body.clone());
        }
        assert!(c.weight() <= 16 << 20, "{} bytes held", c.weight());
    }
}
