//! Worker mode over real HTTP: the `ferrophp` binary started with `--worker` (or a
//! `[[worker]]` table) on a free port. What persists between requests (statics), what must
//! not (superglobals, uploads, headers, session, status), how failures in a handler end,
//! FrankenPHP's worker API, and `match`/`env` from a config file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{encode, wait_until, KeepAlive, RawResponse, Server};
use serde_json::Value;

fn worker_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/worker")
        .canonicalize()
        .expect("test-data/worker exists")
}

fn script(name: &str) -> String {
    worker_root().join(name).to_string_lossy().into_owned()
}

/// `ferrophp serve --root test-data/worker --threads 1 --worker SCRIPT,THREADS ARGS...`
fn serve_worker(name: &str, threads: usize, args: &[&str]) -> Server {
    let spec = format!("{},{threads}", script(name));
    let mut all = vec!["--threads", "1", "--worker", spec.as_str()];
    all.extend_from_slice(args);
    Server::start(&worker_root(), &all)
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", r.status, r.text()))
}

/// A PHP array as a map of strings: `[]`, `{}` and null are all empty.
fn map(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Object(o) => o.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Array(a) if a.is_empty() => BTreeMap::new(),
        Value::Null => BTreeMap::new(),
        other => panic!("expected an array, got {other}"),
    }
}

fn strings(pairs: &[(&str, String)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
        .collect()
}

#[test]
fn a_static_counter_persists_across_requests_on_one_thread() {
    let server = serve_worker("counter.php", 1, &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    let mut booted = None;
    for i in 1..=25u64 {
        // Half on one keep-alive connection, half on fresh connections: same PHP thread.
        let r = if i % 2 == 0 {
            conn.get(&format!("/counter.php?i={i}")).unwrap()
        } else {
            server.get(&format!("/counter.php?i={i}"))
        };
        assert_eq!(r.status, 200, "{}", r.text());
        let v = json(&r);
        assert_eq!(v["count"], i, "the static counter did not persist: {v}");
        // FRANKENPHP_WORKER is in the worker script's own $_SERVER, not the request's.
        assert_eq!(v["worker"], Value::Null, "{v}");
        assert_eq!(map(&v["get"]), strings(&[("i", i.to_string())]), "{v}");
        assert_eq!(v["uri"], format!("/counter.php?i={i}"));
        match &booted {
            None => booted = Some(v["booted"].clone()),
            Some(b) => assert_eq!(&v["booted"], b, "the worker script booted again"),
        }
    }
}

/// A barrier that gives up (panics) after 30 s or when another party failed, so one
/// failing client cannot leave the other waiting forever.
struct Rendezvous {
    parties: usize,
    state: Mutex<(usize, u64, bool)>,
    changed: Condvar,
}

impl Rendezvous {
    fn new(parties: usize) -> Arc<Rendezvous> {
        Arc::new(Rendezvous {
            parties,
            state: Mutex::new((0, 0, false)),
            changed: Condvar::new(),
        })
    }

    fn wait(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let failure = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let generation = s.1;
            s.0 += 1;
            if s.0 == self.parties {
                s.0 = 0;
                s.1 += 1;
                self.changed.notify_all();
                return;
            }
            loop {
                if s.2 {
                    break "another client failed";
                }
                if Instant::now() >= deadline {
                    break "the other client never came";
                }
                s = self
                    .changed
                    .wait_timeout(s, Duration::from_millis(50))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                if s.1 != generation {
                    return;
                }
            }
        };
        panic!("{failure}");
    }

    fn abort(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).2 = true;
        self.changed.notify_all();
    }
}

/// Aborts the rendezvous when its thread panics.
struct AbortOnPanic(Arc<Rendezvous>);

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

