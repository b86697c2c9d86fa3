//! The hasher of each thread's cache from series key to id.

/// A multiply-rotate hasher (8 bytes per step) for the per-thread key cache: SipHash
/// cost about a sixth of an `observe()` on 40-byte keys. Seeded per process so keys
/// cannot be precomputed to collide; the cache never holds more than the series cap.
#[derive(Clone, Copy)]
pub(super) struct FastHash(u64);

impl std::hash::Hasher for FastHash {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap());
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K);
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Final avalanche so the low bits the table uses depend on every input bit.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

#[derive(Clone, Copy)]
pub(super) struct FastHashBuilder(pub(super) u64);

impl std::hash::BuildHasher for FastHashBuilder {
    type Hasher = FastHash;
    fn build_hasher(&self) -> FastHash {
        FastHash(self.0)
    }
}

pub(super) fn process_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        h.finish()
    })
}
