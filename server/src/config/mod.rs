//! `ferrophp serve` settings: command-line flags, `FERROPHP_*` environment variables and
//! an optional TOML file (`sources.rs`), merged in that order of precedence over the
//! defaults and checked here, into the [`ServeConfig`] the server runs with.

mod acme;
mod jobs;
mod mercure;
mod sources;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use self::mercure::{MercureArgs, HOT_RELOAD_TOPIC};
use crate::static_cache;
use crate::workers::WorkerSpec;
pub use acme::{AcmeArgs, AutoHttps};
pub use jobs::{BackgroundSpec, JobsArgs, JobsSettings, ScheduleSpec};
pub(crate) use sources::parse_duration;
pub use sources::{FileConfig, ServeArgs};

/// Resolved settings: what the server runs with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The document root (`--root`).
    pub root: PathBuf,
    /// The address to listen on (`--listen`).
    pub listen: SocketAddr,
    /// The classic pool's PHP threads, its floor when it autoscales (`--threads`).
    pub threads: usize,
    /// The classic pool's ceiling (`threads`: no autoscaling).
    pub max_threads: usize,
    /// How long a thread above its pool's floor may idle before it ends.
    pub max_idle_time: Duration,
    /// Bytes.
    pub php_stack_size: usize,
    /// The certificate chain and private key (PEM) when serving HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Whether a TLS listener also serves HTTP/3 on its port over UDP (`--no-http3`
    /// turns it off; TOML `http3 = false`).
    pub http3: bool,
    /// Automatic HTTPS (`--domain`): certificates from an ACME CA; `listen` is then the
    /// HTTPS address.
    pub auto_https: Option<AutoHttps>,
    /// Where state kept across restarts lives (`--data-dir`): `certs/`, `jobs/`,
    /// `mercure/`. `None` when neither it nor a home directory is known.
    pub data_dir: Option<PathBuf>,
    /// The largest request body accepted, in bytes (413 beyond).
    pub max_body_size: u64,
    /// How long a request may wait for a PHP thread before its 503.
    pub max_wait: Duration,
    /// The time allowed to receive a request's head.
    pub header_timeout: Duration,
    /// The largest request head, in bytes.
    pub max_header_size: usize,
    /// The longest wait for the next piece of a request body (408 after it).
    pub body_timeout: Duration,
    /// The longest a PHP thread waits for a client to take streamed output.
    pub send_timeout: Duration,
    /// `--slow-request-ms` (None: off).
    pub slow_request: Option<Duration>,
    /// How long a connection with no request in flight stays open.
    pub idle_timeout: Duration,
    /// The most client connections open at once.
    pub max_connections: usize,
    /// The time given to requests in flight on SIGTERM/SIGINT.
    pub grace: Duration,
    /// Whether each request is logged.
    pub access_log: bool,
    /// The environment of every request's `$_SERVER`, in order (later entries win).
    pub env: Vec<(String, String)>,
    /// ini settings applied after php.ini (`-d`, `[ini]`).
    pub ini: Vec<(String, String)>,
    /// The php.ini file or directory to use (`--php-ini`).
    pub php_ini: Option<PathBuf>,
    /// SERVER_NAME for requests without a Host header.
    pub server_name: Option<String>,
    /// The log filter (tracing `EnvFilter` syntax).
    pub log: String,
    /// The worker scripts and their pools.
    pub workers: Vec<WorkerSpec>,
    /// Globs of files whose changes restart the workers (`--watch`).
    pub watch: Vec<String>,
    /// How long a routing decision is reused (zero: resolved every request).
    pub route_cache: Duration,
    /// Static file content cache, MiB (0: off).
    pub static_cache_mb: u64,
    /// The admin listener's address, if any.
    pub admin: Option<SocketAddr>,
    /// Directories where PHP never runs (`--no-php-dir`).
    pub no_php_dirs: Vec<PathBuf>,
    /// The private directory PHP may hand files over from (X-Sendfile).
    pub sendfile_dir: Option<PathBuf>,
    /// The metrics registry's settings.
    pub metrics: ferrophp_metrics::Config,
    /// Push mode, if a collector URL is set.
    pub metrics_push: Option<MetricsPush>,
    /// This instance's name among several (`--instance`, else the host name).
    pub instance: String,
    /// Text or JSON log lines.
    pub log_format: crate::logging::LogFormat,
    /// Who collects expired sessions: the background sweep or PHP.
    pub session_gc: GcMode,
    /// The interval of the background session sweep.
    pub session_gc_interval: Duration,
    /// Whether PHP's file access is confined (`open_basedir`, `--confine`).
    pub confine: bool,
    /// Request deadlines and the slow log.
    pub deadlines: worker::DeadlineConfig,
    /// The Mercure hub, when a publisher key is set (`--mercure-*`, `[mercure]`).
    pub mercure: Option<::mercure::Config>,
    /// `--hot-reload`: file changes under `--watch` are published on the hub.
    pub hot_reload: bool,
    /// Background workers, the job queue's backend, the scheduler.
    pub jobs: JobsSettings,
    /// `--mercure-discovery`: the `Link` header PHP's responses get (`<hub>; rel="mercure"`).
    pub mercure_discovery: Option<String>,
}