/// One request of the isolation test: what a client sends and what it must see back.
struct Probe {
    query: Vec<(&'static str, String)>,
    cookies: Vec<(&'static str, String)>,
    headers: Vec<(String, String)>,
    post: Vec<(&'static str, String)>,
    /// (field, filename, content)
    file: Option<(&'static str, String, String)>,
    status: u16,
    mark: Option<String>,
}

impl Probe {
    fn request(&self) -> Vec<u8> {
        let query: Vec<String> = self
            .query
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        let path = format!("/leak.php?{}", query.join("&"));
        let mut head = String::new();
        let mut body = Vec::new();
        if let Some((field, filename, content)) = &self.file {
            let boundary = format!("----ferrophp{}", filename.replace('.', ""));
            for (k, v) in &self.post {
                body.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                    )
                    .as_bytes(),
                );
            }
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; \
                     filename=\"{filename}\"\r\nContent-Type: text/plain\r\n\r\n{content}\r\n\
                     --{boundary}--\r\n"
                )
                .as_bytes(),
            );
            head.push_str(&format!(
                "POST {path} HTTP/1.1\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
            ));
        } else if !self.post.is_empty() {
            let form: Vec<String> = self
                .post
                .iter()
                .map(|(k, v)| format!("{k}={}", encode(v)))
                .collect();
            body.extend_from_slice(form.join("&").as_bytes());
            head.push_str(&format!(
                "POST {path} HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            ));
        } else {
            head.push_str(&format!("GET {path} HTTP/1.1\r\n"));
        }
        head.push_str("Host: localhost\r\n");
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !self.cookies.is_empty() {
            let c: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            head.push_str(&format!("Cookie: {}\r\n", c.join("; ")));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&body);
        out
    }

    /// The HTTP_* entries `$_SERVER` must hold, exactly: one per header line of `request`
    /// (like nginx's fastcgi_params, Content-Type and Content-Length included).
    fn http_vars(request: &[u8]) -> BTreeMap<String, Value> {
        let text = String::from_utf8_lossy(request);
        let head = text.split("\r\n\r\n").next().unwrap();
        head.split("\r\n")
            .skip(1)
            .map(|line| {
                let (k, v) = line.split_once(": ").unwrap();
                (
                    format!("HTTP_{}", k.to_ascii_uppercase().replace('-', "_")),
                    Value::from(v),
                )
            })
            .collect()
    }
}

/// Client `me` (A or B): sends varied requests and checks each response shows its own
/// request and nothing else. Returns the boot ids seen.
fn isolation_client(
    addr: std::net::SocketAddr,
    me: &'static str,
    other: &'static str,
    user: &'static str,
    rounds: usize,
    offset: usize,
    barrier: Arc<Rendezvous>,
) -> Vec<String> {
    let _guard = AbortOnPanic(barrier.clone());
    let mut conn = KeepAlive::connect(addr).unwrap();
    let mut boots = Vec::new();
    // Log in: the session cookie comes back.
    barrier.wait();
    let login = Probe {
        query: vec![("client", me.to_string()), ("login", user.to_string())],
        cookies: vec![],
        headers: vec![("X-Client".into(), me.into())],
        post: vec![],
        file: None,
        status: 200,
        mark: None,
    };
    let r = conn.send(&login.request()).unwrap();
    assert_eq!(r.status, 200, "{me} login: {}", r.text());
    let v = json(&r);
    assert_eq!(v["session"]["user"], user, "{me} login: {v}");
    let sid = r
        .headers_all("set-cookie")
        .iter()
        .find_map(|c| c.strip_prefix("PHPSESSID="))
        .map(|c| c.split(';').next().unwrap().to_string())
        .unwrap_or_else(|| panic!("{me}: no session cookie in {:?}", r.headers));
    boots.push(v["boot"].as_str().unwrap().to_string());
    let mut hits = 1;

    for i in 0..rounds {
        let kind = (i + offset) % 4;
        let tag = format!("{me}{i}");
        let cookie_name = if me == "A" { "c_A" } else { "c_B" };
        let mut probe = Probe {
            query: vec![("client", me.to_string()), ("i", i.to_string())],
            cookies: vec![("PHPSESSID", sid.clone()), (cookie_name, tag.clone())],
            headers: vec![
                ("X-Client".into(), me.into()),
                (format!("X-Only-{me}"), tag.clone()),
            ],
            post: vec![],
            file: None,
            status: 200,
            mark: None,
        };
        match kind {
            // Status, header and cookie set by the script.
            0 => {
                let status = if me == "A" { 201 } else { 202 };
                probe.query.push(("status", status.to_string()));
                probe.query.push(("mark", tag.clone()));
                probe.status = status;
                probe.mark = Some(tag.clone());
            }
            // A urlencoded form; one field shadows a query parameter in $_REQUEST.
            1 => {
                probe.post = vec![("field", tag.clone()), ("i", format!("post-{tag}"))];
            }
            // A file upload with a form field.
            2 => {
                probe.post = vec![("field", tag.clone())];
                let field = if me == "A" { "upload_A" } else { "upload_B" };
                probe.file = Some((field, format!("{tag}.txt"), format!("content of {tag}")));
            }
            // Anonymous: no cookies, no extra headers.
            _ => {
                probe.cookies.clear();
                probe.headers.clear();
            }
        }
        barrier.wait();
        let sent = probe.request();
        let r = conn.send(&sent).unwrap();
        let ctx = format!("client {me} round {i} kind {kind}");
        assert_eq!(r.status, probe.status, "{ctx}: status: {}", r.text());
        assert_eq!(
            r.header("x-mark"),
            probe.mark.as_deref(),
            "{ctx}: X-Mark header: {:?}",
            r.headers
        );
        let mark_cookies: Vec<&str> = r
            .headers_all("set-cookie")
            .into_iter()
            .filter(|c| c.starts_with("mark="))
            .collect();
        match &probe.mark {
            Some(m) => assert_eq!(mark_cookies, vec![format!("mark={m}").as_str()], "{ctx}"),
            None => assert!(
                mark_cookies.is_empty(),
                "{ctx}: cookie leaked: {mark_cookies:?}"
            ),
        }
        let v = json(&r);
        boots.push(v["boot"].as_str().unwrap().to_string());

        let get = strings(&probe.query);
        let post = strings(&probe.post);
        assert_eq!(map(&v["get"]), get, "{ctx}: $_GET: {v}");
        assert_eq!(map(&v["post"]), post, "{ctx}: $_POST: {v}");
        let mut request = get.clone();
        request.extend(post.clone());
        assert_eq!(map(&v["request"]), request, "{ctx}: $_REQUEST: {v}");
        assert_eq!(
            map(&v["cookie"]),
            strings(&probe.cookies),
            "{ctx}: $_COOKIE: {v}"
        );
        assert_eq!(
            map(&v["http"]),
            Probe::http_vars(&sent),
            "{ctx}: HTTP_*: {v}"
        );
        let files = map(&v["files"]);
        match &probe.file {
            Some((field, filename, content)) => {
                assert_eq!(files.len(), 1, "{ctx}: $_FILES: {v}");
                let f = &files[*field];
                assert_eq!(f["name"], filename.as_str(), "{ctx}: {v}");
                assert_eq!(f["error"], 0, "{ctx}: {v}");
                assert_eq!(f["size"], content.len(), "{ctx}: {v}");
                assert_eq!(f["content"], content.as_str(), "{ctx}: {v}");
            }
            None => assert!(files.is_empty(), "{ctx}: $_FILES leaked: {v}"),
        }
        let text = r.text();
        assert!(
            !text.contains(&format!("X-Only-{other}"))
                && !text.contains(&format!("X_ONLY_{other}"))
                && !text.contains(&format!("c_{other}"))
                && !text.contains(&format!("upload_{other}")),
            "{ctx}: the other client's data leaked: {text}"
        );

        // The state the handler started with: nothing from the request before.
        let before = &v["before"];
        assert_eq!(before["status"], 200, "{ctx}: status leaked: {v}");
        assert_eq!(
            before["session_status"], 1,
            "{ctx}: session still active: {v}"
        );
        for h in before["headers"].as_array().expect("headers_list") {
            let h = h.as_str().unwrap().to_ascii_lowercase();
            assert!(
                !h.starts_with("x-mark")
                    && !h.starts_with("set-cookie")
                    && !h.starts_with("content-type"),
                "{ctx}: a header leaked into the next request: {v}"
            );
        }

        // The session: our own, with our hit count, or none without the cookie.
        if probe.cookies.is_empty() {
            assert_eq!(v["session"], Value::Null, "{ctx}: session leaked: {v}");
            assert!(
                r.headers_all("set-cookie")
                    .iter()
                    .all(|c| !c.starts_with("PHPSESSID")),
                "{ctx}: session cookie leaked: {:?}",
                r.headers
            );
        } else {
            hits += 1;
            assert_eq!(v["session"]["user"], user, "{ctx}: wrong session: {v}");
            assert_eq!(v["session"]["hits"], hits, "{ctx}: session state lost: {v}");
        }
    }
    boots
}

#[test]
fn superglobals_uploads_headers_status_and_sessions_never_leak_between_clients() {
    let server = serve_worker("leak.php", 1, &[]);
    let rounds = 40;
    let barrier = Rendezvous::new(2);
    let addr = server.addr;
    let a = {
        let barrier = barrier.clone();
        std::thread::spawn(move || isolation_client(addr, "A", "B", "alice", rounds, 0, barrier))
    };
    let b = {
        let barrier = barrier.clone();
        std::thread::spawn(move || isolation_client(addr, "B", "A", "bob", rounds, 2, barrier))
    };
    let (a, b) = (a.join(), b.join());
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => panic!(
            "a client failed (A ok: {}, B ok: {}); stderr:\n{}",
            a.is_ok(),
            b.is_ok(),
            server.stderr()
        ),
    };
    // One PHP thread, never rebooted: every request ran in the same worker script.
    let mut boots: Vec<&String> = a.iter().chain(b.iter()).collect();
    boots.dedup();
    boots.sort();
    boots.dedup();
    assert_eq!(boots.len(), 1, "the worker rebooted: {boots:?}");
}

fn boot_and_served(r: &RawResponse) -> (String, u64) {
    let text = r.text();
    let (boot, served) = text
        .split_once(':')
        .unwrap_or_else(|| panic!("unexpected body {text:?} (status {})", r.status));
    (boot.to_string(), served.parse().unwrap())
}

#[test]
fn output_outside_the_handler_goes_to_the_log_never_to_a_client() {
    let server = serve_worker("chatty.php", 1, &[]);
    for n in 1..=3 {
        let r = server.get("/chatty.php");
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("request {n}"), "response {n}");
        assert_eq!(r.header("x-handled"), Some("yes"));
    }
    assert!(
        server.wait_for_stderr("worker output: boot output", Duration::from_secs(2)),
        "boot output was not logged: {}",
        server.stderr()
    );
}

