//! Entry points for the cache's fuzz targets (`fuzz/`, reached through
//! `worker::fuzzing`) and their stable replay tests (`worker/tests/fuzz_replay.rs`): each
//! takes raw fuzzer bytes, drives one pure-Rust part of the cache and panics when a
//! property does not hold. Nothing here needs a running PHP engine; not part of the
//! supported API.
//!
//! - [`string_arena`]: the string arena (`arena.rs`): every allocation aligned, inside
//!   its chunk, disjoint from every other, and intact until the arena drops.
//! - [`cache_table`]: the index (`table.rs`) with scalar values against a `HashMap`
//!   model: store, add, update (as `inc`), delete, clear, lookups, forced hash
//!   collisions, and, with a small memory limit, eviction.

use std::collections::HashMap;

use crate::arena::StringArena;
use crate::epoch;
use crate::table::{Mode, StoreResult, Table, Value};
use crate::zv;

/// Reads the fuzzer's bytes front to back; zeros once they run out. (The worker's own
/// targets read their input with it too.)
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }
    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Allocates a sequence of sizes read from `data` (small, around chunk boundaries, and
/// dedicated big ones), fills each with its own byte pattern, and checks alignment,
/// disjointness and that every pattern survives all later allocations.
pub fn string_arena(data: &[u8]) {
    let mut input = Bytes(data);
    let mut arena = StringArena::default();
    let mut blocks: Vec<(usize, usize, u8)> = Vec::new();
    let mut total = 0usize;
    while !input.is_empty() && blocks.len() < 4096 && total < 4 << 20 {
        let kind = input.u8();
        let raw = usize::from(input.u16());
        let size = match kind % 8 {
            // Small strings.
            0..=3 => (raw % 1024 + 1).next_multiple_of(StringArena::ALIGN),
            // Around the first chunk and the dedicated threshold (half the max chunk).
            4 | 5 => [512usize, 1024, 32 * 1024, 64 * 1024][raw % 4]
                .saturating_add_signed((raw >> 2) as isize % 64 - 32)
                .max(1)
                .next_multiple_of(StringArena::ALIGN),
            // Up to a little over the max chunk.
            6 => (raw % (70 * 1024) + 1).next_multiple_of(StringArena::ALIGN),
            // Anything up to 1 MiB.
            _ => ((raw << 4) % (1 << 20) + 1).next_multiple_of(StringArena::ALIGN),
        };
        let ptr = arena.alloc(size);
        let addr = ptr.as_ptr() as usize;
        assert_eq!(addr % StringArena::ALIGN, 0, "misaligned allocation");
        let tag = blocks.len() as u8 ^ kind;
        // SAFETY: the arena hands out `size` writable bytes at `ptr`.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), tag, size) };
        blocks.push((addr, size, tag));
        total += size;
    }
    assert!(
        arena.allocated() >= total,
        "arena counts less than it handed out"
    );
    let mut sorted = blocks.clone();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping allocations {w:?}");
    }
    for &(addr, size, tag) in &blocks {
        // SAFETY: still inside a live chunk of `arena`.
        let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, size) };
        assert!(bytes.iter().all(|&b| b == tag), "allocation overwritten");
    }
}

/// A key from a small alphabet (so keys repeat) and its hash: a deliberately weak one,
/// so that many keys share a bucket and the table must compare key bytes.
fn key_and_hash(input: &mut Bytes<'_>) -> (Vec<u8>, u64) {
    let len = input.u8() % 6;
    let key: Vec<u8> = (0..len)
        .map(|_| b"ab\0\xff"[usize::from(input.u8() % 4)])
        .collect();
    let hash = key
        .iter()
        .fold(len as u64, |h, &b| h.wrapping_add(u64::from(b)))
        % 7;
    (key, hash)
}

fn lookup_long(table: &Table, hash: u64, key: &[u8]) -> Option<i64> {
    epoch::with_local(|local| {
        epoch::enter(local);
        let found = table.lookup(hash, key).map(|node| {
            assert_eq!(node.key(), key, "lookup returned another key");
            match &node.value {
                // SAFETY: the fuzz table only ever holds longs.
                Value::Scalar(z) => unsafe { z.value.lval },
                Value::Block(_) => panic!("a block in a scalar-only table"),
            }
        });
        epoch::leave(local);
        found
    })
}

