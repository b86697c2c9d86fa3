//! `ferrophp serve`: the tokio runtime, listener (plain or TLS), per-connection hyper
//! service, request dispatch (static file, PHP, redirect, error), access log and graceful
//! shutdown on SIGTERM/SIGINT.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use worker::{Engine, EngineConfig, LogTarget, Target};

use crate::body::{self, ResponseBody};
use crate::config::{ServeArgs, ServeConfig};
use crate::metrics::Mode;
use crate::php_bridge::{Connection, PhpRunner, Script};
use crate::routing::{Route, Router};
use crate::workers::{self, WorkerRouter};
use crate::{admin, sessions, static_files, tls};

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

/// Streams one HTTP/2 connection may have open; more are refused (REFUSED_STREAM). Each
/// open stream is at most one PHP request waiting for a thread (or 503 after max_wait).
const H2_MAX_CONCURRENT_STREAMS: u32 = 100;
/// Streams the client opened and reset before we took them, allowed at once before the
/// connection gets GOAWAY (h2's rapid-reset guard; h2's own default).
const H2_MAX_PENDING_RESETS: usize = 20;
/// Streams we reset because the client broke the protocol, before GOAWAY (hyper's default).
const H2_MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// ini defaults of the development server (`php-cli -S`): the CLI's, so errors show in
/// the page as text, as with `php -S`. Start-up errors (an extension that fails to load)
/// never reach a page or stdout under php -S; here they go to the log (stderr) only.
const DEV_INI_DEFAULTS: &[(&str, &str)] = &[
    ("display_errors", "1"),
    ("html_errors", "0"),
    ("display_startup_errors", "0"),
];

/// `ferrophp php-cli -S`: PHP's development server, served by this module in classic
/// mode with what `php -S` does differently: a router script that runs for every
/// request, one response per connection, the php.ini choice of the CLI (`-n`, `-c`),
/// PHP's own session defaults, its start-up line on stderr and nothing on stdout.
pub struct DevServer {
    pub listen: std::net::SocketAddr,
    pub root: std::path::PathBuf,
    pub router: Option<std::path::PathBuf>,
    pub threads: usize,
    pub ini: Vec<(String, String)>,
    pub php_ini: Option<std::path::PathBuf>,
    pub no_php_ini: bool,
}

/// What `serve` does differently for the development server.
struct DevMode {
    router: Option<std::path::PathBuf>,
    no_php_ini: bool,
}

/// Everything a request handler needs, shared by all connections.
struct App {
    router: Router,
    /// Serving as the development server (`php-cli -S`).
    dev: bool,
    /// Its router script (`php-cli -S ... router.php`).
    dev_router: Option<std::path::PathBuf>,
    workers: WorkerRouter,
    php: PhpRunner,
    access_log: bool,
}

/// `inherited`: the listening socket a `--supervise` parent passed down (it outlives this
/// process, so connections wait instead of being refused while it restarts).
pub fn run(args: ServeArgs, inherited: Option<std::net::TcpListener>) -> i32 {
    let config = match ServeConfig::load(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ferrophp: {e}");
            return 2;
        }
    };
    crate::logging::init(&config.log, config.log_format);
    serve_to_the_end(config, inherited, None)
}

/// Runs `serve` on a new multi-threaded runtime until it stops; the exit status.
fn serve_to_the_end(
    config: ServeConfig,
    inherited: Option<std::net::TcpListener>,
    dev: Option<DevMode>,
) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(serve(config, inherited, dev)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e}");
            1
        }
    }
}

/// Runs the development server until SIGTERM/SIGINT; the exit status.
pub fn run_dev(dev: DevServer) -> i32 {
    let args = ServeArgs {
        root: Some(dev.root),
        listen: Some(dev.listen),
        threads: Some(dev.threads),
        // php -S answers immediately on SIGINT; a request in flight gets a moment.
        grace_ms: Some(500),
        session_gc: Some(sessions::GcMode::Php),
        log: Some("warn".into()),
        ..ServeArgs::default()
    };
    let mut config = match ServeConfig::resolve(args, Default::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ferrophp: {e}");
            return 1;
        }
    };
    config.ini = dev.ini;
    config.php_ini = dev.php_ini;
    let router = match dev.router.map(|r| r.canonicalize()).transpose() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ferrophp: router script: {e}");
            return 1;
        }
    };
    crate::logging::init(&config.log, config.log_format);
    let mode = DevMode {
        router,
        no_php_ini: dev.no_php_ini,
    };
    serve_to_the_end(config, None, Some(mode))
}