impl ServeConfig {
    /// Reads the `--config` file, if any (else the packed one of a one-file package,
    /// `FERROPHP_PACKAGE_CONFIG`, which its launcher sets), and merges it with the flags
    /// ([`ServeConfig::resolve`]).
    pub fn load(args: ServeArgs) -> Result<ServeConfig, String> {
        let packed = std::env::var_os(ferrophp_package::launch::PACKAGE_CONFIG_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let file = match args.config.as_ref().or(packed.as_ref()) {
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
    /// fuzz targets. The steps run in the order of their checks, so the setting reported
    /// is the first one found wrong.
    #[doc(hidden)]
    pub fn resolve(mut args: ServeArgs, mut file: FileConfig) -> Result<ServeConfig, String> {
        let root = document_root(args.root.take().or(file.root.take()))?;
        let php = php_threads(&args, &file)?;
        let tls = tls_pair(&mut args, &mut file)?;
        // Only a data directory configured on purpose keeps the hub's history on disk.
        let explicit_data_dir = args.acme.data_dir.is_some() || file.data_dir.is_some();
        let data_dir = acme::data_dir(&mut args.acme, &mut file);
        let mercure = self::mercure::hub_config(
            &mut args.mercure,
            &mut file,
            data_dir.as_deref().filter(|_| explicit_data_dir),
        )?;
        let auto_https =
            acme::auto_https(&mut args.acme, &mut file, tls.as_ref(), data_dir.as_deref())?;
        let mut env = php_env(&args, &mut file)?;
        let watching = !args.watch.is_empty() || file.watch.as_ref().is_some_and(|w| !w.is_empty());
        let hot_reload =
            self::mercure::hot_reload(&args.mercure, &file, mercure.as_ref(), watching)?;
        let mercure_discovery = self::mercure::discovery(&args.mercure, &file, mercure.as_ref())?;
        if hot_reload {
            // FrankenPHP's name: what a page's hot-reload client subscribes to.
            env.push((
                "FRANKENPHP_HOT_RELOAD".into(),
                self::mercure::HOT_RELOAD_URL.into(),
            ));
        }
        let ini = php_ini_settings(&args, &mut file)?;
        let workers = workers(&mut args, &mut file)?;
        let jobs = jobs::settings(&mut args.jobs, &mut file)?;
        let instance = instance_name(&mut args, &mut file)?;
        let (metrics, metrics_push) = metrics(&mut args, &mut file, &instance)?;
        let limits = http_limits(&args, &file)?;
        let deadlines = deadlines(&args, &file)?;
        let listen = args
            .listen
            .or(file.listen)
            .unwrap_or(if auto_https.is_some() {
                acme::DEFAULT_HTTPS_LISTEN
            } else {
                DEFAULT_LISTEN
            });
        if auto_https.as_ref().is_some_and(|a| a.http_listen == listen) {
            return Err(format!(
                "--http-listen and --listen must differ (both are {listen})"
            ));
        }
        let mut no_php_dirs = file_then_flags(file.no_php_dirs.take(), args.no_php_dirs);
        no_php_dirs.extend(package_data_dirs(&root, &file));
        Ok(ServeConfig {
            root,
            listen,
            threads: php.threads,
            max_threads: php.max_threads,
            max_idle_time: php.max_idle_time,
            php_stack_size: php.php_stack_size,
            tls,
            http3: !args.no_http3 && file.http3.unwrap_or(true),
            auto_https,
            data_dir,
            max_body_size: limits.max_body_size,
            max_wait: limits.max_wait,
            header_timeout: limits.header_timeout,
            max_header_size: limits.max_header_size,
            body_timeout: limits.body_timeout,
            send_timeout: limits.send_timeout,
            slow_request: limits.slow_request,
            idle_timeout: limits.idle_timeout,
            max_connections: limits.max_connections,
            grace: limits.grace,
            access_log: !args.no_access_log && file.access_log.unwrap_or(true),
            env,
            ini,
            php_ini: args.php_ini.or(file.php_ini),
            server_name: args.server_name.or(file.server_name),
            log: args.log.or(file.log).unwrap_or_else(|| "info".into()),
            workers,
            watch: file_then_flags(file.watch, args.watch),
            route_cache: millis_or(args.route_cache_ms, file.route_cache_ms, 1000),
            static_cache_mb: args
                .static_cache_mb
                .or(file.static_cache_mb)
                .unwrap_or(static_cache::DEFAULT_MB),
            admin: args.admin.or(file.admin),
            no_php_dirs,
            sendfile_dir: args.sendfile_dir.or(file.sendfile_dir),
            metrics,
            metrics_push,
            instance,
            log_format: args.log_format.or(file.log_format).unwrap_or_default(),
            session_gc: args.session_gc.or(file.session_gc).unwrap_or_default(),
            session_gc_interval: millis_or(
                args.session_gc_interval_ms,
                file.session_gc_interval_ms,
                60_000,
            )
            .max(Duration::from_millis(1)),
            confine: args.confine || file.confine.unwrap_or(false),
            deadlines,
            mercure,
            hot_reload,
            jobs,
            mercure_discovery,
        })
    }
}

/// Where `serve` listens unless told: loopback only.
const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));

/// The document root: as configured, or `./public` if it exists, else `.`; a directory.
/// The app's writable paths (`[package] writable`, relative to the app directory, where
/// `serve` runs) that exist under the document root: in a one-file package each is a link
/// to the data directory. They become no-PHP directories, so uploads never run and
/// their files are served although they live outside the root (see
/// `Router::with_no_php_dirs`).
fn package_data_dirs(root: &Path, file: &FileConfig) -> Vec<PathBuf> {
    let (Ok(cwd), Ok(root)) = (std::env::current_dir(), std::path::absolute(root)) else {
        return Vec::new();
    };
    file.package_settings()
        .writable
        .iter()
        .filter_map(|w| {
            let dir = cwd.join(w.trim_end_matches('/'));
            let inside = dir.strip_prefix(&root).ok()?.to_path_buf();
            (dir.is_dir() && !inside.as_os_str().is_empty()).then_some(inside)
        })
        .collect()
}

fn document_root(configured: Option<PathBuf>) -> Result<PathBuf, String> {
    let root = configured.unwrap_or_else(default_root);
    if !root.is_dir() {
        return Err(format!(
            "document root {} is not a directory",
            root.display()
        ));
    }
    Ok(root)
}

/// The classic pool's threads: its floor and ceiling, how long a thread above the floor
/// may idle, and each thread's stack.
struct PhpThreads {
    threads: usize,
    max_threads: usize,
    max_idle_time: Duration,
    /// Bytes.
    php_stack_size: usize,
}

fn php_threads(args: &ServeArgs, file: &FileConfig) -> Result<PhpThreads, String> {
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
    let max_idle_time = match (args.max_idle_time, &file.max_idle_time) {
        (Some(d), _) => d,
        (None, Some(text)) => parse_duration(text)?,
        (None, None) => worker::DEFAULT_MAX_IDLE_TIME,
    };
    Ok(PhpThreads {
        threads,
        max_threads,
        max_idle_time,
        php_stack_size: php_stack_mb << 20,
    })
}

/// The TLS certificate chain and key: both, or neither (plain HTTP).
fn tls_pair(
    args: &mut ServeArgs,
    file: &mut FileConfig,
) -> Result<Option<(PathBuf, PathBuf)>, String> {
    match (
        args.tls_cert.take().or(file.tls_cert.take()),
        args.tls_key.take().or(file.tls_key.take()),
    ) {
        (Some(c), Some(k)) => Ok(Some((c, k))),
        (None, None) => Ok(None),
        _ => Err("TLS needs both a certificate and a key".into()),
    }
}

/// PHP's environment: the process's first (unless `--clear-env`), then the file's, then
/// `-e`; later entries win.
fn php_env(args: &ServeArgs, file: &mut FileConfig) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = file.env.take().unwrap_or_default().into_iter().collect();
    for kv in &args.env {
        env.push(split_key_value(kv, "--env")?);
    }
    if !(args.clear_env || file.clear_env.unwrap_or(false)) {
        env = with_process_env(env);
    }
    Ok(env)
}

