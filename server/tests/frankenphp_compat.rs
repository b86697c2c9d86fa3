//! Behaviours FrankenPHP's own tests check that ferrophp got wrong when tried (issue 13),
//! each against the real binary over TCP with the scripts in `test-data/frankenphp/`:
//! a session save handler registered before the worker loop, `putenv()` sandboxed per
//! thread (reset per classic request, kept within a worker), `$_ENV` persistence in a
//! worker, `FRANKENPHP_WORKER` only in the worker script's own `$_SERVER`,
//! `apache_response_headers()`, `REMOTE_HOST`/`HTTPS`, header lines without a colon, and
//! `exit()` inside a handler.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{KeepAlive, RawResponse, Server};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp")
        .canonicalize()
        .expect("test-data/frankenphp exists")
}

fn worker(script: &str, threads: usize, extra: &[&str]) -> Server {
    let spec = format!("{},{threads}", root().join(script).display());
    let mut args = vec!["--threads", "2", "--worker", spec.as_str()];
    args.extend_from_slice(extra);
    Server::start(&root(), &args)
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", r.status, r.text()))
}

#[test]
fn session_handler_registered_before_the_loop_serves_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let env = format!("SESSION_DIR={}", dir.path().display());
    let server = worker("session-worker.php", 1, &["-e", &env]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    let first = conn.get("/session-worker.php").unwrap();
    let v = json(&first);
    assert_eq!(v["started"], true, "{v}");
    assert_eq!(v["module"], "user", "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    // The same session, sent back by cookie, on the following requests: the handler
    // registered at boot reads and writes it every time.
    for n in 2..=5 {
        let req = format!(
            "GET /session-worker.php HTTP/1.1\r\nHost: localhost\r\nCookie: PHPSESSID={id}\r\n\r\n"
        );
        let r = conn.send(req.as_bytes()).unwrap();
        let v = json(&r);
        assert_eq!(v["started"], true, "request {n}: {v}\n{}", server.stderr());
        assert_eq!(v["n"], n, "request {n}: {v}");
        assert_eq!(
            v["calls"],
            serde_json::json!(["open", "read", "write", "close"]),
            "{v}"
        );
    }
    assert!(
        dir.path().join(&id).is_file(),
        "the handler wrote the session file"
    );
    assert!(
        !server
            .stderr()
            .contains("Failed to initialize storage module"),
        "{}",
        server.stderr()
    );
}

#[test]
fn putenv_is_per_request_in_classic_mode_and_never_crosses_threads() {
    let server = Server::start(&root(), &["--threads", "4"]);
    let slow = {
        let url = server.url("/putenv.php?set=mine&ms=400");
        std::thread::spawn(move || common::client().get(url).send().unwrap().text().unwrap())
    };
    std::thread::sleep(Duration::from_millis(100));
    // While the slow request holds SANDBOXED=mine, other threads do not see it.
    for _ in 0..5 {
        let v = json(&server.get("/putenv.php"));
        assert_eq!(v["sandboxed"], false, "leaked across threads: {v}");
        assert_eq!(v["in_array"], Value::Null, "{v}");
    }
    let v: Value = serde_json::from_str(&slow.join().unwrap()).unwrap();
    assert_eq!(v["sandboxed"], "mine", "{v}");
    assert_eq!(v["in_array"], "mine", "getenv() lists it: {v}");
    assert_eq!(v["local_only"], "mine", "{v}");
    // Unsetting hides a process variable for this request only.
    let v = json(&server.get("/putenv.php?unset=PATH"));
    assert_eq!(
        (v["path"].clone(), v["path_in_array"].clone()),
        (false.into(), false.into()),
        "{v}"
    );
    for _ in 0..4 {
        let v = json(&server.get("/putenv.php"));
        assert_eq!(v["path"], true, "{v}");
        assert_eq!(v["sandboxed"], false, "a request's putenv outlived it: {v}");
    }
}

#[test]
fn concurrent_big_putenv_neither_crashes_nor_leaks() {
    let server = Server::start(&root(), &["--threads", "2"]);
    for round in 0..5 {
        let handles: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|v| {
                let url = server.url(&format!("/bigenv.php?v={v}"));
                std::thread::spawn(move || {
                    let text = common::client().get(url).send().unwrap().text().unwrap();
                    (v, text)
                })
            })
            .collect();
        for h in handles {
            let (v, text) = h.join().unwrap();
            assert_eq!(text, format!("{} {v}", 3 << 20), "round {round}");
        }
    }
    server.assert_alive();
}

