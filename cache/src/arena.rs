//! The memory behind a stored block's strings: a few chunks carved up in order instead of
//! one allocation per string. The strings made in it are permanent to the engine (never
//! freed or refcounted by PHP), so they all go at once when the arena drops with its
//! block.
//!
//! This file is plain Rust (no PHP): what it hands out is checked by unit tests with
//! generated sizes around every chunk boundary, and the same tests run under valgrind
//! (`valgrind_runs_clean`), which would see any write outside a chunk.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Chunks carved for strings: the first of a block is exactly sized (for a string value
/// it is the whole value), big ones get their own, the rest share doubling chunks.
pub(crate) struct StringArena {
    chunks: Vec<(NonNull<u8>, Layout)>,
    /// Where the next carved allocation goes, and how many bytes of that chunk are left.
    next: *mut u8,
    left: usize,
    /// Size of the last shared chunk (the next one doubles it).
    carving: usize,
    /// Bytes of every chunk, kept as they are made (what the memory limit counts).
    allocated: usize,
}

impl Default for StringArena {
    fn default() -> StringArena {
        StringArena {
            chunks: Vec::new(),
            next: std::ptr::null_mut(),
            left: 0,
            carving: 0,
            allocated: 0,
        }
    }
}

impl StringArena {
    /// Alignment of every allocation (a `zend_string` needs 8).
    pub(crate) const ALIGN: usize = 8;
    const FIRST_CHUNK: usize = 512;
    const MAX_CHUNK: usize = 64 * 1024;

    /// `size` writable bytes aligned to [`Self::ALIGN`], alive as long as the arena.
    /// `size` must be a non-zero multiple of the alignment.
    pub(crate) fn alloc(&mut self, size: usize) -> NonNull<u8> {
        assert!(
            size > 0 && size.is_multiple_of(Self::ALIGN),
            "arena size {size} not a multiple of 8"
        );
        if size > self.left {
            let dedicated = self.chunks.is_empty() || size > Self::MAX_CHUNK / 2;
            if dedicated {
                // The current shared chunk (if any) keeps its room for later strings.
                return self.new_chunk(size);
            }
            // The doubled chunk can still be smaller than this string (the first shared
            // chunk after a dedicated one, or a string over half the next chunk): the
            // chunk is never smaller than what it is made for. Before this `max`, a
            // 600-byte string went into a 512-byte chunk (issue 11).
            let chunk = (self.carving * 2)
                .clamp(Self::FIRST_CHUNK, Self::MAX_CHUNK)
                .max(size);
            let ptr = self.new_chunk(chunk);
            self.next = ptr.as_ptr();
            self.left = chunk;
            self.carving = chunk;
        }
        // Checked in release builds too: one compare per string, and it turns a heap
        // overflow into a clean panic if this logic ever goes wrong again.
        assert!(
            size <= self.left,
            "string arena: {size} > {} left",
            self.left
        );
        let p = self.next;
        // SAFETY: `size <= left`, so `p + size` stays inside (or one past) the current chunk.
        self.next = unsafe { p.add(size) };
        self.left -= size;
        // SAFETY: `p` points into a live chunk, so it is not null.
        unsafe { NonNull::new_unchecked(p) }
    }

    fn new_chunk(&mut self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, Self::ALIGN).expect("string chunk layout");
        // SAFETY: `layout` has a non-zero size (checked by `alloc`).
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) })
            .unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        self.chunks.push((ptr, layout));
        self.allocated += size;
        ptr
    }

    /// Bytes allocated for chunks (what the memory limit counts).
    pub(crate) fn allocated(&self) -> usize {
        self.allocated
    }
}