/// PHP's ini settings: the file's, then `-d`.
fn php_ini_settings(
    args: &ServeArgs,
    file: &mut FileConfig,
) -> Result<Vec<(String, String)>, String> {
    let mut ini: Vec<(String, String)> = file.ini.take().unwrap_or_default().into_iter().collect();
    for kv in &args.ini {
        ini.push(split_key_value(kv, "-d")?);
    }
    Ok(ini)
}

/// The file's workers, then the flags' (with `--max-requests`), each with the memory
/// guard unless it has its own.
fn workers(args: &mut ServeArgs, file: &mut FileConfig) -> Result<Vec<WorkerSpec>, String> {
    let mut workers = file.worker.take().unwrap_or_default();
    for spec in &args.workers {
        let mut spec = WorkerSpec::parse_flag(spec)?;
        spec.max_requests = args.max_requests;
        workers.push(spec);
    }
    let growth = args.worker_memory_growth.take();
    if let Some(growth) = growth.or(file.worker_memory_growth.take()) {
        // Checked here so a typo fails at start-up, not when the workers boot.
        worker::MemoryGrowth::parse(&growth)?;
        for spec in workers.iter_mut().filter(|s| s.memory_growth.is_none()) {
            spec.memory_growth = Some(growth.clone());
        }
    }
    Ok(workers)
}

