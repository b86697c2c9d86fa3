//! The fuzz targets' code, shared with the stable replay tests. The server's functions
//! under test come from the server library (`ferrophp_server::fuzzing`), the worker's
//! from `worker::fuzzing`. [`targets`] has one function per libFuzzer target.

pub mod gen;
pub mod server_targets;

/// One function per libFuzzer target (`fuzz/fuzz_targets/<name>.rs`).
pub mod targets {
    pub use crate::server_targets::{config, headers, routing};
    pub use worker::fuzzing::{cache_table, string_arena};
}
