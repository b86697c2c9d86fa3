//! The listeners `serve` accepts connections on. Each is a [`Listener`]: a socket, how a
//! connection is accepted from it and how one is served (handshake and protocol); the
//! accept loop around them (`accept.rs`: connection cap, descriptor back-off, graceful
//! drain) is the same for all. `tcp.rs`: TCP, plain or TLS, for HTTP/1.1 and HTTP/2.
//! `redirect.rs`: with automatic HTTPS, the plain `--http-listen` listener (HTTP-01
//! answers, redirects to HTTPS). `quic.rs`: QUIC (HTTP/3) on a UDP socket beside a TLS
//! listener, whose accepted connections each carry many request streams
//! (`serve/connection/h3.rs`).
//!
//! [`open`] makes the list, in the order of `sockets::specs` (the `--listen` socket, its
//! UDP twin when TLS and HTTP/3 are on, and with automatic HTTPS the `--http-listen`
//! one): bound here, or taken over from a `--supervise` parent in the same order.
//!
//! TLS: every TLS listener shares one rustls `ServerConfig`, made by [`server_tls`]:
//! `tls::server_config` over the certificate manager's resolver with automatic HTTPS
//! (ALPN `h2`, `http/1.1`, `acme-tls/1`), else `tls::static_server_config` from
//! `--tls-cert`; the QUIC listener clones it with ALPN `h3`.

mod quic;
mod redirect;
mod tcp;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::server::graceful::Watcher;
use tokio_rustls::TlsAcceptor;

use super::connection::Connections;
use crate::config::ServeConfig;
use crate::sockets::{self, SocketKind};
use crate::tls::CertManager;

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
    Redirect(redirect::RedirectListener),
    Quic(quic::QuicListener),
}

/// A connection accepted by an [`AnyListener`].
pub(super) enum AnyConn {
    Tcp(tokio::net::TcpStream),
    /// Boxed: quinn's handshake state is ten times a TCP stream's size.
    Quic(Box<quinn::Incoming>),
}

impl Listener for AnyListener {
    type Conn = AnyConn;
    type Shared = Connections;

    async fn accept(&self) -> std::io::Result<(AnyConn, SocketAddr)> {
        match self {
            AnyListener::Tcp(l) => l.accept().await.map(|(c, a)| (AnyConn::Tcp(c), a)),
            AnyListener::Redirect(l) => l.accept().await.map(|(c, a)| (AnyConn::Tcp(c), a)),
            AnyListener::Quic(l) => l
                .accept()
                .await
                .map(|(c, a)| (AnyConn::Quic(Box::new(c)), a)),
        }
    }

    fn serve(
        &self,
        conn: AnyConn,
        remote: SocketAddr,
        shared: Arc<Connections>,
        watcher: Watcher,
    ) -> impl Future<Output = ()> + Send + 'static {
        // TCP arms are their own future types (one `Either`, no allocation per connection).
        use futures_util::future::Either;
        match (self, conn) {
            (AnyListener::Tcp(l), AnyConn::Tcp(c)) => {
                Either::Left(Either::Left(l.serve(c, remote, shared, watcher)))
            }
            (AnyListener::Redirect(l), AnyConn::Tcp(c)) => {
                Either::Left(Either::Right(l.serve(c, remote, shared, watcher)))
            }
            // Boxed: an HTTP/3 connection's future is several KiB (h3's state), and the
            // task of every TCP connection would otherwise be that size too.
            (AnyListener::Quic(l), AnyConn::Quic(c)) => {
                Either::Right(Box::pin(l.serve(*c, remote, shared, watcher))
                    as std::pin::Pin<Box<dyn Future<Output = ()> + Send>>)
            }
            // Each listener only accepts its own kind of connection.
            _ => Either::Right(Box::pin(std::future::ready(())) as _),
        }
    }
}

impl AnyListener {
    /// The address it listens on.
    pub(super) fn local_addr(&self) -> SocketAddr {
        match self {
            AnyListener::Tcp(l) => l.local_addr(),
            AnyListener::Redirect(l) => l.local_addr(),
            AnyListener::Quic(l) => l.local_addr(),
        }
    }

