//! Background work over real HTTP (issue 38, docs/jobs.md): requests dispatch jobs with
//! `Ferrophp\Jobs::dispatch()`, a background worker (`--background-worker`) takes and
//! acknowledges them and records each handling in a file (test-data/jobs/consumer.php);
//! delays, retries into the dead-letter list, a fatal error inside a job, a background
//! script that exits at once (backoff, no busy loop), payloads that cannot be stored,
//! a prompt stop on SIGTERM, a `[[schedule]]` entry, and durability: dispatch under load
//! with the server SIGKILLed at random moments 20 times, then every job whose dispatch
//! returned is done at least once.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{wait_until, Server};

fn jobs_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/jobs")
        .canonicalize()
        .expect("test-data/jobs exists")
}

fn script(name: &str) -> String {
    jobs_root().join(name).to_string_lossy().into_owned()
}

/// One handling the consumer recorded: "op id attempts n handled_at dispatched_at pid".
#[derive(Debug, Clone)]
struct Handled {
    op: String,
    id: String,
    attempts: u32,
    n: u64,
    handled_at: f64,
    dispatched_at: f64,
    pid: u32,
}

fn handled(out: &Path) -> Vec<Handled> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() != 7 {
                return None;
            }
            Some(Handled {
                op: f[0].into(),
                id: f[1].into(),
                attempts: f[2].parse().ok()?,
                n: f[3].parse().ok()?,
                handled_at: f[4].parse().ok()?,
                dispatched_at: f[5].parse().ok()?,
                pid: f[6].parse().ok()?,
            })
        })
        .collect()
}

/// A server with the consumer as a background worker, its data dir and output file in
/// `dir`.
fn start(dir: &Path, extra: &[&str]) -> Server {
    let data = dir.join("data");
    let out = dir.join("out.log");
    let consumer = format!("{},2", script("consumer.php"));
    let mut args = vec![
        "--data-dir",
        data.to_str().unwrap(),
        "--background-worker",
        &consumer,
        "--admin",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    Server::start_with_env(&jobs_root(), &args, &[("JOBS_OUT", out.to_str().unwrap())])
}

fn scrape(admin: SocketAddr) -> String {
    common::client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default()
}

/// The value of the sample `line_start` (its name and labels) in a scrape.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
}

fn dispatch(server: &Server, query: &str) -> String {
    let r = server.get(&format!("/dispatch.php?{query}"));
    assert_eq!(r.status, 200, "dispatch {query}: {}", r.text());
    r.text()
}

#[test]
fn requests_dispatch_and_a_background_worker_takes_and_acknowledges() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let mut ids = BTreeMap::new();
    for n in 1..=50u64 {
        let body = dispatch(&server, &format!("n={n}"));
        let id = body.split(' ').next().unwrap().to_string();
        assert_eq!(id.len(), 16, "a job id is 16 hex digits: {body}");
        ids.insert(id, n);
    }
    let out = dir.path().join("out.log");
    assert!(
        wait_until(Duration::from_secs(20), || handled(&out).len() >= 50),
        "handled {} of 50; stderr:\n{}",
        handled(&out).len(),
        server.stderr()
    );
    let done = handled(&out);
    for h in &done {
        assert_eq!(h.op, "record");
        assert_eq!(
            ids.get(&h.id),
            Some(&h.n),
            "job {} came back with n={}",
            h.id,
            h.n
        );
        assert_eq!(h.attempts, 1);
    }
    let seen: BTreeSet<u64> = done.iter().map(|h| h.n).collect();
    assert_eq!(seen.len(), 50, "each job handled once: {done:?}");
    // Both background threads and the queue show on /metrics.
    let admin = server.admin_addr().unwrap();
    assert!(wait_until(Duration::from_secs(5), || {
        sample(&scrape(admin), "ferrophp_jobs_total{event=\"acked\"}") == Some(50.0)
    }));
    let text = scrape(admin);
    let threads = format!(
        "ferrophp_background_threads{{background=\"{}\"}}",
        script("consumer.php")
    );
    assert_eq!(sample(&text, &threads), Some(2.0), "{text}");
    assert_eq!(
        sample(&text, "ferrophp_jobs_total{event=\"dispatched\"}"),
        Some(50.0)
    );
    assert_eq!(
        sample(&text, "ferrophp_jobs{queue=\"work\",state=\"ready\"}"),
        Some(0.0)
    );
    // A background run has no time limit (as the CLI), whatever the server's.
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| *l == "max_execution_time 0")
            .count(),
        2,
        "{text}"
    );
    // The admin view lists the background threads.
    let threads = common::client()
        .get(format!("http://{admin}/threads"))
        .send()
        .and_then(|r| r.text())
        .unwrap();
    assert!(
        threads.contains("php-bg-0") && threads.contains("php-bg-1"),
        "{threads}"
    );
}

