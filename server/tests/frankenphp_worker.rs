//! FrankenPHP's `worker_test.go` cases (and the worker ones of `frankenphp_test.go` that
//! need a worker script of their own), over TCP against the real binary, with the scripts
//! in `test-data/frankenphp/dual/`. Also the process environment in `$_SERVER`
//! (`TestWorkerHasOSEnvironmentVariableInSERVER`, Caddy's `TestOsEnv`) and `--clear-env`.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use common::{encode, KeepAlive, RawResponse, Server};
use serde_json::Value;

fn dual() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/dual")
        .canonicalize()
        .expect("test-data/frankenphp/dual exists")
}

fn worker(script: &str, threads: usize, extra: &[&str], envs: &[(&str, &str)]) -> Server {
    let spec = format!("{},{threads}", dual().join(script).display());
    let mut args = vec!["--threads", "2", "--worker", spec.as_str()];
    args.extend_from_slice(extra);
    Server::start_with_env(&dual(), &args, envs)
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", r.status, r.text()))
}

const OS_ENV: (&str, &str) = ("CUSTOM_OS_ENV_VARIABLE", "custom_env_variable_value");

// TestWorkerHasOSEnvironmentVariableInSERVER, and Caddy's TestOsEnv ($_ENV with
// variables_order=EGPCS). FrankenPHP starts every request's $_SERVER from the process
// environment, in both modes: so do we unless --clear-env (php-fpm's clear_env) is given.
#[test]
fn the_process_environment_is_in_server_in_both_modes() {
    let server = worker(
        "os-env.php",
        1,
        &["-e", "CONFIGURED=yes", "-d", "variables_order=EGPCS"],
        &[OS_ENV, ("CONFIGURED", "from-process")],
    );
    for path in ["/os-env.php", "/os-env.php?again"] {
        let v = json(&server.get(path));
        assert_eq!(v["server"], OS_ENV.1, "worker: {v}");
        assert_eq!(v["env"], OS_ENV.1, "worker $_ENV: {v}");
        assert_eq!(v["path"], true, "worker: {v}");
        assert_eq!(v["configured"], "yes", "-e wins over the process: {v}");
        assert_eq!(v["script_name"], "/os-env.php", "CGI variables win: {v}");
    }
    // A classic page on the same server.
    let classic = Server::start_with_env(&dual(), &[], &[OS_ENV]);
    let v = json(&classic.get("/os-env.php"));
    assert_eq!(v["server"], OS_ENV.1, "classic: {v}");
    assert_eq!(v["getenv"], OS_ENV.1, "classic: {v}");
}

#[test]
fn clear_env_keeps_the_process_environment_out_of_server() {
    let server = worker(
        "os-env.php",
        1,
        &["--clear-env", "-e", "CONFIGURED=yes"],
        &[OS_ENV],
    );
    let v = json(&server.get("/os-env.php"));
    assert_eq!(v["server"], Value::Null, "{v}");
    assert_eq!(v["path"], false, "{v}");
    assert_eq!(v["configured"], "yes", "{v}");
    // getenv() still reads the process environment, as with php-fpm's clear_env.
    assert_eq!(v["getenv"], OS_ENV.1, "{v}");

    // The same from a config file.
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("ferrophp.toml");
    std::fs::write(&toml, "clear_env = true\n[env]\nCONFIGURED = \"file\"\n").unwrap();
    let classic = Server::start_with_env(&dual(), &["--config", toml.to_str().unwrap()], &[OS_ENV]);
    let v = json(&classic.get("/os-env.php"));
    assert_eq!(v["server"], Value::Null, "{v}");
    assert_eq!(v["configured"], "file", "{v}");
}

