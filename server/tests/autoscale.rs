//! Autoscaling (`--max-threads`, `--max-idle-time`, `--worker script,threads,max`)
//! against the real binary, in both modes: a load that needs more threads than the floor
//! (concurrent requests that sleep in PHP) makes the pool grow, so they run side by side,
//! and the admin view shows the extra threads until they idled `--max-idle-time`; a load
//! that does not (sequential fast requests) leaves the pool at its floor. The `/metrics`
//! thread gauges follow the same threads as the admin view, compared whenever the admin
//! view saw the pool unchanged around a scrape of them.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{client, wait_until, Server};

/// Each slow request sleeps this long in PHP.
const SLEEP_MS: u64 = 500;
/// Concurrent slow requests: the ceiling.
const CONCURRENT: usize = 4;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/autoscale/public")
        .canonicalize()
        .expect("test-data/autoscale/public exists")
}

fn worker_script() -> String {
    root().join("worker.php").display().to_string()
}

/// Threads of `pool` ("classic" or the worker script) in the admin view.
fn threads_of(server: &Server, pool: &str) -> usize {
    let admin = server.admin_addr().expect("admin listener");
    let body = client()
        .get(format!("http://{admin}/threads"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["pool"] == pool)
        .count()
}

/// `(busy, idle)` threads of `pool` from the `ferrophp_php_threads` gauge in `/metrics`.
fn metric_threads(server: &Server, pool: &str) -> (usize, usize) {
    let admin = server.admin_addr().expect("admin listener");
    let body = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let gauge = |state: &str| {
        let prefix = format!("ferrophp_php_threads{{pool=\"{pool}\",state=\"{state}\"}} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix}in:\n{body}"))
            .parse::<usize>()
            .unwrap()
    };
    (gauge("busy"), gauge("idle"))
}

fn start(extra: &[&str]) -> Server {
    let mut args = vec![
        "--threads",
        "1",
        "--max-idle-time",
        "1s",
        "--admin",
        "127.0.0.1:0",
        "--no-access-log",
    ];
    args.extend_from_slice(extra);
    Server::start(&root(), &args)
}

/// Sends CONCURRENT slow requests at once; returns how long the last took to answer, the
/// most threads `pool` had meanwhile, and the most the metrics showed busy at once.
fn slow_burst(server: &Server, path: &str, pool: &str, body: &str) -> (Duration, usize, usize) {
    let url = server.url(&format!("{path}?ms={SLEEP_MS}"));
    let began = Instant::now();
    let requests: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || client().get(url).send().unwrap().text().unwrap())
        })
        .collect();
    let mut most = 0;
    let mut most_busy_in_metrics = 0;
    let mut compared = 0;
    while requests.iter().any(|r| !r.is_finished()) {
        // The metrics are judged against a state of the pool the admin view saw both
        // before and after their scrape; while the pool grows (or shrinks) between the
        // two, the views are a moment apart and may differ, by any number of threads.
        let before = threads_of(server, pool);
        let (busy, idle) = metric_threads(server, pool);
        let after = threads_of(server, pool);
        if before == after {
            assert_eq!(
                busy + idle,
                before,
                "metrics count {busy} busy + {idle} idle threads, the admin view {before}"
            );
            compared += 1;
        }
        assert!(
            busy + idle <= CONCURRENT,
            "metrics past the ceiling: {busy} + {idle}"
        );
        most = most.max(before).max(after);
        most_busy_in_metrics = most_busy_in_metrics.max(busy);
        std::thread::sleep(Duration::from_millis(20));
    }
    // The pool rests while the requests sleep: the views met at least there.
    if compared == 0 {
        let before = threads_of(server, pool);
        let (busy, idle) = metric_threads(server, pool);
        if threads_of(server, pool) == before {
            assert_eq!(
                busy + idle,
                before,
                "metrics against the admin view at rest"
            );
            compared += 1;
        }
    }
    assert!(
        compared > 0,
        "the metrics and the admin view never saw the same pool"
    );

    let took = began.elapsed();
    for r in requests {
        assert_eq!(r.join().unwrap(), body);
    }
    (took, most, most_busy_in_metrics)
}

