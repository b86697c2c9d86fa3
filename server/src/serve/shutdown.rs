//! The end of a server: the signals that start it (SIGTERM, SIGINT, or the engine asking
//! for the process to be replaced: more PHP threads stuck than `--max-retired-threads`),
//! then closing the listener, draining the connections for up to the grace period, shutting PHP down
//! (scripts may still run after their response, `fastcgi_finish_request`), and what is
//! left at exit (the last metrics push, the server's own session directory).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

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
/// when the engine asks for the process to be replaced.
pub(super) async fn signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        REPLACE.notified().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
        _ = REPLACE.notified() => {},
    }
}

/// Stops accepting, waits up to `grace` for the connections in flight, then shuts PHP
/// down once no connection holds the app any more.
pub(super) async fn drain(
    listener: TcpListener,
    graceful: GracefulShutdown,
    grace: Duration,
    app: Arc<App>,
    at_exit: AtExit,
) -> Result<(), String> {
    tracing::info!(
        "shutting down: no new connections, waiting up to {:?} for requests in flight",
        grace
    );
    admin::set_draining();
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
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
    let AtExit {
        _watcher,
        metrics_push,
        remove_at_exit,
    } = at_exit;
    // What PHP recorded since the last push interval leaves the process too.
    if let Some(push) = metrics_push {
        push.finish(Duration::from_secs(5)).await;
    }
    if let Some(dir) = remove_at_exit {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}
