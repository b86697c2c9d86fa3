//! The fuzz targets' code, shared with the stable replay tests. The server is a binary
//! crate, so its modules under test are compiled in here by path, exactly as
//! `server/tests/fuzz_replay.rs` does; the worker's pure-Rust entry points live in
//! `worker::fuzzing`. [`targets`] has one function per libFuzzer target.

#[allow(dead_code, unused_imports)]
#[path = "../../server/src/body.rs"]
pub mod body;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/config.rs"]
pub mod config;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/interim.rs"]
pub mod interim;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/logging.rs"]
pub mod logging;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/metrics.rs"]
pub mod metrics;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/php_bridge.rs"]
pub mod php_bridge;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/routing.rs"]
pub mod routing;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/sendfile.rs"]
pub mod sendfile;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/sessions.rs"]
pub mod sessions;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/static_files.rs"]
pub mod static_files;
#[allow(dead_code, unused_imports)]
#[path = "../../server/src/workers.rs"]
pub mod workers;

pub mod gen;
pub mod server_targets;

/// One function per libFuzzer target (`fuzz/fuzz_targets/<name>.rs`).
pub mod targets {
    pub use crate::server_targets::{config, headers, routing};
    pub use worker::fuzzing::{cache_table, string_arena};
}
