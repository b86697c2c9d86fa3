//! Worker mode in process: a worker script boots once per thread and serves many requests
//! through ferrophp_handle_request, with per-request state reset and failures contained.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use worker::diagnostics::browser_request;
use worker::{
    BufferSink, Engine, EngineConfig, LogTarget, ResponseHead, ScriptRequest, Target, WorkerConfig,
};

const COUNTER: Target = Target::Worker(0);
const ISOLATION: Target = Target::Worker(1);
const FAILURES: Target = Target::Worker(2);
const MAXREQ: Target = Target::Worker(3);
const MEMORY: Target = Target::Worker(4);
const MAX_REQUESTS: u64 = 5;

fn root() -> String {
    format!("{}/../test-data/worker", env!("CARGO_MANIFEST_DIR"))
}

fn engine() -> &'static Engine {
    static ENGINE: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut maxreq = WorkerConfig::new(format!("{}/maxreq.php", root()), 1);
        maxreq.max_requests = MAX_REQUESTS;
        Engine::start(EngineConfig {
            threads: 1,
            workers: vec![
                WorkerConfig::new(format!("{}/counter.php", root()), 2),
                WorkerConfig::new(format!("{}/isolation.php", root()), 1),
                WorkerConfig::new(format!("{}/failures.php", root()), 1),
                maxreq,
                WorkerConfig::new(format!("{}/memory.php", root()), 1),
            ],
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

struct Reply {
    exit_status: i32,
    head: ResponseHead,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head
            .headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }
}

fn request(target: Target, script: &str, query: &str, headers: &[(&str, &str)]) -> Reply {
    request_with_body(target, script, query, headers, Vec::new())
}

fn request_with_body(
    target: Target,
    script: &str,
    query: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut cgi = browser_request(&root(), &format!("/{script}"));
    cgi.target = format!("/{script}?{query}").into();
    cgi.headers.remove("cookie");
    for (name, value) in headers {
        cgi.headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(value).unwrap(),
        );
    }
    if !body.is_empty() {
        cgi.method = http::Method::POST;
        cgi.headers
            .insert(http::header::CONTENT_LENGTH, body.len().into());
    }
    let mut req = ScriptRequest::new(format!("{}/{script}", root()), Box::new(sink.clone()));
    req.cgi = Some(cgi);
    req.body = Box::new(std::io::Cursor::new(body));
    let outcome = engine()
        .submit_to(target, req)
        .unwrap()
        .blocking_recv()
        .unwrap();
    let mut s = sink.lock().unwrap();
    Reply {
        exit_status: outcome.exit_status,
        head: s.head.take().expect("a response head"),
        body: String::from_utf8_lossy(&s.body).into_owned(),
    }
}

