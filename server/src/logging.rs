//! Logging set-up and the access log line.
//!
//! Two formats: `text` (human-readable, the default) and `json` (one JSON object per line,
//! fields at the top level, for log shippers). The level/filter comes from `--log` /
//! `FERROPHP_LOG` / `log` in the TOML file (tracing's EnvFilter syntax, e.g.
//! `info,access=off`). The access log is the `access` target; in JSON its fields (remote,
//! method, uri, status, micros, bytes, mode) are JSON fields, not text to parse.

use std::net::SocketAddr;
use std::time::Instant;

use http::{Method, Response, Uri};

use crate::body::ResponseBody;
use crate::metrics::Mode;

/// `--log-format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber (once; later calls are ignored).
pub fn init(filter: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        // Flattened: `{"timestamp":..,"level":..,"target":"access","status":200,..}` so a
        // shipper indexes the access fields without a parser.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}

/// One access log event. `bytes` is the body size when known at head time (-1 for a
/// streamed PHP response without Content-Length, whose size only the client sees).
pub fn access(
    remote: SocketAddr,
    method: &Method,
    uri: &Uri,
    response: &Response<ResponseBody>,
    mode: Mode,
    started: Instant,
) {
    // Content-Length when set (static files stream from disk with a known length), else
    // the body's exact size, else unknown.
    let bytes = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<i64>().ok())
        .or_else(|| {
            http_body::Body::size_hint(response.body())
                .exact()
                .map(|n| n as i64)
        })
        .unwrap_or(-1);
    let mode = match mode {
        Mode::Static => "static",
        Mode::Classic => "classic",
        Mode::Worker => "worker",
    };
    tracing::info!(
        target: "access",
        remote = %remote,
        method = %method,
        uri = %uri,
        status = response.status().as_u16(),
        micros = started.elapsed().as_micros() as u64,
        bytes,
        mode,
    );
}
