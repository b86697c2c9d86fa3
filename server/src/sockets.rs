//! The sockets the server listens on, below any protocol: which ones the configuration
//! asks for ([`specs`]), binding them ([`bind`]), and handing them from a `--supervise`
//! parent down to its child and taking them up there ([`take_inherited`], [`adopt`]).
//! `serve/listeners/` puts a protocol on each; `supervise.rs` only binds and passes them.
//!
//! Passing sockets to a child: the parent lists the descriptors in `FERROPHP_LISTEN_FD`,
//! comma-separated (`3` or `3,4`), in the order of [`specs`] for the same configuration,
//! each inherited across exec (close-on-exec cleared in the child only). The child takes
//! the variable out of its environment before any thread exists, takes descriptor *i*
//! for socket *i*, and refuses to start (exit 2) if the count differs or a descriptor is
//! not a socket of the kind its spec names (a listening TCP socket for [`SocketKind::Tcp`],
//! a bound UDP socket for [`SocketKind::Udp`]).
//! A single number is the one-socket form an older supervisor sends, so a deploy that
//! replaces the binary under a running supervisor (SIGHUP) keeps working.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::config::ServeConfig;

/// The environment variable naming the inherited listening sockets in a supervised child.
pub(crate) const LISTEN_FD_ENV: &str = "FERROPHP_LISTEN_FD";

/// Accept queue of a listening TCP socket: it holds the connections that arrive while a
/// supervised child restarts (tokio's own default for `TcpListener::bind`).
const BACKLOG: i32 = 1024;

/// What a socket carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketKind {
    /// A listening TCP socket (HTTP/1.1 and HTTP/2, plain or TLS).
    Tcp,
    /// A bound UDP socket (HTTP/3 over QUIC, beside a TLS listener on the same port).
    Udp,
}

/// One socket the configuration asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketSpec {
    pub(crate) kind: SocketKind,
    pub(crate) addr: SocketAddr,
}

/// The sockets `config` listens on, in the order the server serves them and a supervisor
/// passes them: the `--listen` TCP socket; when it speaks TLS and HTTP/3 is on, a UDP
/// socket on the same address for QUIC (right after it: [`bind_all`] gives it the TCP
/// socket's port); then with automatic HTTPS the plain `--http-listen` one (which
/// `serve/listeners/` tells apart by its address: the configuration refuses the two
/// being equal).
pub(crate) fn specs(config: &ServeConfig) -> Vec<SocketSpec> {
    let mut specs = vec![SocketSpec {
        kind: SocketKind::Tcp,
        addr: config.listen,
    }];
    // TLS from files or from an ACME CA (`--domain`) alike.
    if (config.tls.is_some() || config.auto_https.is_some()) && config.http3 {
        specs.push(SocketSpec {
            kind: SocketKind::Udp,
            addr: config.listen,
        });
    }
    if let Some(auto) = &config.auto_https {
        specs.push(SocketSpec {
            kind: SocketKind::Tcp,
            addr: auto.http_listen,
        });
    }
    specs
}

/// Binds every spec in order ([`bind`]); a UDP socket that follows a TCP socket of the
/// same address takes that socket's port, so `--listen` with port 0 still puts HTTP/3 on
/// the port the TCP socket got. On failure, the address that failed and why.
pub(crate) fn bind_all(specs: &[SocketSpec]) -> Result<Vec<socket2::Socket>, String> {
    let mut bound: Vec<socket2::Socket> = Vec::with_capacity(specs.len());
    let mut last_tcp: Option<(SocketAddr, SocketAddr)> = None;
    for spec in specs {
        let mut spec = *spec;
        if let (SocketKind::Udp, Some((asked, got))) = (spec.kind, last_tcp) {
            if asked == spec.addr {
                spec.addr = got;
            }
        }
        let socket = bind(&spec).map_err(|e| format!("cannot listen on {}: {e}", spec.addr))?;
        if spec.kind == SocketKind::Tcp {
            let got = socket
                .local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .unwrap_or(spec.addr);
            last_tcp = Some((spec.addr, got));
        }
        bound.push(socket);
    }
    Ok(bound)
}

