//! `ferrophp serve` settings: command-line flags, `FERROPHP_*` environment variables and
//! an optional TOML file, merged in that order of precedence over the defaults.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::metrics::MetricsPush;
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
    /// Address to listen on [default: 127.0.0.1:8080]
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
    // --- operating: log format and sessions (see docs/operating.md) ---
    /// Log format: text, or json (one object per line, access log fields as JSON fields)
    /// [default: text]
    #[arg(long, env = "FERROPHP_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<crate::logging::LogFormat>,
    /// Session garbage collection: `background` (a sweep on its own schedule, none on the
    /// request path: session.gc_probability=0 unless set with -d) or `php` (PHP's own,
    /// on 1 request in gc_divisor/gc_probability) [default: background]
    #[arg(long, env = "FERROPHP_SESSION_GC", value_name = "MODE")]
    pub session_gc: Option<crate::sessions::GcMode>,
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

/// `--admin`: an address, or a bare port (`2019`, `:2019`) meaning loopback only.
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
    root: Option<PathBuf>,
    listen: Option<SocketAddr>,
    threads: Option<usize>,
    max_threads: Option<usize>,
    max_idle_time: Option<String>,
    php_stack_mb: Option<usize>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    max_body_size: Option<u64>,
    max_wait_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    max_header_size: Option<usize>,
    body_timeout_ms: Option<u64>,
    send_timeout_ms: Option<u64>,
    slow_request_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    grace_ms: Option<u64>,
    access_log: Option<bool>,
    env: Option<std::collections::BTreeMap<String, String>>,
    clear_env: Option<bool>,
    ini: Option<std::collections::BTreeMap<String, String>>,
    php_ini: Option<PathBuf>,
    server_name: Option<String>,
    log: Option<String>,
    worker: Option<Vec<WorkerSpec>>,
    worker_memory_growth: Option<String>,
    watch: Option<Vec<String>>,
    route_cache_ms: Option<u64>,
    static_cache_mb: Option<u64>,
    #[serde(default, deserialize_with = "deserialize_admin")]
    admin: Option<SocketAddr>,
    no_php_dirs: Option<Vec<PathBuf>>,
    sendfile_dir: Option<PathBuf>,
    metrics_relative_accuracy: Option<f64>,
    metrics_max_series: Option<usize>,
    metrics_push_url: Option<String>,
    metrics_push_interval_ms: Option<u64>,
    metrics_push_buffer: Option<usize>,
    log_format: Option<crate::logging::LogFormat>,
    session_gc: Option<crate::sessions::GcMode>,
    session_gc_interval_ms: Option<u64>,
    confine: Option<bool>,
    request_timeout: Option<String>,
    retire_grace: Option<String>,
    max_retired_threads: Option<usize>,
    slowlog_ms: Option<u64>,
}

/// Resolved settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub root: PathBuf,
    pub listen: SocketAddr,
    pub threads: usize,
    /// The classic pool's ceiling (`threads`: no autoscaling).
    pub max_threads: usize,
    /// How long a thread above its pool's floor may idle before it ends.
    pub max_idle_time: Duration,
    /// Bytes.
    pub php_stack_size: usize,
    pub tls: Option<(PathBuf, PathBuf)>,
    pub max_body_size: u64,
    pub max_wait: Duration,
    pub header_timeout: Duration,
    pub max_header_size: usize,
    pub body_timeout: Duration,
    pub send_timeout: Duration,
    /// `--slow-request-ms` (None: off).
    pub slow_request: Option<Duration>,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub grace: Duration,
    pub access_log: bool,
    pub env: Vec<(String, String)>,
    pub ini: Vec<(String, String)>,
    pub php_ini: Option<PathBuf>,
    pub server_name: Option<String>,
    pub log: String,
    pub workers: Vec<WorkerSpec>,
    pub watch: Vec<String>,
    pub route_cache: Duration,
    /// Static file content cache, MiB (0: off).
    pub static_cache_mb: u64,
    pub admin: Option<SocketAddr>,
    pub no_php_dirs: Vec<PathBuf>,
    pub sendfile_dir: Option<PathBuf>,
    pub metrics: ferrophp_metrics::Config,
    pub metrics_push: Option<MetricsPush>,
    pub log_format: crate::logging::LogFormat,
    pub session_gc: crate::sessions::GcMode,
    pub session_gc_interval: Duration,
    pub confine: bool,
    /// Request deadlines and the slow log.
    pub deadlines: worker::DeadlineConfig,
}

