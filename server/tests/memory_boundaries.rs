//! Randomised boundary tests, under valgrind, for the memory issues 25 and 27 manage by
//! hand:
//!
//! - the slow log's per-thread snapshot (`worker/c/slow_capture.c`): a fixed buffer of 48
//!   frames and 12288 bytes of text, filled on the request's own thread, in a timed wait,
//!   at a VM safe point or inside a signal handler, with names, files, method, URI and
//!   argument summaries cut at their caps. Each request builds a random stack (depths
//!   around the frame cap, names around every cut, arguments from empty to 1 MiB, invalid
//!   UTF-8) and writes what the snapshot must hold; the test replays the capture's byte
//!   budget on that and compares the logged entry field by field;
//! - the span objects (`worker/c/trace.c`: a ref laid out before the zend_object, freed
//!   through free_obj), the worker crate's span slots (`worker/src/trace/`) and the
//!   hand-written protobuf encoding (`trace/src/span.rs`): random use of the PHP API with
//!   counts around every limit and bad input of every kind, in classic and worker mode;
//!   what the reference decoder receives must match the script's own model of it.
//!
//! valgrind runs the server with PHP's allocator off, so every emalloc is a checked block;
//! any invalid read or write, use of uninitialised memory or bad free fails the test.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::collector::{otel_env, Collector};
use common::{valgrind_errors, wait_until, Server};
use serde_json::Value;

fn memory_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/memory")
        .canonicalize()
        .expect("test-data/memory exists")
}

