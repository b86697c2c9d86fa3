//! A worker script's life over real HTTP: failing to start, `--max-requests` under
//! concurrency, graceful restarts under load (SIGUSR1 and the admin listener), restarts
//! on `--watch`ed file changes, and the memory guard (`--worker-memory-growth`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use common::{
    exchange, parse_response, serve_until_exit, wait_until, KeepAlive, RawResponse, Server,
};

fn worker_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/worker")
        .canonicalize()
        .expect("test-data/worker exists")
}

fn script(name: &str) -> String {
    worker_root().join(name).to_string_lossy().into_owned()
}

/// "BOOT:SERVED" bodies of maxreq.php and restart.php.
fn boot_and_served(r: &RawResponse) -> Option<(String, u64)> {
    let text = r.text();
    let (boot, served) = text.split_once(':')?;
    if boot.len() != 8 || !boot.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((boot.to_string(), served.parse().ok()?))
}

#[test]
fn a_worker_that_fails_before_its_loop_stops_the_server_with_a_clear_message() {
    let broken = script("broken.php");
    let spec = format!("{broken},2");
    let run = serve_until_exit(
        &worker_root(),
        &["--threads", "1", "--worker", &spec],
        Duration::from_secs(30),
    );
    let status = run
        .status
        .unwrap_or_else(|| panic!("still running after 30 s; stderr:\n{}", run.stderr));
    assert!(
        !status.success(),
        "exited with {status}; stderr:\n{}",
        run.stderr
    );
    // 5 attempts with 100, 200, 400, 800 ms of backoff in between.
    assert!(
        run.elapsed < Duration::from_secs(20),
        "took {:?} to give up",
        run.elapsed
    );
    assert!(
        run.elapsed >= Duration::from_millis(1000),
        "gave up after {:?}: no retries with backoff?",
        run.elapsed
    );
    assert!(
        !run.stdout.contains("ferrophp listening on"),
        "announced itself as listening: {}",
        run.stdout
    );
    // The final error names the script and says what happened.
    let last_error = run
        .stderr
        .lines()
        .rev()
        .find(|l| l.contains("ERROR"))
        .unwrap_or_else(|| panic!("no error line; stderr:\n{}", run.stderr));
    assert!(
        last_error.contains(&broken) && last_error.contains("ferrophp_handle_request"),
        "unclear final error {last_error:?}; stderr:\n{}",
        run.stderr
    );
    // The PHP error itself is logged too.
    assert!(
        run.stderr.contains("broken worker boot"),
        "the script's exception is not in the log:\n{}",
        run.stderr
    );
}

#[test]
fn a_missing_worker_script_is_refused_at_once() {
    let missing = worker_root().join("no-such-worker.php");
    let spec = format!("{},1", missing.display());
    let run = serve_until_exit(
        &worker_root(),
        &["--threads", "1", "--worker", &spec],
        Duration::from_secs(15),
    );
    let status = run.status.expect("exits");
    assert!(!status.success());
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
    assert!(
        run.stderr.contains("no-such-worker.php"),
        "stderr does not name the script:\n{}",
        run.stderr
    );
}