async fn serve(
    config: ServeConfig,
    inherited: Option<std::net::TcpListener>,
    dev: Option<DevMode>,
) -> Result<(), String> {
    let router = Router::new(&config.root)
        .map_err(|e| format!("document root {}: {e}", config.root.display()))?
        .with_no_php_dirs(&config.no_php_dirs)
        .map_err(|e| e.to_string())?
        .with_cache(config.route_cache);
    let router = match dev {
        Some(_) => router.without_front_controller(),
        None => router,
    };
    let tls = match &config.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let listener = match inherited {
        Some(l) => TcpListener::from_std(l).map_err(|e| format!("inherited listener: {e}"))?,
        None => TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?,
    };
    let local = listener.local_addr().map_err(|e| e.to_string())?;

    let mut worker_configs = config
        .workers
        .iter()
        .map(|spec| spec.to_config(config.threads))
        .collect::<Result<Vec<_>, _>>()?;
    // The server's environment reaches worker boot code too (a kernel reads APP_ENV while
    // booting); a worker's own env wins over it.
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
    let worker_router = WorkerRouter::new(&worker_configs, &config.workers)?;
    let worker_count = worker_configs.len();
    crate::metrics::configure(config.metrics);
    // The development server keeps PHP's own session defaults (files in the temporary
    // directory), as php -S does: several of them then share sessions.
    let session_ini = match &dev {
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
        let scripts: Vec<_> = worker_configs.iter().map(|w| w.script.clone()).collect();
        let basedir = crate::confine::open_basedir(router.document_root(), &scripts, &known)?;
        tracing::info!("confined: open_basedir={basedir}");
        forced_ini.push(("open_basedir".into(), basedir));
    }
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
        no_php_ini: dev.as_ref().is_some_and(|d| d.no_php_ini),
        workers: worker_configs,
        log_target: LogTarget::Tracing,
        cli: false,
        php_stack_size: config.php_stack_size,
    })
    .map_err(|e| e.to_string())?;
    let permits = crate::php_bridge::PoolPermits::for_engine(&engine, worker_count);
    let control = engine.control();
    workers::restart_on_sigusr1(control.clone());
    // Dropping the watcher stops it: keep it for the life of the server.
    let _watcher = if config.watch.is_empty() {
        None
    } else {
        Some(workers::watch(control.clone(), &config.watch)?)
    };
    if let Some(addr) = config.admin {
        if !addr.ip().is_loopback() {
            tracing::warn!(
                "admin listener on {addr}, beyond loopback: keep it off public networks"
            );
        }
        admin::serve(addr, control.clone()).await?;
    }
    let metrics_push = config.metrics_push.clone().map(crate::metrics::spawn_push);
    if config.session_gc == sessions::GcMode::Background {
        match session_settings(&engine).await {
            Some(effective) => {
                sessions::spawn_sweeper(Arc::new(effective), config.session_gc_interval)
            }
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
    let document_root: Arc<str> = router.document_root().to_string_lossy().into();
    let app = Arc::new(App {
        php: PhpRunner {
            engine,
            permits,
            max_wait: config.max_wait,
            max_body_size: config.max_body_size,
            body_timeout: config.body_timeout,
            send_timeout: config.send_timeout,
            document_root,
            env,
            server_name: config.server_name.clone(),
            sendfile,
        },
        router,
        dev: dev.is_some(),
        dev_router: dev.as_ref().and_then(|d| d.router.clone()),
        workers: worker_router,
        access_log: config.access_log,
    });

    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(config.max_header_size)
        // php -S closes each connection after its response; its test harnesses read
        // until the connection closes.
        .keep_alive(dev.is_none());
    // hyper's and h2's defaults already bound the HTTP/2 floods (CVE-2023-44487 rapid
    // reset, CONTINUATION floods, streams reset by our own errors); they are spelled out
    // so that a dependency update cannot loosen them unnoticed. http_hostile.rs attacks
    // each one.
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(config.max_header_size as u32)
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .max_pending_accept_reset_streams(H2_MAX_PENDING_RESETS)
        .max_local_error_reset_streams(H2_MAX_LOCAL_ERROR_RESETS);
    let builder = Arc::new(builder);

    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(
        "listening on {scheme}://{local} (root {}, {} PHP threads)",
        app.router.document_root().display(),
        config.threads
    );
    if dev.is_some() {
        // PHP's test harnesses wait for this line on stderr (and read the port from it).
        eprintln!(
            "[{}] PHP {} Development Server (http://{local}) started",
            log_date(),
            worker::PHP_VERSION
        );
    } else {
        // Tests and scripts read this line to learn the port when listening on :0.
        println!("ferrophp listening on {scheme}://{local}");
    }

    let graceful = GracefulShutdown::new();
    let connection_slots = Arc::new(Semaphore::new(config.max_connections));
    let mut shutdown = std::pin::pin!(shutdown_signal());
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Refused connections are closed at once rather than left in the backlog: the
        // client learns now, and a flood of idle sockets cannot grow memory or fds
        // without bound.
        let Ok(slot) = connection_slots.clone().try_acquire_owned() else {
            tracing::debug!("connection from {remote} refused: max connections reached");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let conn = Connection {
            remote_addr: remote,
            local_addr: local,
            https: tls.is_some(),
        };
        let app = app.clone();
        let builder = builder.clone();
        let conn = Arc::new(conn);
        // 1xx responses (103 Early Hints) for this connection's HTTP/1.1 requests.
        let interim = Arc::new(crate::interim::Interim::default());
        let interim_io = interim.clone();
        let requests = activity.clone();
        let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            let app = app.clone();
            let conn = conn.clone();
            if req.version() == http::Version::HTTP_11 {
                req.extensions_mut()
                    .insert(crate::interim::Hints::Http1(interim.clone()));
            } else if let Some(sender) = req
                .extensions_mut()
                .remove::<hyper::ext::InformationalSender>()
            {
                // A hint that comes too late is dropped, as on HTTP/1.1.
                let send = move |response| {
                    let _ = sender.send(response);
                };
                req.extensions_mut()
                    .insert(crate::interim::Hints::Http2(Arc::new(send)));
            }
            // Held until the response body is done (or dropped), so a long download
            // or a slow script never counts as idle; released early if PHP gives up on a
            // client that stopped reading.
            let in_flight = requests.begin();
            req.extensions_mut()
                .insert(crate::php_bridge::OnStall(in_flight.release_hook()));
            async move {
                let response = handle(&app, req, &conn).await;
                Ok::<_, Infallible>(response.map(|b| InFlightBody::new(b, in_flight)))
            }
        });
        match &tls {
            None => {
                let served = builder
                    .serve_connection_with_upgrades(
                        TokioIo::new(FirstBytesDeadline::new(
                            crate::interim::InterimIo::new(stream, interim_io),
                            config.header_timeout,
                            config.idle_timeout,
                            activity,
                        )),
                        service,
                    )
                    .into_owned();
                let watched = graceful.watch(served);
                tokio::spawn(async move {
                    let _ = watched.await;
                    drop(slot);
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let header_timeout = config.header_timeout;
                let idle_timeout = config.idle_timeout;
                tokio::spawn(async move {
                    let _slot = slot;
                    let Ok(Ok(tls_stream)) =
                        tokio::time::timeout(header_timeout, acceptor.accept(stream)).await
                    else {
                        return;
                    };
                    let served = builder
                        .serve_connection_with_upgrades(
                            TokioIo::new(FirstBytesDeadline::new(
                                crate::interim::InterimIo::new(tls_stream, interim_io),
                                header_timeout,
                                idle_timeout,
                                activity,
                            )),
                            service,
                        )
                        .into_owned();
                    let _ = watcher.watch(served).await;
                });
            }
        }
    }

    tracing::info!(
        "shutting down: no new connections, waiting up to {:?} for requests in flight",
        config.grace
    );
    admin::set_draining();
    drop(listener);
    if tokio::time::timeout(config.grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over with requests still in flight");
    }
    let app = Arc::try_unwrap(app).map_err(|_| "connections still hold the app".to_string());
    match app {
        Ok(app) => {
            // Scripts may still run (fastcgi_finish_request); the engine waits for them.
            tokio::task::spawn_blocking(move || app.php.engine.shutdown())
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!("PHP shut down cleanly");
        }
        Err(e) => tracing::warn!("{e}; exiting without PHP shutdown"),
    }
    // What PHP recorded since the last push interval leaves the process too.
    if let Some(push) = metrics_push {
        push.finish(Duration::from_secs(5)).await;
    }
    if let Some(dir) = remove_at_exit {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
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

/// The date as php -S writes it in its log lines ("Tue Dec  1 01:32:14 2026", UTC).
fn log_date() -> String {
    // "Tue, 01 Dec 2026 01:32:14 GMT"
    let http = httpdate::fmt_http_date(std::time::SystemTime::now());
    let p: Vec<&str> = http.split_whitespace().collect();
    match p.as_slice() {
        [day, d, mon, y, t, _] => format!(
            "{} {mon} {:>2} {t} {y}",
            day.trim_end_matches(','),
            d.trim_start_matches('0')
        ),
        _ => http,
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}

async fn handle(app: &App, req: Request<Incoming>, conn: &Connection) -> Response<ResponseBody> {
    let started = Instant::now();
    let method = req.method().clone();
    let uri = req.uri().clone();
    let mut mode = Mode::Static;
    let response = dispatch(app, req, conn, &mut mode).await;
    crate::metrics::record_request(response.status().as_u16(), started.elapsed());
    crate::metrics::count_request(mode, response.status().as_u16());
    if app.access_log {
        crate::logging::access(conn.remote_addr, &method, &uri, &response, mode, started);
    }
    response
}

/// `mode` is set to the PHP mode when PHP answers (for metrics and the access log).
async fn dispatch(
    app: &App,
    mut req: Request<Incoming>,
    conn: &Connection,
    mode: &mut Mode,
) -> Response<ResponseBody> {
    if let Err(why) = authority_as_host(&mut req).and_then(|()| check_host(&req)) {
        tracing::debug!("bad request: {why}");
        return body::text_response(StatusCode::BAD_REQUEST, "Bad Request");
    }
    if let Some(refusal) = refuse_tunnel_or_odd_framing(&req) {
        return refusal;
    }
    if app.dev {
        return dev_dispatch(app, req, conn, mode).await;
    }
    match app.router.route(req.uri().path()) {
        route @ Route::Static(_) => non_php_route(route, &req).await,
        Route::Php {
            script_filename,
            script_name,
            path_info,
            document_uri,
        } => {
            let target = app
                .workers
                .by_path(req.uri().path())
                .or_else(|| app.workers.by_script(&script_filename))
                .map_or(Target::Classic, Target::Worker);
            let script = Script {
                filename: script_filename,
                script_name,
                path_info,
                document_uri,
            };
            *mode = match target {
                Target::Classic => Mode::Classic,
                Target::Worker(_) => Mode::Worker,
            };
            app.php.run(req, conn, script, target).await
        }
        route @ Route::RedirectToSlash => non_php_route(route, &req).await,
        Route::NotFound => match app.workers.by_path(req.uri().path()) {
            // A worker with a `match` pattern serves paths that name no file.
            Some(i) => {
                let script = Script {
                    filename: app.workers.script(i).to_path_buf(),
                    script_name: String::new(),
                    path_info: String::new(),
                    document_uri: req.uri().path().to_owned(),
                };
                *mode = Mode::Worker;
                app.php.run(req, conn, script, Target::Worker(i)).await
            }
            None => body::text_response(StatusCode::NOT_FOUND, "Not Found"),
        },
        Route::Forbidden => {
            tracing::debug!(path = req.uri().path(), "PHP refused in a no-PHP directory");
            body::text_response(StatusCode::FORBIDDEN, "Forbidden")
        }
        Route::BadRequest(why) => {
            tracing::debug!(path = req.uri().path(), "bad request: {why}");
            body::text_response(StatusCode::BAD_REQUEST, "Bad Request")
        }
    }
}

/// The development server's routing, as php -S: a path naming no file (and without a dot)
/// falls back to the nearest `index.php`/`index.html` up the path; the router script (if
/// any) runs first for every request; without one, or when it returns false, the PHP
/// script runs (in the same request) or the static file is served.
async fn dev_dispatch(
    app: &App,
    req: Request<Incoming>,
    conn: &Connection,
    mode: &mut Mode,
) -> Response<ResponseBody> {
    let path = req.uri().path().to_owned();
    let mut route = app.router.route(&path);
    // php -S walks up a path without a dot to the nearest directory with an index.php or
    // index.html; the rest of the path is PATH_INFO.
    if matches!(route, Route::NotFound) && !path.contains('.') {
        let mut dir = path.as_str();
        'up: while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            for index in ["index.php", "index.html"] {
                match app.router.route(&format!("{dir}/{index}")) {
                    Route::Php {
                        script_filename,
                        script_name,
                        document_uri,
                        ..
                    } => {
                        route = Route::Php {
                            script_filename,
                            script_name,
                            path_info: path[dir.len()..].to_owned(),
                            document_uri,
                        };
                        break 'up;
                    }
                    found @ Route::Static(_) => {
                        route = found;
                        break 'up;
                    }
                    _ => {}
                }
            }
        }
    }
    let router = app.dev_router.clone();
    let script = match route {
        Route::Php {
            script_filename,
            script_name,
            path_info,
            document_uri,
        } => Script {
            filename: script_filename,
            script_name,
            path_info,
            document_uri,
        },
        // The router may still answer for anything else (a static file, a redirect, a
        // missing file); it is then the request's script.
        other => {
            let Some(router) = router else {
                return non_php_route(other, &req).await;
            };
            let method = req.method().clone();
            let headers = req.headers().clone();
            let uri = req.uri().clone();
            let script = Script {
                script_name: format!(
                    "/{}",
                    router.file_name().unwrap_or_default().to_string_lossy()
                ),
                filename: router.clone(),
                path_info: String::new(),
                document_uri: path,
            };
            *mode = Mode::Classic;
            let served = app
                .php
                .run_with_router(req, conn, script, Target::Classic, Some(router))
                .await;
            return match served {
                Some(response) => response,
                None => {
                    let mut bare = Request::new(());
                    *bare.method_mut() = method;
                    *bare.headers_mut() = headers;
                    *bare.uri_mut() = uri;
                    *mode = Mode::Static;
                    non_php_route(other, &bare).await
                }
            };
        }
    };
    *mode = Mode::Classic;
    app.php
        .run_with_router(req, conn, script, Target::Classic, router)
        .await
        .unwrap_or_else(|| body::text_response(StatusCode::NOT_FOUND, "Not Found"))
}

/// The answer to a route that runs no PHP.
async fn non_php_route<B>(route: Route, req: &Request<B>) -> Response<ResponseBody> {
    match route {
        Route::Static(path) => static_files::serve(&path, req.method(), req.headers()).await,
        Route::RedirectToSlash => {
            let mut location = format!("{}/", req.uri().path());
            if let Some(q) = req.uri().query() {
                location.push('?');
                location.push_str(q);
            }
            let mut resp =
                body::text_response(StatusCode::PERMANENT_REDIRECT, "Permanent Redirect");
            if let Ok(v) = http::HeaderValue::from_str(&location) {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            resp
        }
        Route::Forbidden => body::text_response(StatusCode::FORBIDDEN, "Forbidden"),
        Route::BadRequest(_) => body::text_response(StatusCode::BAD_REQUEST, "Bad Request"),
        Route::NotFound | Route::Php { .. } => {
            body::text_response(StatusCode::NOT_FOUND, "Not Found")
        }
    }
}

/// HTTP/2 and HTTP/3 carry the target's host in `:authority`; RFC 9113 §8.3.1 says a
/// recipient must not use a Host header to find the target when `:authority` is present,
/// and should treat a request whose Host names another entity as malformed. Like nginx
/// (nginx/nginx#803, 2025), a Host that differs from `:authority` gets a 400, and a request with
/// `:authority` alone gets a Host header made from it, so `HTTP_HOST` and `SERVER_NAME`
/// always come from `:authority`.
///
/// HTTP/1 requests in absolute form (`GET http://a.test/x.php`, what proxies send) follow
/// RFC 9112 §3.2.2: the target's authority wins and any Host header is replaced by it,
/// so `HTTP_HOST` and `SERVER_NAME` cannot say one host while the target names another.
fn authority_as_host<B>(req: &mut Request<B>) -> Result<(), &'static str> {
    let Some(authority) = req.uri().authority() else {
        return Ok(());
    };
    let authority = authority.as_str();
    if req.version() < http::Version::HTTP_2 {
        if req.method() == http::Method::CONNECT {
            return Ok(());
        }
        // Two Host headers or a malformed one are refused all the same (§3.2): a front end
        // may have routed by either.
        check_host(req)?;
        let value = http::HeaderValue::from_str(authority).map_err(|_| "invalid authority")?;
        req.headers_mut().remove(http::header::HOST);
        req.headers_mut().insert(http::header::HOST, value);
        return Ok(());
    }
    let hosts = req.headers().get_all(http::header::HOST);
    if hosts.iter().next().is_some() {
        if hosts
            .iter()
            .any(|h| !h.as_bytes().eq_ignore_ascii_case(authority.as_bytes()))
        {
            return Err("Host header differs from :authority");
        }
        return Ok(());
    }
    let value = http::HeaderValue::from_str(authority).map_err(|_| "invalid :authority")?;
    req.headers_mut().insert(http::header::HOST, value);
    Ok(())
}

/// Refuses, and closes the connection after, two kinds of HTTP/1 request whose following
/// bytes a front end may read differently than hyper does:
///
/// - CONNECT: we are no proxy. What a client sends after it is tunnel data, never a
///   request for us (405; hyper would otherwise parse it as the next request).
/// - A Transfer-Encoding other than a single `chunked` (`identity, chunked`,
///   `chunked` twice, `gzip, chunked`): hyper frames by the final `chunked` and ignores
///   the rest, while a front end may refuse the header and frame by Content-Length, the
///   classic smuggling split. RFC 9112 §6.1: a coding the server does not understand gets
///   501.
fn refuse_tunnel_or_odd_framing<B>(req: &Request<B>) -> Option<Response<ResponseBody>> {
    if req.version() >= http::Version::HTTP_2 {
        return None;
    }
    let mut response = if req.method() == http::Method::CONNECT {
        let mut r = body::text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        r.headers_mut().insert(
            http::header::ALLOW,
            http::HeaderValue::from_static("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"),
        );
        r
    } else {
        let mut codings = req
            .headers()
            .get_all(http::header::TRANSFER_ENCODING)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .map(|c| c.trim_ascii());
        match (codings.next(), codings.next()) {
            (None, _) => return None,
            (Some(c), None) if c.eq_ignore_ascii_case(b"chunked") => return None,
            _ => body::text_response(StatusCode::NOT_IMPLEMENTED, "Not Implemented"),
        }
    };
    tracing::debug!(method = %req.method(), "refused: CONNECT or a transfer coding other than chunked");
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    Some(response)
}

/// RFC 9112 §3.2: an HTTP/1.1 request needs exactly one Host header (unless the target is
/// in absolute form). Its value becomes SERVER_NAME, which applications use in paths and
/// URLs, so like nginx we also refuse values that are not a plain host[:port].
fn check_host<B>(req: &Request<B>) -> Result<(), &'static str> {
    let mut hosts = req.headers().get_all(http::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err("several Host headers");
    }
    let Some(host) = host else {
        if req.version() == http::Version::HTTP_11 && req.uri().host().is_none() {
            return Err("HTTP/1.1 request without Host");
        }
        return Ok(());
    };
    let host = host.as_bytes();
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || b"-._~:[]%!$&'()*+,;=".contains(b);
    if !host.iter().all(allowed)
        || host.windows(2).any(|w| w == b"..")
        || host.first() == Some(&b'.')
    {
        return Err("invalid Host header");
    }
    Ok(())
}

/// Which requests of one connection are in flight, and since when none has been: what
/// the idle timeout of [`FirstBytesDeadline`] looks at.
#[derive(Clone)]
struct Activity(Arc<ActivityState>);

struct ActivityState {
    origin: Instant,
    in_flight: std::sync::atomic::AtomicUsize,
    /// Milliseconds after `origin` when the last request ended.
    idle_since_ms: std::sync::atomic::AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity(Arc::new(ActivityState {
            origin: Instant::now(),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            idle_since_ms: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    fn begin(&self) -> InFlight {
        self.0
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        InFlight(Arc::new(InFlightState {
            activity: self.0.clone(),
            released: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// When the connection may be closed as idle, if no request is in flight.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        use std::sync::atomic::Ordering;
        if self.0.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(self.0.idle_since_ms.load(Ordering::Acquire));
        Some(self.0.origin + since + idle)
    }
}

/// One request in flight; dropped when its response body is done or dropped.
struct InFlight(Arc<InFlightState>);

struct InFlightState {
    activity: Arc<ActivityState>,
    released: std::sync::atomic::AtomicBool,
}

impl InFlightState {
    /// Stops counting the request (once, whichever comes first: the end of its body or
    /// the PHP side giving up on the client).
    fn release(&self) {
        use std::sync::atomic::Ordering;
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let now = self.activity.origin.elapsed().as_millis() as u64;
        self.activity.idle_since_ms.fetch_max(now, Ordering::AcqRel);
        self.activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    fn release_hook(&self) -> Arc<dyn Fn() + Send + Sync> {
        let state = self.0.clone();
        Arc::new(move || state.release())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A response body that keeps its request counted as in flight until it is done.
struct InFlightBody {
    inner: ResponseBody,
    _in_flight: InFlight,
}

impl InFlightBody {
    fn new(inner: ResponseBody, in_flight: InFlight) -> Self {
        InFlightBody {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl http_body::Body for InFlightBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Bounds the time a client may take to send the first bytes on a connection, and the
/// time a connection may stay open with no request in flight.
///
/// hyper-util's protocol detection (HTTP/1 or the HTTP/2 preface) reads before hyper's own
/// header timeout is armed and has no deadline of its own, so a client that connected and
/// sent nothing, or a prefix of the HTTP/2 preface, held its connection forever. Reads
/// fail with `TimedOut` after the header deadline until the preface length (24 bytes) has
/// been read or a response has been written. After that, hyper's header timeout bounds an
/// idle HTTP/1 keep-alive connection, but nothing bounds an idle HTTP/2 connection (PINGs
/// and SETTINGS keep it busy without a request): reads fail once no request has been in
/// flight for `idle`.
struct FirstBytesDeadline<T> {
    inner: T,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Still before the first bytes (the header deadline is armed).
    first_bytes: bool,
    read: usize,
    idle: Duration,
    activity: Activity,
}

impl<T> FirstBytesDeadline<T> {
    const PREFACE_LEN: usize = 24;

    fn new(inner: T, timeout: Duration, idle: Duration, activity: Activity) -> Self {
        FirstBytesDeadline {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            first_bytes: true,
            read: 0,
            idle,
            activity,
        }
    }

    fn first_bytes_done(&mut self) {
        if self.first_bytes {
            self.first_bytes = false;
            self.rearm();
        }
    }

    /// Points the timer at the idle deadline (or one idle period ahead while requests
    /// are in flight); true if that deadline has passed.
    fn rearm(&mut self) -> bool {
        let now = Instant::now();
        match self.activity.idle_deadline(self.idle) {
            Some(at) if at <= now => true,
            Some(at) => {
                self.deadline.as_mut().reset(at.into());
                false
            }
            None => {
                self.deadline.as_mut().reset((now + self.idle).into());
                false
            }
        }
    }
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstBytesDeadline<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::future::Future;
        use std::task::Poll;
        let this = &mut *self;
        let before = buf.filled().len();
        match std::pin::Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.read += buf.filled().len() - before;
                if this.read >= Self::PREFACE_LEN {
                    this.first_bytes_done();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                while this.deadline.as_mut().poll(cx).is_ready() {
                    if this.first_bytes {
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no request in time",
                        )));
                    }
                    if this.rearm() {
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "connection idle",
                        )));
                    }
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstBytesDeadline<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.first_bytes_done();
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.first_bytes_done();
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