/// `--instance`, else the host name (a container's, which orchestrators set per replica:
/// `hostname:` in deploy/swarm/stack.yml, the pod name on Kubernetes).
fn instance_name(args: &mut ServeArgs, file: &mut FileConfig) -> Result<String, String> {
    let name = match args.instance.take().or(file.instance.take()) {
        Some(name) => name,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default(),
    };
    if name.chars().any(char::is_control) {
        return Err(format!("instance name {name:?} has control characters"));
    }
    Ok(name)
}

/// The metrics registry's settings, and push mode if a collector URL is set.
fn metrics(
    args: &mut ServeArgs,
    file: &mut FileConfig,
    instance: &str,
) -> Result<(ferrophp_metrics::Config, Option<MetricsPush>), String> {
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
    let Some(url) = args
        .metrics_push_url
        .take()
        .or(file.metrics_push_url.take())
    else {
        return Ok((metrics, None));
    };
    if !url.starts_with("http://") {
        return Err(format!(
            "metrics push URL must start with http://, got {url}"
        ));
    }
    let interval = millis_or(
        args.metrics_push_interval_ms,
        file.metrics_push_interval_ms,
        10_000,
    );
    if interval.is_zero() {
        return Err("metrics push interval must be at least 1 ms".into());
    }
    let buffer = args.metrics_push_buffer.or(file.metrics_push_buffer);
    let push = MetricsPush {
        url,
        instance: instance.to_owned(),
        interval,
        buffer: buffer.unwrap_or(60).max(1),
    };
    Ok((metrics, Some(push)))
}

/// The limits and timeouts of connections and requests.
struct HttpLimits {
    max_body_size: u64,
    max_wait: Duration,
    header_timeout: Duration,
    max_header_size: usize,
    body_timeout: Duration,
    send_timeout: Duration,
    slow_request: Option<Duration>,
    idle_timeout: Duration,
    max_connections: usize,
    grace: Duration,
}

fn http_limits(args: &ServeArgs, file: &FileConfig) -> Result<HttpLimits, String> {
    let (body, send, idle) = (
        args.body_timeout_ms,
        args.send_timeout_ms,
        args.idle_timeout_ms,
    );
    let body_timeout = positive_millis("body timeout", body, file.body_timeout_ms, 60_000)?;
    let send_timeout = positive_millis("send timeout", send, file.send_timeout_ms, 60_000)?;
    let idle_timeout = positive_millis("idle timeout", idle, file.idle_timeout_ms, 60_000)?;
    let max_connections = args
        .max_connections
        .or(file.max_connections)
        .unwrap_or(10_000);
    if max_connections == 0 {
        return Err("max connections must be at least 1".into());
    }
    Ok(HttpLimits {
        max_body_size: args.max_body_size.or(file.max_body_size).unwrap_or(1 << 30),
        max_wait: millis_or(args.max_wait_ms, file.max_wait_ms, 30_000),
        header_timeout: millis_or(args.header_timeout_ms, file.header_timeout_ms, 10_000),
        max_header_size: args
            .max_header_size
            .or(file.max_header_size)
            .unwrap_or(64 * 1024)
            .max(8192),
        body_timeout,
        send_timeout,
        slow_request: Some(millis_or(args.slow_request_ms, file.slow_request_ms, 0))
            .filter(|d| !d.is_zero()),
        idle_timeout,
        max_connections,
        grace: millis_or(args.grace_ms, file.grace_ms, 30_000),
    })
}

