//! The server's side of metrics: configuring the process-wide registry (the one PHP's
//! `Ferrophp\Metrics` records into), recording each request's latency into the same
//! kind of sketch, the Prometheus text for the admin `GET /metrics`, and push mode (one
//! DDSketch protobuf payload per interval, HTTP POST from a tokio task, bounded queue).
//!
//! Server counters (requests by mode and status class, the wait for a PHP thread, 503s,
//! the session sweep) are plain atomics bumped on the request path; the runtime's own
//! state (threads, worker boots/crashes/restarts, PHP memory, the shared cache) comes from
//! `worker::observe` at scrape time. Where FrankenPHP has an equivalent metric, its name
//! is rendered as well (same meaning, same `worker` label) so existing dashboards work.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrophp_metrics::push::{Pusher, PAYLOADS_DROPPED, PAYLOADS_SENT, SEND_FAILURES};
use ferrophp_metrics::{global, Kind, Op, SeriesId, TagBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::mode::Mode;

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

/// Push mode settings (`--metrics-push`).
#[derive(Debug, Clone)]
pub struct MetricsPush {
    pub url: String,
    pub interval: Duration,
    pub buffer: usize,
}

const MODES: [Mode; 3] = [Mode::Static, Mode::Classic, Mode::Worker];

/// Requests by mode and status class (1xx..5xx).
static REQUESTS: [[AtomicU64; 5]; 3] = [const { [const { AtomicU64::new(0) }; 5] }; 3];
/// Requests waiting for a PHP thread right now, per pool (classic first, then the
/// workers in order, as `worker::observe::pools()` lists them; pools past the last slot
/// share it).
static QUEUE_DEPTHS: [AtomicI64; 64] = [const { AtomicI64::new(0) }; 64];
/// PHP requests that got a thread, and their total wait for it, in microseconds.
static QUEUE_WAITS: AtomicU64 = AtomicU64::new(0);
static QUEUE_WAIT_MICROS: AtomicU64 = AtomicU64::new(0);
/// 503s because no PHP thread freed up within `max_wait`.
static REJECTED: AtomicU64 = AtomicU64::new(0);
/// The background session sweep: runs, files deleted, files that could not be deleted.
pub static SESSION_SWEEPS: AtomicU64 = AtomicU64::new(0);
pub static SESSION_FILES_DELETED: AtomicU64 = AtomicU64::new(0);
pub static SESSION_SWEEP_ERRORS: AtomicU64 = AtomicU64::new(0);

/// Counts one answered request.
#[inline]
pub fn count_request(mode: Mode, status: u16) {
    let class = (status / 100).clamp(1, 5) as usize - 1;
    REQUESTS[mode as usize][class].fetch_add(1, Ordering::Relaxed);
}

/// A request got its permit for a PHP pool after waiting `waited` (a wait in the pool's
/// own queue after that is counted by the pool: `PoolInfo::queue_wait_seconds`).
#[inline]
pub fn thread_acquired(waited: Duration) {
    QUEUE_WAITS.fetch_add(1, Ordering::Relaxed);
    QUEUE_WAIT_MICROS.fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
}

/// A request gave up waiting for a PHP thread (503).
pub fn thread_wait_timed_out() {
    REJECTED.fetch_add(1, Ordering::Relaxed);
}

/// Held while a request waits for a PHP thread: the queue depth gauge.
pub struct Queued(&'static AtomicI64);

impl Queued {
    /// `pool`: 0 for classic, 1 + the worker's index.
    pub fn enter(pool: usize) -> Queued {
        let depth = &QUEUE_DEPTHS[pool.min(QUEUE_DEPTHS.len() - 1)];
        depth.fetch_add(1, Ordering::Relaxed);
        Queued(depth)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Requests of pool `i` (`pool`, as `worker::observe::pools()` lists it) waiting for a
/// thread now: for a permit on the HTTP side, or in the pool's queue.
pub(crate) fn queue_depth(i: usize, pool: Option<&worker::observe::PoolInfo>) -> u64 {
    QUEUE_DEPTHS[i.min(QUEUE_DEPTHS.len() - 1)]
        .load(Ordering::Relaxed)
        .max(0) as u64
        + pool.map_or(0, |p| p.queued)
}

/// Prometheus label value escaping (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The server's and the runtime's own metrics.
fn render_server(out: &mut String) {
    header(
        out,
        "ferrophp_http_requests_total",
        "counter",
        "Requests answered, by mode (static, classic, worker) and status class.",
    );
    for mode in MODES {
        for (c, count) in REQUESTS[mode as usize].iter().enumerate() {
            let _ = writeln!(
                out,
                "ferrophp_http_requests_total{{mode=\"{}\",code=\"{}xx\"}} {}",
                mode.as_str(),
                c + 1,
                count.load(Ordering::Relaxed)
            );
        }
    }
    let pools = worker::observe::pools();
    let depth = |i: usize| queue_depth(i, pools.get(i));
    header(
        out,
        "ferrophp_queue_depth",
        "gauge",
        "Requests waiting for a free PHP thread, by pool.",
    );
    for (i, p) in pools.iter().enumerate() {
        let _ = writeln!(
            out,
            "ferrophp_queue_depth{{pool=\"{}\"}} {}",
            label(&p.name),
            depth(i)
        );
    }
    header(
        out,
        "frankenphp_queue_depth",
        "gauge",
        "Classic requests waiting for a free PHP thread (FrankenPHP name).",
    );
    let _ = writeln!(out, "frankenphp_queue_depth {}", depth(0));
    header(
        out,
        "ferrophp_queue_wait_seconds",
        "summary",
        "Time PHP requests waited for a free thread.",
    );
    let _ = writeln!(
        out,
        "ferrophp_queue_wait_seconds_sum {}\nferrophp_queue_wait_seconds_count {}",
        QUEUE_WAIT_MICROS.load(Ordering::Relaxed) as f64 / 1e6
            + pools.iter().map(|p| p.queue_wait_seconds).sum::<f64>(),
        QUEUE_WAITS.load(Ordering::Relaxed)
    );
    header(
        out,
        "ferrophp_http_rejected_total",
        "counter",
        "503s: no PHP thread became free within max_wait.",
    );
    let _ = writeln!(
        out,
        "ferrophp_http_rejected_total {}",
        REJECTED.load(Ordering::Relaxed)
    );

    if let Some(cache) = crate::static_cache::cache() {
        let stats = cache.stats();
        header(
            out,
            "ferrophp_static_cache_lookups_total",
            "counter",
            "Static file cache lookups: hit, miss (not cached), stale (the file changed).",
        );
        let _ = writeln!(
            out,
            "ferrophp_static_cache_lookups_total{{result=\"hit\"}} {}\n\
             ferrophp_static_cache_lookups_total{{result=\"miss\"}} {}\n\
             ferrophp_static_cache_lookups_total{{result=\"stale\"}} {}",
            stats.hits, stats.misses, stats.stale
        );
        header(
            out,
            "ferrophp_static_cache_entries",
            "gauge",
            "Files in the static file cache.",
        );
        let _ = writeln!(out, "ferrophp_static_cache_entries {}", stats.entries);
        header(
            out,
            "ferrophp_static_cache_bytes",
            "gauge",
            "Bytes the static file cache holds (bodies plus a small overhead each).",
        );
        let _ = writeln!(out, "ferrophp_static_cache_bytes {}", stats.bytes);
    }

    let (mut threads, mut busy) = (0, 0);
    for p in &pools {
        threads += p.threads;
        // As FrankenPHP counts them: a running worker script always occupies its
        // thread, busy or not (ferrophp_php_threads has the real split).
        busy += if p.is_worker { p.threads } else { p.busy };
    }
    header(
        out,
        "ferrophp_php_threads",
        "gauge",
        "PHP threads by pool and state.",
    );
    for p in &pools {
        let pool = label(&p.name);
        let _ = writeln!(
            out,
            "ferrophp_php_threads{{pool=\"{pool}\",state=\"busy\"}} {}\n\
             ferrophp_php_threads{{pool=\"{pool}\",state=\"idle\"}} {}",
            p.busy,
            p.threads.saturating_sub(p.busy)
        );
    }
    header(
        out,
        "frankenphp_total_threads",
        "gauge",
        "PHP threads (FrankenPHP name).",
    );
    let _ = writeln!(out, "frankenphp_total_threads {threads}");
    header(
        out,
        "frankenphp_busy_threads",
        "gauge",
        "Classic threads running a request plus every worker thread (FrankenPHP's meaning).",
    );
    let _ = writeln!(out, "frankenphp_busy_threads {busy}");

    let workers: Vec<_> = pools.iter().filter(|p| p.is_worker).collect();
    let per_worker = |out: &mut String,
                      name: &str,
                      kind: &str,
                      help: &str,
                      f: &dyn Fn(&worker::observe::PoolInfo) -> String| {
        header(out, name, kind, help);
        for p in &workers {
            let _ = writeln!(out, "{name}{{worker=\"{}\"}} {}", label(&p.name), f(p));
        }
    };
    per_worker(
        out,
        "ferrophp_worker_boots_total",
        "counter",
        "Worker script boots (each thread's first boot and every reboot).",
        &|p| p.boots.to_string(),
    );
    per_worker(
        out,
        "ferrophp_worker_restarts_total",
        "counter",
        "Worker script restarts (admin, SIGUSR1, --watch, cache pressure), per thread.",
        &|p| p.restarts.to_string(),
    );
    per_worker(
        out,
        "ferrophp_worker_memory_restarts_total",
        "counter",
        "Worker script restarts by the memory guard (--worker-memory-growth); also in ferrophp_worker_restarts_total.",
        &|p| p.memory_restarts.to_string(),
    );
    per_worker(
        out,
        "ferrophp_worker_crashes_total",
        "counter",
        "Worker scripts that ended by themselves (exit, fatal error).",
        &|p| p.crashes.to_string(),
    );
    per_worker(
        out,
        "frankenphp_total_workers",
        "gauge",
        "Worker threads (FrankenPHP name).",
        &|p| p.threads.to_string(),
    );
    let queue_of = |p: &worker::observe::PoolInfo| {
        let i = pools.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0);
        depth(i).to_string()
    };
    per_worker(
        out,
        "frankenphp_worker_queue_depth",
        "gauge",
        "Requests waiting for a thread of the worker (FrankenPHP name).",
        &queue_of,
    );
    per_worker(
        out,
        "frankenphp_busy_workers",
        "gauge",
        "Worker threads running a request (FrankenPHP name).",
        &|p| p.busy.to_string(),
    );
    per_worker(
        out,
        "frankenphp_ready_workers",
        "gauge",
        "Worker threads in their request loop (FrankenPHP name).",
        &|p| p.ready.to_string(),
    );
    per_worker(
        out,
        "frankenphp_worker_request_count",
        "counter",
        "Requests served by the worker (FrankenPHP name).",
        &|p| p.requests.to_string(),
    );
    per_worker(
        out,
        "frankenphp_worker_request_time",
        "counter",
        "Seconds spent serving the worker's requests (FrankenPHP name).",
        &|p| p.request_seconds.to_string(),
    );
    per_worker(
        out,
        "frankenphp_worker_crashes",
        "counter",
        "Worker scripts that ended by themselves (FrankenPHP name).",
        &|p| p.crashes.to_string(),
    );
    per_worker(
        out,
        "frankenphp_worker_restarts",
        "counter",
        "Worker script restarts (FrankenPHP name).",
        &|p| p.restarts.to_string(),
    );

    header(
        out,
        "ferrophp_php_thread_memory_bytes",
        "gauge",
        "Memory each PHP thread's heap holds from the OS, as of its last request.",
    );
    for t in worker::observe::threads() {
        let _ = writeln!(
            out,
            "ferrophp_php_thread_memory_bytes{{thread=\"{}\",pool=\"{}\"}} {}",
            label(&t.name),
            label(&t.pool),
            t.memory_bytes
        );
    }

    let c = worker::observe::cache();
    for (name, kind, help, v) in [
        (
            "ferrophp_usercache_entries",
            "gauge",
            "Entries in the shared cache.",
            c.entries,
        ),
        (
            "ferrophp_usercache_memory_bytes",
            "gauge",
            "Memory the shared cache uses (live and retired).",
            c.memory_used,
        ),
        (
            "ferrophp_usercache_memory_limit_bytes",
            "gauge",
            "usercache.memory_limit.",
            c.memory_limit,
        ),
        (
            "ferrophp_usercache_hits_total",
            "counter",
            "Cache fetches that found their key.",
            c.hits,
        ),
        (
            "ferrophp_usercache_misses_total",
            "counter",
            "Cache fetches that did not.",
            c.misses,
        ),
        (
            "ferrophp_usercache_stores_total",
            "counter",
            "Cache stores.",
            c.stores,
        ),
        (
            "ferrophp_usercache_evictions_total",
            "counter",
            "Entries evicted to make room.",
            c.evictions,
        ),
        (
            "ferrophp_usercache_expunges_total",
            "counter",
            "Whole-cache expunges.",
            c.expunges,
        ),
    ] {
        header(out, name, kind, help);
        let _ = writeln!(out, "{name} {v}");
    }

    let d = worker::deadline_stats();
    header(
        out,
        "ferrophp_requests_timed_out_total",
        "counter",
        "PHP requests whose deadline passed: max_execution_time (PHP's) or request_timeout (--request-timeout).",
    );
    let _ = writeln!(
        out,
        "ferrophp_requests_timed_out_total{{limit=\"max_execution_time\"}} {}\n\
         ferrophp_requests_timed_out_total{{limit=\"request_timeout\"}} {}",
        d.timed_out_time_limit, d.timed_out_request_timeout
    );
    for (name, kind, help, v) in [
        (
            "ferrophp_threads_retired_total",
            "counter",
            "PHP threads given up (and replaced) while stuck past a request's deadline in code nothing could interrupt.",
            d.threads_retired,
        ),
        (
            "ferrophp_threads_stuck",
            "gauge",
            "Retired PHP threads still stuck; past --max-retired-threads the process exits to be replaced.",
            d.threads_stuck,
        ),
        (
            "ferrophp_slow_requests_total",
            "counter",
            "Slow-log entries: requests that ran longer than --slowlog-ms.",
            d.slow_requests,
        ),
    ] {
        header(out, name, kind, help);
        let _ = writeln!(out, "{name} {v}");
    }

    for (name, help, v) in [
        (
            "ferrophp_session_sweeps_total",
            "Background session sweeps run.",
            &SESSION_SWEEPS,
        ),
        (
            "ferrophp_session_files_deleted_total",
            "Expired session files deleted by the sweep.",
            &SESSION_FILES_DELETED,
        ),
        (
            "ferrophp_session_sweep_errors_total",
            "Session files the sweep could not delete.",
            &SESSION_SWEEP_ERRORS,
        ),
    ] {
        header(out, name, "counter", help);
        let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
    }
}

/// `GET /metrics`: every series merged across threads, the server's and runtime's own
/// metrics, the trace exporter's and push mode's counters; every family with its
/// `# HELP` and `# TYPE`.
pub fn render() -> String {
    let snap = global().snapshot();
    let mut out = String::with_capacity(8192 + 200 * snap.series.len());
    ferrophp_metrics::prometheus::render(&mut out, &snap, |name| {
        (name == REQUEST_DURATION)
            .then_some("Time from receiving a request to its response head, by status class.")
    });
    render_server(&mut out);
    crate::traces::render(&mut out);
    let _ = write!(
        out,
        "# HELP ferrophp_metrics_push_payloads_sent_total Push-mode payloads the collector took.\n\
         # TYPE ferrophp_metrics_push_payloads_sent_total counter\n\
         ferrophp_metrics_push_payloads_sent_total {}\n\
         # HELP ferrophp_metrics_push_payloads_dropped_total Push-mode payloads dropped from a \
         full queue (the collector failing).\n\
         # TYPE ferrophp_metrics_push_payloads_dropped_total counter\n\
         ferrophp_metrics_push_payloads_dropped_total {}\n\
         # HELP ferrophp_metrics_push_failures_total Push-mode POSTs that failed or timed out.\n\
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