#[test]
fn an_uncaught_exception_is_a_500_and_the_worker_goes_on() {
    let server = serve_worker("failures.php", 1, &[]);
    let (boot, served) = boot_and_served(&server.get("/failures.php?do=ok"));
    assert_eq!(served, 1);
    for (i, what) in ["throw", "error", "throw"].iter().enumerate() {
        let r = server.get(&format!("/failures.php?do={what}"));
        assert_eq!(r.status, 500, "{what}: {}", r.text());
        let ok = server.get("/failures.php?do=ok");
        assert_eq!(ok.status, 200);
        let (b, s) = boot_and_served(&ok);
        assert_eq!(b, boot, "{what} rebooted the worker script");
        assert_eq!(s, 3 + 2 * i as u64, "{what}: statics lost");
    }
    assert!(
        server.wait_for_stderr(
            "Uncaught RuntimeException: handler failed",
            Duration::from_secs(2)
        ),
        "the exception was not logged: {}",
        server.stderr()
    );
}

#[test]
fn exit_and_fatal_errors_are_a_500_and_reboot_the_worker_script() {
    let server = serve_worker("failures.php", 1, &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    let mut boots = Vec::new();
    for what in ["exit", "fatal", "exit"] {
        let before = conn.get("/failures.php?do=ok").unwrap();
        let (boot, _) = boot_and_served(&before);
        boots.push(boot.clone());
        let r = conn.get(&format!("/failures.php?do={what}")).unwrap();
        assert_eq!(r.status, 500, "{what}: {}", r.text());
        let after = conn.get("/failures.php?do=ok").unwrap();
        assert_eq!(after.status, 200, "{what}: the next request failed");
        let (new_boot, served) = boot_and_served(&after);
        assert_ne!(new_boot, boot, "{what} did not reboot the worker script");
        assert_eq!(served, 1, "{what}: the new boot is not fresh");
    }
    assert!(
        server.wait_for_stderr("fatal in worker", Duration::from_secs(2)),
        "the fatal error was not logged: {}",
        server.stderr()
    );
    // exit() after output: the output is the response, and the script reboots.
    let (boot, _) = boot_and_served(&conn.get("/failures.php?do=ok").unwrap());
    let r = conn.get("/failures.php?do=echo-exit").unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "partial"));
    let (new_boot, _) = boot_and_served(&conn.get("/failures.php?do=ok").unwrap());
    assert_ne!(new_boot, boot);
}

