//! Traces on the HTTP side (the `ferrophp-trace` crate does the tracing itself): reading
//! the `OTEL_*` variables at start-up, one server span per request (HTTP semantic
//! conventions), the `ferrophp_trace_*` counters of `/metrics`, and the final flush at
//! shutdown.
//!
//! Per request, with tracing on: the `traceparent` header is read and the sampler asked
//! (no allocation; nothing else happens for a request that is not sampled: the PHP
//! thread makes its context only if PHP asks for it). A sampled request gets its server
//! span here, with the request's attributes; the span travels to the PHP thread in the
//! request's extensions (`php_bridge` moves it into the `ScriptRequest`), the PHP side
//! adds what it knows, and the span is exported when both sides are done with it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ferrophp_trace::{self as ft, RequestTrace, StatusCode, Value};
use http::{Request, Response};

use crate::mode::Mode;
use crate::peer::{strip_port, Connection};

/// Starts tracing when the environment asks for it (`OTEL_EXPORTER_OTLP_ENDPOINT` and
/// friends, docs/operating.md); a configuration it cannot follow is logged and tracing
/// stays off (the server serves either way).
pub(crate) fn configure() {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let mut extra = vec![
        ("telemetry.sdk.name", "ferrophp".to_owned()),
        ("telemetry.sdk.language", "php".to_owned()),
        (
            "telemetry.sdk.version",
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
        ("process.runtime.name", "php".to_owned()),
        ("process.runtime.version", worker::PHP_VERSION.to_owned()),
        ("process.pid", std::process::id().to_string()),
    ];
    if !hostname.is_empty() {
        extra.push(("host.name", hostname));
    }
    match ft::Config::from_env(|k| std::env::var(k).ok(), &extra) {
        Ok(None) => {}
        Ok(Some(config)) => {
            let (endpoint, sampler) = (config.endpoint.url(), config.sampler.describe());
            match ft::install(config) {
                Ok(_) => tracing::info!("traces: OTLP/HTTP to {endpoint}, sampler {sampler}"),
                Err(e) => tracing::error!("traces off: {e}"),
            }
        }
        Err(e) => tracing::error!("traces off: {e}"),
    }
}

/// Sends the spans still queued and stops the exporter (after PHP has shut down, so
/// every request's spans are in the queue).
pub(crate) fn shutdown(timeout: Duration) {
    if let Some(t) = ft::get() {
        if !t.shutdown(timeout) {
            tracing::warn!("final trace export did not finish within {timeout:?}");
        }
    }
}

/// The semantic conventions' known methods; others are `_OTHER`.
const KNOWN_METHODS: [&str; 9] = [
    "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
];

static TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
static TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

/// A request arrived: its trace, when sampled.
#[inline]
pub(crate) fn start<B>(req: &Request<B>, conn: &Connection) -> Option<RequestTrace> {
    let tracing = ft::get()?;
    let headers = req.headers();
    let mut parents = headers.get_all(&TRACEPARENT).iter();
    // Two headers are no valid context (W3C Trace Context §3.2: start a new trace).
    let traceparent = match (parents.next(), parents.next()) {
        (Some(v), None) => Some(v.as_bytes()),
        _ => None,
    };
    let trace = tracing.start_request(
        traceparent,
        || ft::parse_tracestate(headers.get_all(&TRACESTATE).iter().map(|v| v.as_bytes())),
        ft::now_unix_nano,
    )?;
    trace.server.with(|d, limits| {
        let method = req.method().as_str();
        let known = KNOWN_METHODS.contains(&method);
        d.name.clear();
        d.name.push_str(if known { method } else { "HTTP" });
        let attr = |d: &mut ft::SpanData, k: &str, v: Value<'_>| d.push_attribute(k, v, limits);
        attr(
            d,
            "http.request.method",
            Value::Text(if known { method } else { "_OTHER" }),
        );
        if !known {
            attr(
                d,
                "http.request.method_original",
                Value::Str(method.as_bytes()),
            );
        }
        attr(d, "url.path", Value::Text(req.uri().path()));
        if let Some(q) = req.uri().query() {
            attr(d, "url.query", Value::Text(q));
        }
        attr(
            d,
            "url.scheme",
            Value::Text(if conn.https { "https" } else { "http" }),
        );
        if let Some(host) = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
        {
            let name = strip_port(host);
            attr(d, "server.address", Value::Text(name));
            let port = host[name.len()..]
                .strip_prefix(':')
                .and_then(|p| p.parse::<i64>().ok())
                .unwrap_or(conn.local_addr.port() as i64);
            attr(d, "server.port", Value::Int(port));
        }
        let mut ip = [0u8; 64];
        let len = format_ip(&mut ip, conn.remote_addr.ip());
        attr(d, "client.address", Value::Str(&ip[..len]));
        attr(d, "client.port", Value::Int(conn.remote_addr.port() as i64));
        let version = match req.version() {
            http::Version::HTTP_09 => "0.9",
            http::Version::HTTP_10 => "1.0",
            http::Version::HTTP_11 => "1.1",
            http::Version::HTTP_2 => "2",
            _ => "3",
        };
        attr(d, "network.protocol.version", Value::Text(version));
        if let Some(ua) = headers.get(http::header::USER_AGENT) {
            attr(d, "user_agent.original", Value::Str(ua.as_bytes()));
        }
        if let Some(n) = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<i64>().ok())
        {
            attr(d, "http.request.body.size", Value::Int(n));
        }
    });
    Some(trace)
}

