//! The accept loops, one per listener (`listeners/`), and the file descriptors they live
//! on.
//!
//! Each accepted connection, on whichever listener, takes a slot of the one
//! `--max-connections` cap (or is closed at once), then runs on its own task
//! ([`Listener::serve`]), watched by the one graceful shutdown; the loops end together
//! when `stop` resolves, each closing its listener.
//!
//! File descriptors: every connection is one, so `--max-connections` is only as good as
//! the process's `RLIMIT_NOFILE`. At start-up [`raise_fd_limit`] raises the soft limit to
//! the hard one (as Go's runtime does, and nginx's `worker_rlimit_nofile`), and once PHP
//! runs [`fit_to_fd_limit`] lowers the effective connection limit, with one warning, if
//! the connections and a reserve for PHP and the server's own files do not fit in it.
//! Should descriptors still run out (PHP opening more than its reserve), `accept` fails
//! with EMFILE while the connection waits in the listen backlog: the loop then backs off
//! ([`ACCEPT_BACKOFF`]) instead of retrying at once (the listener stays readable, so
//! retrying at once spins a core), keeps serving the connections it has, and accepts the
//! waiting ones when descriptors free up.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::server::graceful::GracefulShutdown;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::listeners::Listener;

/// The pause after an accept that failed for want of descriptors or memory: connections
/// wait in the kernel's listen backlog meanwhile. nginx disables accepting for 500 ms in
/// that case; shorter here, so a connection waits little once descriptors are back.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Descriptors kept for each PHP thread beyond what is open at start-up: the script and
/// its includes while they compile, a session file, an upload, a database or cache
/// socket, a curl handle.
const FDS_PER_PHP_THREAD: u64 = 16;

/// Descriptors kept for the server itself beyond what is open at start-up: static files
/// being read, X-Sendfile files, the moment a refused connection is open, metrics pushes.
const FDS_SERVER_HEADROOM: u64 = 64;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, logs the result, and returns the
/// limit now in force (None if it cannot be read). Called first thing, before PHP starts.
pub(super) fn raise_fd_limit() -> Option<u64> {
    match raise_nofile_limit() {
        Ok(raised) => {
            if raised.before < raised.soft {
                tracing::info!(
                    "file descriptor limit raised from {} to {} (the hard limit)",
                    raised.before,
                    raised.soft
                );
            } else {
                tracing::info!(
                    "file descriptor limit {} (hard limit {})",
                    raised.soft,
                    display_limit(raised.hard)
                );
            }
            Some(raised.soft)
        }
        Err(e) => {
            tracing::warn!("cannot read the file descriptor limit: {e}");
            None
        }
    }
}

/// The connection limit that fits in the file descriptor `limit`: `configured`, or fewer
/// (with a warning saying why and how to raise the limit) when `configured` connections,
/// the descriptors open now and a reserve for `php_threads` PHP threads and the server's
/// own files would not fit. Called once PHP has started and the listeners are open, so
/// both are among the descriptors open now.
pub(super) fn fit_to_fd_limit(limit: Option<u64>, configured: usize, php_threads: usize) -> usize {
    let Some(limit) = limit else {
        return configured;
    };
    let open = open_descriptors().unwrap_or(FDS_SERVER_HEADROOM);
    let budget = connection_budget(limit, open, php_threads as u64);
    if (configured as u64) <= budget.connections {
        return configured;
    }
    let fit = usize::try_from(budget.connections).unwrap_or(usize::MAX);
    tracing::warn!(
        "--max-connections {configured} does not fit the file descriptor limit {limit} \
         ({open} open now, {} kept for {php_threads} PHP threads and the server's files): \
         serving at most {fit} connections at once; raise the limit to serve more \
         (ulimit -n, systemd LimitNOFILE=, docker run --ulimit nofile=N:N)",
        budget.reserve
    );
    fit
}

/// The soft limit before and after [`raise_nofile_limit`], and the hard limit.
struct NofileLimit {
    before: u64,
    soft: u64,
    hard: u64,
}

