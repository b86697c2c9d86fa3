//! The Mercure hub mounted in the server, over real TCP: the core's conformance table
//! (`mercure/tests/cases`) against `/.well-known/mercure` over HTTP/1.1 and HTTP/2 (h2c),
//! authorization, reconnection and heartbeats through the mount, `mercure_publish()` from
//! a classic request and from a worker reaching SSE subscribers (private updates with and
//! without the claim), the function without a hub, the hub's families on `/metrics`, a
//! subscriber that stops reading closed and counted, the durable history across a
//! restart (and the drain ending open streams), a span per publish, `--hot-reload`, a
//! real browser (headless Chromium) whose `EventSource` shows what PHP published (and,
//! after a restart, the durable history), two instances on one real Redis (Debian's
//! `redis-server`) with the `php` CLI publishing through it and a killed instance's
//! subscriber resuming on the other, and Symfony's Mercure component publishing over
//! HTTP; randomised subscribers, claims and publishes (HTTP and PHP) each receiving
//! exactly what they are entitled to, in order; both roles' keys from JWK Set files;
//! the discovery header on PHP's responses; the hub's own mode in the access log.
//!
//! "Not received" is decided by order, never by waiting: a marker update follows the
//! update under test, and each stream is read up to its marker.

#[path = "../../mercure/tests/cases/mod.rs"]
mod cases;
mod common;
#[path = "../../mercure/tests/reference/mod.rs"]
mod reference;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mercure::sse::{parse_stream, ParsedEvent};
use serde_json::json;

use common::Server;

const PUBLISHER_KEY: &str = "!ChangeThisMercureHubJWTSecretKey!";
const SUBSCRIBER_KEY: &str = "!ChangeThisSubscriberKey!";
const HUB: &str = "/.well-known/mercure";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/mercure")
        .canonicalize()
        .expect("test-data/mercure exists")
}

/// `ferrophp serve` on test-data/mercure with the hub on (HMAC keys, anonymous
/// subscribers allowed) and `extra` flags.
fn start(extra: &[&str]) -> Server {
    let mut args = vec![
        "--threads",
        "2",
        "--mercure-publisher-jwt",
        PUBLISHER_KEY,
        "--mercure-subscriber-jwt",
        SUBSCRIBER_KEY,
        "--mercure-anonymous",
    ];
    args.extend_from_slice(extra);
    Server::start(&root(), &args)
}

/// An HS256 token with `claims`, signed with `key`.
fn jwt(key: &str, claims: serde_json::Value) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let input = format!(
        "{}.{}",
        b64.encode(br#"{"alg":"HS256","typ":"JWT"}"#),
        b64.encode(claims.to_string())
    );
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.as_bytes());
    let tag = ring::hmac::sign(&key, input.as_bytes());
    format!("{input}.{}", b64.encode(tag.as_ref()))
}

fn publisher_token() -> String {
    jwt(PUBLISHER_KEY, json!({"mercure": {"publish": ["*"]}}))
}

fn subscriber_token(subscribe: &[&str]) -> String {
    jwt(SUBSCRIBER_KEY, json!({"mercure": {"subscribe": subscribe}}))
}

fn enc(s: &str) -> String {
    mercure::subscriptions::query_escape(s)
}