#[test]
fn frankenphp_worker_functions_work_from_a_worker() {
    let server = serve_worker("franken.php", 1, &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();

    // frankenphp_request_headers(), getallheaders(), frankenphp_response_headers() and
    // $_SERVER['FRANKENPHP_WORKER'] (at boot only: FrankenPHP's worker-getopt.php test
    // fails a request that sees it).
    let r = conn
        .send(b"GET /franken.php?do=info HTTP/1.1\r\nHost: localhost\r\nX-Foo: bar\r\nX-Twice: 1\r\nX-Twice: 2\r\n\r\n")
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let v = json(&r);
    assert_eq!(v["worker"], Value::Null, "{v}");
    assert_eq!(v["boot_worker"], "1", "{v}");
    let req = map(&v["request_headers"]);
    assert_eq!(req.get("X-Foo"), Some(&Value::from("bar")), "{v}");
    assert_eq!(req.get("X-Twice"), Some(&Value::from("1, 2")), "{v}");
    assert_eq!(req.get("Host"), Some(&Value::from("localhost")), "{v}");
    assert_eq!(v["getallheaders"], v["request_headers"]);
    let resp = map(&v["response_headers"]);
    assert_eq!(resp.get("X-Custom"), Some(&Value::from("one")), "{v}");
    assert_eq!(resp.get("X-Multi"), Some(&Value::from("a, b")), "{v}");
    assert_eq!(r.header("x-custom"), Some("one"));
    assert_eq!(r.headers_all("x-multi"), vec!["a", "b"]);
    let boot = v["boot"].clone();

    // The next request sees its own headers only.
    let r = conn.get("/franken.php?do=info").unwrap();
    let v = json(&r);
    assert_eq!(v["boot"], boot, "the worker rebooted");
    assert!(!map(&v["request_headers"]).contains_key("X-Foo"), "{v}");

    // headers_send() with a final status sends the head now; later header() calls fail.
    let r = conn.get("/franken.php?do=send").unwrap();
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.header("x-early"), Some("yes"));
    assert_eq!(r.header("x-too-late"), None);
    assert!(r.text().ends_with("after:yes"), "{}", r.text());

    // headers_send(103): an informational head; the final response keeps its own status
    // and headers.
    let r = conn.get("/franken.php?do=hints").unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "hint:103 sent:no");
    assert_eq!(r.header("x-final"), Some("yes"));
    assert_eq!(r.header("link"), None);

    // frankenphp_finish_request(): the response ends, the handler goes on.
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("after-finish");
    let started = Instant::now();
    let r = conn
        .get(&format!(
            "/franken.php?do=finish&ms=1500&marker={}",
            encode(marker.to_str().unwrap())
        ))
        .unwrap();
    let took = started.elapsed();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "before finish");
    assert_eq!(r.header("x-finish"), Some("yes"));
    assert!(
        took < Duration::from_millis(1200),
        "the response waited for the handler: {took:?}"
    );
    assert!(
        !marker.exists(),
        "the handler did not go on after finishing"
    );
    assert!(
        wait_until(Duration::from_secs(5), || std::fs::read_to_string(&marker)
            .is_ok_and(|s| s == "after finish ok=true")),
        "the handler did not complete after finishing the response"
    );
    // The worker serves the next request, still the same boot.
    let v = json(&conn.get("/franken.php?do=info").unwrap());
    assert_eq!(v["boot"], boot);
}

