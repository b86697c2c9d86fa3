//! HTTP/3 over real QUIC: the `ferrophp` binary with a TLS listener (which turns HTTP/3
//! on, on the same port over UDP), driven by aioquic (`test-data/http3/h3client.py`, a
//! real HTTP/3 client from PyPI) like a browser: requests in both PHP modes, uploads,
//! large and streamed downloads, 103 Early Hints, 100 streams on one connection, bad
//! input and connection floods (the server serving others afterwards each time), the
//! idle timeout, graceful drain; and the `Alt-Svc` that moves HTTP/1.1 and HTTP/2
//! clients over.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{client_builder, Server};
use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/http3")
        .canonicalize()
        .expect("test-data/http3 exists")
}

/// A TLS server on `test-data/http3` (classic, or with `app.php` as a worker script);
/// its certificate's directory is kept with it.
struct H3Server {
    server: Server,
    cert: PathBuf,
    _dir: tempfile::TempDir,
}

fn start(mode: &str, extra: &[&str]) -> H3Server {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(dir.path());
    let spec = format!("{},2", root().join("app.php").display());
    let mut args = vec![
        "--threads",
        "4",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    if mode == "worker" {
        args.extend(["--worker", spec.as_str()]);
    }
    args.extend_from_slice(extra);
    let server = Server::start(&root(), &args);
    assert_eq!(server.scheme, "https");
    H3Server {
        server,
        cert,
        _dir: dir,
    }
}

/// Runs the aioquic client against `server`: its JSON report.
fn h3(server: &H3Server, command: &str, args: &[&str]) -> Value {
    let output = Command::new("python3")
        .arg(root().join("h3client.py"))
        .arg("127.0.0.1")
        .arg(server.server.port().to_string())
        .arg(&server.cert)
        .arg(command)
        .args(args)
        .output()
        .expect("python3 runs (aioquic: scripts/test.sh installs it)");
    assert!(
        output.status.success(),
        "h3client {command} {args:?} failed: {}\nserver stderr:\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.server.stderr()
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "h3client printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The requests in `reqs`, at once on one connection; the report of each.
fn requests(server: &H3Server, reqs: Value) -> Vec<Value> {
    let out = h3(server, "requests", &[&reqs.to_string()]);
    assert!(out["terminated"].is_null(), "connection ended: {out}");
    out["results"].as_array().unwrap().clone()
}

fn get(server: &H3Server, path: &str) -> Value {
    requests(server, json!([{ "path": path }])).remove(0)
}

fn header<'a>(r: &'a Value, name: &str) -> Option<&'a str> {
    r["headers"]
        .as_array()?
        .iter()
        .find(|h| h[0] == name)
        .and_then(|h| h[1].as_str())
}

fn body_json(r: &Value) -> Value {
    serde_json::from_str(r["body"].as_str().expect("a short body")).expect("JSON body")
}

/// The server still answers a fresh HTTP/3 connection, and HTTP/2 over TCP.
fn assert_serving(server: &H3Server) {
    let r = get(server, "/app.php?do=server");
    assert_eq!(r["status"], 200, "{r}");
    let h2 = client_builder().use_rustls_tls().build().unwrap();
    let r = h2
        .get(server.server.url("/app.php?do=server"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn php_sees_http3_in_both_modes() {
    for mode in ["classic", "worker"] {
        let server = start(mode, &[]);
        // Twice: a worker serves the second from the same thread as the first.
        for _ in 0..2 {
            let r = get(&server, "/app.php?do=server&x=1");
            assert_eq!(r["status"], 200, "{mode}: {r}");
            let v = body_json(&r);
            assert_eq!(v["protocol"], "HTTP/3.0", "{mode}: {v}");
            assert_eq!(v["https"], "on", "{mode}: {v}");
            assert_eq!(v["method"], "GET", "{mode}: {v}");
            assert_eq!(v["uri"], "/app.php?do=server&x=1", "{mode}: {v}");
            assert_eq!(
                v["host"],
                format!("localhost:{}", server.server.port()),
                "{mode}: :authority becomes the Host"
            );
            assert_eq!(v["port"], server.server.port().to_string(), "{mode}: {v}");
            assert_eq!(v["worker"], mode == "worker", "{mode}: {v}");
            assert_eq!(v["ua"], "aioquic-test", "{mode}: {v}");
            // Responses over HTTP/3 carry no connection-specific fields, nor Alt-Svc.
            assert_eq!(header(&r, "connection"), None, "{mode}");
            assert_eq!(header(&r, "alt-svc"), None, "{mode}");
        }
        // HEAD: the head only.
        let r = requests(
            &server,
            json!([{ "method": "HEAD", "path": "/app.php?do=big&mb=1" }]),
        )
        .remove(0);
        assert_eq!(r["status"], 200, "{mode}: {r}");
        assert_eq!(r["body_len"], 0, "{mode}: {r}");
        // A missing script, over the same path as the others.
        let r = get(&server, "/nope.php");
        assert_eq!(r["status"], 404, "{mode}: {r}");
        assert_serving(&server);
    }
}

#[test]
fn http1_and_http2_responses_advertise_http3() {
    let server = start("classic", &[]);
    let want = format!("h3=\":{}\"; ma=86400", server.server.port());
    let h2 = client_builder().use_rustls_tls().build().unwrap();
    let r = h2
        .get(server.server.url("/app.php?do=server"))
        .send()
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.headers()["alt-svc"], want.as_str());
    let h1 = client_builder()
        .use_rustls_tls()
        .http1_only()
        .build()
        .unwrap();
    // Static files and errors too: every response of the listener.
    for path in ["/app.php?do=server", "/h3client.py", "/missing"] {
        let r = h1.get(server.server.url(path)).send().unwrap();
        assert_eq!(r.version(), reqwest::Version::HTTP_11);
        assert_eq!(r.headers()["alt-svc"], want.as_str(), "{path}");
    }

    // --no-http3: no UDP listener and nothing advertised.
    let off = start("classic", &["--no-http3"]);
    let r = h2.get(off.server.url("/app.php?do=server")).send().unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("alt-svc").is_none());
    let refused = Command::new("python3")
        .arg(root().join("h3client.py"))
        .args(["127.0.0.1", &off.server.port().to_string()])
        .arg(&off.cert)
        .args(["requests", r#"[{"path": "/app.php"}]"#])
        .env("H3_TIMEOUT", "5")
        .output()
        .unwrap();
    assert!(
        !refused.status.success() || !String::from_utf8_lossy(&refused.stdout).contains("200"),
        "HTTP/3 answered with --no-http3"
    );

    // Plain HTTP: no HTTP/3, no Alt-Svc.
    let plain = Server::start(&root(), &[]);
    let r = common::client()
        .get(plain.url("/app.php?do=server"))
        .send()
        .unwrap();
    assert!(r.headers().get("alt-svc").is_none());
}

#[test]
fn uploads_large_downloads_and_streams() {
    let server = start("worker", &[]);
    // A 10 MB upload, read by PHP as a stream.
    let r = requests(
        &server,
        json!([{ "method": "POST", "path": "/app.php?do=hash", "body_bytes": 10_000_000, "body_seed": 7 }]),
    )
    .remove(0);
    assert_eq!(r["status"], 200, "{r}");
    let v = body_json(&r);
    assert_eq!(v["bytes"], 10_000_000, "{v}");
    assert_eq!(v["sha256"], r["sent_sha256"], "PHP read what was sent");

    // A 50 MiB download.
    let started = Instant::now();
    let r = get(&server, "/app.php?do=big&mb=50");
    let took = started.elapsed();
    assert_eq!(r["status"], 200);
    assert_eq!(r["body_len"], 50 << 20);
    let expected = "0123456789abcdef".repeat(4096 * 16 * 50);
    assert_eq!(r["sha256"], sha256_hex(expected.as_bytes()));
    eprintln!("50 MiB over HTTP/3 in {took:?} (client and server on one machine)");

    // A streamed response: the first chunk arrives while the script still sleeps.
    let r = get(&server, "/app.php?do=stream&ms=800");
    assert_eq!(r["status"], 200);
    assert_eq!(r["body"], "first chunk\nsecond chunk\n");
    let chunks = r["chunks"].as_array().unwrap();
    let first_at = chunks[0][1].as_f64().unwrap();
    let last_at = chunks.last().unwrap()[1].as_f64().unwrap();
    assert!(first_at < 0.6, "first chunk held back: {chunks:?}");
    assert!(last_at >= 0.8, "{chunks:?}");
    assert!(r["head_at"].as_f64().unwrap() < 0.6, "head held back: {r}");

    // A body over --max-body-size is refused, the connection goes on.
    let small = start("classic", &["--max-body-size", "100000"]);
    let rs = requests(
        &small,
        json!([
            { "method": "POST", "path": "/app.php?do=hash", "body_bytes": 1_000_000 },
            { "path": "/app.php?do=server" }
        ]),
    );
    assert_eq!(rs[0]["status"], 413, "{}", rs[0]);
    assert_eq!(rs[1]["status"], 200, "{}", rs[1]);
}

#[test]
fn early_hints_reach_http3_clients_before_the_response() {
    for mode in ["classic", "worker"] {
        let server = start(mode, &[]);
        for ms in [600, 0] {
            let r = get(&server, &format!("/app.php?do=hints&ms={ms}"));
            let what = format!("{mode} ms={ms}");
            assert_eq!(r["status"], 200, "{what}: {r}");
            let hints = r["informational"].as_array().unwrap();
            assert_eq!(hints.len(), 1, "{what}: {r}");
            assert_eq!(hints[0]["status"], 103, "{what}");
            let link = hints[0]["headers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h[0] == "link")
                .map(|h| h[1].clone());
            assert_eq!(
                link,
                Some(json!("</style.css>; rel=preload; as=style")),
                "{what}"
            );
            if ms > 0 {
                assert!(
                    hints[0]["at"].as_f64().unwrap() < 0.5,
                    "{what}: hint held back"
                );
                assert!(r["head_at"].as_f64().unwrap() >= 0.6, "{what}: {r}");
            }
            assert_eq!(header(&r, "link"), None, "{what}");
            assert_eq!(r["body"], "Hello 103", "{what}");
        }
    }
}

#[test]
fn a_hundred_streams_on_one_connection() {
    let server = start("worker", &[]);
    let reqs: Vec<Value> = (0..100)
        .map(|i| json!({ "path": format!("/app.php?do=sleep&ms=20&i={i}") }))
        .collect();
    let started = Instant::now();
    let rs = requests(&server, Value::Array(reqs));
    let took = started.elapsed();
    assert_eq!(rs.len(), 100);
    for r in &rs {
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["body"], "slept", "{r}");
    }
    eprintln!("100 streams of 20 ms each on one connection, 2 worker threads: {took:?}");
    // Mixed with uploads on the same connection.
    // (bodies of a few bytes too, which come in the HEADERS frame's packet with the FIN)
    let mixed: Vec<Value> = (0..20)
        .map(|i| {
            let size = if i < 5 { i + 1 } else { 100_000 + i };
            json!({ "method": "POST", "path": "/app.php?do=hash", "body_bytes": size, "body_seed": i })
        })
        .collect();
    for (i, r) in requests(&server, Value::Array(mixed)).iter().enumerate() {
        assert_eq!(r["status"], 200, "{r}");
        let v = body_json(r);
        assert_eq!(v["sha256"], r["sent_sha256"], "{i}: {v}");
        assert_eq!(
            v["bytes"],
            if i < 5 { i + 1 } else { 100_000 + i },
            "{i}: {v}"
        );
    }
}

#[test]
fn bad_input_leaves_the_server_serving() {
    let server = start("classic", &[]);
    // Connection errors, each with HTTP/3's code for it (RFC 9114 §8.1, RFC 9204 §6).
    for (attack, codes) in [
        // H3_FRAME_UNEXPECTED
        ("data-before-headers", &[0x105][..]),
        // QPACK_DECOMPRESSION_FAILED (or H3_FRAME_ERROR for the frame it came in)
        ("bad-qpack", &[0x200, 0x106][..]),
        // H3_FRAME_UNEXPECTED, H3_CLOSED_CRITICAL_STREAM or H3_FRAME_ERROR
        ("unknown-frame-on-control", &[0x105, 0x104, 0x106][..]),
        // STREAM_LIMIT_ERROR (QUIC transport)
        ("stream-flood", &[0x4][..]),
    ] {
        let out = h3(&server, "attack", &[attack]);
        let code = out["terminated"]["error_code"].as_u64();
        assert!(
            code.is_some_and(|c| codes.contains(&c)),
            "{attack}: the server should close with one of {codes:x?}: {out}"
        );
        assert_serving(&server);
    }
    // An oversized header block: 431 for that request (h3 answers it), nothing more.
    let out = h3(&server, "attack", &["huge-headers"]);
    let status = out["stream"]["status"].as_u64();
    assert!(
        status == Some(431) || out["stream"]["reset"].is_u64(),
        "huge header block: {out}"
    );
    assert_serving(&server);
}

#[test]
fn a_burst_of_connections_meets_the_cap_and_the_server_goes_on() {
    // 200 handshakes at once, no cap: all served (past 64 open connections, clients whose
    // address is unproven are sent a Retry first, which aioquic follows).
    let open = start("classic", &[]);
    let out = h3(&open, "burst", &["200"]);
    assert_eq!(out["ok"], 200, "{out}");
    assert_serving(&open);
    drop(open);

    let server = start("classic", &["--max-connections", "20"]);
    let out = h3(&server, "burst", &["100"]);
    let ok = out["ok"].as_u64().unwrap();
    eprintln!("burst of 100 connections with --max-connections 20: {out}");
    // Twenty at least were served, and the cap refused others at once.
    assert!((20..100).contains(&ok), "{out}");
    // Each finished connection gave its slot back: all are served now.
    let out = h3(&server, "burst", &["10"]);
    assert_eq!(out["ok"], 10, "{out}");
    assert_serving(&server);
}

#[test]
fn idle_connections_are_closed_and_busy_ones_are_not() {
    let server = start("classic", &["--idle-timeout-ms", "700"]);
    let out = h3(&server, "idle", &["3"]);
    assert_eq!(out["status"], 200, "{out}");
    assert!(
        !out["terminated"].is_null(),
        "idle connection left open: {out}"
    );
    let after = out["after"].as_f64().unwrap();
    assert!((0.5..2.5).contains(&after), "{out}");
    // A request longer than the idle timeout is not cut.
    let r = get(&server, "/app.php?do=sleep&ms=1500");
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(r["body"], "slept");
}

#[test]
fn shutdown_drains_http3_requests_in_flight() {
    let mut server = start("classic", &[]);
    let port = server.server.port().to_string();
    let cert = server.cert.clone();
    let mut slow = Command::new("python3")
        .arg(root().join("h3client.py"))
        .args(["127.0.0.1", &port])
        .arg(&cert)
        .args(["requests", r#"[{"path": "/app.php?do=sleep&ms=1500"}]"#])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM once the request is on its way (the client says so on stderr) and has had
    // time to reach PHP.
    let mut stderr = std::io::BufReader::new(slow.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(line.starts_with("sent "), "{line}");
    std::thread::sleep(Duration::from_millis(400));
    let signalled = Instant::now();
    server.server.sigterm();
    let output = slow.wait_with_output().unwrap();
    let out: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "client: {}\nserver: {}",
            String::from_utf8_lossy(&output.stderr),
            server.server.stderr()
        )
    });
    assert_eq!(out["results"][0]["status"], 200, "{out}");
    assert_eq!(out["results"][0]["body"], "slept", "{out}");
    let status = server.server.wait_exit(Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    // It waited for the request, not for the grace period (30 s).
    assert!(
        signalled.elapsed() < Duration::from_secs(8),
        "{:?}",
        signalled.elapsed()
    );
}

#[test]
fn a_supervisor_hands_the_udp_socket_to_each_server_it_starts() {
    let server = start("classic", &["--supervise"]);
    // During the hand-over both servers read the socket: a new connection whose first
    // packet the draining one reads is refused (the client then tries again, or a
    // browser takes HTTP/2), so polling tolerates failures.
    let pid = |server: &H3Server| {
        let output = Command::new("python3")
            .arg(root().join("h3client.py"))
            .args(["127.0.0.1", &server.server.port().to_string()])
            .arg(&server.cert)
            .args(["requests", r#"[{"path": "/app.php?do=server"}]"#])
            .output()
            .unwrap();
        let out: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let body = out["results"][0]["body"].as_str().unwrap_or("null");
        serde_json::from_str::<Value>(body).unwrap_or(Value::Null)["pid"].clone()
    };
    let first = pid(&server);
    assert!(first.is_u64(), "{first}");
    let status = Command::new("kill")
        .args(["-HUP", &server.server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The replacement serves HTTP/3 on the same UDP socket, which never closed.
    let mut second = first.clone();
    assert!(common::wait_until(Duration::from_secs(30), || {
        second = pid(&server);
        second.is_u64() && second != first
    }));
    assert_serving(&server);
}

/// The server's CPU time so far (user + system, from `/proc/PID/stat`: what getrusage
/// reports for the process), in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(") ").unwrap();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / hz
}

/// `n` GETs of `path` over HTTP/2 with TLS on one connection, `window` streams at a time
/// (the h2 crate as the client): how many got 200, and the bytes of their bodies.
fn h2_load(server: &H3Server, path: &str, n: usize, window: usize) -> (usize, usize) {
    use std::sync::Arc;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.server.addr)
            .await
            .unwrap();
        let config = client_tls(server, b"h2", rustls::DEFAULT_VERSIONS);
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .unwrap();
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size(16 << 20)
            .initial_connection_window_size(64 << 20)
            .handshake::<_, bytes::Bytes>(tls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let uri = format!("https://localhost:{}{path}", server.server.port());
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let lanes = (0..window).map(|_| {
            let mut client = client.clone();
            let next = next.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                let (mut ok, mut bytes) = (0, 0);
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                    client = client.ready().await.unwrap();
                    let req = http::Request::get(uri.as_str()).body(()).unwrap();
                    let (response, _) = client.send_request(req, true).unwrap();
                    let response = response.await.unwrap();
                    ok += usize::from(response.status() == 200);
                    let mut body = response.into_body();
                    while let Some(chunk) = body.data().await {
                        let chunk = chunk.unwrap();
                        bytes += chunk.len();
                        let _ = body.flow_control().release_capacity(chunk.len());
                    }
                }
                (ok, bytes)
            })
        });
        sum_lanes(lanes).await
    })
}

/// A client TLS configuration trusting only the server's certificate, offering `alpn`.
fn client_tls(
    server: &H3Server,
    alpn: &[u8],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&server.cert).unwrap();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config
}

/// The 200s and body bytes of a load's lanes, added up.
async fn sum_lanes(
    lanes: impl Iterator<Item = tokio::task::JoinHandle<(usize, usize)>>,
) -> (usize, usize) {
    let mut total = (0, 0);
    for lane in futures_util::future::join_all(lanes).await {
        let (ok, bytes) = lane.unwrap();
        total.0 += ok;
        total.1 += bytes;
    }
    total
}

/// `n` GETs of `path` over HTTP/3 on one connection, `window` streams at a time, with a
/// Rust client (quinn and h3, the stacks the server runs on): how many got 200, and the
/// bytes of their bodies. The counterpart of [`h2_load`], so that the server's CPU per
/// request is measured against a client that drains as fast as the h2 one.
fn h3_load(server: &H3Server, path: &str, n: usize, window: usize) -> (usize, usize) {
    use bytes::Buf;
    use std::sync::Arc;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tls = client_tls(server, b"h3", &[&rustls::version::TLS13]);
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        // Receive windows as large as the h2 client's, so flow control never paces it.
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window((16u32 << 20).into())
            .receive_window((64u32 << 20).into());
        config.transport_config(Arc::new(transport));
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(config);
        let connection = endpoint
            .connect(server.server.addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let (mut driver, send_request) = h3::client::new(h3_quinn::Connection::new(connection))
            .await
            .unwrap();
        let driving =
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let uri = format!("https://localhost:{}{path}", server.server.port());
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let lanes = (0..window).map(|_| {
            let mut send_request = send_request.clone();
            let next = next.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                let (mut ok, mut bytes) = (0, 0);
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                    let req = http::Request::get(uri.as_str()).body(()).unwrap();
                    let mut stream = send_request.send_request(req).await.unwrap();
                    stream.finish().await.unwrap();
                    let response = stream.recv_response().await.unwrap();
                    ok += usize::from(response.status() == 200);
                    while let Some(mut chunk) = stream.recv_data().await.unwrap() {
                        bytes += chunk.remaining();
                        chunk.advance(chunk.remaining());
                    }
                }
                (ok, bytes)
            })
        });
        let total = sum_lanes(lanes).await;
        drop(send_request);
        driving.abort();
        endpoint.close(0u32.into(), b"done");
        total
    })
}

