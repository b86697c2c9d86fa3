//! A request's life beyond the plain case: fastcgi_finish_request() and its ferrophp_
//! name, clients that disconnect mid-stream (connection_aborted(), ignore_user_abort),
//! PHP's log lines and the access log on stderr, and graceful shutdown on SIGTERM.

mod common;

use std::io::{BufReader, Read, Write};
use std::time::{Duration, Instant};

use common::{connect, encode, exchange, http_root, parse_response, wait_until, Server};

fn finish_request_ends_the_response_early(function: &str, flush: bool) {
    let server = Server::start(&http_root(), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("after-finish");
    let path = format!(
        "/finish.php?fn={function}&flush={}&ms=2000&marker={}",
        u8::from(flush),
        encode(marker.to_str().unwrap())
    );

    // Keep-alive on purpose: the client must see the end of the body, not a close.
    let stream = connect(server.addr);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let started = Instant::now();
    write!(writer, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let r = common::read_response(&mut reader, false).unwrap();
    let took = started.elapsed();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-finish"), Some(function));
    assert_eq!(r.text(), "response before finish\n");
    assert!(
        took < Duration::from_millis(1500),
        "response took {took:?}; the script sleeps 2 s after finishing it"
    );
    assert!(
        !marker.exists(),
        "marker written before the script's sleep ended"
    );
    assert!(
        wait_until(Duration::from_secs(6), || marker.exists()),
        "the script did not go on after finishing the response"
    );
    assert!(started.elapsed() >= Duration::from_millis(1900));
    // Give the write a moment to complete before reading.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "after finish ok=true"
    );
    // The same connection serves the next request.
    write!(writer, "GET /hello.php HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let r = common::read_response(&mut reader, false).unwrap();
    assert_eq!(r.body, b"Hello, World!");
}

#[test]
fn fastcgi_finish_request_completes_the_response_while_the_script_goes_on() {
    finish_request_ends_the_response_early("fastcgi_finish_request", false);
}

#[test]
fn finish_request_after_streaming_started_ends_the_stream() {
    finish_request_ends_the_response_early("fastcgi_finish_request", true);
}

#[test]
fn ferrophp_finish_request_completes_the_response_while_the_script_goes_on() {
    finish_request_ends_the_response_early("ferrophp_finish_request", false);
}

/// Starts abort.php, reads ~64 KiB of its stream, then drops the connection.
fn start_and_abandon(server: &Server, marker: &std::path::Path, ignore: bool, flush: bool) {
    let mut stream = connect(server.addr);
    write!(
        stream,
        "GET /abort.php?ignore={}&flush={}&marker={} HTTP/1.1\r\nHost: localhost\r\n\r\n",
        u8::from(ignore),
        u8::from(flush),
        encode(marker.to_str().unwrap())
    )
    .unwrap();
    let mut got = 0;
    let mut buf = [0u8; 8192];
    while got < 64 * 1024 {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "stream ended early");
        got += n;
    }
    assert!(
        !marker.exists(),
        "the script believes the client left already"
    );
    let _ = stream.shutdown(std::net::Shutdown::Both);
    drop(stream);
}

fn aborted_script_sees_connection_aborted(flush: bool) {
    let server = Server::start(&http_root(), &["--threads", "1"]);
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("aborted");
    let left = Instant::now();
    start_and_abandon(&server, &marker, true, flush);
    assert!(
        wait_until(Duration::from_secs(5), || marker.exists()),
        "connection_aborted() never turned 1 within 5 s of the client leaving"
    );
    std::thread::sleep(Duration::from_millis(50));
    let text = std::fs::read_to_string(&marker).unwrap();
    assert!(
        text.starts_with("aborted=1"),
        "{text} after {:?}",
        left.elapsed()
    );
    server.assert_alive();
}

fn aborted_script_is_stopped(flush: bool) {
    let server = Server::start(&http_root(), &["--threads", "1", "--max-wait-ms", "8000"]);
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("aborted");
    let left = Instant::now();
    start_and_abandon(&server, &marker, false, flush);
    // The only PHP thread is free again soon: the script was stopped (it would otherwise
    // loop for 10 s).
    let r = server.get("/hello.php");
    let freed = left.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        freed < Duration::from_secs(4),
        "thread busy for {freed:?} after the abort"
    );
    assert!(!marker.exists(), "the script ran on after the client left");
}

