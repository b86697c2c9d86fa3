//! Inputs for the stable replay tests: every file of a target's corpus
//! (`fuzz/corpus/<target>/`) and its regression cases (`fuzz/regressions/<target>/`),
//! then a few thousand mutations of them from a seeded generator (byte flips, inserts,
//! deletions, dictionary tokens, splices), so CI exercises each target without nightly or
//! libFuzzer. Shared by `server/tests/fuzz_replay.rs` and `worker/tests/fuzz_replay.rs`
//! (included by path) and the fuzz crate.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// splitmix64: small, seedable, good enough to pick mutations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// `fuzz/` in the checkout.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted by name.
pub fn files(kind: &str, target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// One mutation of `input` (a copy), with tokens from `dict` and splices from `pool`.
pub fn mutate(rng: &mut Rng, input: &[u8], dict: &[&[u8]], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next_u64() as u8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(8));
                v.drain(i..i + n);
            }
            3 | 4 if !dict.is_empty() => {
                let tok = dict[rng.below(dict.len())];
                let i = rng.below(v.len() + 1);
                v.splice(i..i, tok.iter().copied());
            }
            5 if !pool.is_empty() => {
                let other = &pool[rng.below(pool.len())];
                let i = rng.below(v.len() + 1);
                let j = rng.below(other.len() + 1);
                v.truncate(i);
                v.extend_from_slice(&other[j..]);
            }
            _ => {
                let n = rng.below(16);
                v.extend((0..n).map(|_| rng.next_u64() as u8));
            }
        }
    }
    v.truncate(4096);
    v
}

fn run_one(target: &str, what: &str, input: &[u8], f: &dyn Fn(&[u8])) {
    if catch_unwind(AssertUnwindSafe(|| f(input))).is_err() {
        panic!(
            "fuzz target {target} failed on {what}: {:?}\n(save it under fuzz/regressions/{target}/ \
             and run `cargo +nightly fuzz run {target} <file>` to debug)",
            String::from_utf8_lossy(input)
        );
    }
}

/// Runs `f` over the target's corpus and regression files, then `generated` mutations
/// of them (seed fixed per target, or `FERROPHP_FUZZ_SEED`). Returns how many inputs ran.
pub fn replay(target: &str, generated: usize, dict: &[&[u8]], f: impl Fn(&[u8])) -> usize {
    let mut pool: Vec<Vec<u8>> = Vec::new();
    for kind in ["corpus", "regressions"] {
        for (name, data) in files(kind, target) {
            run_one(target, &format!("{kind}/{target}/{name}"), &data, &f);
            pool.push(data);
        }
    }
    let ran = pool.len();
    assert!(
        ran > 0 || generated > 0,
        "no corpus for {target} under {}",
        fuzz_dir().display()
    );
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    let seed = std::env::var("FERROPHP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| target.bytes().fold(17u64, |h, b| h * 31 + u64::from(b)));
    let mut rng = Rng(seed);
    for i in 0..generated {
        let base = pool[rng.below(pool.len())].clone();
        let input = mutate(&mut rng, &base, dict, &pool);
        run_one(
            target,
            &format!("generated input {i} (seed {seed})"),
            &input,
            &f,
        );
    }
    ran + generated
}