/// The server under memcheck with one PHP thread running `script` (in `root`) as its
/// worker, with OPcache off as in every test of this file.
fn start_worker_under_valgrind(
    root: &Path,
    script: &str,
    env: &[(&str, &str)],
    log: &Path,
) -> Server {
    let worker = format!("{},1", root.join(script).display());
    Server::start_under_valgrind(
        root,
        &[
            "--threads",
            "1",
            "--worker",
            &worker,
            "-d",
            "opcache.enable=0",
        ],
        env,
        log,
    )
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stops the server, then fails with valgrind's report if it has one.
fn assert_valgrind_clean(mut server: Server, log: &Path) {
    server.assert_alive();
    server.sigterm();
    let exited = server.wait_exit(Duration::from_secs(120));
    let errors = valgrind_errors(log);
    assert!(
        errors.is_empty(),
        "valgrind found {} errors:\n{}\n\nserver stderr:\n{}",
        errors.len(),
        errors.join("\n\n"),
        server.stderr()
    );
    assert!(exited.is_some(), "the server did not stop on SIGTERM");
}

// ---------------------------------------------------------------------------------------
// The slow log's snapshot.
// ---------------------------------------------------------------------------------------

/// `FERROPHP_SLOW_FRAMES` and `FERROPHP_SLOW_TEXT` (worker/c/worker.h), and the cut for the
/// method and the URI.
const SLOW_FRAMES: usize = 48;
const SLOW_TEXT: usize = 12288;
const REQUEST_LINE_CUT: usize = 512;
/// The slow-log threshold, past each request's set-up (valgrind makes a deep random stack
/// take seconds to build), and when the request's wait ends (seconds after it began).
const SLOWLOG_MS: u64 = 8000;
const UNTIL_S: u64 = 10;

/// The capture's text budget: every field is appended in order, and what does not fit is cut.
struct Budget(usize);

impl Budget {
    fn take(&mut self, bytes: &[u8]) -> String {
        let n = bytes.len().min(self.0);
        self.0 -= n;
        lossy(&bytes[..n])
    }
}

/// The slow-log entry the capture must produce for `expect` (what the script wrote).
fn expected_entry(uri: &str, expect: &Value) -> Value {
    let mut budget = Budget(SLOW_TEXT);
    let method = budget.take(b"GET");
    let uri = budget.take(&uri.as_bytes()[..uri.len().min(REQUEST_LINE_CUT)]);
    let frames = expect["frames"].as_array().unwrap();
    let innermost_at = expect["innermost_at"].as_u64().unwrap() as usize;
    let mut file = String::new();
    let mut stack = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if i == innermost_at {
            file = budget.take(&unhex(expect["innermost_file"].as_str().unwrap()));
        }
        if i >= SLOW_FRAMES {
            continue;
        }
        let function = budget.take(&unhex(f["function"].as_str().unwrap()));
        let frame_file = budget.take(&unhex(f["file"].as_str().unwrap()));
        let joined: Vec<Vec<u8>> = f["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| unhex(a.as_str().unwrap()))
            .collect();
        let args = budget.take(&joined.join(&0x1f));
        let args: Vec<String> = if args.is_empty() {
            Vec::new()
        } else {
            args.split('\u{1f}').map(str::to_owned).collect()
        };
        stack.push(serde_json::json!({
            "function": function,
            "file": frame_file,
            "line": f["line"],
            "args": args,
            "arg_count": f["arg_count"],
        }));
    }
    serde_json::json!({
        "method": method,
        "uri": uri,
        "file": file,
        "line": expect["innermost_line"],
        "stack": stack,
        "frames_omitted": frames.len().saturating_sub(SLOW_FRAMES),
    })
}

/// A document root with the script at a short path and, for each of `n` cases, at one
/// past the capture's 1024-byte cut for file names. Each long path starts with its case
/// number, so the URI's first 512 bytes (all the log keeps) tell the cases apart.
fn slowlog_root(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let root = dir.join("root");
    let script = memory_data().join("slowlog_shapes.php");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::copy(&script, root.join("s.php")).unwrap();
    // Server::assert_alive asks for it.
    std::fs::copy(memory_data().join("hello.php"), root.join("hello.php")).unwrap();
    let mut uris = Vec::new();
    for case in 0..n {
        let mut long = root.clone();
        let mut long_uri = String::new();
        for c in ['a', 'b', 'c', 'd', 'e'] {
            let part = format!("{case:03}{}", String::from(c).repeat(247));
            long.push(&part);
            long_uri.push('/');
            long_uri.push_str(&part);
        }
        std::fs::create_dir_all(&long).unwrap();
        std::fs::copy(&script, long.join("s.php")).unwrap();
        assert!(long.join("s.php").as_os_str().len() > 1024);
        uris.push(if case % 2 == 0 {
            "/s.php".to_owned()
        } else {
            format!("{long_uri}/s.php")
        });
    }
    (root, uris)
}

/// One slow-log case: which wait, how deep a stack, from which seed.
struct Case {
    index: usize,
    how: &'static str,
    depth: usize,
    seed: u64,
}

/// A case sent: its URI (what the log entry is found by) and the script's expectation.
struct Sent {
    uri: String,
    expect: Value,
    how: &'static str,
}

/// Total frames: the waiting call (not for busy), slowlog_leaf, `depth` generated ones and
/// {main}; depths put the total at the cap -1, the cap, +1, and far past it.
fn slowlog_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut seed = 0x5eed_u64;
    for how in ["sleep", "busy", "flock", "poll", "select"] {
        let extra = if how == "busy" { 2 } else { 3 };
        for depth in [
            0,
            SLOW_FRAMES - extra - 1,
            SLOW_FRAMES - extra,
            SLOW_FRAMES - extra + 1,
            90,
        ] {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let index = cases.len();
            cases.push(Case {
                index,
                how,
                depth,
                seed: seed >> 33,
            });
        }
    }
    cases
}

