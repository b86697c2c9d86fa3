//! FrankenPHP's session cases, over TCP against the real binary, in classic and worker
//! mode: a session lock taken by a user save handler is released when the request is cut
//! short inside the handler (FrankenPHP issue #2368 and `TestSessionLockReleaseOnAbortInUserSaveHandler`),
//! by a client that disconnects or by the time limit. Scripts: `test-data/frankenphp/dual/`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::Server;

fn dual() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/dual")
        .canonicalize()
        .expect("test-data/frankenphp/dual exists")
}

/// Classic: the page runs per request. Worker: the same page is a worker script.
fn start(mode: &str, script: &str, extra: &[&str]) -> Server {
    let spec = format!("{},2", dual().join(script).display());
    let mut args = vec!["--threads", "2"];
    if mode == "worker" {
        args.extend(["--worker", spec.as_str()]);
    }
    args.extend_from_slice(extra);
    Server::start(&dual(), &args)
}

/// A GET that must be answered within `limit` (a leaked lock makes it hang).
fn get_within(server: &Server, path: &str, limit: Duration) -> Result<String, String> {
    let mut s = common::connect(server.addr);
    s.set_read_timeout(Some(limit)).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    match common::read_response(&mut reader, false) {
        Ok(r) if r.status == 200 => Ok(r.text()),
        Ok(r) => Err(format!("status {}: {}", r.status, r.text())),
        Err(e) => Err(format!("no answer within {limit:?}: {e}")),
    }
}

#[test]
fn a_lock_taken_in_a_user_save_handler_is_released_when_the_client_disconnects() {
    for mode in ["classic", "worker"] {
        let dir = tempfile::tempdir().unwrap();
        let env = format!("SESSION_DIR={}", dir.path().display());
        let server = start(mode, "session-lock.php", &["-e", &env]);
        // The client reads the first line written while read() holds the lock, then goes.
        {
            let mut s = common::connect(server.addr);
            s.write_all(
                b"GET /session-lock.php?mode=disconnect&id=gone HTTP/1.1\r\nHost: localhost\r\n\r\n",
            )
            .unwrap();
            let mut reader = BufReader::new(s);
            let mut line = String::new();
            while !line.contains("locked") {
                line.clear();
                assert!(
                    reader.read_line(&mut line).unwrap() > 0,
                    "{mode}: closed early"
                );
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        let started = Instant::now();
        let r = get_within(&server, "/session-lock.php?id=gone", Duration::from_secs(5));
        let body = r.unwrap_or_else(|e| {
            panic!(
                "{mode}: the next request for the session: {e}\n{}",
                server.stderr()
            )
        });
        assert!(body.starts_with("n="), "{mode}: {body}");
        assert!(started.elapsed() < Duration::from_secs(3), "{mode}: {body}");
        server.assert_alive();
    }
}

#[test]
fn a_lock_taken_in_a_user_save_handler_is_released_when_the_time_limit_stops_it() {
    for mode in ["classic", "worker"] {
        let dir = tempfile::tempdir().unwrap();
        let env = format!("SESSION_DIR={}", dir.path().display());
        let server = start(mode, "session-lock.php", &["-e", &env]);
        let r = server.get("/session-lock.php?mode=timeout&id=slow");
        assert_eq!(r.status, 500, "{mode}: {}", r.text());
        let r = get_within(&server, "/session-lock.php?id=slow", Duration::from_secs(5));
        let body = r.unwrap_or_else(|e| {
            panic!(
                "{mode}: the next request for the session: {e}\n{}",
                server.stderr()
            )
        });
        assert!(body.starts_with("n="), "{mode}: {body}");
        server.assert_alive();
    }
}

// TestSessionNoLeakBetweenRequests_worker and TestSessionNoLeakAfterExit_worker (run in
// both modes): client A's session, written or left open by exit(1), never reaches B or C.
#[test]
fn a_session_never_reaches_another_client_even_after_exit() {
    for mode in ["classic", "worker"] {
        let server = start(mode, "session-leak.php", &[]);
        for action in ["set", "set_and_exit"] {
            let r = server.get(&format!("/session-leak.php?action={action}&value=secret_A"));
            assert!(
                r.text().contains("secret_A") || r.text().contains("BEFORE_EXIT"),
                "{mode} {action}: {}",
                r.text()
            );
            let b = server.get("/session-leak.php?action=check_empty").text();
            assert!(
                b.starts_with("CHECK empty=true id= "),
                "{mode} {action}: {b}"
            );
            let c = server.get("/session-leak.php?action=get").text();
            assert_eq!(c, "READ secret=NOT_FOUND", "{mode} {action}");
        }
    }
}

// TestSessionHandlerReset_worker (run in both modes): a handler set by one request does
// not break session_start() in the next.
#[test]
fn a_save_handler_set_by_one_request_does_not_break_the_next() {
    for mode in ["classic", "worker"] {
        let server = start(mode, "session-handler-reset.php", &[]);
        for _ in 0..2 {
            let v: serde_json::Value = serde_json::from_slice(
                &server
                    .get("/session-handler-reset.php?action=set_handler")
                    .body,
            )
            .unwrap();
            assert_eq!(v["started"], true, "{mode}: {v}");
            assert_eq!(v["save_handler"], "user", "{mode}: {v}");
            let v: serde_json::Value =
                serde_json::from_slice(&server.get("/session-handler-reset.php").body).unwrap();
            assert_eq!(v["started"], true, "{mode}: {v}");
            assert_eq!(v["errors"], serde_json::json!([]), "{mode}: {v}");
        }
    }
}
