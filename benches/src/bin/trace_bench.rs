//! Tracing benchmark (issue 27): what tracing costs per request, and per
//! `Ferrophp\Trace::span()` from PHP, as differences against tracing off in the same run.
//!
//! Part 1 (`http`) runs the release `ferrophp` binary on hello world (classic and worker
//! mode) under wrk, four configurations per round, interleaved: tracing off, off again
//! (the A/A noise floor), on with requests not sampled (their `traceparent` says 00),
//! and on with every request sampled (flags 01: a server span each, exported to a
//! collector in this process that answers 200). Every configuration gets the same
//! request, `traceparent` header included. CPU is the server process's utime + stime
//! (`/proc/PID/stat`, the counters getrusage reads) over the measured window, per
//! request; the table gives each configuration's median, and the median over rounds of
//! its difference to tracing off in the same round.
//!
//! Part 2 (`rust`) times the trace crate's per-request calls alone in this process
//! (getrusage RUSAGE_SELF, so the exporter thread's encoding and POSTs count; the
//! collector thread's own CPU is subtracted): the sampling decision for a request that
//! is not sampled, and a sampled request's server span with the server's attributes,
//! encoded, queued and exported.
//!
//! Part 3 (`php`) runs `test-data/tracing/bench/spans.php` in the embedded engine inside
//! sampled requests: `Trace::span(name)->end()` and the same with two attributes, 1,000
//! spans per request, against the empty loop (CPU from getrusage RUSAGE_SELF, exporter
//! included, collector excluded; PHP's hrtime loop time next to it).
//!
//! Run: `cargo build --release -p ferrophp --bin ferrophp && cargo run --release -p
//! ferrophp-benches --bin trace_bench -- [--rounds 5] [--seconds 5] [--only http|rust|php]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrophp_trace::{self as ft, Value};
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

fn cpu(who: libc::c_int) -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// An OTLP collector in this process: reads each POST and answers 200, counting spans'
/// bytes and its own CPU (to subtract from in-process measurements).
struct Sink {
    port: u16,
    cpu_ns: Arc<AtomicU64>,
    posts: Arc<AtomicU64>,
}

impl Sink {
    fn start() -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let posts = Arc::new(AtomicU64::new(0));
        let (c, p) = (cpu_ns.clone(), posts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (c, p) = (c.clone(), p.clone());
                std::thread::spawn(move || serve_posts(stream, &c, &p));
            }
        });
        Sink {
            port,
            cpu_ns,
            posts,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn cpu(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }
}

fn serve_posts(stream: TcpStream, cpu_ns: &AtomicU64, posts: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let start = cpu(libc::RUSAGE_THREAD);
        let mut len = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        body.resize(len, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let _ = out.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
        posts.fetch_add(1, Ordering::Relaxed);
        cpu_ns.fetch_add(
            (cpu(libc::RUSAGE_THREAD) - start).as_nanos() as u64,
            Ordering::Relaxed,
        );
    }
}

// ---------------------------------------------------------------------------------------
// Part 1: the real server under wrk.
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tracing {
    Off,
    OffAgain,
    NotSampled,
    Sampled,
}

impl Tracing {
    fn label(self) -> &'static str {
        match self {
            Tracing::Off => "tracing off",
            Tracing::OffAgain => "tracing off (A/A)",
            Tracing::NotSampled => "on, not sampled",
            Tracing::Sampled => "on, sampled (server span exported)",
        }
    }
}

struct Running {
    child: Child,
    port: u16,
    admin: u16,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_server(
    bin: &Path,
    worker: bool,
    tracing: Tracing,
    sink: &Sink,
    threads: usize,
) -> Running {
    let port = free_port();
    let admin = free_port();
    let root = repo().join("test-data/compare");
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--no-access-log", "--log", "warn"])
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--admin")
        .arg(format!("127.0.0.1:{admin}"))
        .arg("--root")
        .arg(&root)
        .args(["--threads", &threads.to_string()]);
    if worker {
        cmd.arg("--worker")
            .arg(format!("{},{threads}", root.join("worker.php").display()));
    }
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") || k.starts_with("FERROPHP_") {
            cmd.env_remove(k);
        }
    }
    if matches!(tracing, Tracing::NotSampled | Tracing::Sampled) {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint())
            // Large enough that no span is dropped (a drop would make it look cheaper).
            .env("OTEL_BSP_MAX_QUEUE_SIZE", "262144");
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ferrophp starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    Running { child, port, admin }
}