// TestWorker: the worker counts its requests; each sees its own GET and POST.
#[test]
fn a_worker_counts_requests_and_sees_each_ones_input() {
    let server = worker("counter-worker.php", 1, &[], &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for n in 0..4 {
        let body = format!("baz{n}=bat{n}");
        let req = format!(
            "POST /counter-worker.php?foo{n}=bar{n} HTTP/1.1\r\nHost: localhost\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let v = json(&conn.send(req.as_bytes()).unwrap());
        assert_eq!(v["handled"], n, "{v}");
        assert_eq!(
            v["get"],
            serde_json::json!({format!("foo{n}"): format!("bar{n}")}),
            "{v}"
        );
        assert_eq!(
            v["post"],
            serde_json::json!({format!("baz{n}"): format!("bat{n}")}),
            "{v}"
        );
    }
}

// TestKeepRunningOnConnectionAbort: a client that leaves before its answer does not stop
// the worker: the next request sees the count go on.
#[test]
fn a_client_leaving_early_does_not_stop_the_worker() {
    let server = worker("counter-worker.php", 1, &[], &[]);
    {
        let mut s = common::connect(server.addr);
        s.write_all(b"GET /counter-worker.php HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    // Whether the abandoned request ran depends on whether a thread took it before the
    // client left (upstream's recorder always runs it); either way the script goes on.
    let first = json(&server.get("/counter-worker.php"))["handled"]
        .as_i64()
        .unwrap();
    assert!(first <= 1, "{first}");
    let v = json(&server.get("/counter-worker.php"));
    assert_eq!(v["handled"], first + 1, "{v}\n{}", server.stderr());
    assert!(
        !server.stderr().contains("booting it again"),
        "{}",
        server.stderr()
    );
}

// TestWorkerDie: die() after each request; every request is still answered.
#[test]
fn a_worker_that_dies_after_each_request_is_booted_again() {
    let server = worker("die-worker.php", 1, &[], &[]);
    for _ in 0..6 {
        let r = server.get("/die-worker.php");
        assert_eq!((r.status, r.text().as_str()), (200, "Hello, world"));
    }
}

// TestNonWorkerModeAlwaysWorks: classic pages next to a worker.
#[test]
fn classic_pages_work_next_to_a_worker() {
    let server = worker("phpinfo.php", 1, &[], &[]);
    assert_eq!(server.get("/index.php?i=7").text(), "Hello from request 7");
    assert!(server.get("/phpinfo.php?i=3").text().contains("i=3"));
}

// TestCannotCallHandleRequestInNonWorkerMode: an error thrown, the script stops.
// Upstream throws RuntimeException "frankenphp_handle_request() called while not in
// worker mode"; see docs/frankenphp-compat.md for ours.
#[test]
fn handle_request_outside_a_worker_is_an_error() {
    let server = Server::start(&dual(), &["-d", "display_errors=1"]);
    let r = server.get("/not-a-worker.php");
    let text = r.text();
    assert!(text.contains("Fatal error"), "{text}");
    assert!(text.contains("Uncaught RuntimeException"), "{text}");
    assert!(
        text.contains("frankenphp_handle_request() called while not in worker mode"),
        "{text}"
    );
    assert!(!text.contains("after"), "{text}");
}

// TestWorkerGetOpt: getopt() between requests breaks nothing; each request's $_SERVER
// has its headers and URI and not the worker's FRANKENPHP_WORKER.
#[test]
fn getopt_in_a_worker_loop() {
    let server = worker("server-variable.php", 1, &[], &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for i in 0..4 {
        let req = format!(
            "GET /server-variable.php?i={i}&getopt=1 HTTP/1.1\r\nHost: localhost\r\nRequest: {i}\r\n\r\n"
        );
        let v = json(&conn.send(req.as_bytes()).unwrap());
        assert_eq!(v["HTTP_REQUEST"], i.to_string(), "{v}");
        assert_eq!(
            v["REQUEST_URI"],
            format!("/server-variable.php?i={i}&getopt=1")
        );
        assert!(v.get("FRANKENPHP_WORKER").is_none(), "{v}");
    }
    assert!(
        !server.stderr().contains("booting it again"),
        "{}",
        server.stderr()
    );
}

// TestWorkerCrashIsLoggedAboveDebugLevel: exit(1) after boot is logged at WARN with the
// exit status, and the script boots again.
#[test]
fn a_worker_crash_is_logged_as_a_warning_with_its_status() {
    let server = worker("crash-worker.php", 1, &[], &[]);
    assert_eq!(server.get("/crash-worker.php").text(), "ok 1");
    assert_eq!(server.get("/crash-worker.php").status, 500);
    assert_eq!(server.get("/crash-worker.php").text(), "ok 1");
    let crash_logged = |log: &str| {
        log.lines().any(|l| {
            l.contains("WARN") && l.contains("crash-worker.php") && l.contains("exit_status=1")
        })
    };
    common::wait_until(Duration::from_secs(5), || crash_logged(&server.stderr()));
    let log = server.stderr();
    assert!(crash_logged(&log), "{log}");
}

// TestFileStreamInWorkerMode: handles opened at boot (a file, php://input) keep working.
#[test]
fn streams_opened_at_boot_serve_every_request() {
    let server = worker("file-stream.php", 1, &[], &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for word in ["word1", "word2", "word3"] {
        assert_eq!(conn.get("/file-stream.php").unwrap().text(), word);
    }
}

// TestWorkerEnv: a worker's own env. FrankenPHP gives it to the worker script's boot
// $_SERVER only; ferrophp also puts it in each request's $_SERVER (worker_http.rs,
// worker_env_is_visible_to_requests). Here: the boot sees it.
#[test]
fn a_workers_env_reaches_its_boot() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("ferrophp.toml");
    std::fs::write(
        &toml,
        format!(
            "[[worker]]\nscript = \"{}\"\nthreads = 1\nenv = {{ FOO = \"bar\" }}\n",
            dual().join("worker-env.php").display()
        ),
    )
    .unwrap();
    let server = Server::start(&dual(), &["--config", toml.to_str().unwrap()]);
    for i in 0..3 {
        let v = json(&server.get(&format!("/worker-env.php?i={i}")));
        assert_eq!(v["boot"], "bar", "{v}");
        assert_eq!(v["request"], "bar", "{v}");
        assert_eq!(v["i"], i.to_string(), "{v}");
    }
}

// Caddy's TestMaxWaitTimeWorker (TestMaxWaitTime is http_limits.rs
// all_threads_busy_gives_503_after_max_wait): requests that wait longer than max_wait for
// the worker's only thread get a 503.
#[test]
fn requests_waiting_too_long_for_a_worker_thread_get_503() {
    let server = worker("sleep.php", 1, &["--max-wait-ms", "100"], &[]);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| server.get("/sleep.php?ms=400").status))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(statuses.contains(&503), "{statuses:?}");
    assert_eq!(server.get("/sleep.php").text(), "slept");
}

// Not in FrankenPHP: requests queue in the worker pool behind a busy thread (about three
// per thread are let in). One still queued at its max_wait deadline is taken back (503) and
// never runs later; one a thread takes before its deadline is served.
#[test]
fn a_queued_worker_request_that_gave_up_never_runs_and_one_taken_in_time_is_served() {
    let server = worker("sleep.php", 1, &["--max-wait-ms", "600"], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let marked = |name: &str, ms: u64| {
        let marker = tmp.path().join(name);
        let path = format!(
            "/sleep.php?ms={ms}&marker={}",
            encode(marker.to_str().unwrap())
        );
        (marker, path)
    };
    std::thread::scope(|s| {
        let holder = s.spawn(|| server.get("/sleep.php?ms=1500").status);
        std::thread::sleep(Duration::from_millis(300));
        let (marker, path) = marked("gave-up", 0);
        let started = std::time::Instant::now();
        assert_eq!(server.get(&path).status, 503);
        assert!(
            started.elapsed() < Duration::from_millis(1100),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(holder.join().unwrap(), 200);
        assert_eq!(server.get("/sleep.php").status, 200);
        std::thread::sleep(Duration::from_millis(200));
        assert!(!marker.exists(), "a request answered 503 ran anyway");

        let holder = s.spawn(|| server.get("/sleep.php?ms=300").status);
        std::thread::sleep(Duration::from_millis(100));
        let (marker, path) = marked("served", 0);
        let r = server.get(&path);
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), "slept");
        assert!(marker.exists());
        assert_eq!(holder.join().unwrap(), 200);
    });
}

// Not in FrankenPHP: the worker pool lets only about as many threads compute at once as
// there are CPUs and queues the rest for them; threads blocked in usleep must not count.
// Eight requests sleeping 600 ms on eight worker threads run side by side (the classic
// twin is in http_limits.rs).
#[test]
fn worker_requests_blocked_in_php_run_side_by_side_whatever_the_cpu_count() {
    let server = worker("sleep.php", 8, &[], &[]);
    let took = common::side_by_side(8, || server.get("/sleep.php?ms=600"));
    assert!(
        took < Duration::from_millis(1100),
        "8 sleeps of 600 ms on 8 worker threads took {took:?}"
    );
}

// Caddy's TestOpcacheReset, scaled to this machine: opcache_reset() from classic pages
// while worker and classic threads compile and run scripts; every request answers. A real
// reset crashed the server at the next worker request (OPcache frees the compiled code the
// worker runs); ferrophp refuses it with a warning (worker/src/opcache_guard.rs).
#[test]
fn opcache_reset_under_concurrency() {
    let server = worker("sleep.php", 4, &[], &[]);
    let n = 160;
    std::thread::scope(|s| {
        for t in 0..8 {
            let server = &server;
            s.spawn(move || {
                let mut conn = KeepAlive::connect(server.addr).unwrap();
                for i in (t..n).step_by(8) {
                    if i % 10 > 7 {
                        let r = conn.get("/opcache-reset.php").unwrap();
                        assert_eq!(r.text(), "enabled opcache reset refused");
                    } else if i % 2 == 0 {
                        let r = conn.get(&format!("/sleep.php?ms={}", i % 20)).unwrap();
                        assert_eq!(r.text(), "slept");
                    } else {
                        let r = conn.get(&format!("/index.php?i={i}")).unwrap();
                        assert_eq!(r.text(), format!("Hello from request {i}"));
                    }
                }
            });
        }
    });
    server.assert_alive();
    assert!(server
        .stderr()
        .contains("opcache_reset(): refused by ferrophp"));
}
