//! File descriptor limits over real TCP: the server started under `prlimit --nofile`
//! raises its soft limit to the hard one, fits `--max-connections` into what the limit
//! leaves (one warning), serves the connections it took while refusing the rest at once,
//! and, when PHP itself exhausts the descriptors (`accept` fails with EMFILE), backs off
//! without burning CPU, keeps answering the connections it has and accepts the waiting
//! ones once descriptors are free again.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{connect, http_root, read_response, Server};

/// A script that runs `ferrophp` under `prlimit --nofile=SOFT:HARD` (prlimit executes the
/// server in its own process, so the PID the tests watch is the server's).
fn limited_binary(dir: &Path, soft: u64, hard: u64) -> PathBuf {
    let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("prlimit (util-linux) is needed for these tests");
    let script = dir.join("ferrophp-limited");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec {prlimit} --nofile={soft}:{hard} {} \"$@\"\n",
            env!("CARGO_BIN_EXE_ferrophp")
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    script
}

fn start_limited(dir: &Path, soft: u64, hard: u64, args: &[&str]) -> Server {
    Server::start_binary(&limited_binary(dir, soft, hard), &http_root(), args, &[])
}

/// The server's "Max open files" soft and hard limits, from /proc.
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files line");
    let mut f = line["Max open files".len()..].split_whitespace();
    (f.next().unwrap().to_owned(), f.next().unwrap().to_owned())
}

/// CPU time (user + system) the process has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name in parentheses: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    let per_second: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// CPU the server burns over one second of wall time.
fn cpu_over_a_second(pid: u32) -> Duration {
    let before = cpu_time(pid);
    std::thread::sleep(Duration::from_secs(1));
    cpu_time(pid) - before
}

