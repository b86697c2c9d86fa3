//! FrankenPHP's BenchmarkServerSuperGlobal, in process: a full classic request of a script
//! doing `print_r($_SERVER)` with 16 browser headers (2 KB Cookie) and 19 env vars, through
//! the arena path and, side by side, through the naive path (a `CString` per value,
//! `php_register_variable_safe` for every entry).
//!
//! Besides criterion's timings it prints, per path: the time spent building `$_SERVER`
//! (measured on the PHP thread through the diagnostics hook), Rust heap allocations per
//! request (whole request and `$_SERVER` building alone), and the ratios.
//!
//! Run: `cargo bench -p ferrophp-benches --bench superglobals`

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use worker::diagnostics::{self, ServerVarsEvent};
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

struct CountingAlloc;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BUILD_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BUILD_NANOS: AtomicU64 = AtomicU64::new(0);
static BUILDS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static BUILD_START: Cell<Option<Instant>> = const { Cell::new(None) };
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    if BUILD_START.try_with(|s| s.get().is_some()).unwrap_or(false) {
        BUILD_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn hook(event: ServerVarsEvent) {
    match event {
        ServerVarsEvent::Start => BUILD_START.with(|s| s.set(Some(Instant::now()))),
        ServerVarsEvent::End { .. } => {
            if let Some(start) = BUILD_START.with(|s| s.take()) {
                BUILD_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                BUILDS.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn root() -> String {
    format!("{}/../test-data/bench", env!("CARGO_MANIFEST_DIR"))
}

/// The request is built once; each iteration clones it, as cheap as what the HTTP server
/// hands over (a parsed head and shared configuration).
fn request(engine: &Engine) {
    static TEMPLATE: std::sync::OnceLock<(String, worker::CgiRequest)> = std::sync::OnceLock::new();
    let (script, cgi) = TEMPLATE.get_or_init(|| {
        let root = root();
        (
            format!("{root}/print_server.php"),
            diagnostics::browser_request(&root, "/print_server.php"),
        )
    });
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(script, Box::new(sink));
    req.cgi = Some(cgi.clone());
    let outcome = engine.run(req).expect("engine running");
    assert_eq!(outcome.exit_status, 0);
}

struct PathStats {
    request: Duration,
    build: Duration,
    allocations: f64,
    build_allocations: f64,
}

/// A plain timed loop next to criterion's, so the report can show $_SERVER building time
/// and allocations with the same iterations.
fn measure(engine: &Engine, naive: bool, iterations: u64) -> PathStats {
    diagnostics::use_naive_server_vars(naive);
    for _ in 0..200 {
        request(engine);
    }
    for counter in [&ALLOCATIONS, &BUILD_ALLOCATIONS, &BUILD_NANOS, &BUILDS] {
        counter.store(0, Ordering::Relaxed);
    }
    let started = Instant::now();
    for _ in 0..iterations {
        request(engine);
    }
    let elapsed = started.elapsed();
    let builds = BUILDS.load(Ordering::Relaxed).max(1);
    PathStats {
        request: elapsed / iterations as u32,
        build: Duration::from_nanos(BUILD_NANOS.load(Ordering::Relaxed) / builds),
        allocations: ALLOCATIONS.load(Ordering::Relaxed) as f64 / iterations as f64,
        build_allocations: BUILD_ALLOCATIONS.load(Ordering::Relaxed) as f64 / iterations as f64,
    }
}

fn engine() -> &'static Engine {
    static ENGINE: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        diagnostics::set_server_vars_hook(hook);
        Engine::start(EngineConfig {
            threads: 1,
            ini: vec![("register_argc_argv".into(), "0".into())],
            log_target: LogTarget::Stderr,
            ..EngineConfig::default()
        })
        .expect("engine starts")
    })
}

fn bench(c: &mut Criterion) {
    let engine = engine();
    let mut group = c.benchmark_group("server_superglobal");
    for (name, naive) in [("arena", false), ("naive", true)] {
        diagnostics::use_naive_server_vars(naive);
        group.bench_function(name, |b| b.iter(|| request(engine)));
    }
    group.finish();
    diagnostics::use_naive_server_vars(false);
}

fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc_rusage>::zeroed();
    // SAFETY: getrusage writes a struct rusage into the buffer we own.
    unsafe { getrusage(0, usage.as_mut_ptr()) };
    // SAFETY: initialised by getrusage (or zeroed on failure).
    let u = unsafe { usage.assume_init() };
    let tv = |t: [i64; 2]| Duration::new(t[0] as u64, (t[1] * 1000) as u32);
    tv(u.utime) + tv(u.stime)
}

#[repr(C)]
struct libc_rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut libc_rusage) -> i32;
}

fn report() {
    let engine = engine();
    const ITERATIONS: u64 = 5_000;
    let mut rows = Vec::new();
    for round in 0..3 {
        for naive in [false, true] {
            let cpu_before = cpu_time();
            let stats = measure(engine, naive, ITERATIONS);
            let cpu = (cpu_time() - cpu_before) / ITERATIONS as u32;
            rows.push((round, naive, stats, cpu));
        }
    }
    diagnostics::use_naive_server_vars(false);
    println!("\nBenchmarkServerSuperGlobal (in process, {ITERATIONS} requests per run, 3 interleaved rounds)");
    println!(
        "{:<6} {:<6} {:>11} {:>11} {:>14} {:>13} {:>15}",
        "round", "path", "request", "cpu/req", "build $_SERVER", "allocs/req", "allocs/$_SERVER"
    );
    for (round, naive, s, cpu) in &rows {
        println!(
            "{:<6} {:<6} {:>9.1}us {:>9.1}us {:>12.2}us {:>13.1} {:>15.1}",
            round,
            if *naive { "naive" } else { "arena" },
            s.request.as_secs_f64() * 1e6,
            cpu.as_secs_f64() * 1e6,
            s.build.as_secs_f64() * 1e6,
            s.allocations,
            s.build_allocations
        );
    }
    let median = |naive: bool, f: &dyn Fn(&PathStats) -> f64| {
        let mut v: Vec<f64> = rows
            .iter()
            .filter(|r| r.1 == naive)
            .map(|r| f(&r.2))
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let build_ratio =
        median(true, &|s| s.build.as_secs_f64()) / median(false, &|s| s.build.as_secs_f64());
    let request_ratio =
        median(true, &|s| s.request.as_secs_f64()) / median(false, &|s| s.request.as_secs_f64());
    println!(
        "median: arena request {:.1}us, $_SERVER build {:.2}us (naive {:.2}us): build speedup {:.2}x, request speedup {:.2}x",
        median(false, &|s| s.request.as_secs_f64()) * 1e6,
        median(false, &|s| s.build.as_secs_f64()) * 1e6,
        median(true, &|s| s.build.as_secs_f64()) * 1e6,
        build_ratio,
        request_ratio
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).sample_size(50);
    targets = bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