fn topics_query(selectors: &[&str]) -> String {
    selectors
        .iter()
        .map(|s| format!("topic={}", enc(s)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The HTTP/1.1 client, or the HTTP/2 one (h2c with prior knowledge).
fn client(http2: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder().timeout(Duration::from_secs(60));
    let builder = if http2 {
        builder.http2_prior_knowledge()
    } else {
        builder.http1_only()
    };
    builder.build().unwrap()
}

/// A subscription over HTTP: the response whose body is the event stream.
async fn subscribe(
    client: &reqwest::Client,
    server: &Server,
    selectors: &[&str],
    token: Option<&str>,
) -> reqwest::Response {
    let mut req = client.get(server.url(&format!("{HUB}?{}", topics_query(selectors))));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.expect("subscribe");
    assert_eq!(resp.status(), 200, "subscribe {selectors:?}");
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    resp
}

/// Publishes `form` over HTTP with the publisher's token: (status, body).
async fn publish_http(client: &reqwest::Client, server: &Server, form: &str) -> (u16, String) {
    let resp = client
        .post(server.url(HUB))
        .bearer_auth(publisher_token())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .expect("publish");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Reads the stream until the event with id `marker` (inclusive); fails after 10 s.
async fn read_until(resp: &mut reqwest::Response, marker: &str) -> Vec<ParsedEvent> {
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("no event {marker:?} within 10 s; got {text:?}"))
            .expect("stream error")
            .unwrap_or_else(|| panic!("stream ended before {marker:?}; got {text:?}"));
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        let events = parse_stream(&text);
        if events.iter().any(|e| e.id.as_deref() == Some(marker)) {
            return events;
        }
    }
}

fn ids(events: &[ParsedEvent]) -> Vec<&str> {
    events.iter().filter_map(|e| e.id.as_deref()).collect()
}

/// `GET path` on the server with a client, as text with its status.
async fn get(client: &reqwest::Client, server: &Server, path: &str) -> (u16, String) {
    let resp = client.get(server.url(path)).send().await.expect("GET");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_table_over_http1_and_http2() {
    let server = start(&[]);
    for http2 in [false, true] {
        let proto = if http2 { "h2" } else { "h1" };
        let client = client(http2);
        for (i, case) in cases::CASES.iter().enumerate() {
            let marker = format!("urn:marker:{proto}:{i}");
            let mut selectors = case.selectors.to_vec();
            selectors.push(&marker);
            let token = case.subscribe_claim.map(subscriber_token);
            let mut sub = subscribe(&client, &server, &selectors, token.as_deref()).await;
            let expected = if http2 {
                reqwest::Version::HTTP_2
            } else {
                reqwest::Version::HTTP_11
            };
            assert_eq!(sub.version(), expected);

            let id = format!("{proto}-{i}");
            let data = format!("data for\n\n        {}", case.name);
            let mut form = case
                .update_topics
                .iter()
                .map(|t| format!("topic={}", enc(t)))
                .collect::<Vec<_>>();
            form.push(format!("id={}", enc(&id)));
            form.push(format!("data={}", enc(&data)));
            if case.private {
                form.push("private=on".into());
            }
            let (status, body) = publish_http(&client, &server, &form.join("&")).await;
            assert_eq!((status, body.as_str()), (200, id.as_str()), "{}", case.name);
            let (status, _) = publish_http(
                &client,
                &server,
                &format!("topic={}&id={}", enc(&marker), enc(&marker)),
            )
            .await;
            assert_eq!(status, 200);

            let events = read_until(&mut sub, &marker).await;
            let got = events.iter().find(|e| e.id.as_deref() == Some(id.as_str()));
            assert_eq!(
                got.is_some(),
                case.must_receive,
                "{proto} case {:?}",
                case.name
            );
            if let Some(e) = got {
                assert_eq!(e.data, data, "{proto} {}", case.name);
            }
        }
    }
    server.assert_alive();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_reconnection_and_heartbeats_through_the_mount() {
    // The keys from the environment, as FrankenPHP's image takes them; no anonymous
    // subscribers here; heartbeats every 100 ms.
    let server = Server::start_with_env(
        &root(),
        &["--threads", "1", "--mercure-heartbeat", "100ms"],
        &[
            ("MERCURE_PUBLISHER_JWT_KEY", PUBLISHER_KEY),
            ("MERCURE_SUBSCRIBER_JWT_KEY", SUBSCRIBER_KEY),
        ],
    );
    let client = client(false);
    // Publishing needs the publisher's token with a mercure.publish claim.
    let form = "topic=a&data=x";
    let no_token = client
        .post(server.url(HUB))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), 401);
    for token in [
        // Signed with the subscribers' key.
        jwt(SUBSCRIBER_KEY, json!({"mercure": {"publish": ["*"]}})),
        // No publish claim.
        jwt(PUBLISHER_KEY, json!({"mercure": {"subscribe": ["*"]}})),
        // Expired.
        jwt(
            PUBLISHER_KEY,
            json!({"mercure": {"publish": ["*"]}, "exp": 1_000_000_000}),
        ),
        "not.a.jwt".to_owned(),
    ] {
        let resp = client
            .post(server.url(HUB))
            .bearer_auth(&token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "token {token}");
    }
    // Subscribing needs a token here.
    let (status, _) = get(&client, &server, &format!("{HUB}?topic=a")).await;
    assert_eq!(status, 401);
    let (status, _) = get(&client, &server, HUB).await;
    assert_eq!(status, 401);

    // Reconnection: the history replays what came after Last-Event-ID.
    let token = subscriber_token(&["*"]);
    for i in 1..=3 {
        let (status, _) =
            publish_http(&client, &server, &format!("topic=r&id=r{i}&data=d{i}")).await;
        assert_eq!(status, 200);
    }
    let mut resumed = client
        .get(server.url(&format!("{HUB}?topic=r")))
        .bearer_auth(&token)
        .header("last-event-id", "r1")
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    assert_eq!(resumed.headers()["last-event-id"], "r1");
    assert_eq!(ids(&read_until(&mut resumed, "r3").await), ["r2", "r3"]);

    // An idle stream carries heartbeat comments.
    let mut idle = subscribe(&client, &server, &["quiet"], Some(&token)).await;
    let started = Instant::now();
    let mut text = String::new();
    while started.elapsed() < Duration::from_millis(800) {
        if let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_millis(200), idle.chunk()).await
        {
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
    let comments = text.lines().filter(|l| l.starts_with(':')).count();
    assert!(
        comments >= 3,
        "expected heartbeats every 100 ms, got {text:?}"
    );
    assert!(parse_stream(&text).is_empty(), "no events: {text:?}");

    // Not the hub's paths: the app's routing (404 here), and the hub's 405.
    let (status, _) = get(&client, &server, "/.well-known/mercurex").await;
    assert_eq!(status, 404);
    let put = client.put(server.url(HUB)).send().await.unwrap();
    assert_eq!(put.status(), 405);
    server.assert_alive();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mercure_publish_from_a_classic_request_and_a_worker_reaches_subscribers() {
    let worker = format!("{}/worker.php,1", root().display());
    let server = start(&["--worker", &worker, "--admin", "127.0.0.1:0"]);
    for http2 in [false, true] {
        let client = client(http2);
        let p = if http2 { "h2" } else { "h1" };
        let topic = format!("https://example.com/books/{p}");
        let marker = format!("urn:marker:php:{p}");
        // An anonymous subscriber, and one whose claim covers the topic.
        let mut anonymous = subscribe(&client, &server, &[&topic, &marker], None).await;
        let token = subscriber_token(&["https://example.com/books/{id}", &marker]);
        let mut entitled = subscribe(&client, &server, &[&topic, &marker], Some(&token)).await;

        // Classic: a public update with every field.
        let (status, id) = get(
            &client,
            &server,
            &format!(
                "/publish.php?topic={}&data={}&id=classic-{p}&type=book&retry=1500",
                enc(&topic),
                enc("from a classic request")
            ),
        )
        .await;
        assert_eq!(
            (status, id.as_str()),
            (200, format!("classic-{p}").as_str())
        );
        // Worker: the id is generated (a urn:uuid).
        let (status, worker_id) = get(
            &client,
            &server,
            &format!(
                "/worker.php?topic={}&data={}",
                enc(&topic),
                enc("from a worker")
            ),
        )
        .await;
        assert_eq!(status, 200, "{worker_id}");
        assert!(worker_id.starts_with("urn:uuid:"), "{worker_id}");
        // Private, from the worker, with alternate topics (an array).
        let (status, private_id) = get(
            &client,
            &server,
            &format!(
                "/worker.php?topics[]={}&topics[]=urn:other&data=secret&private=1&id=private-{p}",
                enc(&topic)
            ),
        )
        .await;
        assert_eq!(
            (status, private_id.as_str()),
            (200, format!("private-{p}").as_str())
        );
        let (status, _) = get(
            &client,
            &server,
            &format!("/publish.php?topic={}&id={}", enc(&marker), enc(&marker)),
        )
        .await;
        assert_eq!(status, 200);

        let seen = read_until(&mut anonymous, &marker).await;
        assert_eq!(
            ids(&seen),
            [format!("classic-{p}").as_str(), &worker_id, &marker],
            "the anonymous subscriber gets the public updates only, in order"
        );
        let classic = &seen[0];
        assert_eq!(classic.data, "from a classic request");
        assert_eq!(classic.event_type.as_deref(), Some("book"));
        assert_eq!(classic.retry, Some(1500));
        assert_eq!(seen[1].data, "from a worker");
        let seen = read_until(&mut entitled, &marker).await;
        assert_eq!(
            ids(&seen),
            [
                format!("classic-{p}").as_str(),
                &worker_id,
                &format!("private-{p}"),
                &marker
            ]
        );
        assert_eq!(seen[2].data, "secret");
    }

    // Bad arguments are PHP's errors; the server goes on.
    let client = client(false);
    let (status, body) = get(&client, &server, "/publish.php?topics[0][]=x").await;
    assert_eq!(status, 500);
    assert!(
        body.starts_with("TypeError: mercure_publish(): Argument #1 ($topics) must be a string or an array of strings"),
        "{body}"
    );
    let (status, body) = get(
        &client,
        &server,
        "/publish.php?topic=/.well-known/mercure/x",
    )
    .await;
    assert_eq!(status, 500);
    assert!(
        body.starts_with("RuntimeException: mercure_publish() could not publish"),
        "{body}"
    );
    let (status, body) = get(&client, &server, "/publish.php?topic=t&retry=-1").await;
    assert_eq!(status, 500);
    assert!(
        body.starts_with("ValueError: mercure_publish(): Argument #6 ($retry)"),
        "{body}"
    );
    let (status, body) = get(&client, &server, "/publish.php?topic=t&id=earliest").await;
    assert_eq!(status, 500);
    assert!(
        body.starts_with("RuntimeException: mercure_publish() could not publish"),
        "{body}"
    );

    // The hub's families on /metrics.
    let admin = server.admin_addr().expect("admin listener");
    let metrics = client
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{metrics}"))
            .parse()
            .unwrap()
    };
    // 4 per protocol; the refused ones are errors.
    assert_eq!(value("ferrophp_mercure_updates_published_total"), 8.0);
    assert_eq!(value("ferrophp_mercure_publish_errors_total"), 2.0);
    assert!(value("ferrophp_mercure_updates_delivered_total") >= 14.0);
    assert_eq!(value("ferrophp_mercure_subscribers"), 0.0);
    assert_eq!(value("ferrophp_mercure_transport_connected"), 1.0);
    // Every publish's fan-out is timed.
    assert_eq!(value("ferrophp_mercure_fanout_seconds_count"), 8.0);
    assert!(metrics.contains("ferrophp_mercure_fanout_seconds{quantile=\"0.99\"}"));
    server.assert_alive();
}

#[test]
fn without_a_hub_mercure_publish_throws_and_the_path_is_the_apps() {
    let server = Server::start(&root(), &["--threads", "1"]);
    let r = server.get("/publish.php?topic=t&data=x");
    assert_eq!(r.status, 500);
    let text = r.text();
    assert!(
        text.starts_with("RuntimeException: mercure_publish() needs a Mercure hub"),
        "{text}"
    );
    assert_eq!(server.get(HUB).status, 404);
    // A subscriber key alone, or a publisher key without a way to subscribe, is refused
    // at start.
    let exited = common::serve_until_exit(
        &root(),
        &["--mercure-publisher-jwt", "k"],
        Duration::from_secs(30),
    );
    assert_eq!(
        exited.status.and_then(|s| s.code()),
        Some(2),
        "{}",
        exited.stderr
    );
    assert!(
        exited.stderr.contains("subscriber key"),
        "{}",
        exited.stderr
    );
}

/// The DOM of `page` on `server` as headless Chromium (Debian's `chromium`) leaves it
/// after a virtual-time budget (the page closes its stream once done, so the budget can
/// run out; a page that never gets its updates is cut after 60 s).
fn browser_dom(server: &Server, page: &str) -> String {
    let url = server.url(page);
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new("timeout")
        .args([
            "60",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
            "--virtual-time-budget=5000",
            "--dump-dom",
            &url,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("chromium (Debian package chromium) must be installed");
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    if !dom.contains("<p id=\"state\">received") {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr: Vec<&str> = stderr.lines().filter(|l| !l.contains("dbus")).collect();
        panic!(
            "the page did not receive its updates; DOM:\n{dom}\nstderr:\n{}",
            stderr.join("\n")
        );
    }
    dom
}

/// test-data/mercure/browser.html in a real browser: its `EventSource` subscribes, and
/// once open it asks publish.php to `mercure_publish()`; the page lists what it received.
/// Then, after a restart with the durable history, a page that subscribes with
/// `lastEventID=earliest` shows what the previous server published.
#[test]
fn a_browser_event_source_shows_what_php_published() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap().to_owned();
    let mut server = start(&["--data-dir", &dir]);
    let topic = format!("browser-{}", std::process::id());
    let dom = browser_dom(&server, &format!("/browser.html?topic={topic}"));
    let expected = format!("<li class=\"update\">hello from PHP to {topic}</li>");
    assert!(dom.contains(&expected), "{dom}");
    let r = server.get(&format!("/publish.php?topic={topic}&data=second&id=b2"));
    assert_eq!(r.status, 200);
    server.sigterm();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());

    let server = start(&["--data-dir", &dir]);
    let dom = browser_dom(
        &server,
        &format!("/browser.html?topic={topic}&last=earliest&publish=0&expect=2"),
    );
    assert!(
        dom.contains(&format!("{expected}<li class=\"update\">second</li>")),
        "{dom}"
    );
    server.assert_alive();
}

/// A real `redis-server` on a free loopback port, killed (by its pid) on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        // Bound and released: redis-server has no `--port 0`.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian package redis-server) must be installed");
        assert!(
            common::wait_until(Duration::from_secs(10), || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            }),
            "redis-server did not start"
        );
        Redis { child, port }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the instance's hub reports its Redis transport connected.
async fn wait_connected(client: &reqwest::Client, server: &Server) {
    let admin = server.admin_addr().expect("admin listener");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = client
            .get(format!("http://{admin}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if metrics.contains("ferrophp_mercure_transport_connected 1") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not connected to Redis:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_redis_and_the_php_cli_publishing_through_it() {
    let redis = Redis::start();
    let url = redis.url();
    let flags = ["--mercure-transport", &url, "--admin", "127.0.0.1:0"];
    let a = start(&flags);
    let b = start(&flags);
    let client = client(false);
    wait_connected(&client, &a).await;
    wait_connected(&client, &b).await;

    let mut on_b = subscribe(&client, &b, &["shared", "urn:marker:redis"], None).await;
    let (status, id) = get(&client, &a, "/publish.php?topic=shared&data=from-a&id=a1").await;
    assert_eq!((status, id.as_str()), (200, "a1"));
    let (status, _) = publish_http(&client, &b, "topic=shared&data=from-b&id=b1").await;
    assert_eq!(status, 200);

    // The php CLI publishes through the same Redis stream.
    let cli = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .args([
            "php-cli",
            "-r",
            "echo mercure_publish(['shared'], 'from the cli', false, 'cli1');",
        ])
        .env("FERROPHP_MERCURE_TRANSPORT", &url)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&cli.stdout),
        "cli1",
        "stderr: {}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert!(cli.status.success());
    let (status, _) = get(
        &client,
        &a,
        "/publish.php?topic=urn:marker:redis&id=urn:marker:redis",
    )
    .await;
    assert_eq!(status, 200);

    let seen = read_until(&mut on_b, "urn:marker:redis").await;
    assert_eq!(ids(&seen), ["a1", "b1", "cli1", "urn:marker:redis"]);
    assert_eq!(seen[0].data, "from-a");
    assert_eq!(seen[2].data, "from the cli");

    // A subscriber of A resumes from the shared history.
    let mut resumed = client
        .get(a.url(&format!("{HUB}?topic=shared")))
        .header("last-event-id", "a1")
        .send()
        .await
        .unwrap();
    assert_eq!(ids(&read_until(&mut resumed, "cli1").await), ["b1", "cli1"]);

    // B dies (SIGKILL) while A goes on publishing; its subscriber reconnects to A with
    // the last id it saw and misses nothing.
    drop(on_b);
    drop(b);
    for i in 2..=4 {
        let (status, _) = get(
            &client,
            &a,
            &format!("/publish.php?topic=shared&id=a{i}&data=while-b-is-down"),
        )
        .await;
        assert_eq!(status, 200);
    }
    let mut moved = client
        .get(a.url(&format!("{HUB}?topic=shared")))
        .header("last-event-id", "urn:marker:redis")
        .send()
        .await
        .unwrap();
    assert_eq!(ids(&read_until(&mut moved, "a4").await), ["a2", "a3", "a4"]);

    // Without a transport, the CLI has no hub and says so.
    let cli = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .args([
            "php-cli",
            "-r",
            "try { mercure_publish('t'); } catch (RuntimeException $e) { echo $e->getMessage(); }",
        ])
        .env_remove("FERROPHP_MERCURE_TRANSPORT")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&cli.stdout).starts_with("mercure_publish() needs a Mercure hub"),
        "{}",
        String::from_utf8_lossy(&cli.stdout)
    );
    a.assert_alive();
}

/// Symfony's Mercure component (Debian's `php-symfony-mercure`, over Symfony's
/// HttpClient) publishing from a page to the server's own hub over HTTP with the
/// publisher's JWT; a wrong token is the hub's 401, which Symfony reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symfonys_mercure_component_publishes_over_http_with_a_jwt() {
    assert!(
        Path::new("/usr/share/php/Symfony/Component/Mercure/autoload.php").exists(),
        "php-symfony-mercure (Debian) must be installed"
    );
    let server = start(&[]);
    let client = client(false);
    let mut sub = subscribe(&client, &server, &["symfony", "urn:marker:symfony"], None).await;
    let (status, id) = get(
        &client,
        &server,
        &format!(
            "/symfony.php?topic=symfony&data={}&jwt={}",
            enc("from Symfony"),
            publisher_token()
        ),
    )
    .await;
    assert_eq!(status, 200, "{id}");
    assert!(id.starts_with("urn:uuid:"), "{id}");
    let wrong = jwt(SUBSCRIBER_KEY, json!({"mercure": {"publish": ["*"]}}));
    let (status, body) = get(&client, &server, &format!("/symfony.php?jwt={wrong}")).await;
    assert_eq!(status, 500);
    assert!(body.contains("401"), "{body}");
    let (status, _) = publish_http(
        &client,
        &server,
        "topic=urn:marker:symfony&id=urn:marker:symfony",
    )
    .await;
    assert_eq!(status, 200);
    let seen = read_until(&mut sub, "urn:marker:symfony").await;
    assert_eq!(ids(&seen), [id.as_str(), "urn:marker:symfony"]);
    assert_eq!(seen[0].data, "from Symfony");
    server.assert_alive();
}

