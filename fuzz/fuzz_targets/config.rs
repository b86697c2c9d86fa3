//! libFuzzer target `config`: see `ferrophp_fuzz::targets::config` and docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrophp_fuzz::targets::config(data));
