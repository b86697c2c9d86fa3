//! The listening socket and the accept loop: each accepted connection takes a slot of
//! `--max-connections` (or is closed at once), then runs on its own task
//! ([`connection::serve_tcp`]); the loop ends when `stop` resolves.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::connection::{self, Connections};
use crate::config::ServeConfig;

/// The socket a `--supervise` parent passed down, or a new one on `--listen`.
pub(super) async fn listen(
    config: &ServeConfig,
    inherited: Option<std::net::TcpListener>,
) -> Result<TcpListener, String> {
    match inherited {
        Some(l) => TcpListener::from_std(l).map_err(|e| format!("inherited listener: {e}")),
        None => TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen)),
    }
}

/// Accepts connections until `stop` resolves. Each connection is watched by `graceful`
/// from the moment it is accepted.
pub(super) async fn accept_until(
    listener: &TcpListener,
    stop: impl Future<Output = ()>,
    max_connections: usize,
    shared: Arc<Connections>,
    graceful: &GracefulShutdown,
) {
    let connection_slots = Arc::new(Semaphore::new(max_connections));
    let mut stop = std::pin::pin!(stop);
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
            _ = &mut stop => break,
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
        let shared = shared.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            connection::serve_tcp(stream, remote, &shared, watcher).await;
            drop(slot);
        });
    }
}