/// Runs one case and reads back what its script expects the snapshot to hold.
fn send(server: &Server, script: &str, dir: &Path, case: &Case) -> Sent {
    let Case {
        index,
        how,
        depth,
        seed,
    } = *case;
    let expect_path = dir.join(format!("expect-{how}-{depth}-{seed}.json"));
    let pad = "p".repeat([0, 300, 480, 700][(seed as usize + index) % 4]);
    let uri = format!(
        "{script}?seed={seed}&depth={depth}&how={how}&expect={}&until={UNTIL_S}&pad={pad}",
        expect_path.display()
    );
    // Valgrind makes each request take seconds: longer than Server::get waits.
    let r = common::client()
        .get(server.url(&uri))
        .timeout(Duration::from_secs(120))
        .send()
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().unwrap_or_default();
    // The flock case waits on its own lock until its time limit ends it.
    let status_ok = if how == "flock" {
        status >= 500
    } else {
        status == 200
    };
    assert!(status_ok, "{how} {depth}: {status} {body}");
    let expect = std::fs::read(&expect_path)
        .unwrap_or_else(|e| panic!("{uri}: no expectation ({e}): {body}"));
    let expect: Value = serde_json::from_slice(&expect).unwrap();
    let ready_ms: u64 = std::fs::read_to_string(format!("{}.ready_ms", expect_path.display()))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        ready_ms + 300 < SLOWLOG_MS,
        "the request was ready to wait only {ready_ms} ms after it began (valgrind), too \
         close to the slow-log moment for its stack to be the expected one: {uri}"
    );
    Sent { uri, expect, how }
}

#[test]
fn slowlog_snapshots_of_random_stacks_under_valgrind() {
    let cases = slowlog_cases();
    let dir = tempfile::tempdir().unwrap();
    let (root, scripts) = slowlog_root(dir.path(), cases.len());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let log = dir.path().join("valgrind.log");
    let sys_temp_dir = format!("sys_temp_dir={}", tmp.display());
    let server = Server::start_under_valgrind(
        &root,
        &[
            "--threads",
            "2",
            // Past the set-up, which valgrind slows down, before the wait ends (UNTIL_S).
            "--slowlog-ms",
            &SLOWLOG_MS.to_string(),
            "--log-format",
            "json",
            "-d",
            &sys_temp_dir,
            "-d",
            "opcache.enable=0",
        ],
        &[],
        &log,
    );

    // Two clients, one per PHP thread, so that captures overlap.
    let sent: Vec<Sent> = std::thread::scope(|scope| {
        let clients: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                let (server, scripts, dir) = (&server, &scripts, dir.path());
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|case| send(server, &scripts[case.index], dir, case))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });

    let entries = |uri: &str| -> Vec<Value> {
        server
            .stderr()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| {
                v["target"] == "slowlog"
                    && v["uri"].as_str() == Some(&uri[..uri.len().min(REQUEST_LINE_CUT)])
            })
            .collect()
    };
    for Sent { uri, expect, how } in &sent {
        assert!(
            wait_until(Duration::from_secs(10), || entries(uri).len() == 1),
            "{uri}: {:?}",
            entries(uri)
        );
        let got = &entries(uri)[0];
        let want = expected_entry(uri, expect);
        let captured_in = match *how {
            "sleep" | "poll" | "select" => "wait",
            "busy" => "vm",
            _ => "signal",
        };
        assert_eq!(got["captured_in"], captured_in, "{uri}");
        for field in ["method", "uri", "file", "line", "frames_omitted"] {
            assert_eq!(got[field], want[field], "{field} of {uri}");
        }
        let (got_stack, want_stack) = (
            got["stack"].as_array().unwrap(),
            want["stack"].as_array().unwrap(),
        );
        assert_eq!(got_stack.len(), want_stack.len(), "frames of {uri}");
        for (i, (g, w)) in got_stack.iter().zip(want_stack).enumerate() {
            assert_eq!(g, w, "frame {i} of {uri}");
        }
    }
    eprintln!("{} slow-log snapshots matched their stacks", sent.len());
    assert_valgrind_clean(server, &log);
}

// ---------------------------------------------------------------------------------------
// Spans.
// ---------------------------------------------------------------------------------------

/// The limits the server runs with (environment) and the script models (query).
const SPANS: u32 = 8;
const ATTRIBUTES: u32 = 5;
const EVENTS: u32 = 3;
const EVENT_ATTRIBUTES: u32 = 2;
const VALUE_LENGTH: usize = 16;

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What the collector shows for a value the script modelled as `{"string": hex}`, ...
fn expected_value(model: &Value) -> Value {
    let (kind, v) = model.as_object().unwrap().iter().next().unwrap();
    match kind.as_str() {
        "string" => Value::from(cut(&lossy(&unhex(v.as_str().unwrap())), VALUE_LENGTH)),
        "list" => Value::Array(v.as_array().unwrap().iter().map(expected_value).collect()),
        _ => v.clone(),
    }
}

