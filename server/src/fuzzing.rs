//! The server's pure functions under fuzzing, for the fuzz crate (`fuzz/`) and its stable
//! replay (`server/tests/fuzz_replay.rs`): the parsers and transforms that see untrusted
//! input (request paths, header names, the Host value, config text and flags). Hidden
//! from the docs; nothing here is used by the server itself. The worker's counterparts
//! are in `worker::fuzzing`.

pub use crate::config::{FileConfig, ServeArgs, ServeConfig};
pub use crate::routing::{normalize, Route, Router};
pub use crate::workers::WorkerSpec;

/// `example.com:8080` → `example.com` (the Host value that becomes `SERVER_NAME`).
pub fn strip_port(host: &str) -> &str {
    crate::peer::strip_port(host)
}

/// Drops request headers whose names would be ambiguous as `$_SERVER` keys.
pub fn drop_ambiguous_headers(headers: &mut http::HeaderMap) {
    crate::php_bridge::drop_ambiguous_headers(headers)
}

/// `KEY=VALUE` of the `--env` and `-d` style flags.
pub fn split_key_value(kv: &str, flag: &str) -> Result<(String, String), String> {
    crate::config::split_key_value(kv, flag)
}
