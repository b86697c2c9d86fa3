//! The QUIC listener (HTTP/3): a UDP socket on the TLS listener's port, quinn's endpoint
//! on it with the TLS listener's own rustls configuration (ALPN `h3`), and each accepted
//! connection's handshake, after which `serve/connection/h3.rs` serves its request
//! streams.
//!
//! Its limits are the TCP listener's in QUIC's terms: the handshake within the header
//! timeout; at most [`MAX_STREAMS`] request streams open at once on one connection (as
//! HTTP/2's `max_concurrent_streams`; more wait for QUIC stream credit instead of being
//! refused); quinn's own idle timeout (no packets at all, so a peer that stopped
//! answering our PINGs is gone) set to `--idle-timeout-ms`, beside the request-level one
//! in `h3.rs`; and one slot of `--max-connections` per
//! connection, taken in the accept loop like a TCP connection's (a refused `Incoming` is
//! dropped, which quinn answers with CONNECTION_REFUSED). 0-RTT stays off: the rustls
//! configuration keeps `max_early_data_size` at 0, so no request is ever replayable.
//! Clients whose address is not validated yet get a Retry once the endpoint holds many
//! handshakes at once ([`RETRY_ABOVE`]), so a flood of spoofed Initials costs a packet
//! each instead of a handshake each.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::Watcher;

use super::Listener;
use crate::peer::Connection;
use crate::serve::connection::{self, Connections};

/// Request streams one HTTP/3 connection may have open at once (the HTTP/2 figure).
pub(in crate::serve) const MAX_STREAMS: u32 = 100;

/// Unidirectional streams a client may open: HTTP/3 needs three (control, QPACK encoder
/// and decoder); a few more for grease and extensions, none of which we serve.
const MAX_UNI_STREAMS: u32 = 8;

/// Handshakes in progress above which unvalidated clients are asked to Retry first.
const RETRY_ABOVE: usize = 64;

pub(in crate::serve) struct QuicListener {
    endpoint: quinn::Endpoint,
    /// The socket's own address (`SERVER_ADDR`, `SERVER_PORT`).
    local: SocketAddr,
}

impl QuicListener {
    /// quinn's endpoint on `socket` (bound, non-blocking) with `tls` (the TLS listener's
    /// configuration, which this clones with ALPN `h3`).
    pub(super) fn new(
        socket: std::net::UdpSocket,
        tls: &rustls::ServerConfig,
        idle_timeout: Duration,
    ) -> Result<QuicListener, String> {
        let mut tls = tls.clone();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        // No 0-RTT: early data could be replayed (RFC 9001 §9.2).
        tls.max_early_data_size = 0;
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|e| format!("TLS configuration unfit for QUIC: {e}"))?;
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport
            .max_concurrent_bidi_streams(MAX_STREAMS.into())
            .max_concurrent_uni_streams(MAX_UNI_STREAMS.into())
            .max_idle_timeout(quinn::IdleTimeout::try_from(idle_timeout).ok())
            // PINGs while a request is in flight keep a slow script's connection from
            // QUIC's idle timeout; `h3.rs` closes connections with no request in flight.
            .keep_alive_interval(Some(idle_timeout / 3));
        server.transport_config(Arc::new(transport));
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            Some(server),
            socket,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(|e| e.to_string())?;
        Ok(QuicListener { endpoint, local })
    }

    pub(super) fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// Closing the listener (the accept loop ends): new connections are refused from now on,
/// while those open go on until they drain.
impl Drop for QuicListener {
    fn drop(&mut self) {
        self.endpoint.set_server_config(None);
    }
}

impl Listener for QuicListener {
    type Conn = quinn::Incoming;
    type Shared = Connections;

    async fn accept(&self) -> std::io::Result<(quinn::Incoming, SocketAddr)> {
        loop {
            let Some(incoming) = self.endpoint.accept().await else {
                // The endpoint was closed: nothing more will come.
                return std::future::pending().await;
            };
            if !incoming.remote_address_validated()
                && incoming.may_retry()
                && self.endpoint.open_connections() > RETRY_ABOVE
            {
                let _ = incoming.retry();
                continue;
            }
            let remote = incoming.remote_address();
            return Ok((incoming, remote));
        }
    }

    /// A failed or late handshake drops the connection. `watcher` was taken when the
    /// connection was accepted, so shutdown also waits for connections in their handshake.
    fn serve(
        &self,
        incoming: quinn::Incoming,
        remote: SocketAddr,
        shared: Arc<Connections>,
        watcher: Watcher,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let conn = Connection {
            remote_addr: remote,
            local_addr: self.local,
            https: true,
        };
        async move {
            let Ok(connecting) = incoming.accept() else {
                return;
            };
            let Ok(Ok(quic)) = tokio::time::timeout(shared.header_timeout, connecting).await else {
                return;
            };
            connection::h3::serve(quic, conn, &shared, watcher).await
        }
    }
}
