//! Traces end to end: the real server exports to a real collector
//! (`test-data/tracing/receiver.py`, which decodes every POST with the reference schema,
//! PyPI `opentelemetry-proto`). Checked: a trace continues from the incoming
//! `traceparent` (and `tracestate`), PHP spans are children of the server span and of
//! each other, attributes, events and status arrive as set, uncaught exceptions mark the
//! server span, requests not sampled export nothing but still propagate, no span is lost
//! at shutdown (worker threads replaced mid-run included), a collector that is down or
//! hangs costs the requests nothing and its drops are counted, and bad input from PHP
//! throws or is capped without breaking the request. Classic and worker mode.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::collector::{otel_env, Collector};
use common::{client, wait_until, Server};
use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/tracing")
        .canonicalize()
        .expect("test-data/tracing exists")
}

fn app() -> PathBuf {
    data().join("app")
}

fn worker_spec(threads: usize) -> String {
    format!("{},{threads}", app().join("worker.php").display())
}

fn start(args: &[&str], env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_with_env(&app(), args, &env)
}

/// A fresh W3C context: (trace id, parent span id).
fn ids(i: usize) -> (String, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    (
        format!("{:016x}{:016x}", nanos as u64, (i as u64) << 8 | 0x5a),
        format!("{:016x}", (nanos as u64).rotate_left(17) | 1),
    )
}

fn get(server: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut r = client().get(server.url(path));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().expect("request");
    (r.status().as_u16(), r.text().unwrap())
}

fn by_name<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

fn scrape(admin: std::net::SocketAddr) -> String {
    client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .expect("scrape")
        .text()
        .unwrap()
}

/// The value of one sample line (`name{labels}`) of a scrape.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