/// Reads a stream to its end (10 s at most).
async fn read_to_end(resp: &mut reqwest::Response) -> String {
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
        .await
        .expect("the stream did not end within 10 s")
        .unwrap_or(None)
    {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    text
}

/// With a data directory the history is on disk (`<data-dir>/mercure`): a restarted server
/// replays what the last one published. SIGTERM ends open streams at once (the hub stops
/// first in the drain), so the server exits well within its grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_history_survives_a_restart_and_shutdown_ends_streams() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap().to_owned();
    let flags = ["--data-dir", dir.as_str(), "--grace-ms", "20000"];
    let client = client(false);
    let mut first = start(&flags);
    let mut open = subscribe(&client, &first, &["durable"], None).await;
    for i in 1..=3 {
        let (status, _) = get(
            &client,
            &first,
            &format!("/publish.php?topic=durable&id=d{i}&data=kept{i}"),
        )
        .await;
        assert_eq!(status, 200);
    }
    assert_eq!(ids(&read_until(&mut open, "d3").await), ["d1", "d2", "d3"]);
    let stopping = Instant::now();
    first.sigterm();
    read_to_end(&mut open).await;
    assert!(first.wait_exit(Duration::from_secs(10)).is_some());
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "an open event stream held the drain: {:?}",
        stopping.elapsed()
    );
    assert!(data.path().join("mercure").is_dir());

    let second = start(&flags);
    let mut resumed = client
        .get(second.url(&format!("{HUB}?topic=durable")))
        .header("last-event-id", "d1")
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.headers()["last-event-id"], "d1");
    let seen = read_until(&mut resumed, "d3").await;
    assert_eq!(ids(&seen), ["d2", "d3"]);
    assert_eq!(seen[1].data, "kept3");
    let mut everything = client
        .get(second.url(&format!("{HUB}?topic=durable&lastEventID=earliest")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        ids(&read_until(&mut everything, "d3").await),
        ["d1", "d2", "d3"]
    );
    second.assert_alive();
}