#[test]
fn putenv_and_env_changes_persist_within_a_worker() {
    let server = worker("env-worker.php", 1, &[]);
    let v = json(&server.get("/env-worker.php?put=WORKER_VAR%3Dkept"));
    assert_eq!(v["requests"], 1, "{v}");
    assert_eq!(v["boot_worker"], "1", "{v}");
    assert_eq!(v["request_worker"], Value::Null, "{v}");
    for n in 2..=4 {
        let v = json(&server.get("/env-worker.php?name=WORKER_VAR"));
        assert_eq!(v["requests"], n, "{v}");
        assert_eq!(v["get"], "kept", "putenv() within the worker persists: {v}");
        assert_eq!(
            v["env_requests"], n,
            "$_ENV set by the worker persists: {v}"
        );
        assert_eq!(v["boot_env"], "from-boot", "{v}");
    }
    // A classic request on another thread never sees the worker's putenv().
    let v = json(&server.get("/putenv.php"));
    assert_eq!(v["sandboxed"], false, "{v}");
    let r = server.get("/hello.php");
    assert_eq!(r.status, 200);
}

#[test]
fn response_headers_remote_host_https_and_colonless_headers() {
    for mode in ["classic", "worker"] {
        let server = if mode == "classic" {
            Server::start(&root(), &[])
        } else {
            // The script is not a worker loop; a worker elsewhere makes sure a worker pool
            // exists while this page is still served the classic way.
            worker("env-worker.php", 1, &[])
        };
        let r = server.get("/headers.php");
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        let v = json(&r);
        let headers = &v["response_headers"];
        assert_eq!(headers["X-One"], "1", "{mode}: {v}");
        assert_eq!(headers["X-Two"], "2", "{mode}: {v}");
        assert!(headers.get("Invalid").is_none(), "{mode}: {v}");
        assert_eq!(r.header("x-one"), Some("1"));
        assert_eq!(v["remote_host"], "127.0.0.1", "{mode}: {v}");
        assert_eq!(v["remote_host"], v["remote_addr"], "{mode}: {v}");
        assert_eq!(v["https"], "", "{mode}: {v}");
    }
}

#[test]
fn exit_inside_a_handler_keeps_status_and_output() {
    let server = worker("exit-worker.php", 1, &[]);
    let r = server.get("/exit-worker.php?do=dd");
    assert_eq!((r.status, r.text().as_str()), (500, "dumped"));
    let r = server.get("/exit-worker.php?do=destructor");
    assert_eq!(
        (r.status, r.text().as_str()),
        (418, "before-exit[destructed]")
    );
    // Shutdown functions run while the script ends, before PHP flushes the buffers: their
    // output is this request's too. Something was printed, so exit(2) keeps its 200.
    let r = server.get("/exit-worker.php?do=shutdown");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, "before-exit[shutdown]"),
        "{}",
        server.stderr()
    );
    // A clean exit() with nothing printed: 200 and an empty body, as PHP gives.
    let r = server.get("/exit-worker.php?do=clean-exit");
    assert_eq!((r.status, r.text().as_str()), (200, ""));
    // The worker rebooted and serves again; nothing of the requests above went to the log.
    let r = server.get("/exit-worker.php");
    assert_eq!((r.status, r.text().as_str()), (200, "ok"));
    assert!(
        !server.stderr().contains("worker output"),
        "{}",
        server.stderr()
    );
}