#[test]
fn a_delayed_job_waits_for_its_delay() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    dispatch(&server, "n=1&delay=1.5");
    dispatch(&server, "n=2");
    let out = dir.path().join("out.log");
    assert!(
        wait_until(Duration::from_secs(15), || handled(&out).len() >= 2),
        "stderr:\n{}",
        server.stderr()
    );
    let done = handled(&out);
    let delayed = done.iter().find(|h| h.n == 1).unwrap();
    let prompt = done.iter().find(|h| h.n == 2).unwrap();
    let waited = delayed.handled_at - delayed.dispatched_at;
    assert!(waited >= 1.5, "a 1.5 s delay ran after {waited:.3} s");
    assert!(waited < 5.0, "a 1.5 s delay ran after {waited:.3} s");
    assert!(
        prompt.handled_at - prompt.dispatched_at < 1.0,
        "the undelayed job waited {:.3} s",
        prompt.handled_at - prompt.dispatched_at
    );
    assert!(prompt.handled_at < delayed.handled_at);
}

#[test]
fn a_failing_job_is_retried_then_dead_lettered_and_a_fatal_job_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let failing = dispatch(&server, "op=fail&n=7&max=3");
    let failing = failing.split(' ').next().unwrap().to_string();
    let fatal = dispatch(&server, "op=fatal&n=8&max=2");
    let fatal = fatal.split(' ').next().unwrap().to_string();
    let admin = server.admin_addr().unwrap();
    let dead = || {
        sample(
            &scrape(admin),
            "ferrophp_jobs{queue=\"work\",state=\"dead\"}",
        )
    };
    assert!(
        wait_until(Duration::from_secs(30), || dead() == Some(2.0)),
        "dead: {:?}; handled: {:?}; stderr:\n{}",
        dead(),
        handled(&dir.path().join("out.log")),
        server.stderr()
    );
    let done = handled(&dir.path().join("out.log"));
    let attempts = |id: &str| -> Vec<u32> {
        done.iter()
            .filter(|h| h.id == id)
            .map(|h| h.attempts)
            .collect()
    };
    assert_eq!(attempts(&failing), vec![1, 2, 3], "{done:?}");
    assert_eq!(attempts(&fatal), vec![1, 2], "{done:?}");
    // Retries waited their backoff (1 s, then 2 s, less up to 20% jitter).
    let at: Vec<f64> = done
        .iter()
        .filter(|h| h.id == failing)
        .map(|h| h.handled_at)
        .collect();
    assert!(
        at[1] - at[0] >= 0.75,
        "first retry after {:.3} s",
        at[1] - at[0]
    );
    assert!(
        at[2] - at[1] >= 1.5,
        "second retry after {:.3} s",
        at[2] - at[1]
    );
    // The fatal error ended the script; it runs again and keeps consuming.
    dispatch(&server, "n=9");
    assert!(wait_until(Duration::from_secs(10), || handled(
        &dir.path().join("out.log")
    )
    .iter()
    .any(|h| h.n == 9)));
    let stderr = server.stderr();
    assert!(
        stderr.contains("undefined_function_in_a_job"),
        "the fatal error is logged: {stderr}"
    );
    assert!(stderr.contains("released without ack"), "{stderr}");
    server.assert_alive();
}