/// With tracing on, each publish is a `mercure.publish` span (kind producer) under the
/// request that published: PHP's `mercure_publish()` and an HTTP POST alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_publish_is_a_span_under_its_request() {
    let collector = common::collector::Collector::start(&[]);
    let env = common::collector::otel_env(&collector.endpoint());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_with_env(
        &root(),
        &[
            "--threads",
            "1",
            "--mercure-publisher-jwt",
            PUBLISHER_KEY,
            "--mercure-anonymous",
        ],
        &env,
    );
    let client = client(false);
    for (i, php) in [true, false].into_iter().enumerate() {
        let trace_id = format!("{:016x}{:016x}", std::process::id(), 0x5a00 + i);
        let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
        let req = if php {
            client.get(server.url("/publish.php?topic=traced&data=x&id=t-php"))
        } else {
            client
                .post(server.url(HUB))
                .bearer_auth(publisher_token())
                .header("content-type", "application/x-www-form-urlencoded")
                .body("topic=traced&data=x&id=t-http")
        };
        let resp = req
            .header("traceparent", &traceparent)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let spans = collector.trace(&trace_id, 2);
        let server_span = spans.iter().find(|s| s["kind"] == 2).expect("server span");
        let publish = spans
            .iter()
            .find(|s| s["name"] == "mercure.publish")
            .unwrap_or_else(|| panic!("no mercure.publish span: {spans:#?}"));
        assert_eq!(publish["kind"], 4, "producer");
        assert_eq!(
            publish["parent_span_id"], server_span["span_id"],
            "{spans:#?}"
        );
        let id = if php { "t-php" } else { "t-http" };
        assert!(
            publish["attributes"].to_string().contains(id),
            "{publish:#}"
        );
    }
    server.assert_alive();
}

