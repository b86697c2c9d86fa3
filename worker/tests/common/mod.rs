//! Shared by the worker's integration tests: one engine per test binary (PHP starts once
//! per process), and a helper that runs a `test-data/cli` script and collects its output.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptOutcome, ScriptRequest};

pub const THREADS: usize = 4;

/// xorshift64*: reproducible inputs from one seed, for the randomised tests (each adds
/// the shapes of input it needs through a trait of its own).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub fn test_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/cli")
        .join(name)
}

pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Engine::start(EngineConfig {
            threads: THREADS,
            ini: vec![
                ("display_errors".into(), "0".into()),
                ("log_errors".into(), "0".into()),
                ("register_argc_argv".into(), "1".into()),
            ],
            log_target: LogTarget::Stderr,
            ..EngineConfig::default()
        })
        .expect("engine starts")
    })
}

/// Queues `script` with `$argv = [script, args...]`; returns a closure that waits for it.
pub fn submit(script: &str, args: &[&str]) -> impl FnOnce() -> (ScriptOutcome, Vec<u8>) {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(test_script(script), Box::new(sink.clone()));
    req.argv = std::iter::once(script.to_string())
        .chain(args.iter().map(|s| s.to_string()))
        .collect();
    let rx = engine().submit(req).expect("engine running");
    move || {
        let outcome = rx.blocking_recv().expect("script ran");
        let body = std::mem::take(&mut sink.lock().unwrap().body);
        (outcome, body)
    }
}

pub fn run(script: &str, args: &[&str]) -> (ScriptOutcome, Vec<u8>) {
    submit(script, args)()
}

/// Runs `test-data/input/dump_input.php` with these Cookie headers and query string,
/// through PHP's own `$_COOKIE`/`$_GET` parser or the fast path, and returns the dump
/// (what `input_parsing.rs` and the fuzz replay compare).
pub fn dump_input(engine: &Engine, cookies: &[String], query: &str, php_parser: bool) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../test-data/input");
    worker::diagnostics::use_php_input_parser(php_parser);
    let mut cgi = worker::diagnostics::browser_request(root, "/dump_input.php");
    cgi.headers.remove(http::header::COOKIE);
    for c in cookies {
        cgi.headers.append(
            http::header::COOKIE,
            http::HeaderValue::from_bytes(c.as_bytes()).expect("header value"),
        );
    }
    cgi.target = format!("/dump_input.php?{query}").into();
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(format!("{root}/dump_input.php"), Box::new(sink.clone()));
    req.cgi = Some(cgi);
    engine.run(req).expect("request runs");
    let body = std::mem::take(&mut sink.lock().unwrap().body);
    String::from_utf8_lossy(&body).into_owned()
}