#[test]
fn max_requests_holds_under_200_concurrent_requests() {
    let spec = format!("{},2", script("maxreq.php"));
    let server = Server::start(
        &worker_root(),
        &["--threads", "1", "--worker", &spec, "--max-requests", "10"],
    );
    let n = 200;
    let start = Arc::new(Barrier::new(n));
    let addr = server.addr;
    let clients: Vec<_> = (0..n)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let request =
                    b"GET /maxreq.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
                exchange(addr, request, Duration::from_secs(30))
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| {
                        parse_response(&bytes).ok_or_else(|| {
                            format!("unparsable: {:?}", String::from_utf8_lossy(&bytes))
                        })
                    })
            })
        })
        .collect();
    let mut boots: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (i, c) in clients.into_iter().enumerate() {
        let r = c
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("request {i} failed: {e}; stderr:\n{}", server.stderr()));
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        let (boot, served) =
            boot_and_served(&r).unwrap_or_else(|| panic!("request {i}: body {:?}", r.text()));
        assert!(
            (1..=10).contains(&served),
            "boot {boot} served {served} requests (max 10)"
        );
        assert!(
            boots.entry(boot.clone()).or_default().insert(served),
            "boot {boot} numbered two requests {served}"
        );
    }
    let total: usize = boots.values().map(|s| s.len()).sum();
    assert_eq!(total, n);
    assert!(
        boots.len() >= n / 10,
        "{} boots for {n} requests",
        boots.len()
    );
    // Each boot served 1..=k without gaps: requests were not lost inside a boot.
    for (boot, served) in &boots {
        let max = *served.iter().max().unwrap();
        assert_eq!(
            served.len() as u64,
            max,
            "boot {boot} skipped numbers: {served:?}"
        );
    }
}

/// Shared state of the load loop.
#[derive(Default)]
struct Load {
    stop: AtomicBool,
    ok: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Boot ids in the order responses showed them first.
    boots: Mutex<Vec<String>>,
    /// Counts the test's checkpoints: a response belongs to the checkpoint that was
    /// current when its request was sent.
    checkpoint: AtomicU64,
    /// The boot id of each response, with the checkpoint its request was sent in.
    recent: Mutex<Vec<(u64, String)>>,
}

fn load_client(addr: std::net::SocketAddr, load: Arc<Load>) {
    let mut conn: Option<KeepAlive> = None;
    let mut i = 0u64;
    while !load.stop.load(Ordering::Relaxed) {
        i += 1;
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match KeepAlive::connect(addr) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    load.failures.lock().unwrap().push(format!("connect: {e}"));
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            },
        };
        // Some requests sleep in the handler, so restarts find requests in flight.
        let path = if i.is_multiple_of(3) {
            "/restart.php?ms=20"
        } else {
            "/restart.php"
        };
        let sent_in = load.checkpoint.load(Ordering::SeqCst);
        match c.get(path) {
            Ok(r) if r.status == 200 => match boot_and_served(&r) {
                Some((boot, _)) => {
                    load.ok.fetch_add(1, Ordering::Relaxed);
                    let mut boots = load.boots.lock().unwrap();
                    if !boots.contains(&boot) {
                        boots.push(boot.clone());
                    }
                    drop(boots);
                    load.recent.lock().unwrap().push((sent_in, boot));
                }
                None => load
                    .failures
                    .lock()
                    .unwrap()
                    .push(format!("bad body {:?}", r.text())),
            },
            Ok(r) => {
                load.failures
                    .lock()
                    .unwrap()
                    .push(format!("status {}: {}", r.status, r.text()))
            }
            Err(e) => {
                load.failures.lock().unwrap().push(format!("request: {e}"));
                conn = None;
            }
        }
    }
}

