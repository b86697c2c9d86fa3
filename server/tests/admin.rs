//! Every admin endpoint, against the real binary: `/metrics` scraped under load and
//! parsed by a strict Prometheus text-format parser (counters equal the requests sent, by
//! mode and status class, and never go backwards between scrapes), worker boots, crashes
//! and restarts counted, 503s and the queue depth, `/threads` showing a busy thread and
//! its URI (also in FrankenPHP's `/frankenphp/threads` shape), `/healthz`, `/readyz` (503 while draining), `POST /workers/restart`, and the
//! JSON log format with the access log fields.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{client, wait_until, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/ops/public")
        .canonicalize()
        .expect("test-data/ops/public exists")
}

fn worker_script() -> String {
    root().join("worker.php").display().to_string()
}

/// One parsed exposition: sample (name + sorted labels) -> value, and family -> type.
#[derive(Debug, Default)]
struct Exposition {
    samples: HashMap<String, f64>,
    types: HashMap<String, String>,
}

impl Exposition {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&key(name, labels)).copied()
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no sample {}", key(name, labels)))
    }

    /// Every sample of a family, by its labels.
    fn family(&self, name: &str) -> Vec<(&String, f64)> {
        self.samples
            .iter()
            .filter(|(k, _)| k.as_str() == name || k.starts_with(&format!("{name}{{")))
            .map(|(k, v)| (k, *v))
            .collect()
    }
}

fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let labels: BTreeMap<_, _> = labels.iter().copied().collect();
    if labels.is_empty() {
        return name.to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Parses the Prometheus text format (0.0.4) strictly: names and label names valid,
/// label values properly quoted and escaped, values numbers, every sample in a family
/// whose `# TYPE` came first, no family typed twice, no sample twice, and every family
/// with its `# HELP` line.
fn parse(text: &str) -> Exposition {
    let mut e = Exposition::default();
    let mut helped = std::collections::HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let ctx = || format!("line {}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match parts.next() {
                Some("TYPE") => {
                    let name = parts.next().unwrap_or_else(|| panic!("{}", ctx()));
                    let kind = parts.next().unwrap_or_else(|| panic!("{}", ctx()));
                    assert!(valid_name(name), "{}", ctx());
                    assert!(
                        ["counter", "gauge", "summary", "histogram", "untyped"].contains(&kind),
                        "{}",
                        ctx()
                    );
                    assert!(
                        e.types.insert(name.into(), kind.into()).is_none(),
                        "family typed twice: {}",
                        ctx()
                    );
                }
                Some("HELP") => {
                    let name = parts.next().unwrap_or_default();
                    assert!(valid_name(name), "{}", ctx());
                    assert!(
                        parts.next().is_some_and(|t| !t.is_empty()),
                        "empty help: {}",
                        ctx()
                    );
                    assert!(
                        helped.insert(name.to_owned()),
                        "family helped twice: {}",
                        ctx()
                    );
                }
                _ => {} // a comment
            }
            continue;
        }
        // name{labels} value
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("{}", ctx()));
        let name = &line[..name_end];
        assert!(valid_name(name), "bad name: {}", ctx());
        let mut labels = Vec::new();
        let mut rest = &line[name_end..];
        if let Some(r) = rest.strip_prefix('{') {
            let bytes = r.as_bytes();
            let mut i = 0;
            loop {
                if bytes.get(i) == Some(&b'}') {
                    i += 1;
                    break;
                }
                let eq = r[i..].find('=').unwrap_or_else(|| panic!("{}", ctx())) + i;
                let lname = &r[i..eq];
                assert!(valid_name(lname), "bad label name: {}", ctx());
                assert_eq!(bytes.get(eq + 1), Some(&b'"'), "{}", ctx());
                let mut value = String::new();
                i = eq + 2;
                loop {
                    match bytes.get(i) {
                        Some(b'\\') => {
                            match bytes.get(i + 1) {
                                Some(b'\\') => value.push('\\'),
                                Some(b'"') => value.push('"'),
                                Some(b'n') => value.push('\n'),
                                _ => panic!("bad escape: {}", ctx()),
                            }
                            i += 2;
                        }
                        Some(b'"') => break,
                        Some(_) => {
                            let c = r[i..].chars().next().unwrap();
                            assert!(c != '\n', "{}", ctx());
                            value.push(c);
                            i += c.len_utf8();
                        }
                        None => panic!("unterminated label value: {}", ctx()),
                    }
                }
                labels.push((lname.to_owned(), value));
                i += 1;
                match bytes.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => {}
                    _ => panic!("{}", ctx()),
                }
            }
            rest = &r[i..];
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("{}", ctx()));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("bad value: {}", ctx())),
        };
        let family = [
            name,
            name.trim_end_matches("_sum"),
            name.trim_end_matches("_count"),
            name.trim_end_matches("_bucket"),
        ];
        assert!(
            family.iter().any(|f| e.types.contains_key(*f)),
            "sample before its # TYPE: {}",
            ctx()
        );
        let refs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert!(
            e.samples.insert(key(name, &refs), value).is_none(),
            "sample twice: {}",
            ctx()
        );
    }
    for family in e.types.keys() {
        assert!(helped.contains(family), "family without # HELP: {family}");
    }
    e
}

