//! `ferrophp serve --supervise`: a small parent process that owns the listening socket and
//! runs the real server as a child, restarting it when it dies.
//!
//! PHP runs inside the server process, so a segfault in an extension or a C stack
//! overflow kills every request in flight and the process itself; nothing in-process can
//! recover from that. The supervisor never loads PHP: it binds the listener once, passes
//! the socket to each child (`FERROPHP_LISTEN_FD`, inherited across exec), and waits.
//! Because the socket outlives the child, connections that arrive while a child is being
//! replaced wait in the kernel's accept queue and are served by the next child instead of
//! being refused; a client sees a delay (the restart backoff plus PHP's boot), never
//! `ECONNREFUSED`.
//!
//! Restarts follow an exponential backoff (100 ms doubling up to 30 s; reset once a child
//! has run for 30 s) so a server that crashes at boot does not spin. SIGTERM and SIGINT
//! are forwarded and the supervisor exits with the child's status once it has drained;
//! SIGHUP drains the child and starts a fresh one at once; SIGUSR1 (graceful worker
//! restart) is forwarded. A child that exits 0 was shut down on purpose (only a drain
//! ends with 0) and one that exits 2 has a configuration error that a restart will not
//! fix: the supervisor exits with it in both cases.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};

use crate::config::ServeArgs;

/// Environment variable naming the inherited listening socket in a supervised child.
const LISTEN_FD_ENV: &str = "FERROPHP_LISTEN_FD";
/// First restart delay; doubles with each crash in a row.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest restart delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A child that ran this long was healthy: its crash starts the backoff afresh.
const HEALTHY_RUN: Duration = Duration::from_secs(30);
/// Accept queue of the shared socket: it holds the connections that arrive while a
/// child restarts (tokio's own default for `TcpListener::bind`).
const BACKLOG: i32 = 1024;

/// The delay before restart number `crashes` (1-based) of a run of crashes.
pub fn backoff(crashes: u32) -> Duration {
    let factor = 1u32 << crashes.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
}

/// In a supervised child: the listening socket the supervisor passed down, if any. Call
/// before any thread exists: it removes the variable from the environment, so PHP's
/// `$_SERVER` never shows it and no grandchild claims the socket.
pub fn take_inherited_listener() -> Result<Option<std::net::TcpListener>, String> {
    let Some(value) = std::env::var_os(LISTEN_FD_ENV) else {
        return Ok(None);
    };
    std::env::remove_var(LISTEN_FD_ENV);
    let fd: RawFd = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| format!("{LISTEN_FD_ENV} is not a file descriptor: {value:?}"))?;
    // SAFETY: only our supervisor sets the variable, to a listening TCP socket it passed
    // to this process alone; the variable is gone, so nothing else in the process wraps
    // the same descriptor. Anything else is given back unclosed below.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    if !matches!(socket2::SockRef::from(&listener).is_listener(), Ok(true)) {
        let _ = std::os::fd::IntoRawFd::into_raw_fd(listener);
        return Err(format!("{LISTEN_FD_ENV}={fd} is not a listening socket"));
    }
    // Scripts that run commands (exec, proc_open) must not hand the socket on.
    socket2::SockRef::from(&listener)
        .set_cloexec(true)
        .map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(Some(listener))
}

pub fn run(args: ServeArgs) -> i32 {
    let config = match crate::serve::load_config(args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let listener = match bind(config.listen) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot listen on {}: {e}", config.listen);
            return 1;
        }
    };
    // One thread: the child is forked from it, and PR_SET_PDEATHSIG follows the thread
    // that forked, which must live as long as the supervisor.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(supervise(listener))
}

fn bind(addr: SocketAddr) -> std::io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket)
}

/// How one child's life ended, as far as the supervisor is concerned.
enum Ended {
    /// SIGTERM/SIGINT: the supervisor ends with the child's status.
    Stop(ExitStatus),
    /// SIGHUP: a fresh child, at once.
    Restart,
    /// The child ended on its own.
    Died(ExitStatus),
}

