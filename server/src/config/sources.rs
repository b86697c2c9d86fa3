//! Where `ferrophp serve` settings come from: command-line flags (each with its
//! `FERROPHP_*` environment variable) and the TOML file, every setting optional in both;
//! `mod.rs` merges them over the defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::workers::WorkerSpec;

/// Command-line flags (each also readable from its `FERROPHP_*` environment variable).
#[derive(clap::Args, Debug, Default)]
pub struct ServeArgs {
    /// TOML config file; flags and environment variables override its values.
    #[arg(long, env = "FERROPHP_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Document root [default: ./public if it exists, else .]
    #[arg(long, env = "FERROPHP_ROOT", value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080; with --domain 0.0.0.0:443]
    #[arg(long, env = "FERROPHP_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Number of PHP threads [default: 2 x CPUs]
    #[arg(long, env = "FERROPHP_THREADS")]
    pub threads: Option<usize>,
    /// Most classic PHP threads autoscaling may run; `--threads` is then the floor. A
    /// thread is added when a request waited 5 ms for one and CPU is not saturated
    /// [default: --threads, no autoscaling]
    #[arg(long, env = "FERROPHP_MAX_THREADS", value_name = "N")]
    pub max_threads: Option<usize>,
    /// How long a thread above its pool's floor may wait for a request before it ends:
    /// `5s`, `500ms`, `2m`, or seconds [default: 5s]
    #[arg(long, env = "FERROPHP_MAX_IDLE_TIME", value_name = "DURATION", value_parser = parse_duration)]
    pub max_idle_time: Option<Duration>,
    /// Stack of each PHP thread, in MiB: how deep recursion through C frames (callbacks,
    /// magic methods) may go before memory_limit stops it [default: 512]
    #[arg(long, env = "FERROPHP_PHP_STACK_MB", value_name = "MIB")]
    pub php_stack_mb: Option<usize>,
    /// TLS certificate chain (PEM); enables HTTPS with HTTP/2 over ALPN.
    #[arg(
        long,
        env = "FERROPHP_TLS_CERT",
        value_name = "PEM",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(
        long,
        env = "FERROPHP_TLS_KEY",
        value_name = "PEM",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// No HTTP/3: without it, a TLS listener also serves HTTP/3 (QUIC) on the same port
    /// over UDP and advertises it with `Alt-Svc`.
    #[arg(long, env = "FERROPHP_NO_HTTP3")]
    pub no_http3: bool,
    /// Automatic HTTPS: `--domain`, `--acme-*`, `--data-dir`, `--http-listen`.
    #[command(flatten)]
    pub acme: super::acme::AcmeArgs,
    /// The Mercure hub: `--mercure-*`.
    #[command(flatten)]
    pub mercure: super::mercure::MercureArgs,
    /// Background workers, the job queue's backend: `--background-worker`, `--jobs-*`.
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// Largest request body accepted, in bytes; larger ones get 413 [default: 1073741824]
    #[arg(long, env = "FERROPHP_MAX_BODY_SIZE", value_name = "BYTES")]
    pub max_body_size: Option<u64>,
    /// How long a request may wait for a free PHP thread before it gets 503, in
    /// milliseconds [default: 30000]
    #[arg(long, env = "FERROPHP_MAX_WAIT_MS", value_name = "MS")]
    pub max_wait_ms: Option<u64>,
    /// Time allowed to receive a request's headers, in milliseconds [default: 10000]
    #[arg(long, env = "FERROPHP_HEADER_TIMEOUT_MS", value_name = "MS")]
    pub header_timeout_ms: Option<u64>,
    /// Largest request head (request line and headers), in bytes [default: 65536]
    #[arg(long, env = "FERROPHP_MAX_HEADER_SIZE", value_name = "BYTES")]
    pub max_header_size: Option<usize>,
    /// Longest wait for the next piece of a request body, in milliseconds; a body that
    /// stalls longer fails the request (408) [default: 60000]
    #[arg(long, env = "FERROPHP_BODY_TIMEOUT_MS", value_name = "MS")]
    pub body_timeout_ms: Option<u64>,
    /// Longest a PHP thread waits for a client to take more of a streamed response, in
    /// milliseconds; then the response is cut and the script sees the client gone
    /// [default: 60000]
    #[arg(long, env = "FERROPHP_SEND_TIMEOUT_MS", value_name = "MS")]
    pub send_timeout_ms: Option<u64>,
    /// A PHP request that runs longer than this counts as slow (admin `/status`, a
    /// warning in the log), as php-fpm's request_slowlog_timeout; 0: off [default: 0]
    #[arg(long, env = "FERROPHP_SLOW_REQUEST_MS", value_name = "MS")]
    pub slow_request_ms: Option<u64>,
    /// A connection with no request in flight for this long is closed, in milliseconds
    /// (HTTP/1 keep-alive connections wait at most the header timeout) [default: 60000]
    #[arg(long, env = "FERROPHP_IDLE_TIMEOUT_MS", value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Most client connections open at once; connections beyond it are closed on accept.
    /// Lowered at start-up (with a warning) if it does not fit the file descriptor limit
    /// [default: 10000]
    #[arg(long, env = "FERROPHP_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// On SIGTERM/SIGINT, time given to in-flight requests, in milliseconds [default: 30000]
    #[arg(long, env = "FERROPHP_GRACE_MS", value_name = "MS")]
    pub grace_ms: Option<u64>,
    /// Disable the access log.
    #[arg(long, env = "FERROPHP_NO_ACCESS_LOG")]
    pub no_access_log: bool,
    /// Environment variable for PHP (`$_SERVER`, `getenv()`): KEY=VALUE. Repeatable.
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Keep the server's own process environment out of `$_SERVER` (php-fpm's
    /// `clear_env`). Without it, every request's `$_SERVER` starts from the process
    /// environment, as in FrankenPHP; `-e`/`[env]` entries and the CGI variables win.
    #[arg(long, env = "FERROPHP_CLEAR_ENV")]
    pub clear_env: bool,
    /// ini setting: KEY=VALUE, applied after php.ini. Repeatable.
    #[arg(short = 'd', value_name = "KEY=VALUE")]
    pub ini: Vec<String>,
    /// php.ini file or directory to use.
    #[arg(long, env = "FERROPHP_PHP_INI", value_name = "PATH")]
    pub php_ini: Option<PathBuf>,
    /// SERVER_NAME when the request has no Host header [default: the listen address]
    #[arg(long, env = "FERROPHP_SERVER_NAME")]
    pub server_name: Option<String>,
    /// Log filter (tracing EnvFilter syntax) [default: info]
    #[arg(long, env = "FERROPHP_LOG", value_name = "FILTER")]
    pub log: Option<String>,
    /// Worker script, booted once per thread, serving requests routed to it in a loop:
    /// `path/to/worker.php`, `path/to/worker.php,THREADS`, or
    /// `path/to/worker.php,THREADS,MAX_THREADS` (autoscaling between the two). Repeatable.
    #[arg(long = "worker", value_name = "SCRIPT[,THREADS[,MAX_THREADS]]")]
    pub workers: Vec<String>,
    /// Requests a worker thread serves before its PHP state is rebuilt [default: unlimited]
    #[arg(long, env = "FERROPHP_MAX_REQUESTS", value_name = "N")]
    pub max_requests: Option<u64>,
    /// Worker memory guard: after a request, restart a worker thread's script when its
    /// PHP memory (`memory_get_usage()`) grew this much above its level right after boot:
    /// bytes with an optional K/M/G suffix, or a percentage (`64M`, `50%`). Applies to
    /// every worker without its own `memory_growth` [default: off]
    #[arg(
        long,
        env = "FERROPHP_WORKER_MEMORY_GROWTH",
        value_name = "SIZE|PERCENT"
    )]
    pub worker_memory_growth: Option<String>,
    /// Restart workers gracefully when a file matching this glob changes. Repeatable.
    #[arg(long = "watch", value_name = "GLOB")]
    pub watch: Vec<String>,
    /// How long a routing decision (which file serves a path) is reused, in milliseconds;
    /// 0 resolves every request afresh [default: 1000]
    #[arg(long, env = "FERROPHP_ROUTE_CACHE_MS", value_name = "MS")]
    pub route_cache_ms: Option<u64>,
    /// Memory for whole static files kept in memory, in MiB; a file up to a quarter of it
    /// (at most 4 MiB) is cached once unchanged for 2 s, revalidated by a stat on every
    /// request. 0 disables it [default: 64]
    #[arg(long, env = "FERROPHP_STATIC_CACHE_MB", value_name = "MIB")]
    pub static_cache_mb: Option<u64>,
    /// Admin listener (GET /healthz, /readyz, /metrics, /threads; POST /workers/restart);
    /// off unless set. A bare port (`2019` or `:2019`) binds 127.0.0.1 only; another
    /// interface must be named (`0.0.0.0:2019`).
    #[arg(long, env = "FERROPHP_ADMIN", value_name = "ADDR|PORT", value_parser = parse_admin)]
    pub admin: Option<SocketAddr>,
    /// Directory (relative to the root, or absolute) where PHP never runs, such as an
    /// upload folder: its .php files get 403 and are never served. Repeatable.
    #[arg(long = "no-php-dir", value_name = "DIR")]
    pub no_php_dirs: Vec<PathBuf>,
    /// Private directory PHP responses may hand files over from, with an
    /// `X-Accel-Redirect` (path inside it) or `X-Sendfile` (filesystem path) header; the
    /// file is then served like a static file. Off unless set.
    #[arg(long, env = "FERROPHP_SENDFILE_DIR", value_name = "DIR")]
    pub sendfile_dir: Option<PathBuf>,
    /// Relative accuracy of metric distributions (DDSketch alpha) [default: 0.01]
    #[arg(long, env = "FERROPHP_METRICS_RELATIVE_ACCURACY", value_name = "ALPHA")]
    pub metrics_relative_accuracy: Option<f64>,
    /// Most distinct metric series (name + tags); new ones beyond it are dropped and
    /// counted [default: 10000]
    #[arg(long, env = "FERROPHP_METRICS_MAX_SERIES", value_name = "N")]
    pub metrics_max_series: Option<usize>,
    /// Push metrics (one DDSketch protobuf payload per interval, HTTP POST) to this
    /// http:// URL; off unless set.
    #[arg(long, env = "FERROPHP_METRICS_PUSH_URL", value_name = "URL")]
    pub metrics_push_url: Option<String>,
    /// Push interval in milliseconds [default: 10000]
    #[arg(long, env = "FERROPHP_METRICS_PUSH_INTERVAL_MS", value_name = "MS")]
    pub metrics_push_interval_ms: Option<u64>,
    /// Payloads kept while the collector is unreachable; the oldest is dropped (and
    /// counted) beyond it [default: 60]
    #[arg(long, env = "FERROPHP_METRICS_PUSH_BUFFER", value_name = "N")]
    pub metrics_push_buffer: Option<usize>,
    /// This instance's name among several serving one application: the `name` of
    /// `ferrophp_instance_info` on `/metrics` and an `instance` tag on every pushed
    /// series (a scraper adds its own `instance` label) [default: the host name]
    #[arg(long, env = "FERROPHP_INSTANCE", value_name = "NAME")]
    pub instance: Option<String>,
    // --- operating: log format and sessions (see docs/operating.md) ---
    /// Log format: text, or json (one object per line, access log fields as JSON fields)
    /// [default: text]
    #[arg(long, env = "FERROPHP_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<crate::logging::LogFormat>,
    /// Session garbage collection: `background` (a sweep on its own schedule, none on the
    /// request path: session.gc_probability=0 unless set with -d) or `php` (PHP's own,
    /// on 1 request in gc_divisor/gc_probability) [default: background]
    #[arg(long, env = "FERROPHP_SESSION_GC", value_name = "MODE")]
    pub session_gc: Option<super::GcMode>,
    /// Interval of the background session sweep, in milliseconds [default: 60000]
    #[arg(long, env = "FERROPHP_SESSION_GC_INTERVAL_MS", value_name = "MS")]
    pub session_gc_interval_ms: Option<u64>,
    // --- operating safety (see docs/operating.md) ---
    /// Run the server as the child of a small supervisor that owns the listening socket
    /// and restarts it (exponential backoff) when it dies by a signal or an error exit.
    #[arg(long, env = "FERROPHP_SUPERVISE")]
    pub supervise: bool,
    /// Confine PHP's file access (`open_basedir`) to the document root, the worker
    /// scripts' directories, the upload temporary directory and the session save path.
    #[arg(long, env = "FERROPHP_CONFINE")]
    pub confine: bool,
    // --- deadlines and the slow log (see docs/operating.md, "Deadlines") ---
    /// Longest any PHP request may run, whatever its script's max_execution_time
    /// (php-fpm's request_terminate_timeout): `30s`, `500ms`, `2m`, or seconds; it ends
    /// the request even inside a blocking call (socket, database, sleep, lock) with a
    /// 504 [default: off]
    #[arg(long, env = "FERROPHP_REQUEST_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,
    /// How long a request may take to end once past its deadline (either one) before its
    /// PHP thread is retired and replaced (it is stuck in code nothing can interrupt)
    /// [default: 2s]
    #[arg(long, env = "FERROPHP_RETIRE_GRACE", value_name = "DURATION", value_parser = parse_duration)]
    pub retire_grace: Option<Duration>,
    /// Retired PHP threads still stuck that the process keeps; one more and it drains
    /// and exits (status 75) for its supervisor (--supervise, systemd) to start a fresh
    /// process [default: 8]
    #[arg(long, env = "FERROPHP_MAX_RETIRED_THREADS", value_name = "N")]
    pub max_retired_threads: Option<usize>,
    /// Log the PHP stack of every request running longer than this, in milliseconds
    /// (php-fpm's request_slowlog_timeout): one `slowlog` entry per request [default: off]
    #[arg(long, env = "FERROPHP_SLOWLOG_MS", value_name = "MS")]
    pub slowlog_ms: Option<u64>,
}