/// Binds `spec` (address reuse on, as tokio's own bind does) and, for TCP, listens;
/// blocking, and not yet non-blocking.
pub(crate) fn bind(spec: &SocketSpec) -> std::io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    match spec.kind {
        SocketKind::Tcp => {
            let socket = Socket::new(
                Domain::for_address(spec.addr),
                Type::STREAM,
                Some(Protocol::TCP),
            )?;
            socket.set_reuse_address(true)?;
            socket.bind(&spec.addr.into())?;
            socket.listen(BACKLOG)?;
            Ok(socket)
        }
        SocketKind::Udp => {
            let socket = Socket::new(
                Domain::for_address(spec.addr),
                Type::DGRAM,
                Some(Protocol::UDP),
            )?;
            socket.bind(&spec.addr.into())?;
            Ok(socket)
        }
    }
}

/// The sockets a `--supervise` parent passed down, in its order (none when this process
/// was not started by one).
#[derive(Debug, Default)]
pub struct InheritedSockets(Vec<OwnedFd>);

impl InheritedSockets {
    /// Whether no socket was passed down (this process is no supervised child).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// In a supervised child: the sockets the supervisor passed down. Call before any thread
/// exists: it removes the variable from the environment, so PHP's `$_SERVER` never shows
/// it and no grandchild claims the sockets, and marks each descriptor close-on-exec so
/// commands run from PHP do not inherit them.
pub(crate) fn take_inherited() -> Result<InheritedSockets, String> {
    let Some(value) = std::env::var_os(LISTEN_FD_ENV) else {
        return Ok(InheritedSockets::default());
    };
    std::env::remove_var(LISTEN_FD_ENV);
    let fds = value
        .to_str()
        .and_then(parse_fd_list)
        .ok_or_else(|| format!("{LISTEN_FD_ENV} is not a list of file descriptors: {value:?}"))?;
    let mut sockets = Vec::with_capacity(fds.len());
    for fd in fds {
        // SAFETY: fcntl(F_GETFD) on a plain integer only reads the descriptor's flags; it
        // fails with EBADF when no such descriptor is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(format!("{LISTEN_FD_ENV}: descriptor {fd} is not open"));
        }
        // SAFETY: only our supervisor sets the variable, to descriptors it passed to this
        // process alone; the list has no duplicates, each is open (checked above), and
        // the variable is gone, so nothing else in the process wraps the same descriptor.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        socket2::SockRef::from(&owned)
            .set_cloexec(true)
            .map_err(|e| format!("{LISTEN_FD_ENV}: descriptor {fd}: {e}"))?;
        sockets.push(owned);
    }
    Ok(InheritedSockets(sockets))
}

/// `3` or `3,4,5`: descriptors above stderr, no duplicates.
fn parse_fd_list(text: &str) -> Option<Vec<RawFd>> {
    let mut fds: Vec<RawFd> = Vec::new();
    for part in text.split(',') {
        let fd: RawFd = part.trim().parse().ok()?;
        if fd <= 2 || fds.contains(&fd) {
            return None;
        }
        fds.push(fd);
    }
    Some(fds)
}

