//! How often a worker request crosses between Rust and C, counted by valgrind's callgrind
//! on a real server: the request's lifecycle lives in worker/c/request_scope.c, which
//! calls Rust at three moments (next request, respond, done), and that Rust code calls no
//! C at all. Issue 26's budget is six crossings per request.
//!
//! What is counted, from the call graph callgrind records inside
//! `zif_ferrophp_handle_request` over many hello-world requests:
//! - C -> Rust: calls from our C files (worker/c/, php-sys/shim.c) into Rust functions;
//! - Rust -> C: calls into C (our shim or PHP's engine) from any Rust function reachable
//!   from those entries through Rust calls alone. A Rust helper reached both from the
//!   lifecycle and from elsewhere counts fully, so the number can only err upwards.
//!
//! Not counted, but printed: the SAPI callbacks PHP's engine makes while the script runs
//! (output, headers, `$_SERVER`), which are the request's own I/O and happen in every
//! design of a SAPI.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Server;

fn compare_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/compare")
        .canonicalize()
        .expect("test-data/compare exists")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Rust,
    /// Our C (worker/c/, php-sys's shim).
    Shim,
    /// PHP's engine and extensions.
    Php,
    /// libc and everything else: not a crossing.
    Other,
}

#[derive(Default)]
struct CallGraph {
    /// Where each function that ran is defined: its object and source file.
    defined: HashMap<String, (String, String)>,
    /// (caller, callee) -> calls, with the callee's object and file as the call gave them.
    calls: BTreeMap<(String, String), u64>,
    callee_hint: HashMap<String, (String, String)>,
}

/// Drops the recursion level callgrind appends (`f'2`).
fn base_name(name: &str) -> String {
    match name.rsplit_once('\'') {
        Some((base, level)) if level.chars().all(|c| c.is_ascii_digit()) => base.to_owned(),
        _ => name.to_owned(),
    }
}

/// Reads callgrind's output (written with `--compress-strings=no`).
fn parse(text: &str) -> CallGraph {
    let mut graph = CallGraph::default();
    let (mut ob, mut fl, mut func) = (String::new(), String::new(), String::new());
    let (mut cob, mut cfl, mut cfn): (Option<String>, Option<String>, Option<String>) =
        (None, None, None);
    let mut pending_calls: Option<u64> = None;
    for line in text.lines() {
        // The line after `calls=` holds the call's cost, which is not needed.
        if let Some(count) = pending_calls.take() {
            let callee = cfn.take().expect("calls= follows cfn=");
            let callee_ob = cob.take().unwrap_or_else(|| ob.clone());
            let callee_fl = cfl.take().unwrap_or_else(|| fl.clone());
            graph
                .callee_hint
                .entry(callee.clone())
                .or_insert((callee_ob, callee_fl));
            *graph.calls.entry((func.clone(), callee)).or_default() += count;
            continue;
        }
        if let Some(v) = line.strip_prefix("ob=") {
            ob = v.to_owned();
        } else if let Some(v) = line.strip_prefix("fl=") {
            fl = v.to_owned();
        } else if let Some(v) = line.strip_prefix("fn=") {
            func = base_name(v);
            graph
                .defined
                .entry(func.clone())
                .or_insert((ob.clone(), fl.clone()));
        } else if let Some(v) = line.strip_prefix("cob=") {
            cob = Some(v.to_owned());
        } else if let Some(v) = line
            .strip_prefix("cfl=")
            .or_else(|| line.strip_prefix("cfi="))
        {
            cfl = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("cfn=") {
            cfn = Some(base_name(v));
        } else if let Some(v) = line.strip_prefix("calls=") {
            let count = v.split_whitespace().next().unwrap_or("0");
            pending_calls = Some(count.parse().expect("calls= count"));
        }
    }
    graph
}

impl CallGraph {
    fn side(&self, function: &str) -> Side {
        let Some((object, file)) = self
            .defined
            .get(function)
            .or_else(|| self.callee_hint.get(function))
        else {
            return Side::Other;
        };
        let c_source = file.ends_with(".c") || file.ends_with(".h");
        if file.ends_with(".rs") {
            Side::Rust
        } else if c_source && (file.contains("/worker/c/") || file.contains("/php-sys/")) {
            Side::Shim
        } else if object.contains("libphp") || (c_source && object.ends_with("/ferrophp")) {
            // libphp.so, or PHP linked into the binary (FERROPHP_PHP_LINK=static).
            Side::Php
        } else {
            Side::Other
        }
    }
}

/// The crossings of the lifecycle, and of PHP's callbacks, each as (caller, callee, calls).
struct Crossings {
    lifecycle: Vec<(String, String, u64)>,
    callbacks: Vec<(String, String, u64)>,
}

fn crossings(graph: &CallGraph) -> Crossings {
    let mut lifecycle = Vec::new();
    let mut callbacks = Vec::new();
    // Rust entered from our C: the lifecycle's Rust side, and all it reaches in Rust.
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    for ((caller, callee), &n) in &graph.calls {
        if graph.side(callee) != Side::Rust {
            continue;
        }
        match graph.side(caller) {
            Side::Shim => {
                lifecycle.push((caller.clone(), callee.clone(), n));
                reached.insert(callee);
            }
            Side::Php => callbacks.push((caller.clone(), callee.clone(), n)),
            _ => {}
        }
    }
    let mut frontier: Vec<&str> = reached.iter().copied().collect();
    while let Some(f) = frontier.pop() {
        for (caller, callee) in graph.calls.keys() {
            if caller == f && graph.side(callee) == Side::Rust && reached.insert(callee) {
                frontier.push(callee);
            }
        }
    }
    for ((caller, callee), &n) in &graph.calls {
        if reached.contains(caller.as_str()) && matches!(graph.side(callee), Side::Shim | Side::Php)
        {
            lifecycle.push((caller.clone(), callee.clone(), n));
        }
    }
    Crossings {
        lifecycle,
        callbacks,
    }
}

fn total(edges: &[(String, String, u64)]) -> u64 {
    edges.iter().map(|(_, _, n)| n).sum()
}

/// A Rust symbol's path without its hash (`_ZN7runtime3php6thing17h0123E` ->
/// `worker::php::thing`); anything else as it is. callgrind runs with `--demangle=no`:
/// demangled names lose the hash, and with it the difference between two
/// monomorphisations of one generic function, which would join unrelated callers.
fn readable(symbol: &str) -> String {
    let Some(mut rest) = symbol.strip_prefix("_ZN") else {
        return symbol.to_owned();
    };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&i| i > 0) {
        let Ok(len) = rest[..digits].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(digits..digits + len) else {
            break;
        };
        parts.push(part);
        rest = &rest[digits + len..];
    }
    if parts
        .last()
        .is_some_and(|p| p.starts_with('h') && p.len() == 17)
    {
        parts.pop();
    }
    parts.join("::")
}

