//! Tracing's configuration from the standard OpenTelemetry environment variables
//! (the SDK's environment specification and the OTLP exporter's): whether tracing is on,
//! where spans go, the sampler, the resource, the batch processor's and the span limits.
//! ferrophp adds one variable of its own, `FERROPHP_TRACE_MAX_SPANS` (spans PHP may
//! start per request).

use std::time::Duration;

use crate::sampler::Sampler;
use crate::span::Limits;

/// Where spans are POSTed: an `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` to connect to (IPv6 in brackets).
    pub address: String,
    /// The `Host` header.
    pub authority: String,
    /// The request target: the URL's path and query (`/` when it has none).
    pub path: String,
}

impl Endpoint {
    /// An `http://` URL; https and anything else unusable is an error saying why.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some(("https", _)) => {
                return Err(format!(
                    "{url}: https endpoints are not supported; send to an http:// collector \
                     (a collector or agent next to the server)"
                ))
            }
            _ => return Err(format!("{url}: expected an http:// URL")),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], &rest[i..]),
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{url}: expected http://host[:port]/path"));
        }
        let has_port = match authority.rfind(':') {
            Some(i) => !authority[i..].contains(']'),
            None => false,
        };
        let host = if has_port {
            &authority[..authority.rfind(':').unwrap()]
        } else {
            authority
        };
        if host.is_empty() || host == "[]" {
            return Err(format!("{url}: expected http://host[:port]/path"));
        }
        let address = if has_port {
            let port = &authority[authority.rfind(':').unwrap() + 1..];
            if port.parse::<u16>().is_err() {
                return Err(format!("{url}: invalid port"));
            }
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        Ok(Endpoint {
            address,
            authority: authority.to_owned(),
            path,
        })
    }

    /// The endpoint as a URL again (for logs and the admin status).
    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

/// The batch span processor (`OTEL_BSP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Longest a span waits before its batch is sent.
    pub schedule_delay: Duration,
    /// Most spans waiting; more are dropped and counted.
    pub max_queue_size: usize,
    /// Most spans per export request.
    pub max_export_batch_size: usize,
    /// Longest one export (connect, send, answer) may take.
    pub export_timeout: Duration,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            schedule_delay: Duration::from_millis(5000),
            max_queue_size: 2048,
            max_export_batch_size: 512,
            export_timeout: Duration::from_millis(30_000),
        }
    }
}

/// Everything tracing needs, read once at start-up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where spans are sent (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`).
    pub endpoint: Endpoint,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TRACES_HEADERS`).
    pub headers: Vec<(String, String)>,
    /// Per-request timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, `..._TRACES_TIMEOUT`).
    pub timeout: Duration,
    /// Which requests are recorded (`OTEL_TRACES_SAMPLER`, `..._ARG`).
    pub sampler: Sampler,
    /// Per-span limits (`OTEL_SPAN_*`, `OTEL_EVENT_*`, `OTEL_ATTRIBUTE_*`).
    pub limits: Limits,
    /// The export queue and batches (`OTEL_BSP_*`).
    pub batch: Batch,
    /// Spans PHP may start per request (`FERROPHP_TRACE_MAX_SPANS`).
    pub max_spans_per_request: u32,
    /// Resource attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
}

/// Percent-decodes `%XX` sequences (the W3C Baggage octet encoding the variables use).
fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k=v,k2=v2` lists (resource attributes, headers); entries without `=` or with an
/// empty key are refused.
fn key_values(var: &str, text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!("{var}: {item:?} is not key=value"));
        };
        let k = percent_decode(k.trim());
        if k.is_empty() {
            return Err(format!("{var}: {item:?} has an empty key"));
        }
        out.push((k, percent_decode(v.trim())));
    }
    Ok(out)
}

fn millis(var: &str, value: Option<String>, default: Duration) -> Result<Duration, String> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("{var}={v:?}: expected milliseconds")),
    }
}

fn count(var: &str, value: Option<String>, default: u64) -> Result<u64, String> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| format!("{var}={v:?}: expected a whole number")),
    }
}