/// Sets the soft `RLIMIT_NOFILE` to the hard limit (capped at what the kernel allows a
/// process, `fs.nr_open`, when the hard limit is unlimited).
fn raise_nofile_limit() -> io::Result<NofileLimit> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a valid, exclusive pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let before: u64 = rl.rlim_cur;
    let hard: u64 = rl.rlim_max;
    let target = if rl.rlim_max == libc::RLIM_INFINITY {
        std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(1 << 20)
    } else {
        hard
    };
    if before >= target {
        return Ok(NofileLimit {
            before,
            soft: before,
            hard,
        });
    }
    let raised = libc::rlimit {
        rlim_cur: target as libc::rlim_t,
        rlim_max: rl.rlim_max,
    };
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        let e = io::Error::last_os_error();
        tracing::warn!("cannot raise the file descriptor limit from {before} to {target}: {e}");
        return Ok(NofileLimit {
            before,
            soft: before,
            hard,
        });
    }
    Ok(NofileLimit {
        before,
        soft: target,
        hard,
    })
}

fn display_limit(limit: u64) -> String {
    if limit == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        limit.to_string()
    }
}

/// The process's open descriptors (Linux), not counting the one that lists them.
fn open_descriptors() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some((entries.count() as u64).saturating_sub(1))
}

/// How `limit` descriptors divide between connections and the rest.
#[derive(Debug, PartialEq)]
struct Budget {
    /// Connections that fit (at least 1).
    connections: u64,
    /// Descriptors kept for PHP and the server's own files.
    reserve: u64,
}

/// With `open` descriptors in use, keeps [`FDS_PER_PHP_THREAD`] per PHP thread plus
/// [`FDS_SERVER_HEADROOM`] out of the free ones (but never more than half of them, so a
/// small limit still leaves connections), and gives the rest to connections.
fn connection_budget(limit: u64, open: u64, php_threads: u64) -> Budget {
    let free = limit.saturating_sub(open);
    let wanted = php_threads
        .saturating_mul(FDS_PER_PHP_THREAD)
        .saturating_add(FDS_SERVER_HEADROOM);
    let reserve = wanted.min(free / 2);
    Budget {
        connections: free.saturating_sub(reserve).max(1),
        reserve,
    }
}

/// Accepts connections on every listener until `stop` resolves, with one connection cap
/// for all of them; each listener is closed as its loop ends. Each connection is watched
/// by `graceful` from the moment it is accepted.
pub(super) async fn accept_until<L: Listener>(
    listeners: Vec<L>,
    stop: impl Future<Output = ()>,
    max_connections: usize,
    shared: Arc<L::Shared>,
    graceful: &GracefulShutdown,
) {
    let slots = Arc::new(Semaphore::new(max_connections.min(Semaphore::MAX_PERMITS)));
    let stopped = CancellationToken::new();
    let loops = futures_util::future::join_all(listeners.into_iter().map(|listener| {
        let stop = stopped.cancelled();
        accept_on(listener, stop, slots.clone(), shared.clone(), graceful)
    }));
    let signal = async {
        stop.await;
        stopped.cancel();
    };
    tokio::join!(signal, loops);
}

/// One listener's accept loop, until `stop` resolves; `listener` is dropped (closed) then.
async fn accept_on<L: Listener>(
    listener: L,
    stop: impl Future<Output = ()>,
    connection_slots: Arc<Semaphore>,
    shared: Arc<L::Shared>,
    graceful: &GracefulShutdown,
) {
    let mut stop = std::pin::pin!(stop);
    // Since when, and how many times, accept has failed for want of resources.
    let mut starved: Option<(Instant, u64)> = None;
    loop {
        let (conn, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) if is_connection_error(&e) => {
                    // That one connection is gone (reset while in the backlog): not ours
                    // to wait for, the next one may be there already.
                    tracing::debug!("accept: {e}");
                    continue;
                }
                Err(e) => {
                    match &mut starved {
                        Some((_, failures)) => *failures += 1,
                        None => {
                            tracing::warn!(
                                "accept failed: {e}; new connections wait in the listen \
                                 backlog, retrying every {} ms (connections open now are \
                                 served); if this is EMFILE, raise the file descriptor \
                                 limit or lower --max-connections",
                                ACCEPT_BACKOFF.as_millis()
                            );
                            starved = Some((Instant::now(), 1));
                        }
                    }
                    // The listener stays readable while the connection waits: retrying at
                    // once would spin. Shutdown is still heard while backing off.
                    tokio::select! {
                        _ = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                        _ = &mut stop => break,
                    }
                }
            },
            _ = &mut stop => break,
        };
        if let Some((since, failures)) = starved.take() {
            tracing::info!(
                "accepting again after {failures} failed attempts over {} ms",
                since.elapsed().as_millis()
            );
        }
        // Refused connections are closed at once rather than left in the backlog: the
        // client learns now, and a flood of idle sockets cannot grow memory or fds
        // without bound.
        let Ok(slot) = connection_slots.clone().try_acquire_owned() else {
            tracing::debug!("connection from {remote} refused: max connections reached");
            drop(conn);
            continue;
        };
        let served = listener.serve(conn, remote, shared.clone(), graceful.watcher());
        tokio::spawn(async move {
            served.await;
            drop(slot);
        });
    }
}

