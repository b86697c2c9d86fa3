//! libFuzzer target `string_arena`: see `ferrophp_fuzz::targets::string_arena` and docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrophp_fuzz::targets::string_arena(data));