/// `5s`, `500ms`, `2m`, or a number of seconds.
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    let t = value.trim();
    let invalid = || format!("invalid duration {value:?}: expected 5s, 500ms, 2m or seconds");
    let (number, unit_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1u64)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else {
        (t, 1000)
    };
    let n: u64 = number.trim().parse().map_err(|_| invalid())?;
    n.checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(invalid)
}

/// `--admin`: an address, or a bare port (`2019`, `:2019`) meaning loopback only.
fn parse_admin(value: &str) -> Result<SocketAddr, String> {
    let port = value.strip_prefix(':').unwrap_or(value);
    if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("admin port out of range: {value}"))?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| format!("admin address must be HOST:PORT or a port, got {value:?}"))
}

/// `admin` in the file: a port (loopback only), or an address or port as `--admin`
/// takes it.
fn deserialize_admin<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Admin {
        Port(u16),
        Text(String),
    }
    match Option::<Admin>::deserialize(d)? {
        None => Ok(None),
        Some(Admin::Port(port)) => Ok(Some(SocketAddr::from(([127, 0, 0, 1], port)))),
        Some(Admin::Text(text)) => parse_admin(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// The same settings as a TOML file; every key is optional.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct FileConfig {
    pub(super) root: Option<PathBuf>,
    pub(super) listen: Option<SocketAddr>,
    pub(super) threads: Option<usize>,
    pub(super) max_threads: Option<usize>,
    pub(super) max_idle_time: Option<String>,
    pub(super) php_stack_mb: Option<usize>,
    pub(super) tls_cert: Option<PathBuf>,
    pub(super) tls_key: Option<PathBuf>,
    pub(super) http3: Option<bool>,
    pub(super) domains: Option<Vec<String>>,
    pub(super) http_listen: Option<SocketAddr>,
    pub(super) acme_directory: Option<String>,
    pub(super) acme_ca_root: Option<PathBuf>,
    pub(super) acme_email: Option<String>,
    pub(super) acme_eab_kid: Option<String>,
    pub(super) acme_eab_hmac_key: Option<String>,
    pub(super) acme_challenges: Option<Vec<String>>,
    pub(super) data_dir: Option<PathBuf>,
    pub(super) max_body_size: Option<u64>,
    pub(super) max_wait_ms: Option<u64>,
    pub(super) header_timeout_ms: Option<u64>,
    pub(super) max_header_size: Option<usize>,
    pub(super) body_timeout_ms: Option<u64>,
    pub(super) send_timeout_ms: Option<u64>,
    pub(super) slow_request_ms: Option<u64>,
    pub(super) idle_timeout_ms: Option<u64>,
    pub(super) max_connections: Option<usize>,
    pub(super) grace_ms: Option<u64>,
    pub(super) access_log: Option<bool>,
    pub(super) env: Option<std::collections::BTreeMap<String, String>>,
    pub(super) clear_env: Option<bool>,
    pub(super) ini: Option<std::collections::BTreeMap<String, String>>,
    pub(super) php_ini: Option<PathBuf>,
    pub(super) server_name: Option<String>,
    pub(super) log: Option<String>,
    pub(super) worker: Option<Vec<WorkerSpec>>,
    pub(super) worker_memory_growth: Option<String>,
    pub(super) watch: Option<Vec<String>>,
    pub(super) route_cache_ms: Option<u64>,
    pub(super) static_cache_mb: Option<u64>,
    #[serde(default, deserialize_with = "deserialize_admin")]
    pub(super) admin: Option<SocketAddr>,
    pub(super) no_php_dirs: Option<Vec<PathBuf>>,
    pub(super) sendfile_dir: Option<PathBuf>,
    pub(super) metrics_relative_accuracy: Option<f64>,
    pub(super) metrics_max_series: Option<usize>,
    pub(super) metrics_push_url: Option<String>,
    pub(super) metrics_push_interval_ms: Option<u64>,
    pub(super) metrics_push_buffer: Option<usize>,
    pub(super) instance: Option<String>,
    pub(super) log_format: Option<crate::logging::LogFormat>,
    pub(super) session_gc: Option<super::GcMode>,
    pub(super) session_gc_interval_ms: Option<u64>,
    pub(super) confine: Option<bool>,
    pub(super) request_timeout: Option<String>,
    pub(super) retire_grace: Option<String>,
    pub(super) max_retired_threads: Option<usize>,
    pub(super) slowlog_ms: Option<u64>,
    /// `[mercure]`: the Mercure hub.
    pub(super) mercure: Option<super::mercure::MercureFile>,
    /// `[[background]]`: background workers (`config/jobs.rs`).
    pub(super) background: Option<Vec<super::jobs::BackgroundSpec>>,
    pub(super) background_stop_timeout: Option<String>,
    pub(super) jobs_backend: Option<String>,
    pub(super) jobs_durability: Option<String>,
    /// `[[schedule]]`: scheduled scripts and commands.
    pub(super) schedule: Option<Vec<super::jobs::ScheduleSpec>>,
    /// `[package]`: read by `ferrophp package` only (`serve` checks and ignores it).
    pub(super) package: Option<ferrophp_package::AppSettings>,
}

impl FileConfig {
    /// Parses the TOML text of a config file.
    pub fn parse(text: &str) -> Result<FileConfig, toml::de::Error> {
        toml::from_str::<FileConfig>(text)
    }

    /// The `[package]` table (empty when absent).
    pub fn package_settings(&self) -> ferrophp_package::AppSettings {
        self.package.clone().unwrap_or_default()
    }

    /// The `[ini]` table, in key order.
    pub fn ini_table(&self) -> Vec<(String, String)> {
        self.ini
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The paths the file names for the app, each with its setting's name: the document
    /// root and the worker scripts (relative to the directory `serve` runs in).
    pub fn app_paths(&self) -> Vec<(&'static str, PathBuf)> {
        let mut paths = Vec::new();
        if let Some(root) = &self.root {
            paths.push(("root", root.clone()));
        }
        for w in self.worker.iter().flatten() {
            paths.push(("worker", w.script.clone()));
        }
        paths
    }
}