/// hyper 1's server cannot send 1xx responses; `server/src/interim.rs` writes them on
/// HTTP/1.1 connections (frankenphp_module.rs checks both modes and the timing).
#[test]
fn headers_send_103_reaches_the_client_as_early_hints() {
    let server = serve_worker("franken.php", 1, &[]);
    let bytes = common::exchange(
        server.addr,
        b"GET /franken.php?do=hints HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        common::IO_TIMEOUT,
    )
    .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 103"), "no 103 first: {text}");
    assert!(
        text.to_ascii_lowercase().contains("link: </style.css>"),
        "{text}"
    );
    assert!(text.contains("HTTP/1.1 200"), "{text}");
}

#[test]
fn a_config_file_worker_with_match_and_env_serves_paths_that_name_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "[[worker]]\nscript = {:?}\nthreads = 1\nmax_requests = 4\nmatch = \"/api/*\"\n\
             env = {{ GREETING = \"hello-from-config\" }}\n",
            script("api.php")
        ),
    )
    .unwrap();
    let server = Server::start(
        &worker_root(),
        &["--threads", "1", "--config", config.to_str().unwrap()],
    );
    let mut boots: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..10u64 {
        let path = format!("/api/users/{i}?x={i}");
        let r = server.get(&path);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let v = json(&r);
        assert_eq!(v["worker"], Value::Null, "{v}");
        assert_eq!(v["request_uri"], path, "{v}");
        assert_eq!(map(&v["get"]), strings(&[("x", i.to_string())]), "{v}");
        assert_eq!(v["script_filename"], script("api.php"), "{v}");
        assert_eq!(v["boot_greeting"], "hello-from-config", "env at boot: {v}");
        let served = v["served"].as_u64().unwrap();
        assert!(served <= 4, "max_requests from the config ignored: {v}");
        boots.insert(v["boot"].as_str().unwrap().to_string(), served);
    }
    assert!(
        boots.len() >= 3,
        "max_requests = 4 over 10 requests: {boots:?}"
    );
    // Paths outside the pattern are not the worker's.
    assert_eq!(server.get("/apix").status, 404);
    assert_eq!(server.get("/nothing/here").status, 404);
}

