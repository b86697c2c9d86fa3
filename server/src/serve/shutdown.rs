//! The end of a server: the signals that start it (SIGTERM, SIGINT), then closing the
//! listener, draining the connections for up to the grace period, shutting PHP down
//! (scripts may still run after their response, `fastcgi_finish_request`), and what is
//! left at exit (the last metrics push, the last spans, the server's own session
//! directory).

use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::app::{App, AtExit};
use crate::admin;

/// Resolves on the first SIGTERM or SIGINT (never, if the handlers cannot be set).
pub(super) async fn signal() {
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
    // Every request has ended (PHP is down): its spans are queued; send them all.
    tokio::task::spawn_blocking(|| crate::traces::shutdown(Duration::from_secs(5)))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(dir) = remove_at_exit {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}