#[test]
fn a_background_script_that_exits_at_once_backs_off() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.log");
    let data = dir.path().join("data");
    let exits = script("exits.php");
    let server = Server::start_with_env(
        &jobs_root(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--background-worker",
            &exits,
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    std::thread::sleep(Duration::from_secs(4));
    let runs = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .count();
    // 100, 200, 400, 800, 1600 ms between runs: 5 or 6 runs in 4 s, never thousands.
    assert!(
        (3..=8).contains(&runs),
        "{runs} runs in 4 s; stderr:\n{}",
        server.stderr()
    );
    assert!(server.stderr().contains("running it again after a backoff"));
    server.assert_alive();
}

#[test]
fn payloads_that_cannot_be_stored_get_a_clear_exception() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&jobs_root(), &["--data-dir", data.to_str().unwrap()]);
    let get = |kind: &str| server.get(&format!("/payloads.php?kind={kind}")).text();
    let r = get("resource");
    assert!(
        r.starts_with("Ferrophp\\JobsException: ") && r.contains("is a resource"),
        "{r}"
    );
    let r = get("nested");
    assert!(r.contains("[a][b][2] is a resource"), "{r}");
    let r = get("closure");
    assert!(r.contains("[cb] is a closure"), "{r}");
    let r = get("big");
    assert!(
        r.starts_with("Ferrophp\\JobsException: ") && r.contains("exceeds the limit"),
        "{r}"
    );
    let r = get("queue");
    assert!(
        r.starts_with("Ferrophp\\JobsException: ") && r.contains("queue"),
        "{r}"
    );
    let r = get("priority");
    assert!(r.contains("priority"), "{r}");
    let r = get("ok");
    assert!(r.starts_with("OK "), "{r}");
    server.assert_alive();
}

#[test]
fn sigterm_stops_a_background_worker_blocked_in_take_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), &[]);
    let out = dir.path().join("out.log");
    assert!(wait_until(
        Duration::from_secs(10),
        || std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("start"))
            .count()
            == 2
    ));
    // The consumer waits up to 30 s in take(): the stop wakes it.
    let started = Instant::now();
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(15)).expect("exits");
    assert!(status.success(), "{status}; stderr:\n{}", server.stderr());
    let stopped = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter(|l| *l == "stopped")
        .count();
    assert_eq!(stopped, 2, "each thread's script saw shouldStop()");
    // Most of it is the HTTP side's one-second linger.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn schedule_entries_run_a_script_and_a_command_every_second() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sched.log");
    let config = dir.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n\
             [[schedule]]\nname = \"tick\"\nevery = \"1s\"\nscript = {:?}\n\
             [[schedule]]\ncron = \"* * * * *\"\ntimezone = \"Europe/Paris\"\n\
             command = \"{} command\"\n\
             [[schedule]]\nname = \"cmd\"\nevery = \"1s\"\ncommand = \"{} command\"\n",
            dir.path().join("data"),
            script("scheduled.php"),
            script("scheduled.php"),
            script("scheduled.php"),
        ),
    )
    .unwrap();
    let server = Server::start_with_env(
        &jobs_root(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--admin",
            "127.0.0.1:0",
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    let runs = |how: &str| {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (h, at) = l.strip_prefix("scheduled ")?.split_once(' ')?;
                (h == how).then(|| at.parse::<f64>().ok()).flatten()
            })
            .collect::<Vec<f64>>()
    };
    assert!(
        wait_until(Duration::from_secs(10), || runs("script").len() >= 3
            && runs("command").len() >= 2),
        "script runs {:?}, command runs {:?}; stderr:\n{}",
        runs("script"),
        runs("command"),
        server.stderr()
    );
    for how in ["script", "command"] {
        let r = runs(how);
        for pair in r.windows(2) {
            let gap = pair[1] - pair[0];
            // The every-minute cron entry adds at most one run in between.
            assert!(gap < 1.6, "{how} runs {gap:.3} s apart: {r:?}");
        }
    }
    let s = runs("script");
    for pair in s.windows(2) {
        assert!(pair[1] - pair[0] > 0.5, "script runs too close: {s:?}");
    }
    assert!(server.stderr().contains("schedule: run succeeded"));
    let text = scrape(server.admin_addr().unwrap());
    let succeeded = sample(
        &text,
        "ferrophp_schedule_runs_total{entry=\"tick\",outcome=\"succeeded\"}",
    );
    assert!(succeeded.is_some_and(|n| n >= 2.0), "{text}");
    server.assert_alive();
}