/// The number in the server's "serving at most N connections" warning.
fn fitted_connections(stderr: &str) -> usize {
    let at = stderr
        .find("serving at most ")
        .unwrap_or_else(|| panic!("no max-connections warning:\n{stderr}"));
    stderr[at + "serving at most ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// What a keep-alive GET on an open connection came to.
#[derive(Debug, PartialEq)]
enum Answer {
    Response(u16, Vec<u8>),
    /// The server closed the connection (EOF or reset).
    Closed,
    /// Nothing within the timeout (the connection waits in the listen backlog).
    Silent,
}

/// Sends a keep-alive GET on `stream` and reads its response.
fn get_on(stream: &mut TcpStream, path: &str, timeout: Duration) -> Answer {
    stream.set_read_timeout(Some(timeout)).unwrap();
    if stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .is_err()
    {
        return Answer::Closed;
    }
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    match read_response(&mut reader, false) {
        Ok(r) => Answer::Response(r.status, r.body),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Answer::Silent,
        Err(_) => Answer::Closed,
    }
}

fn status_on(stream: &mut TcpStream, path: &str) -> Option<u16> {
    match get_on(stream, path, Duration::from_secs(5)) {
        Answer::Response(status, _) => Some(status),
        _ => None,
    }
}

#[test]
fn soft_limit_is_raised_to_the_hard_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_limited(dir.path(), 64, 4096, &["--max-connections", "100"]);
    assert_eq!(
        open_files_limit(server.pid()),
        ("4096".into(), "4096".into())
    );
    assert!(
        server.wait_for_stderr(
            "file descriptor limit raised from 64 to 4096",
            Duration::from_secs(5)
        ),
        "{}",
        server.stderr()
    );
    // 100 connections fit in 4096: nothing to warn about.
    assert!(
        !server.stderr().contains("does not fit"),
        "{}",
        server.stderr()
    );
    server.assert_alive();
}

#[test]
fn max_connections_is_fitted_into_a_small_limit_and_refused_connections_cost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_limited(
        dir.path(),
        64,
        64,
        &["--max-connections", "10000", "--header-timeout-ms", "60000"],
    );
    assert!(server.wait_for_stderr("serving at most", Duration::from_secs(5)));
    let stderr = server.stderr();
    assert!(
        stderr.contains("--max-connections 10000 does not fit the file descriptor limit 64"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("does not fit").count(), 1, "{stderr}");
    assert!(stderr.contains("ulimit -n"), "{stderr}");
    let fit = fitted_connections(&stderr);
    assert!((2..64).contains(&fit), "{fit}");

    // More connections than fit, opened before any of them sends a byte.
    let mut held: Vec<TcpStream> = (0..fit + 30).map(|_| connect(server.addr)).collect();
    std::thread::sleep(Duration::from_millis(500));
    // Saturated, with every slot taken and the rest closed: no CPU burnt.
    let cpu = cpu_over_a_second(server.pid());
    eprintln!("fit {fit}, CPU over 1 s while saturated: {cpu:?}");
    assert!(cpu < Duration::from_millis(250), "{cpu:?}");
    // The first `fit` connections were accepted and are served; the others were closed
    // at once (not left waiting in the backlog for descriptors that never come).
    let mut served = Vec::new();
    for (i, s) in held.iter_mut().enumerate() {
        match get_on(s, "/hello.php", Duration::from_secs(2)) {
            Answer::Response(200, body) => {
                assert_eq!(body, b"Hello, World!");
                served.push(i);
            }
            Answer::Closed => {}
            other => panic!("connection {i}: {other:?}"),
        }
    }
    assert_eq!(served, (0..fit).collect::<Vec<_>>());
    // The connections alone never ran the server out of descriptors.
    assert!(
        !server.stderr().contains("accept failed"),
        "{}",
        server.stderr()
    );
    // Every connection closes; new ones are served again, up to the fitted limit, once
    // the server has seen the old ones close (a connection refused meanwhile is retried).
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut again: Vec<TcpStream> = Vec::new();
    while again.len() < fit {
        let mut s = connect(server.addr);
        match status_on(&mut s, "/hello.php") {
            Some(200) => again.push(s),
            other => {
                assert!(
                    Instant::now() < deadline,
                    "connection {} after the others closed: {other:?}",
                    again.len()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    // Their slots come back once the server has seen them close.
    drop(again);
    assert!(common::serves_hello_again(
        server.addr,
        Duration::from_secs(3)
    ));
}

/// Reads from `stream` until `needle` appears (or `timeout`); what was read.
fn read_until(stream: &mut TcpStream, needle: &str, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&out).contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no {needle:?} in {:?}",
            String::from_utf8_lossy(&out)
        );
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => panic!(
                "closed before {needle:?}: {:?}",
                String::from_utf8_lossy(&out)
            ),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn accept_backs_off_while_php_holds_every_descriptor_and_resumes_after() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_limited(dir.path(), 64, 64, &["--header-timeout-ms", "60000"]);
    // A keep-alive connection taken before the descriptors run out.
    let mut kept = connect(server.addr);
    assert_eq!(status_on(&mut kept, "/hello.php"), Some(200));
    // PHP opens files until none are left, and holds them for a while.
    let mut hog = connect(server.addr);
    hog.write_all(b"GET /hold-files.php?ms=4000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let head = read_until(&mut hog, "holding ", Duration::from_secs(10));
    eprintln!(
        "PHP is {}",
        head.lines().find(|l| l.starts_with("holding")).unwrap()
    );

    // A new client now waits in the listen backlog: accept fails with EMFILE.
    let mut waiting = connect(server.addr);
    waiting
        .write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let cpu = cpu_over_a_second(server.pid());
    eprintln!("CPU over 1 s with accept failing: {cpu:?}");
    assert!(
        cpu < Duration::from_millis(250),
        "accept loop spins: {cpu:?}"
    );
    assert!(
        server.stderr().contains("accept failed"),
        "accept did not fail, the test proves nothing:\n{}",
        server.stderr()
    );
    // The connection the server has is still answered (OPTIONS * needs no descriptor).
    kept.write_all(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reader = std::io::BufReader::new(kept.try_clone().unwrap());
    assert_eq!(read_response(&mut reader, false).unwrap().status, 200);
    // The waiting client has had no answer yet ...
    waiting
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(matches!(
        waiting.read(&mut buf),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
    ));
    // ... and gets it once PHP lets the descriptors go.
    read_until(&mut hog, "released", Duration::from_secs(10));
    let answer = read_until(&mut waiting, "Hello, World!", Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        server.wait_for_stderr("accepting again after", Duration::from_secs(2)),
        "{}",
        server.stderr()
    );
    // One warning for the whole episode, not one per failed attempt.
    assert_eq!(server.stderr().matches("accept failed").count(), 1);
    server.assert_alive();
}
