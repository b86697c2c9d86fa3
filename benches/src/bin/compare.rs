//! The comparison harness: ferrophp (classic and worker mode) against nginx + Debian's
//! php8.2-fpm and a pure hyper hello world, on loopback, with the same load generator
//! (wrk) for all. Rounds are interleaved (A B C D, A B C D, ...); each run starts the
//! system fresh, warms it up, measures, and stops it. The report gives per-round ratios
//! against nginx + php-fpm (min/median/max), an A/A run of ferrophp against itself for
//! the noise floor, latency percentiles, and the CPU time the server processes used
//! during the measured window (utime + stime of the server's process tree, the counters
//! getrusage reads).
//!
//! The `head-of-line` workload mixes two request classes and needs each class's latency,
//! which wrk cannot give: it runs the closed-loop generator of `ferrophp_benches::load`
//! instead, once with only the fast class (the reference) and once with the mix, on the
//! same server, and reports the fast class's p99 in both and their ratio.
//!
//! `cargo run --release -p ferrophp-benches --bin compare -- [--rounds N] [--seconds S]
//!  [--quick] [--only WORKLOAD] [--out DIR] [--ferrophp-arg ARG]...`; writes
//! benchmarks.json and benchmarks.md into DIR (default docs/). Each `--ferrophp-arg` is
//! one more argument for every ferrophp server started (`--ferrophp-arg --max-threads
//! --ferrophp-arg 64`); a `--threads` given that way replaces the harness's own PHP thread
//! count for ferrophp (worker pools keep theirs), and a `--max-threads` is also the worker
//! pool's ceiling.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrophp_benches::load;
use serde::Serialize;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
enum System {
    FerrophpClassic,
    FerrophpWorker,
    NginxFpm,
    HyperHello,
    /// ferrophp classic again, for the A/A noise floor.
    FerrophpClassicAa,
}

impl System {
    fn label(self) -> &'static str {
        match self {
            System::FerrophpClassic => "ferrophp classic",
            System::FerrophpWorker => "ferrophp worker",
            System::NginxFpm => "nginx + php-fpm",
            System::HyperHello => "pure hyper (no PHP)",
            System::FerrophpClassicAa => "ferrophp classic (A/A)",
        }
    }
}

struct Workload {
    name: &'static str,
    description: &'static str,
    classic_path: &'static str,
    worker_path: &'static str,
    post_body: Option<usize>,
    /// Session files put in a private `session.save_path` (the same directory for every
    /// system) before the workload's rounds; requests then carry one of
    /// [`SESSION_IDS`] session cookies. 0: no session set-up.
    session_files: usize,
    connections: u32,
    systems: &'static [System],
    /// A second, slow request class mixed into this workload (then measured with
    /// [`load::run`] instead of wrk).
    slow: Option<SlowClass>,
}

/// The slow requests of a mixed workload: their paths and share of all requests.
struct SlowClass {
    classic_path: &'static str,
    worker_path: &'static str,
    fraction: f64,
}

/// Session ids in rotation for a session workload: enough that two requests rarely wait on
/// one session's lock, few enough that the directory does not grow much.
const SESSION_IDS: usize = 1000;

