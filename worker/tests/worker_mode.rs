//! Worker mode in process: a worker script boots once per thread and serves many requests
//! through ferrophp_handle_request, with per-request state reset and failures contained.

use std::sync::{Arc, Mutex};

use worker::diagnostics::browser_request;
use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest, Target, WorkerConfig};

fn root() -> String {
    format!("{}/../test-data/worker", env!("CARGO_MANIFEST_DIR"))
}

fn engine() -> &'static Engine {
    static ENGINE: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut counter = WorkerConfig::new(format!("{}/counter.php", root()), 2);
        counter.env.push(("WORKER_NAME".into(), "counter".into()));
        Engine::start(EngineConfig {
            threads: 1,
            workers: vec![counter],
            ini: vec![
                ("display_errors".into(), "0".into()),
                ("log_errors".into(), "1".into()),
            ],
            log_target: LogTarget::Stderr,
            ..EngineConfig::default()
        })
        .expect("engine starts")
    })
}

fn request(target: Target, uri: &str) -> (i32, Option<worker::ResponseHead>, String) {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut cgi = browser_request(&root(), "/counter.php");
    cgi.request_uri = uri.to_string();
    cgi.query_string = uri
        .split_once('?')
        .map_or(String::new(), |(_, q)| q.to_string());
    let mut req = ScriptRequest::new(format!("{}/counter.php", root()), Box::new(sink.clone()));
    req.cgi = Some(cgi);
    let outcome = engine()
        .submit_to(target, req)
        .unwrap()
        .blocking_recv()
        .unwrap();
    let mut s = sink.lock().unwrap();
    (
        outcome.exit_status,
        s.head.take(),
        String::from_utf8_lossy(&s.body).into_owned(),
    )
}

#[test]
fn static_counter_survives_across_requests() {
    let mut max = 0;
    for i in 0..20 {
        let (status, head, body) = request(Target::Worker(0), &format!("/counter.php?i={i}"));
        assert_eq!(status, 0, "{body}");
        assert_eq!(head.unwrap().status, 200);
        assert!(body.contains(&format!(r#""get":{{"i":"{i}"}}"#)), "{body}");
        assert!(body.contains(r#""worker":"1""#), "{body}");
        let count: u64 = body
            .split(r#""count":"#)
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        max = max.max(count);
    }
    assert!(max >= 10, "the counter did not persist (max {max})");
}