/// Request deadlines and the slow log.
fn deadlines(args: &ServeArgs, file: &FileConfig) -> Result<worker::DeadlineConfig, String> {
    let duration = |flag: Option<Duration>, file: &Option<String>| match (flag, file) {
        (Some(d), _) => Ok(Some(d)),
        (None, Some(text)) => parse_duration(text).map(Some),
        (None, None) => Ok(None),
    };
    let request_timeout = duration(args.request_timeout, &file.request_timeout)?;
    if request_timeout.is_some_and(|d| d.is_zero()) {
        return Err("request timeout must be at least 1 ms (leave it unset for none)".into());
    }
    let retire_grace =
        duration(args.retire_grace, &file.retire_grace)?.unwrap_or(worker::DEFAULT_RETIRE_GRACE);
    if retire_grace < Duration::from_millis(100) {
        return Err("retire grace must be at least 100ms".into());
    }
    let slowlog = match args.slowlog_ms.or(file.slowlog_ms) {
        Some(0) => return Err("slowlog_ms must be at least 1".into()),
        ms => ms.map(Duration::from_millis),
    };
    Ok(worker::DeadlineConfig {
        request_timeout,
        retire_grace,
        max_retired_threads: args
            .max_retired_threads
            .or(file.max_retired_threads)
            .unwrap_or(8),
        slowlog,
    })
}

/// A setting in milliseconds: the flag's, else the file's, else `default`.
fn millis_or(flag: Option<u64>, file: Option<u64>, default: u64) -> Duration {
    Duration::from_millis(flag.or(file).unwrap_or(default))
}

/// [`millis_or`] for a setting that must not be 0 (`name` says which in the error).
fn positive_millis(
    name: &str,
    flag: Option<u64>,
    file: Option<u64>,
    default: u64,
) -> Result<Duration, String> {
    match millis_or(flag, file, default) {
        d if d.is_zero() => Err(format!("{name} must be at least 1 ms")),
        d => Ok(d),
    }
}