#[test]
fn a_bad_background_or_schedule_setting_is_a_clear_error() {
    for (args, needle) in [
        (
            vec!["--background-worker", "/nonexistent/bg.php"],
            "background worker script",
        ),
        (vec!["--jobs-backend", "mysql://x"], "jobs backend"),
        (vec!["--jobs-durability", "sometimes"], "durability"),
    ] {
        let run = common::serve_until_exit(&jobs_root(), &args, Duration::from_secs(20));
        assert!(
            run.status.is_some_and(|s| !s.success()),
            "{args:?}: {:?}",
            run.status
        );
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
}

/// Dispatch under load from four clients while the server is SIGKILLed at random moments,
/// 20 times over one data directory; then every job whose dispatch returned must be done
/// at least once (at-least-once: some twice, when a kill fell between the record and the
/// ack).
#[test]
fn no_dispatched_job_is_lost_across_twenty_sigkills() {
    const KILLS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    // n -> the pid of the server whose dispatch returned it.
    let dispatched: Arc<Mutex<BTreeMap<u64, u32>>> = Arc::default();
    let next = Arc::new(AtomicU64::new(1));
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for _ in 0..KILLS {
        let server = start(dir.path(), &[]);
        let addr = server.addr;
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let (stop, next, dispatched) = (stop.clone(), next.clone(), dispatched.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let request = format!(
                            "GET /dispatch.php?op=work&n={n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                        );
                        let Ok(bytes) =
                            common::exchange(addr, request.as_bytes(), Duration::from_secs(5))
                        else {
                            continue;
                        };
                        let Some(r) = common::parse_response(&bytes) else {
                            continue;
                        };
                        let text = r.text();
                        let f: Vec<&str> = text.split(' ').collect();
                        if r.status == 200 && f.len() == 3 && f[0].len() == 16 {
                            if let Ok(pid) = f[2].parse() {
                                dispatched.lock().unwrap().insert(n, pid);
                            }
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + rand(600)));
        drop(server); // SIGKILL
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            let _ = c.join();
        }
    }
    let server = start(dir.path(), &[]);
    let want: BTreeMap<u64, u32> = dispatched.lock().unwrap().clone();
    let done_set = || -> BTreeSet<u64> {
        handled(&out)
            .iter()
            .filter(|h| h.op == "work")
            .map(|h| h.n)
            .collect()
    };
    let finished = wait_until(Duration::from_secs(120), || {
        let done = done_set();
        want.keys().all(|n| done.contains(n))
    });
    let records: Vec<Handled> = handled(&out)
        .into_iter()
        .filter(|h| h.op == "work")
        .collect();
    let done = done_set();
    let lost: Vec<&u64> = want.keys().filter(|n| !done.contains(n)).collect();
    let twice = records.len() - done.len();
    // Done by a later process than the one whose dispatch returned: jobs that were
    // waiting (or leased) when a SIGKILL came.
    let mut first_done: BTreeMap<u64, u32> = BTreeMap::new();
    for h in &records {
        first_done.entry(h.n).or_insert(h.pid);
    }
    let survived = want
        .iter()
        .filter(|(n, pid)| first_done.get(n).is_some_and(|p| p != *pid))
        .count();
    let acked = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("acked "))
        .count();
    println!("| kills | dispatched (returned) | acknowledged (ack returned) | done (distinct) | done after a kill | done twice | lost |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {KILLS} | {} | {acked} | {} | {survived} | {twice} | {} |",
        want.len(),
        want.keys().filter(|n| done.contains(n)).count(),
        lost.len()
    );
    assert!(
        finished && lost.is_empty(),
        "lost {} of {}: {:?}; stderr:\n{}",
        lost.len(),
        want.len(),
        &lost[..lost.len().min(20)],
        server.stderr()
    );
    assert!(want.len() > 200, "only {} dispatches returned", want.len());
    assert!(
        survived > 0,
        "no job was waiting at any of the {KILLS} kills: the test proved nothing"
    );
}

