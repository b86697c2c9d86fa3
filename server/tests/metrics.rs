//! Metrics end to end: a classic app and a worker-mode app record from PHP under
//! concurrent load; the admin `/metrics` scrape shows counts, sums and quantiles that
//! equal what was recorded (the quantiles exactly those of one sketch of all values: the
//! merge of the threads' sketches is exact, and worker threads replaced after
//! `--max-requests` keep their share); PHP reads the same merged values back; push
//! mode delivers payloads that DataDog's Python `ddsketch` decodes to the recorded counts;
//! an unreachable collector costs a bounded queue with counted drops; invalid calls throw.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{client, wait_until, Server};
use ferrophp_metrics::{DDSketch, Mapping};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/metrics")
        .canonicalize()
        .expect("test-data/metrics exists")
}

fn app() -> PathBuf {
    data().join("app")
}

fn worker_spec() -> String {
    format!("{},2", app().join("worker.php").display())
}

/// The values request `i` records: spread over four decades, some repeated.
fn value(i: usize) -> f64 {
    ((i * 7919) % 1000) as f64 * 0.37 + 0.01 * (i % 7) as f64 + 0.001
}

/// Sends `n` requests per mode from 8 client threads, classic and worker interleaved.
fn load(server: &Server, n: usize) {
    let next = Arc::new(Mutex::new(0usize));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let next = next.clone();
            let base = server.url("/");
            std::thread::spawn(move || {
                let c = client();
                loop {
                    let i = {
                        let mut g = next.lock().unwrap();
                        *g += 1;
                        *g - 1
                    };
                    if i >= 2 * n {
                        break;
                    }
                    let (script, k) = if i % 2 == 0 {
                        ("classic.php", i / 2)
                    } else {
                        ("worker.php", i / 2)
                    };
                    let r = c
                        .get(format!("{base}{script}?v={}", value(k)))
                        .send()
                        .expect("request");
                    assert_eq!(r.status().as_u16(), 200);
                    assert_eq!(r.text().unwrap(), "ok\n");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn scrape(admin: SocketAddr) -> String {
    let r = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .expect("scrape");
    assert_eq!(r.status().as_u16(), 200);
    assert!(r
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    r.text().unwrap()
}

/// Sample name with labels -> value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_owned(), v.parse().unwrap())
        })
        .collect()
}

fn expected_sketch(n: usize) -> (DDSketch, f64, Vec<f64>) {
    let mut s = DDSketch::new(Mapping::new(0.01).unwrap());
    let mut sum = 0.0;
    let mut all = Vec::new();
    for k in 0..n {
        // What PHP parses from the query string: the shortest round-trip text of value(k).
        let v: f64 = value(k).to_string().parse().unwrap();
        s.add(v);
        sum += v;
        all.push(v);
    }
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (s, sum, all)
}

#[test]
fn classic_and_worker_record_under_load_and_the_scrape_shows_the_merged_values() {
    const N: usize = 300;
    let server = Server::start(
        &app(),
        &[
            "--threads",
            "3",
            "--worker",
            &worker_spec(),
            // Worker threads are replaced every 7 requests: what an exiting thread
            // recorded must stay in the totals.
            "--max-requests",
            "7",
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().expect("admin address");
    load(&server, N);
    let text = scrape(admin);
    let m = samples(&text);
    let (expected, sum, sorted) = expected_sketch(N);
    for mode in ["classic", "worker"] {
        let get = |k: &str| {
            *m.get(k)
                .unwrap_or_else(|| panic!("no sample {k} in:\n{text}"))
        };
        assert_eq!(
            get(&format!("app_value_count{{mode=\"{mode}\"}}")),
            N as f64
        );
        assert_eq!(
            get(&format!("app_requests_total{{mode=\"{mode}\"}}")),
            N as f64
        );
        let got_sum = get(&format!("app_value_sum{{mode=\"{mode}\"}}"));
        assert!((got_sum - sum).abs() <= 1e-9 * sum, "{got_sum} vs {sum}");
        for q in [0.5, 0.9, 0.99] {
            let got = get(&format!("app_value{{mode=\"{mode}\",quantile=\"{q}\"}}"));
            // Exactly the quantile of one sketch of all values, however the requests
            // were spread over threads...
            assert_eq!(got, expected.quantile(q).unwrap(), "{mode} q={q}");
            // ...and within 1% of the exact quantile.
            let exact = sorted[(q * (N - 1) as f64).floor() as usize];
            assert!((got - exact).abs() <= 0.01 * exact, "{mode} q={q}");
        }
    }
    assert!(text.contains("# TYPE app_value summary\n"));
    assert!(text.contains("# TYPE app_requests_total counter\n"));
    assert!(text.contains("# TYPE app_last_value gauge\n"));
    // The server's own latency distribution saw every request.
    let latency = m["ferrophp_http_request_duration_seconds_count{code=\"2xx\"}"];
    assert!(latency >= (2 * N) as f64, "latency count {latency}");
    assert_eq!(m["ferrophp_metrics_dropped_total"], 0.0);

    // PHP reads the same merged values back.
    let r = client()
        .get(server.url("/quantile.php?q=0.9"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&r).unwrap();
    let want = expected.quantile(0.9).unwrap();
    assert_eq!(j["classic"].as_f64().unwrap(), want, "{r}");
    assert_eq!(j["worker"].as_f64().unwrap(), want, "{r}");
    assert_eq!(j["counts"]["classic"].as_u64(), Some(N as u64), "{r}");
    assert_eq!(j["counts"]["worker"].as_u64(), Some(N as u64), "{r}");
    server.assert_alive();
}

/// python3 that can import `ddsketch` (installed with pip when missing, as
/// scripts/test.sh does).
fn python() -> &'static str {
    let ok = || {
        Command::new("python3")
            .args(["-c", "import ddsketch, google.protobuf"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok() {
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "ddsketch", "protobuf"])
            .status();
    }
    assert!(ok(), "python3 with the ddsketch package is required");
    "python3"
}

/// The Python collector (test-data/metrics/receiver.py) and the payloads it decoded.
struct Receiver {
    child: Child,
    port: u16,
    payloads: Arc<Mutex<Vec<(Instant, serde_json::Value)>>>,
}

impl Receiver {
    fn start(port: u16) -> Receiver {
        let mut child = Command::new(python())
            .arg(data().join("receiver.py"))
            .arg(port.to_string())
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("receiver starts");
        let payloads = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let sink = payloads.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(p) = line.strip_prefix("listening ") {
                    let _ = tx.send(p.parse::<u16>().unwrap());
                } else if let Ok(v) = serde_json::from_str(&line) {
                    sink.lock().unwrap().push((Instant::now(), v));
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("receiver listening");
        Receiver {
            child,
            port,
            payloads,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/sketches", self.port)
    }

    /// Sum over payloads of (decoded sketch count, count field, counter value) per
    /// series name + tags.
    fn totals(&self) -> HashMap<String, (f64, f64, f64)> {
        let mut t: HashMap<String, (f64, f64, f64)> = HashMap::new();
        for (_, p) in self.payloads.lock().unwrap().iter() {
            for s in p["series"].as_array().unwrap() {
                let key = format!("{}{}", s["name"].as_str().unwrap(), s["tags"]);
                let e = t.entry(key).or_default();
                e.0 += s["sketch_count"].as_f64().unwrap_or(0.0);
                e.1 += s["count"].as_f64().unwrap();
                if s["kind"].as_u64() == Some(1) {
                    e.2 += s["value"].as_f64().unwrap();
                }
            }
        }
        t
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Child::kill signals this child's own PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn push_mode_delivers_one_payload_per_interval_that_ddsketch_decodes() {
    const N: usize = 100;
    const INTERVAL_MS: u64 = 250;
    let receiver = Receiver::start(0);
    let server = Server::start(
        &app(),
        &[
            "--threads",
            "2",
            "--worker",
            &worker_spec(),
            "--no-access-log",
            "--metrics-push-url",
            &receiver.url(),
            "--metrics-push-interval-ms",
            &INTERVAL_MS.to_string(),
            "--instance",
            "push-test-1",
        ],
    );
    let started = Instant::now();
    load(&server, N);
    // Every pushed series carries the instance's name (a collector has no scrape target
    // to take it from), among the series' own tags in key order.
    let key = |mode: &str| format!("app_value[\"instance:push-test-1\",\"mode:{mode}\"]");
    let counter =
        |mode: &str| format!("app_requests_total[\"instance:push-test-1\",\"mode:{mode}\"]");
    let done = wait_until(Duration::from_secs(15), || {
        let t = receiver.totals();
        ["classic", "worker"]
            .iter()
            .all(|m| t.get(&key(m)).is_some_and(|e| e.0 >= N as f64))
    });
    let totals = receiver.totals();
    assert!(done, "payloads never added up to {N} per mode: {totals:?}");
    // Let a few more (empty or latency-only) intervals pass to count payloads per interval.
    std::thread::sleep(Duration::from_millis(4 * INTERVAL_MS));
    let elapsed = started.elapsed();
    let totals = receiver.totals();
    for mode in ["classic", "worker"] {
        let (decoded, count, _) = totals[&key(mode)];
        // What ddsketch decodes from our bytes is exactly what PHP recorded, and the
        // envelope's count agrees: no interval counted twice or lost.
        assert_eq!(decoded, N as f64, "{mode}: {totals:?}");
        assert_eq!(count, N as f64, "{mode}");
        assert_eq!(totals[&counter(mode)].2, N as f64, "{mode}");
    }
    let payloads = receiver.payloads.lock().unwrap().clone();
    let expected = elapsed.as_millis() as f64 / INTERVAL_MS as f64;
    assert!(
        (payloads.len() as f64) <= expected + 2.0 && (payloads.len() as f64) >= expected * 0.5,
        "{} payloads in {elapsed:?} at {INTERVAL_MS} ms",
        payloads.len()
    );
    for (_, p) in &payloads {
        assert_eq!(p["interval_ms"].as_u64(), Some(INTERVAL_MS));
        assert_eq!(p["content_type"].as_str(), Some("application/x-protobuf"));
        assert_eq!(p["path"].as_str(), Some("/v1/sketches"));
    }
    // The decoded sketches answer quantiles within 1% of the exact ones; the median of
    // the interval that held most values is checked against the values it could hold.
    let (_, sum, sorted) = expected_sketch(N);
    assert!(sum > 0.0);
    for (_, p) in &payloads {
        for s in p["series"].as_array().unwrap() {
            if s["name"] == "app_value" {
                let p50 = s["p50"].as_f64().unwrap();
                assert!(p50 >= sorted[0] * 0.99 && p50 <= sorted[N - 1] * 1.01);
            }
        }
    }
    server.assert_alive();
}

#[test]
fn shutdown_pushes_what_the_last_partial_interval_recorded() {
    const N: usize = 40;
    let receiver = Receiver::start(0);
    let mut server = Server::start(
        &app(),
        &[
            "--threads",
            "2",
            "--worker",
            &worker_spec(),
            "--no-access-log",
            "--metrics-push-url",
            &receiver.url(),
            // Far longer than the test: only the final push at shutdown can deliver.
            "--metrics-push-interval-ms",
            "600000",
        ],
    );
    load(&server, N);
    assert!(receiver.payloads.lock().unwrap().is_empty());
    server.sigterm();
    assert!(
        server.wait_exit(Duration::from_secs(20)).is_some(),
        "no exit"
    );
    // Without --instance the instance is the host name.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let key = |mode: &str| format!("app_value[\"instance:{}\",\"mode:{mode}\"]", host.trim());
    let done = wait_until(Duration::from_secs(10), || {
        let t = receiver.totals();
        ["classic", "worker"]
            .iter()
            .all(|m| t.get(&key(m)).is_some_and(|e| e.0 >= N as f64))
    });
    assert!(
        done,
        "nothing recorded reached the collector: {:?}",
        receiver.totals()
    );
    assert_eq!(
        receiver.payloads.lock().unwrap().len(),
        1,
        "one final payload"
    );
}

#[test]
fn an_unreachable_collector_costs_a_bounded_queue_with_counted_drops() {
    // A port nobody listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Server::start(
        &app(),
        &[
            "--threads",
            "1",
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
            "--metrics-push-url",
            &format!("http://127.0.0.1:{port}/"),
            "--metrics-push-interval-ms",
            "50",
            "--metrics-push-buffer",
            "3",
        ],
    );
    let admin = server.admin_addr().unwrap();
    for i in 0..5 {
        let r = client()
            .get(server.url(&format!("/classic.php?v={i}")))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }
    let dropped = |m: &HashMap<String, f64>| m["ferrophp_metrics_push_payloads_dropped_total"];
    assert!(
        wait_until(Duration::from_secs(10), || dropped(&samples(&scrape(
            admin
        ))) >= 3.0),
        "no drops counted:\n{}",
        scrape(admin)
    );
    let m = samples(&scrape(admin));
    assert_eq!(m["ferrophp_metrics_push_payloads_sent_total"], 0.0);
    assert!(m["ferrophp_metrics_push_failures_total"] >= 1.0);
    // The collector comes up: the (at most 3) queued payloads arrive, and they say how
    // many were dropped.
    let receiver = Receiver::start(port);
    assert!(wait_until(Duration::from_secs(10), || {
        receiver.payloads.lock().unwrap().len() >= 3
    }));
    let first = receiver.payloads.lock().unwrap()[0].1.clone();
    assert!(
        first["dropped_payloads"].as_u64().unwrap_or(0) >= 3,
        "{first}"
    );
    server.assert_alive();
}

#[test]
fn invalid_calls_throw_and_the_series_cap_drops_and_counts() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("php-cli")
        .arg(data().join("errors.php"))
        .env("FERROPHP_METRICS_MAX_SERIES", "3")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for label in [
        "bad name",
        "digit first",
        "empty name",
        "nan",
        "inf",
        "int tag key",
        "array tag value",
        "null tag value",
        "bad tag key",
        "negative increment",
        "quantile out of range",
    ] {
        assert!(
            text.contains(&format!("{label}: InvalidArgumentException\n")),
            "{label}:\n{text}"
        );
    }
    assert!(
        text.contains("kind mismatch: metric \"ok\" is a distribution"),
        "{text}"
    );
    assert!(text.contains("type: TypeError\n"), "{text}");
    assert!(text.contains("series_count=3 dropped=3\n"), "{text}");
    assert!(text.contains("unknown=NULL\n"), "{text}");
}

#[test]
fn the_scrape_names_the_instance_once_and_leaves_the_instance_label_to_prometheus() {
    let named = Server::start(
        &app(),
        &[
            "--threads",
            "1",
            "--admin",
            "127.0.0.1:0",
            "--instance",
            "app-3",
        ],
    );
    let text = scrape(named.admin_addr().expect("admin address"));
    let info = format!(
        "ferrophp_instance_info{{name=\"app-3\",version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(samples(&text).get(&info), Some(&1.0), "{text}");
    assert!(text.contains("# TYPE ferrophp_instance_info gauge"));
    // Prometheus adds `instance` itself when it scrapes: no series may bring its own.
    assert!(
        !text.lines().any(|l| l.contains("instance=\"")),
        "an exposed instance label: {text}"
    );
    drop(named);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let default = Server::start(&app(), &["--threads", "1", "--admin", "127.0.0.1:0"]);
    let text = scrape(default.admin_addr().expect("admin address"));
    assert!(
        text.contains(&format!("ferrophp_instance_info{{name=\"{}\"", host.trim())),
        "{text}"
    );
}