impl ServeConfig {
    pub fn load(args: ServeArgs) -> Result<ServeConfig, String> {
        let file = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                FileConfig::parse(&text)
                    .map_err(|e| format!("invalid config {}: {e}", path.display()))?
            }
            None => FileConfig::default(),
        };
        ServeConfig::resolve(args, file)
    }

    /// [`ServeConfig::load`] for the `serve` and `--supervise` commands: an invalid
    /// configuration is reported on stderr as exit status 2; a valid one starts the log
    /// in its format.
    pub(crate) fn load_and_start_logging(args: ServeArgs) -> Result<ServeConfig, i32> {
        let config = ServeConfig::load(args).map_err(|e| {
            eprintln!("ferrophp: {e}");
            2
        })?;
        crate::logging::init(&config.log, config.log_format);
        Ok(config)
    }

    /// Merges flags/env (`args`, which win) with a parsed file over the defaults, and
    /// checks the result. [`ServeConfig::load`] without the file read; public for the
    /// fuzz targets.
    #[doc(hidden)]
    pub fn resolve(args: ServeArgs, file: FileConfig) -> Result<ServeConfig, String> {
        let root = args.root.or(file.root).unwrap_or_else(default_root);
        if !root.is_dir() {
            return Err(format!(
                "document root {} is not a directory",
                root.display()
            ));
        }
        let threads = args
            .threads
            .or(file.threads)
            .unwrap_or_else(|| 2 * std::thread::available_parallelism().map_or(1, |n| n.get()));
        let php_stack_mb = args
            .php_stack_mb
            .or(file.php_stack_mb)
            .unwrap_or(worker::DEFAULT_PHP_STACK_SIZE >> 20);
        if php_stack_mb << 20 < worker::MIN_PHP_STACK_SIZE || php_stack_mb > 4096 {
            return Err(format!(
                "php_stack_mb must be between {} and 4096",
                worker::MIN_PHP_STACK_SIZE >> 20
            ));
        }
        if threads == 0 {
            return Err("threads must be at least 1".into());
        }
        let max_threads = args.max_threads.or(file.max_threads).unwrap_or(threads);
        if max_threads < threads {
            return Err(format!(
                "max_threads ({max_threads}) must be at least threads ({threads})"
            ));
        }
        let max_idle_time = match (args.max_idle_time, file.max_idle_time) {
            (Some(d), _) => d,
            (None, Some(text)) => parse_duration(&text)?,
            (None, None) => worker::DEFAULT_MAX_IDLE_TIME,
        };
        let tls = match (
            args.tls_cert.or(file.tls_cert),
            args.tls_key.or(file.tls_key),
        ) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("TLS needs both a certificate and a key".into()),
        };
        let mut env: Vec<(String, String)> = file.env.unwrap_or_default().into_iter().collect();
        for kv in &args.env {
            env.push(split_key_value(kv, "--env")?);
        }
        if !(args.clear_env || file.clear_env.unwrap_or(false)) {
            env = with_process_env(env);
        }
        let mut ini: Vec<(String, String)> = file.ini.unwrap_or_default().into_iter().collect();
        for kv in &args.ini {
            ini.push(split_key_value(kv, "-d")?);
        }
        let mut workers = file.worker.unwrap_or_default();
        for spec in &args.workers {
            let mut spec = WorkerSpec::parse_flag(spec)?;
            spec.max_requests = args.max_requests;
            workers.push(spec);
        }
        if let Some(growth) = args.worker_memory_growth.or(file.worker_memory_growth) {
            // Checked here so a typo fails at start-up, not when the workers boot.
            worker::MemoryGrowth::parse(&growth)?;
            for spec in workers.iter_mut().filter(|s| s.memory_growth.is_none()) {
                spec.memory_growth = Some(growth.clone());
            }
        }
        let mut metrics = ferrophp_metrics::Config::default();
        if let Some(a) = args
            .metrics_relative_accuracy
            .or(file.metrics_relative_accuracy)
        {
            if !(a > 0.0 && a < 1.0) {
                return Err(format!(
                    "metrics relative accuracy must be between 0 and 1 (exclusive), got {a}"
                ));
            }
            metrics.relative_accuracy = a;
        }
        if let Some(n) = args.metrics_max_series.or(file.metrics_max_series) {
            metrics.max_series = n;
        }
        let metrics_push = match args.metrics_push_url.or(file.metrics_push_url) {
            Some(url) => {
                if !url.starts_with("http://") {
                    return Err(format!(
                        "metrics push URL must start with http://, got {url}"
                    ));
                }
                let ms = args
                    .metrics_push_interval_ms
                    .or(file.metrics_push_interval_ms)
                    .unwrap_or(10_000);
                if ms == 0 {
                    return Err("metrics push interval must be at least 1 ms".into());
                }
                Some(MetricsPush {
                    url,
                    interval: Duration::from_millis(ms),
                    buffer: args
                        .metrics_push_buffer
                        .or(file.metrics_push_buffer)
                        .unwrap_or(60)
                        .max(1),
                })
            }
            None => None,
        };
        let mut watch = file.watch.unwrap_or_default();
        watch.extend(args.watch);
        let mut no_php_dirs = file.no_php_dirs.unwrap_or_default();
        no_php_dirs.extend(args.no_php_dirs);
        let positive_ms =
            |flag: Option<u64>, file: Option<u64>, name: &str, default: u64| match flag
                .or(file)
                .unwrap_or(default)
            {
                0 => Err(format!("{name} must be at least 1 ms")),
                ms => Ok(Duration::from_millis(ms)),
            };
        let body_timeout = positive_ms(
            args.body_timeout_ms,
            file.body_timeout_ms,
            "body timeout",
            60_000,
        )?;
        let send_timeout = positive_ms(
            args.send_timeout_ms,
            file.send_timeout_ms,
            "send timeout",
            60_000,
        )?;
        let idle_timeout = positive_ms(
            args.idle_timeout_ms,
            file.idle_timeout_ms,
            "idle timeout",
            60_000,
        )?;
        let max_connections = args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(10_000);
        if max_connections == 0 {
            return Err("max connections must be at least 1".into());
        }
        let static_cache_mb = args
            .static_cache_mb
            .or(file.static_cache_mb)
            .unwrap_or(crate::static_cache::DEFAULT_MB);
        let duration = |flag: Option<Duration>, file: Option<String>| match (flag, file) {
            (Some(d), _) => Ok(Some(d)),
            (None, Some(text)) => parse_duration(&text).map(Some),
            (None, None) => Ok(None),
        };
        let request_timeout = duration(args.request_timeout, file.request_timeout)?;
        if request_timeout.is_some_and(|d| d.is_zero()) {
            return Err("request timeout must be at least 1 ms (leave it unset for none)".into());
        }
        let retire_grace =
            duration(args.retire_grace, file.retire_grace)?.unwrap_or(worker::DEFAULT_RETIRE_GRACE);
        if retire_grace < Duration::from_millis(100) {
            return Err("retire grace must be at least 100ms".into());
        }
        let slowlog = match args.slowlog_ms.or(file.slowlog_ms) {
            Some(0) => return Err("slowlog_ms must be at least 1".into()),
            ms => ms.map(Duration::from_millis),
        };
        let deadlines = worker::DeadlineConfig {
            request_timeout,
            retire_grace,
            max_retired_threads: args
                .max_retired_threads
                .or(file.max_retired_threads)
                .unwrap_or(8),
            slowlog,
        };
        let session_gc_interval_ms = args
            .session_gc_interval_ms
            .or(file.session_gc_interval_ms)
            .unwrap_or(60_000)
            .max(1);
        Ok(ServeConfig {
            log_format: args.log_format.or(file.log_format).unwrap_or_default(),
            session_gc: args.session_gc.or(file.session_gc).unwrap_or_default(),
            session_gc_interval: Duration::from_millis(session_gc_interval_ms),
            no_php_dirs,
            sendfile_dir: args.sendfile_dir.or(file.sendfile_dir),
            workers,
            watch,
            route_cache: Duration::from_millis(
                args.route_cache_ms.or(file.route_cache_ms).unwrap_or(1000),
            ),
            static_cache_mb,
            admin: args.admin.or(file.admin),
            metrics,
            metrics_push,
            root,
            listen: args
                .listen
                .or(file.listen)
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            threads,
            max_threads,
            max_idle_time,
            php_stack_size: php_stack_mb << 20,
            tls,
            max_body_size: args.max_body_size.or(file.max_body_size).unwrap_or(1 << 30),
            max_wait: Duration::from_millis(
                args.max_wait_ms.or(file.max_wait_ms).unwrap_or(30_000),
            ),
            header_timeout: Duration::from_millis(
                args.header_timeout_ms
                    .or(file.header_timeout_ms)
                    .unwrap_or(10_000),
            ),
            max_header_size: args
                .max_header_size
                .or(file.max_header_size)
                .unwrap_or(64 * 1024)
                .max(8192),
            body_timeout,
            send_timeout,
            slow_request: match args.slow_request_ms.or(file.slow_request_ms).unwrap_or(0) {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            },
            idle_timeout,
            max_connections,
            grace: Duration::from_millis(args.grace_ms.or(file.grace_ms).unwrap_or(30_000)),
            access_log: !args.no_access_log && file.access_log.unwrap_or(true),
            env,
            ini,
            php_ini: args.php_ini.or(file.php_ini),
            server_name: args.server_name.or(file.server_name),
            log: args.log.or(file.log).unwrap_or_else(|| "info".into()),
            confine: args.confine || file.confine.unwrap_or(false),
            deadlines,
        })
    }
}

