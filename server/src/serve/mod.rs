//! `ferrophp serve` (and `php-cli -S`, the development server): the tokio runtime and
//! the server's life from start to exit. The parts, in the order a server goes through
//! them:
//!
//! - `listeners`: the list of listeners, each a socket with its protocol (`tcp.rs`: TCP,
//!   plain or TLS; `redirect.rs`: automatic HTTPS's plain listener; `quic.rs`: HTTP/3
//!   over UDP beside TLS), bound before PHP starts or taken over from a `--supervise`
//!   parent;
//! - automatic HTTPS (`--domain`): the certificate manager (`tls::CertManager`) is made
//!   before the listeners (its resolver serves the HTTPS and QUIC ones, its challenges
//!   the plain one), watched by `/metrics`, and its renewal task runs once they accept,
//!   until the accept loops end;
//! - `app`: building the `App` all requests share (router, workers, the PHP
//!   engine and its permits, admin listener, metrics push, session sweeper);
//! - `accept`: the file descriptor limit (raised, and the connection cap fitted into it)
//!   and the accept loops, one per listener (one connection cap for all, a task per
//!   connection, backing off when descriptors run out);
//! - `connection`: HTTP/1.1 and HTTP/2 on one accepted byte stream (hyper's builder,
//!   timeouts, idle tracking, the 1xx handles, graceful-shutdown watcher, `Alt-Svc`), and
//!   HTTP/3 on one QUIC connection (`h3.rs`);
//! - `dispatch`: one request, whatever protocol carried it (checks, the server's own
//!   routes, routing, static file, PHP, `php -S` routing);
//! - `shutdown`: signals, drain, PHP shutdown.

mod accept;
mod app;
mod connection;
mod dispatch;
mod listeners;
mod shutdown;

use std::sync::Arc;

use hyper_util::server::graceful::GracefulShutdown;

use crate::config::{ServeArgs, ServeConfig};
use crate::sockets::{self, InheritedSockets};
use app::DevMode;

/// `ferrophp php-cli -S`: PHP's development server, served by this module in classic
/// mode with what `php -S` does differently: a router script that runs for every
/// request, one response per connection, the php.ini choice of the CLI (`-n`, `-c`),
/// PHP's own session defaults, its start-up line on stderr and nothing on stdout.
pub struct DevServer {
    /// The address to listen on.
    pub listen: std::net::SocketAddr,
    /// The document root (`-t`).
    pub root: std::path::PathBuf,
    /// The router script, run for every request.
    pub router: Option<std::path::PathBuf>,
    /// PHP threads.
    pub threads: usize,
    /// ini settings (`-d`).
    pub ini: Vec<(String, String)>,
    /// The php.ini file or directory (`-c`).
    pub php_ini: Option<std::path::PathBuf>,
    /// No php.ini at all (`-n`).
    pub no_php_ini: bool,
}