/// The inherited sockets as the sockets `specs` asks for, in order (non-blocking, for the
/// runtime); an error if they do not match.
pub(crate) fn adopt(
    inherited: InheritedSockets,
    specs: &[SocketSpec],
) -> Result<Vec<socket2::Socket>, String> {
    if inherited.0.len() != specs.len() {
        return Err(format!(
            "{LISTEN_FD_ENV} passed {} sockets, the configuration listens on {}",
            inherited.0.len(),
            specs.len()
        ));
    }
    inherited
        .0
        .into_iter()
        .zip(specs)
        .map(|(fd, spec)| {
            let raw = fd.as_raw_fd();
            let socket = socket2::Socket::from(fd);
            match spec.kind {
                SocketKind::Tcp => {
                    let is_tcp_listener = matches!(socket.r#type(), Ok(socket2::Type::STREAM))
                        && matches!(socket.is_listener(), Ok(true));
                    if !is_tcp_listener {
                        return Err(format!(
                            "{LISTEN_FD_ENV}: descriptor {raw} is not a listening TCP socket"
                        ));
                    }
                }
                SocketKind::Udp => {
                    let is_udp = matches!(socket.r#type(), Ok(socket2::Type::DGRAM))
                        && socket.local_addr().is_ok_and(|a| a.as_socket().is_some());
                    if !is_udp {
                        return Err(format!(
                            "{LISTEN_FD_ENV}: descriptor {raw} is not a bound UDP socket"
                        ));
                    }
                }
            }
            socket.set_nonblocking(true).map_err(|e| e.to_string())?;
            Ok(socket)
        })
        .collect()
}

/// The value of [`LISTEN_FD_ENV`] for `fds`.
pub(crate) fn fd_list(fds: &[RawFd]) -> String {
    fds.iter()
        .map(RawFd::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_lists_round_trip_and_refuse_what_is_not_ours() {
        assert_eq!(parse_fd_list("3"), Some(vec![3]));
        assert_eq!(parse_fd_list("3,7,4"), Some(vec![3, 7, 4]));
        assert_eq!(parse_fd_list(&fd_list(&[5, 9])), Some(vec![5, 9]));
        for bad in ["", "x", "2", "3,3", "3,", "-1", "3;4"] {
            assert_eq!(parse_fd_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn automatic_https_adds_the_plain_listener_after_the_https_one() {
        let args = || crate::config::ServeArgs {
            listen: Some("127.0.0.1:8443".parse().unwrap()),
            ..Default::default()
        };
        let plain = ServeConfig::resolve(args(), Default::default()).unwrap();
        assert_eq!(specs(&plain).len(), 1);
        let mut args = args();
        args.acme.domains = vec!["a.example.com".into()];
        args.acme.data_dir = Some("/tmp/d".into());
        args.acme.http_listen = Some("127.0.0.1:8080".parse().unwrap());
        let auto = ServeConfig::resolve(args, Default::default()).unwrap();
        // HTTPS is also offered over HTTP/3 (UDP, same port) unless `--no-http3`.
        let listed: Vec<(SocketKind, String)> = specs(&auto)
            .iter()
            .map(|s| (s.kind, s.addr.to_string()))
            .collect();
        assert_eq!(
            listed,
            [
                (SocketKind::Tcp, "127.0.0.1:8443".to_string()),
                (SocketKind::Udp, "127.0.0.1:8443".to_string()),
                (SocketKind::Tcp, "127.0.0.1:8080".to_string()),
            ]
        );
    }

    #[test]
    fn adopted_sockets_must_match_their_specs_in_number_and_kind() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let spec = SocketSpec {
            kind: SocketKind::Tcp,
            addr,
        };
        let listening = || InheritedSockets(vec![OwnedFd::from(bind(&spec).unwrap())]);
        let adopted = adopt(listening(), &[spec]).unwrap();
        assert_eq!(adopted.len(), 1);
        assert!(adopted[0].local_addr().unwrap().as_socket().unwrap().port() > 0);
        // Two specs, one socket.
        assert!(adopt(listening(), &[spec, spec]).is_err());
        // A TCP socket that does not listen, and a UDP socket, are not listeners.
        let unbound =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert!(adopt(InheritedSockets(vec![OwnedFd::from(unbound)]), &[spec]).is_err());
        let udp = std::net::UdpSocket::bind(addr).unwrap();
        assert!(adopt(InheritedSockets(vec![OwnedFd::from(udp)]), &[spec]).is_err());
        // A UDP spec takes a bound UDP socket, and no TCP listener.
        let udp_spec = SocketSpec {
            kind: SocketKind::Udp,
            addr,
        };
        let udp = std::net::UdpSocket::bind(addr).unwrap();
        assert!(adopt(InheritedSockets(vec![OwnedFd::from(udp)]), &[udp_spec]).is_ok());
        assert!(adopt(listening(), &[udp_spec]).is_err());
    }

    #[test]
    fn a_udp_socket_after_a_tcp_one_takes_its_port() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let specs = [
            SocketSpec {
                kind: SocketKind::Tcp,
                addr,
            },
            SocketSpec {
                kind: SocketKind::Udp,
                addr,
            },
        ];
        let bound = bind_all(&specs).unwrap();
        let port = |s: &socket2::Socket| s.local_addr().unwrap().as_socket().unwrap().port();
        assert!(port(&bound[0]) > 0);
        assert_eq!(port(&bound[0]), port(&bound[1]));
        assert_eq!(bound[1].r#type().unwrap(), socket2::Type::DGRAM);
    }
}
