//! The listeners `serve` accepts connections on. Each is a [`Listener`]: a socket, how a
//! connection is accepted from it and how one is served (handshake and protocol); the
//! accept loop around them (`accept.rs`: connection cap, descriptor back-off, graceful
//! drain) is the same for all. `tcp.rs`: TCP, plain or TLS, for HTTP/1.1 and HTTP/2.
//! A QUIC listener (HTTP/3) goes beside it as `quic.rs`: a UDP socket whose accepted
//! connections each carry many request streams, served by its own `serve`.
//!
//! [`open`] makes the list, in the order of `sockets::specs` (today the one `--listen`
//! socket): bound here, or taken over from a `--supervise` parent in the same order.

mod tcp;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::server::graceful::Watcher;

use super::connection::Connections;
use crate::config::ServeConfig;
use crate::sockets::{self, SocketKind};

/// One listening socket and its protocol.
pub(super) trait Listener: Send + Sync + 'static {
    /// A connection as accepted, before any handshake.
    type Conn: Send + 'static;
    /// What all its connections share (the app, the protocol's settings).
    type Shared: Send + Sync + 'static;

    /// The next connection and its peer's address.
    fn accept(&self) -> impl Future<Output = std::io::Result<(Self::Conn, SocketAddr)>> + Send;

    /// Serves one accepted connection to its end: the handshake, then its requests
    /// through `dispatch`. Runs on the connection's own task; `watcher` keeps graceful
    /// shutdown waiting for it.
    fn serve(
        &self,
        conn: Self::Conn,
        remote: SocketAddr,
        shared: Arc<Self::Shared>,
        watcher: Watcher,
    ) -> impl Future<Output = ()> + Send + 'static;
}

/// Every kind of listener `serve` runs, so that one list holds them all.
pub(super) enum AnyListener {
    Tcp(tcp::TcpListener),
}

/// A connection accepted by an [`AnyListener`].
pub(super) enum AnyConn {
    Tcp(tokio::net::TcpStream),
}

impl Listener for AnyListener {
    type Conn = AnyConn;
    type Shared = Connections;

    async fn accept(&self) -> std::io::Result<(AnyConn, SocketAddr)> {
        match self {
            AnyListener::Tcp(l) => l.accept().await.map(|(c, a)| (AnyConn::Tcp(c), a)),
        }
    }

    fn serve(
        &self,
        conn: AnyConn,
        remote: SocketAddr,
        shared: Arc<Connections>,
        watcher: Watcher,
    ) -> impl Future<Output = ()> + Send + 'static {
        match (self, conn) {
            (AnyListener::Tcp(l), AnyConn::Tcp(c)) => l.serve(c, remote, shared, watcher),
        }
    }
}

impl AnyListener {
    /// The address it listens on.
    pub(super) fn local_addr(&self) -> SocketAddr {
        match self {
            AnyListener::Tcp(l) => l.local_addr(),
        }
    }

    /// The URL scheme its clients use.
    pub(super) fn scheme(&self) -> &'static str {
        match self {
            AnyListener::Tcp(l) => l.scheme(),
        }
    }
}

/// The listeners `config` asks for, on `inherited` sockets (a supervisor's, already
/// matched to the specs in order by `sockets::adopt`) or on sockets bound here. Called
/// before PHP starts, so a taken port fails fast.
pub(super) fn open(
    config: &ServeConfig,
    inherited: Option<Vec<std::net::TcpListener>>,
) -> Result<Vec<AnyListener>, String> {
    let tls = match &config.tls {
        Some((cert, key)) => Some(crate::tls::acceptor(cert, key)?),
        None => None,
    };
    let specs = sockets::specs(config);
    let mut inherited = inherited.map(Vec::into_iter);
    let mut listeners = Vec::with_capacity(specs.len());
    for spec in &specs {
        let socket = match inherited.as_mut().and_then(Iterator::next) {
            Some(socket) => socket,
            None => sockets::bind(spec)
                .map(std::net::TcpListener::from)
                .and_then(|socket| {
                    socket.set_nonblocking(true)?;
                    Ok(socket)
                })
                .map_err(|e| format!("cannot listen on {}: {e}", spec.addr))?,
        };
        let listener = match spec.kind {
            SocketKind::Tcp => tokio::net::TcpListener::from_std(socket)
                .and_then(|socket| tcp::TcpListener::new(socket, tls.clone()))
                .map(AnyListener::Tcp),
        };
        listeners.push(listener.map_err(|e| format!("listener on {}: {e}", spec.addr))?);
    }
    Ok(listeners)
}