#[test]
fn static_counter_survives_across_requests() {
    let mut max = 0;
    for i in 0..20 {
        let r = request(COUNTER, "counter.php", &format!("i={i}"), &[]);
        assert_eq!(r.exit_status, 0, "{}", r.body);
        assert_eq!(r.head.status, 200);
        assert!(
            r.body.contains(&format!(r#""get":{{"i":"{i}"}}"#)),
            "{}",
            r.body
        );
        // FRANKENPHP_WORKER is the worker script's (boot $_SERVER), not the request's.
        assert!(r.body.contains(r#""worker":null"#), "{}", r.body);
        let count: u64 = r
            .body
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

#[test]
fn superglobals_status_and_headers_never_leak_between_requests() {
    for i in 0..30 {
        let a = request(
            ISOLATION,
            "isolation.php",
            &format!("a={i}&status=418"),
            &[("x-client", "A"), ("cookie", "ca=1")],
        );
        assert_eq!(a.head.status, 418);
        assert_eq!(a.header("x-leak").as_deref(), Some("418"));
        assert!(
            a.body
                .contains(&format!(r#""get":{{"a":"{i}","status":"418"}}"#)),
            "{}",
            a.body
        );
        assert!(a.body.contains(r#""cookie":{"ca":"1"}"#), "{}", a.body);
        assert!(a.body.contains(r#""client":"A""#), "{}", a.body);

        let b = request(ISOLATION, "isolation.php", "b=2", &[]);
        assert_eq!(b.head.status, 200, "status leaked: {}", b.body);
        assert_eq!(b.header("x-leak"), None, "header leaked");
        assert!(b.body.contains(r#""get":{"b":"2"}"#), "{}", b.body);
        assert!(b.body.contains(r#""cookie":[]"#), "{}", b.body);
        assert!(b.body.contains(r#""request":{"b":"2"}"#), "{}", b.body);
        assert!(b.body.contains(r#""client":null"#), "{}", b.body);
        assert!(b.body.contains(r#""status":200"#), "{}", b.body);
        assert!(
            b.body.contains(r#""ob_level":1"#) || b.body.contains(r#""ob_level":0"#),
            "{}",
            b.body
        );
    }
}

#[test]
fn sessions_never_leak_between_clients() {
    let mut cookies: HashMap<&str, String> = HashMap::new();
    for round in 0..10 {
        for user in ["alice", "bob"] {
            let cookie = cookies.get(user).cloned();
            let query = if cookie.is_none() {
                format!("login={user}")
            } else {
                String::new()
            };
            let headers: Vec<(&str, &str)> = cookie
                .as_deref()
                .map(|c| vec![("cookie", c)])
                .unwrap_or_default();
            let r = request(ISOLATION, "isolation.php", &query, &headers);
            assert!(
                r.body
                    .contains(&format!(r#""session":{{"user":"{user}"}}"#)),
                "round {round} {user}: {}",
                r.body
            );
            if let Some(set) = r.header("set-cookie") {
                cookies.insert(user, set.split(';').next().unwrap().to_string());
            }
            // A client without a cookie right after must see no session at all.
            let anon = request(ISOLATION, "isolation.php", "", &[]);
            assert!(
                anon.body.contains(r#""session":null"#),
                "session leaked to anonymous: {}",
                anon.body
            );
        }
    }
}

#[test]
fn uncaught_exception_gives_500_and_the_worker_goes_on() {
    let before = request(FAILURES, "failures.php", "do=ok", &[]);
    let boot = before.body.split(':').next().unwrap().to_string();
    for what in ["throw", "error"] {
        let r = request(FAILURES, "failures.php", &format!("do={what}"), &[]);
        assert_eq!(r.head.status, 500, "{what}");
    }
    let after = request(FAILURES, "failures.php", "do=ok", &[]);
    assert!(
        after.body.starts_with(&format!("{boot}:")),
        "the worker was rebooted: {} vs {boot}",
        after.body
    );
}

#[test]
fn exit_and_fatal_give_500_and_reboot_the_worker() {
    for what in ["exit", "fatal"] {
        let before = request(FAILURES, "failures.php", "do=ok", &[]);
        let boot = before.body.split(':').next().unwrap().to_string();
        let r = request(FAILURES, "failures.php", &format!("do={what}"), &[]);
        assert_eq!(r.head.status, 500, "{what}: {}", r.body);
        assert_ne!(r.exit_status, 0);
        let after = request(FAILURES, "failures.php", "do=ok", &[]);
        assert!(
            !after.body.starts_with(&format!("{boot}:")),
            "{what} did not reboot the worker"
        );
        assert!(
            after.body.ends_with(":1"),
            "{what}: new boot should be fresh: {}",
            after.body
        );
    }
    // exit() after output: the output is the response.
    let r = request(FAILURES, "failures.php", "do=echo-exit", &[]);
    assert_eq!(r.head.status, 200);
    assert_eq!(r.body, "partial");
}

#[test]
fn max_requests_rebuilds_the_thread_without_failing_a_request() {
    let mut boots: HashMap<String, u64> = HashMap::new();
    for _ in 0..(MAX_REQUESTS * 4) {
        let r = request(MAXREQ, "maxreq.php", "", &[]);
        assert_eq!(r.head.status, 200);
        let (boot, served) = r.body.split_once(':').unwrap();
        let served: u64 = served.parse().unwrap();
        assert!(served <= MAX_REQUESTS, "a boot served {served} requests");
        boots.insert(boot.to_string(), served);
    }
    assert!(boots.len() >= 4, "expected at least 4 boots, got {boots:?}");
}

#[test]
fn worker_requests_do_not_leak_php_memory() {
    let usage = |i: usize| -> i64 {
        let r = request_with_body(
            MEMORY,
            "memory.php",
            &format!("i={i}&list[]=a&list[]=b"),
            &[("cookie", "c=1; d=2"), ("content-type", "text/plain")],
            vec![b'x'; 4096],
        );
        assert_eq!(r.head.status, 200);
        r.body.parse().unwrap()
    };
    for i in 0..20 {
        usage(i);
    }
    let before = usage(20);
    for i in 0..500 {
        usage(i);
    }
    let after = usage(521);
    // Superglobals are rebuilt every request; the previous ones must be freed.
    assert!(
        after - before < 4096,
        "PHP memory grew by {} bytes over 500 requests",
        after - before
    );
}