/// A redis-server (Debian's package) on a free loopback port, no persistence; killed by
/// its pid when dropped.
struct Redis {
    child: std::process::Child,
    _dir: tempfile::TempDir,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let port = common::pebble::free_port();
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--port")
            .arg(port.to_string())
            .arg("--dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server) starts");
        let redis = Redis {
            child,
            _dir: dir,
            port,
        };
        assert!(wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }));
        redis
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two instances on one Redis (`--jobs-backend`): one only serves requests that dispatch,
/// the other runs the consumer; every job crosses over.
#[test]
fn two_instances_share_one_queue_on_redis() {
    let redis = Redis::start();
    let url = format!("redis://127.0.0.1:{}/", redis.port);
    let dir = tempfile::tempdir().unwrap();
    let web = Server::start(&jobs_root(), &["--jobs-backend", &url]);
    let consumer = start(dir.path(), &["--jobs-backend", &url]);
    for n in 1..=20u64 {
        dispatch(&web, &format!("n={n}"));
    }
    let out = dir.path().join("out.log");
    assert!(
        wait_until(Duration::from_secs(20), || handled(&out).len() >= 20),
        "handled {:?}; stderr:\n{}",
        handled(&out),
        consumer.stderr()
    );
    let seen: BTreeSet<u64> = handled(&out).iter().map(|h| h.n).collect();
    assert_eq!(seen, (1..=20).collect());
    assert!(
        !dir.path().join("data/jobs").exists(),
        "the Redis backend keeps nothing in the data directory"
    );
}

/// The admin endpoint's restart (as a reload or a deploy) tells background scripts to
/// stop; each returns and runs again at once, without a backoff.
#[test]
fn a_restart_stops_background_scripts_and_runs_them_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let out = dir.path().join("out.log");
    let count = |what: &str| {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(what))
            .count()
    };
    assert!(wait_until(Duration::from_secs(10), || count("start") == 2));
    let admin = server.admin_addr().unwrap();
    let started = Instant::now();
    let r = common::client()
        .post(format!("http://{admin}/workers/restart"))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{r:?}");
    assert!(
        wait_until(Duration::from_secs(5), || count("stopped") == 2
            && count("start") == 4),
        "starts {} stops {}; stderr:\n{}",
        count("start"),
        count("stopped"),
        server.stderr()
    );
    // Woken in take() (30 s), not after it.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The new runs consume.
    dispatch(&server, "n=5");
    assert!(wait_until(Duration::from_secs(10), || handled(&out)
        .iter()
        .any(|h| h.n == 5)));
    assert!(
        !server.stderr().contains("after a backoff"),
        "{}",
        server.stderr()
    );
}