impl Running {
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let rest = stat.rsplit_once(") ").unwrap().1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    fn dropped_spans(&self) -> f64 {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.admin)) else {
            return 0.0;
        };
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.lines()
            .filter(|l| l.starts_with("ferrophp_trace_spans_dropped_total{"))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// wrk's (requests, requests/s) for `seconds` of load with the `traceparent` header.
fn wrk(url: &str, seconds: u64, traceparent: &str) -> (f64, f64) {
    let out = Command::new("wrk")
        .args(["-t", "2", "-c", "32", "-d", &format!("{seconds}s")])
        .args(["-H", &format!("traceparent: {traceparent}")])
        .arg(url)
        .output()
        .expect("wrk is not installed (scripts/install-test-deps.sh)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut requests = 0.0;
    let mut rate = 0.0;
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            rate = v.trim().parse().unwrap_or(0.0);
        } else if line.contains(" requests in ") {
            requests = line
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap_or(0.0);
        }
    }
    (requests, rate)
}

fn http_part(rounds: usize, seconds: u64) {
    let bin = repo().join("target/release/ferrophp");
    assert!(
        bin.exists(),
        "{} missing: cargo build --release -p ferrophp",
        bin.display()
    );
    let sink = Sink::start();
    let threads = 2 * std::thread::available_parallelism().map_or(1, |n| n.get());
    let ticks = {
        // SAFETY: sysconf only reads a configuration value.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            t as f64
        } else {
            100.0
        }
    };
    let configs = [
        Tracing::Off,
        Tracing::NotSampled,
        Tracing::Sampled,
        Tracing::OffAgain,
    ];
    println!("## Per request, the real server under wrk ({rounds} interleaved rounds of {seconds} s, wrk -t2 -c32, {threads} PHP threads)\n");
    println!("| mode | tracing | req/s (median) | server CPU us/req (median) | CPU difference to off, same round (median, min..max) | CPU ratio to off | spans dropped |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (worker, path) in [(false, "/hello.php"), (true, "/worker.php/hello")] {
        // cpu[config][round], rate[config][round]
        let mut cpu_us = vec![Vec::new(); configs.len()];
        let mut rates = vec![Vec::new(); configs.len()];
        let mut dropped = vec![0.0; configs.len()];
        for _ in 0..rounds {
            for (c, &config) in configs.iter().enumerate() {
                let flags = if config == Tracing::Sampled {
                    "01"
                } else {
                    "00"
                };
                let traceparent =
                    format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}");
                let server = start_server(&bin, worker, config, &sink, threads);
                let url = format!("http://127.0.0.1:{}{path}", server.port);
                wrk(&url, 1, &traceparent);
                let t0 = server.cpu_ticks();
                let (requests, rate) = wrk(&url, seconds, &traceparent);
                let used = (server.cpu_ticks() - t0) as f64 / ticks;
                dropped[c] += server.dropped_spans();
                server.stop();
                cpu_us[c].push(used / requests * 1e6);
                rates[c].push(rate);
            }
        }
        for (c, &config) in configs.iter().enumerate() {
            let diffs: Vec<f64> = (0..rounds).map(|r| cpu_us[c][r] - cpu_us[0][r]).collect();
            let ratios: Vec<f64> = (0..rounds).map(|r| cpu_us[c][r] / cpu_us[0][r]).collect();
            let (lo, hi) = diffs
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &d| (a.min(d), b.max(d)));
            println!(
                "| {} | {} | {:.0} | {:.2} | {} | {} | {} |",
                if worker { "worker" } else { "classic" },
                config.label(),
                median(rates[c].clone()),
                median(cpu_us[c].clone()),
                if c == 0 {
                    "(baseline)".to_owned()
                } else {
                    format!("{:+.2} ({:+.2}..{:+.2})", median(diffs), lo, hi)
                },
                if c == 0 {
                    "1.000".to_owned()
                } else {
                    format!("{:.3}", median(ratios))
                },
                dropped[c],
            );
        }
    }
    println!(
        "\ncollector POSTs received: {}\n",
        sink.posts.load(Ordering::Relaxed)
    );
}

// ---------------------------------------------------------------------------------------
// Parts 2 and 3: in this process.
// ---------------------------------------------------------------------------------------