const ALL_PHP: &[System] = &[
    System::FerrophpClassic,
    System::FerrophpWorker,
    System::NginxFpm,
];

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "hello",
        description: "hello world",
        classic_path: "/hello.php",
        worker_path: "/worker.php/hello",
        post_body: None,
        session_files: 0,
        connections: 32,
        systems: &[
            System::FerrophpClassic,
            System::FerrophpWorker,
            System::NginxFpm,
            System::HyperHello,
            System::FerrophpClassicAa,
        ],
        slow: None,
    },
    Workload {
        name: "echo-4k",
        description: "echo of a 4 KB POST",
        classic_path: "/echo.php",
        worker_path: "/worker.php/echo",
        post_body: Some(4096),
        session_files: 0,
        connections: 32,
        systems: ALL_PHP,
        slow: None,
    },
    Workload {
        name: "print-server",
        description: "print_r($_SERVER)",
        classic_path: "/server.php",
        worker_path: "/worker.php/server",
        post_body: None,
        session_files: 0,
        connections: 32,
        systems: ALL_PHP,
        slow: None,
    },
    Workload {
        name: "json-api",
        description: "json_encode of 100 records",
        classic_path: "/json.php",
        worker_path: "/worker.php/json",
        post_body: None,
        session_files: 0,
        connections: 32,
        systems: ALL_PHP,
        slow: None,
    },
    Workload {
        name: "framework-page",
        description: "autoload 50 classes, render a template",
        classic_path: "/page.php",
        worker_path: "/worker.php/page",
        post_body: None,
        session_files: 0,
        connections: 32,
        systems: ALL_PHP,
        slow: None,
    },
    Workload {
        name: "static-1mb",
        description: "a 1 MB static file",
        classic_path: "/static/1mb.bin",
        worker_path: "/static/1mb.bin",
        post_body: None,
        session_files: 0,
        connections: 32,
        systems: &[System::FerrophpClassic, System::NginxFpm],
        slow: None,
    },
    Workload {
        name: "sessions",
        description: "session_start() and a counter in $_SESSION, 150,000 other session files in the save path, 1,000 session ids in rotation",
        classic_path: "/session.php",
        worker_path: "/worker.php/session",
        post_body: None,
        session_files: 150_000,
        connections: 32,
        systems: ALL_PHP,
        slow: None,
    },
    Workload {
        name: "burst-1000",
        description: "hello world, 1,000 concurrent connections",
        classic_path: "/hello.php",
        worker_path: "/worker.php/hello",
        post_body: None,
        session_files: 0,
        connections: 1000,
        systems: &[
            System::FerrophpClassic,
            System::FerrophpWorker,
            System::NginxFpm,
            System::HyperHello,
        ],
        slow: None,
    },
    Workload {
        name: "head-of-line",
        description: "hello world with 5% of requests sleeping 200 ms in PHP (`sleep.php`); closed-loop generator instead of wrk (`benches/src/load.rs`), run once with hello world alone and once with the mix; the target is the fast requests' p99 with the slow ones within 2x of their p99 alone",
        classic_path: "/hello.php",
        worker_path: "/worker.php/hello",
        post_body: None,
        session_files: 0,
        connections: 64,
        systems: ALL_PHP,
        slow: Some(SlowClass {
            classic_path: "/sleep.php",
            worker_path: "/worker.php/sleep",
            fraction: 0.05,
        }),
    },
];

/// Where docs/benchmarks.md's sections written by other benchmarks begin: this harness
/// rewrites what is above it and keeps the rest.
const KEPT_MARKER: &str =
    "<!-- Sections below are written by other benchmarks; compare.rs keeps them. -->";

struct Options {
    rounds: usize,
    seconds: u64,
    warmup: u64,
    only: Option<String>,
    threads: usize,
    out: Option<PathBuf>,
    /// Extra arguments for every ferrophp server (`--ferrophp-arg`).
    ferrophp_args: Vec<String>,
}

#[derive(Serialize, Clone, Debug)]
struct Run {
    workload: String,
    system: System,
    round: usize,
    requests_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    cpu_seconds: f64,
    cpu_us_per_request: f64,
    /// Mixed workloads only; `p50_ms`/`p99_ms` are then the fast class's with the mix.
    #[serde(skip_serializing_if = "Option::is_none")]
    head_of_line: Option<HeadOfLine>,
}

/// Per-class latencies of a mixed workload's run.
#[derive(Serialize, Clone, Debug)]
struct HeadOfLine {
    /// The fast class with no slow requests at all (same server, just before).
    fast_alone: load::ClassStats,
    fast_mixed: load::ClassStats,
    slow_mixed: load::ClassStats,
    /// fast_mixed.p99 / fast_alone.p99 (target: <= 2).
    p99_ratio: f64,
    requests_per_sec_alone: f64,
}

