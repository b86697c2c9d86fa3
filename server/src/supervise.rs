//! `ferrophp serve --supervise`: a small parent process that owns the listening sockets and
//! runs the real server as a child, restarting it when it dies.
//!
//! PHP runs inside the server process, so a segfault in an extension or a C stack
//! overflow kills every request in flight and the process itself; nothing in-process can
//! recover from that. The supervisor never loads PHP: it binds the server's listening
//! sockets once (all of them, `sockets::specs`), passes them to each child
//! (`FERROPHP_LISTEN_FD`, inherited across exec; the protocol is in `sockets.rs`), and
//! waits. Because the sockets outlive the child, connections that arrive while a child
//! is being replaced wait in the kernel's accept queue and are served by the next child
//! instead of being refused; a client sees a delay (the restart backoff plus PHP's boot),
//! never `ECONNREFUSED`.
//!
//! Restarts follow an exponential backoff (100 ms doubling up to 30 s; reset once a child
//! has run for 30 s) so a server that crashes at boot does not spin. SIGTERM and SIGINT
//! are forwarded and the supervisor exits with the child's status once it (and any child
//! still draining) has drained; SIGUSR1 (a reload inside the child) is forwarded. A child
//! that exits 0 was shut down on purpose (only a drain ends with 0) and one that exits 2
//! has a configuration error that a restart will not fix: the supervisor exits with it in
//! both cases.
//!
//! SIGHUP replaces the child with a new process (new code, php.ini, extensions, a fresh
//! OPcache, the document root resolved again: a deploy) without a gap: the new child
//! starts on the same sockets while the old one keeps serving, tells the supervisor when
//! it is ready (a byte on a pipe, `FERROPHP_READY_FD`: PHP started, workers booted, about
//! to accept), and only then is the old one told to drain (SIGTERM: it stops accepting,
//! finishes its requests within `--grace-ms`). Both accept from the same sockets meanwhile,
//! so no connection is refused or waits for a boot. A new child that exits or is not
//! ready within [`READY_TIMEOUT`] is stopped and the old one goes on serving.

use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};

use crate::config::{ServeArgs, ServeConfig};
use crate::sockets;

/// Environment variable naming the pipe a child replacing another writes to once ready.
const READY_FD_ENV: &str = "FERROPHP_READY_FD";
/// How long a new child may take to become ready before a replacement is given up.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// First restart delay; doubles with each crash in a row.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest restart delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A child that ran this long was healthy: its crash starts the backoff afresh.
const HEALTHY_RUN: Duration = Duration::from_secs(30);

/// The delay before restart number `crashes` (1-based) of a run of crashes.
pub fn backoff(crashes: u32) -> Duration {
    let factor = 1u32 << crashes.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
}

/// The write end of the readiness pipe, in a child started to replace another.
static READY: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// In a child started to replace another: takes `FERROPHP_READY_FD` out of the
/// environment (as `sockets::take_inherited` does the sockets' variable). Call before any
/// thread exists.
pub(crate) fn take_ready_pipe() -> Result<(), String> {
    let Some(value) = std::env::var_os(READY_FD_ENV) else {
        return Ok(());
    };
    std::env::remove_var(READY_FD_ENV);
    let fd: RawFd = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| format!("{READY_FD_ENV} is not a file descriptor: {value:?}"))?;
    // SAFETY: only our supervisor sets the variable, to the write end of a pipe it passed
    // to this process alone; the variable is gone, so nothing else wraps the descriptor.
    let pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    socket2::SockRef::from(&pipe)
        .set_cloexec(true)
        .map_err(|e| format!("{READY_FD_ENV}={fd}: {e}"))?;
    *READY.lock().unwrap_or_else(|e| e.into_inner()) = Some(pipe);
    Ok(())
}

/// Tells the supervisor that started this process to replace another that it is ready
/// (PHP started, workers booted, listening): the old one may drain now. A no-op
/// otherwise.
pub(crate) fn notify_ready() {
    use std::io::Write;
    if let Some(mut pipe) = READY.lock().unwrap_or_else(|e| e.into_inner()).take() {
        // A supervisor that gave up waiting closed its end: nothing to tell.
        let _ = pipe.write_all(b"ready\n");
    }
}