impl Config {
    /// Reads the variables through `get` (the process environment in the server).
    /// `Ok(None)`: tracing is off (no endpoint configured, `OTEL_TRACES_EXPORTER=none`
    /// or `OTEL_SDK_DISABLED=true`). `extra_resource` is added to the resource (the
    /// runtime's own attributes) unless the variables set the same keys.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        extra_resource: &[(&str, String)],
    ) -> Result<Option<Config>, String> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let exporter = get("OTEL_TRACES_EXPORTER");
        match exporter.as_deref().map(str::trim) {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER={other:?} is not supported (otlp or none)"
                ))
            }
        }
        let traces_endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base_endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT");
        let url = match (traces_endpoint, base_endpoint) {
            // The signal-specific URL is used as it is.
            (Some(url), _) => url.trim().to_owned(),
            // The base URL gets the signal's path appended.
            (None, Some(base)) => {
                let base = base.trim();
                if base.ends_with('/') {
                    format!("{base}v1/traces")
                } else {
                    format!("{base}/v1/traces")
                }
            }
            // Asked for by name only: the specification's default collector address.
            (None, None) if exporter.is_some() => "http://localhost:4318/v1/traces".to_owned(),
            // Nothing asked for tracing.
            (None, None) => return Ok(None),
        };
        let protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"));
        match protocol.as_deref().map(str::trim) {
            None | Some("http/protobuf") => {}
            Some(other) => {
                return Err(format!(
                    "OTLP protocol {other:?} is not supported: ferrophp sends http/protobuf \
                     (the collector's port 4318)"
                ))
            }
        }
        let endpoint = Endpoint::parse(&url)?;

        let mut headers = key_values(
            "OTEL_EXPORTER_OTLP_HEADERS",
            &get("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default(),
        )?;
        for (k, v) in key_values(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            &get("OTEL_EXPORTER_OTLP_TRACES_HEADERS").unwrap_or_default(),
        )? {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
        for (k, v) in &headers {
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if !k.chars().all(token) || v.chars().any(|c| c.is_control()) {
                return Err(format!("OTLP header {k:?} is not a valid HTTP header"));
            }
        }
        let timeout = millis(
            "OTEL_EXPORTER_OTLP_TIMEOUT",
            get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| get("OTEL_EXPORTER_OTLP_TIMEOUT")),
            Duration::from_secs(10),
        )?;
        let sampler = Sampler::from_env(
            get("OTEL_TRACES_SAMPLER").as_deref(),
            get("OTEL_TRACES_SAMPLER_ARG").as_deref(),
        )?;

        let defaults = Batch::default();
        let batch = Batch {
            schedule_delay: millis(
                "OTEL_BSP_SCHEDULE_DELAY",
                get("OTEL_BSP_SCHEDULE_DELAY"),
                defaults.schedule_delay,
            )?,
            max_queue_size: count(
                "OTEL_BSP_MAX_QUEUE_SIZE",
                get("OTEL_BSP_MAX_QUEUE_SIZE"),
                defaults.max_queue_size as u64,
            )?
            .max(1) as usize,
            max_export_batch_size: count(
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
                defaults.max_export_batch_size as u64,
            )?
            .max(1) as usize,
            export_timeout: millis(
                "OTEL_BSP_EXPORT_TIMEOUT",
                get("OTEL_BSP_EXPORT_TIMEOUT"),
                defaults.export_timeout,
            )?,
        };
        let limit = |var: &str, general: Option<&str>, default: u64| -> Result<u64, String> {
            let v = get(var).or_else(|| general.and_then(&get));
            count(var, v, default)
        };
        let attributes = limit(
            "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
            Some("OTEL_ATTRIBUTE_COUNT_LIMIT"),
            128,
        )?;
        let limits = Limits {
            attributes: attributes.min(u32::MAX as u64) as u32,
            events: limit("OTEL_SPAN_EVENT_COUNT_LIMIT", None, 128)?.min(u32::MAX as u64) as u32,
            event_attributes: limit("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", None, 128)?
                .min(u32::MAX as u64) as u32,
            value_length: match get("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
                .or_else(|| get("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"))
            {
                None => usize::MAX,
                v => count("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", v, 0)? as usize,
            },
        };
        let max_spans_per_request = count(
            "FERROPHP_TRACE_MAX_SPANS",
            get("FERROPHP_TRACE_MAX_SPANS"),
            1000,
        )?
        .min(u32::MAX as u64) as u32;

        let mut resource = key_values(
            "OTEL_RESOURCE_ATTRIBUTES",
            &get("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default(),
        )?;
        if let Some(name) = get("OTEL_SERVICE_NAME") {
            resource.retain(|(k, _)| k != "service.name");
            resource.push(("service.name".into(), name.trim().to_owned()));
        }
        if !resource.iter().any(|(k, _)| k == "service.name") {
            // The specification's default: "unknown_service:" and the executable's name.
            resource.push(("service.name".into(), "unknown_service:ferrophp".into()));
        }
        for (k, v) in extra_resource {
            if !resource.iter().any(|(r, _)| r == k) {
                resource.push(((*k).to_owned(), v.clone()));
            }
        }
        // service.name first: easier to read in a dump, no meaning otherwise.
        resource.sort_by_key(|(k, _)| k != "service.name");
        Ok(Some(Config {
            endpoint,
            headers,
            timeout,
            sampler,
            limits,
            batch,
            max_spans_per_request,
            resource,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<Option<Config>, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_env(|k| map.get(k).cloned(), &[("process.pid", "7".into())])
    }

    #[test]
    fn off_unless_an_endpoint_or_the_exporter_is_named() {
        assert!(from(&[]).unwrap().is_none());
        assert!(from(&[("OTEL_SERVICE_NAME", "shop")]).unwrap().is_none());
        let c = from(&[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap().unwrap();
        assert_eq!(c.endpoint.url(), "http://localhost:4318/v1/traces");
        assert!(from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "none")
        ])
        .unwrap()
        .is_none());
        assert!(from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true")
        ])
        .unwrap()
        .is_none());
    }

    #[test]
    fn endpoints_follow_the_exporter_specification() {
        let url = |vars: &[(&str, &str)]| from(vars).unwrap().unwrap().endpoint.url();
        assert_eq!(
            url(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            url(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/otlp/")]),
            "http://collector:4318/otlp/v1/traces"
        );
        assert_eq!(
            url(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://[::1]:9999/custom"
                )
            ]),
            "http://[::1]:9999/custom"
        );
        let e = Endpoint::parse("http://collector/v1/traces").unwrap();
        assert_eq!(e.address, "collector:80");
        assert_eq!(e.authority, "collector");
        for bad in [
            "https://c:4318",
            "collector:4318",
            "http://:4318/x",
            "http://c:99999/",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        assert!(from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        ])
        .is_err());
    }

    #[test]
    fn resource_service_name_headers_and_limits() {
        let c = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod,service.name=from-attrs,team=a%2Cb",
            ),
            ("OTEL_SERVICE_NAME", "shop"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20x,x-a=1",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-A=2"),
            ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "5"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.resource[0], ("service.name".into(), "shop".into()));
        assert!(c.resource.contains(&("team".into(), "a,b".into())));
        assert!(c.resource.contains(&("process.pid".into(), "7".into())));
        assert_eq!(
            c.headers,
            [
                ("authorization".to_string(), "Bearer x".to_string()),
                ("X-A".to_string(), "2".to_string())
            ]
        );
        assert_eq!(c.limits.attributes, 5);
        assert_eq!(c.batch.schedule_delay, Duration::from_millis(100));
        let default = from(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")])
            .unwrap()
            .unwrap();
        assert_eq!(
            default.resource[0],
            ("service.name".into(), "unknown_service:ferrophp".into())
        );
        assert!(from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_RESOURCE_ATTRIBUTES", "novalue")
        ])
        .is_err());
    }
}
