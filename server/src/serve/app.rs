//! Building the [`App`] every request handler shares: the site (router and worker routes
//! of the release being served, `site.rs`), the PHP engine (ini, session plan,
//! `--confine`), the per-pool thread permits, and what runs beside them for the server's
//! life (reloads on SIGHUP/SIGUSR1, `--watch` restarts, the admin listener, metrics push,
//! the session sweeper), kept in [`AtExit`] until shutdown.

use std::path::PathBuf;
use std::sync::Arc;

use worker::{Engine, EngineConfig, EngineHooks, LogTarget, WorkerConfig};

use crate::config::ServeConfig;
use crate::metrics::PushHandle;
use crate::php_bridge::PhpRunner;
use crate::routes::Routes;
use crate::site::{self, Layout, Site, Sites};
use crate::workers;
use crate::{admin, sessions};

/// ini defaults for serving, the values of PHP's php.ini-production (which Debian's
/// php-fpm uses) plus `expose_php` off; a php.ini or `-d` may override them. Errors go to
/// the log, never into responses.
const SERVER_INI_DEFAULTS: &[(&str, &str)] = &[
    ("display_errors", "0"),
    ("display_startup_errors", "0"),
    ("log_errors", "1"),
    ("register_argc_argv", "0"),
    ("variables_order", "GPCS"),
    ("request_order", "GP"),
    ("zend.assertions", "-1"),
    ("output_buffering", "4096"),
    // No `X-Powered-By: PHP/8.x` advertising the exact version to every client (the
    // Server header is not sent at all). `-d expose_php=1` or php.ini turns it back on.
    ("expose_php", "0"),
];

/// ini defaults of the development server (`php-cli -S`): the CLI's, so errors show in
/// the page as text, as with `php -S`. Start-up errors (an extension that fails to load)
/// never reach a page or stdout under php -S; here they go to the log (stderr) only.
const DEV_INI_DEFAULTS: &[(&str, &str)] = &[
    ("display_errors", "1"),
    ("html_errors", "0"),
    ("display_startup_errors", "0"),
];

/// What `serve` does differently for the development server.
pub(super) struct DevMode {
    /// Its router script, run for every request.
    pub(super) router: Option<PathBuf>,
    /// `-n`: no php.ini.
    pub(super) no_php_ini: bool,
}

/// Everything a request handler needs, shared by all connections.
pub(super) struct App {
    /// The release being served (switched by a reload).
    pub(super) sites: Arc<Sites>,
    /// Serving as the development server (`php-cli -S`).
    pub(super) dev: bool,
    /// Its router script (`php-cli -S ... router.php`).
    pub(super) dev_router: Option<PathBuf>,
    pub(super) php: PhpRunner,
    /// The server's own routes, looked up before the app's (`dispatch::server_routes`,
    /// handed in by `serve/mod.rs`, so that this file does not depend on dispatch).
    pub(super) routes: Routes<App>,
    pub(super) access_log: bool,
    /// The Mercure hub, when one is configured (`mercure_mount.rs`).
    pub(super) mercure: Option<mercure::Hub>,
    /// `--mercure-discovery`: the `Link` header PHP's responses get.
    pub(super) mercure_link: Option<http::HeaderValue>,
    /// The PHP threads the pools may run at most (their ceilings, classic and workers):
    /// what the file descriptor reserve is sized for.
    pub(super) php_threads: usize,
}

/// What outlives the app's requests and ends after PHP shuts down.
pub(super) struct AtExit {
    /// Dropping the `--watch` watcher stops it: kept for the life of the server.
    pub(super) _watcher: Option<notify::RecommendedWatcher>,
    /// What PHP recorded since the last push interval leaves the process at exit.
    pub(super) metrics_push: Option<PushHandle>,
    /// The session directory this server made for itself.
    pub(super) remove_at_exit: Option<PathBuf>,
    /// The `[[schedule]]` entries' scheduler, stopped before PHP shuts down.
    pub(super) scheduler: Option<crate::background::SchedulerSlot>,
}

/// The configured paths and the site they resolve to now; the development server has no
/// front controller.
pub(super) fn site(config: &ServeConfig, dev: bool) -> Result<(Layout, Site), String> {
    let layout = Layout::new(
        &config.root,
        &config.no_php_dirs,
        config.route_cache,
        !dev,
        &config.workers,
    )?;
    let site = layout.site(&layout.worker_scripts()?)?;
    Ok((layout, site))
}