/// A Symfony Messenger app (Debian's php-symfony-messenger): web requests dispatch
/// messages through Messenger's bus onto a transport over `Ferrophp\Jobs`
/// (test-data/jobs/messenger/bootstrap.php), and Messenger's own `Worker` (what
/// `messenger:consume` runs) handles them as a background worker, and stops on SIGTERM.
#[test]
fn symfony_messenger_consumes_as_a_background_worker() {
    if !Path::new("/usr/share/php/Symfony/Component/Messenger/Worker.php").exists() {
        panic!("needs Debian's php-symfony-messenger (scripts/install-test-deps.sh)");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    let data = dir.path().join("data");
    let consume = format!("{},2", script("messenger/consume.php"));
    let mut server = Server::start_with_env(
        &jobs_root(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--background-worker",
            &consume,
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    for n in 1..=30 {
        let r = server.get(&format!("/messenger/dispatch.php?n={n}"));
        assert_eq!(r.text(), "sent", "{r:?}; stderr:\n{}", server.stderr());
    }
    let handled = || -> BTreeSet<u64> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                l.strip_prefix("messenger ")?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(20), || handled().len() == 30),
        "handled {:?}; stderr:\n{}",
        handled(),
        server.stderr()
    );
    assert_eq!(handled(), (1..=30).collect());
    let started = Instant::now();
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(15)).expect("exits");
    assert!(status.success(), "{status}; stderr:\n{}", server.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// The PHP-level benchmark (not part of the suite): `Ferrophp\Jobs::dispatch()` against
/// phpredis `LPUSH` of the same serialized payload to a redis-server on this machine, and
/// dispatch + take + ack against `LPUSH` + `RPOP`, on one PHP thread, local store with the
/// default fsync policy. phpredis is a loadable built against this PHP
/// (scripts/build-pecl.sh); give its path in FERROPHP_BENCH_PHPREDIS:
///
/// `FERROPHP_BENCH_PHPREDIS=/path/redis.so cargo test -p ferrophp --test jobs -- --ignored bench --nocapture`
///
/// FERROPHP_BENCH_BIN names another `ferrophp` to measure (a release tree's `ferrophp`,
/// which ships igbinary and phpredis: FERROPHP_BENCH_PHPREDIS is then not needed);
/// the default is this debug build.
#[test]
#[ignore]
fn bench_dispatch_against_phpredis_lpush() {
    let bench_bin = std::env::var_os("FERROPHP_BENCH_BIN").is_some();
    // A release tree ships igbinary and phpredis, off until named (its conf.d says so).
    let extensions = match (std::env::var("FERROPHP_BENCH_PHPREDIS"), bench_bin) {
        // Paths, comma-separated, in load order (igbinary before a phpredis built with it).
        (Ok(paths), _) => paths.split(',').map(|p| format!("extension={p}")).collect(),
        (Err(_), true) => vec!["extension=igbinary".into(), "extension=redis".into()],
        (Err(_), false) => panic!("FERROPHP_BENCH_PHPREDIS=path to a redis.so built for this PHP"),
    };
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args = vec![
        "--data-dir",
        data.to_str().unwrap(),
        "-d",
        "max_execution_time=0",
    ];
    for ext in &extensions {
        args.extend(["-d", ext.as_str()]);
    }
    let server = Server::start_binary(&common::bench_binary(), &jobs_root(), &args, &[]);
    println!("| run | payload | dispatch wall / CPU (us) | phpredis LPUSH wall / CPU (us) | dispatch+take+ack wall / CPU | LPUSH+RPOP wall / CPU |");
    println!("|---|---|---|---|---|---|");
    for run in 1..=3 {
        let r = server.get(&format!("/messenger/bench.php?n=2000&port={}", redis.port));
        assert_eq!(r.status, 200, "{}; stderr:\n{}", r.text(), server.stderr());
        let v: serde_json::Value =
            serde_json::from_str(&r.text()).unwrap_or_else(|_| panic!("{}", r.text()));
        let f = |k: &str| {
            assert_eq!(v[k]["handled"], 2000, "{v}");
            format!(
                "{:.0} msg/s, {:.1} us CPU",
                v[k]["per_second"].as_f64().unwrap(),
                v[k]["cpu_us"].as_f64().unwrap()
            )
        };
        println!(
            "Messenger end to end, run {run}: Redis transport {}; Ferrophp\\Jobs transport {}",
            f("messenger_redis"),
            f("messenger_ferrophp")
        );
    }
    for run in 1..=3 {
        let r = server.get(&format!("/bench.php?n=20000&port={}", redis.port));
        assert_eq!(r.status, 200, "{}; stderr:\n{}", r.text(), server.stderr());
        let v: serde_json::Value =
            serde_json::from_str(&r.text()).unwrap_or_else(|_| panic!("{}", r.text()));
        let f = |k: &str| {
            format!(
                "{:.2} / {:.2}",
                v[k]["wall_us"].as_f64().unwrap(),
                v[k]["cpu_us"].as_f64().unwrap()
            )
        };
        println!(
            "| {run} | {} B | {} | {} | {} | {} |",
            v["payload_bytes"],
            f("dispatch"),
            f("lpush"),
            f("dispatch_take_ack"),
            f("lpush_rpop")
        );
    }
}

/// A background script that never polls `shouldStop()` is left behind after its stop
/// timeout: the server still exits, saying so.
#[test]
fn a_background_script_that_ignores_the_stop_is_left_after_its_stop_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    let data = dir.path().join("data");
    let stubborn = script("stubborn.php");
    let mut server = Server::start_with_env(
        &jobs_root(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--background-worker",
            &stubborn,
            "--background-stop-timeout",
            "1s",
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("start")
    }));
    let started = Instant::now();
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(20)).expect("exits");
    let elapsed = started.elapsed();
    let stderr = server.stderr();
    assert!(
        stderr.contains("did not end within its stop timeout"),
        "{status}; stderr:\n{stderr}"
    );
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