fn assert_same_value(got: &Value, want: &Value, what: &str) {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) if got.is_f64() || want.is_f64() => assert_eq!(g, w, "{what}"),
        _ => match (got.as_array(), want.as_array()) {
            (Some(g), Some(w)) => {
                assert_eq!(g.len(), w.len(), "{what}: {got} against {want}");
                for (g, w) in g.iter().zip(w) {
                    assert_same_value(g, w, what);
                }
            }
            _ => assert_eq!(got, want, "{what}"),
        },
    }
}

fn assert_attributes(got: &Value, model: &Value, what: &str) {
    let got: BTreeMap<String, Value> = got
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    // An empty PHP array is encoded as a JSON list.
    let want: BTreeMap<String, Value> = model
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), expected_value(v)))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "attribute keys of {what}"
    );
    for (k, w) in &want {
        assert_same_value(&got[k], w, &format!("attribute {k} of {what}"));
    }
}

fn check_span(got: &Value, model: &Value, what: &str) {
    assert_eq!(
        got["name"],
        lossy(&unhex(model["name"].as_str().unwrap())),
        "name of {what}"
    );
    assert_eq!(got["parent_span_id"], model["parent"], "parent of {what}");
    assert_attributes(&got["attributes"], &model["attributes"], what);
    assert_eq!(
        got["dropped_attributes_count"], model["dropped_attributes"],
        "dropped attributes of {what}"
    );
    let (events, want_events) = (
        got["events"].as_array().unwrap(),
        model["events"].as_array().unwrap(),
    );
    assert_eq!(
        events.len(),
        want_events.len(),
        "events of {what}: {events:?}"
    );
    for (i, (e, w)) in events.iter().zip(want_events).enumerate() {
        let what = format!("event {i} of {what}");
        assert_eq!(
            e["name"],
            lossy(&unhex(w["name"].as_str().unwrap())),
            "{what}"
        );
        // recordException's attributes are the worker crate's own (type, message, stacktrace).
        if !w["attributes"].is_null() {
            assert_attributes(&e["attributes"], &w["attributes"], &what);
            assert_eq!(e["dropped_attributes_count"], w["dropped"], "{what}");
        }
    }
    assert_eq!(
        got["dropped_events_count"], model["dropped_events"],
        "dropped events of {what}"
    );
    assert_eq!(got["status"]["code"], model["status"], "status of {what}");
    assert_eq!(
        got["status"]["message"],
        lossy(&unhex(model["message"].as_str().unwrap())),
        "status message of {what}"
    );
}

