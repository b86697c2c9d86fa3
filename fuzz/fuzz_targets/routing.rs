//! libFuzzer target `routing`: see `ferrophp_fuzz::targets::routing` and docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrophp_fuzz::targets::routing(data));