fn grows_under_load_and_shrinks_when_idle(server: &Server, path: &str, pool: &str, body: &str) {
    assert_eq!(threads_of(server, pool), 1);
    let (took, most, most_busy) = slow_burst(server, path, pool, body);
    assert!(
        most_busy > 1,
        "the busy gauge never showed the grown threads at work: {most_busy}"
    );
    // One thread would take CONCURRENT x SLEEP_MS; grown threads run them side by side.
    assert!(
        took < Duration::from_millis(2 * SLEEP_MS),
        "{CONCURRENT} requests of {SLEEP_MS} ms took {took:?} (max threads seen: {most})"
    );
    assert!(most > 1, "the pool never grew: {most}");
    assert!(most <= CONCURRENT, "past the ceiling: {most}");
    // Idle past --max-idle-time (1 s): back to the floor, never below.
    assert!(
        wait_until(Duration::from_secs(10), || threads_of(server, pool) == 1),
        "still {} threads",
        threads_of(server, pool)
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(threads_of(server, pool), 1);
    // The gauges forget retired threads too.
    assert_eq!(metric_threads(server, pool), (0, 1));
    // The retired threads' pool still serves, and grows again.
    let (took, most, _) = slow_burst(server, path, pool, body);
    assert!(
        took < Duration::from_millis(2 * SLEEP_MS),
        "second burst took {took:?}"
    );
    assert!(most > 1);
    server.assert_alive();
}

fn stays_at_the_floor_for_sequential_requests(server: &Server, path: &str, pool: &str, body: &str) {
    for i in 0..200 {
        let r = client().get(server.url(path)).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.text().unwrap(), body);
        if i % 20 == 0 {
            assert_eq!(threads_of(server, pool), 1, "after {i} requests");
        }
    }
    assert_eq!(threads_of(server, pool), 1);
}

#[test]
fn classic_pool_grows_under_load_and_shrinks_when_idle() {
    let server = start(&["--max-threads", "4"]);
    grows_under_load_and_shrinks_when_idle(&server, "/sleep.php", "classic", "classic ok\n");
}

#[test]
fn classic_pool_stays_at_its_floor_without_waits() {
    let server = start(&["--max-threads", "4"]);
    stays_at_the_floor_for_sequential_requests(&server, "/sleep.php", "classic", "classic ok\n");
}

#[test]
fn worker_pool_grows_under_load_and_shrinks_when_idle() {
    let spec = format!("{},1,4", worker_script());
    let server = start(&["--worker", &spec]);
    let pool = worker_script();
    grows_under_load_and_shrinks_when_idle(&server, "/worker.php", &pool, "worker ok\n");
    // The classic pool had no --max-threads: it never grew.
    assert_eq!(threads_of(&server, "classic"), 1);
}

#[test]
fn worker_pool_stays_at_its_floor_without_waits() {
    let spec = format!("{},1,4", worker_script());
    let server = start(&["--worker", &spec]);
    stays_at_the_floor_for_sequential_requests(
        &server,
        "/worker.php",
        &worker_script(),
        "worker ok\n",
    );
}

#[test]
fn without_max_threads_a_busy_pool_does_not_grow() {
    let server = start(&[]);
    let (took, most, _) = slow_burst(&server, "/sleep.php", "classic", "classic ok\n");
    assert_eq!(most, 1);
    assert!(
        took >= Duration::from_millis(CONCURRENT as u64 * SLEEP_MS),
        "{took:?}"
    );
}

#[test]
fn a_ceiling_below_the_floor_is_refused_at_start_up() {
    let classic = common::serve_until_exit(
        &root(),
        &["--threads", "4", "--max-threads", "2"],
        Duration::from_secs(20),
    );
    assert!(classic.status.is_some_and(|s| !s.success()), "{classic:?}");
    assert!(
        classic
            .stderr
            .contains("max_threads (2) must be at least threads (4)"),
        "{}",
        classic.stderr
    );
    let spec = format!("{},3,2", worker_script());
    let worker = common::serve_until_exit(&root(), &["--worker", &spec], Duration::from_secs(20));
    assert!(worker.status.is_some_and(|s| !s.success()), "{worker:?}");
    assert!(
        worker
            .stderr
            .contains("max_threads (2) must be at least threads (3)"),
        "{}",
        worker.stderr
    );
    let idle = common::serve_until_exit(
        &root(),
        &["--max-idle-time", "soon"],
        Duration::from_secs(20),
    );
    assert!(idle.status.is_some_and(|s| !s.success()), "{idle:?}");
}

#[test]
fn the_toml_file_sets_a_workers_ceiling_and_the_idle_time() {
    let dir = std::env::temp_dir().join(format!("ferrophp-autoscale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "max_idle_time = \"1s\"\n[[worker]]\nscript = {:?}\nthreads = 1\nmax_threads = 3\n",
            worker_script()
        ),
    )
    .unwrap();
    let server = Server::start(
        &root(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let pool = worker_script();
    let (took, most, _) = slow_burst(&server, "/worker.php", &pool, "worker ok\n");
    assert!((2..=3).contains(&most), "threads seen: {most}");
    // Three threads for four requests: two rounds at most.
    assert!(took < Duration::from_millis(3 * SLEEP_MS), "{took:?}");
    assert!(wait_until(Duration::from_secs(10), || threads_of(
        &server, &pool
    ) == 1));
    let _ = std::fs::remove_dir_all(&dir);
}