/// A list setting: the file's entries, then the flags'.
fn file_then_flags<T>(file: Option<Vec<T>>, flags: Vec<T>) -> Vec<T> {
    let mut all = file.unwrap_or_default();
    all.extend(flags);
    all
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

/// Push mode settings (`--metrics-push`).
#[derive(Debug, Clone)]
pub struct MetricsPush {
    /// The collector's `http://` URL.
    pub url: String,
    /// Sent as the `instance` tag of every series: a collector that is pushed to has no
    /// scrape target to take the instance from.
    pub instance: String,
    /// Time between two pushes (`--metrics-push-interval-ms`).
    pub interval: Duration,
    /// Payloads kept while the collector is unreachable; beyond it the oldest is dropped
    /// (`--metrics-push-buffer`).
    pub buffer: usize,
}

/// `--session-gc`: who deletes expired session files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GcMode {
    /// A server thread sweeps the save path (`sessions.rs`), and PHP's own GC is off.
    #[default]
    Background,
    /// PHP's probability-based GC, as php-fpm leaves it.
    Php,
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

    /// `ferrophp serve`'s flags as clap reads them.
    fn flags(argv: &[&str]) -> ServeArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            serve: ServeArgs,
        }
        <Cli as clap::Parser>::try_parse_from(std::iter::once("serve").chain(argv.iter().copied()))
            .unwrap()
            .serve
    }

    #[test]
    fn domains_turn_on_automatic_https_with_its_own_listen_defaults() {
        let plain = resolve("", ServeArgs::default()).unwrap();
        assert!(plain.auto_https.is_none());
        assert_eq!(plain.listen, DEFAULT_LISTEN);

        let args = flags(&[
            "--domain",
            "Shop.Example.com",
            "--domain",
            "a.example.com,b.example.com",
            "--data-dir",
            "/var/lib/ferrophp",
            "--acme-email",
            "ops@example.com",
        ]);
        let config = resolve("", args).unwrap();
        let auto = config.auto_https.unwrap();
        assert_eq!(
            auto.acme.domains,
            ["shop.example.com", "a.example.com", "b.example.com"]
        );
        assert_eq!(config.listen, "0.0.0.0:443".parse().unwrap());
        assert_eq!(auto.http_listen, "0.0.0.0:80".parse().unwrap());
        assert_eq!(
            auto.acme.ca.directory_url,
            crate::tls::LETS_ENCRYPT_DIRECTORY
        );
        assert_eq!(auto.acme.ca.contact, ["mailto:ops@example.com"]);
        assert_eq!(auto.acme.data_dir, Path::new("/var/lib/ferrophp"));

        // The file's keys, any ports (tests run unprivileged), EAB decoded.
        let toml = "domains = [\"shop.example.com\"]\nlisten = \"127.0.0.1:8443\"\n\
                    http_listen = \"127.0.0.1:8080\"\ndata_dir = \"/tmp/d\"\n\
                    acme_directory = \"https://127.0.0.1:14000/dir\"\n\
                    acme_eab_kid = \"kid-1\"\nacme_eab_hmac_key = \"AAEC\"\n\
                    tls_cert = \"c.pem\"\ntls_key = \"k.pem\"";
        let config = resolve(toml, ServeArgs::default()).unwrap();
        let auto = config.auto_https.unwrap();
        assert_eq!(config.listen, "127.0.0.1:8443".parse().unwrap());
        assert_eq!(auto.http_listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(auto.acme.ca.directory_url, "https://127.0.0.1:14000/dir");
        let eab = auto.acme.ca.external_account.unwrap();
        assert_eq!(
            (eab.key_id.as_str(), eab.hmac_key.as_slice()),
            ("kid-1", &[0u8, 1, 2][..])
        );
        // The static pair is served beside the managed names.
        assert_eq!(
            auto.acme.static_certificates,
            [(PathBuf::from("c.pem"), PathBuf::from("k.pem"))]
        );
    }

    #[test]
    fn automatic_https_settings_are_checked() {
        for (argv, expected) in [
            (&["--domain", "*.example.com"][..], "not a DNS name"),
            (&["--domain", "localhost"][..], "not a DNS name"),
            (&["--domain", "192.0.2.1"][..], "not a DNS name"),
            (
                &[
                    "--domain",
                    "a.example.com",
                    "--acme-directory",
                    "http://ca/dir",
                ][..],
                "https://",
            ),
            (
                &["--domain", "a.example.com", "--acme-email", "nobody"][..],
                "not an e-mail",
            ),
            (
                &["--domain", "a.example.com", "--listen", "0.0.0.0:80"][..],
                "must differ",
            ),
            (
                &[
                    "--domain",
                    "a.example.com",
                    "--acme-eab-kid",
                    "k",
                    "--acme-eab-hmac-key",
                    "!",
                ][..],
                "base64url",
            ),
        ] {
            let mut argv = argv.to_vec();
            argv.extend(["--data-dir", "/tmp/d"]);
            let err = resolve("", flags(&argv)).unwrap_err();
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
    }

    #[test]
    fn acme_challenge_types_default_to_both_and_can_be_narrowed() {
        let types = |argv: &[&str], toml: &str| {
            let mut argv = argv.to_vec();
            argv.extend(["--domain", "a.example.com", "--data-dir", "/tmp/d"]);
            resolve(toml, flags(&argv)).map(|c| c.auto_https.unwrap().acme.challenges)
        };
        let both = crate::tls::ChallengeTypes {
            http01: true,
            tls_alpn01: true,
        };
        assert_eq!(types(&[], ""), Ok(both));
        let http = types(&["--acme-challenge", "http-01"], "").unwrap();
        assert!(http.http01 && !http.tls_alpn01);
        let alpn = types(&[], "acme_challenges = [\"tls-alpn-01\"]").unwrap();
        assert!(!alpn.http01 && alpn.tls_alpn01);
        // The flag wins over the file.
        let flag = types(
            &["--acme-challenge", "http-01,tls-alpn-01"],
            "acme_challenges = [\"tls-alpn-01\"]",
        );
        assert_eq!(flag, Ok(both));
        let err = types(&["--acme-challenge", "dns-01"], "").unwrap_err();
        assert!(err.contains("http-01 or tls-alpn-01"), "{err}");
    }
}