/// The worker's `env` reaches its boot request only: requests see neither `$_SERVER`
/// entries nor `getenv()` values (the `[[worker]]` doc says "for this worker's boot and
/// requests").
#[test]
fn worker_env_is_visible_to_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "[env]\nSHARED = \"server\"\n\n[[worker]]\nscript = {:?}\nthreads = 1\nmatch = \"/api/*\"\n\
             env = {{ GREETING = \"hello-from-config\", SHARED = \"worker\" }}\n",
            script("api.php")
        ),
    )
    .unwrap();
    let server = Server::start(
        &worker_root(),
        &["--threads", "1", "--config", config.to_str().unwrap()],
    );
    for _ in 0..3 {
        let v = json(&server.get("/api/env"));
        assert_eq!(v["boot_greeting"], "hello-from-config", "{v}");
        assert_eq!(v["server_greeting"], "hello-from-config", "$_SERVER: {v}");
        assert_eq!(v["getenv_greeting"], "hello-from-config", "getenv(): {v}");
        assert_eq!(
            v["server_shared"], "worker",
            "worker env overrides server env: {v}"
        );
        assert_eq!(
            v["getenv_shared"], "worker",
            "worker env overrides server env: {v}"
        );
    }
}

#[test]
fn a_client_that_disconnects_mid_response_does_not_reboot_the_worker() {
    use std::io::{Read, Write};
    let server = serve_worker("franken.php", 1, &[]);
    let boot = json(&server.get("/franken.php?do=info"))["boot"].clone();
    let tmp = tempfile::tempdir().unwrap();
    for round in 0..2 {
        let marker = tmp.path().join(format!("stream-{round}"));
        let mut stream = common::connect(server.addr);
        write!(
            stream,
            "GET /franken.php?do=stream&marker={} HTTP/1.1\r\nHost: localhost\r\n\r\n",
            encode(marker.to_str().unwrap())
        )
        .unwrap();
        // Take the head and some of the body, then go away.
        let mut buf = [0u8; 16384];
        let n = stream.read(&mut buf).unwrap();
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&buf[..n])
        );
        drop(stream);
        assert!(
            wait_until(Duration::from_secs(10), || marker.exists()),
            "the handler did not run to its end after the client left; stderr:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
        let seen = std::fs::read_to_string(&marker).unwrap();
        // connection_status() 1: CONNECTION_ABORTED, seen by the handler, which stopped early.
        assert!(seen.ends_with("status=1"), "{seen}");
        let chunks: u32 = seen["chunks=".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            chunks < 200,
            "the handler never noticed the client left: {seen}"
        );
        let v = json(&server.get("/franken.php?do=info"));
        assert_eq!(
            v["boot"], boot,
            "round {round}: a client disconnect rebooted the worker"
        );
    }
}