#[test]
fn spans_of_random_shapes_under_valgrind() {
    let collector = Collector::start(&[]);
    let mut env = otel_env(&collector.endpoint());
    env.push(("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", ATTRIBUTES.to_string()));
    env.push(("OTEL_SPAN_EVENT_COUNT_LIMIT", EVENTS.to_string()));
    env.push((
        "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
        EVENT_ATTRIBUTES.to_string(),
    ));
    env.push((
        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
        VALUE_LENGTH.to_string(),
    ));
    env.push(("FERROPHP_TRACE_MAX_SPANS", SPANS.to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("valgrind.log");
    let root = memory_data();
    let server = start_worker_under_valgrind(&root, "trace_worker.php", &env, &log);

    let limits = format!(
        "spans={SPANS}&attributes={ATTRIBUTES}&events={EVENTS}&event_attributes={EVENT_ATTRIBUTES}"
    );
    let client = common::client();
    let mut checked = 0;
    for i in 0..24u64 {
        let script = if i % 2 == 0 {
            "trace.php"
        } else {
            "trace_worker.php"
        };
        let seed = 1000 + i * 7919;
        // One request in six is not sampled: the same calls, nothing exported.
        let flags = if i % 6 == 5 { "00" } else { "01" };
        let traceparent = format!("00-{:032x}-{:016x}-{flags}", 0xfeed_0000 + i, 0xbeef + i);
        let r = client
            .get(server.url(&format!("/{script}?seed={seed}&{limits}")))
            .header("traceparent", &traceparent)
            .timeout(Duration::from_secs(120))
            .send()
            .unwrap();
        let status = r.status();
        let body = r.text().unwrap();
        assert_eq!(
            status,
            200,
            "{script} seed {seed}: {body}\n{}",
            server.stderr()
        );
        let model: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let trace_id = model["trace_id"].as_str().unwrap();
        let spans = model["spans"].as_array().unwrap();
        if flags == "00" {
            assert_eq!(model["sampled"], false);
            assert!(spans.is_empty());
            continue;
        }
        let got = collector.trace(trace_id, spans.len() + 1);
        assert_eq!(
            got.len(),
            spans.len() + 1,
            "{script} seed {seed}: server span + {}",
            spans.len()
        );
        for s in spans {
            let id = s["span_id"].as_str().unwrap();
            let what = format!("span {id} of {script} seed {seed}");
            let g = got
                .iter()
                .find(|g| g["span_id"] == id)
                .unwrap_or_else(|| panic!("{what} not received"));
            check_span(g, s, &what);
            checked += 1;
        }
    }
    eprintln!("{checked} spans matched the script's model");
    assert!(checked >= 20, "only {checked} spans checked");
    // Nothing is lost in the final flush either.
    assert_valgrind_clean(server, &log);
    assert!(collector
        .posts()
        .iter()
        .all(|p| p["unknown_fields"] == serde_json::json!([])));
}

// ---------------------------------------------------------------------------------------
// The request scope (worker/c/request_scope.c): SG(request_info) points into the thread's
// arena and the request's own buffers, installed by C from what Rust bound.
// ---------------------------------------------------------------------------------------

/// Lengths around every boundary the scope's strings cross: empty, one byte, the arena's
/// first chunk (16 KiB, `request_arena` in worker/src/worker_mode and classic.rs) and
/// PHP's post block (16 KiB), powers of two either side, and large.
const SCOPE_LENGTHS: &[usize] = &[
    0, 1, 2, 15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385,
    32768, 50000,
];
const SCOPE_BODIES: &[usize] = &[0, 1, 8191, 8192, 8193, 16383, 16384, 16385, 65536, 1 << 20];
/// What hyper takes of a request head (`--max-header-size`'s default, 64 KiB).
const HEAD_LIMIT: usize = 60_000;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.next() as usize % items.len()]
    }
    /// `len` bytes from `alphabet`.
    fn text(&mut self, len: usize, alphabet: &[u8]) -> String {
        (0..len)
            .map(|_| alphabet[self.next() as usize % alphabet.len()] as char)
            .collect()
    }
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn hex(s: &str) -> Value {
    Value::String(s.bytes().map(|b| format!("{b:02x}")).collect())
}