/// Starts PHP and everything around it; `layout` and `site` come from [`site`].
/// `replace_process` is what the engine calls when this process should be replaced
/// (`shutdown.rs` owns it: the server ends through its drain).
pub(super) async fn build(
    config: &ServeConfig,
    (layout, site): (Layout, Site),
    routes: Routes<App>,
    dev: Option<&DevMode>,
    replace_process: worker::ReplaceHook,
) -> Result<(App, AtExit), String> {
    let mut worker_configs = worker_configs(config)?;
    for (worker, configured) in worker_configs.iter_mut().zip(&layout.workers) {
        worker.document_root = Some(site.document_root.clone());
        // Named by the path as configured, which a deploy does not change.
        worker.name = Some(configured.script.display().to_string());
    }
    let worker_count = worker_configs.len();
    crate::metrics::configure(config.metrics);
    crate::metrics::set_instance(&config.instance);
    worker::observe::set_slow_request_threshold(config.slow_request);
    // Before PHP starts: requests may be traced from the first one on.
    crate::traces::configure();
    // Process-wide, read by the static file path: the configuration this process serves.
    crate::static_cache::configure(config.static_cache_mb);
    // The development server keeps PHP's own session defaults (files in the temporary
    // directory), as php -S does: several of them then share sessions.
    let session_ini = match dev {
        Some(_) => sessions::IniPlan {
            defaults: Vec::new(),
            forced: Vec::new(),
            remove_at_exit: None,
        },
        None => sessions::plan(config.session_gc, &config.ini, config.listen.port())?,
    };
    let server_ini_defaults = if dev.is_some() {
        DEV_INI_DEFAULTS
    } else {
        SERVER_INI_DEFAULTS
    };
    let remove_at_exit = session_ini.remove_at_exit.clone();
    let mut forced_ini = session_ini.forced;
    if config.confine {
        let known: Vec<(String, String)> = config
            .ini
            .iter()
            .chain(&session_ini.defaults)
            .cloned()
            .collect();
        let basedir = crate::confine::open_basedir(&layout, &known)?;
        tracing::info!("confined: open_basedir={basedir}");
        forced_ini.push(("open_basedir".into(), basedir));
    }
    // Before PHP starts: a worker script may publish while it boots.
    let mercure = match &config.mercure {
        Some(hub) => Some(crate::mercure_mount::start(hub.clone())?),
        None => None,
    };
    let engine = Engine::start(EngineConfig {
        threads: config.threads,
        max_threads: config.max_threads,
        max_idle_time: config.max_idle_time,
        ini: forced_ini
            .into_iter()
            .chain(config.ini.iter().cloned())
            .collect(),
        ini_defaults: server_ini_defaults
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(session_ini.defaults)
            .collect(),
        php_ini: config.php_ini.clone(),
        no_php_ini: dev.is_some_and(|d| d.no_php_ini),
        workers: worker_configs,
        background: crate::background::background_configs(config)?,
        jobs: crate::background::queue_config(config),
        log_target: LogTarget::Tracing,
        // `php-cli -S` stands in for `php -S`, whose scripts test for "cli-server".
        sapi_name: if dev.is_some() {
            worker::SapiName::DevServer
        } else {
            worker::SapiName::Server
        },
        php_stack_size: config.php_stack_size,
        deadlines: config.deadlines,
        hooks: EngineHooks {
            slow_log: Some(crate::logging::slow_log_sink(config.log_format)),
            replace_process: Some(replace_process),
        },
    })
    .map_err(|e| e.to_string())?;
    // Sized to each pool's ceiling (three per thread), so autoscaling has requests to
    // grow for.
    let permits = crate::php_bridge::PoolPermits::for_engine(&engine, worker_count);
    let php_threads = engine.max_threads(worker::Target::Classic)
        + (0..worker_count)
            .map(|i| engine.max_threads(worker::Target::Worker(i)))
            .sum::<usize>();
    let control = engine.control();
    let scheduler = crate::background::start_scheduler(config, control.clone())?;
    let sites = Arc::new(Sites::new(layout, site, control.clone()));
    site::reload_on_signals(sites.clone());
    let watcher = if config.watch.is_empty() {
        None
    } else {
        let on_change = mercure
            .as_ref()
            .filter(|_| config.hot_reload)
            .map(|hub| crate::mercure_mount::hot_reload(hub.clone()));
        Some(workers::watch(control.clone(), &config.watch, on_change)?)
    };
    if let Some(addr) = config.admin {
        if !addr.ip().is_loopback() {
            tracing::warn!(
                "admin listener on {addr}, beyond loopback: keep it off public networks"
            );
        }
        admin::serve(
            addr,
            control.clone(),
            sites.clone(),
            crate::status::StatusSetup {
                started: std::time::SystemTime::now(),
            },
        )
        .await?;
    }
    let metrics_push = config.metrics_push.clone().map(crate::metrics::spawn_push);
    if config.session_gc == crate::config::GcMode::Background {
        match session_settings(&engine).await {
            Some(effective) if effective.handler == "files" => {
                sessions::spawn_sweeper(Arc::new(effective), config.session_gc_interval)
            }
            // Redis, memcached, a database: the store expires sessions itself (phpredis
            // sets each key's TTL to gc_maxlifetime); there are no files to sweep.
            Some(effective) => tracing::info!(
                save_handler = %effective.handler,
                "sessions are not files: no background sweep"
            ),
            None => {
                tracing::warn!("could not read the session settings from PHP: no session sweep")
            }
        }
    }

    let sendfile = match &config.sendfile_dir {
        Some(dir) => Some(
            crate::sendfile::Sendfile::new(dir)
                .map_err(|e| format!("--sendfile-dir {}: {e}", dir.display()))?,
        ),
        None => None,
    };
    let env = worker::env_list(&config.env);
    let app = App {
        php: PhpRunner {
            engine,
            permits,
            max_wait: config.max_wait,
            max_body_size: config.max_body_size,
            body_timeout: config.body_timeout,
            send_timeout: config.send_timeout,
            env,
            server_name: config.server_name.as_deref().map(Arc::from),
            sendfile,
        },
        sites,
        routes,
        mercure,
        mercure_link: config
            .mercure_discovery
            .as_deref()
            .and_then(|link| http::HeaderValue::from_str(link).ok()),
        dev: dev.is_some(),
        dev_router: dev.and_then(|d| d.router.clone()),
        access_log: config.access_log,
        php_threads,
    };
    let at_exit = AtExit {
        _watcher: watcher,
        metrics_push,
        remove_at_exit,
        scheduler,
    };
    Ok((app, at_exit))
}