fn install_tracing(sink: &Sink) -> &'static ft::Tracing {
    let vars = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint()),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "4000000".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ];
    let config = ft::Config::from_env(
        |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()),
        &[("process.runtime.name", "php".to_owned())],
    )
    .unwrap()
    .unwrap();
    ft::install(config).unwrap()
}

/// Waits until the exporter has sent everything queued.
fn drain(tracing: &ft::Tracing) {
    while tracing.queued_spans() > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // The last batch in flight.
    std::thread::sleep(Duration::from_millis(100));
}

/// CPU of this process minus the collector's, around `f`.
fn net_cpu(sink: &Sink, f: impl FnOnce()) -> Duration {
    let (c0, s0) = (cpu(libc::RUSAGE_SELF), sink.cpu());
    f();
    (cpu(libc::RUSAGE_SELF) - c0).saturating_sub(sink.cpu() - s0)
}

fn rust_part(sink: &Sink, tracing: &'static ft::Tracing, rounds: usize) {
    const N: usize = 300_000;
    let mut headers = Vec::new();
    for flags in ["00", "01"] {
        let mut h = std::collections::HashMap::new();
        h.insert("host", "localhost:8080".to_owned());
        h.insert("user-agent", "wrk".to_owned());
        h.insert(
            "traceparent",
            format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}"),
        );
        headers.push(h);
    }
    let request = |h: &std::collections::HashMap<&str, String>, i: usize| {
        let tp = h.get("traceparent").map(|v| v.as_bytes());
        let trace = tracing.start_request(tp, || None, ft::now_unix_nano);
        // What the server sets on a sampled request's span (server/src/traces.rs).
        if let Some(server) = &trace.server {
            server.with(|d, l| {
                d.name.clear();
                d.name.push_str("GET /index.php");
                d.push_attribute("http.request.method", Value::Str(b"GET"), l);
                d.push_attribute("url.path", Value::Str(b"/index.php"), l);
                d.push_attribute("url.scheme", Value::Str(b"http"), l);
                d.push_attribute("server.address", Value::Str(b"localhost"), l);
                d.push_attribute("server.port", Value::Int(8080), l);
                d.push_attribute("client.address", Value::Str(b"127.0.0.1"), l);
                d.push_attribute("client.port", Value::Int(40000 + (i % 1000) as i64), l);
                d.push_attribute("network.protocol.version", Value::Str(b"1.1"), l);
                d.push_attribute(
                    "user_agent.original",
                    Value::Str(h["user-agent"].as_bytes()),
                    l,
                );
                d.push_attribute("http.route", Value::Str(b"/index.php"), l);
                d.push_attribute("thread.name", Value::Str(b"php-1"), l);
                d.push_attribute("ferrophp.queue_wait_ms", Value::Double(0.01), l);
                d.push_attribute("http.response.body.size", Value::Int(13), l);
                d.set_attribute(b"http.response.status_code", Value::Int(200), l);
                d.set_attribute(b"ferrophp.mode", Value::Str(b"classic"), l);
            });
            server.end_now();
            server.end_now();
        }
        std::hint::black_box(&trace);
    };
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("header lookup only (the baseline loop)", Vec::new()),
        ("not sampled: parse traceparent, sample", Vec::new()),
        (
            "sampled: + server span, 15 attributes, encoded, queued, exported",
            Vec::new(),
        ),
    ];
    for _ in 0..rounds {
        let base = net_cpu(sink, || {
            for i in 0..N {
                std::hint::black_box(headers[i & 1].get("traceparent"));
            }
        });
        let unsampled = net_cpu(sink, || {
            for i in 0..N {
                request(&headers[0], i);
            }
        });
        let sampled = net_cpu(sink, || {
            for i in 0..N {
                request(&headers[1], i);
            }
            drain(tracing);
        });
        rows[0].1.push(base.as_nanos() as f64 / N as f64);
        rows[1]
            .1
            .push((unsampled.as_nanos() as f64 - base.as_nanos() as f64) / N as f64);
        rows[2]
            .1
            .push((sampled.as_nanos() as f64 - base.as_nanos() as f64) / N as f64);
    }
    println!("## The trace crate's per-request calls alone ({N} requests per row, median of {rounds} rounds; CPU of the whole process, exporter thread included, collector excluded)\n");
    println!("| per request | CPU ns (net of the baseline loop) |");
    println!("|---|---:|");
    for (label, v) in rows {
        println!("| {label} | {:.0} |", median(v));
    }
    println!();
}

