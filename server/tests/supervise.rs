//! `ferrophp serve --supervise` for real: a PHP script that overflows the C stack kills the
//! server process, the supervisor restarts it on the same socket, crashes in a row back
//! off exponentially, connections made while no server runs are served by the next one,
//! and signals to the supervisor end (or restart) both processes cleanly.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{exchange, parse_response, wait_until, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/supervise/public")
        .canonicalize()
        .unwrap()
}

fn start(args: &[&str]) -> Server {
    let mut all = vec!["--supervise", "--no-access-log"];
    all.extend_from_slice(args);
    Server::start(&root(), &all)
}

/// The pid of the process serving PHP (pid.php prints getmypid()).
fn server_pid(server: &Server) -> u32 {
    let r = server.get("/pid.php");
    assert_eq!(r.status, 200, "{r:?}\n{}", server.stderr());
    r.text().parse().expect("a pid")
}

fn kill(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

/// Gone, or a zombie waiting for a reaper other than us.
fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

fn listening_lines(server: &Server) -> usize {
    server
        .stdout_lines()
        .iter()
        .filter(|l| l.starts_with("ferrophp listening on "))
        .count()
}

/// The delays the supervisor announced, in order ("... in N ms").
fn announced_delays(server: &Server) -> Vec<u64> {
    server
        .stderr()
        .lines()
        .filter(|l| l.contains("the server died"))
        .filter_map(|l| {
            let (_, tail) = l.rsplit_once(" in ")?;
            tail.trim().strip_suffix(" ms")?.parse().ok()
        })
        .collect()
}

#[test]
fn a_stack_overflow_kills_the_server_and_the_supervisor_starts_a_new_one() {
    // The default 512 MiB stacks let memory_limit stop this recursion first (a 500, see
    // isolation_faults.rs); an 8 MiB stack overflows, as a crashing extension would.
    let server = start(&["--php-stack-mb", "8"]);
    let first = server_pid(&server);
    assert_ne!(first, server.pid(), "PHP must not run in the supervisor");

    // The crashing request gets no response: the process died under it.
    let reply = exchange(
        server.addr,
        b"GET /overflow.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        Duration::from_secs(30),
    );
    assert!(
        reply.as_ref().map_or(true, |b| parse_response(b).is_none()),
        "the overflow answered: {reply:?}"
    );
    assert!(
        server.wait_for_stderr("the server died (signal", Duration::from_secs(10)),
        "no death by signal reported:\n{}",
        server.stderr()
    );
    // Same address, new process.
    let second = server_pid(&server);
    assert_ne!(first, second);
    assert!(process_ended(first));
    assert_eq!(listening_lines(&server), 2);
    let r = server.get("/slow.php?ms=1");
    assert_eq!(r.status, 200);
    assert!(r.text().starts_with("started"), "{r:?}");
}

#[test]
fn connections_made_while_no_server_runs_wait_for_the_next_one() {
    let server = start(&[]);
    for round in 0..3 {
        let before = server_pid(&server);
        kill(before, "KILL");
        // No wait: the server is dead or dying, the next one not started yet. The
        // connection is accepted by the kernel on the supervisor's socket and answered
        // once the new server runs.
        let started = Instant::now();
        let r = server.get("/pid.php");
        assert_eq!(r.status, 200, "round {round}: {r:?}");
        let after: u32 = r.text().parse().unwrap();
        assert_ne!(
            after, before,
            "round {round}: answered by the killed server"
        );
        eprintln!("round {round}: served after {:?}", started.elapsed());
    }
}

#[test]
fn crashes_in_a_row_back_off_exponentially() {
    let server = start(&[]);
    let mut gaps = Vec::new();
    for _ in 0..4 {
        let pid = server_pid(&server);
        let killed = Instant::now();
        kill(pid, "KILL");
        assert!(wait_until(Duration::from_secs(20), || {
            exchange(
                server.addr,
                b"GET /pid.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                Duration::from_secs(20),
            )
            .ok()
            .and_then(|b| parse_response(&b))
            .is_some_and(|r| r.status == 200 && r.text() != pid.to_string())
        }));
        gaps.push(killed.elapsed());
    }
    let delays = announced_delays(&server);
    assert_eq!(delays, [100, 200, 400, 800], "{}", server.stderr());
    // The supervisor really waited: each outage lasted at least its delay.
    for (gap, delay) in gaps.iter().zip(&delays) {
        assert!(
            *gap >= Duration::from_millis(*delay),
            "outage {gap:?} shorter than the announced {delay} ms"
        );
    }
}

#[test]
fn sigterm_to_the_supervisor_drains_the_server_and_ends_both() {
    let mut server = start(&["--grace-ms", "10000"]);
    let child = server_pid(&server);
    let mut conn = common::connect(server.addr);
    conn.write_all(
        b"GET /slow.php?ms=1500 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    // SIGTERM only once the script runs (it flushed its first line).
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&reply).contains("started") {
        let n = conn.read(&mut buf).expect("the script starts");
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&reply));
        reply.extend_from_slice(&buf[..n]);
    }
    server.sigterm();
    conn.read_to_end(&mut reply)
        .expect("the in-flight request completes");
    let reply = parse_response(&reply).expect("a response");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), format!("started\ndone {child}"));
    let status = server
        .wait_exit(Duration::from_secs(15))
        .expect("the supervisor exits");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    assert!(process_ended(child), "the server outlived its supervisor");
    assert!(
        !server.stderr().contains("the server died"),
        "{}",
        server.stderr()
    );
    assert!(
        std::net::TcpStream::connect_timeout(&server.addr, Duration::from_secs(2)).is_err(),
        "the socket is still open"
    );
}

#[test]
fn commands_run_from_php_do_not_inherit_the_listening_socket() {
    let server = start(&[]);
    let r = server.get("/fds.php");
    assert_eq!(r.status, 200);
    let fds = r.text();
    assert!(fds.contains("pipe:"), "the probe did not run: {fds:?}");
    // Holding the socket, a long-running command would keep the port open after the
    // server died and take connections nobody answers.
    assert!(
        !fds.contains("socket:"),
        "a socket leaked into a command: {fds}"
    );
}

#[test]
fn sighup_replaces_the_server_without_backoff() {
    let server = start(&[]);
    let first = server_pid(&server);
    kill(server.pid(), "HUP");
    assert!(wait_until(Duration::from_secs(20), || process_ended(first)));
    let second = server_pid(&server);
    assert_ne!(first, second);
    assert!(announced_delays(&server).is_empty(), "{}", server.stderr());
}

#[test]
fn a_killed_supervisor_takes_its_server_down() {
    let mut server = start(&[]);
    let child = server_pid(&server);
    kill(server.pid(), "KILL");
    server
        .wait_exit(Duration::from_secs(5))
        .expect("supervisor gone");
    assert!(
        wait_until(Duration::from_secs(15), || process_ended(child)),
        "the server kept running without its supervisor"
    );
}