/// `--hot-reload` with `--watch`: a changed file is published on the hot-reload topic
/// (what `$_SERVER['FRANKENPHP_HOT_RELOAD']` names, and the served client script
/// subscribes to); without `--watch` or anonymous subscribers it is refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reload_publishes_changed_files() {
    let app = tempfile::tempdir().unwrap();
    let dir = app.path().canonicalize().unwrap();
    std::fs::copy(root().join("hello.php"), dir.join("hello.php")).unwrap();
    std::fs::write(
        dir.join("page.php"),
        "<?php echo $_SERVER['FRANKENPHP_HOT_RELOAD'] ?? 'none';",
    )
    .unwrap();
    let glob = format!("{}/*.php", dir.display());
    let server = Server::start(
        &dir,
        &[
            "--threads",
            "1",
            "--watch",
            &glob,
            "--hot-reload",
            "--mercure-publisher-jwt",
            PUBLISHER_KEY,
            "--mercure-anonymous",
        ],
    );
    let client = client(false);
    let (status, url) = get(&client, &server, "/page.php").await;
    assert_eq!(status, 200);
    assert!(url.starts_with("/.well-known/mercure?topic="), "{url}");
    let script = client
        .get(server.url("/.well-known/ferrophp/hot-reload.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert!(script.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(script
        .text()
        .await
        .unwrap()
        .contains("new EventSource(url)"));

    let mut sub = client.get(server.url(&url)).send().await.unwrap();
    assert_eq!(sub.status(), 200);
    // The watcher is armed once the server serves; a change now is announced.
    std::fs::write(dir.join("page.php"), "<?php echo 'changed';").unwrap();
    let mut text = String::new();
    let events = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), sub.chunk())
            .await
            .unwrap_or_else(|_| panic!("no change event within 10 s; got {text:?}"))
            .unwrap()
            .expect("stream open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        let events = parse_stream(&text);
        if !events.is_empty() {
            break events;
        }
    };
    let change: serde_json::Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(
        change["changed"],
        json!([dir.join("page.php").display().to_string()]),
        "{change}"
    );
    server.assert_alive();

    for (flags, why) in [
        (
            vec![
                "--hot-reload",
                "--mercure-publisher-jwt",
                "k",
                "--mercure-anonymous",
            ],
            "--watch",
        ),
        (
            vec![
                "--hot-reload",
                "--watch",
                glob.as_str(),
                "--mercure-publisher-jwt",
                "k",
                "--mercure-subscriber-jwt",
                "s",
            ],
            "anonymous",
        ),
    ] {
        let exited = common::serve_until_exit(&dir, &flags, Duration::from_secs(30));
        assert_eq!(
            exited.status.and_then(|s| s.code()),
            Some(2),
            "{}",
            exited.stderr
        );
        assert!(exited.stderr.contains(why), "{}", exited.stderr);
    }
}