    /// The URL scheme its clients use.
    pub(super) fn scheme(&self) -> &'static str {
        match self {
            AnyListener::Tcp(l) => l.scheme(),
            AnyListener::Redirect(_) => "http",
            AnyListener::Quic(_) => "https",
        }
    }

    /// The UDP port HTTP/3 is served on, if this is the QUIC listener.
    pub(super) fn http3_port(&self) -> Option<u16> {
        match self {
            AnyListener::Quic(l) => Some(l.local_addr().port()),
            AnyListener::Tcp(_) | AnyListener::Redirect(_) => None,
        }
    }
}

/// The one rustls configuration every TLS listener of this server shares (a QUIC
/// listener clones it and sets its own ALPN): over the certificate manager's resolver
/// with automatic HTTPS (`tls::server_config`: `h2`, `http/1.1`, `acme-tls/1`), else
/// the `--tls-cert` pair's; `None` without TLS.
pub(super) fn server_tls(
    config: &ServeConfig,
    certificates: Option<&Arc<CertManager>>,
) -> Result<Option<Arc<rustls::ServerConfig>>, String> {
    Ok(match (certificates, &config.tls) {
        (Some(manager), _) => Some(crate::tls::server_config(manager.resolver())?),
        (None, Some((cert, key))) => Some(crate::tls::static_server_config(cert, key)?),
        (None, None) => None,
    })
}

/// The listeners `config` asks for, on `inherited` sockets (a supervisor's, already
/// matched to the specs in order by `sockets::adopt`) or on sockets bound here. Called
/// before PHP starts, so a taken port fails fast. With automatic HTTPS, `certificates`
/// is its manager: the HTTPS listener resolves certificates through it and the plain
/// one answers its HTTP-01 challenges. The QUIC listener takes the TLS listener's rustls
/// configuration (one certificate source for both).
pub(super) fn open(
    config: &ServeConfig,
    inherited: Option<Vec<socket2::Socket>>,
    certificates: Option<&Arc<CertManager>>,
) -> Result<Vec<AnyListener>, String> {
    let tls = server_tls(config, certificates)?.map(TlsAcceptor::from);
    let specs = sockets::specs(config);
    let sockets = match inherited {
        Some(sockets) => sockets,
        None => {
            let sockets = sockets::bind_all(&specs)?;
            for socket in &sockets {
                socket
                    .set_nonblocking(true)
                    .map_err(|e| format!("cannot listen: {e}"))?;
            }
            sockets
        }
    };
    // The port redirects name: the one bound (`--listen` may say port 0).
    let https_port = specs
        .iter()
        .zip(&sockets)
        .find(|(spec, _)| spec.kind == SocketKind::Tcp && spec.addr == config.listen)
        .and_then(|(_, socket)| socket.local_addr().ok()?.as_socket())
        .map_or(config.listen.port(), |addr| addr.port());
    let plain_addr = config.auto_https.as_ref().map(|auto| auto.http_listen);
    let mut listeners = Vec::with_capacity(specs.len());
    for (spec, socket) in specs.iter().zip(sockets) {
        let listener = match spec.kind {
            SocketKind::Tcp => tokio::net::TcpListener::from_std(socket.into())
                .and_then(|socket| match certificates {
                    Some(manager) if Some(spec.addr) == plain_addr => {
                        redirect::RedirectListener::new(socket, manager.challenges(), https_port)
                            .map(AnyListener::Redirect)
                    }
                    _ => tcp::TcpListener::new(socket, tls.clone()).map(AnyListener::Tcp),
                })
                .map_err(|e| e.to_string()),
            SocketKind::Udp => match &tls {
                Some(acceptor) => {
                    quic::QuicListener::new(socket.into(), acceptor.config(), config.idle_timeout)
                        .map(AnyListener::Quic)
                }
                None => Err("HTTP/3 needs TLS".to_string()),
            },
        };
        listeners.push(listener.map_err(|e| format!("listener on {}: {e}", spec.addr))?);
    }
    Ok(listeners)
}
