//! Every PHP thread runs in the `SCHED_BATCH` class (`spawn.rs`'s one `sched_setscheduler`
//! call), whichever way it was spawned: the classic floor, threads the autoscaler adds, a
//! worker's floor, and the fresh thread that replaces a worker thread after each of its
//! `max_requests` (here 1, so every worker request spawns one). Randomised over request
//! sequences from empty to long, in parallel bursts from 1 to past the pool's ceiling,
//! mixing classic and worker requests; after each burst every `php-*` thread of this
//! process must be batch, and this test's own threads must not be.
//!
//! It drives code at the FFI edge, so it also runs under valgrind:
//! `USE_ZEND_ALLOC=0 valgrind --error-exitcode=99 --suppressions=test-data/valgrind/php.supp
//!  target/debug/deps/thread_class-*`

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Rng;
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest, Target, WorkerConfig};

const SCHED_OTHER: u32 = 0;
const SCHED_BATCH: u32 = 3;
/// The classic pool's ceiling (floor 1), so bursts past it make the autoscaler spawn.
const CLASSIC_MAX: usize = 3;

fn script(dir: &str, name: &str) -> String {
    format!("{}/../test-data/{dir}/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn engine() -> Engine {
    let mut worker = WorkerConfig::new(script("worker", "maxreq.php"), 2);
    worker.max_requests = 1;
    Engine::start(EngineConfig {
        threads: 1,
        max_threads: CLASSIC_MAX,
        max_idle_time: Duration::from_millis(50),
        workers: vec![worker],
        ini: vec![("display_errors".into(), "0".into())],
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .expect("engine starts")
}

/// Each thread of this process: its name and scheduling policy (`/proc/self/task`).
fn threads() -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let (Ok(name), Ok(stat)) = (
            std::fs::read_to_string(task.path().join("comm")),
            std::fs::read_to_string(task.path().join("stat")),
        ) else {
            continue; // ended meanwhile
        };
        out.push((name.trim().to_string(), policy(&stat)));
    }
    out
}

/// The scheduling policy in a `/proc/.../stat` line: field 41, counted after the name in
/// parentheses (which may hold spaces).
fn policy(stat: &str) -> u32 {
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(38).unwrap().parse().unwrap()
}

/// The threads spawn.rs starts: `php-N` and `php-worker-N` (not `php-main`, which runs
/// PHP's start-up, nor the autoscaler's `*-scale` watchers).
fn is_php_thread(name: &str) -> bool {
    name.starts_with("php-") && name != "php-main" && !name.ends_with("-scale")
}

/// Polls until every PHP thread is batch (a thread spawned a moment ago may still be
/// about to make the call); the threads that were not, if time runs out.
fn php_threads_not_batch() -> Vec<(String, u32)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let wrong: Vec<_> = threads()
            .into_iter()
            .filter(|(name, policy)| is_php_thread(name) && *policy != SCHED_BATCH)
            .collect();
        if wrong.is_empty() || Instant::now() > deadline {
            return wrong;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn request(engine: &Engine, target: Target) {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let file = match target {
        Target::Classic => script("cli", "hello.php"),
        Target::Worker(_) => script("worker", "maxreq.php"),
    };
    let req = ScriptRequest::new(file, Box::new(sink.clone()));
    let outcome = engine
        .submit_to(target, req)
        .unwrap()
        .blocking_recv()
        .unwrap();
    assert_eq!(outcome.exit_status, 0);
    assert!(!sink.lock().unwrap().body.is_empty());
}

#[test]
fn every_php_thread_is_batch_however_it_was_spawned() {
    let engine = engine();
    assert_eq!(
        php_threads_not_batch(),
        [],
        "the floors, before any request"
    );
    let seed = std::env::var("THREAD_CLASS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c1a55);
    let mut rng = Rng(seed);
    let mut spawned_php = std::collections::BTreeSet::new();
    // Sequences of bursts: none, one, a few, many; each burst 1 to CLASSIC_MAX + 2 wide.
    for bursts in [0, 1, 2, 7, 20] {
        for _ in 0..bursts {
            let width = 1 + rng.below(CLASSIC_MAX + 2);
            let targets: Vec<Target> = (0..width)
                .map(|_| match rng.below(2) {
                    0 => Target::Classic,
                    _ => Target::Worker(0),
                })
                .collect();
            std::thread::scope(|s| {
                for &target in &targets {
                    let engine = &engine;
                    s.spawn(move || request(engine, target));
                }
            });
            assert_eq!(php_threads_not_batch(), [], "seed {seed:#x}");
            spawned_php.extend(
                threads()
                    .into_iter()
                    .map(|(name, _)| name)
                    .filter(|name| is_php_thread(name)),
            );
        }
    }
    // Replacements and autoscaled threads were among them (names are numbered on).
    assert!(
        spawned_php.iter().any(|n| n.starts_with("php-worker-")),
        "{spawned_php:?}"
    );
    assert!(spawned_php.len() > 3, "{spawned_php:?}");
    // This test's own thread stayed in the normal class.
    let me = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    assert_eq!(policy(&me), SCHED_OTHER);
    engine.shutdown();
}