#[test]
fn disconnect_seen_by_a_write_sets_connection_aborted_with_ignore_user_abort() {
    aborted_script_sees_connection_aborted(false);
}

#[test]
fn disconnect_seen_by_a_write_ends_the_script_without_ignore_user_abort() {
    aborted_script_is_stopped(false);
}

#[test]
fn disconnect_seen_by_flush_sets_connection_aborted_with_ignore_user_abort() {
    aborted_script_sees_connection_aborted(true);
}

#[test]
fn disconnect_seen_by_flush_ends_the_script_without_ignore_user_abort() {
    aborted_script_is_stopped(true);
}

#[test]
fn error_log_and_warnings_go_to_the_server_log() {
    let server = Server::start(&http_root(), &[]);
    let r = server.get("/log.php?tag=tag-7f3a");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        "logged",
        "errors must not be displayed in the response"
    );
    for needle in [
        "ferrophp-error-log-marker tag-7f3a",
        "ferrophp-warning-marker",
        "Undefined variable $ferrophp_undefined_variable",
    ] {
        assert!(
            server.wait_for_stderr(needle, Duration::from_secs(3)),
            "{needle:?} not in stderr:\n{}",
            server.stderr()
        );
    }
}

#[test]
fn access_log_is_on_by_default() {
    let server = Server::start(&http_root(), &[]);
    assert_eq!(server.get("/hello.php?access=log-check").status, 200);
    assert_eq!(server.get("/missing/.hidden").status, 404);
    assert!(
        server.wait_for_stderr("/hello.php?access=log-check", Duration::from_secs(3)),
        "{}",
        server.stderr()
    );
    let log = server.stderr();
    let line = log
        .lines()
        .find(|l| l.contains("/hello.php?access=log-check"))
        .unwrap();
    assert!(line.contains(" access:"), "{line}");
    assert!(
        line.contains("GET") && line.contains("status=200"),
        "{line}"
    );
    assert!(server.wait_for_stderr("404", Duration::from_secs(3)));
}

#[test]
fn no_access_log_flag_disables_it() {
    let server = Server::start(&http_root(), &["--no-access-log"]);
    assert_eq!(
        server.get("/hello.php?access=should-not-appear").status,
        200
    );
    // A PHP log line written after the request proves stderr has caught up.
    server.get("/log.php?tag=sync");
    assert!(server.wait_for_stderr("ferrophp-error-log-marker sync", Duration::from_secs(3)));
    let log = server.stderr();
    assert!(!log.contains("should-not-appear"), "{log}");
    assert!(
        !log.lines().any(|l| l.contains(" access:")),
        "access log lines despite --no-access-log:\n{log}"
    );
}

#[test]
fn sigterm_lets_in_flight_requests_finish_and_exits_zero() {
    let mut server = Server::start(&http_root(), &[]);
    let addr = server.addr;
    // An idle keep-alive connection must not hold up the shutdown.
    let mut idle = connect(addr);
    idle.write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut idle_reader = BufReader::new(idle.try_clone().unwrap());
    assert_eq!(
        common::read_response(&mut idle_reader, false)
            .unwrap()
            .status,
        200
    );

    let slow = std::thread::spawn(move || {
        exchange(
            addr,
            b"GET /sleep.php?ms=2000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(15),
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    server.sigterm();

    // New connections are refused soon after the signal.
    assert!(
        wait_until(Duration::from_secs(3), || {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err()
        }),
        "still accepting connections after SIGTERM"
    );

    let bytes = slow.join().unwrap().expect("in-flight request answered");
    let r = parse_response(&bytes).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"slept 2000");

    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("server exits after SIGTERM");
    assert_eq!(
        status.code(),
        Some(0),
        "exit status {status:?}\n{}",
        server.stderr()
    );
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(6), "shutdown took {took:?}");
    assert!(
        server.stderr().contains("shutting down"),
        "{}",
        server.stderr()
    );
}

#[test]
fn sigterm_on_an_idle_server_exits_promptly() {
    let mut server = Server::start(&http_root(), &[]);
    server.assert_alive();
    let started = Instant::now();
    server.sigterm();
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("server exits after SIGTERM");
    assert_eq!(status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