#[test]
fn request_scopes_of_random_shapes_under_valgrind() {
    const QUERY: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~=&";
    const TOKEN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("valgrind.log");
    let root = memory_data();
    let server = start_worker_under_valgrind(&root, "scope_worker.php", &[], &log);
    let mut rng = Lcg(0x5c09e);
    let mut exits = 0;
    for i in 0..48 {
        let worker = i % 2 == 1;
        let path = if worker {
            "/scope_worker.php"
        } else {
            "/scope.php"
        };
        // The head's strings share the limit: one of them may be long, the others fill
        // what is left.
        let mut room = HEAD_LIMIT;
        let mut length = |rng: &mut Lcg| {
            let n = rng.pick(SCOPE_LENGTHS).min(room);
            room -= n;
            n
        };
        let method = match rng.next() % 6 {
            0 => "GET".to_owned(),
            1 => "POST".to_owned(),
            2 => "PUT".to_owned(),
            3 => "PATCH".to_owned(),
            4 => "DELETE".to_owned(),
            _ => {
                let n = [1, 2, 31, 32, 33, 255][rng.next() as usize % 6];
                rng.text(n, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            }
        };
        let exit = worker && i % 10 == 1;
        let n = length(&mut rng);
        let mut query = rng.text(n, QUERY);
        if exit {
            exits += 1;
            query = format!("exit=3&{query}");
        }
        let target = if query.is_empty() && rng.next().is_multiple_of(2) {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        };
        let content_type = (!rng.next().is_multiple_of(3)).then(|| {
            let n = length(&mut rng);
            format!("text/plain; x={}", rng.text(n, TOKEN))
        });
        let cookie = (rng.next().is_multiple_of(3)).then(|| {
            let n = length(&mut rng);
            format!("c={}", rng.text(n, TOKEN))
        });
        let (authorization, user, pw, digest) = match rng.next() % 3 {
            0 => (None, None, None, None),
            1 => {
                let n = length(&mut rng) / 2;
                let user = rng.text(n, TOKEN);
                let n = length(&mut rng) / 2;
                let pw = rng.text(n, QUERY);
                let header = format!("Basic {}", base64(format!("{user}:{pw}").as_bytes()));
                (Some(header), Some(user), Some(pw), None)
            }
            _ => {
                let n = length(&mut rng);
                let d = format!("username=\"{}\"", rng.text(n, TOKEN));
                (Some(format!("Digest {d}")), None, None, Some(d))
            }
        };
        let body_len = match method.as_str() {
            "POST" | "PUT" | "PATCH" => Some(rng.pick(SCOPE_BODIES)),
            _ => None,
        };

        let mut head =
            format!("{method} {target} HTTP/1.1\r\nHost: scope.test\r\nConnection: close\r\n");
        for (name, value) in [
            ("Content-Type", &content_type),
            ("Cookie", &cookie),
            ("Authorization", &authorization),
        ] {
            if let Some(v) = value {
                head.push_str(&format!("{name}: {v}\r\n"));
            }
        }
        if let Some(n) = body_len {
            head.push_str(&format!("Content-Length: {n}\r\n"));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend(std::iter::repeat_n(b'b', body_len.unwrap_or(0)));
        let bytes = common::exchange(server.addr, &request, Duration::from_secs(180))
            .unwrap_or_else(|e| panic!("case {i}: {e}\n{}", server.stderr()));
        let response = common::parse_response(&bytes)
            .unwrap_or_else(|| panic!("case {i}: no response\n{}", server.stderr()));
        let what = format!("case {i} ({method} {} bytes of target)", target.len());
        assert_eq!(response.status, 200, "{what}: {}", response.text());
        let got: Value = serde_json::from_slice(&response.body)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", response.text()));
        let want = serde_json::json!({
            "method": hex(&method),
            "uri": hex(&target),
            "query": hex(target.split_once('?').map_or("", |(_, q)| q)),
            // Always set, empty without the header (as nginx's fastcgi_params give them).
            "content_type": hex(content_type.as_deref().unwrap_or("")),
            "content_length": body_len.map_or(String::new(), |n| n.to_string()),
            "cookie": cookie.as_deref().map(hex),
            "auth_user": user.as_deref().map(hex),
            // PHP's php_handle_auth_data leaves an empty password unset (php-fpm alike).
            "auth_pw": pw.as_deref().filter(|p| !p.is_empty()).map(hex),
            "auth_digest": digest.as_deref().map(hex),
            "body": body_len.unwrap_or(0),
            "argv": null,
        });
        assert_eq!(got, want, "{what}");
    }
    assert!(exits >= 2, "the worker's exit path ran {exits} times");
    // A head past the limit is refused, and the scope of the next request is whole.
    let long = format!(
        "GET /scope.php?{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "A".repeat(70_000)
    );
    let refused = common::parse_response(
        &common::exchange(server.addr, long.as_bytes(), Duration::from_secs(60)).unwrap(),
    )
    .expect("a response to the long head");
    assert!(
        (400..500).contains(&refused.status),
        "long head: {}",
        refused.status
    );
    let after = server.get("/scope.php?after=1");
    assert_eq!(after.status, 200);
    assert_valgrind_clean(server, &log);
}