/// Errors of one connection that ended before it was accepted, as opposed to the
/// listener's own trouble (EMFILE, ENFILE, ENOBUFS, ENOMEM...).
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener whose connections are greeted with one byte and held until the client
    /// closes them.
    struct Greeter(tokio::net::TcpListener);

    impl Listener for Greeter {
        type Conn = tokio::net::TcpStream;
        type Shared = ();

        async fn accept(&self) -> io::Result<(tokio::net::TcpStream, SocketAddr)> {
            self.0.accept().await
        }

        // Not an `async fn`: the future must not borrow `self`.
        #[allow(clippy::manual_async_fn)]
        fn serve(
            &self,
            mut conn: tokio::net::TcpStream,
            _: SocketAddr,
            _: Arc<()>,
            _watcher: hyper_util::server::graceful::Watcher,
        ) -> impl Future<Output = ()> + Send + 'static {
            async move {
                let _ = conn.write_all(b"!").await;
                let _ = conn.read(&mut [0; 1]).await;
            }
        }
    }

    /// What a client connecting to `addr` learns first: greeted (held) or closed.
    async fn greeted(addr: SocketAddr) -> (bool, tokio::net::TcpStream) {
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut byte = [0; 1];
        let n = client.read(&mut byte).await.unwrap_or(0);
        (n == 1, client)
    }

    #[test]
    fn listeners_share_one_connection_cap_and_close_together() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let bind =
                || async { Greeter(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()) };
            let listeners = vec![bind().await, bind().await];
            let addrs: Vec<SocketAddr> = listeners
                .iter()
                .map(|l| l.0.local_addr().unwrap())
                .collect();
            let stop = Arc::new(tokio::sync::Notify::new());
            let graceful = GracefulShutdown::new();
            let stopped = stop.clone();
            let accepting = accept_until(
                listeners,
                async move { stopped.notified().await },
                1,
                Arc::new(()),
                &graceful,
            );
            let clients = async {
                // One slot: the first listener's connection takes it, the second
                // listener's is refused, and gets it once the first is gone.
                let (first, held) = greeted(addrs[0]).await;
                assert!(first);
                assert!(!greeted(addrs[1]).await.0);
                drop(held);
                let mut again = false;
                for _ in 0..500 {
                    let (ok, client) = greeted(addrs[1]).await;
                    if ok {
                        again = true;
                        drop(client);
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert!(again, "the freed slot serves the other listener");
                stop.notify_one();
            };
            tokio::join!(accepting, clients);
            // Both closed once their loops ended.
            for addr in addrs {
                assert!(tokio::net::TcpStream::connect(addr).await.is_err());
            }
        });
    }

    #[test]
    fn budget_keeps_a_reserve_for_php_and_gives_the_rest_to_connections() {
        // A common soft limit: 1024 - 20 open - (4 threads x 16 + 64) = 876.
        assert_eq!(
            connection_budget(1024, 20, 4),
            Budget {
                connections: 876,
                reserve: 128
            }
        );
        // A raised limit leaves the reserve as it is.
        assert_eq!(
            connection_budget(1 << 20, 20, 4).connections,
            (1 << 20) - 148
        );
        // A small limit: at most half the free descriptors are kept.
        assert_eq!(
            connection_budget(64, 24, 2),
            Budget {
                connections: 20,
                reserve: 20
            }
        );
        // Nothing free: one connection still, never zero (a semaphore of 0 serves none).
        assert_eq!(connection_budget(20, 30, 2).connections, 1);
    }
}
