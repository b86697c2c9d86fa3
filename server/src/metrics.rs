//! The server's side of metrics: configuring the process-wide registry (the one PHP's
//! `Ferrophp\Metrics` records into), recording each request's latency into the same
//! kind of sketch, the Prometheus text for the admin `GET /metrics`, and push mode (one
//! DDSketch protobuf payload per interval, HTTP POST from a tokio task, bounded queue).
//!
//! Server counters (requests by mode and status class, the wait for a PHP thread, 503s,
//! the session sweep) are plain atomics bumped on the request path; the worker crate's own
//! state (threads, worker boots/crashes/restarts, PHP memory, the shared cache) comes from
//! `worker::observe` at scrape time. Where FrankenPHP has an equivalent metric, its name
//! is rendered as well (same meaning, same `worker` label) so existing dashboards work.

use std::fmt::{Display, Write as _};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrophp_metrics::push::{Pusher, PAYLOADS_DROPPED, PAYLOADS_SENT, SEND_FAILURES};
use ferrophp_metrics::{global, Kind, Op, SeriesId, TagBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use worker::PoolKind;

use crate::config::MetricsPush;
use crate::mode::Mode;

/// The request-latency distribution, one series per status class.
pub(crate) const REQUEST_DURATION: &str = "ferrophp_http_request_duration_seconds";

/// Applies the configuration; must run before anything records.
pub(crate) fn configure(config: ferrophp_metrics::Config) {
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
pub(crate) fn record_request(status: u16, elapsed: Duration) {
    let class = (status / 100).clamp(1, 5) as usize - 1;
    if let Some(id) = latency_series()[class] {
        global().record_series(id, Op::Observe(elapsed.as_secs_f64()));
    }
}

const MODES: [Mode; 4] = [Mode::Static, Mode::Classic, Mode::Worker, Mode::Mercure];

/// Requests by mode and status class (1xx..5xx).
static REQUESTS: [[AtomicU64; 5]; MODES.len()] =
    [const { [const { AtomicU64::new(0) }; 5] }; MODES.len()];
/// Requests waiting for a PHP thread right now, per pool, at the pool's
/// `worker::PoolId` (pools past the last slot share it).
static QUEUE_DEPTHS: [AtomicI64; 64] = [const { AtomicI64::new(0) }; 64];
/// PHP requests that got a thread, and their total wait for it, in microseconds.
static QUEUE_WAITS: AtomicU64 = AtomicU64::new(0);
static QUEUE_WAIT_MICROS: AtomicU64 = AtomicU64::new(0);
/// 503s because no PHP thread freed up within `max_wait`.
static REJECTED: AtomicU64 = AtomicU64::new(0);
/// The background session sweep: runs, files deleted, files that could not be deleted.
pub(crate) static SESSION_SWEEPS: AtomicU64 = AtomicU64::new(0);
pub(crate) static SESSION_FILES_DELETED: AtomicU64 = AtomicU64::new(0);
pub(crate) static SESSION_SWEEP_ERRORS: AtomicU64 = AtomicU64::new(0);

/// Counts one answered request.
#[inline]
pub(crate) fn count_request(mode: Mode, status: u16) {
    let class = (status / 100).clamp(1, 5) as usize - 1;
    REQUESTS[mode as usize][class].fetch_add(1, Ordering::Relaxed);
}

/// A request got its permit for a PHP pool after waiting `waited` (a wait in the pool's
/// own queue after that is counted by the pool: `PoolInfo::queue_wait_seconds`).
#[inline]
pub(crate) fn thread_acquired(waited: Duration) {
    QUEUE_WAITS.fetch_add(1, Ordering::Relaxed);
    QUEUE_WAIT_MICROS.fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
}

/// A request gave up waiting for a PHP thread (503).
pub(crate) fn thread_wait_timed_out() {
    REJECTED.fetch_add(1, Ordering::Relaxed);
}

/// Held while a request waits for a PHP thread: the queue depth gauge.
pub(crate) struct Queued(&'static AtomicI64);

impl Queued {
    /// A request starts waiting for a permit of the pool `pool` (`Engine::pool_id`).
    pub(crate) fn enter(pool: worker::PoolId) -> Queued {
        let depth = &QUEUE_DEPTHS[pool.index().min(QUEUE_DEPTHS.len() - 1)];
        depth.fetch_add(1, Ordering::Relaxed);
        Queued(depth)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Requests of `pool` waiting for a thread now: for a permit on the HTTP side, or in the
/// pool's queue.
pub(crate) fn queue_depth(pool: &worker::observe::PoolInfo) -> u64 {
    QUEUE_DEPTHS[pool.id.index().min(QUEUE_DEPTHS.len() - 1)]
        .load(Ordering::Relaxed)
        .max(0) as u64
        + pool.queued
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

/// The server's and the worker crate's own metrics: every family of the tables below, in
/// their order (the static file cache's only while it is on).
fn render_server(out: &mut String) {
    let scrape = Scrape::now();
    let static_cache = match scrape.static_cache {
        Some(_) => STATIC_CACHE_FAMILIES,
        None => &[],
    };
    for family in REQUEST_FAMILIES
        .iter()
        .chain(static_cache)
        .chain(RUNTIME_FAMILIES)
        .chain(BACKGROUND_FAMILIES)
    {
        header(out, family.name, family.kind, family.help);
        (family.samples)(
            &scrape,
            &mut Samples {
                out,
                name: family.name,
            },
        );
    }
}

/// What a scrape reads of the runtime, once, for the families that render it.
struct Scrape {
    pools: Vec<worker::observe::PoolInfo>,
    static_cache: Option<crate::static_cache::Stats>,
    threads: Vec<worker::observe::ThreadInfo>,
    cache: worker::observe::CacheInfo,
    deadlines: worker::DeadlineStats,
    /// The job queue's totals and per-queue counts, once it was opened.
    jobs: Option<(jobs::QueueTotals, Vec<(String, jobs::QueueCounts)>)>,
    /// Each `[[schedule]]` entry's totals.
    schedule: Vec<(String, jobs::EntryTotals)>,
}

impl Scrape {
    fn now() -> Scrape {
        Scrape {
            pools: worker::observe::pools(),
            static_cache: crate::static_cache::cache().map(|cache| cache.stats()),
            threads: worker::observe::threads(),
            cache: worker::observe::cache(),
            deadlines: worker::deadline_stats(),
            jobs: worker::jobs_queue().map(|q| {
                let counts = q
                    .queues()
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|name| q.counts(&name).ok().map(|c| (name, c)))
                    .collect();
                (q.totals(), counts)
            }),
            schedule: crate::background::schedule_totals(),
        }
    }

    /// The pools of one kind.
    fn pools_of(&self, kind: PoolKind) -> impl Iterator<Item = &worker::observe::PoolInfo> {
        self.pools.iter().filter(move |p| p.kind == kind)
    }
}

/// One metric family of the server's own: its `# HELP` and `# TYPE` lines, then the
/// samples `samples` writes.
struct Family {
    name: &'static str,
    /// `counter`, `gauge` or `summary`.
    kind: &'static str,
    help: &'static str,
    samples: fn(&Scrape, &mut Samples<'_>),
}

/// Where a family's samples go, each line starting with the family's name.
struct Samples<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Samples<'_> {
    /// `name value`.
    fn value(&mut self, value: impl Display) {
        let _ = writeln!(self.out, "{} {value}", self.name);
    }

    /// `name_suffix value`: a summary's `_sum` and `_count`.
    fn suffixed(&mut self, suffix: &str, value: impl Display) {
        let _ = writeln!(self.out, "{}_{suffix} {value}", self.name);
    }

    /// `name{key="value",...} value`, the label values escaped.
    fn labelled(&mut self, labels: &[(&str, &str)], value: impl Display) {
        let _ = write!(self.out, "{}{{", self.name);
        for (i, (key, text)) in labels.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            let _ = write!(self.out, "{comma}{key}=\"{}\"", label(text));
        }
        let _ = writeln!(self.out, "}} {value}");
    }

    /// One sample per pool of `kind`, labelled with the kind's name (`worker="..."`, as
    /// FrankenPHP labels its worker metrics) and the pool's.
    fn per_pool<T: Display>(
        &mut self,
        scrape: &Scrape,
        kind: PoolKind,
        value: impl Fn(&worker::observe::PoolInfo) -> T,
    ) {
        for pool in scrape.pools_of(kind) {
            self.labelled(&[(kind.as_str(), &pool.name)], value(pool));
        }
    }

    /// One unlabelled sample of a server counter.
    fn counter(&mut self, counter: &AtomicU64) {
        self.value(counter.load(Ordering::Relaxed));
    }
}

/// The HTTP side: requests, and their wait for a PHP thread.
static REQUEST_FAMILIES: &[Family] = &[
    Family {
        name: "ferrophp_http_requests_total",
        kind: "counter",
        help: "Requests answered, by mode (static, classic, worker, mercure) and status class.",
        samples: |_, o| {
            for mode in MODES {
                for (c, count) in REQUESTS[mode as usize].iter().enumerate() {
                    let code = format!("{}xx", c + 1);
                    let labels = [("mode", mode.as_str()), ("code", code.as_str())];
                    o.labelled(&labels, count.load(Ordering::Relaxed));
                }
            }
        },
    },
    Family {
        name: "ferrophp_queue_depth",
        kind: "gauge",
        help: "Requests waiting for a free PHP thread, by pool.",
        samples: |s, o| {
            for pool in &s.pools {
                o.labelled(&[("pool", &pool.name)], queue_depth(pool));
            }
        },
    },
    Family {
        name: "frankenphp_queue_depth",
        kind: "gauge",
        help: "Classic requests waiting for a free PHP thread (FrankenPHP name).",
        samples: |s, o| o.value(s.pools_of(PoolKind::Classic).map(queue_depth).sum::<u64>()),
    },
    Family {
        name: "ferrophp_queue_wait_seconds",
        kind: "summary",
        help: "Time PHP requests waited for a free thread.",
        samples: |s, o| {
            let waited = QUEUE_WAIT_MICROS.load(Ordering::Relaxed) as f64 / 1e6
                + s.pools.iter().map(|p| p.queue_wait_seconds).sum::<f64>();
            o.suffixed("sum", waited);
            o.suffixed("count", QUEUE_WAITS.load(Ordering::Relaxed));
        },
    },
    Family {
        name: "ferrophp_http_rejected_total",
        kind: "counter",
        help: "503s: no PHP thread became free within max_wait.",
        samples: |_, o| o.counter(&REJECTED),
    },
];

/// The static file cache (`--static-cache-mb`), while it is on.
static STATIC_CACHE_FAMILIES: &[Family] = &[
    Family {
        name: "ferrophp_static_cache_lookups_total",
        kind: "counter",
        help: "Static file cache lookups: hit, miss (not cached), stale (the file changed).",
        samples: |s, o| {
            if let Some(stats) = &s.static_cache {
                o.labelled(&[("result", "hit")], stats.hits);
                o.labelled(&[("result", "miss")], stats.misses);
                o.labelled(&[("result", "stale")], stats.stale);
            }
        },
    },
    Family {
        name: "ferrophp_static_cache_entries",
        kind: "gauge",
        help: "Files in the static file cache.",
        samples: |s, o| {
            s.static_cache
                .iter()
                .for_each(|stats| o.value(stats.entries))
        },
    },
    Family {
        name: "ferrophp_static_cache_bytes",
        kind: "gauge",
        help: "Bytes the static file cache holds (bodies plus a small overhead each).",
        samples: |s, o| {
            if let Some(stats) = &s.static_cache {
                o.value(stats.bytes);
            }
        },
    },
];

/// The PHP runtime: threads, workers, memory, the shared cache, deadlines, sessions.
static RUNTIME_FAMILIES: &[Family] = &[
    Family {
        name: "ferrophp_php_threads",
        kind: "gauge",
        help: "PHP threads by pool and state.",
        samples: |s, o| {
            for p in &s.pools {
                o.labelled(&[("pool", &p.name), ("state", "busy")], p.busy);
                let idle = p.threads.saturating_sub(p.busy);
                o.labelled(&[("pool", &p.name), ("state", "idle")], idle);
            }
        },
    },
    Family {
        name: "frankenphp_total_threads",
        kind: "gauge",
        help: "PHP threads (FrankenPHP name).",
        samples: |s, o| o.value(s.pools.iter().map(|p| p.threads).sum::<u64>()),
    },
    Family {
        name: "frankenphp_busy_threads",
        kind: "gauge",
        help: "Classic threads running a request plus every worker thread (FrankenPHP's meaning).",
        // As FrankenPHP counts them: a running worker script always occupies its thread,
        // busy or not (ferrophp_php_threads has the real split).
        samples: |s, o| {
            let busy = |p: &worker::observe::PoolInfo| match p.kind {
                PoolKind::Classic => p.busy,
                PoolKind::Worker => p.threads,
                // Not FrankenPHP's: it has no background threads to count.
                PoolKind::Background => 0,
            };
            o.value(s.pools.iter().map(busy).sum::<u64>());
        },
    },
    Family {
        name: "ferrophp_worker_boots_total",
        kind: "counter",
        help: "Worker script boots (each thread's first boot and every reboot).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.boots),
    },
    Family {
        name: "ferrophp_worker_restarts_total",
        kind: "counter",
        help: "Worker script restarts (admin, SIGUSR1, --watch, cache pressure), per thread.",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.restarts),
    },
    Family {
        name: "ferrophp_worker_memory_restarts_total",
        kind: "counter",
        help: "Worker script restarts by the memory guard (--worker-memory-growth); also in ferrophp_worker_restarts_total.",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.memory_restarts),
    },
    Family {
        name: "ferrophp_worker_crashes_total",
        kind: "counter",
        help: "Worker scripts that ended by themselves (exit, fatal error).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.crashes),
    },
    Family {
        name: "frankenphp_total_workers",
        kind: "gauge",
        help: "Worker threads (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.threads),
    },
    Family {
        name: "frankenphp_worker_queue_depth",
        kind: "gauge",
        help: "Requests waiting for a thread of the worker (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, queue_depth),
    },
    Family {
        name: "frankenphp_busy_workers",
        kind: "gauge",
        help: "Worker threads running a request (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.busy),
    },
    Family {
        name: "frankenphp_ready_workers",
        kind: "gauge",
        help: "Worker threads in their request loop (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.ready),
    },
    Family {
        name: "frankenphp_worker_request_count",
        kind: "counter",
        help: "Requests served by the worker (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.requests),
    },
    Family {
        name: "frankenphp_worker_request_time",
        kind: "counter",
        help: "Seconds spent serving the worker's requests (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.request_seconds),
    },
    Family {
        name: "frankenphp_worker_crashes",
        kind: "counter",
        help: "Worker scripts that ended by themselves (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.crashes),
    },
    Family {
        name: "frankenphp_worker_restarts",
        kind: "counter",
        help: "Worker script restarts (FrankenPHP name).",
        samples: |s, o| o.per_pool(s, PoolKind::Worker, |p| p.restarts),
    },
    Family {
        name: "ferrophp_php_thread_memory_bytes",
        kind: "gauge",
        help: "Memory each PHP thread's heap holds from the OS, as of its last request.",
        samples: |s, o| {
            for t in &s.threads {
                o.labelled(&[("thread", &t.name), ("pool", &t.pool)], t.memory_bytes);
            }
        },
    },
    Family {
        name: "ferrophp_usercache_entries",
        kind: "gauge",
        help: "Entries in the shared cache.",
        samples: |s, o| o.value(s.cache.entries),
    },
    Family {
        name: "ferrophp_usercache_memory_bytes",
        kind: "gauge",
        help: "Memory the shared cache uses (live and retired).",
        samples: |s, o| o.value(s.cache.memory_used),
    },
    Family {
        name: "ferrophp_usercache_memory_limit_bytes",
        kind: "gauge",
        help: "usercache.memory_limit.",
        samples: |s, o| o.value(s.cache.memory_limit),
    },
    Family {
        name: "ferrophp_usercache_hits_total",
        kind: "counter",
        help: "Cache fetches that found their key.",
        samples: |s, o| o.value(s.cache.hits),
    },
    Family {
        name: "ferrophp_usercache_misses_total",
        kind: "counter",
        help: "Cache fetches that did not.",
        samples: |s, o| o.value(s.cache.misses),
    },
    Family {
        name: "ferrophp_usercache_stores_total",
        kind: "counter",
        help: "Cache stores.",
        samples: |s, o| o.value(s.cache.stores),
    },
    Family {
        name: "ferrophp_usercache_evictions_total",
        kind: "counter",
        help: "Entries evicted to make room.",
        samples: |s, o| o.value(s.cache.evictions),
    },
    Family {
        name: "ferrophp_usercache_expunges_total",
        kind: "counter",
        help: "Whole-cache expunges.",
        samples: |s, o| o.value(s.cache.expunges),
    },
    Family {
        name: "ferrophp_requests_timed_out_total",
        kind: "counter",
        help: "PHP requests whose deadline passed: max_execution_time (PHP's) or request_timeout (--request-timeout).",
        samples: |s, o| {
            let d = &s.deadlines;
            o.labelled(&[("limit", "max_execution_time")], d.timed_out_time_limit);
            o.labelled(&[("limit", "request_timeout")], d.timed_out_request_timeout);
        },
    },
    Family {
        name: "ferrophp_threads_retired_total",
        kind: "counter",
        help: "PHP threads given up (and replaced) while stuck past a request's deadline in code nothing could interrupt.",
        samples: |s, o| o.value(s.deadlines.threads_retired),
    },
    Family {
        name: "ferrophp_threads_stuck",
        kind: "gauge",
        help: "Retired PHP threads still stuck; past --max-retired-threads the process exits to be replaced.",
        samples: |s, o| o.value(s.deadlines.threads_stuck),
    },
    Family {
        name: "ferrophp_slow_requests_total",
        kind: "counter",
        help: "Requests that ran longer than --slowlog-ms or --slow-request-ms, each counted once when it ended (the slow requests of /status).",
        samples: |s, o| o.value(s.pools.iter().map(|p| p.slow_requests).sum::<u64>()),
    },
    Family {
        name: "ferrophp_session_sweeps_total",
        kind: "counter",
        help: "Background session sweeps run.",
        samples: |_, o| o.counter(&SESSION_SWEEPS),
    },
    Family {
        name: "ferrophp_session_files_deleted_total",
        kind: "counter",
        help: "Expired session files deleted by the sweep.",
        samples: |_, o| o.counter(&SESSION_FILES_DELETED),
    },
    Family {
        name: "ferrophp_session_sweep_errors_total",
        kind: "counter",
        help: "Session files the sweep could not delete.",
        samples: |_, o| o.counter(&SESSION_SWEEP_ERRORS),
    },
];

/// Background workers (`--background-worker`) and the job queue (docs/jobs.md).
static BACKGROUND_FAMILIES: &[Family] = &[
    Family {
        name: "ferrophp_background_threads",
        kind: "gauge",
        help: "Threads of each background worker (their script running, or backing off).",
        samples: |s, o| o.per_pool(s, PoolKind::Background, |p| p.threads),
    },
    Family {
        name: "ferrophp_background_runs_total",
        kind: "counter",
        help: "Runs of each background worker's script started.",
        samples: |s, o| o.per_pool(s, PoolKind::Background, |p| p.boots),
    },
    Family {
        name: "ferrophp_background_failures_total",
        kind: "counter",
        help: "Runs that failed (exit status, fatal error, or ended within a second): each backs off.",
        samples: |s, o| o.per_pool(s, PoolKind::Background, |p| p.crashes),
    },
    Family {
        name: "ferrophp_jobs_total",
        kind: "counter",
        help: "Job queue operations of this process, by event (dispatched, deduplicated, refused, taken, acked, failed, retried, dead, expired).",
        samples: |s, o| {
            if let Some((t, _)) = &s.jobs {
                for (event, n) in [
                    ("dispatched", t.dispatched),
                    ("deduplicated", t.deduplicated),
                    ("refused", t.refused),
                    ("taken", t.taken),
                    ("acked", t.acked),
                    ("failed", t.failed),
                    ("retried", t.retried),
                    ("dead", t.dead),
                    ("expired", t.expired),
                ] {
                    o.labelled(&[("event", event)], n);
                }
            }
        },
    },
    Family {
        name: "ferrophp_schedule_runs_total",
        kind: "counter",
        help: "Runs of each [[schedule]] entry by outcome (started, succeeded, failed, skipped_overlap, skipped_missed, claimed_elsewhere, store_error).",
        samples: |s, o| {
            for (entry, t) in &s.schedule {
                for (outcome, n) in [
                    ("started", t.started),
                    ("succeeded", t.succeeded),
                    ("failed", t.failed),
                    ("skipped_overlap", t.skipped_overlap),
                    ("skipped_missed", t.skipped_missed),
                    ("claimed_elsewhere", t.claimed_elsewhere),
                    ("store_error", t.store_errors),
                ] {
                    o.labelled(&[("entry", entry), ("outcome", outcome)], n);
                }
            }
        },
    },
    Family {
        name: "ferrophp_schedule_last_duration_seconds",
        kind: "gauge",
        help: "How long each [[schedule]] entry's last finished run took.",
        samples: |s, o| {
            for (entry, t) in &s.schedule {
                o.labelled(&[("entry", entry)], t.last_duration_ms as f64 / 1000.0);
            }
        },
    },
    Family {
        name: "ferrophp_jobs",
        kind: "gauge",
        help: "Jobs in each queue by state (ready, delayed, running, dead).",
        samples: |s, o| {
            for (queue, c) in s.jobs.iter().flat_map(|(_, c)| c) {
                o.labelled(&[("queue", queue), ("state", "ready")], c.ready);
                o.labelled(&[("queue", queue), ("state", "delayed")], c.delayed);
                o.labelled(&[("queue", queue), ("state", "running")], c.running);
                o.labelled(&[("queue", queue), ("state", "dead")], c.dead);
            }
        },
    },
];

/// The certificate manager whose certificates `/metrics` reports (automatic HTTPS).
static CERTIFICATES: OnceLock<Arc<crate::tls::CertManager>> = OnceLock::new();

/// Reports `manager`'s certificates, renewals and failures on `/metrics` from now on;
/// the server calls it once when it mounts automatic HTTPS.
pub(crate) fn watch_certificates(manager: Arc<crate::tls::CertManager>) {
    let _ = CERTIFICATES.set(manager);
}

/// The families of automatic HTTPS: each served name's time to expiry (static
/// certificates too), and renewals and failures by name and reason.
fn render_certificates(out: &mut String, snapshot: &crate::tls::AcmeSnapshot, now: SystemTime) {
    use crate::tls::{EXPIRY_METRIC, FAILURES_METRIC, ORDERS_METRIC, RENEWALS_METRIC};
    header(
        out,
        EXPIRY_METRIC,
        "gauge",
        "Seconds until the certificate served for a name expires (negative: expired).",
    );
    for cert in &snapshot.certificates {
        if let Some(left) = cert.expiry_seconds(now) {
            let (name, managed) = (label(&cert.name), cert.managed);
            let _ = writeln!(
                out,
                "{EXPIRY_METRIC}{{name=\"{name}\",managed=\"{managed}\"}} {left:.0}"
            );
        }
    }
    header(
        out,
        ORDERS_METRIC,
        "counter",
        "Orders placed with the ACME CA by this process (failed ones too; none at a restart with certificates stored).",
    );
    let _ = writeln!(out, "{ORDERS_METRIC} {}", snapshot.orders);
    for (family, help, counts) in [
        (
            RENEWALS_METRIC,
            "Certificates obtained from the ACME CA, by name and reason (initial, expiring, ari).",
            &snapshot.renewals,
        ),
        (
            FAILURES_METRIC,
            "Failed certificate orders, by name and reason.",
            &snapshot.failures,
        ),
    ] {
        header(out, family, "counter", help);
        for ((name, reason), count) in counts {
            let (name, reason) = (label(name), label(reason));
            let _ = writeln!(
                out,
                "{family}{{name=\"{name}\",reason=\"{reason}\"}} {count}"
            );
        }
    }
}

/// This instance's name among several (`--instance`, else the host name).
static INSTANCE: OnceLock<String> = OnceLock::new();

/// Names this instance in `ferrophp_instance_info`; the first call wins.
pub(crate) fn set_instance(name: &str) {
    let _ = INSTANCE.set(name.to_owned());
}

/// `ferrophp_instance_info`: the instance's name and version, one series of value 1.
/// The name is a label of its own rather than `instance` on every series: Prometheus sets
/// `instance` itself when it scrapes (the target's address, or what relabelling makes of
/// it), and an exposed `instance` would be renamed `exported_instance` or, with
/// `honor_labels`, replace it; `name` joins the two (docs/operating.md).
fn render_instance(out: &mut String) {
    header(
        out,
        "ferrophp_instance_info",
        "gauge",
        "This instance: its name (--instance, else the host name) and version.",
    );
    let _ = writeln!(
        out,
        "ferrophp_instance_info{{name=\"{}\",version=\"{}\"}} 1",
        label(INSTANCE.get().map_or("", String::as_str)),
        env!("CARGO_PKG_VERSION"),
    );
}

/// `GET /metrics`: every series merged across threads, the server's and runtime's own
/// metrics, the trace exporter's and push mode's counters; every family with its
/// `# HELP` and `# TYPE`.
pub(crate) fn render() -> String {
    let snap = global().snapshot();
    let mut out = String::with_capacity(8192 + 200 * snap.series.len());
    ferrophp_metrics::prometheus::render(&mut out, &snap, |name| {
        (name == REQUEST_DURATION)
            .then_some("Time from receiving a request to its response head, by status class.")
    });
    render_server(&mut out);
    if let Some(manager) = CERTIFICATES.get() {
        render_certificates(&mut out, &manager.snapshot(), SystemTime::now());
    }
    render_instance(&mut out);
    crate::mercure_mount::render_metrics(&mut out);
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
pub(crate) fn spawn_push(push: MetricsPush) -> PushHandle {
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut pusher = Pusher::new(push.buffer).with_tag("instance", &push.instance);
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
pub(crate) struct PushHandle {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl PushHandle {
    /// Collects and sends once more (what was recorded since the last interval), waiting
    /// at most `timeout` for the collector; after PHP has shut down, so nothing is lost.
    pub(crate) async fn finish(self, timeout: Duration) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::{AcmeSnapshot, CertificateStatus};

    #[test]
    fn certificates_render_as_prometheus_families() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let status = |name: &str, managed, not_after: Option<u64>| CertificateStatus {
            name: name.into(),
            managed,
            not_after: not_after.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
            serial: None,
            next_renewal: None,
            last_error: None,
        };
        let snapshot = AcmeSnapshot {
            certificates: vec![
                status("shop.example.com", true, Some(4_600)),
                status("static.example.com", false, Some(400)),
                status("new.example.com", true, None),
            ],
            orders: 2,
            renewals: vec![(("shop.example.com".into(), "initial".into()), 1)],
            failures: vec![(("new.example.com".into(), "ca_unreachable".into()), 3)],
        };
        let mut out = String::new();
        render_certificates(&mut out, &snapshot, now);
        for line in [
            "# TYPE ferrophp_certificate_expiry_seconds gauge",
            "ferrophp_certificate_expiry_seconds{name=\"shop.example.com\",managed=\"true\"} 3600",
            "ferrophp_certificate_expiry_seconds{name=\"static.example.com\",managed=\"false\"} -600",
            "# TYPE ferrophp_certificate_renewals_total counter",
            "ferrophp_certificate_renewals_total{name=\"shop.example.com\",reason=\"initial\"} 1",
            "ferrophp_certificate_renewal_failures_total{name=\"new.example.com\",reason=\"ca_unreachable\"} 3",
            "# TYPE ferrophp_certificate_orders_total counter",
            "ferrophp_certificate_orders_total 2",
        ] {
            assert!(out.lines().any(|l| l == line), "{line}\n{out}");
        }
        // No certificate yet: no expiry sample.
        assert!(
            !out.contains("expiry_seconds{name=\"new.example.com\""),
            "{out}"
        );
    }
}