fn main() {
    let options = parse_args();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let ferrophp = repo.join("target/release/ferrophp");
    let hyper = repo.join("target/release/hyper-hello");
    for bin in [&ferrophp, &hyper] {
        assert!(
            bin.exists(),
            "{} missing: cargo build --release --workspace --bins",
            bin.display()
        );
    }
    let scratch = std::env::temp_dir().join(format!("ferrophp-compare-{}", std::process::id()));
    let root = prepare_root(&repo, &scratch);

    let mut runs = Vec::new();
    for workload in WORKLOADS {
        if options.only.as_deref().is_some_and(|o| o != workload.name) {
            continue;
        }
        let ini = match workload.session_files {
            0 => Vec::new(),
            n => vec![format!(
                "session.save_path={}",
                prepare_sessions(&scratch, workload.name, n).display()
            )],
        };
        for round in 0..options.rounds {
            for &system in workload.systems {
                let run = measure(
                    &options, workload, system, round, &root, &scratch, &ferrophp, &hyper, &ini,
                );
                eprintln!(
                    "{:<15} round {} {:<24} {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  cpu {:>6.1} us/req  errors {}",
                    workload.name,
                    round,
                    system.label(),
                    run.requests_per_sec,
                    run.p50_ms,
                    run.p99_ms,
                    run.cpu_us_per_request,
                    run.errors
                );
                runs.push(run);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = Report::new(&options, runs, command);
    let json = serde_json::to_string_pretty(&report).unwrap();
    let out = options.out.clone().unwrap_or_else(|| repo.join("docs"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("benchmarks.json"), &json).unwrap();
    // Sections other benchmarks wrote (trace_bench's) stay below the marker.
    let md_path = out.join("benchmarks.md");
    let kept = std::fs::read_to_string(&md_path)
        .ok()
        .and_then(|old| old.find(KEPT_MARKER).map(|i| old[i..].to_owned()))
        .unwrap_or_default();
    let mut md = report.markdown(&json);
    if !kept.is_empty() {
        md.push('\n');
        md.push_str(&kept);
    }
    std::fs::write(md_path, md).unwrap();
    println!("{}", report.summary_table());
    eprintln!(
        "wrote benchmarks.md and benchmarks.json in {}",
        out.display()
    );
}

fn parse_args() -> Options {
    let mut options = Options {
        rounds: 3,
        seconds: 5,
        warmup: 1,
        only: None,
        threads: 2 * std::thread::available_parallelism().map_or(1, |n| n.get()),
        out: None,
        ferrophp_args: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                options.rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            "--seconds" => {
                options.seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--seconds S")
            }
            "--only" => options.only = args.next(),
            "--out" => options.out = Some(PathBuf::from(args.next().expect("--out DIR"))),
            "--ferrophp-arg" => options
                .ferrophp_args
                .push(args.next().expect("--ferrophp-arg ARG")),
            "--quick" => {
                options.rounds = 1;
                options.seconds = 2;
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    options
}

/// A private copy of test-data/compare plus the generated 1 MB static file.
fn prepare_root(repo: &Path, scratch: &Path) -> PathBuf {
    let root = scratch.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo.join("test-data/compare/."))
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(root.join("static")).unwrap();
    let megabyte: Vec<u8> = (0..1024 * 1024)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(root.join("static/1mb.bin"), megabyte).unwrap();
    root.canonicalize().unwrap()
}

/// A session save path holding `files` session files ten minutes old: alive for PHP's GC
/// (gc_maxlifetime 1440 s), so a GC pass would scan them all and delete none, the state
/// of a busy site between clean-ups.
fn prepare_sessions(scratch: &Path, workload: &str, files: usize) -> PathBuf {
    let dir = scratch.join(format!("sessions-{workload}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mtime = std::time::SystemTime::now() - Duration::from_secs(600);
    eprintln!(
        "{workload}: creating {files} session files in {}",
        dir.display()
    );
    for i in 0..files {
        let file = std::fs::File::create(dir.join(format!("sess_pre{i:08}"))).unwrap();
        (&file).write_all(b"n|i:1;").unwrap();
        file.set_modified(mtime).unwrap();
    }
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The processes of one running system.
struct Running {
    children: Vec<Child>,
    port: u16,
}

impl Running {
    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    fn stop(mut self) {
        for child in &self.children {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        for child in &mut self.children {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Starts `system`; `ini` are PHP settings (`key=value`) given to ferrophp and php-fpm
/// alike as `-d`.
#[allow(clippy::too_many_arguments)]
fn start(
    system: System,
    options: &Options,
    root: &Path,
    scratch: &Path,
    ferrophp: &Path,
    hyper: &Path,
    ini: &[String],
) -> Running {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let quiet = || Stdio::null();
    let children = match system {
        System::FerrophpClassic | System::FerrophpClassicAa | System::FerrophpWorker => {
            let mut cmd = Command::new(ferrophp);
            cmd.args([
                "serve",
                "--no-access-log",
                "--log",
                "warn",
                "--listen",
                &listen,
            ])
            .arg("--root")
            .arg(root);
            // `--ferrophp-arg --threads --ferrophp-arg N` replaces the harness's own count
            // (the flag may be given once).
            if !options.ferrophp_args.iter().any(|a| a == "--threads") {
                cmd.args(["--threads", &options.threads.to_string()]);
            }
            for kv in ini {
                cmd.args(["-d", kv.as_str()]);
            }
            cmd.args(&options.ferrophp_args);
            if system == System::FerrophpWorker {
                // A `--max-threads` given to ferrophp is the worker pool's ceiling too, so
                // both modes can grow the same way (`--worker script,N,MAX`).
                let ceiling = options
                    .ferrophp_args
                    .iter()
                    .position(|a| a == "--max-threads")
                    .and_then(|i| options.ferrophp_args.get(i + 1))
                    .map(|max| format!(",{max}"))
                    .unwrap_or_default();
                cmd.arg("--worker").arg(format!(
                    "{},{}{ceiling}",
                    root.join("worker.php").display(),
                    options.threads
                ));
            }
            vec![cmd
                .stdout(quiet())
                .stderr(quiet())
                .spawn()
                .expect("ferrophp starts")]
        }
        System::HyperHello => vec![Command::new(hyper)
            .arg(&listen)
            .stdout(quiet())
            .spawn()
            .expect("hyper-hello starts")],
        System::NginxFpm => {
            let run_dir = scratch.join(format!("nginx-{port}"));
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baseline/nginx-fpm.sh");
            let out = Command::new("bash")
                .arg(script)
                .args([
                    "config",
                    run_dir.to_str().unwrap(),
                    root.to_str().unwrap(),
                    &port.to_string(),
                    &options.threads.to_string(),
                    "auto",
                ])
                .output()
                .expect("nginx-fpm.sh runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|line| {
                    let mut parts = line.split_whitespace();
                    let program = parts.next().unwrap();
                    let mut cmd = Command::new(program);
                    cmd.args(parts);
                    if program.contains("php-fpm") {
                        for kv in ini {
                            cmd.args(["-d", kv.as_str()]);
                        }
                    }
                    cmd.stdout(quiet())
                        .stderr(quiet())
                        .spawn()
                        .expect("baseline process starts")
                })
                .collect()
        }
    };
    let running = Running { children, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !answers(port) {
        assert!(
            Instant::now() < deadline,
            "{} did not come up",
            system.label()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    running
}

/// One HTTP request succeeds (any status: the system is up).
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /hello.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("HTTP/1.1")
}

#[allow(clippy::too_many_arguments)]
fn measure(
    options: &Options,
    workload: &Workload,
    system: System,
    round: usize,
    root: &Path,
    scratch: &Path,
    ferrophp: &Path,
    hyper: &Path,
    ini: &[String],
) -> Run {
    let running = start(system, options, root, scratch, ferrophp, hyper, ini);
    let path = match system {
        System::FerrophpWorker => workload.worker_path,
        System::HyperHello => "/",
        _ => workload.classic_path,
    };
    if let Some(slow) = &workload.slow {
        let slow_path = match system {
            System::FerrophpWorker => slow.worker_path,
            _ => slow.classic_path,
        };
        return measure_mixed(
            options, workload, system, round, running, path, slow_path, slow,
        );
    }
    let url = format!("http://127.0.0.1:{}{path}", running.port);
    let lua = workload.post_body.map(|size| {
        let file = scratch.join(format!("post-{size}.lua"));
        std::fs::write(
            &file,
            format!("wrk.method = \"POST\"\nwrk.body = string.rep(\"x\", {size})\nwrk.headers[\"Content-Type\"] = \"text/plain\"\n"),
        )
        .unwrap();
        file
    });
    let lua = lua.or_else(|| {
        (workload.session_files > 0).then(|| {
            // Session ids PHP accepts as they are (use_strict_mode is off in both).
            let file = scratch.join("sessions.lua");
            std::fs::write(
                &file,
                format!("math.randomseed(42)\nrequest = function()\n  return wrk.format(nil, nil, {{ Cookie = \"PHPSESSID=bench\" .. math.random(1, {SESSION_IDS}) }})\nend\n"),
            )
            .unwrap();
            file
        })
    });
    let _ = wrk(&url, workload.connections, options.warmup, lua.as_deref());
    let cpu_before = tree_cpu_seconds(&running.pids());
    let result = wrk(&url, workload.connections, options.seconds, lua.as_deref());
    let cpu = tree_cpu_seconds(&running.pids()) - cpu_before;
    running.stop();
    let requests = result.requests_per_sec * options.seconds as f64;
    Run {
        workload: workload.name.to_string(),
        system,
        round,
        requests_per_sec: result.requests_per_sec,
        p50_ms: result.p50_ms,
        p99_ms: result.p99_ms,
        errors: result.errors,
        cpu_seconds: cpu,
        cpu_us_per_request: if requests > 0.0 {
            cpu / requests * 1e6
        } else {
            0.0
        },
        head_of_line: None,
    }
}

/// A mixed workload on a running system: the fast class alone, then the mix, each after
/// its own warm-up, with the load generator's 2 threads (as wrk's).
#[allow(clippy::too_many_arguments)]
fn measure_mixed(
    options: &Options,
    workload: &Workload,
    system: System,
    round: usize,
    running: Running,
    fast_path: &str,
    slow_path: &str,
    slow: &SlowClass,
) -> Run {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], running.port));
    let connections = workload.connections as usize;
    let warmup = Duration::from_secs(options.warmup);
    let window = Duration::from_secs(options.seconds);
    let mut mix = load::Mix {
        fast_path: fast_path.to_string(),
        slow_path: slow_path.to_string(),
        slow_fraction: 0.0,
    };
    let alone = load::run(addr, connections, 2, warmup, window, &mix);
    mix.slow_fraction = slow.fraction;
    // CPU is counted over the mixed run only (its warm-up included: the generator runs
    // both in one call).
    let cpu_before = tree_cpu_seconds(&running.pids());
    let mixed = load::run(addr, connections, 2, warmup, window, &mix);
    let cpu = tree_cpu_seconds(&running.pids()) - cpu_before;
    running.stop();
    let requests = mixed.requests_per_sec * (options.seconds + options.warmup) as f64;
    let p99_ratio = if alone.fast.p99_ms > 0.0 {
        mixed.fast.p99_ms / alone.fast.p99_ms
    } else {
        0.0
    };
    Run {
        workload: workload.name.to_string(),
        system,
        round,
        requests_per_sec: mixed.requests_per_sec,
        p50_ms: mixed.fast.p50_ms,
        p99_ms: mixed.fast.p99_ms,
        errors: alone.errors + mixed.errors,
        cpu_seconds: cpu,
        cpu_us_per_request: if requests > 0.0 {
            cpu / requests * 1e6
        } else {
            0.0
        },
        head_of_line: Some(HeadOfLine {
            fast_alone: alone.fast,
            fast_mixed: mixed.fast,
            slow_mixed: mixed.slow,
            p99_ratio,
            requests_per_sec_alone: alone.requests_per_sec,
        }),
    }
}

struct WrkResult {
    requests_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn wrk(url: &str, connections: u32, seconds: u64, lua: Option<&Path>) -> WrkResult {
    let mut cmd = Command::new("wrk");
    cmd.args([
        "-t",
        "2",
        "-c",
        &connections.to_string(),
        "-d",
        &format!("{seconds}s"),
        "--latency",
        "--timeout",
        "10s",
    ]);
    if let Some(lua) = lua {
        cmd.arg("-s").arg(lua);
    }
    let out = cmd
        .arg(url)
        .output()
        .expect("wrk is not installed (scripts/install-test-deps.sh)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut result = WrkResult {
        requests_per_sec: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0,
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            result.requests_per_sec = v.trim().parse().unwrap_or(0.0);
        } else if let Some(v) = line.strip_prefix("50%") {
            result.p50_ms = parse_duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("99%") {
            result.p99_ms = parse_duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            result.errors += v.trim().parse::<u64>().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            result.errors += v
                .split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    result
}

fn parse_duration_ms(text: &str) -> f64 {
    let (number, unit): (String, String) =
        text.chars().partition(|c| c.is_ascii_digit() || *c == '.');
    let value: f64 = number.parse().unwrap_or(0.0);
    match unit.trim() {
        "us" => value / 1000.0,
        "ms" => value,
        "s" => value * 1000.0,
        "m" => value * 60_000.0,
        _ => value,
    }
}

/// utime + stime of the given processes and all their descendants, in seconds.
fn tree_cpu_seconds(roots: &[u32]) -> f64 {
    let mut parents: BTreeMap<u32, u32> = BTreeMap::new();
    let mut ticks: BTreeMap<u32, u64> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may contain spaces) start after ") ".
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ppid = fields.get(1).and_then(|v| v.parse().ok()).unwrap_or(0);
        let utime: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0);
        let stime: u64 = fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        parents.insert(pid, ppid);
        ticks.insert(pid, utime + stime);
    }
    let in_tree = |mut pid: u32| loop {
        if roots.contains(&pid) {
            return true;
        }
        match parents.get(&pid) {
            Some(&p) if p > 1 && p != pid => pid = p,
            _ => return false,
        }
    };
    let total: u64 = ticks
        .iter()
        .filter(|(pid, _)| in_tree(**pid))
        .map(|(_, t)| *t)
        .sum();
    total as f64 / clock_ticks_per_second()
}

fn clock_ticks_per_second() -> f64 {
    extern "C" {
        fn sysconf(name: i32) -> i64;
    }
    const SC_CLK_TCK: i32 = 2;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { sysconf(SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

#[derive(Serialize)]
struct Report {
    generated: String,
    machine: BTreeMap<String, String>,
    versions: BTreeMap<String, String>,
    command: String,
    rounds: usize,
    seconds: u64,
    php_threads: usize,
    runs: Vec<Run>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

impl Report {
    fn new(options: &Options, runs: Vec<Run>, command: String) -> Report {
        let sh = |cmd: &str| {
            Command::new("bash")
                .args(["-c", cmd])
                .output()
                .map(|o| {
                    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
                    s.push_str(&String::from_utf8_lossy(&o.stderr));
                    s.lines().next().unwrap_or("").trim().to_string()
                })
                .unwrap_or_default()
        };
        let mut machine = BTreeMap::new();
        machine.insert(
            "cpu".into(),
            sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        );
        machine.insert("cores".into(), sh("nproc"));
        machine.insert(
            "memory".into(),
            sh("grep MemTotal /proc/meminfo | awk '{print $2\" kB\"}'"),
        );
        machine.insert("kernel".into(), sh("uname -r"));
        let mut versions = BTreeMap::new();
        versions.insert("ferrophp".into(), sh("git rev-parse --short HEAD"));
        versions.insert("php (ferrophp)".into(), worker::PHP_VERSION.to_string());
        versions.insert("php-fpm".into(), sh("php-fpm8.2 -v"));
        versions.insert("nginx".into(), sh("nginx -v"));
        versions.insert("wrk".into(), sh("wrk -v"));
        Report {
            generated: sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
            machine,
            versions,
            command,
            rounds: options.rounds,
            seconds: options.seconds,
            php_threads: options.threads,
            runs,
        }
    }

    fn runs_of(&self, workload: &str, system: System) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|r| r.workload == workload && r.system == system)
            .collect()
    }

    /// Per-round ratios of `system` to nginx + php-fpm for `workload`.
    fn ratios(&self, workload: &str, system: System) -> Vec<f64> {
        let base = self.runs_of(workload, System::NginxFpm);
        self.runs_of(workload, system)
            .iter()
            .filter_map(|r| {
                let b = base.iter().find(|b| b.round == r.round)?;
                (b.requests_per_sec > 0.0).then(|| r.requests_per_sec / b.requests_per_sec)
            })
            .collect()
    }

    fn summary_table(&self) -> String {
        let mut out = String::new();
        let mut rows = String::new();
        for workload in WORKLOADS.iter().filter(|w| w.slow.is_none()) {
            for &system in workload.systems {
                let runs = self.runs_of(workload.name, system);
                if runs.is_empty() {
                    continue;
                }
                let ratios = self.ratios(workload.name, system);
                let ratio = if system == System::NginxFpm || ratios.is_empty() {
                    "1.00 (baseline)".to_string()
                } else {
                    let mut sorted = ratios.clone();
                    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
                    format!(
                        "{:.2} / {:.2} / {:.2}",
                        sorted[0],
                        median(ratios),
                        sorted[sorted.len() - 1]
                    )
                };
                rows.push_str(&format!(
                    "| {} | {} | {:.0} | {} | {:.2} | {:.2} | {:.1} | {} |\n",
                    workload.name,
                    system.label(),
                    median(runs.iter().map(|r| r.requests_per_sec).collect()),
                    ratio,
                    median(runs.iter().map(|r| r.p50_ms).collect()),
                    median(runs.iter().map(|r| r.p99_ms).collect()),
                    median(runs.iter().map(|r| r.cpu_us_per_request).collect()),
                    runs.iter().map(|r| r.errors).sum::<u64>(),
                ));
            }
        }
        if !rows.is_empty() {
            out.push_str("| workload | system | req/s (median) | vs nginx+php-fpm: min / median / max | p50 ms | p99 ms | server CPU us/req | errors |\n");
            out.push_str("|---|---|---:|---|---:|---:|---:|---:|\n");
            out.push_str(&rows);
        }
        out.push_str(&self.head_of_line_table());
        out
    }

    /// The mixed workloads' own table (medians over rounds): the fast class's p99 alone
    /// and with the slow class, and their ratio.
    fn head_of_line_table(&self) -> String {
        let mut out = String::new();
        for workload in WORKLOADS.iter().filter(|w| w.slow.is_some()) {
            let mut rows = String::new();
            for &system in workload.systems {
                let runs = self.runs_of(workload.name, system);
                let hol: Vec<&HeadOfLine> = runs
                    .iter()
                    .filter_map(|r| r.head_of_line.as_ref())
                    .collect();
                if hol.is_empty() {
                    continue;
                }
                let m = |f: fn(&HeadOfLine) -> f64| median(hol.iter().map(|h| f(h)).collect());
                rows.push_str(&format!(
                    "| {} | {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2} | {} |\n",
                    workload.name,
                    system.label(),
                    m(|h| h.requests_per_sec_alone),
                    m(|h| h.fast_alone.p99_ms),
                    median(runs.iter().map(|r| r.requests_per_sec).collect()),
                    m(|h| h.fast_mixed.p50_ms),
                    m(|h| h.fast_mixed.p99_ms),
                    m(|h| h.p99_ratio),
                    m(|h| h.slow_mixed.p50_ms),
                    median(runs.iter().map(|r| r.cpu_us_per_request).collect()),
                    runs.iter().map(|r| r.errors).sum::<u64>(),
                ));
            }
            if rows.is_empty() {
                continue;
            }
            out.push_str("\n| workload | system | req/s fast only | fast p99 ms alone | req/s mixed | fast p50 ms mixed | fast p99 ms mixed | p99 ratio (target <= 2) | slow p50 ms | server CPU us/req | errors |\n");
            out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            out.push_str(&rows);
        }
        out
    }

    fn markdown(&self, json: &str) -> String {
        let mut md = String::new();
        md.push_str("# Benchmarks: ferrophp vs nginx + php-fpm vs the pure-hyper limit\n\n");
        md.push_str("Generated by the comparison harness (`benches/src/bin/compare.rs`); do not edit by hand.\n\n");
        md.push_str(&format!(
            "- Generated: {}\n- Command: `{}`\n",
            self.generated, self.command
        ));
        md.push_str(&format!(
            "- {} interleaved rounds of {} s per system and workload (plus 1 s warm-up), wrk with 2 threads; {} PHP threads / php-fpm children / worker threads\n",
            self.rounds, self.seconds, self.php_threads
        ));
        md.push_str("- Load generator and servers share this machine's cores, as in the design notes' figures.\n\n## Machine and versions\n\n");
        for (k, v) in self.machine.iter().chain(self.versions.iter()) {
            md.push_str(&format!("- {k}: {v}\n"));
        }
        md.push_str("\n## Workloads\n\n");
        for w in WORKLOADS {
            md.push_str(&format!(
                "- `{}`: {} ({} connections)\n",
                w.name, w.description, w.connections
            ));
        }
        md.push_str("\n## Results\n\nRatios are per round against nginx + php-fpm measured in the same round. The A/A row (ferrophp classic against itself) shows the noise floor. Server CPU is utime + stime of the server's whole process tree during the measured window, per request. Mixed workloads (`head-of-line`) have a table of their own: the fast class's p99 alone and with the slow class on the same server, their ratio, and the slow class's p50; their CPU per request counts the mixed run with its warm-up.\n\n");
        md.push_str(&self.summary_table());
        md.push_str("\n## Raw data\n\n<details><summary>JSON (also in docs/benchmarks.json)</summary>\n\n```json\n");
        md.push_str(json);
        md.push_str("\n```\n</details>\n");
        md
    }
}