/// spans.php (directly or through the worker): the trace continues from the caller's
/// context, PHP's spans nest under the server span, and everything set arrives.
fn check_spans_request(server: &Server, collector: &Collector, path: &str, mode: &str, i: usize) {
    let (trace_id, parent) = ids(i);
    let traceparent = format!("00-{trace_id}-{parent}-01");
    let (status, body) = get(
        server,
        path,
        &[
            ("traceparent", &traceparent),
            ("tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let php: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        php["incoming"],
        traceparent.as_str(),
        "HTTP_TRACEPARENT as received"
    );
    assert_eq!(php["trace_id"], trace_id.as_str());
    assert_eq!(php["sampled"], true);
    assert_eq!(php["tracestate"], "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    assert_eq!(php["recording"], serde_json::json!([false, true]));

    let spans = collector.trace(&trace_id, 3);
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let server_span = spans.iter().find(|s| s["kind"] == 2).expect("server span");
    let outer = by_name(&spans, "outer");
    let inner = by_name(&spans, "db.query");
    // Parent/child links: caller → server span → outer → inner.
    assert_eq!(server_span["parent_span_id"], parent.as_str());
    assert_eq!(server_span["span_id"], php["server"]);
    assert_eq!(outer["parent_span_id"], server_span["span_id"]);
    assert_eq!(outer["span_id"], php["outer"]);
    assert_eq!(inner["parent_span_id"], outer["span_id"]);
    assert_eq!(inner["span_id"], php["inner"]);
    // What PHP forwards: from inside the inner span, then from the server span.
    assert_eq!(
        php["traceparent"],
        format!("00-{trace_id}-{}-01", php["inner"].as_str().unwrap()).as_str()
    );
    assert_eq!(
        php["after"],
        format!("00-{trace_id}-{}-01", php["server"].as_str().unwrap()).as_str()
    );
    // The remote parent (flags bit 9) and the tracestate as received.
    assert_eq!(server_span["flags"], 0x301);
    assert_eq!(outer["flags"], 0x101);
    assert_eq!(
        server_span["trace_state"],
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    );

    let a = &server_span["attributes"];
    assert_eq!(
        server_span["name"],
        format!("GET {}", a["http.route"].as_str().unwrap())
    );
    assert_eq!(a["http.request.method"], "GET");
    assert_eq!(a["http.response.status_code"], 200);
    assert_eq!(a["url.path"], path);
    assert_eq!(a["url.scheme"], "http");
    assert_eq!(a["client.address"], "127.0.0.1");
    assert_eq!(a["network.protocol.version"], "1.1");
    assert_eq!(a["ferrophp.mode"], mode);
    assert_eq!(a["http.response.body.size"], body.len() as u64);
    assert_eq!(a["app.route"], "/spans", "set from PHP on Trace::server()");
    assert!(a["thread.name"].as_str().unwrap().starts_with("php-"));
    assert!(a["ferrophp.queue_wait_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(server_span["status"]["code"], 0);

    let o = &outer["attributes"];
    assert_eq!(o["app.user"], "alice");
    assert_eq!(o["app.n"], 3);
    assert_eq!(o["app.ratio"], 0.5);
    assert_eq!(o["app.flag"], true);
    assert_eq!(o["app.tags"], serde_json::json!(["a", "b"]));
    assert!(o.get("app.none").is_none(), "null attributes are skipped");
    assert_eq!(
        outer["status"],
        serde_json::json!({"code": 2, "message": "it failed"})
    );
    assert_eq!(inner["kind"], 3);
    assert_eq!(inner["attributes"]["db.system"], "sqlite");
    assert_eq!(
        inner["attributes"]["db.rows"], 3,
        "the later value replaces the earlier"
    );
    assert_eq!(inner["events"][0]["name"], "rows");
    assert_eq!(inner["events"][0]["attributes"]["count"], 2);
    // Times nest: the server span holds outer, which holds inner.
    let t = |s: &Value, k: &str| s[k].as_u64().unwrap();
    assert!(t(server_span, "start") <= t(outer, "start"));
    assert!(t(outer, "start") <= t(inner, "start") && t(inner, "end") <= t(outer, "end"));
    assert!(t(outer, "end") <= t(server_span, "end"));
    let ev = t(&inner["events"][0], "time");
    assert!(t(inner, "start") <= ev && ev <= t(inner, "end"));
}

#[test]
fn classic_trace_continues_from_traceparent_with_php_spans_as_children() {
    let collector = Collector::start(&[]);
    let mut env = otel_env(&collector.endpoint());
    env.push((
        "OTEL_RESOURCE_ATTRIBUTES",
        "deployment.environment=test,team=a%2Cb".into(),
    ));
    env.push((
        "OTEL_EXPORTER_OTLP_HEADERS",
        "authorization=Bearer%20s3cret".into(),
    ));
    let server = start(&[], &env);
    check_spans_request(&server, &collector, "/spans.php", "classic", 1);

    let post = &collector.posts()[0];
    assert_eq!(post["path"], "/v1/traces");
    assert_eq!(post["content_type"], "application/x-protobuf");
    assert_eq!(post["authorization"], "Bearer s3cret");
    let resource = &post["resources"][0];
    assert_eq!(resource["service.name"], "tracing-test");
    assert_eq!(resource["deployment.environment"], "test");
    assert_eq!(resource["team"], "a,b");
    assert_eq!(resource["process.runtime.name"], "php");
    for p in collector.posts() {
        assert_eq!(p["unknown_fields"], serde_json::json!([]), "{p:#}");
    }
}

#[test]
fn worker_mode_traces_every_request_while_threads_are_replaced() {
    let collector = Collector::start(&[]);
    let server = start(
        &[
            "--worker",
            &worker_spec(2),
            "--max-requests",
            "3",
            "--admin",
            "127.0.0.1:0",
        ],
        &otel_env(&collector.endpoint()),
    );
    for i in 0..12 {
        check_spans_request(&server, &collector, "/worker.php/spans", "worker", 100 + i);
    }
    // 12 requests on 2 threads replaced every 3 requests: at least 4 boots.
    let metrics = scrape(server.admin_addr().unwrap());
    let w = app().join("worker.php").display().to_string();
    assert!(
        sample(
            &metrics,
            &format!("ferrophp_worker_boots_total{{worker=\"{w}\"}}")
        ) >= 4.0
    );
    assert_eq!(
        sample(
            &metrics,
            "ferrophp_trace_spans_dropped_total{reason=\"queue_full\"}"
        ),
        0.0
    );
}

/// The server span of an uncaught exception: status error with class and message, an
/// `exception` event with the stack trace, `error.type`; the span still open is failed too.
fn check_uncaught(server: &Server, collector: &Collector, path: &str, i: usize) {
    let (trace_id, parent) = ids(i);
    let (status, _) = get(
        server,
        &format!("{path}?why=disk"),
        &[("traceparent", &format!("00-{trace_id}-{parent}-01"))],
    );
    assert_eq!(status, 500);
    let spans = collector.trace(&trace_id, 2);
    let server_span = spans.iter().find(|s| s["kind"] == 2).unwrap();
    assert_eq!(
        server_span["status"],
        serde_json::json!({"code": 2, "message": "DomainException: boom: disk"})
    );
    assert_eq!(server_span["attributes"]["error.type"], "DomainException");
    assert_eq!(server_span["attributes"]["http.response.status_code"], 500);
    let events = server_span["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0]["attributes"];
    assert_eq!(events[0]["name"], "exception");
    assert_eq!(e["exception.type"], "DomainException");
    assert_eq!(e["exception.message"], "boom: disk");
    let stack = e["exception.stacktrace"].as_str().unwrap();
    assert!(
        stack.contains("throw.php") && stack.contains("#0"),
        "{stack}"
    );
    let work = by_name(&spans, "work");
    assert_eq!(work["status"]["code"], 2);
    assert_eq!(work["parent_span_id"], server_span["span_id"]);
}

#[test]
fn uncaught_exceptions_mark_the_server_span_in_both_modes() {
    let collector = Collector::start(&[]);
    let server = start(
        &["--worker", &worker_spec(1)],
        &otel_env(&collector.endpoint()),
    );
    check_uncaught(&server, &collector, "/throw.php", 1);
    check_uncaught(&server, &collector, "/worker.php/throw", 2);
    // The worker goes on serving, and its next request is clean.
    check_spans_request(&server, &collector, "/worker.php/spans", "worker", 3);
}

#[test]
fn requests_not_sampled_export_nothing_but_still_propagate() {
    let collector = Collector::start(&[]);
    let mut env = otel_env(&collector.endpoint());
    // Roots are not sampled; a sampled caller still is (parent-based).
    env.push(("OTEL_TRACES_SAMPLER", "parentbased_always_off".into()));
    let server = start(&["--worker", &worker_spec(1)], &env);
    for path in ["/spans.php", "/worker.php/spans"] {
        // A caller that did not sample: same trace id, our own span id, flags 00.
        let (trace_id, parent) = ids(7);
        let (_, body) = get(
            &server,
            path,
            &[("traceparent", &format!("00-{trace_id}-{parent}-00"))],
        );
        let php: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(php["sampled"], false);
        assert_eq!(php["trace_id"], trace_id.as_str());
        let tp = php["traceparent"].as_str().unwrap();
        assert!(
            tp.starts_with(&format!("00-{trace_id}-")) && tp.ends_with("-00"),
            "{tp}"
        );
        assert!(!tp.contains(&parent), "a span id of its own: {tp}");
        assert_eq!(php["after"], tp, "one context per request");
        assert_eq!(php["recording"], serde_json::json!([false, false]));
        // No caller: a new trace, not sampled.
        let (_, body) = get(&server, path, &[]);
        let php: Value = serde_json::from_str(&body).unwrap();
        let tp = php["traceparent"].as_str().unwrap();
        assert!(tp.ends_with("-00") && tp.len() == 55, "{tp}");
        assert_eq!(php["trace_id"].as_str().unwrap(), &tp[3..35]);
    }
    // A sampled caller is followed; then nothing else arrives.
    check_spans_request(&server, &collector, "/spans.php", "classic", 8);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(collector.spans().len(), 3, "{:#?}", collector.spans());
}

#[test]
fn tracing_off_passes_the_callers_context_through() {
    let server = start(&[], &[]);
    let (trace_id, parent) = ids(9);
    let incoming = format!("00-{trace_id}-{parent}-01");
    let (_, body) = get(
        &server,
        "/spans.php",
        &[("traceparent", &incoming), ("tracestate", "a=1")],
    );
    let php: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(php["sampled"], false);
    assert_eq!(php["traceparent"], incoming.as_str());
    assert_eq!(php["tracestate"], "a=1");
    assert_eq!(php["trace_id"], trace_id.as_str());
    let (_, body) = get(&server, "/spans.php", &[]);
    let php: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(php["traceparent"], Value::Null);
    assert_eq!(php["trace_id"], Value::Null);
}

#[test]
fn spans_end_when_their_object_is_freed_or_with_the_request() {
    let collector = Collector::start(&[]);
    let server = start(
        &["--worker", &worker_spec(1)],
        &otel_env(&collector.endpoint()),
    );
    let (trace_id, parent) = ids(11);
    let (_, body) = get(
        &server,
        "/lifetimes.php",
        &[("traceparent", &format!("00-{trace_id}-{parent}-01"))],
    );
    let php: Value = serde_json::from_str(&body).unwrap();
    let spans = collector.trace(&trace_id, 5);
    let server_span = spans.iter().find(|s| s["kind"] == 2).unwrap();
    let t = |s: &Value, k: &str| s[k].as_u64().unwrap();
    let scoped = by_name(&spans, "scoped");
    let discarded = by_name(&spans, "discarded");
    let kept = by_name(&spans, "kept-open");
    let child = by_name(&spans, "child-of-kept");
    assert_eq!(scoped["span_id"], php["scoped"]);
    // Freed at the function's return, before the next span started.
    assert!(t(scoped, "end") <= t(discarded, "start"));
    // Freed at once: ended before the next one started.
    assert!(t(discarded, "end") <= t(kept, "start"));
    for s in [scoped, discarded, kept] {
        assert_eq!(s["parent_span_id"], server_span["span_id"]);
    }
    // Nesting follows what is open: the kept span is the parent of the next one.
    assert_eq!(child["parent_span_id"], kept["span_id"]);
    // The kept span ends with the request, after its child; a second end() is a no-op.
    assert!(t(child, "end") <= t(kept, "end"));
    assert_eq!(spans.len(), 5);

    // Worker mode: a span kept in the worker's state past its request.
    let (first_trace, p1) = ids(12);
    let (_, body) = get(
        &server,
        "/worker.php/keep",
        &[("traceparent", &format!("00-{first_trace}-{p1}-01"))],
    );
    let first: Value = serde_json::from_str(&body).unwrap();
    let (second_trace, p2) = ids(13);
    let (_, body) = get(
        &server,
        "/worker.php/keep",
        &[("traceparent", &format!("00-{second_trace}-{p2}-01"))],
    );
    let second: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(second["before"]["id"], first["now"]);
    assert_eq!(second["before"]["recording"], false);
    let one = collector.trace(&first_trace, 2);
    let kept = by_name(&one, "kept");
    assert!(
        kept["attributes"].get("late").is_none(),
        "set after its request: ignored"
    );
    let two = collector.trace(&second_trace, 2);
    assert_eq!(two.len(), 2, "{two:#?}");
}

#[test]
fn bad_input_throws_and_limits_cap_without_breaking_the_request() {
    let collector = Collector::start(&[]);
    let mut env = otel_env(&collector.endpoint());
    env.push(("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "4".into()));
    env.push(("OTEL_SPAN_EVENT_COUNT_LIMIT", "3".into()));
    env.push(("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "2".into()));
    env.push(("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "9".into()));
    env.push(("FERROPHP_TRACE_MAX_SPANS", "6".into()));
    let server = start(&["--admin", "127.0.0.1:0"], &env);

    let (trace_id, parent) = ids(21);
    let (status, body) = get(
        &server,
        "/bad.php",
        &[("traceparent", &format!("00-{trace_id}-{parent}-01"))],
    );
    assert_eq!(status, 200, "{body}");
    let php: Value = serde_json::from_str(&body).unwrap();
    let thrown = php["thrown"].as_object().unwrap();
    for (what, message) in thrown {
        match what.as_str() {
            "type error" => assert_eq!(message, "TypeError"),
            "constructor" => assert_eq!(message, "Error"),
            _ => assert!(
                message.as_str().is_some_and(|m| !m.is_empty()),
                "{what}: no TraceException ({message})"
            ),
        }
    }
    assert_eq!(thrown.len(), 16);
    assert!(
        thrown["object value"].as_str().unwrap().contains("\"k\""),
        "{thrown:?}"
    );
    let spans = collector.trace(&trace_id, 2);
    let target = by_name(&spans, "target");
    // Nothing of the failed calls was set; the span itself is intact.
    assert_eq!(target["attributes"], serde_json::json!({"after": "fine"}));
    assert_eq!(target["events"], serde_json::json!([]));
    assert_eq!(target["status"]["code"], 0);

    // The same bad input throws when the request is not sampled.
    let (trace_id2, parent2) = ids(22);
    let (_, body) = get(
        &server,
        "/bad.php",
        &[("traceparent", &format!("00-{trace_id2}-{parent2}-00"))],
    );
    let unsampled: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(unsampled["sampled"], false);
    assert_eq!(unsampled["thrown"], php["thrown"]);

    // Limits: capped and counted, never thrown.
    let (trace_id, parent) = ids(23);
    let (status, body) = get(
        &server,
        "/limits.php",
        &[("traceparent", &format!("00-{trace_id}-{parent}-01"))],
    );
    assert_eq!(status, 200, "{body}");
    // 6 spans per request: `limited` and the first 5 of the 10 in the loop.
    assert_eq!(body, "{\"recorded\":5}");
    let spans = collector.trace(&trace_id, 7);
    assert_eq!(spans.len(), 7, "server span + 6");
    let limited = by_name(&spans, "limited");
    let a = &limited["attributes"];
    assert_eq!(a.as_object().unwrap().len(), 4);
    assert_eq!(limited["dropped_attributes_count"], 6);
    // Replacing an existing key is no new attribute; values are cut at 9 bytes on a
    // character boundary (é is 2 bytes), and invalid UTF-8 is replaced.
    assert_eq!(a["a0"], "éééé");
    assert_eq!(a["a1"], "bin\u{fffd}ary");
    assert_eq!(limited["events"].as_array().unwrap().len(), 3);
    assert_eq!(limited["dropped_events_count"], 7);
    assert_eq!(limited["events"][0]["dropped_attributes_count"], 1);
    let metrics = scrape(server.admin_addr().unwrap());
    assert_eq!(
        sample(
            &metrics,
            "ferrophp_trace_spans_dropped_total{reason=\"limit\"}"
        ),
        5.0
    );
    assert!(sample(&metrics, "ferrophp_trace_attributes_dropped_total") >= 6.0 + 3.0);
    assert_eq!(sample(&metrics, "ferrophp_trace_events_dropped_total"), 7.0);
}

/// N requests, then SIGTERM with a batch delay far longer than the test: every span
/// reaches the collector in the final flush.
fn check_nothing_lost_at_shutdown(args: &[&str], path: &str) {
    const N: usize = 60;
    let collector = Collector::start(&[]);
    let mut env = otel_env(&collector.endpoint());
    env.push(("OTEL_BSP_SCHEDULE_DELAY", "600000".into()));
    env.push(("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "100000".into()));
    env.push(("OTEL_BSP_MAX_QUEUE_SIZE", "100000".into()));
    let mut server = start(args, &env);
    let traces: Vec<String> = (0..N)
        .map(|i| {
            let (trace_id, parent) = ids(1000 + i);
            let (status, _) = get(
                &server,
                path,
                &[("traceparent", &format!("00-{trace_id}-{parent}-01"))],
            );
            assert_eq!(status, 200);
            trace_id
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(collector.spans().len(), 0, "nothing sent before shutdown");
    server.sigterm();
    assert!(server
        .wait_exit(Duration::from_secs(30))
        .is_some_and(|s| s.success()));
    assert!(wait_until(Duration::from_secs(10), || collector
        .spans()
        .len()
        >= 3 * N));
    let spans = collector.spans();
    assert_eq!(spans.len(), 3 * N);
    let mut per_trace: HashMap<String, usize> = HashMap::new();
    for s in &spans {
        *per_trace
            .entry(s["trace_id"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for t in &traces {
        assert_eq!(per_trace.get(t), Some(&3), "trace {t}");
    }
    let unique: HashSet<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    assert_eq!(unique.len(), 3 * N);
}

#[test]
fn no_span_is_lost_at_shutdown_classic() {
    check_nothing_lost_at_shutdown(&[], "/spans.php");
}

#[test]
fn no_span_is_lost_at_shutdown_worker_replaced_mid_run() {
    check_nothing_lost_at_shutdown(
        &["--worker", &worker_spec(2), "--max-requests", "7"],
        "/worker.php/spans",
    );
}

/// Median and max latency of `n` sequential requests.
fn latencies(server: &Server, path: &str, n: usize) -> (Duration, Duration) {
    let c = client();
    let mut all: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let r = c.get(server.url(path)).send().expect("request");
            assert_eq!(r.status().as_u16(), 200);
            let _ = r.bytes();
            t.elapsed()
        })
        .collect();
    all.sort();
    (all[n / 2], all[n - 1])
}

#[test]
fn a_collector_that_is_down_or_hangs_costs_the_requests_nothing() {
    // Down: nothing listens there. Hanging: accepts and never answers.
    let down = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let hanging = TcpListener::bind("127.0.0.1:0").unwrap();
    let hanging_port = hanging.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    {
        let held = held.clone();
        std::thread::spawn(move || {
            for s in hanging.incoming().flatten() {
                held.lock().unwrap().push(s);
            }
        });
    }
    let sampled = |endpoint: String| {
        let mut env = otel_env(&endpoint);
        env.push(("OTEL_BSP_MAX_QUEUE_SIZE", "50".into()));
        env.push(("OTEL_BSP_SCHEDULE_DELAY", "20".into()));
        env.push(("OTEL_EXPORTER_OTLP_TIMEOUT", "30000".into()));
        start(&["--admin", "127.0.0.1:0"], &env)
    };
    // The baseline: the same spans, exported to a collector that works.
    let collector = Collector::start(&[]);
    let to_working = sampled(collector.endpoint());
    let to_down = sampled(format!("http://127.0.0.1:{down}"));
    let to_hanging = sampled(format!("http://127.0.0.1:{hanging_port}"));

    // Interleaved rounds, so machine noise hits all three alike.
    let mut medians: [Vec<Duration>; 3] = Default::default();
    let mut worst = [Duration::ZERO; 3];
    for _ in 0..5 {
        for (i, server) in [&to_working, &to_down, &to_hanging].into_iter().enumerate() {
            let (median, max) = latencies(server, "/spans.php", 60);
            medians[i].push(median);
            worst[i] = worst[i].max(max);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (m_ok, m_down, m_hanging) = (
        median(&mut medians[0]),
        median(&mut medians[1]),
        median(&mut medians[2]),
    );
    eprintln!(
        "median latency: collector working {m_ok:?}, down {m_down:?}, hanging {m_hanging:?}; \
         worst {worst:?}"
    );
    let level = m_ok * 3 / 2 + Duration::from_millis(1);
    assert!(
        m_down <= level,
        "collector down: {m_down:?} vs {m_ok:?} working"
    );
    assert!(
        m_hanging <= level,
        "collector hanging: {m_hanging:?} vs {m_ok:?} working"
    );
    // An export waits up to 30 s: no request waited anything like it.
    assert!(
        worst[1] < Duration::from_secs(2) && worst[2] < Duration::from_secs(2),
        "{worst:?}"
    );

    // Drops are counted: failed exports for the down collector, a full queue for the
    // hanging one (its one export never ends).
    let down_metrics = scrape(to_down.admin_addr().unwrap());
    assert!(
        sample(
            &down_metrics,
            "ferrophp_trace_spans_dropped_total{reason=\"export_failed\"}"
        ) > 0.0
    );
    assert!(
        sample(
            &down_metrics,
            "ferrophp_trace_exports_total{result=\"failure\"}"
        ) > 0.0
    );
    assert_eq!(
        sample(
            &down_metrics,
            "ferrophp_trace_exports_total{result=\"success\"}"
        ),
        0.0
    );
    let hanging_metrics = scrape(to_hanging.admin_addr().unwrap());
    let full = sample(
        &hanging_metrics,
        "ferrophp_trace_spans_dropped_total{reason=\"queue_full\"}",
    );
    // 300 requests x 3 spans; at most one batch (at most the queue's 50) in flight and
    // 50 queued.
    assert!(full >= (900 - 2 * 50) as f64, "{hanging_metrics}");
    assert!(sample(&hanging_metrics, "ferrophp_trace_queue_spans") <= 50.0);
    assert!(
        to_down.stderr().contains("trace export to"),
        "the failure is logged"
    );
    let ok_metrics = scrape(to_working.admin_addr().unwrap());
    assert_eq!(
        sample(
            &ok_metrics,
            "ferrophp_trace_exports_total{result=\"failure\"}"
        ),
        0.0
    );
    drop(held);
}