/// `ip` as text into `buf` (its length): IPv4 digit by digit (the formatter machinery
/// costs about a thousand instructions for four numbers), IPv6 through it, on the stack.
fn format_ip(buf: &mut [u8; 64], ip: std::net::IpAddr) -> usize {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut n = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    buf[n] = b'.';
                    n += 1;
                }
                if octet >= 100 {
                    buf[n] = b'0' + octet / 100;
                    n += 1;
                }
                if octet >= 10 {
                    buf[n] = b'0' + octet / 10 % 10;
                    n += 1;
                }
                buf[n] = b'0' + octet % 10;
                n += 1;
            }
            n
        }
        v6 => {
            let mut w = &mut buf[..];
            let _ = write!(w, "{v6}");
            64 - w.len()
        }
    }
}

/// Routing chose a PHP script: the route (`SCRIPT_NAME`) names the span.
pub(crate) fn php_route(trace: &RequestTrace, method: &http::Method, script_name: &str) {
    if script_name.is_empty() {
        return;
    }
    trace.server.with(|d, limits| {
        d.push_attribute("http.route", Value::Text(script_name), limits);
        if KNOWN_METHODS.contains(&method.as_str()) {
            d.name.clear();
            d.name.push_str(method.as_str());
            d.name.push(' ');
            d.name.push_str(script_name);
        }
    });
}

/// The response is ready: status, mode, and for answers that did not come from PHP
/// (which counts its own output) the body size when known.
pub(crate) fn finish<B: http_body::Body>(trace: RequestTrace, response: &Response<B>, mode: Mode) {
    let status = response.status().as_u16();
    // Pushed, not set: these keys come from this side only (no search for an earlier one).
    // The span's end is marked under the same lock.
    trace.server.finish(|d, limits| {
        d.push_attribute(
            "http.response.status_code",
            Value::Int(status as i64),
            limits,
        );
        d.push_attribute("ferrophp.mode", Value::Text(mode.as_str()), limits);
        // PHP's answers: the PHP thread counts what the script wrote. (Set, not pushed:
        // `php -S`'s router may have run before a static file was served.)
        if !matches!(mode, Mode::Classic | Mode::Worker) {
            if let Some(n) = response.body().size_hint().exact() {
                d.set_attribute("http.response.body.size", Value::Int(n as i64), limits);
            }
        }
        // Server spans: 5xx is an error, 4xx is the client's (semantic conventions).
        if status >= 500 && d.status == StatusCode::Unset {
            d.status = StatusCode::Error;
            let code = status.to_string();
            d.set_attribute("error.type", Value::Text(&code), limits);
        }
    });
}

/// The `ferrophp_trace_*` families of `/metrics` (nothing when tracing is off).
pub(crate) fn render(out: &mut String) {
    use ft::stats::*;
    let Some(tracing) = ft::get() else {
        return;
    };
    let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_spans_exported_total Spans the collector accepted.\n\
         # TYPE ferrophp_trace_spans_exported_total counter\n\
         ferrophp_trace_spans_exported_total {}",
        load(&SPANS_EXPORTED)
    );
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_spans_dropped_total Spans not exported, by reason: queue_full \
         (the collector slow or down), export_failed, rejected (by the collector), limit \
         (past FERROPHP_TRACE_MAX_SPANS in one request), shutdown.\n\
         # TYPE ferrophp_trace_spans_dropped_total counter"
    );
    for (reason, counter) in [
        ("queue_full", &SPANS_DROPPED_QUEUE_FULL),
        ("export_failed", &SPANS_DROPPED_EXPORT_FAILED),
        ("rejected", &SPANS_REJECTED),
        ("limit", &SPANS_DROPPED_LIMIT),
        ("shutdown", &SPANS_DROPPED_SHUTDOWN),
    ] {
        let _ = writeln!(
            out,
            "ferrophp_trace_spans_dropped_total{{reason=\"{reason}\"}} {}",
            load(counter)
        );
    }
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_exports_total Export requests to the collector, by result.\n\
         # TYPE ferrophp_trace_exports_total counter\n\
         ferrophp_trace_exports_total{{result=\"success\"}} {}\n\
         ferrophp_trace_exports_total{{result=\"failure\"}} {}",
        load(&EXPORTS_SUCCEEDED),
        load(&EXPORTS_FAILED)
    );
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_queue_spans Spans waiting to be exported.\n\
         # TYPE ferrophp_trace_queue_spans gauge\n\
         ferrophp_trace_queue_spans {}",
        tracing.queued_spans()
    );
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_attributes_dropped_total Span and event attributes past the \
         limits (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT).\n\
         # TYPE ferrophp_trace_attributes_dropped_total counter\n\
         ferrophp_trace_attributes_dropped_total {}",
        load(&ATTRIBUTES_DROPPED)
    );
    let _ = writeln!(
        out,
        "# HELP ferrophp_trace_events_dropped_total Span events past OTEL_SPAN_EVENT_COUNT_LIMIT.\n\
         # TYPE ferrophp_trace_events_dropped_total counter\n\
         ferrophp_trace_events_dropped_total {}",
        load(&EVENTS_DROPPED)
    );
}

#[cfg(test)]
mod tests {
    use super::format_ip;

    #[test]
    fn addresses_print_as_the_standard_library_prints_them() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.100.255",
            "192.168.9.99",
            "::1",
            "2001:db8::7",
        ] {
            let addr: std::net::IpAddr = ip.parse().unwrap();
            let mut buf = [0u8; 64];
            let n = format_ip(&mut buf, addr);
            assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), addr.to_string());
        }
    }
}
