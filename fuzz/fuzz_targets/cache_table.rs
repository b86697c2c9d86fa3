//! libFuzzer target `cache_table`: see `ferrophp_fuzz::targets::cache_table` and docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrophp_fuzz::targets::cache_table(data));