/// A subscriber that stops reading is closed by the hub once its buffer is full (the
/// kernel's socket buffers fill first), counted on `/metrics`, and the server goes on;
/// publishing never waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_closed_and_counted() {
    use std::io::{Read, Write};
    let server = start(&["--admin", "127.0.0.1:0"]);
    // A small receive window, so the server's writes stall early.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&server.addr.into()).unwrap();
    let mut stalled: std::net::TcpStream = socket.into();
    write!(
        stalled,
        "GET {HUB}?topic=flood HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    let client = client(false);
    let admin = server.admin_addr().unwrap();
    let metric = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .map_or(0.0, |v| v.parse().unwrap())
    };
    let scrape = || async {
        client
            .get(format!("http://{admin}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    // Until the subscriber is registered.
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(&scrape().await, "ferrophp_mercure_subscribers") < 1.0 {
        assert!(Instant::now() < deadline, "the subscriber never registered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // 16 MiB: more than the socket buffers and the subscriber's 1000-update buffer.
    let started = Instant::now();
    let (status, body) = get(&client, &server, "/flood.php?n=8000&size=2048").await;
    assert_eq!((status, body.as_str()), (200, "8000"));
    let publishing = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(10);
    let metrics = loop {
        let metrics = scrape().await;
        if metric(&metrics, "ferrophp_mercure_slow_subscribers_closed_total") >= 1.0 {
            break metrics;
        }
        assert!(Instant::now() < deadline, "not closed:\n{metrics}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        metric(&metrics, "ferrophp_mercure_updates_dropped_total") >= 1000.0,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "ferrophp_mercure_updates_published_total"),
        8000.0
    );
    // The stalled client finds its response ended once it reads again.
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut received = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stalled.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) => panic!("the closed stream did not end: {e}"),
        }
        if received.ends_with(b"0\r\n\r\n") {
            break;
        }
    }
    assert!(received.len() < 16 << 20, "{} bytes", received.len());
    eprintln!("8000 publishes of 2 KiB with a stalled subscriber: {publishing:?}");
    server.assert_alive();
}

struct RandomSub {
    selectors: Vec<usize>,
    claim: Option<Vec<usize>>,
    /// (id, data) of the updates it is entitled to, in publish order.
    expected: Vec<(String, String)>,
    stream: reqwest::Response,
}

/// Randomised entitlement through the server (the core's `entitlement.rs` over real TCP):
/// subscribers with random selector sets and claims join, over HTTP/1.1 or HTTP/2, and
/// leave at random points; random public and private updates (some with multi-line data)
/// are published over HTTP or by PHP's `mercure_publish()`, one after the other. Every
/// subscriber still open at the end must have read exactly the updates it is entitled to
/// by the reference rules (`mercure/tests/reference`), in publish order, with their data,
/// and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_subscribers_receive_exactly_their_updates_in_order() {
    let server = start(&[]);
    let clients = [client(false), client(true)];
    for seed in 0..3u64 {
        random_entitlement(&server, &clients, seed).await;
    }
    server.assert_alive();
}

async fn random_entitlement(server: &Server, clients: &[reqwest::Client; 2], seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let marker = format!("urn:marker:random:{seed}");
    let mut subs: Vec<RandomSub> = Vec::new();
    let (mut published, mut by_php, mut private) = (0, 0, 0);
    for step in 0..250 {
        match rng.u8(0..10) {
            0..=2 => {
                let selectors = reference::pick(&mut rng, 3);
                let claim = match rng.u8(0..3) {
                    0 => None,
                    1 => Some(Vec::new()),
                    _ => Some(reference::pick(&mut rng, 2)),
                };
                let mut texts: Vec<&str> = reference::texts(&selectors);
                texts.push(&marker);
                let token = claim
                    .as_ref()
                    .map(|c| subscriber_token(&reference::texts(c)));
                let client = &clients[usize::from(rng.bool())];
                let stream = subscribe(client, server, &texts, token.as_deref()).await;
                subs.push(RandomSub {
                    selectors,
                    claim,
                    expected: Vec::new(),
                    stream,
                });
            }
            // Leave: the others must not notice.
            3 if !subs.is_empty() && rng.u8(0..4) == 0 => {
                drop(subs.swap_remove(rng.usize(0..subs.len())));
            }
            _ => {
                let topics: Vec<String> = (0..rng.usize(1..=3))
                    .map(|_| reference::random_topic(&mut rng))
                    .collect();
                let is_private = rng.u8(0..10) < 4;
                let id = format!("s{seed}-u{step}");
                let data = if rng.u8(0..4) == 0 {
                    format!("d{step}\nsecond line")
                } else {
                    format!("d{step}")
                };
                for s in subs.iter_mut() {
                    if reference::entitled(&s.selectors, s.claim.as_deref(), &topics, is_private) {
                        s.expected.push((id.clone(), data.clone()));
                    }
                }
                let mut query: Vec<String> =
                    topics.iter().map(|t| format!("topic={}", enc(t))).collect();
                query.push(format!("id={id}&data={}", enc(&data)));
                let client = &clients[0];
                let (status, body) = if rng.u8(0..3) == 0 {
                    // PHP: `topics[]` is mercure_publish()'s array of topics.
                    let mut q = query.join("&").replace("topic=", "topics[]=");
                    if is_private {
                        q.push_str("&private=1");
                    }
                    by_php += 1;
                    get(client, server, &format!("/publish.php?{q}")).await
                } else {
                    if is_private {
                        query.push("private=on".into());
                    }
                    publish_http(client, server, &query.join("&")).await
                };
                assert_eq!((status, body.as_str()), (200, id.as_str()), "seed {seed}");
                published += 1;
                private += usize::from(is_private);
            }
        }
    }
    let (status, _) = publish_http(
        &clients[0],
        server,
        &format!("topic={}&id={}", enc(&marker), enc(&marker)),
    )
    .await;
    assert_eq!(status, 200);
    let mut checked = 0;
    for s in subs.iter_mut() {
        let events = read_until(&mut s.stream, &marker).await;
        let got: Vec<(String, String)> = events
            .iter()
            .filter(|e| e.id.as_deref() != Some(marker.as_str()))
            .map(|e| (e.id.clone().unwrap_or_default(), e.data.clone()))
            .collect();
        assert_eq!(
            got,
            s.expected,
            "seed {seed}: selectors {:?} claim {:?}",
            reference::texts(&s.selectors),
            s.claim.as_deref().map(reference::texts)
        );
        checked += got.len();
    }
    assert!(
        published > 100 && by_php > 20 && private > 20 && checked > 100 && subs.len() > 20,
        "seed {seed}: a meaningful run ({published} published, {by_php} by PHP, \
         {private} private, {checked} received by {} subscribers)",
        subs.len()
    );
}

/// A JWT signed with the test key `fixtures/<file>` (PKCS#8 PEM) of the core's tests:
/// `ES256` (P-256) or `RS256`, with `kid`.
fn jwt_signed_with(file: &str, alg: &str, kid: &str, claims: serde_json::Value) -> String {
    let pem = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../mercure/tests/fixtures/{file}")),
    )
    .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let der = b64
        .decode(
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .unwrap();
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let input = format!(
        "{}.{}",
        url.encode(json!({"alg": alg, "typ": "JWT", "kid": kid}).to_string()),
        url.encode(claims.to_string())
    );
    let rng = ring::rand::SystemRandom::new();
    let signature = match alg {
        "ES256" => {
            let key = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &rng,
            )
            .unwrap();
            key.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec()
        }
        "RS256" => {
            let key = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
            let mut sig = vec![0; key.public().modulus_len()];
            key.sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &rng,
                input.as_bytes(),
                &mut sig,
            )
            .unwrap();
            sig
        }
        _ => unreachable!("{alg}"),
    };
    format!("{input}.{}", url.encode(signature))
}

