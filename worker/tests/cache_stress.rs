//! Stress: 8 PHP threads store, overwrite, delete and fetch the same hot keys (values of
//! every kind, self-checking), some fetched values kept in variables and statics while
//! others overwrite them, in classic mode and in worker mode (where statics live across
//! HTTP requests). Runs FERROPHP_STRESS_SECS seconds per mode (default 10); run it under
//! valgrind or ASan for the full 60 s (see docs/usercache.md).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use worker::diagnostics::browser_request;
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest, Target, WorkerConfig};

const THREADS: usize = 8;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/cache")
}

fn secs() -> f64 {
    std::env::var("FERROPHP_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0)
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Engine::start(EngineConfig {
            threads: THREADS,
            workers: vec![WorkerConfig::new(root().join("stress_worker.php"), THREADS)],
            ini: vec![
                ("display_errors".into(), "1".into()),
                ("log_errors".into(), "0".into()),
                ("register_argc_argv".into(), "1".into()),
                ("memory_limit".into(), "256M".into()),
                ("usercache.memory_limit".into(), "8M".into()),
            ],
            log_target: LogTarget::Stderr,
            ..EngineConfig::default()
        })
        .expect("engine starts")
    })
}

type Pending = (
    Arc<Mutex<BufferSink>>,
    tokio::sync::oneshot::Receiver<worker::ScriptOutcome>,
);

fn submit(target: Target, request_secs: f64) -> Pending {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = match target {
        Target::Classic => {
            let mut r = ScriptRequest::new(root().join("stress.php"), Box::new(sink.clone()));
            r.argv = vec!["stress.php".into(), request_secs.to_string()];
            r
        }
        Target::Worker(_) => {
            let root_s = root().to_string_lossy().into_owned();
            let mut cgi = browser_request(&root_s, "/stress_worker.php");
            cgi.target = format!("/stress_worker.php?secs={request_secs}").into();
            cgi.headers.remove("cookie");
            let mut r =
                ScriptRequest::new(root().join("stress_worker.php"), Box::new(sink.clone()));
            r.cgi = Some(cgi);
            r
        }
    };
    req.define_std_streams = false;
    let rx = engine().submit_to(target, req).expect("engine running");
    (sink, rx)
}

/// Keeps THREADS requests in flight until the deadline; every one must report "ok".
fn stress(target: Target, request_secs: f64) -> usize {
    let deadline = Instant::now() + Duration::from_secs_f64(secs());
    let mut pending = std::collections::VecDeque::new();
    let mut done = 0;
    let mut ops = 0usize;
    loop {
        while pending.len() < THREADS && Instant::now() < deadline {
            pending.push_back(submit(target, request_secs));
        }
        let Some((sink, rx)) = pending.pop_front() else {
            break;
        };
        let outcome = rx.blocking_recv().expect("request ran");
        let body = String::from_utf8_lossy(&sink.lock().unwrap().body).into_owned();
        assert_eq!(outcome.exit_status, 0, "request failed: {body}");
        assert!(body.starts_with("ok "), "stress check failed: {body}");
        ops += body[3..].trim().parse::<usize>().unwrap_or(0);
        done += 1;
    }
    assert!(done >= THREADS, "only {done} requests ran");
    ops
}

#[test]
fn classic_mode_stress() {
    let ops = stress(Target::Classic, 0.2);
    eprintln!("classic: {ops} cache operations");
}

#[test]
fn worker_mode_stress() {
    let ops = stress(Target::Worker(0), 0.1);
    eprintln!("worker: {ops} cache operations");
}