/// `ferrophp serve --supervise`: binds the listening sockets, runs and restarts the
/// server as a child until a signal or a deliberate exit ends it; the exit status.
pub fn run(args: ServeArgs) -> i32 {
    let config = match ServeConfig::load_and_start_logging(args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let listening = match sockets::bind_all(&sockets::specs(&config)) {
        Ok(sockets) => sockets,
        Err(e) => {
            tracing::error!("{e}");
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
    runtime.block_on(supervise(listening))
}

/// How one child's life ended, as far as the supervisor is concerned.
enum Ended {
    /// SIGTERM/SIGINT: the supervisor ends with the child's status.
    Stop(ExitStatus),
    /// The child ended on its own.
    Died(ExitStatus),
}

/// A running child.
struct Child {
    process: tokio::process::Child,
    pid: u32,
    started: Instant,
}

impl Child {
    fn start(fds: &[RawFd], ready: Option<RawFd>) -> std::io::Result<Child> {
        let process = spawn_child(fds, ready)?;
        let pid = process.id().unwrap_or(0);
        Ok(Child {
            process,
            pid,
            started: Instant::now(),
        })
    }
}

/// The signals the supervisor handles.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
}

/// `listening`: the sockets every child serves, held open here for the supervisor's life.
async fn supervise(listening: Vec<socket2::Socket>) -> i32 {
    let (Ok(term), Ok(int), Ok(hup), Ok(usr1)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::user_defined1()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return 1;
    };
    let mut signals = Signals {
        term,
        int,
        hup,
        usr1,
    };
    let fds: Vec<RawFd> = listening.iter().map(AsRawFd::as_raw_fd).collect();
    let mut crashes = 0u32;
    // Replaced children finishing their requests; waited for before the supervisor exits.
    let mut draining = tokio::task::JoinSet::new();
    loop {
        let mut child = match Child::start(&fds, None) {
            Ok(child) => child,
            Err(e) => {
                tracing::error!("cannot start the server: {e}");
                return 1;
            }
        };
        tracing::info!(target: "supervise", "started the server, pid {}", child.pid);
        let mut stopping = false;
        let ended = loop {
            tokio::select! {
                status = child.process.wait() => {
                    let status = match status {
                        Ok(s) => s,
                        Err(e) => {
                            tracing::error!("cannot wait for the server: {e}");
                            return 1;
                        }
                    };
                    break if stopping { Ended::Stop(status) } else { Ended::Died(status) };
                }
                _ = signals.term.recv() => { stopping = true; send(child.pid, libc::SIGTERM); }
                _ = signals.int.recv() => { stopping = true; send(child.pid, libc::SIGINT); }
                _ = signals.hup.recv(), if !stopping => {
                    // A SIGHUP during a replacement (a second deploy) asks for one more
                    // once this one is done: the new process may predate its switch.
                    let mut again = true;
                    while again {
                        let (replaced, more) = replace(&mut child, &fds, &mut signals).await;
                        again = more;
                        match replaced {
                            Replaced::Yes(old) => {
                                draining.spawn(drain(old));
                            }
                            Replaced::No => {}
                            Replaced::Stop(sig, new) => {
                                stopping = true;
                                again = false;
                                send(child.pid, sig);
                                draining.spawn(drain(new));
                            }
                        }
                    }
                }
                _ = signals.usr1.recv() => send(child.pid, libc::SIGUSR1),
                Some(_) = draining.join_next(), if !draining.is_empty() => {}
            }
        };
        let status = match ended {
            Ended::Stop(status) => {
                while draining.join_next().await.is_some() {}
                tracing::info!(target: "supervise", "the server stopped ({}); exiting", describe(status));
                return exit_code(status);
            }
            Ended::Died(status) => status,
        };
        match status.code() {
            Some(0) => {
                while draining.join_next().await.is_some() {}
                tracing::info!(target: "supervise", "the server exited cleanly on its own; exiting");
                return 0;
            }
            Some(2) => {
                tracing::error!(target: "supervise", "the server refused its configuration (exit 2); not restarting");
                return 2;
            }
            _ => {}
        }
        if child.started.elapsed() >= HEALTHY_RUN {
            crashes = 0;
        }
        crashes += 1;
        let delay = backoff(crashes);
        tracing::warn!(
            target: "supervise",
            "the server died ({}) after {:.1}s; restart {crashes} in a row in {} ms",
            describe(status),
            child.started.elapsed().as_secs_f64(),
            delay.as_millis()
        );
        // Connections keep queueing on the sockets meanwhile.
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = signals.term.recv() => return 0,
            _ = signals.int.recv() => return 0,
            _ = signals.hup.recv() => crashes = 0,
        }
    }
}

/// What became of a replacement.
enum Replaced {
    /// The new child serves; here is the old one, told to drain.
    Yes(Child),
    /// The new child failed; the old one goes on.
    No,
    /// SIGTERM or SIGINT came meanwhile: the new child (here) got it already, the one
    /// that stays is yet to.
    Stop(libc::c_int, Child),
}

/// SIGHUP: starts a new child next to `current` and, once it is ready, makes it the
/// current one and tells the old one to drain. Also says whether another SIGHUP came
/// meanwhile.
async fn replace(current: &mut Child, fds: &[RawFd], signals: &mut Signals) -> (Replaced, bool) {
    tracing::info!(target: "supervise", "SIGHUP: starting a new server next to pid {}", current.pid);
    let (mut ready, write) = match ready_pipe() {
        Ok(pair) => pair,
        Err(e) => {
            tracing::error!(target: "supervise", "cannot make the readiness pipe: {e}");
            return (Replaced::No, false);
        }
    };
    let started = Child::start(fds, Some(write.as_raw_fd()));
    // The child has its copy: ours must go, or the pipe never ends when the child dies.
    drop(write);
    let mut new = match started {
        Ok(child) => child,
        Err(e) => {
            tracing::error!(target: "supervise", "cannot start the new server: {e}");
            return (Replaced::No, false);
        }
    };
    let mut byte = [0u8; 16];
    let mut old_gone = None;
    let mut again = false;
    let failure = loop {
        tokio::select! {
            read = tokio::io::AsyncReadExt::read(&mut ready, &mut byte) => match read {
                Ok(n) if n > 0 => break None,
                // The pipe closed without a word: the new child is gone or going.
                _ => break Some("exited before it was ready".to_string()),
            },
            status = new.process.wait() => {
                break Some(match status {
                    Ok(s) => format!("exited before it was ready ({})", describe(s)),
                    Err(e) => format!("cannot be waited for: {e}"),
                });
            }
            status = current.process.wait(), if old_gone.is_none() => {
                // The old one died meanwhile: the new one is all there is, and will be
                // waited for as it is.
                old_gone = Some(status);
                tracing::warn!(target: "supervise", "the old server (pid {}) died while its replacement started", current.pid);
            }
            _ = tokio::time::sleep(READY_TIMEOUT) => {
                break Some(format!("was not ready within {} s", READY_TIMEOUT.as_secs()));
            }
            _ = signals.term.recv() => {
                send(new.pid, libc::SIGTERM);
                return (Replaced::Stop(libc::SIGTERM, new), false);
            }
            _ = signals.int.recv() => {
                send(new.pid, libc::SIGINT);
                return (Replaced::Stop(libc::SIGINT, new), false);
            }
            _ = signals.hup.recv() => {
                tracing::info!(target: "supervise", "SIGHUP while a new server starts: another follows once it is ready");
                again = true;
            }
        }
    };
    if let Some(why) = failure {
        tracing::error!(
            target: "supervise",
            "the new server (pid {}) {why}; the running one (pid {}) goes on serving",
            new.pid,
            current.pid
        );
        // Not `send`: the child may have been reaped already, and tokio knows.
        let _ = new.process.start_kill();
        let _ = new.process.wait().await;
        return (Replaced::No, again);
    }
    tracing::info!(
        target: "supervise",
        "new server (pid {}) ready in {} ms; the old one (pid {}) drains",
        new.pid,
        new.started.elapsed().as_millis(),
        current.pid
    );
    let old = std::mem::replace(current, new);
    if old_gone.is_none() {
        send(old.pid, libc::SIGTERM);
    }
    (Replaced::Yes(old), again)
}

/// Waits for a replaced child to finish draining.
async fn drain(mut old: Child) {
    match old.process.wait().await {
        Ok(status) => tracing::info!(
            target: "supervise",
            "the replaced server (pid {}) has drained ({})",
            old.pid,
            describe(status)
        ),
        Err(e) => tracing::warn!(target: "supervise", "cannot wait for pid {}: {e}", old.pid),
    }
}

/// A pipe: the read end for the supervisor (async), the write end for a child.
fn ready_pipe() -> std::io::Result<(tokio::net::unix::pipe::Receiver, std::os::fd::OwnedFd)> {
    use std::os::fd::OwnedFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((
        tokio::net::unix::pipe::Receiver::from_owned_fd(read)?,
        write,
    ))
}

/// Starts `ferrophp serve` with this process's own arguments minus `--supervise`, the
/// listening sockets `fds` inherited as `FERROPHP_LISTEN_FD` (`sockets.rs`), and `ready`,
/// the write end of a readiness pipe, as `FERROPHP_READY_FD`.
fn spawn_child(fds: &[RawFd], ready: Option<RawFd>) -> std::io::Result<tokio::process::Child> {
    // From a package: the package again (its launcher checks and prepares the tree).
    let exe = worker::layout::executable()?;
    let args = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--supervise" && a != "--supervise=true");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .env_remove("FERROPHP_SUPERVISE")
        .env(sockets::LISTEN_FD_ENV, sockets::fd_list(fds));
    if let Some(ready) = ready {
        cmd.env(READY_FD_ENV, ready.to_string());
    }
    let parent = std::process::id();
    let inherited: Vec<RawFd> = fds.iter().copied().chain(ready).collect();
    // SAFETY: runs in the forked child before exec and calls only async-signal-safe
    // functions (fcntl, prctl, getppid) on plain integers, read from a list made before
    // the fork (nothing is allocated in the child).
    unsafe {
        cmd.pre_exec(move || {
            // The supervisor's copies keep close-on-exec; only the child's are inherited.
            for &fd in &inherited {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
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
