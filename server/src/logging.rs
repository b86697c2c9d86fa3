//! Logging set-up and the access log line.
//!
//! Two formats: `text` (human-readable, the default) and `json` (one JSON object per line,
//! fields at the top level, for log shippers). The level/filter comes from `--log` /
//! `FERROPHP_LOG` / `log` in the TOML file (tracing's EnvFilter syntax, e.g.
//! `info,access=off`). The access log is the `access` target; in JSON its fields (remote,
//! method, uri, status, micros, bytes, mode) are JSON fields, not text to parse. The slow
//! log (`--slowlog-ms`) is the `slowlog` target: in JSON one object per slow request with
//! its PHP stack as an array of frames; in text a warning with the stack as PHP prints
//! traces.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use http::{Method, Response, Uri};

use crate::body::ResponseBody;
use crate::mode::Mode;

/// `--log-format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber (once; later calls are ignored).
pub(crate) fn init(filter: &str, format: LogFormat) {
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
pub(crate) fn access(
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
    let mode = mode.as_str();
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

/// Where the worker crate's slow-log entries go, in the log's format.
pub(crate) fn slow_log_sink(format: LogFormat) -> worker::SlowSink {
    match format {
        LogFormat::Text => Arc::new(|entry: &worker::SlowEntry| {
            tracing::warn!(
                target: "slowlog",
                method = %entry.method,
                uri = %entry.uri,
                elapsed_ms = entry.elapsed.as_millis() as u64,
                thread = %entry.thread,
                tid = entry.tid,
                "slow request, at {}:{}:\n{}",
                entry.file,
                entry.line,
                entry.stack_text().trim_end()
            );
        }),
        LogFormat::Json => Arc::new(|entry: &worker::SlowEntry| {
            if !tracing::enabled!(target: "slowlog", tracing::Level::WARN) {
                return;
            }
            let mut line = serde_json::to_vec(&slow_entry_json(entry)).unwrap_or_default();
            line.push(b'\n');
            // One write, as the JSON formatter writes each event: lines never interleave.
            let _ = std::io::stderr().lock().write_all(&line);
        }),
    }
}

/// A slow-log entry as one JSON object: the access log's shape (timestamp, level, target,
/// message, fields at the top level) plus the stack, innermost call first.
pub(crate) fn slow_entry_json(entry: &worker::SlowEntry) -> serde_json::Value {
    let stack: Vec<serde_json::Value> = entry
        .stack
        .iter()
        .map(|f| {
            serde_json::json!({
                "function": f.function,
                "file": f.file,
                "line": f.line,
                "args": f.args,
                "arg_count": f.arg_count,
            })
        })
        .collect();
    serde_json::json!({
        "timestamp": rfc3339(SystemTime::now()),
        "level": "WARN",
        "target": "slowlog",
        "message": "slow request",
        "method": entry.method,
        "uri": entry.uri,
        "elapsed_ms": entry.elapsed.as_millis() as u64,
        "thread": entry.thread,
        "tid": entry.tid,
        "pool": entry.pool,
        "file": entry.file,
        "line": entry.line,
        "captured_in": entry.captured_in,
        "stack": stack,
        "frames_omitted": entry.frames_omitted,
    })
}

/// `2026-05-09T07:29:33.186405Z`, as tracing's JSON formatter writes timestamps.
fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000000Z");
        assert_eq!(at(1_778_311_773), "2026-05-09T07:29:33.000000Z");
    }
}