/// The configured workers, each with the server's environment under its own (a kernel
/// reads APP_ENV while booting, so the server's environment reaches worker boot code
/// too); a worker's own env wins over the server's.
fn worker_configs(config: &ServeConfig) -> Result<Vec<WorkerConfig>, String> {
    let mut worker_configs = config
        .workers
        .iter()
        .map(|spec| spec.to_config(config.threads))
        .collect::<Result<Vec<_>, _>>()?;
    for worker in &mut worker_configs {
        let own = std::mem::take(&mut worker.env);
        worker.env = config
            .env
            .iter()
            .filter(|(k, _)| !own.iter().any(|(o, _)| o == k))
            .cloned()
            .collect();
        worker.env.extend(own);
    }
    Ok(worker_configs)
}

/// Asks PHP for the effective session.save_path and gc_maxlifetime (php.ini may set
/// them) by running a two-line script on the classic pool.
async fn session_settings(engine: &Engine) -> Option<sessions::Effective> {
    let probe = std::env::temp_dir().join(format!("ferrophp-probe-{}.php", std::process::id()));
    std::fs::write(&probe, sessions::PROBE).ok()?;
    let sink = Arc::new(std::sync::Mutex::new(worker::BufferSink {
        head: None,
        body: Vec::new(),
    }));
    let rx = engine.submit(worker::ScriptRequest::new(
        probe.clone(),
        Box::new(sink.clone()),
    ));
    let ok = match rx {
        Ok(rx) => rx.await.is_ok(),
        Err(_) => false,
    };
    let _ = std::fs::remove_file(&probe);
    if !ok {
        return None;
    }
    let out = String::from_utf8_lossy(&sink.lock().ok()?.body).into_owned();
    sessions::parse_probe(&out)
}
