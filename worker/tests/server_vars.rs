//! `$_SERVER` from the per-thread arena: zero Rust heap allocations in steady state, an
//! arena that stops growing after the first request of a shape, and the same entries as
//! the naive reference path.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use worker::diagnostics::{self, ServerVarsEvent};
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

/// Counts allocations made by the thread that is building `$_SERVER`, only while it is.
struct CountingAlloc;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static BUILDS: AtomicUsize = AtomicUsize::new(0);
static ARENA_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);
static ARENA_MAX: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if MEASURING.try_with(|m| m.get()).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if MEASURING.try_with(|m| m.get()).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn hook(event: ServerVarsEvent) {
    match event {
        ServerVarsEvent::Start => MEASURING.with(|m| m.set(true)),
        ServerVarsEvent::End { arena_bytes } => {
            MEASURING.with(|m| m.set(false));
            BUILDS.fetch_add(1, Ordering::Relaxed);
            ARENA_MIN.fetch_min(arena_bytes, Ordering::Relaxed);
            ARENA_MAX.fetch_max(arena_bytes, Ordering::Relaxed);
        }
    }
}

fn root() -> String {
    format!("{}/../test-data/bench", env!("CARGO_MANIFEST_DIR"))
}

fn run(engine: &Engine) -> Vec<u8> {
    let root = root();
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(format!("{root}/print_server.php"), Box::new(sink.clone()));
    req.cgi = Some(diagnostics::browser_request(&root, "/print_server.php"));
    let outcome = engine.run(req).expect("engine running");
    assert_eq!(outcome.exit_status, 0);
    let body = std::mem::take(&mut sink.lock().unwrap().body);
    body
}

/// Drops the entries that differ between any two requests.
fn stable_lines(dump: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(dump)
        .lines()
        .filter(|l| !l.contains("[REQUEST_TIME"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn building_server_vars_allocates_nothing_in_steady_state() {
    assert!(diagnostics::set_server_vars_hook(hook));
    let engine = Engine::start(EngineConfig {
        threads: 1,
        ini: vec![("register_argc_argv".into(), "0".into())],
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .unwrap();

    // Both paths must produce the same $_SERVER.
    diagnostics::use_naive_server_vars(true);
    let naive = stable_lines(&run(&engine));
    diagnostics::use_naive_server_vars(false);
    let fast = stable_lines(&run(&engine));
    assert!(naive.len() > 40, "too few lines: {naive:?}");
    assert_eq!(fast, naive, "arena path and naive path disagree");
    let text = fast.join("\n");
    for expected in [
        "[HTTP_COOKIE] => cookie_00=value",
        "[HTTP_USER_AGENT] => Mozilla/5.0",
        "[DATABASE_URL] => postgresql://",
        "[SERVER_PORT] => 8080",
        "[REMOTE_PORT] => 51234",
        "[SCRIPT_NAME] => /print_server.php",
    ] {
        assert!(text.contains(expected), "missing {expected}");
    }

    // Warm up, then measure.
    for _ in 0..10 {
        run(&engine);
    }
    ALLOCATIONS.store(0, Ordering::Relaxed);
    BUILDS.store(0, Ordering::Relaxed);
    ARENA_MIN.store(usize::MAX, Ordering::Relaxed);
    ARENA_MAX.store(0, Ordering::Relaxed);
    for _ in 0..1000 {
        run(&engine);
    }
    assert_eq!(
        BUILDS.load(Ordering::Relaxed),
        1000,
        "$_SERVER was not built per request"
    );
    assert_eq!(
        ALLOCATIONS.load(Ordering::Relaxed),
        0,
        "Rust heap allocations while building $_SERVER"
    );
    assert_eq!(
        ARENA_MIN.load(Ordering::Relaxed),
        ARENA_MAX.load(Ordering::Relaxed),
        "the arena grew after the first request of this shape"
    );

    // The naive path allocates, so the counter can see allocations at all.
    diagnostics::use_naive_server_vars(true);
    run(&engine);
    assert!(
        ALLOCATIONS.load(Ordering::Relaxed) > 50,
        "the counter does not count"
    );
    diagnostics::use_naive_server_vars(false);
    engine.shutdown();
}
