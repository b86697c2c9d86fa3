//! The server confined as in an unprivileged container: Docker's default seccomp profile
//! refuses `unshare` without CAP_SYS_ADMIN, so no PHP thread gets a umask and working
//! directory of its own (`unshare(CLONE_FS)` when it starts). The test installs a seccomp
//! filter that refuses exactly that call, with EPERM as Docker does, in the server process
//! before it starts: the log says so once for all PHP threads, and the server serves.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use common::{client, http_root, wait_until, Server};
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};

const REFUSED: &str = "unshare(CLONE_FS) failed";

/// `ferrophp` with a seccomp filter refusing `unshare` (EPERM), everything else allowed.
fn ferrophp_without_unshare() -> Command {
    let filter: BpfProgram = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_unshare, vec![])]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        std::env::consts::ARCH.try_into().expect("a seccomp target"),
    )
    .expect("a valid filter")
    .try_into()
    .expect("it compiles");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrophp"));
    // SAFETY: between fork and exec the closure only makes the prctl and seccomp system
    // calls that install the program compiled above, before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            seccompiler::apply_filter(&filter)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        });
    }
    cmd
}

/// PHP threads listed by the admin view.
fn php_threads(server: &Server) -> usize {
    let admin = server.admin_addr().expect("admin listener");
    let body = client()
        .get(format!("http://{admin}/threads"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["threads"].as_array().map(Vec::len))
        .unwrap_or(0)
}

#[test]
fn a_refused_unshare_is_logged_once_for_all_php_threads() {
    let server = Server::start_command(
        ferrophp_without_unshare(),
        &http_root(),
        &[
            "--threads",
            "4",
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
        &[],
    );
    // Each thread tries unshare before it lists itself: once all four are listed, every
    // attempt has been made (and logged, by a synchronous writer).
    assert!(
        wait_until(Duration::from_secs(20), || php_threads(&server) == 4),
        "{} PHP threads",
        php_threads(&server)
    );
    // A line logged after them all: once it is read, so is everything before it.
    let r = server.get("/log.php?tag=after-start");
    assert_eq!(r.status, 200, "{:?}", r.text());
    assert_eq!(r.text(), "logged");
    assert!(wait_until(Duration::from_secs(10), || server
        .stderr()
        .contains("ferrophp-error-log-marker after-start")));
    let stderr = server.stderr();
    let refused: Vec<&str> = stderr.lines().filter(|l| l.contains(REFUSED)).collect();
    assert_eq!(refused.len(), 1, "one line for 4 PHP threads:\n{stderr}");
    assert!(
        refused[0].contains("Operation not permitted"),
        "{}",
        refused[0]
    );
    // Confined or not, the threads serve.
    for _ in 0..8 {
        assert_eq!(server.get("/hello.php").status, 200);
    }
    server.assert_alive();
}