/// The process environment (UTF-8 entries only) followed by `configured`, which wins
/// over a process variable of the same name: what FrankenPHP puts first in every
/// request's `$_SERVER` (`--clear-env` turns it off).
fn with_process_env(configured: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !k.is_empty() && !configured.iter().any(|(c, _)| c == k))
        .collect();
    env.extend(configured);
    env
}

impl FileConfig {
    /// Parses the TOML text of a config file.
    pub fn parse(text: &str) -> Result<FileConfig, toml::de::Error> {
        toml::from_str::<FileConfig>(text)
    }
}

fn default_root() -> PathBuf {
    let public = Path::new("public");
    if public.is_dir() {
        public.to_path_buf()
    } else {
        PathBuf::from(".")
    }
}

pub(crate) fn split_key_value(kv: &str, flag: &str) -> Result<(String, String), String> {
    match kv.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("{flag} expects KEY=VALUE, got {kv:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml: &str, args: ServeArgs) -> Result<ServeConfig, String> {
        let file =
            FileConfig::parse(&format!("root = \".\"\n{toml}")).map_err(|e| e.to_string())?;
        ServeConfig::resolve(args, file)
    }

    #[test]
    fn deadline_settings_from_the_file_flags_and_defaults() {
        let d = resolve("", ServeArgs::default()).unwrap().deadlines;
        assert_eq!(d.request_timeout, None);
        assert_eq!(d.retire_grace, worker::DEFAULT_RETIRE_GRACE);
        assert_eq!(d.max_retired_threads, 8);
        assert_eq!(d.slowlog, None);

        let toml = "request_timeout = \"30s\"\nretire_grace = \"500ms\"\n\
                    max_retired_threads = 3\nslowlog_ms = 250";
        let d = resolve(toml, ServeArgs::default()).unwrap().deadlines;
        assert_eq!(d.request_timeout, Some(Duration::from_secs(30)));
        assert_eq!(d.retire_grace, Duration::from_millis(500));
        assert_eq!(d.max_retired_threads, 3);
        assert_eq!(d.slowlog, Some(Duration::from_millis(250)));

        // Flags (and their FERROPHP_* variables) win over the file.
        let args = ServeArgs {
            request_timeout: Some(Duration::from_secs(5)),
            slowlog_ms: Some(1000),
            max_retired_threads: Some(0),
            ..ServeArgs::default()
        };
        let d = resolve(toml, args).unwrap().deadlines;
        assert_eq!(d.request_timeout, Some(Duration::from_secs(5)));
        assert_eq!(d.slowlog, Some(Duration::from_secs(1)));
        assert_eq!(d.max_retired_threads, 0);
        assert_eq!(d.retire_grace, Duration::from_millis(500));

        for bad in [
            "request_timeout = \"0s\"",
            "request_timeout = \"soon\"",
            "retire_grace = \"10ms\"",
            "slowlog_ms = 0",
            "max_retired_threads = -1",
        ] {
            assert!(
                resolve(bad, ServeArgs::default()).is_err(),
                "{bad} accepted"
            );
        }
    }
}