/// `ferrophp serve`: runs the server until it stops; the exit status. `inherited`: the
/// listening sockets a `--supervise` parent passed down (they outlive this process, so
/// connections wait instead of being refused while it restarts); sockets that do not
/// match the configuration's are refused like a configuration error (exit 2).
pub fn run(args: ServeArgs, inherited: InheritedSockets) -> i32 {
    let config = match ServeConfig::load_and_start_logging(args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let inherited = if inherited.is_empty() {
        None
    } else {
        match sockets::adopt(inherited, &sockets::specs(&config)) {
            Ok(sockets) => Some(sockets),
            Err(e) => {
                tracing::error!("{e}");
                return 2;
            }
        }
    };
    serve_to_the_end(config, inherited, None)
}

/// Runs `serve` on a new multi-threaded runtime until it stops; the exit status.
fn serve_to_the_end(
    config: ServeConfig,
    inherited: Option<Vec<socket2::Socket>>,
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
        Ok(()) if shutdown::replacement_requested() => shutdown::REPLACE_EXIT_STATUS,
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
        session_gc: Some(crate::config::GcMode::Php),
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

/// Runs one server to its end: builds the app, listens, accepts until SIGTERM/SIGINT,
/// then drains and shuts PHP down.
async fn serve(
    config: ServeConfig,
    inherited: Option<Vec<socket2::Socket>>,
    dev: Option<DevMode>,
) -> Result<(), String> {
    // Before anything opens descriptors: connections, PHP and its files share them.
    let fd_limit = accept::raise_fd_limit();
    let site = app::site(&config, dev.is_some())?;
    // Loads the stored certificates (a restart orders nothing); orders come later.
    let certificates = match &config.auto_https {
        Some(auto) => Some(crate::tls::CertManager::new(auto.acme.clone())?),
        None => None,
    };
    // Listening before PHP starts: a taken port fails fast, without booting PHP.
    let listeners = listeners::open(&config, inherited, certificates.as_ref())?;
    let routes = dispatch::server_routes(config.mercure.is_some());
    let (app, at_exit) = app::build(
        &config,
        site,
        routes,
        dev.as_ref(),
        shutdown::replace_hook(),
    )
    .await?;
    let app = Arc::new(app);
    // Now that PHP and the listener hold their descriptors.
    let max_connections =
        accept::fit_to_fd_limit(fd_limit, config.max_connections, app.php_threads);
    // Before the listening line: whoever reads it may send SIGTERM at once.
    let stop = shutdown::signal();

    for listener in &listeners {
        let (scheme, local) = (listener.scheme(), listener.local_addr());
        if listener.http3_port().is_some() {
            // Its own line, which nothing reading the listening lines takes for another
            // TCP port.
            tracing::info!("HTTP/3 on udp://{local}");
            if dev.is_none() {
                println!("ferrophp HTTP/3 on udp://{local}");
            }
            continue;
        }
        if let listeners::AnyListener::Redirect(_) = listener {
            tracing::info!(
                "listening on {scheme}://{local}: ACME HTTP-01 answers, everything else \
                 redirected to HTTPS"
            );
        } else {
            tracing::info!(
                "listening on {scheme}://{local} (root {}, {} PHP threads)",
                app.sites.current().document_root,
                config.threads
            );
        }
        if dev.is_some() {
            // PHP's test harnesses wait for this line on stderr (and read the port from it).
            eprintln!(
                "[{}] PHP {} Development Server (http://{local}) started",
                log_date(),
                worker::PHP_VERSION
            );
        } else {
            // Tests and scripts read this line (the first listener's is the first line)
            // to learn the port when listening on :0.
            println!("ferrophp listening on {scheme}://{local}");
        }
    }
    // A supervisor replacing another server with this one may let that one drain now.
    crate::supervise::notify_ready();
    // The CA validates against the listeners, which accept from here on (the kernel
    // queues connections until the accept loops below take them).
    let renewal = certificates.map(|manager| {
        tracing::info!(
            names = ?manager.managed_names(),
            "automatic HTTPS: certificates are obtained and renewed in the background"
        );
        crate::metrics::watch_certificates(manager.clone());
        tokio::spawn(manager.run())
    });

    let alt_svc = listeners
        .iter()
        .find_map(listeners::AnyListener::http3_port)
        .map(connection::alt_svc);
    let connections = Arc::new(connection::Connections {
        app: app.clone(),
        builder: connection::http_builder(&config, dev.is_some()),
        header_timeout: config.header_timeout,
        idle_timeout: config.idle_timeout,
        max_header_size: config.max_header_size,
        alt_svc,
        draining: tokio_util::sync::CancellationToken::new(),
    });
    let graceful = GracefulShutdown::new();
    // Returns once every listener is closed.
    accept::accept_until(
        listeners,
        stop,
        max_connections,
        connections.clone(),
        &graceful,
    )
    .await;
    // An order cut short is harmless: the next start orders again (store.rs).
    if let Some(renewal) = renewal {
        renewal.abort();
    }
    // HTTP/3 connections send GOAWAY now; the drain below waits for them as for the rest.
    connections.draining.cancel();
    drop(connections);
    shutdown::drain(graceful, config.grace, app, at_exit).await
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