fn listing(edges: &[(String, String, u64)]) -> String {
    edges
        .iter()
        .map(|(caller, callee, n)| {
            format!("  {n:>6}  {} -> {}", readable(caller), readable(callee))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_worker_request_crosses_between_rust_and_c_at_most_six_times() {
    const REQUESTS: u64 = 60;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("callgrind.out");
    let root = compare_root();
    let worker = format!("{},1", root.join("worker.php").display());
    let mut server = Server::start_under_callgrind(
        &root,
        &["--threads", "1", "--worker", &worker],
        &[],
        &out,
        &["zif_ferrophp_handle_request"],
    );
    for _ in 0..REQUESTS {
        let response = server.get("/worker.php/hello");
        assert_eq!(response.status, 200, "{}", server.stderr());
        assert_eq!(response.text(), "Hello, World!");
    }
    server.sigterm();
    assert!(
        server.wait_exit(Duration::from_secs(180)).is_some(),
        "the server did not exit; stderr:\n{}",
        server.stderr()
    );
    let text = std::fs::read_to_string(&out).expect("callgrind wrote its output");
    let graph = parse(&text);
    assert!(
        graph.defined.contains_key("zif_ferrophp_handle_request"),
        "callgrind saw no worker request; stderr:\n{}",
        server.stderr()
    );
    let found = crossings(&graph);
    let per_request = total(&found.lifecycle) as f64 / REQUESTS as f64;
    let report = format!(
        "lifecycle crossings: {} in {REQUESTS} requests = {per_request:.2} per request\n{}\n\
         PHP's callbacks into Rust (the request's I/O, not counted): {} = {:.2} per request\n{}",
        total(&found.lifecycle),
        listing(&found.lifecycle),
        total(&found.callbacks),
        total(&found.callbacks) as f64 / REQUESTS as f64,
        listing(&found.callbacks),
    );
    eprintln!("{report}");
    // The three Rust moments of each request must have been seen, or the count is empty
    // for the wrong reason.
    for entry in [
        "ferrophp_worker_next",
        "ferrophp_worker_respond",
        "ferrophp_worker_done",
    ] {
        let seen: u64 = found
            .lifecycle
            .iter()
            .filter(|(_, callee, _)| callee == entry)
            .map(|(_, _, n)| n)
            .sum();
        assert!(seen >= REQUESTS, "{entry} called {seen} times\n{report}");
    }
    assert!(per_request <= 6.0, "{report}");
}
