//! Isolation and faults over real TCP against the real binary, in classic mode and in
//! worker mode (`test-data/faults/router.php` serves every path and runs the page it
//! names, so each page checks one behaviour in both modes).
//!
//! Isolation: process-wide state a page can change (locale, working directory, umask)
//! stays with the request (or worker thread) that changed it, concurrently and on the
//! next request; per-request state (timezone, ini, headers, status, cookies, output
//! buffers, uploads, the session) does not reach the next request.
//! Faults: a request that dies (fatal error, exit, uncaught exception, memory_limit,
//! max_execution_time, deep recursion, a client gone mid-upload or mid-download) gets
//! its own 5xx or partial response while a concurrent request succeeds; upload temp files
//! are removed however the script died; a worker that crashes on every request backs off
//! and is counted; SIGTERM lets queued and running requests finish.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{connect, exchange, parse_response, wait_until, RawResponse, Server};
use serde_json::Value;

fn faults_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/faults")
        .canonicalize()
        .expect("test-data/faults exists")
}

const MODES: [&str; 2] = ["classic", "worker"];

/// A server on `test-data/faults` with `threads` PHP threads: classic, or the router
/// worker serving every path with `threads` worker threads. Also returns the config
/// directory, which must outlive the server.
fn start(
    mode: &str,
    threads: usize,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let threads_arg = threads.to_string();
    let mut args: Vec<String> = vec!["--threads".into(), threads_arg.clone()];
    if mode == "worker" {
        let config = dir.path().join("ferrophp.toml");
        std::fs::write(
            &config,
            format!(
                "[[worker]]\nscript = \"{}\"\nthreads = {threads}\nmatch = \"/*\"\n",
                faults_root().join("router.php").display()
            ),
        )
        .unwrap();
        args.extend(["--config".into(), config.display().to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (Server::start_with_env(&faults_root(), &args, envs), dir)
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", r.status, r.text()))
}

fn get(addr: SocketAddr, path: &str) -> RawResponse {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let bytes = exchange(addr, request.as_bytes(), Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    parse_response(&bytes).unwrap_or_else(|| {
        panic!(
            "GET {path}: unparsable {:?}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// Runs `slow` (a request that holds its PHP thread for a while), and `during` on another
/// thread once `slow` has started; returns both responses.
fn during(server: &Server, slow: &str, during: &str) -> (RawResponse, RawResponse) {
    let addr = server.addr;
    let slow = slow.to_owned();
    let holder = std::thread::spawn(move || get(addr, &slow));
    std::thread::sleep(Duration::from_millis(400));
    let second = get(addr, during);
    (holder.join().unwrap(), second)
}

/// A sample of the admin listener's `/metrics`: the first line `name{labels} value` whose
/// name and labels part contains every one of `parts`.
fn metric(admin: SocketAddr, name: &str, parts: &[&str]) -> Option<f64> {
    let r = get(admin, "/metrics");
    assert_eq!(r.status, 200);
    r.text().lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        let bare = key.split('{').next()?;
        if bare != name || !parts.iter().all(|p| key.contains(p)) {
            return None;
        }
        value.parse().ok()
    })
}

// ---------------------------------------------------------------------------------------
// Isolation

/// A de_DE.UTF-8 locale compiled into a directory of its own, found through LOCPATH (the
/// machine need not have it installed).
fn german_locale() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("localedef")
        .args(["-i", "de_DE", "-f", "UTF-8"])
        .arg(dir.path().join("de_DE.UTF-8"))
        .output()
        .expect("localedef runs (glibc's locales package)");
    assert!(
        dir.path().join("de_DE.UTF-8").exists(),
        "localedef failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn setlocale_stays_with_its_request() {
    let locales = german_locale();
    let locpath = locales.path().display().to_string();
    for mode in MODES {
        let (server, _config) = start(mode, 2, &[], &[("LOCPATH", &locpath)]);
        let (changed, other) = during(
            &server,
            "/locale.php?set=de_DE.UTF-8&ms=1500",
            "/locale.php",
        );
        let changed = json(&changed);
        let other = json(&other);
        // The changing request sees its locale...
        assert_eq!(changed["set"], "de_DE.UTF-8", "{mode}: {changed}");
        assert_eq!(changed["decimal"], ",", "{mode}: {changed}");
        assert_eq!(changed["printf"], "1,50", "{mode}: {changed}");
        // ...while the request running meanwhile on the other thread keeps PHP's.
        assert_eq!(other["numeric"], "C", "{mode}: {other}");
        assert_eq!(other["decimal"], ".", "{mode}: {other}");
        assert_eq!(other["printf"], "1.50", "{mode}: {other}");
        // PHP 8.2's strtoupper() is ASCII-only, whatever the locale.
        assert_eq!(changed["upper"], "\u{e4}B", "{mode}: {changed}");
        assert_eq!(other["upper"], "\u{e4}B", "{mode}: {other}");
        if mode == "classic" {
            // The next requests on either thread start from PHP's locale again.
            for _ in 0..4 {
                let after = json(&get(server.addr, "/locale.php"));
                assert_eq!(after["all"], "LC_CTYPE=C.UTF-8;LC_NUMERIC=C;LC_TIME=C;LC_COLLATE=C;LC_MONETARY=C;LC_MESSAGES=C;LC_PAPER=C;LC_NAME=C;LC_ADDRESS=C;LC_TELEPHONE=C;LC_MEASUREMENT=C;LC_IDENTIFICATION=C", "{after}");
                assert_eq!(after["printf"], "1.50", "{after}");
            }
        }
        // The composite name setlocale(LC_ALL, '0') gives is accepted back.
        assert_eq!(other["roundtrip"], true, "{mode}: {other}");
        assert_eq!(changed["roundtrip"], true, "{mode}: {changed}");
    }
}

#[test]
fn chdir_stays_with_its_request() {
    let root = faults_root().display().to_string();
    for mode in MODES {
        let (server, _config) = start(mode, 2, &[], &[]);
        let (changed, other) = during(&server, "/cwd.php?chdir=/&ms=1500", "/cwd.php");
        let changed = json(&changed);
        let other = json(&other);
        assert_eq!(changed["changed"], true, "{mode}: {changed}");
        assert_eq!(changed["cwd"], "/", "{mode}: {changed}");
        assert_eq!(other["data"], "data next to cwd.php", "{mode}: {other}");
        assert_eq!(
            other["include"], "included from next to cwd.php",
            "{mode}: {other}"
        );
        if mode == "classic" {
            assert_eq!(other["cwd"], root.as_str(), "{other}");
            // Each request starts in its script's directory again.
            for _ in 0..4 {
                let after = json(&get(server.addr, "/cwd.php"));
                assert_eq!(after["cwd"], root.as_str(), "{after}");
                assert_eq!(after["data"], "data next to cwd.php", "{after}");
            }
        }
    }
}

/// The `Umask:` line of /proc/PID/status, as an octal string without leading zeros.
fn process_umask(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let octal = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .expect("Umask line")
        .trim();
    let value = u32::from_str_radix(octal, 8).unwrap();
    format!("{value:o}")
}

#[test]
fn umask_stays_with_its_request() {
    let files = tempfile::tempdir().unwrap();
    let file = |name: &str| files.path().join(name).display().to_string();
    for mode in MODES {
        let (server, _config) = start(mode, 2, &[], &[]);
        let umask = process_umask(server.pid());
        let expected_mode = format!("{:o}", 0o666 & !u32::from_str_radix(&umask, 8).unwrap());
        assert_ne!(
            expected_mode, "666",
            "the test needs a server umask that masks something"
        );
        let (changed, other) = during(
            &server,
            &format!(
                "/umask.php?set=0&ms=1500&file={}",
                file(&format!("{mode}-zero"))
            ),
            &format!("/umask.php?file={}", file(&format!("{mode}-other"))),
        );
        let changed = json(&changed);
        let other = json(&other);
        assert_eq!(changed["mode"], "666", "{mode}: {changed}");
        // A file created meanwhile by another request is not world-writable.
        assert_eq!(other["mode"], expected_mode.as_str(), "{mode}: {other}");
        assert_eq!(other["umask"], umask.as_str(), "{mode}: {other}");
        assert_eq!(
            process_umask(server.pid()),
            umask,
            "{mode}: the process umask changed"
        );
        if mode == "classic" {
            for i in 0..4 {
                let after = json(&get(
                    server.addr,
                    &format!("/umask.php?file={}", file(&format!("after-{i}"))),
                ));
                assert_eq!(after["mode"], expected_mode.as_str(), "{after}");
            }
        }
    }
}

/// A multipart body with one file field, and its content type.
fn multipart(file_bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "ferrophpfaultsboundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(file_bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

fn post_upload(addr: SocketAddr, path: &str, file_bytes: &[u8]) -> RawResponse {
    let (content_type, body) = multipart(file_bytes);
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let bytes = exchange(addr, &request, Duration::from_secs(30)).unwrap();
    parse_response(&bytes)
        .unwrap_or_else(|| panic!("POST {path}: {:?}", String::from_utf8_lossy(&bytes)))
}

fn seen(r: &RawResponse) -> Value {
    json(r)
}

#[test]
fn per_request_state_does_not_reach_the_next_request() {
    let sessions = tempfile::tempdir().unwrap();
    let save_path = format!("session.save_path={}", sessions.path().display());
    for mode in MODES {
        // One thread: the dirty request and the next one run on the same PHP thread.
        let (server, _config) = start(mode, 1, &["-d", &save_path], &[]);
        let clean = seen(&get(server.addr, "/state.php"));
        let dirty = post_upload(server.addr, "/state.php?dirty=1", b"uploaded bytes");
        assert_eq!(dirty.status, 299, "{mode}: {dirty:?}");
        assert_eq!(dirty.header("x-dirty"), Some("1"), "{mode}");
        assert!(
            dirty
                .headers_all("set-cookie")
                .iter()
                .any(|c| c.starts_with("dirty=1")),
            "{mode}: {dirty:?}"
        );
        assert!(
            dirty.text().ends_with("buffered"),
            "{mode}: {}",
            dirty.text()
        );
        let dirty_seen = seen(&RawResponse {
            body: dirty
                .text()
                .trim_end_matches("buffered")
                .as_bytes()
                .to_vec(),
            ..dirty.clone()
        });
        assert_eq!(
            dirty_seen["files"]["upload"]["name"], "a.bin",
            "{mode}: {dirty_seen}"
        );

        let next_response = get(server.addr, "/state.php");
        assert_eq!(next_response.status, 200, "{mode}: {next_response:?}");
        assert_eq!(next_response.header("x-dirty"), None, "{mode}");
        assert!(
            next_response.headers_all("set-cookie").is_empty(),
            "{mode}: {next_response:?}"
        );
        let next = seen(&next_response);
        for key in [
            "ob_level",
            "status",
            "headers",
            "cookie",
            "files",
            "session_status",
            "session",
        ] {
            assert_eq!(
                next[key], clean[key],
                "{mode}: {key} leaked: {next} vs {clean}"
            );
        }
        match mode {
            // A classic request starts from the configuration every time.
            "classic" => {
                for key in ["timezone", "date.timezone", "precision"] {
                    assert_eq!(next[key], clean[key], "{key} leaked: {next} vs {clean}");
                }
            }
            // A worker keeps ini and timezone changes as app state, as FrankenPHP does
            // (docs/architecture.md).
            _ => {
                assert_eq!(next["timezone"], "Pacific/Auckland", "{next}");
                assert_eq!(next["precision"], "5", "{next}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Faults

/// How a page fails, and the status its request gets.
const FAULTS: [(&str, u16); 8] = [
    ("fatal", 500),
    ("exit", 200),
    ("throw", 500),
    ("memory", 500),
    ("timeout", 500),
    ("recurse", 500),
    ("recurse_internal", 500),
    ("recurse_tostring", 500),
];

#[test]
fn a_failing_request_gets_its_error_and_a_concurrent_one_succeeds() {
    for mode in MODES {
        let (server, _config) = start(mode, 2, &[], &[]);
        for (fault, status) in FAULTS {
            let (good, bad) = during(
                &server,
                "/faults.php?ms=1500",
                &format!("/faults.php?do={fault}"),
            );
            assert_eq!(bad.status, status, "{mode} {fault}: {:?}", bad.text());
            if fault == "exit" {
                assert_eq!(bad.text(), "before exit", "{mode}");
            }
            assert_eq!(
                (good.status, good.text().as_str()),
                (200, "ok"),
                "{mode} {fault}"
            );
            // Both threads serve again (the worker one rebooted if the fault ended it).
            for _ in 0..4 {
                let r = get(server.addr, "/hello.php");
                assert_eq!(
                    (r.status, r.text().as_str()),
                    (200, "Hello, World!"),
                    "{mode} {fault}"
                );
            }
        }
    }
}

#[test]
fn deep_recursion_gives_its_stack_back() {
    for mode in MODES {
        let (server, _config) = start(mode, 1, &[], &[]);
        server.assert_alive();
        let before = server.rss_kib();
        // ~358 MiB of stack before memory_limit (128M) stops it.
        let r = get(server.addr, "/faults.php?do=recurse_tostring");
        assert_eq!(r.status, 500, "{mode}: {:?}", r.text());
        server.assert_alive();
        // What stays is the PHP heap PHP keeps cached (up to memory_limit), not the stack.
        let released = wait_until(Duration::from_secs(5), || {
            server.rss_kib() < before + 200 * 1024
        });
        assert!(
            released,
            "{mode}: RSS grew from {before} KiB to {} KiB",
            server.rss_kib()
        );
    }
}

fn assert_empty_soon(dir: &Path, context: &str) {
    let empty = wait_until(Duration::from_secs(5), || {
        std::fs::read_dir(dir).unwrap().next().is_none()
    });
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(empty, "{context}: upload temp files left behind: {left:?}");
}

#[test]
fn upload_temp_files_are_removed_however_the_script_dies() {
    let uploads = tempfile::tempdir().unwrap();
    let tmp_ini = format!("upload_tmp_dir={}", uploads.path().display());
    for mode in MODES {
        let (server, _config) = start(mode, 2, &["-d", &tmp_ini], &[]);
        for (fault, status) in FAULTS.iter().filter(|(f, _)| !f.starts_with("recurse")) {
            let r = post_upload(
                server.addr,
                &format!("/faults.php?do={fault}"),
                &[b'u'; 100_000],
            );
            assert_eq!(r.status, *status, "{mode} {fault}: {:?}", r.text());
            assert_empty_soon(uploads.path(), &format!("{mode} {fault}"));
        }
        // A client that goes away in the middle of its upload.
        let (content_type, body) = multipart(&vec![b'u'; 4 << 20]);
        let mut stream = connect(server.addr);
        stream
            .write_all(
                format!(
                    "POST /faults.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            )
            .unwrap();
        stream.write_all(&body[..1 << 20]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(stream);
        assert_empty_soon(uploads.path(), &format!("{mode} disconnect"));
        for _ in 0..4 {
            server.assert_alive();
        }
    }
}

#[test]
fn a_client_gone_mid_download_frees_its_thread() {
    for mode in MODES {
        let (server, _config) = start(mode, 1, &["--admin", "127.0.0.1:0"], &[]);
        let admin = server.admin_addr().expect("admin address");
        let mut stream = connect(server.addr);
        stream
            .write_all(b"GET /download.php?mb=500 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut buf = vec![0u8; 256 << 10];
        stream.read_exact(&mut buf).unwrap();
        // Classic threads count as busy while they run a request; worker threads count
        // as busy workers while they run a handler.
        let router = format!("worker=\"{}\"", faults_root().join("router.php").display());
        let busy = || match mode {
            "classic" => metric(admin, "frankenphp_busy_threads", &[]),
            _ => metric(admin, "frankenphp_busy_workers", &[&router]),
        };
        assert_eq!(busy(), Some(1.0), "{mode}: the download is not running");
        drop(stream);
        assert!(
            wait_until(Duration::from_secs(10), || busy() == Some(0.0)),
            "{mode}: the thread stayed busy after the client left: {:?}",
            busy()
        );
        server.assert_alive();
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 of `rest`.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn a_worker_crashing_on_every_request_backs_off_and_is_counted() {
    let flags = tempfile::tempdir().unwrap();
    let flag = flags.path().join("crash-at-boot");
    let script = faults_root().join("crash-worker.php");
    let spec = format!("{},1", script.display());
    let env = format!("CRASH_AT_BOOT={}", flag.display());
    let server = Server::start(
        &faults_root(),
        &[
            "--threads",
            "1",
            "--worker",
            &spec,
            "-e",
            &env,
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let admin = server.admin_addr().expect("admin address");
    let worker_label = format!("worker=\"{}\"", script.display());
    let crashes = || metric(admin, "frankenphp_worker_crashes", &[&worker_label]).unwrap_or(-1.0);
    // Every request ends the script; each one still gets its response, and the classic
    // pool serves meanwhile.
    for i in 0..5 {
        let r = get(server.addr, "/crash-worker.php");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "crashing"),
            "request {i}"
        );
        server.assert_alive();
    }
    assert!(
        wait_until(Duration::from_secs(5), || crashes() == 5.0),
        "crashes counted: {}",
        crashes()
    );
    // Now the boots fail too: the slot backs off instead of spinning.
    std::fs::write(&flag, b"").unwrap();
    let r = get(server.addr, "/crash-worker.php");
    assert_eq!(r.status, 200, "{:?}", r.text());
    std::thread::sleep(Duration::from_millis(500));
    let crashes_before = crashes();
    let ticks_before = cpu_ticks(server.pid());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let ticks = cpu_ticks(server.pid()) - ticks_before;
    let elapsed = started.elapsed();
    let crashes_during = crashes() - crashes_before;
    eprintln!("failing boots: {crashes_during} crashes and {ticks} CPU ticks in {elapsed:?}");
    // Backoff doubles from 100 ms: a handful of boots in 5 s, not thousands.
    assert!(
        crashes_during <= 8.0,
        "{crashes_during} crashes in 5 s: no backoff"
    );
    // 100 ticks a second: under 10% of one core.
    assert!(ticks < 50, "{ticks} CPU ticks in 5 s while backing off");
    // Classic requests are served meanwhile; a worker request waits for a boot...
    server.assert_alive();
    let addr = server.addr;
    let waiting = std::thread::spawn(move || get(addr, "/crash-worker.php"));
    std::thread::sleep(Duration::from_millis(300));
    // ...which succeeds once the cause is gone.
    std::fs::remove_file(&flag).unwrap();
    let r = waiting.join().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "crashing"));
}

#[test]
fn sigterm_lets_running_and_queued_requests_finish() {
    for mode in MODES {
        let (mut server, _config) = start(mode, 2, &["--grace-ms", "10000"], &[]);
        let addr = server.addr;
        // Two requests run, six wait for a thread.
        let clients: Vec<_> = (0..8)
            .map(|_| std::thread::spawn(move || get(addr, "/faults.php?ms=1000")))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let signalled = Instant::now();
        server.sigterm();
        for (i, c) in clients.into_iter().enumerate() {
            let r = c.join().unwrap();
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "ok"),
                "{mode}: request {i}"
            );
        }
        let status = server
            .wait_exit(Duration::from_secs(15))
            .unwrap_or_else(|| panic!("{mode}: still running after SIGTERM"));
        assert_eq!(status.code(), Some(0), "{mode}: {}", server.stderr());
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "{mode}: {:?}",
            signalled.elapsed()
        );
    }
}
