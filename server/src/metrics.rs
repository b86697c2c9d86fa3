//! The server's side of metrics: configuring the process-wide registry (the one PHP's
//! `Ferrophp\Metrics` records into), recording each request's latency into the same
//! kind of sketch, the Prometheus text for the admin `GET /metrics`, and push mode (one
//! DDSketch protobuf payload per interval, HTTP POST from a tokio task, bounded queue).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrophp_metrics::push::{Pusher, PAYLOADS_DROPPED, PAYLOADS_SENT, SEND_FAILURES};
use ferrophp_metrics::{global, Kind, Op, SeriesId, TagBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::MetricsPush;

/// The request-latency distribution, one series per status class.
pub const REQUEST_DURATION: &str = "ferrophp_http_request_duration_seconds";

/// Applies the configuration; must run before anything records.
pub fn configure(config: ferrophp_metrics::Config) {
    if !ferrophp_metrics::configure(config) {
        tracing::warn!("metrics registry already in use: keeping its configuration");
    }
    latency_series();
}

/// Series ids of `REQUEST_DURATION` for status classes 1xx..5xx, resolved once so each
/// request records by id (no key building or hashing per request).
fn latency_series() -> &'static [Option<SeriesId>; 5] {
    static IDS: OnceLock<[Option<SeriesId>; 5]> = OnceLock::new();
    IDS.get_or_init(|| {
        std::array::from_fn(|i| {
            let mut tags = TagBuf::new();
            tags.push(b"code", format!("{}xx", i + 1).as_bytes());
            global()
                .series(REQUEST_DURATION.as_bytes(), &tags, Kind::Distribution)
                .ok()
                .flatten()
        })
    })
}

/// Records one request's time to response head, on the calling (tokio) thread's shard.
#[inline]
pub fn record_request(status: u16, elapsed: Duration) {
    let class = (status / 100).clamp(1, 5) as usize - 1;
    if let Some(id) = latency_series()[class] {
        global().record_series(id, Op::Observe(elapsed.as_secs_f64()));
    }
}

/// `GET /metrics`: every series merged across threads, plus push-mode counters.
pub fn render() -> String {
    let snap = global().snapshot();
    let mut out = String::with_capacity(256 + 200 * snap.series.len());
    ferrophp_metrics::prometheus::render(&mut out, &snap);
    use std::fmt::Write;
    let _ = write!(
        out,
        "# TYPE ferrophp_metrics_push_payloads_sent_total counter\n\
         ferrophp_metrics_push_payloads_sent_total {}\n\
         # TYPE ferrophp_metrics_push_payloads_dropped_total counter\n\
         ferrophp_metrics_push_payloads_dropped_total {}\n\
         # TYPE ferrophp_metrics_push_failures_total counter\n\
         ferrophp_metrics_push_failures_total {}\n",
        PAYLOADS_SENT.load(Ordering::Relaxed),
        PAYLOADS_DROPPED.load(Ordering::Relaxed),
        SEND_FAILURES.load(Ordering::Relaxed),
    );
    out
}

/// Starts push mode: every interval, one payload of what changed is queued and the queue
/// is sent oldest first until the collector fails (then the rest waits for the next
/// interval; a full queue drops its oldest payload). The returned handle's
/// [`PushHandle::finish`] sends what the last, partial interval recorded at shutdown.
pub fn spawn_push(push: MetricsPush) -> PushHandle {
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut pusher = Pusher::new(push.buffer);
        let mut ticker = tokio::time::interval(push.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        tracing::info!(
            "pushing metrics to {} every {} ms",
            push.url,
            push.interval.as_millis()
        );
        loop {
            tokio::select! {
                _ = ticker.tick() => flush(&mut pusher, &push).await,
                _ = &mut stopped => {
                    flush(&mut pusher, &push).await;
                    return;
                }
            }
        }
    });
    PushHandle { stop, task }
}

/// The running push task (see [`spawn_push`]).
pub struct PushHandle {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl PushHandle {
    /// Collects and sends once more (what was recorded since the last interval), waiting
    /// at most `timeout` for the collector; after PHP has shut down, so nothing is lost.
    pub async fn finish(self, timeout: Duration) {
        let _ = self.stop.send(());
        if tokio::time::timeout(timeout, self.task).await.is_err() {
            tracing::warn!("final metrics push did not finish within {timeout:?}");
        }
    }
}

/// Queues what changed since the last collection and sends the queue, oldest first,
/// until the collector fails.
async fn flush(pusher: &mut Pusher, push: &MetricsPush) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    pusher.collect(global(), now, push.interval.as_millis() as u64);
    while let Some(payload) = pusher.front() {
        match tokio::time::timeout(
            push.interval.max(Duration::from_secs(1)),
            post(&push.url, payload),
        )
        .await
        {
            Ok(Ok(())) => pusher.delivered(),
            Ok(Err(e)) => {
                SEND_FAILURES.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("metrics push to {} failed: {e}", push.url);
                break;
            }
            Err(_) => {
                SEND_FAILURES.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("metrics push to {} timed out", push.url);
                break;
            }
        }
    }
}

/// One HTTP/1.1 POST of `body` to an `http://host[:port]/path` URL; Ok on a 2xx status.
/// Minimal on purpose: one request per connection, no redirects, no TLS.
async fn post(url: &str, body: &[u8]) -> Result<(), String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let mut stream = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/x-protobuf\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: ferrophp\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stream.write_all(body).await.map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    // The status line is all we need.
    while !buf.windows(2).any(|w| w == b"\r\n") {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 8192 {
            break;
        }
    }
    let line = String::from_utf8_lossy(&buf);
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("no HTTP status in reply: {:?}", line.lines().next()))?;
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(format!("collector answered {status}"))
    }
}
