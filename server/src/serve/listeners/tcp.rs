//! A TCP listener, plain or TLS: accepts a connection, completes the TLS handshake if
//! any (on the connection's own task, bounded by the header timeout, so a slow client
//! never holds up the accept loop), and hands the byte stream to HTTP/1.1 and HTTP/2
//! (`serve/connection/`).

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::server::graceful::Watcher;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::Listener;
use crate::peer::Connection;
use crate::serve::connection::{self, Connections};

pub(in crate::serve) struct TcpListener {
    socket: tokio::net::TcpListener,
    /// Present when the listener speaks TLS.
    tls: Option<TlsAcceptor>,
    /// The socket's own address (`SERVER_ADDR`, `SERVER_PORT`).
    local: SocketAddr,
}

impl TcpListener {
    pub(super) fn new(
        socket: tokio::net::TcpListener,
        tls: Option<TlsAcceptor>,
    ) -> std::io::Result<TcpListener> {
        let local = socket.local_addr()?;
        Ok(TcpListener { socket, tls, local })
    }

    pub(super) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(super) fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

impl Listener for TcpListener {
    type Conn = TcpStream;
    type Shared = Connections;

    async fn accept(&self) -> std::io::Result<(TcpStream, SocketAddr)> {
        self.socket.accept().await
    }

    /// A failed or late handshake closes the connection. `watcher` was taken when the
    /// connection was accepted, so shutdown also waits for connections still in their
    /// handshake.
    fn serve(
        &self,
        stream: TcpStream,
        remote: SocketAddr,
        shared: Arc<Connections>,
        watcher: Watcher,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let tls = self.tls.clone();
        let conn = Connection {
            remote_addr: remote,
            local_addr: self.local,
            https: tls.is_some(),
        };
        async move {
            let _ = stream.set_nodelay(true);
            match tls {
                None => connection::serve(stream, conn, &shared, watcher).await,
                Some(acceptor) => {
                    let Ok(Ok(mut stream)) =
                        tokio::time::timeout(shared.header_timeout, acceptor.accept(stream)).await
                    else {
                        return;
                    };
                    // A CA's TLS-ALPN-01 validation (RFC 8737 §3): the handshake, which
                    // showed it the validation certificate, was all it came for.
                    if stream.get_ref().1.alpn_protocol() == Some(crate::tls::ACME_TLS_ALPN) {
                        tracing::info!(%remote, "answered the ACME CA's TLS-ALPN-01 handshake");
                        let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
                        return;
                    }
                    connection::serve(stream, conn, &shared, watcher).await
                }
            }
        }
    }
}