/// `--mercure-publisher-jwks` / `--mercure-subscriber-jwks`: both roles' keys from a JWK
/// Set file (the core's fixture: an RSA key `rsa-1` and a P-256 key `ec-1`); a token's
/// `kid` picks the key. Tokens of another key, an unknown `kid` or an HMAC secret are
/// refused; a key and a JWK Set for one role, or a JWK Set that cannot be read, stop the
/// server at start with the setting named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_jwk_set_files() {
    let jwks = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mercure/tests/fixtures/jwks.json")
        .canonicalize()
        .unwrap();
    let jwks = jwks.to_str().unwrap();
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "1",
            "--mercure-publisher-jwks",
            jwks,
            "--mercure-subscriber-jwks",
            jwks,
        ],
    );
    let client = client(false);
    let sub_claims = json!({"mercure": {"subscribe": ["jwks", "urn:marker:jwks"]}});
    let subscriber = jwt_signed_with("rs256.key", "RS256", "rsa-1", sub_claims.clone());
    let mut stream = subscribe(
        &client,
        &server,
        &["jwks", "urn:marker:jwks"],
        Some(&subscriber),
    )
    .await;
    // Refused subscribers: another RSA key under the same kid, an unknown kid, an HMAC
    // token (no secret is configured), no token (no anonymous subscribers).
    for token in [
        Some(jwt_signed_with(
            "rs256-other.key",
            "RS256",
            "rsa-1",
            sub_claims.clone(),
        )),
        Some(jwt_signed_with(
            "es256.key",
            "ES256",
            "nope",
            sub_claims.clone(),
        )),
        Some(jwt(SUBSCRIBER_KEY, sub_claims.clone())),
        None,
    ] {
        let mut req = client.get(server.url(&format!("{HUB}?topic=jwks")));
        if let Some(token) = &token {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{token:?}");
    }

    let publisher = jwt_signed_with(
        "es256.key",
        "ES256",
        "ec-1",
        json!({"mercure": {"publish": ["*"]}}),
    );
    let publish = |form: &'static str, token: String| {
        client
            .post(server.url(HUB))
            .bearer_auth(token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };
    let resp = publish("topic=jwks&id=j1&data=secret&private=on", publisher.clone())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "j1");
    let wrong = jwt(PUBLISHER_KEY, json!({"mercure": {"publish": ["*"]}}));
    let resp = publish("topic=jwks&id=j2&data=no", wrong).await.unwrap();
    assert_eq!(resp.status(), 401);
    let resp = publish("topic=urn:marker:jwks&id=urn:marker:jwks", publisher)
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = read_until(&mut stream, "urn:marker:jwks").await;
    assert_eq!(ids(&seen), ["j1", "urn:marker:jwks"]);
    assert_eq!(seen[0].data, "secret");
    server.assert_alive();

    let missing = "/nonexistent/jwks.json";
    for (flags, why) in [
        (
            vec![
                "--mercure-publisher-jwt",
                "k",
                "--mercure-anonymous",
                "--mercure-subscriber-jwt",
                "s",
                "--mercure-subscriber-jwks",
                jwks,
            ],
            "--mercure-subscriber-jwks, not both",
        ),
        (
            vec!["--mercure-publisher-jwks", missing, "--mercure-anonymous"],
            missing,
        ),
    ] {
        let exited = common::serve_until_exit(&root(), &flags, Duration::from_secs(30));
        assert!(
            exited.status.is_some_and(|s| !s.success()),
            "{}",
            exited.stderr
        );
        assert!(exited.stderr.contains(why), "{why}: {}", exited.stderr);
    }
}

