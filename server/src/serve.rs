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

/// Everything a request handler needs, shared by all connections.
struct App {
    router: Router,
    workers: WorkerRouter,
    php: PhpRunner,
    access_log: bool,
}

pub fn run(args: ServeArgs) -> i32 {
    let config = match ServeConfig::load(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ferrophp: {e}");
            return 2;
        }
    };
    crate::logging::init(&config.log, config.log_format);
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
    match runtime.block_on(serve(config)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e}");
            1
        }
    }
}

async fn serve(config: ServeConfig) -> Result<(), String> {
    let router = Router::new(&config.root)
        .map_err(|e| format!("document root {}: {e}", config.root.display()))?
        .with_no_php_dirs(&config.no_php_dirs)
        .map_err(|e| e.to_string())?
        .with_cache(config.route_cache);
    let tls = match &config.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
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
    let mut permits = vec![Arc::new(Semaphore::new(config.threads))];
    permits.extend(
        worker_configs
            .iter()
            .map(|w| Arc::new(Semaphore::new(w.threads))),
    );
    crate::metrics::configure(config.metrics);
    let session_ini = sessions::plan(config.session_gc, &config.ini, config.listen.port())?;
    let remove_at_exit = session_ini.remove_at_exit.clone();
    let engine = Engine::start(EngineConfig {
        threads: config.threads,
        ini: session_ini
            .forced
            .into_iter()
            .chain(config.ini.iter().cloned())
            .collect(),
        ini_defaults: SERVER_INI_DEFAULTS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(session_ini.defaults)
            .collect(),
        php_ini: config.php_ini.clone(),
        no_php_ini: false,
        workers: worker_configs,
        log_target: LogTarget::Tracing,
        cli: false,
        php_stack_size: config.php_stack_size,
    })
    .map_err(|e| e.to_string())?;
    let control = engine.control();
    workers::restart_on_sigusr1(control.clone());
    // Dropping the watcher stops it: keep it for the life of the server.
    let _watcher = if config.watch.is_empty() {
        None
    } else {
        Some(workers::watch(control.clone(), &config.watch)?)
    };
    if let Some(addr) = config.admin {
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
            document_root,
            env,
            server_name: config.server_name.clone(),
            sendfile,
        },
        router,
        workers: worker_router,
        access_log: config.access_log,
    });

    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(config.max_header_size)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(config.max_header_size as u32);
    let builder = Arc::new(builder);

    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(
        "listening on {scheme}://{local} (root {}, {} PHP threads)",
        app.router.document_root().display(),
        config.threads
    );
    // Tests and scripts read this line to learn the port when listening on :0.
    println!("ferrophp listening on {scheme}://{local}");

    let graceful = GracefulShutdown::new();
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
        let _ = stream.set_nodelay(true);
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
            async move { Ok::<_, Infallible>(handle(&app, req, &conn).await) }
        });
        match &tls {
            None => {
                let served = builder
                    .serve_connection_with_upgrades(
                        TokioIo::new(FirstBytesDeadline::new(
                            crate::interim::InterimIo::new(stream, interim_io),
                            config.header_timeout,
                        )),
                        service,
                    )
                    .into_owned();
                let watched = graceful.watch(served);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let header_timeout = config.header_timeout;
                tokio::spawn(async move {
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
    match app.router.route(req.uri().path()) {
        Route::Static(path) => static_files::serve(&path, req.method(), req.headers()).await,
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

/// HTTP/2 and HTTP/3 carry the target's host in `:authority`; RFC 9113 §8.3.1 says a
/// recipient must not use a Host header to find the target when `:authority` is present,
/// and should treat a request whose Host names another entity as malformed. Like nginx
/// (nginx/nginx#803, 2025), a Host that differs from `:authority` gets a 400, and a request with
/// `:authority` alone gets a Host header made from it, so `HTTP_HOST` and `SERVER_NAME`
/// always come from `:authority`. HTTP/1 requests are left alone (absolute-form
/// targets are another matter).
fn authority_as_host<B>(req: &mut Request<B>) -> Result<(), &'static str> {
    if req.version() < http::Version::HTTP_2 {
        return Ok(());
    }
    let Some(authority) = req.uri().authority() else {
        return Ok(());
    };
    let authority = authority.as_str();
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

/// Bounds the time a client may take to send the first bytes on a connection.
///
/// hyper-util's protocol detection (HTTP/1 or the HTTP/2 preface) reads before hyper's own
/// header timeout is armed and has no deadline of its own, so a client that connected and
/// sent nothing, or a prefix of the HTTP/2 preface, held its connection forever. Reads
/// fail with `TimedOut` after the deadline until the preface length (24 bytes) has been
/// read or a response has been written; hyper's timers cover everything after that.
struct FirstBytesDeadline<T> {
    inner: T,
    deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    read: usize,
}

impl<T> FirstBytesDeadline<T> {
    const PREFACE_LEN: usize = 24;

    fn new(inner: T, timeout: std::time::Duration) -> Self {
        FirstBytesDeadline {
            inner,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
            read: 0,
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
                    this.deadline = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = this
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if expired {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no request in time",
                    )));
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
        self.deadline = None;
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.deadline = None;
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
