//! New trace and span ids: a per-thread wyrand generator seeded from the standard
//! library's per-process random keys, so making an id is a few arithmetic operations and
//! no system call or lock. Ids are random, not secret (W3C Trace Context asks for
//! uniqueness, which 64 and 128 random bits give).

use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};

use crate::context::{SpanId, TraceId};

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

/// A seed no other thread or process shares: `RandomState`'s keys come from the OS's
/// randomness, and the thread's id and the time set threads of one process apart.
fn seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    std::thread::current().id().hash(&mut h);
    h.finish()
}

use std::hash::Hash;

/// wyrand (Wang Yi's generator): passes BigCrush and PractRand, one multiply per value.
fn next_u64() -> u64 {
    STATE.with(|s| {
        let state = s.get().wrapping_add(0xa076_1d64_78bd_642f);
        s.set(state);
        let t = (state as u128).wrapping_mul((state ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// A random, valid (non-zero) trace id.
pub fn new_trace_id() -> TraceId {
    loop {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&next_u64().to_ne_bytes());
        id[8..].copy_from_slice(&next_u64().to_ne_bytes());
        let id = TraceId(id);
        if id.is_valid() {
            return id;
        }
    }
}

/// A random, valid (non-zero) span id.
pub fn new_span_id() -> SpanId {
    loop {
        let id = SpanId(next_u64().to_ne_bytes());
        if id.is_valid() {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_valid_and_do_not_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            assert!(seen.insert(new_span_id()));
            assert!(new_trace_id().is_valid());
        }
        // Two threads do not produce the same sequence.
        let other = std::thread::spawn(|| (0..100).map(|_| new_span_id()).collect::<Vec<_>>())
            .join()
            .unwrap();
        assert!(other.iter().all(|id| !seen.contains(id)));
    }
}
