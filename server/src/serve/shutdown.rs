//! The end of a server: the signals that start it (SIGTERM, SIGINT, or the engine asking
//! for the process to be replaced: more PHP threads stuck than `--max-retired-threads`),
//! then (the accept loops having closed the listeners) draining the connections for up
//! to the grace period, shutting PHP down
//! (scripts may still run after their response, `fastcgi_finish_request`), and what is
//! left at exit (the last metrics push, the last spans, the server's own session
//! directory).
//!
//! The drain lets clients leave first: for up to [`LINGER`], every HTTP/1 response
//! carries `Connection: close` (`dispatch.rs`), so a client that is sending requests
//! learns from its next response not to reuse the connection, and the server closes it
//! right after that response. Only then are the connections left (idle ones, HTTP/2
//! ones, which get GOAWAY) shut down. Closing an idle keep-alive connection at once, as
//! hyper's graceful shutdown does, loses any request the client sent meanwhile (it sees
//! EOF); a `--supervise` replacement under load lost about 1 request in 10,000 that way.
//! This is Envoy's drain, shortened: a connection idle for the whole linger is closed
//! with the same race, but no busy one is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::server::graceful::GracefulShutdown;

use super::app::{App, AtExit};
use crate::admin;

/// The exit status of a server that drained because the engine asked for the process to
/// be replaced (EX_TEMPFAIL): not 0, so `--supervise` and systemd's `Restart=on-failure`
/// start a fresh one.
pub(super) const REPLACE_EXIT_STATUS: i32 = 75;

static REPLACE: tokio::sync::Notify = tokio::sync::Notify::const_new();
static REPLACE_REQUESTED: AtomicBool = AtomicBool::new(false);

/// For the engine: called (from its watchdog thread) when this process should be replaced.
pub(super) fn replace_hook() -> worker::ReplaceHook {
    Arc::new(|why: &str| {
        if !REPLACE_REQUESTED.swap(true, Ordering::AcqRel) {
            tracing::error!("{why}: draining, then exiting with status {REPLACE_EXIT_STATUS} for a supervisor to restart the server");
            REPLACE.notify_one();
        }
    })
}

/// Whether the server is ending because the engine asked to be replaced.
pub(super) fn replacement_requested() -> bool {
    REPLACE_REQUESTED.load(Ordering::Acquire)
}

/// Resolves on the first SIGTERM or SIGINT (never, if the handlers cannot be set), or
/// when the engine asks for the process to be replaced. The handlers are installed when
/// this is called, not when the future is first polled: a SIGTERM sent right after the
/// listening line (which is printed before the accept loop polls this) must not find
/// the default action still in place, which kills the process without its drain.
pub(super) fn signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            REPLACE.notified().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
            _ = REPLACE.notified() => {},
        }
    }
}

/// How long a draining server answers with `Connection: close` before it closes the
/// connections still open (at most the grace period).
const LINGER: Duration = Duration::from_secs(1);

/// Once the listeners are closed: waits up to `grace` for the connections in flight
/// (of every listener), then shuts PHP down once no connection holds the app any more.
pub(super) async fn drain(
    graceful: GracefulShutdown,
    grace: Duration,
    app: Arc<App>,
    mut at_exit: AtExit,
) -> Result<(), String> {
    tracing::info!(
        "shutting down: no new connections, waiting up to {:?} for requests in flight",
        grace
    );
    admin::set_draining();
    // Event streams never end on their own: the hub ends them (subscribers reconnect
    // elsewhere with Last-Event-ID), and its history is synced to disk.
    if let Some(hub) = &app.mercure {
        hub.stop();
    }
    let started = Instant::now();
    let linger_until = started + LINGER.min(grace);
    while graceful.count() > 0 && Instant::now() < linger_until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left = grace.saturating_sub(started.elapsed());
    if tokio::time::timeout(left, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over with requests still in flight");
    }
    // No scheduled run starts any more; those under way finish in PHP's drain below.
    let scheduler = at_exit.scheduler.take();
    let _ = tokio::task::spawn_blocking(move || crate::background::stop_scheduler(scheduler)).await;
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
    let AtExit {
        _watcher,
        metrics_push,
        remove_at_exit,
        scheduler: _,
    } = at_exit;
    // What PHP recorded since the last push interval leaves the process too.
    if let Some(push) = metrics_push {
        push.finish(Duration::from_secs(5)).await;
    }
    // Every request has ended (PHP is down): its spans are queued; send them all.
    tokio::task::spawn_blocking(|| crate::traces::shutdown(Duration::from_secs(5)))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(dir) = remove_at_exit {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}