/// The compare row for HTTP/3: hello (worker) and a 1 MiB static file over h3 against the
/// same over h2 with TLS, one connection each with the same streams at a time: the server's
/// CPU per request. The h3 row that counts is the Rust client's (quinn + h3, draining as
/// fast as the h2 crate does); the aioquic row shows what a slow reader costs the server
/// (its window opens in small steps, so the server sends in small bursts). Wall-clock
/// rates say more about the clients; the CPU is the server's own.
///
/// `cargo test --release -p ferrophp --test http3 cpu_per_request -- --ignored --nocapture`
///
/// FERROPHP_BENCH_BIN names another `ferrophp` to measure (a release tree's `bin/ferrophp`,
/// the shipped build) so the test itself can stay a debug build.
#[test]
#[ignore = "a measurement: run on its own, in release mode"]
fn cpu_per_request_h3_against_h2() {
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(root_dir_file("app.php"), root.path().join("app.php")).unwrap();
    std::fs::write(root.path().join("1mb.bin"), vec![b'x'; 1 << 20]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(dir.path());
    let spec = format!("{},2", root.path().join("app.php").display());
    let args = [
        "--threads",
        "2",
        "--no-access-log",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--worker",
        spec.as_str(),
    ];
    let server = H3Server {
        server: Server::start_binary(&common::bench_binary(), root.path(), &args, &[]),
        cert,
        _dir: dir,
    };
    let pid = server.server.pid();
    println!(
        "| workload | protocol | requests | server CPU per request | wall req/s (client-bound) |"
    );
    println!("|---|---|---:|---:|---:|");
    // Streams at a time: 100 for hello; 8 for the file, as more than the Python client
    // can drain makes it drop datagrams, and the retransmissions would be counted.
    for (name, path, n, window) in [
        ("hello (worker)", "/app.php?do=hello", 3000usize, 100usize),
        ("1 MiB static file", "/1mb.bin", 200, 8),
    ] {
        // Warm both paths up (worker boot, file cache, TLS session).
        h2_load(&server, path, 50, 10);
        h3(&server, "load", &["50", path, "10"]);

        h3_load(&server, path, 50, 10);
        // One row: the load run by a Rust client, the server's CPU per request.
        let row = |protocol: &str, load: fn(&H3Server, &str, usize, usize) -> (usize, usize)| {
            let cpu = cpu_seconds(pid);
            let started = Instant::now();
            let (ok, bytes) = load(&server, path, n, window);
            let wall = started.elapsed().as_secs_f64();
            let per_request = (cpu_seconds(pid) - cpu) / n as f64;
            assert_eq!(ok, n);
            assert!(bytes > 0);
            println!(
                "| {name} | {protocol} | {n} | {:.1} us | {:.0} |",
                per_request * 1e6,
                n as f64 / wall
            );
            per_request
        };
        let h2_cpu = row("h2", h2_load);
        let h3_cpu = row("h3 (quinn + h3 client)", h3_load);
        println!("|  | h3/h2 | | **{:.2}x** | |", h3_cpu / h2_cpu);

        let cpu = cpu_seconds(pid);
        let out = h3(
            &server,
            "load",
            &[&n.to_string(), path, &window.to_string()],
        );
        let aioquic_cpu = (cpu_seconds(pid) - cpu) / n as f64;
        assert_eq!(out["ok"], n, "{out}");
        println!(
            "| {name} | h3 (aioquic client) | {n} | {:.1} us | {:.0} |",
            aioquic_cpu * 1e6,
            n as f64 / out["seconds"].as_f64().unwrap()
        );
        println!("|  | h3 (aioquic)/h2 | | {:.2}x | |", aioquic_cpu / h2_cpu);
    }
}

fn root_dir_file(name: &str) -> PathBuf {
    root().join(name)
}

#[test]
fn the_request_deadline_answers_504_over_http3() {
    let server = start(
        "classic",
        &["-d", "max_execution_time=0", "--request-timeout", "1s"],
    );
    let started = Instant::now();
    let rs = requests(
        &server,
        json!([
            { "path": "/app.php?do=sleep&ms=5000" },
            { "path": "/app.php?do=hello" }
        ]),
    );
    assert_eq!(rs[0]["status"], 504, "{}", rs[0]);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(rs[1]["status"], 200, "{}", rs[1]);
    assert_eq!(rs[1]["body"], "Hello, World!");
    assert_serving(&server);
}