/// `--mercure-discovery`: PHP's responses carry `Link: </.well-known/mercure>;
/// rel="mercure"` (not a static file's, not the hub's own). The hub's requests are
/// `mode: "mercure"` in the access log and on `/metrics`, PHP's `classic`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_header_and_the_hubs_own_mode() {
    let server = start(&[
        "--mercure-discovery",
        "--log-format",
        "json",
        "--admin",
        "127.0.0.1:0",
    ]);
    let client = client(false);
    let resp = client.get(server.url("/hello.php")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let links: Vec<&str> = resp
        .headers()
        .get_all("link")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(links, ["</.well-known/mercure>; rel=\"mercure\""]);
    let page = client
        .get(server.url("/browser.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers().get("link").is_none());
    let sub = subscribe(&client, &server, &["discovered"], None).await;
    assert!(sub.headers().get("link").is_none());
    let (status, _) = publish_http(&client, &server, "topic=discovered&id=x1").await;
    assert_eq!(status, 200);

    let access = |method: &str, uri_start: &str| -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let found = server
                .stderr()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| {
                    v["target"] == "access"
                        && v["method"] == method
                        && v["uri"].as_str().is_some_and(|u| u.starts_with(uri_start))
                });
            if let Some(found) = found {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no access line for {method} {uri_start}: {}",
                server.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert_eq!(access("GET", "/hello.php")["mode"], "classic");
    assert_eq!(access("GET", "/browser.html")["mode"], "static");
    assert_eq!(access("GET", HUB)["mode"], "mercure");
    assert_eq!(access("POST", HUB)["mode"], "mercure");
    let admin = server.admin_addr().unwrap();
    let metrics = client
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let count = |mode: &str| -> f64 {
        let prefix = format!("ferrophp_http_requests_total{{mode=\"{mode}\",code=\"2xx\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix}: {metrics}"))
            .parse()
            .unwrap()
    };
    assert_eq!(count("mercure"), 2.0);
    assert_eq!(count("classic"), 1.0);
    assert_eq!(count("static"), 1.0);
    server.assert_alive();

    // Without the hub there is nothing to discover.
    let exited =
        common::serve_until_exit(&root(), &["--mercure-discovery"], Duration::from_secs(30));
    assert_eq!(
        exited.status.and_then(|s| s.code()),
        Some(2),
        "{}",
        exited.stderr
    );
    assert!(
        exited.stderr.contains("--mercure-discovery"),
        "{}",
        exited.stderr
    );
}