#[test]
fn max_execution_time_limits_each_request_not_the_idle_worker() {
    let server = serve_worker("restart.php", 1, &["-d", "max_execution_time=1"]);
    let boot = |r: &RawResponse| {
        assert_eq!(r.status, 200, "{}", r.text());
        r.text().split(':').next().unwrap().to_string()
    };
    let first = boot(&server.get("/restart.php"));
    // Idle longer than the limit: the boot request's timer must not fire.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        boot(&server.get("/restart.php")),
        first,
        "idling killed the worker"
    );
    // Requests each under the limit, together over it.
    for _ in 0..3 {
        assert_eq!(boot(&server.get("/restart.php?ms=400")), first);
    }
    // A request over the limit is a 500 and reboots the script.
    let r = server.get("/restart.php?ms=1600");
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(server.wait_for_stderr("Maximum execution time of 1 second", Duration::from_secs(2)));
    let next = boot(&server.get("/restart.php"));
    assert_ne!(next, first, "a timed-out worker must reboot");
}

/// `$_SERVER` starts from one shared copy of the environment (a template per distinct
/// environment): a request that changes its `$_SERVER` changes only its own, on any
/// thread; and with an input filter the environment still goes through it.
#[test]
fn each_request_gets_the_environment_as_configured_whatever_earlier_ones_changed() {
    let spec = format!("{},2", script("server_env.php"));
    let start = |extra: &[&str]| {
        let mut args = vec![
            "--threads",
            "1",
            "--worker",
            spec.as_str(),
            "-e",
            "CONFIGURED=yes",
        ];
        args.extend_from_slice(extra);
        Server::start_with_env(&worker_root(), &args, &[("FERRO_TEMPLATE_VAR", "a<b")])
    };
    let server = start(&[]);
    for i in 0..20 {
        let v = json(&server.get(&format!("/server_env.php?n={i}")));
        assert_eq!(v["template_var"], "a<b", "request {i}: {v}");
        assert_eq!(v["configured"], "yes", "request {i}: {v}");
        assert_eq!(v["added"], Value::Null, "request {i}: {v}");
        assert_eq!(v["has_path"], true, "request {i}: {v}");
        assert_eq!(v["uri"], format!("/server_env.php?n={i}"));
    }
    drop(server);
    // A filter sees each value: no template, the same result as PHP's own registration.
    let server = start(&["-d", "filter.default=special_chars"]);
    for _ in 0..3 {
        let v = json(&server.get("/server_env.php"));
        assert_eq!(v["template_var"], "a&#60;b", "{v}");
        assert_eq!(v["configured"], "yes", "{v}");
    }
}

/// A worker request leaves its max_execution_time timer running for the next one (one
/// syscall saved each way). When it fires between requests, neither the next request nor
/// the worker script's own code after its loop (here on an admin restart) may be ended by
/// it.
#[test]
fn a_timer_left_running_by_a_request_never_ends_the_worker_outside_one() {
    let server = serve_worker(
        "timer.php",
        1,
        &["-d", "max_execution_time=1", "--admin", "127.0.0.1:0"],
    );
    for _ in 0..20 {
        assert_eq!(server.get("/timer.php").text(), "served");
    }
    // Past the limit while idle: the timer fires between requests.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(server.get("/timer.php").text(), "served");
    std::thread::sleep(Duration::from_millis(1300));
    let admin = server.admin_addr().unwrap();
    let r = common::client()
        .post(format!("http://{admin}/workers/restart"))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert!(
        server.wait_for_stderr("timer.php: loop ended cleanly", Duration::from_secs(10)),
        "{}",
        server.stderr()
    );
    assert!(
        !server.stderr().contains("Maximum execution time"),
        "{}",
        server.stderr()
    );
    assert_eq!(server.get("/timer.php").text(), "served");
}

/// The server-wide env (`--env`, `[env]`) reaches the worker's requests but not its boot,
/// where applications read their configuration (a Symfony kernel reads APP_ENV there).
#[test]
fn server_env_is_visible_to_the_worker_boot() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "[env]\nSHARED = \"server\"\n\n[[worker]]\nscript = {:?}\nthreads = 1\nmatch = \"/api/*\"\n",
            script("api.php")
        ),
    )
    .unwrap();
    let server = Server::start(
        &worker_root(),
        &["--threads", "1", "--config", config.to_str().unwrap()],
    );
    let v = json(&server.get("/api/env"));
    assert_eq!(v["server_shared"], "server", "{v}");
    assert_eq!(
        v["boot_shared"], "server",
        "the boot request lacks the server env: {v}"
    );
}