impl Drop for StringArena {
    fn drop(&mut self) {
        for &(ptr, layout) in &self.chunks {
            // SAFETY: each chunk was allocated by `new_chunk` with this layout.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StringArena;

    /// A small deterministic generator (xorshift64*), so that failures reproduce by seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Sizes a string of `len` bytes takes (zend_string header 24, NUL, rounded to 8).
    fn zstr_size(len: usize) -> usize {
        (24 + len + 1).next_multiple_of(8)
    }

    /// Every interesting string length: around the first chunk, half the max chunk (the
    /// dedicated threshold), the max chunk, and a few big ones.
    fn boundary_lens() -> Vec<usize> {
        let mut lens = Vec::new();
        for edge in [
            0usize,
            64,
            488,
            512,
            1024,
            2048,
            16 * 1024,
            32 * 1024,
            64 * 1024,
        ] {
            for d in -40i64..=40 {
                let l = edge as i64 + d;
                if l >= 0 {
                    lens.push(l as usize);
                }
            }
        }
        lens
    }

    /// Fills every allocation with a pattern derived from its index, then checks them
    /// all: overlapping or out-of-chunk allocations clobber each other's pattern (and
    /// valgrind sees a write outside a chunk).
    fn check_sequence(lens: &[usize]) {
        let mut arena = StringArena::default();
        let mut got = Vec::with_capacity(lens.len());
        let mut requested = 0usize;
        for (i, &len) in lens.iter().enumerate() {
            let size = zstr_size(len);
            requested += size;
            let p = arena.alloc(size);
            assert_eq!(p.as_ptr() as usize % StringArena::ALIGN, 0);
            // SAFETY: `alloc` promised `size` writable bytes.
            unsafe { std::ptr::write_bytes(p.as_ptr(), (i % 251) as u8, size) };
            got.push((p, size));
        }
        for (i, &(p, size)) in got.iter().enumerate() {
            // SAFETY: `alloc` promised `size` bytes, written above, alive as long as the
            // arena, which is still alive.
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
            assert!(
                bytes.iter().all(|&b| b == (i % 251) as u8),
                "allocation {i} ({size} bytes) was overwritten; sizes {lens:?}"
            );
        }
        assert!(arena.allocated() >= requested);
        // Chunks never waste more than one max chunk's worth plus half of what was asked.
        assert!(arena.allocated() <= requested * 2 + 2 * StringArena::MAX_CHUNK);
    }

    #[test]
    fn issue_11_first_string_dedicated_then_600_bytes() {
        // The app that crashed the server: a block whose first string took a dedicated
        // chunk, then strings of 600..8000 bytes.
        check_sequence(&[1, 600, 3000]);
        check_sequence(&[1, 1, 600 + 5 * 37, 3000, 1, 600 + 6 * 37]);
    }

    #[test]
    fn every_boundary_after_every_boundary() {
        let lens = boundary_lens();
        // Pairs and triples of boundary lengths, in both orders, with a small first string.
        for (a_i, &a) in lens.iter().enumerate().step_by(7) {
            for &b in lens.iter().skip(a_i % 5).step_by(17) {
                check_sequence(&[a, b]);
                check_sequence(&[0, a, b, a]);
            }
        }
    }

    #[test]
    fn megabyte_strings_among_small_ones() {
        check_sequence(&[
            (1 << 20) - 25,
            3,
            600,
            1 << 20,
            40_000,
            1,
            (1 << 20) + 7,
            500,
        ]);
    }

    #[test]
    fn random_sequences() {
        let lens = boundary_lens();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..300 {
            let n = 1 + rng.below(60) as usize;
            let seq: Vec<usize> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => lens[rng.below(lens.len() as u64) as usize],
                    1 => rng.below(70) as usize,
                    2 => rng.below(40_000) as usize,
                    _ => rng.below(4_000) as usize,
                })
                .collect();
            check_sequence(&seq);
        }
    }

    #[test]
    #[should_panic(expected = "not a multiple of 8")]
    fn unaligned_size_is_refused() {
        StringArena::default().alloc(12);
    }

    /// Runs the tests above again in this same binary under valgrind: any write outside
    /// a chunk is an error there even when the pattern check cannot see it (the next
    /// chunk's malloc header, the top of the heap).
    #[test]
    fn valgrind_runs_clean() {
        if std::env::var_os("FERROPHP_UNDER_VALGRIND").is_some() {
            return;
        }
        if std::process::Command::new("valgrind")
            .arg("--version")
            .output()
            .is_err()
        {
            panic!("valgrind is not installed (scripts/setup.sh installs it)");
        }
        let exe = std::env::current_exe().expect("test binary path");
        let out = std::process::Command::new("valgrind")
            .args(["--error-exitcode=99", "--quiet"])
            .arg(exe)
            .args([
                "arena::tests::",
                "--skip",
                "valgrind_runs_clean",
                "--test-threads=2",
            ])
            .env("FERROPHP_UNDER_VALGRIND", "1")
            .output()
            .expect("run valgrind");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "valgrind: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.contains("5 passed"),
            "expected 5 arena tests: {stdout}"
        );
    }
}