async fn supervise(listener: socket2::Socket) -> i32 {
    let (Ok(mut term), Ok(mut int), Ok(mut hup), Ok(mut usr1)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::user_defined1()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return 1;
    };
    let fd = listener.as_raw_fd();
    let mut crashes = 0u32;
    loop {
        let started = Instant::now();
        let mut child = match spawn_child(fd) {
            Ok(child) => child,
            Err(e) => {
                tracing::error!("cannot start the server: {e}");
                return 1;
            }
        };
        let pid = child.id().unwrap_or(0);
        tracing::info!(target: "supervise", "started the server, pid {pid}");
        let mut stopping = false;
        let mut restarting = false;
        let ended = loop {
            tokio::select! {
                status = child.wait() => {
                    let status = match status {
                        Ok(s) => s,
                        Err(e) => {
                            tracing::error!("cannot wait for the server: {e}");
                            return 1;
                        }
                    };
                    break if stopping {
                        Ended::Stop(status)
                    } else if restarting {
                        Ended::Restart
                    } else {
                        Ended::Died(status)
                    };
                }
                _ = term.recv() => { stopping = true; send(pid, libc::SIGTERM); }
                _ = int.recv() => { stopping = true; send(pid, libc::SIGINT); }
                _ = hup.recv() => {
                    tracing::info!(target: "supervise", "SIGHUP: draining the server to start a new one");
                    restarting = true;
                    send(pid, libc::SIGTERM);
                }
                _ = usr1.recv() => send(pid, libc::SIGUSR1),
            }
        };
        let status = match ended {
            Ended::Stop(status) => {
                tracing::info!(target: "supervise", "the server stopped ({}); exiting", describe(status));
                return exit_code(status);
            }
            Ended::Restart => {
                crashes = 0;
                continue;
            }
            Ended::Died(status) => status,
        };
        match status.code() {
            Some(0) => {
                tracing::info!(target: "supervise", "the server exited cleanly on its own; exiting");
                return 0;
            }
            Some(2) => {
                tracing::error!(target: "supervise", "the server refused its configuration (exit 2); not restarting");
                return 2;
            }
            _ => {}
        }
        if started.elapsed() >= HEALTHY_RUN {
            crashes = 0;
        }
        crashes += 1;
        let delay = backoff(crashes);
        tracing::warn!(
            target: "supervise",
            "the server died ({}) after {:.1}s; restart {crashes} in a row in {} ms",
            describe(status),
            started.elapsed().as_secs_f64(),
            delay.as_millis()
        );
        // Connections keep queueing on the socket meanwhile.
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = term.recv() => return 0,
            _ = int.recv() => return 0,
            _ = hup.recv() => crashes = 0,
        }
    }
}

/// Starts `ferrophp serve` with this process's own arguments minus `--supervise`, the
/// listening socket inherited as `FERROPHP_LISTEN_FD`.
fn spawn_child(fd: RawFd) -> std::io::Result<tokio::process::Child> {
    let exe = std::env::current_exe()?;
    let args = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--supervise" && a != "--supervise=true");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .env_remove("FERROPHP_SUPERVISE")
        .env(LISTEN_FD_ENV, fd.to_string());
    let parent = std::process::id();
    // SAFETY: runs in the forked child before exec and calls only async-signal-safe
    // functions (fcntl, prctl, getppid) on plain integers.
    unsafe {
        cmd.pre_exec(move || {
            // The supervisor's copy keeps close-on-exec; only the child's is inherited.
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // If the supervisor is killed outright, its child drains instead of running
            // on unsupervised and holding the port.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::other("the supervisor is gone"));
            }
            Ok(())
        });
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd.spawn()
}

fn send(pid: u32, signal: libc::c_int) {
    if pid == 0 {
        return;
    }
    // SAFETY: kill(2) on the pid of our own child, which we have not reaped yet (its
    // wait is still pending), so the pid cannot have been reused by another process.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!(
            "signal {sig}{}",
            if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            }
        ),
        _ => status.to_string(),
    }
}

/// The shell's convention: the exit code, or 128 + the signal.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(9), Duration::from_millis(25_600));
        assert_eq!(backoff(10), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }
}
