//! Metrics benchmark (issue 16): what `Ferrophp\Metrics::observe()` costs from PHP at 10,
//! 1,000 and 100,000 observations per interval spread over all PHP threads (flat), and
//! what a flush (merge every thread's shard + encode one push payload) costs against the
//! number of recording threads (linear).
//!
//! Part 1 runs `test-data/metrics/bench/observe.php` in the embedded engine: each
//! interval submits one request per PHP thread sharing the interval's observations,
//! then flushes. Per observation it reports the loop time PHP measures with `hrtime`
//! (minus the same loop without the call) and process CPU time from `getrusage`
//! (recording phase minus an identical phase running the empty loop), divided by the
//! number of observations.
//!
//! Part 2 keeps T Rust threads alive, each holding S series (sketches of 200 values),
//! and times `Pusher::collect` (snapshot + encode) with the flushing thread's own CPU
//! time (`RUSAGE_THREAD`).
//!
//! Run: `cargo run --release -p ferrophp-benches --bin metrics_bench -- [--threads 4]
//! [--total 200000]`

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrophp_metrics::push::Pusher;
use ferrophp_metrics::{Config, Op, Registry, TagBuf};
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

fn cpu(who: libc::c_int) -> Duration {
    // SAFETY: rusage is plain integers and timevals, for which all zeros is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct we pass, which lives for the call.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn script() -> String {
    format!(
        "{}/../test-data/metrics/bench/observe.php",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// One request per PHP thread, each running `reps` intervals of its share of `n` calls;
/// the first also takes a snapshot (the flush's merge) after each interval. Returns the
/// call-loop ns the scripts reported.
fn run_phase(engine: &Engine, threads: usize, n: usize, reps: usize, mode: &str) -> u64 {
    let mut waits = Vec::with_capacity(threads);
    for j in 0..threads {
        let share = n / threads + usize::from(j < n % threads);
        let sink = Arc::new(Mutex::new(BufferSink::default()));
        let mut req = ScriptRequest::new(script(), Box::new(sink.clone()));
        req.argv = vec![
            script(),
            share.to_string(),
            mode.to_string(),
            reps.to_string(),
            if j == 0 { "1" } else { "0" }.to_string(),
        ];
        waits.push((engine.submit(req).expect("engine running"), sink));
    }
    let mut ns = 0;
    for (rx, sink) in waits {
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

struct Phase {
    loop_ns: u64,
    cpu: Duration,
}

fn phase(engine: &Engine, threads: usize, n: usize, reps: usize, mode: &str) -> Phase {
    let cpu0 = cpu(libc::RUSAGE_SELF);
    let loop_ns = run_phase(engine, threads, n, reps, mode);
    Phase {
        loop_ns,
        cpu: cpu(libc::RUSAGE_SELF) - cpu0,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn php_part(threads: usize, total: usize, rounds: usize) {
    let engine = Engine::start(EngineConfig {
        threads,
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .expect("engine starts");
    // Warm up: OPcache, the series, each thread's shard.
    for mode in ["observe", "observe0", "increment", "empty"] {
        phase(&engine, threads, 1000, 5, mode);
    }
    println!(
        "## observe() from PHP ({threads} PHP threads, {total} calls per row, median of {rounds} rounds)\n"
    );
    println!("| call | calls/interval (all threads) | intervals | PHP loop ns/call | net of empty loop | CPU ns/call (getrusage, net of empty loop) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for mode in ["observe", "observe0", "increment"] {
        for n in [10usize, 1_000, 100_000] {
            let reps = (total / n).max(1);
            let obs = (reps * n) as f64;
            let (mut per, mut net, mut cpu_net) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                // Interleaved so drift from other load hits both alike.
                let base = phase(&engine, threads, n, reps, "empty");
                let run = phase(&engine, threads, n, reps, mode);
                per.push(run.loop_ns as f64 / obs);
                net.push((run.loop_ns as f64 - base.loop_ns as f64) / obs);
                cpu_net.push((run.cpu.as_nanos() as f64 - base.cpu.as_nanos() as f64) / obs);
            }
            let label = match mode {
                "observe" => "observe(name, v, [1 tag])",
                "observe0" => "observe(name, v)",
                _ => "increment(name, 1, [1 tag])",
            };
            println!(
                "| {label} | {n} | {reps} | {:.1} | {:.1} | {:.1} |",
                median(per),
                median(net),
                median(cpu_net)
            );
        }
    }
    println!();
    engine.shutdown();
}

/// The Rust side alone (no PHP call): `record()` with a name and one tag (key building,
/// hash lookup, the shard's uncontended mutex, the sketch), `record_series()` by
/// pre-resolved id (what the server's latency recording does), and `record()` while
/// another thread scrapes in a loop (the only contention the shard mutex ever sees).
fn rust_part() {
    const N: usize = 2_000_000;
    let registry = Registry::new(Config::default());
    let mut tags = TagBuf::new();
    tags.push(b"route", b"/api/items");
    let time = |f: &mut dyn FnMut(usize)| {
        let c0 = cpu(libc::RUSAGE_THREAD);
        for i in 0..N {
            f(i);
        }
        (cpu(libc::RUSAGE_THREAD) - c0).as_nanos() as f64 / N as f64
    };
    let value = |i: usize| 0.001 + (i & 1023) as f64 * 0.0001;
    let r = registry.clone();
    let t = tags.clone_buf();
    let _ = time(&mut |i| {
        r.record(b"rust_bench_seconds", &t, Op::Observe(value(i)))
            .unwrap();
    });
    let record = time(&mut |i| {
        r.record(b"rust_bench_seconds", &t, Op::Observe(value(i)))
            .unwrap();
    });
    let id = r
        .series(
            b"rust_bench_by_id_seconds",
            &t,
            ferrophp_metrics::Kind::Distribution,
        )
        .unwrap()
        .unwrap();
    let by_id = time(&mut |i| r.record_series(id, Op::Observe(value(i))));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scraper = {
        let r = r.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::black_box(r.snapshot());
                n += 1;
            }
            n
        })
    };
    let contended = time(&mut |i| {
        r.record(b"rust_bench_seconds", &t, Op::Observe(value(i)))
            .unwrap();
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let scrapes = scraper.join().unwrap();
    println!("## the Rust side alone (CPU of the recording thread, {N} calls)\n");
    println!("| call | CPU ns/call |");
    println!("|---|---:|");
    println!("| record(name, [1 tag], observe) | {record:.1} |");
    println!("| record_series(id, observe) | {by_id:.1} |");
    println!("| record(name, [1 tag], observe) while another thread scrapes nonstop ({scrapes} scrapes) | {contended:.1} |");
    println!();
}

fn flush_part() {
    const SERIES: usize = 50;
    const VALUES: usize = 200;
    const REPS: usize = 200;
    println!("## flush (snapshot + encode one payload) vs recording threads ({SERIES} series per thread, {VALUES} values each)\n");
    println!("| threads | shards x series | flush us (wall) | flush us (CPU, RUSAGE_THREAD) | CPU ns per shard-series | payload bytes |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for threads in [1usize, 2, 4, 8, 16, 32] {
        let registry = Registry::new(Config::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let stop_rx = Arc::new(Mutex::new(stop_rx));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let registry = registry.clone();
                let ready = ready_tx.clone();
                let stop = stop_rx.clone();
                std::thread::spawn(move || {
                    let mut tags = TagBuf::new();
                    for s in 0..SERIES {
                        tags.clear();
                        tags.push(b"route", format!("/r{s}").as_bytes());
                        for i in 0..VALUES {
                            let v = 0.0005 * (1 + (i * 37 + t * 11) % 2000) as f64;
                            registry
                                .record(b"bench_flush_seconds", &tags, Op::Observe(v))
                                .unwrap();
                        }
                    }
                    ready.send(()).unwrap();
                    // Stay alive so this thread's shard stays a live shard.
                    let _ = stop.lock().unwrap().recv();
                })
            })
            .collect();
        for _ in 0..threads {
            ready_rx.recv().unwrap();
        }
        // Each rep merges and encodes everything (a fresh Pusher has no previous state).
        let mut wall = Duration::ZERO;
        let mut cpu_t = Duration::ZERO;
        let mut bytes = 0;
        for _ in 0..REPS {
            let mut p = Pusher::new(1);
            let c0 = cpu(libc::RUSAGE_THREAD);
            let t0 = Instant::now();
            p.collect(&registry, 0, 1000);
            wall += t0.elapsed();
            cpu_t += cpu(libc::RUSAGE_THREAD) - c0;
            bytes = p.front().map_or(0, <[u8]>::len);
        }
        for _ in 0..threads {
            stop_tx.send(()).unwrap();
        }
        for h in handles {
            h.join().unwrap();
        }
        let cells = threads * SERIES;
        let wall_us = wall.as_secs_f64() * 1e6 / REPS as f64;
        let cpu_us = cpu_t.as_secs_f64() * 1e6 / REPS as f64;
        println!(
            "| {threads} | {cells} | {wall_us:.0} | {cpu_us:.0} | {:.0} | {bytes} |",
            cpu_us * 1000.0 / cells as f64
        );
    }
    println!();
}

fn main() {
    let threads = arg("--threads", 2);
    let total = arg("--total", 1_000_000);
    let rounds = arg("--rounds", 3);
    if !std::env::args().any(|a| a == "--flush-only") {
        php_part(threads, total, rounds);
    }
    rust_part();
    flush_part();
}
