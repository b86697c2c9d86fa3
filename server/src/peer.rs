//! The request's connection as PHP and traces see it: its addresses and whether it came
//! over TLS, and a Host header's name without its port.

use std::net::SocketAddr;

/// Where the request came from and how.
pub(crate) struct Connection {
    pub remote_addr: SocketAddr,
    pub local_addr: SocketAddr,
    pub https: bool,
}

/// `example.com:8080` → `example.com`; `[::1]:80` → `[::1]`.
pub(crate) fn strip_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}