#[test]
fn graceful_restarts_under_load_drop_no_request_and_reboot_the_scripts() {
    let spec = format!("{},2", script("restart.php"));
    let server = Server::start(
        &worker_root(),
        &[
            "--threads",
            "1",
            "--worker",
            &spec,
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let admin = server
        .admin_addr()
        .unwrap_or_else(|| panic!("no admin line on stdout: {:?}", server.stdout_lines()));
    let load = Arc::new(Load::default());
    let started = Instant::now();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let load = load.clone();
            let addr = server.addr;
            std::thread::spawn(move || load_client(addr, load))
        })
        .collect();
    let stop_load = |load: &Load| load.stop.store(true, Ordering::Relaxed);
    assert!(
        wait_until(Duration::from_secs(5), || load.boots.lock().unwrap().len()
            >= 2),
        "the load did not reach both worker threads"
    );

    let triggers = ["SIGUSR1", "admin", "SIGUSR1", "admin"];
    for (round, how) in triggers.iter().enumerate() {
        let before: BTreeSet<String> = load.boots.lock().unwrap().iter().cloned().collect();
        let served_before = load.ok.load(Ordering::Relaxed);
        match *how {
            "SIGUSR1" => {
                let status = Command::new("kill")
                    .arg("-USR1")
                    .arg(server.pid().to_string())
                    .status()
                    .expect("kill runs");
                assert!(status.success());
            }
            _ => {
                let r = exchange(
                    admin,
                    b"POST /workers/restart HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    Duration::from_secs(5),
                )
                .map(|b| parse_response(&b));
                match r {
                    Ok(Some(r)) if r.status == 200 => {}
                    other => {
                        stop_load(&load);
                        panic!("admin restart failed: {other:?}");
                    }
                }
            }
        }
        // Both worker threads show new boot ids, and then only new ones are seen.
        let rebooted = wait_until(Duration::from_secs(10), || {
            let boots = load.boots.lock().unwrap();
            boots.iter().filter(|b| !before.contains(*b)).count() >= 2
        });
        if !rebooted {
            stop_load(&load);
            panic!(
                "round {round} ({how}): the scripts did not reboot; boots {:?}; stderr:\n{}",
                load.boots.lock().unwrap(),
                server.stderr()
            );
        }
        // Only requests sent from now on must see new boots: a response to a request sent
        // earlier may still be on its way to its client (or be recorded late by a client
        // thread the loaded machine did not schedule).
        let checkpoint = load.checkpoint.fetch_add(1, Ordering::SeqCst) + 1;
        load.recent.lock().unwrap().clear();
        std::thread::sleep(Duration::from_millis(300));
        let recent: Vec<String> = load
            .recent
            .lock()
            .unwrap()
            .iter()
            .filter(|(sent_in, _)| *sent_in == checkpoint)
            .map(|(_, boot)| boot.clone())
            .collect();
        assert!(
            !recent.is_empty(),
            "round {round}: no requests served after the restart"
        );
        let stale: Vec<_> = recent.iter().filter(|b| before.contains(*b)).collect();
        if !stale.is_empty() {
            stop_load(&load);
            panic!("round {round} ({how}): old boots still serving: {stale:?}");
        }
        assert!(load.ok.load(Ordering::Relaxed) > served_before);
    }
    // Restarts in quick succession, from both sources, while the load goes on for a few
    // seconds in all.
    for _ in 0..3 {
        let _ = Command::new("kill")
            .arg("-USR1")
            .arg(server.pid().to_string())
            .status();
        let _ = exchange(
            admin,
            b"POST /workers/restart HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            Duration::from_secs(5),
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ok_before_tail = load.ok.load(Ordering::Relaxed);
    // At least 1 s after the burst, at least 3 s of load in all.
    let tail_end = (started + Duration::from_secs(3)).max(Instant::now() + Duration::from_secs(1));
    while Instant::now() < tail_end {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop_load(&load);
    for c in clients {
        c.join().unwrap();
    }
    assert!(
        load.ok.load(Ordering::Relaxed) > ok_before_tail,
        "nothing served after the burst of restarts"
    );
    eprintln!(
        "{} requests served, {} boots seen, in {:?}",
        load.ok.load(Ordering::Relaxed),
        load.boots.lock().unwrap().len(),
        started.elapsed()
    );
    let failures = load.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed requests of {}: {:?}",
        failures.len(),
        load.ok.load(Ordering::Relaxed) + failures.len() as u64,
        &failures[..failures.len().min(10)]
    );
    let boots = load.boots.lock().unwrap().len();
    assert!(boots >= 2 + 2 * triggers.len(), "only {boots} boots seen");
    assert!(server.stderr().contains("SIGUSR1: restarting workers"));
    assert!(server.stderr().contains("admin: restarting workers"));
}

#[test]
fn the_admin_listener_reports_health_and_refuses_other_paths() {
    let spec = format!("{},1", script("restart.php"));
    let server = Server::start(
        &worker_root(),
        &[
            "--threads",
            "1",
            "--worker",
            &spec,
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let admin = server.admin_addr().expect("admin address on stdout");
    assert_ne!(admin, server.addr);
    for _ in 0..3 {
        assert_eq!(server.get("/restart.php").status, 200);
    }
    let health = |path: &str| {
        parse_response(
            &exchange(
                admin,
                format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
                Duration::from_secs(5),
            )
            .unwrap(),
        )
        .unwrap()
    };
    let r = health("/health");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["worker_requests"][0], 3, "{v}");
    assert_eq!(
        health("/workers/restart").status,
        404,
        "GET must not restart"
    );
    assert_eq!(health("/nope").status, 404);
    // The public listener has no admin paths.
    let r = server.raw(b"POST /workers/restart HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 404);
}

#[test]
fn a_watched_file_change_restarts_the_worker_with_the_new_code() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let worker = dir.join("app.php");
    std::fs::copy(worker_root().join("watched.php"), &worker).unwrap();
    let spec = format!("{},1", worker.display());
    let pattern = format!("{}/*.php", dir.display());
    let server = Server::start(
        &dir,
        &["--threads", "1", "--worker", &spec, "--watch", &pattern],
    );
    let body = || server.get("/app.php").text();
    let first = body();
    let boot = first
        .strip_prefix("version-1:")
        .unwrap_or_else(|| panic!("unexpected {first:?}"))
        .to_string();

    // A file the pattern does not match changes nothing.
    std::fs::write(dir.join("notes.txt"), "not php").unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(body(), first, "a non-matching file restarted the worker");

    // Rewrite the script: the new code answers within a few seconds.
    let code = std::fs::read_to_string(&worker).unwrap();
    std::fs::write(&worker, code.replace("version-1", "version-2")).unwrap();
    let started = Instant::now();
    let mut last = String::new();
    let changed = wait_until(Duration::from_secs(5), || {
        last = body();
        last.starts_with("version-2:")
    });
    assert!(
        changed,
        "still {last:?} {:?} after the change; stderr:\n{}",
        started.elapsed(),
        server.stderr()
    );
    assert!(!last.contains(&boot));
    assert!(server
        .stderr()
        .contains("files changed: restarting workers"));

    // A new matching file restarts it again.
    std::fs::write(dir.join("other.php"), "<?php\n").unwrap();
    let boot2 = last.clone();
    assert!(
        wait_until(Duration::from_secs(5), || {
            last = body();
            last != boot2
        }),
        "creating a matching file did not restart the worker"
    );
    assert!(last.starts_with("version-2:"), "{last:?}");

    // A save with a syntax error: the script cannot boot (and retries with backoff);
    // the next save fixes it and the worker serves again without a server restart.
    std::fs::write(&worker, "<?php\nthis is not php;\n").unwrap();
    assert!(
        server.wait_for_stderr("syntax error", Duration::from_secs(5)),
        "the broken script was not rebooted; stderr:\n{}",
        server.stderr()
    );
    std::thread::sleep(Duration::from_millis(800));
    std::fs::write(&worker, code.replace("version-1", "version-3")).unwrap();
    let fixed = wait_until(Duration::from_secs(8), || {
        let r = server.get("/app.php");
        last = r.text();
        r.status == 200 && last.starts_with("version-3:")
    });
    assert!(
        fixed,
        "still {last:?} after fixing the script; stderr:\n{}",
        server.stderr()
    );
}

/// Sends `count` requests to growing.php (each keeps `kib` KiB alive in the worker) and
/// returns the "BOOT:SERVED" pairs in order.
fn growing_requests(server: &Server, count: usize, kib: u64) -> Vec<(String, u64)> {
    (0..count)
        .map(|i| {
            let r = server.get(&format!("/growing.php?kib={kib}"));
            assert_eq!(r.status, 200, "request {i}: {}", r.text());
            boot_and_served(&r).unwrap_or_else(|| panic!("request {i}: body {:?}", r.text()))
        })
        .collect()
}

fn memory_restarts(admin: std::net::SocketAddr) -> u64 {
    let r = parse_response(
        &exchange(
            admin,
            b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            Duration::from_secs(5),
        )
        .expect("scrape"),
    )
    .expect("metrics response");
    let text = r.text();
    text.lines()
        .find(|l| l.starts_with("ferrophp_worker_memory_restarts_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no memory restart counter in:\n{text}"))
}

#[test]
fn the_memory_guard_restarts_a_leaking_worker_and_spares_a_steady_one() {
    let spec = format!("{},1", script("growing.php"));
    let server = Server::start(
        &worker_root(),
        &[
            "--threads",
            "1",
            "--worker",
            &spec,
            "--worker-memory-growth",
            "1M",
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let admin = server.admin_addr().expect("admin address");

    // 256 KiB kept per request against a 1 MiB allowance: the script is rebooted every
    // few requests, after the request that crossed the line, never during one.
    let seen = growing_requests(&server, 16, 256);
    let boots: BTreeSet<&str> = seen.iter().map(|(b, _)| b.as_str()).collect();
    assert!(boots.len() >= 3, "expected several reboots, saw {seen:?}");
    for window in seen.windows(2) {
        let ((b0, n0), (b1, n1)) = (&window[0], &window[1]);
        if b0 == b1 {
            assert_eq!(*n1, n0 + 1, "{seen:?}");
        } else {
            assert_eq!(*n1, 1, "a reboot starts counting again: {seen:?}");
        }
    }
    let most = seen.iter().map(|(_, n)| *n).max().unwrap();
    assert!(
        (3..=6).contains(&most),
        "1 MiB / 256 KiB: a boot serves 4 or 5 requests, saw {most}: {seen:?}"
    );
    // The guard looks after each request, so every boot that served `most` requests was
    // ended by it, the last one included (after the response went out).
    let ended_by_guard = boots
        .iter()
        .filter(|b| seen.iter().any(|(s, n)| s == *b && *n == most))
        .count() as u64;
    assert!(ended_by_guard >= boots.len() as u64 - 1, "{seen:?}");
    assert!(
        wait_until(Duration::from_secs(5), || memory_restarts(admin)
            == ended_by_guard),
        "counted {} memory restarts for {seen:?}",
        memory_restarts(admin)
    );
    let counted = ended_by_guard;
    assert!(server.wait_for_stderr("--worker-memory-growth", Duration::from_secs(5)));

    // Requests that keep nothing never trip it: the same boot serves them all.
    let steady = growing_requests(&server, 40, 0);
    assert!(
        steady.iter().all(|(b, _)| *b == steady[0].0),
        "a steady worker was restarted: {steady:?}"
    );
    assert_eq!(memory_restarts(admin), counted);
}

#[test]
fn without_the_memory_guard_a_leaking_worker_keeps_its_memory() {
    let spec = format!("{},1", script("growing.php"));
    let server = Server::start(&worker_root(), &["--threads", "1", "--worker", &spec]);
    let seen = growing_requests(&server, 12, 256);
    let served: Vec<u64> = seen.iter().map(|(_, n)| *n).collect();
    assert_eq!(served, (1..=12).collect::<Vec<u64>>(), "{seen:?}");
}

#[test]
fn an_invalid_memory_growth_is_refused_at_start_up() {
    let spec = format!("{},1", script("growing.php"));
    for bad in ["lots", "0", "-5%", "12Q", "0%"] {
        let flag = format!("--worker-memory-growth={bad}");
        let run = serve_until_exit(
            &worker_root(),
            &["--worker", &spec, &flag],
            Duration::from_secs(20),
        );
        let status = run.status.expect("exits");
        assert!(!status.success(), "{bad}: {}", run.stderr);
        assert!(
            run.stderr.contains("invalid memory growth"),
            "{bad}: {}",
            run.stderr
        );
    }
}
