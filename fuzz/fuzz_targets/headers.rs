//! libFuzzer target `headers`: see `ferrophp_fuzz::targets::headers` and docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrophp_fuzz::targets::headers(data));