/// `[[background]]` in the file and FERROPHP_BACKGROUND_WORKERS (`;`-separated) both start
/// background workers, each with its thread count and its own env.
#[test]
fn background_workers_from_the_file_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    let config = dir.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n[[background]]\nscript = {:?}\nthreads = 3\nstop_timeout = \"5s\"\n\
             env = {{ JOBS_OUT = {:?} }}\n",
            dir.path().join("data"),
            script("consumer.php"),
            out,
        ),
    )
    .unwrap();
    let from_env = format!("{},2", script("stubborn.php"));
    let server = Server::start_with_env(
        &jobs_root(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--admin",
            "127.0.0.1:0",
        ],
        &[
            ("FERROPHP_BACKGROUND_WORKERS", &from_env),
            ("JOBS_OUT", dir.path().join("env.log").to_str().unwrap()),
        ],
    );
    let admin = server.admin_addr().unwrap();
    let text = scrape(admin);
    let threads = |s: &str| {
        sample(
            &text,
            &format!("ferrophp_background_threads{{background=\"{s}\"}}"),
        )
    };
    assert_eq!(threads(&script("consumer.php")), Some(3.0), "{text}");
    assert_eq!(threads(&script("stubborn.php")), Some(2.0), "{text}");
    // The file's env reached the consumer.
    assert!(wait_until(
        Duration::from_secs(10),
        || std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("start"))
            .count()
            == 3
    ));
}