fn script() -> String {
    repo()
        .join("test-data/tracing/bench/spans.php")
        .display()
        .to_string()
}

/// `requests` sampled requests of `n` calls each (mode `mode`); the loop ns PHP reports.
fn php_phase(
    engine: &Engine,
    tracing: &'static ft::Tracing,
    requests: usize,
    n: usize,
    mode: &str,
    sampled: bool,
) -> u64 {
    let flags = if sampled { "01" } else { "00" };
    let tp = format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}");
    let mut ns = 0;
    for _ in 0..requests {
        let sink = Arc::new(Mutex::new(BufferSink::default()));
        let mut req = ScriptRequest::new(script(), Box::new(sink.clone()));
        req.argv = vec![script(), n.to_string(), mode.to_string()];
        let trace = tracing.start_request(Some(tp.as_bytes()), || None, ft::now_unix_nano);
        req.trace = trace.is_sampled().then_some(trace);
        let rx = engine.submit(req).expect("engine running");
        let outcome = rx.blocking_recv().expect("request finished");
        assert_eq!(outcome.exit_status, 0, "benchmark script failed");
        let body = std::mem::take(&mut sink.lock().unwrap().body);
        ns += String::from_utf8_lossy(&body)
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("script output: {}", String::from_utf8_lossy(&body)));
    }
    ns
}

fn php_part(sink: &Sink, tracing: &'static ft::Tracing, rounds: usize) {
    // `--requests` makes a short run (for a profiler).
    let requests: usize = arg("--requests")
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    const N: usize = 1000;
    let engine = Engine::start(EngineConfig {
        threads: 1,
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .expect("engine starts");
    for mode in ["span", "attrs", "empty"] {
        php_phase(&engine, tracing, 20, N, mode, true);
    }
    drain(tracing);
    let calls = (requests * N) as f64;
    let mut rows: Vec<(&str, Vec<f64>, Vec<f64>)> = Vec::new();
    for (label, mode, sampled) in [
        (
            "Trace::span('db.query')->end(), sampled request",
            "span",
            true,
        ),
        (
            "Trace::span('db.query', [2 attributes])->end(), sampled request",
            "attrs",
            true,
        ),
        (
            "Trace::span('db.query')->end(), request not sampled",
            "span",
            false,
        ),
    ] {
        let (mut cpu_ns, mut loop_ns) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let mut base_loop = 0;
            let base = net_cpu(sink, || {
                base_loop = php_phase(&engine, tracing, requests, N, "empty", sampled);
                drain(tracing);
            });
            let mut run_loop = 0;
            let run = net_cpu(sink, || {
                run_loop = php_phase(&engine, tracing, requests, N, mode, sampled);
                drain(tracing);
            });
            cpu_ns.push((run.as_nanos() as f64 - base.as_nanos() as f64) / calls);
            loop_ns.push((run_loop as f64 - base_loop as f64) / calls);
        }
        rows.push((label, cpu_ns, loop_ns));
    }
    println!("## Trace::span() from PHP ({requests} requests x {N} spans per row, median of {rounds} rounds; each phase minus the same requests running the empty loop)\n");
    println!("| call | CPU ns/span (getrusage, exporter included) | PHP loop ns/span (hrtime) |");
    println!("|---|---:|---:|");
    for (label, c, l) in rows {
        println!("| {label} | {:.0} | {:.0} |", median(c), median(l));
    }
    println!();
    engine.shutdown();
}

fn main() {
    let rounds: usize = arg("--rounds").and_then(|v| v.parse().ok()).unwrap_or(5);
    let seconds: u64 = arg("--seconds").and_then(|v| v.parse().ok()).unwrap_or(5);
    let only = arg("--only");
    let wants = |part: &str| only.as_deref().is_none_or(|o| o == part);
    println!(
        "Command: `{}`\n",
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    if wants("http") {
        http_part(rounds, seconds);
    }
    if wants("rust") || wants("php") {
        let sink = Sink::start();
        let tracing = install_tracing(&sink);
        if wants("rust") {
            rust_part(&sink, tracing, rounds);
        }
        if wants("php") {
            php_part(&sink, tracing, rounds);
        }
        tracing.shutdown(Duration::from_secs(10));
    }
}