/// Operations read from `data` on a fresh [`Table`], checked against a `HashMap`. The
/// first byte picks the memory limit: large (nothing is evicted: the table must agree
/// with the model exactly) or small (entries may vanish, but a value found is always the
/// last one stored under that key, and the limit holds).
pub fn cache_table(data: &[u8]) {
    let mut input = Bytes(data);
    let small = input.u8() % 2 == 1;
    let limit = if small {
        4096 + usize::from(input.u16())
    } else {
        256 << 20
    };
    let table = Table::new(limit, limit / 4, 0);
    let mut model: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut ops = 0;
    while !input.is_empty() && ops < 20_000 {
        ops += 1;
        let op = input.u8() % 7;
        let (key, hash) = key_and_hash(&mut input);
        let v = i64::from(input.u16() as i16);
        epoch::with_local(epoch::enter);
        match op {
            0 | 1 => {
                let mode = if op == 0 { Mode::Overwrite } else { Mode::Add };
                let present = lookup_long(&table, hash, &key).is_some();
                let r = table.store(hash, &key, Value::Scalar(zv::long(v)), 0, mode);
                match r {
                    StoreResult::Stored => {
                        assert!(mode == Mode::Overwrite || !present, "add over a live key");
                        model.insert(key.clone(), v);
                    }
                    StoreResult::Exists => {
                        assert!(mode == Mode::Add && present, "Exists without a live key")
                    }
                    StoreResult::TooBig => assert!(small, "TooBig under a 256 MiB limit"),
                }
            }
            2 => {
                let removed = table.delete(hash, &key);
                let modelled = model.remove(&key).is_some();
                if small {
                    assert!(!removed || modelled, "deleted a key never stored");
                } else {
                    assert_eq!(removed, modelled, "delete disagrees with the model");
                }
            }
            3 => {
                // `inc`: what ops::add_to does.
                let r = table.update(hash, &key, 0, |cur| match cur {
                    Some(Value::Scalar(z)) => {
                        // SAFETY: the fuzz table only ever holds longs, whose value is
                        // lval.
                        let new = unsafe { z.value.lval }.wrapping_add(v);
                        Ok((Value::Scalar(zv::long(new)), new))
                    }
                    Some(Value::Block(_)) => Err(0),
                    None => Ok((Value::Scalar(zv::long(v)), v)),
                });
                match r {
                    Some(new) => {
                        let old = if small {
                            None
                        } else {
                            model.get(&key).copied()
                        };
                        if !small {
                            assert_eq!(new, old.unwrap_or(0).wrapping_add(v), "inc result");
                        }
                        model.insert(key.clone(), new);
                    }
                    None => assert!(small, "update failed under a 256 MiB limit"),
                }
            }
            4 if v % 16 == 0 => {
                table.clear();
                model.clear();
            }
            _ => {}
        }
        let found = lookup_long(&table, hash, &key);
        match (found, model.get(&key)) {
            (Some(f), Some(&m)) => assert_eq!(f, m, "lookup disagrees with the model"),
            (Some(f), None) => panic!("found {f} under a key the model does not hold"),
            (None, Some(_)) if !small => panic!("lost a key without eviction"),
            _ => {}
        }
        epoch::with_local(epoch::leave);
        let live = table.live_bytes.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            !small || live <= limit,
            "live bytes {live} over the limit {limit}"
        );
    }
    if !small {
        assert_eq!(
            table.entries.load(std::sync::atomic::Ordering::Relaxed),
            model.len(),
            "entry count"
        );
        for (key, &v) in &model {
            let hash = key
                .iter()
                .fold(key.len() as u64, |h, &b| h.wrapping_add(u64::from(b)))
                % 7;
            assert_eq!(lookup_long(&table, hash, key), Some(v), "final contents");
        }
    }
}