/// A symlinked deploy under load: `current` switches from release a to release b and the
/// server reloads (SIGHUP) while clients dispatch; no job whose dispatch returned is
/// lost, and the background workers run release b's script afterwards.
#[test]
fn no_job_is_lost_across_a_symlinked_deploy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    for release in ["a", "b"] {
        let r = dir.path().join("releases").join(release);
        std::fs::create_dir_all(&r).unwrap();
        for f in ["consumer.php", "dispatch.php", "hello.php"] {
            std::fs::copy(jobs_root().join(f), r.join(f)).unwrap();
        }
    }
    let current = dir.path().join("current");
    std::os::unix::fs::symlink(dir.path().join("releases/a"), &current).unwrap();
    let data = dir.path().join("data");
    let consumer = format!("{},2", current.join("consumer.php").display());
    let server = Server::start_with_env(
        &current,
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--background-worker",
            &consumer,
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    let addr = server.addr;
    let dispatched: Arc<Mutex<BTreeSet<u64>>> = Arc::default();
    let next = Arc::new(AtomicU64::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (stop, next, dispatched) = (stop.clone(), next.clone(), dispatched.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let request = format!(
                        "GET /dispatch.php?op=work&n={n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    );
                    let Ok(bytes) =
                        common::exchange(addr, request.as_bytes(), Duration::from_secs(5))
                    else {
                        continue;
                    };
                    if let Some(r) = common::parse_response(&bytes) {
                        if r.status == 200 && r.text().split(' ').next().is_some_and(|id| id.len() == 16) {
                            dispatched.lock().unwrap().insert(n);
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    // The deploy: a new link renamed over `current`, then SIGHUP.
    let next_link = dir.path().join("current.new");
    std::os::unix::fs::symlink(dir.path().join("releases/b"), &next_link).unwrap();
    std::fs::rename(&next_link, &current).unwrap();
    let status = std::process::Command::new("kill")
        .arg("-HUP")
        .arg(server.pid().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let want = dispatched.lock().unwrap().clone();
    let done = || -> BTreeSet<u64> {
        handled(&out)
            .iter()
            .filter(|h| h.op == "work")
            .map(|h| h.n)
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(60), || want.is_subset(&done())),
        "lost {} of {}; stderr:\n{}",
        want.difference(&done()).count(),
        want.len(),
        server.stderr()
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let b = dir.path().join("releases/b").canonicalize().unwrap();
    let b_starts = text
        .lines()
        .filter(|l| l.starts_with("start ") && l.ends_with(b.to_str().unwrap()))
        .count();
    assert_eq!(
        b_starts, 2,
        "both background threads run release b now:\n{text}"
    );
    println!(
        "deploy under load: {} dispatched, {} done, 0 lost",
        want.len(),
        done().len()
    );
    assert!(want.len() > 100, "only {} dispatches returned", want.len());
}

/// A request blocked in `take()` with a 30 s timeout ends at its 1 s time limit.
#[test]
fn a_request_blocked_in_take_ends_at_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&jobs_root(), &["--data-dir", data.to_str().unwrap()]);
    let started = Instant::now();
    let r = server.get("/take_long.php");
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}: {r:?}");
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        server.stderr().contains("Maximum execution time"),
        "{}",
        server.stderr()
    );
    server.assert_alive();
}

/// A background run is not cut by the server's max_execution_time (1 s here): its runs
/// last as long as the script wants, as under the CLI.
#[test]
fn a_background_run_outlives_max_execution_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    let data = dir.path().join("data");
    let long_run = script("long_run.php");
    let server = Server::start_with_env(
        &jobs_root(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--background-worker",
            &long_run,
            "-d",
            "max_execution_time=1",
        ],
        &[("JOBS_OUT", out.to_str().unwrap())],
    );
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("survived max_execution_time=0")),
        "stderr:\n{}",
        server.stderr()
    );
    assert!(!server.stderr().contains("Maximum execution time"));
    // Requests keep their limit.
    assert_eq!(server.get("/take_long.php").status, 500);
}

/// Two instances with the same `[[schedule]]` entry on one Redis (`--jobs-backend`): each
/// fire time runs once, on one of them.
#[test]
fn two_instances_on_one_redis_run_each_scheduled_fire_once() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ticks.log");
    let config = dir.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "jobs_backend = \"redis://127.0.0.1:{}/\"\n\
             [[schedule]]\nname = \"tick\"\nevery = \"1s\"\nscript = {:?}\n",
            redis.port,
            script("scheduled_pid.php")
        ),
    )
    .unwrap();
    let env = [("JOBS_OUT", out.to_str().unwrap())];
    let args = ["--config", config.to_str().unwrap()];
    let a = Server::start_with_env(&jobs_root(), &args, &env);
    let b = Server::start_with_env(&jobs_root(), &args, &env);
    std::thread::sleep(Duration::from_millis(5500));
    drop(a);
    drop(b);
    let ticks: Vec<(u32, f64)> = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("tick ")?.split(' ');
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    assert!(ticks.len() >= 4, "{ticks:?}");
    // Fire times are whole seconds: one run per second between both instances.
    let mut seconds: Vec<i64> = ticks.iter().map(|(_, t)| t.floor() as i64).collect();
    seconds.sort_unstable();
    let runs = seconds.len();
    seconds.dedup();
    assert_eq!(seconds.len(), runs, "a fire ran twice: {ticks:?}");
}