fn scrape(admin: SocketAddr) -> Exposition {
    let r = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .expect("scrape");
    assert_eq!(r.status().as_u16(), 200);
    parse(&r.text().unwrap())
}

fn get(c: &reqwest::blocking::Client, url: &str) -> (u16, String) {
    let r = c.get(url).send().expect("request");
    (r.status().as_u16(), r.text().unwrap())
}

#[test]
fn parser_accepts_escapes_and_rejects_untyped_samples() {
    let e = parse(
        "# HELP a_total x\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\",y=\"\"} 3\n\
         # HELP s y\n# TYPE s summary\ns_sum 1.5\ns_count 2\n",
    );
    assert_eq!(e.value("a_total", &[("x", "q\"\\\n"), ("y", "")]), 3.0);
    assert_eq!(e.value("s_count", &[]), 2.0);
    assert!(std::panic::catch_unwind(|| parse("b 1\n")).is_err());
    // A family without its help line.
    assert!(std::panic::catch_unwind(|| parse("# TYPE b counter\nb 1\n")).is_err());
}

#[test]
fn metrics_scrape_under_load_counts_every_request() {
    const N: usize = 200;
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "2",
            "--worker",
            &format!("{},2", worker_script()),
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().expect("admin address");
    let before = scrape(admin);
    assert_eq!(before.value("frankenphp_total_threads", &[]), 4.0);
    let w = worker_script();
    let wl = [("worker", w.as_str())];
    assert_eq!(before.value("frankenphp_total_workers", &wl), 2.0);
    assert_eq!(before.value("frankenphp_ready_workers", &wl), 2.0);
    assert_eq!(before.value("ferrophp_worker_boots_total", &wl), 2.0);

    // A scraper parses every scrape during the load and checks counters never go back.
    let stop = Arc::new(AtomicBool::new(false));
    let scraper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut last: HashMap<String, f64> = HashMap::new();
            let mut scrapes = 0;
            while !stop.load(Ordering::Relaxed) {
                let e = scrape(admin);
                for (k, v) in &e.samples {
                    let family = k.split('{').next().unwrap();
                    if e.types.get(family).map(String::as_str) == Some("counter") {
                        if let Some(prev) = last.get(k) {
                            assert!(v >= prev, "counter {k} went back: {prev} -> {v}");
                        }
                    }
                }
                last = e.samples;
                scrapes += 1;
            }
            scrapes
        })
    };
    let base = server.url("/");
    let clients: Vec<_> = (0..6)
        .map(|t| {
            let base = base.clone();
            std::thread::spawn(move || {
                let c = client();
                for i in (t..3 * N).step_by(6) {
                    let (path, want) = match i % 3 {
                        0 => (format!("classic.php?i={i}"), 200),
                        1 => (format!("worker.php?i={i}"), 200),
                        _ => ("no-such-file.txt".to_string(), 404),
                    };
                    let (status, _) = get(&c, &format!("{base}{path}"));
                    assert_eq!(status, want, "{path}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let scrapes = scraper.join().unwrap();
    assert!(scrapes > 0);

    let e = scrape(admin);
    let req = |mode: &str, code: &str| {
        e.value(
            "ferrophp_http_requests_total",
            &[("mode", mode), ("code", code)],
        )
    };
    assert_eq!(req("classic", "2xx"), N as f64);
    assert_eq!(req("worker", "2xx"), N as f64);
    // /no-such-file.txt has no worker `match`: the router answers 404 (no PHP).
    assert_eq!(req("static", "4xx"), N as f64);
    for mode in ["classic", "worker"] {
        for code in ["1xx", "3xx", "4xx", "5xx"] {
            assert_eq!(req(mode, code), 0.0, "{mode} {code}");
        }
    }
    // The latency distribution counted the same requests.
    assert_eq!(
        e.value(
            "ferrophp_http_request_duration_seconds_count",
            &[("code", "2xx")]
        ),
        2.0 * N as f64
    );
    assert_eq!(
        e.value("ferrophp_queue_wait_seconds_count", &[]),
        2.0 * N as f64
    );
    assert_eq!(e.value("frankenphp_worker_request_count", &wl), N as f64);
    assert!(e.value("frankenphp_worker_request_time", &wl) > 0.0);
    assert_eq!(e.value("ferrophp_http_rejected_total", &[]), 0.0);
    assert_eq!(e.value("frankenphp_queue_depth", &[]), 0.0);
    assert_eq!(e.value("ferrophp_queue_depth", &[("pool", "classic")]), 0.0);
    assert_eq!(e.value("ferrophp_queue_depth", &[("pool", &w)]), 0.0);
    assert_eq!(e.value("frankenphp_worker_queue_depth", &wl), 0.0);
    // Busy counts settle once every thread has finished its bookkeeping. FrankenPHP
    // counts a worker thread as busy whatever it does: 2 here.
    assert!(wait_until(Duration::from_secs(5), || {
        let e = scrape(admin);
        e.family("ferrophp_php_threads")
            .iter()
            .filter(|(k, _)| k.contains("state=\"busy\""))
            .all(|(_, v)| *v == 0.0)
            && e.value("frankenphp_busy_threads", &[]) == 2.0
            && e.value("frankenphp_busy_workers", &wl) == 0.0
    }));
    // Every thread ran PHP: each one's heap holds at least one 2 MiB chunk.
    let memory = e.family("ferrophp_php_thread_memory_bytes");
    assert_eq!(memory.len(), 4, "{memory:?}");
    assert!(
        memory.iter().all(|(_, v)| *v >= (2 << 20) as f64),
        "{memory:?}"
    );

    // The shared cache: 10 requests, each 1 store, 1 hit, 1 miss.
    let c = client();
    for i in 0..10 {
        assert_eq!(get(&c, &server.url(&format!("/cache.php?i={i}"))).0, 200);
    }
    let e = scrape(admin);
    assert_eq!(e.value("ferrophp_usercache_entries", &[]), 10.0);
    assert_eq!(e.value("ferrophp_usercache_stores_total", &[]), 10.0);
    assert_eq!(e.value("ferrophp_usercache_hits_total", &[]), 10.0);
    assert_eq!(e.value("ferrophp_usercache_misses_total", &[]), 10.0);
    assert!(e.value("ferrophp_usercache_memory_bytes", &[]) > 0.0);
    assert_eq!(e.value("ferrophp_usercache_evictions_total", &[]), 0.0);
}

#[test]
fn worker_crashes_and_restarts_are_counted() {
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "1",
            "--worker",
            &format!("{},2", worker_script()),
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().unwrap();
    let w = worker_script();
    let wl = [("worker", w.as_str())];
    let c = client();
    assert_eq!(get(&c, &server.url("/worker.php?exit=1")).0, 200);
    assert!(wait_until(Duration::from_secs(10), || {
        let e = scrape(admin);
        e.value("frankenphp_worker_crashes", &wl) == 1.0
            && e.value("ferrophp_worker_boots_total", &wl) == 3.0
            && e.value("frankenphp_ready_workers", &wl) == 2.0
    }));
    let r = c
        .post(format!("http://{admin}/workers/restart"))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Each of the two threads restarts once, and boots again.
    assert!(wait_until(Duration::from_secs(10), || {
        let e = scrape(admin);
        e.value("frankenphp_worker_restarts", &wl) == 2.0
            && e.value("ferrophp_worker_restarts_total", &wl) == 2.0
            && e.value("ferrophp_worker_boots_total", &wl) == 5.0
            && e.value("frankenphp_ready_workers", &wl) == 2.0
    }));
    assert_eq!(get(&c, &server.url("/worker.php")).1, "worker\n");
    let e = scrape(admin);
    assert_eq!(e.value("frankenphp_worker_crashes", &wl), 1.0);
}

#[test]
fn rejected_requests_and_queue_depth() {
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "1",
            "--max-wait-ms",
            "1500",
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().unwrap();
    let slow = server.url("/classic.php?ms=2500");
    let holder = std::thread::spawn(move || get(&client(), &slow).0);
    assert!(wait_until(Duration::from_secs(5), || scrape(admin)
        .value("frankenphp_busy_threads", &[])
        == 1.0));
    let queued = server.url("/classic.php");
    let waiter = std::thread::spawn(move || get(&client(), &queued).0);
    assert!(wait_until(Duration::from_secs(2), || scrape(admin)
        .value("frankenphp_queue_depth", &[])
        == 1.0));
    assert_eq!(waiter.join().unwrap(), 503);
    assert_eq!(holder.join().unwrap(), 200);
    let e = scrape(admin);
    assert_eq!(e.value("ferrophp_http_rejected_total", &[]), 1.0);
    assert_eq!(e.value("frankenphp_queue_depth", &[]), 0.0);
    assert_eq!(
        e.value(
            "ferrophp_http_requests_total",
            &[("mode", "classic"), ("code", "5xx")]
        ),
        1.0
    );
}

#[test]
fn threads_view_shows_each_thread_and_the_busy_ones_uri() {
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "2",
            "--worker",
            &format!("{},1", worker_script()),
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().unwrap();
    let threads = || -> Vec<serde_json::Value> {
        let r = client()
            .get(format!("http://{admin}/threads"))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        let v: serde_json::Value = serde_json::from_str(&r.text().unwrap()).unwrap();
        v["threads"].as_array().unwrap().clone()
    };
    let t = threads();
    assert_eq!(t.len(), 3, "{t:?}");
    assert!(t.iter().all(|t| t["state"] == "idle" && t["busy"] == false));
    assert_eq!(t.iter().filter(|t| t["pool"] == "classic").count(), 2);
    assert_eq!(
        t.iter()
            .filter(|t| t["pool"] == worker_script().as_str())
            .count(),
        1
    );

    let slow = server.url("/worker.php?ms=1500&tag=x");
    let h = std::thread::spawn(move || get(&client(), &slow));
    assert!(wait_until(Duration::from_secs(5), || threads()
        .iter()
        .any(|t| t["busy"] == true)));
    let t = threads();
    let busy: Vec<_> = t.iter().filter(|t| t["busy"] == true).collect();
    assert_eq!(busy.len(), 1, "{t:?}");
    assert_eq!(busy[0]["state"], "busy");
    assert_eq!(busy[0]["uri"], "GET /worker.php?ms=1500&tag=x");
    assert_eq!(busy[0]["pool"], worker_script().as_str());
    // FrankenPHP's shape of the same view.
    let f: serde_json::Value = serde_json::from_str(
        &client()
            .get(format!("http://{admin}/frankenphp/threads"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    )
    .unwrap();
    let states = f["ThreadDebugStates"].as_array().unwrap();
    assert_eq!(states.len(), 3);
    let fb: Vec<_> = states.iter().filter(|t| t["IsBusy"] == true).collect();
    assert_eq!(fb.len(), 1, "{f}");
    assert_eq!(fb[0]["CurrentMethod"], "GET");
    assert_eq!(fb[0]["CurrentURI"], "/worker.php?ms=1500&tag=x");
    assert_eq!(
        fb[0]["Name"],
        format!("worker-{}", worker_script()).as_str()
    );
    assert!(fb[0]["RequestStartedAt"].as_u64().unwrap() > 1_700_000_000_000);
    assert!(states
        .iter()
        .filter(|t| t["IsBusy"] == false)
        .all(|t| t["IsWaiting"] == true && t["State"] == "ready" && t["CurrentURI"] == ""));
    assert_eq!(h.join().unwrap().1, "worker\n");

    let c = client();
    for _ in 0..5 {
        assert_eq!(get(&c, &server.url("/classic.php")).0, 200);
    }
    assert!(wait_until(Duration::from_secs(5), || {
        let t = threads();
        let classic: u64 = t
            .iter()
            .filter(|t| t["pool"] == "classic")
            .map(|t| t["requests"].as_u64().unwrap())
            .sum();
        let worker: u64 = t
            .iter()
            .filter(|t| t["pool"] != "classic")
            .map(|t| t["requests"].as_u64().unwrap())
            .sum();
        // + 1 classic run: the start-up probe of the session settings.
        classic == 6
            && worker == 1
            && t.iter().all(|t| t["busy"] == false && t["uri"].is_null())
            && t.iter()
                .all(|t| t["memory_bytes"].as_u64().unwrap() >= 2 << 20)
    }));
}

#[test]
fn healthz_readyz_and_draining() {
    let mut server = Server::start(
        &root(),
        &[
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
            "--grace-ms",
            "10000",
        ],
    );
    let admin = server.admin_addr().unwrap();
    let c = client();
    let (status, body) = get(&c, &format!("http://{admin}/healthz"));
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(
        get(&c, &format!("http://{admin}/readyz")),
        (200, "ready\n".into())
    );
    assert_eq!(get(&c, &format!("http://{admin}/nope")).0, 404);

    // A request in flight keeps the drain going; meanwhile /readyz says 503 and
    // /healthz still 200 (alive, finishing its work).
    let slow = server.url("/classic.php?ms=2000");
    let h = std::thread::spawn(move || get(&client(), &slow).0);
    std::thread::sleep(Duration::from_millis(300));
    server.sigterm();
    assert!(wait_until(Duration::from_secs(2), || {
        client()
            .get(format!("http://{admin}/readyz"))
            .send()
            .is_ok_and(|r| r.status().as_u16() == 503)
    }));
    assert_eq!(get(&client(), &format!("http://{admin}/healthz")).0, 200);
    assert_eq!(h.join().unwrap(), 200);
    assert!(server.wait_exit(Duration::from_secs(15)).is_some());
}

#[test]
fn json_logs_carry_the_access_fields() {
    let server = Server::start(
        &root(),
        &[
            "--log-format",
            "json",
            "--worker",
            &format!("{},1", worker_script()),
        ],
    );
    let c = client();
    assert_eq!(get(&c, &server.url("/classic.php?x=1")).0, 200);
    assert_eq!(get(&c, &server.url("/worker.php")).0, 200);
    assert_eq!(get(&c, &server.url("/static.txt")).0, 200);
    let access = |uri: &str| -> serde_json::Value {
        let mut found = None;
        wait_until(Duration::from_secs(5), || {
            found = server
                .stderr()
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
                })
                .find(|v| v["target"] == "access" && v["uri"] == uri);
            found.is_some()
        });
        found.unwrap_or_else(|| panic!("no access line for {uri}: {}", server.stderr()))
    };
    let a = access("/classic.php?x=1");
    assert_eq!(a["method"], "GET");
    assert_eq!(a["status"], 200);
    assert_eq!(a["mode"], "classic");
    assert_eq!(a["bytes"], 8);
    assert_eq!(a["level"], "INFO");
    assert!(a["micros"].as_u64().unwrap() > 0);
    assert!(a["remote"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert!(a["timestamp"].is_string());
    assert_eq!(access("/worker.php")["mode"], "worker");
    let s = access("/static.txt");
    assert_eq!(
        (s["mode"].clone(), s["bytes"].clone()),
        ("static".into(), 12.into())
    );

    // The level comes from --log: warn drops the access log.
    let quiet = Server::start(&root(), &["--log-format", "json", "--log", "warn"]);
    assert_eq!(get(&c, &quiet.url("/classic.php")).0, 200);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!quiet.stderr().contains("\"access\""), "{}", quiet.stderr());
}

/// Every family of a scrape has its `# HELP` line (the parser insists): PHP's own series,
/// the server's latency, the worker crate's counters and, with tracing on, the trace
/// exporter's (here failing against a collector that is down).
#[test]
fn every_metric_family_has_help_including_php_series_and_traces() {
    let app = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/metrics/app")
        .canonicalize()
        .unwrap();
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{down}");
    let server = Server::start_with_env(
        &app,
        &["--admin", "127.0.0.1:0", "--no-access-log"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "10"),
        ],
    );
    let c = client();
    for v in ["1", "2.5"] {
        assert_eq!(get(&c, &server.url(&format!("/classic.php?v={v}"))).0, 200);
    }
    let admin = server.admin_addr().unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        scrape(admin).value(
            "ferrophp_trace_spans_dropped_total",
            &[("reason", "export_failed")],
        ) >= 2.0
    }));
    let e = scrape(admin);
    for family in [
        "app_value",
        "app_requests_total",
        "ferrophp_http_request_duration_seconds",
        "ferrophp_metrics_series",
        "ferrophp_metrics_push_failures_total",
        "ferrophp_trace_spans_exported_total",
        "ferrophp_trace_queue_spans",
    ] {
        assert!(e.types.contains_key(family), "{family} missing");
    }
}

/// `GET /status`, php-fpm's page: text and JSON, per pool and all pools, the request a
/// busy thread runs with its growing elapsed time, accepted requests, slow requests past
/// `--slow-request-ms`, the most threads busy at once; an unknown pool is a 404.
#[test]
fn status_page_reads_like_php_fpms() {
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "2",
            "--max-threads",
            "3",
            "--worker",
            &format!("{},1", worker_script()),
            "--admin",
            "127.0.0.1:0",
            "--slow-request-ms",
            "300",
            "--no-access-log",
        ],
    );
    let admin = server.admin_addr().unwrap();
    let c = client();
    let status =
        |query: &str| -> (u16, String) { get(&c, &format!("http://{admin}/status{query}")) };
    let json = |query: &str| -> serde_json::Value {
        let (code, body) = status(query);
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let classic = |j: &serde_json::Value| -> serde_json::Value {
        j["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pool"] == "classic")
            .unwrap()
            .clone()
    };

    let (code, text) = status("");
    assert_eq!(code, 200);
    for line in [
        "pool:                 all\n",
        "pool:                 classic\n",
        "process manager:      dynamic\n",
        "process manager:      static\n",
        "total processes:      3\n",
        "idle processes:       3\n",
        "listen queue len:     ",
        "max children reached: 0\n",
        "slow requests:        0\n",
    ] {
        assert!(text.contains(line), "{line:?} missing in:\n{text}");
    }
    assert!(text
        .lines()
        .any(|l| l.starts_with("start time:           ") && l.ends_with(" +0000")));

    // Two fast requests, one slow (400 ms > 300 ms), and one held while we look. (The
    // server's own start-up probe may have run on the classic pool already.)
    let accepted = json("?json&pool=classic")["accepted conn"]
        .as_u64()
        .unwrap();
    for _ in 0..2 {
        assert_eq!(get(&c, &server.url("/classic.php")).0, 200);
    }
    assert_eq!(get(&c, &server.url("/classic.php?ms=400")).0, 200);
    let held = server.url("/classic.php?ms=1500&held=1");
    let h = std::thread::spawn(move || get(&client(), &held));
    assert!(wait_until(Duration::from_secs(5), || {
        json("?json")["active processes"] == 1
    }));
    let first = json("?json&full&pool=classic");
    assert_eq!(first["pool"], "classic");
    assert!(first.get("pools").is_none(), "one pool: one section");
    assert_eq!(first["accepted conn"], accepted + 4);
    assert_eq!(first["slow requests"], 1);
    assert_eq!(first["active processes"], 1);
    assert_eq!(first["idle processes"], 1);
    let running: Vec<_> = first["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["state"] == "Running")
        .cloned()
        .collect();
    assert_eq!(running.len(), 1, "{first}");
    assert_eq!(running[0]["request method"], "GET");
    assert_eq!(running[0]["request uri"], "/classic.php?ms=1500&held=1");
    assert!(running[0]["pid"].as_i64().unwrap() > 0);
    let elapsed = running[0]["request duration"].as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let later = json("?json&full&pool=classic");
    let again = later["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == running[0]["pid"])
        .unwrap()
        .clone();
    assert!(
        again["request duration"].as_u64().unwrap() >= elapsed + 150_000,
        "{elapsed} then {again}"
    );
    let (_, text) = status("?full&pool=classic");
    assert!(
        text.contains("request URI:          /classic.php?ms=1500&held=1\n"),
        "{text}"
    );
    assert!(text.contains("state:                Running\n"), "{text}");
    assert_eq!(h.join().unwrap().0, 200);

    // Idle again: the thread shows its last request and how long it took.
    let after = json("?json&full");
    assert_eq!(after["pool"], "all");
    assert_eq!(classic(&after)["active processes"], 0);
    assert!(classic(&after)["max active processes"].as_u64().unwrap() >= 1);
    let last = after["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == running[0]["pid"])
        .unwrap()
        .clone();
    assert_eq!(last["state"], "Idle");
    assert_eq!(last["request uri"], "/classic.php?ms=1500&held=1");
    assert!(last["request duration"].as_u64().unwrap() >= 1_500_000);
    // The worker's pool by its script path (percent-encoded in the query).
    let encoded: String = worker_script()
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let w = json(&format!("?json&pool={encoded}"));
    assert_eq!(w["pool"], worker_script().as_str());
    assert_eq!(w["total processes"], 1);
    assert_eq!(w["process manager"], "static");
    assert_eq!(status("?pool=nope").0, 404);
}
