//! Automatic HTTPS mounted in the server: the real `ferrophp serve --domain ...` against
//! Debian's pebble (`common/pebble.rs`), which validates every challenge by connecting to
//! the server's own listeners (`--listen` for TLS-ALPN-01, `--http-listen` for HTTP-01).
//! Clients check the chain against pebble's issuing root and reach each name by SNI
//! (reqwest resolving `a.test` to loopback); orders are counted from pebble's own log and
//! the outcome read from the server's `/metrics`.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::pebble::{free_port, Pebble, PebbleOptions};
use common::{http_root, Server};

/// The longest an issuance may take (pebble takes about a second per order).
const ISSUANCE_TIMEOUT: Duration = Duration::from_secs(90);

/// The two ports a site listens on, chosen before pebble starts (it is told them).
#[derive(Clone, Copy)]
struct Ports {
    https: u16,
    http: u16,
}

impl Ports {
    fn free() -> Ports {
        Ports {
            https: free_port(),
            http: free_port(),
        }
    }

    /// Pebble validating against these ports.
    fn pebble(self, options: PebbleOptions) -> Pebble {
        Pebble::start(PebbleOptions {
            http_port: self.http,
            tls_port: self.https,
            ..options
        })
    }
}

/// `ferrophp serve --domain ... --acme-directory <pebble> --acme-ca-root <pebble's HTTPS
/// root> --listen 127.0.0.1:P --http-listen 127.0.0.1:Q --data-dir D --admin 127.0.0.1:0`
/// plus `extra`.
fn serve(pebble: &Pebble, ports: Ports, data: &Path, domains: &[&str], extra: &[&str]) -> Server {
    let root = http_root();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrophp"));
    cmd.arg("serve")
        .arg("--root")
        .arg(&root)
        .args(["--threads", "2", "--admin", "127.0.0.1:0"])
        .args(["--listen", &format!("127.0.0.1:{}", ports.https)])
        .args(["--http-listen", &format!("127.0.0.1:{}", ports.http)])
        .arg("--data-dir")
        .arg(data)
        .args(["--acme-directory", &pebble.directory_url])
        .arg("--acme-ca-root")
        .arg(&pebble.ca_root)
        .args(["--acme-email", "ops@example.com"]);
    for domain in domains {
        cmd.args(["--domain", domain]);
    }
    cmd.args(extra);
    let server = Server::from_command(cmd, &root, &[], Duration::from_secs(60));
    assert_eq!(
        (server.scheme, server.port()),
        ("https", ports.https),
        "the first listening line is the HTTPS listener's"
    );
    let plain_line = format!("ferrophp listening on http://127.0.0.1:{}", ports.http);
    assert!(
        common::wait_until(Duration::from_secs(5), || server
            .stdout_lines()
            .contains(&plain_line)),
        "{plain_line:?} in {:?}",
        server.stdout_lines()
    );
    server
}

/// A client that trusts only `root` (PEM), reaches each of `names` on loopback, follows
/// no redirect and keeps the TLS details of each response.
fn client(root: Option<&str>, names: &[&str]) -> reqwest::blocking::Client {
    let mut builder = reqwest::blocking::Client::builder()
        .tls_info(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10));
    if let Some(root) = root {
        builder =
            builder.add_root_certificate(reqwest::Certificate::from_pem(root.as_bytes()).unwrap());
    }
    for name in names {
        // The port is the URL's: only the address is taken from here.
        builder = builder.resolve(name, SocketAddr::from(([127, 0, 0, 1], 0)));
    }
    builder.build().unwrap()
}

/// The leaf certificate a response came over: its serial (hex) and DNS names.
fn leaf(response: &reqwest::blocking::Response) -> (String, Vec<String>) {
    let der = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate())
        .expect("a TLS response carries the peer certificate")
        .to_vec();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let serial = cert
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let names = cert
        .subject_alternative_name()
        .unwrap()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    x509_parser::extensions::GeneralName::DNSName(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    (serial, names)
}

/// Waits until `https://{name}:{port}{path}` answers over a chain valid under `client`'s
/// root (handshakes fail while the name has no certificate); the response.
fn wait_served(
    client: &reqwest::blocking::Client,
    server: &Server,
    name: &str,
    path: &str,
) -> reqwest::blocking::Response {
    let url = format!("https://{name}:{}{path}", server.port());
    let deadline = Instant::now() + ISSUANCE_TIMEOUT;
    loop {
        match client.get(&url).send() {
            Ok(response) => return response,
            Err(e) => assert!(
                Instant::now() < deadline,
                "{url} never served a valid certificate ({e}); server stderr:\n{}",
                server.stderr()
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The server's `/metrics` text.
fn metrics(server: &Server) -> String {
    let admin = server.admin_addr().expect("admin address");
    client(None, &[])
        .get(format!("http://{admin}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap()
}

/// The value of the sample whose line starts with `series` (name and labels), if any.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Waits until `check` holds for the server's metrics; the text then.
fn wait_metrics(server: &Server, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + ISSUANCE_TIMEOUT;
    loop {
        let text = metrics(server);
        if check(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; metrics:\n{text}\nstderr:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// How the stored certificate of `name` was validated (its `meta.json`).
fn stored_challenge(data: &Path, pebble: &Pebble, name: &str) -> String {
    let issuer = pebble
        .directory_url
        .trim_start_matches("https://")
        .replace([':', '/'], "-");
    let meta = std::fs::read(data.join("certs").join(issuer).join(name).join("meta.json"))
        .expect("meta.json of the stored certificate");
    let meta: serde_json::Value = serde_json::from_slice(&meta).unwrap();
    meta["challenge"].as_str().unwrap().to_owned()
}

fn stop(mut server: Server) -> String {
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        server.stderr()
    );
    server.stderr()
}

#[test]
fn two_names_by_sni_with_redirects_and_a_restart_that_orders_nothing() {
    let ports = Ports::free();
    let pebble = ports.pebble(PebbleOptions::default());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let names = ["a.test", "b.test"];
    let server = serve(&pebble, ports, data.path(), &names, &[]);
    let https = client(Some(&root), &names);

    let mut serials = Vec::new();
    for name in names {
        // The PHP page, over HTTP/2 (ALPN h2), on a chain pebble's root vouches for.
        let response = wait_served(&https, &server, name, "/server.php?x=1");
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), reqwest::Version::HTTP_2);
        let (serial, leaf_names) = leaf(&response);
        // SNI chose the name's own certificate.
        assert_eq!(leaf_names, [name]);
        serials.push(serial);
        let vars: serde_json::Value = serde_json::from_str(&response.text().unwrap()).unwrap();
        assert_eq!(vars["server"]["HTTPS"], "on");
        assert_eq!(
            vars["server"]["HTTP_HOST"],
            format!("{name}:{}", ports.https)
        );
        assert_eq!(vars["server"]["SERVER_PORT"], ports.https.to_string());
    }
    assert_ne!(serials[0], serials[1]);
    assert_eq!(pebble.orders(), 2, "{}", pebble.log());

    // The plain port: everything goes to HTTPS with host, path and query kept (308 keeps
    // a POST a POST); the challenge path answers only open challenges.
    let plain = client(None, &names);
    for method in [reqwest::Method::GET, reqwest::Method::POST] {
        let response = plain
            .request(
                method.clone(),
                format!("http://a.test:{}/server.php?x=1&y=%2F", ports.http),
            )
            .send()
            .unwrap();
        assert_eq!(response.status(), 308, "{method}");
        assert_eq!(
            response.headers()["location"],
            format!("https://a.test:{}/server.php?x=1&y=%2F", ports.https).as_str()
        );
    }
    let unknown = plain
        .get(format!(
            "http://b.test:{}/.well-known/acme-challenge/no-such-token",
            ports.http
        ))
        .send()
        .unwrap();
    assert_eq!(unknown.status(), 404);
    // A request without a usable Host: 400, and the listener goes on.
    let raw = common::exchange(
        SocketAddr::from(([127, 0, 0, 1], ports.http)),
        b"GET / HTTP/1.1\r\nHost: a.test/evil\r\nConnection: close\r\n\r\n",
        common::IO_TIMEOUT,
    )
    .unwrap();
    assert!(
        raw.starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&raw)
    );

    // The CA validated through the server's own listener (TLS-ALPN-01 is tried first).
    assert_eq!(
        stored_challenge(data.path(), &pebble, "a.test"),
        "tls-alpn-01"
    );
    assert!(server.stderr().contains("TLS-ALPN-01 handshake"));

    let text = wait_metrics(&server, "both renewals counted", |t| {
        names.iter().all(|n| {
            sample(
                t,
                &format!("ferrophp_certificate_renewals_total{{name=\"{n}\",reason=\"initial\"}}"),
            ) == Some(1.0)
        })
    });
    for name in names {
        let left = sample(
            &text,
            &format!("ferrophp_certificate_expiry_seconds{{name=\"{name}\",managed=\"true\"}}"),
        )
        .expect("expiry of each name");
        // Pebble's default lifetime is five years.
        assert!(left > 86_400.0 * 365.0, "{left}");
    }
    assert_eq!(
        sample(&text, "ferrophp_certificate_orders_total"),
        Some(2.0)
    );
    let stderr = stop(server);
    assert!(stderr.contains("certificate obtained"), "{stderr}");

    // Restart on the same data directory: the stored certificates are served at once
    // and nothing is ordered.
    let server = serve(&pebble, ports, data.path(), &names, &[]);
    let https = client(Some(&root), &names);
    for (name, serial) in names.iter().zip(&serials) {
        let response = https
            .get(format!("https://{name}:{}/hello.php", ports.https))
            .send()
            .expect("served from the data directory without waiting for the CA");
        assert_eq!(&leaf(&response).0, serial);
        assert_eq!(response.text().unwrap(), "Hello, World!");
    }
    assert!(server.wait_for_stderr(
        "certificate loaded from the data directory",
        Duration::from_secs(5)
    ));
    // The renewal task's first pass (renewal information, the schedule) is done within
    // this; an order would show in pebble's log and the counters.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(pebble.orders(), 2, "{}", pebble.log());
    let text = metrics(&server);
    assert_eq!(
        sample(&text, "ferrophp_certificate_orders_total"),
        Some(0.0),
        "{text}"
    );
    assert!(
        !text.contains("ferrophp_certificate_renewals_total{"),
        "{text}"
    );
    assert!(
        !text.contains("ferrophp_certificate_renewal_failures_total{"),
        "{text}"
    );
    stop(server);
}

#[test]
fn the_ca_refusing_or_down_at_start_is_counted_and_the_cached_certificate_serves() {
    let ports = Ports::free();
    let mut pebble = ports.pebble(PebbleOptions {
        blocklist: vec!["refused.test".into()],
        ..PebbleOptions::default()
    });
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let names = ["a.test", "refused.test"];
    let server = serve(&pebble, ports, data.path(), &names, &[]);
    let https = client(Some(&root), &names);
    let response = wait_served(&https, &server, "a.test", "/hello.php");
    let (serial, _) = leaf(&response);
    assert_eq!(response.text().unwrap(), "Hello, World!");
    // The refused name: counted by the CA's reason, and the server goes on serving.
    wait_metrics(&server, "the refusal counted", |t| {
        sample(
            t,
            "ferrophp_certificate_renewal_failures_total{name=\"refused.test\",reason=\"rejectedIdentifier\"}",
        )
        .is_some_and(|n| n >= 1.0)
    });
    assert!(server.stderr().contains("certificate order failed"));
    stop(server);

    // The CA down at start: a.test's stored certificate serves at once, the name without
    // one fails as ca_unreachable, counted and logged.
    pebble.stop();
    let server = serve(&pebble, ports, data.path(), &names, &[]);
    let https = client(Some(&root), &names);
    let response = https
        .get(format!("https://a.test:{}/hello.php", ports.https))
        .send()
        .expect("the cached certificate serves while the CA is down");
    assert_eq!(leaf(&response).0, serial);
    let text = wait_metrics(&server, "the CA down counted", |t| {
        sample(
            t,
            "ferrophp_certificate_renewal_failures_total{name=\"refused.test\",reason=\"ca_unreachable\"}",
        )
        .is_some_and(|n| n >= 1.0)
    });
    assert!(sample(
        &text,
        "ferrophp_certificate_expiry_seconds{name=\"a.test\",managed=\"true\"}"
    )
    .is_some_and(|left| left > 0.0));
    let stderr = stop(server);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("certificate order failed") && l.contains("ca_unreachable")),
        "{stderr}"
    );
}

/// One issuance with only `challenge` allowed (`--acme-challenge`), the other port of
/// pebble's pointed at a closed one so that only the allowed way can pass.
fn issuance_with_only(challenge: &str, log_line: &str, other_line: &str) {
    let ports = Ports::free();
    let closed = free_port();
    let pebble = Pebble::start(match challenge {
        "http-01" => PebbleOptions {
            http_port: ports.http,
            tls_port: closed,
            ..PebbleOptions::default()
        },
        _ => PebbleOptions {
            http_port: closed,
            tls_port: ports.https,
            ..PebbleOptions::default()
        },
    });
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let server = serve(
        &pebble,
        ports,
        data.path(),
        &["a.test"],
        &["--acme-challenge", challenge],
    );
    let response = wait_served(
        &client(Some(&root), &["a.test"]),
        &server,
        "a.test",
        "/hello.php",
    );
    assert_eq!(response.text().unwrap(), "Hello, World!");
    assert_eq!(stored_challenge(data.path(), &pebble, "a.test"), challenge);
    let stderr = stop(server);
    assert!(stderr.contains(log_line), "{stderr}");
    assert!(!stderr.contains(other_line), "{stderr}");
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
}

#[test]
fn http01_only_is_answered_by_the_plain_listener() {
    issuance_with_only(
        "http-01",
        "answered the ACME CA's HTTP-01 request",
        "TLS-ALPN-01 handshake",
    );
}

#[test]
fn tls_alpn01_only_is_answered_by_the_https_listener() {
    issuance_with_only(
        "tls-alpn-01",
        "answered the ACME CA's TLS-ALPN-01 handshake",
        "HTTP-01 request",
    );
}

#[test]
fn short_lived_certificates_are_renewed_without_a_restart_or_a_dropped_connection() {
    let ports = Ports::free();
    // 24 s certificates: renewal is due with a third of the lifetime left, 16 s in.
    let pebble = ports.pebble(PebbleOptions {
        validity_secs: Some(24),
        ..PebbleOptions::default()
    });
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let server = serve(&pebble, ports, data.path(), &["a.test"], &[]);
    let pid = server.pid();
    // One HTTP/2 connection, kept busy across the swap.
    let open = client(Some(&root), &["a.test"]);
    let first = leaf(&wait_served(&open, &server, "a.test", "/hello.php")).0;
    let deadline = Instant::now() + ISSUANCE_TIMEOUT;
    let renewed = loop {
        let response = open
            .get(format!("https://a.test:{}/hello.php", ports.https))
            .send()
            .expect("the open connection keeps serving during renewal");
        // The connection opened before the swap keeps its certificate.
        assert_eq!(leaf(&response).0, first);
        let fresh = client(Some(&root), &["a.test"])
            .get(format!("https://a.test:{}/hello.php", ports.https))
            .send()
            .unwrap();
        let serial = leaf(&fresh).0;
        if serial != first {
            break serial;
        }
        assert!(
            Instant::now() < deadline,
            "never renewed; stderr:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_ne!(renewed, first);
    assert_eq!(server.pid(), pid);
    let text = metrics(&server);
    // At least one: a slow run may have reached the next renewal, 16 s later.
    assert!(
        sample(
            &text,
            "ferrophp_certificate_renewals_total{name=\"a.test\",reason=\"expiring\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(pebble.orders() >= 2, "{}", pebble.log());
    stop(server);
}

#[test]
fn a_supervised_server_hands_both_sockets_to_its_child() {
    let ports = Ports::free();
    let pebble = ports.pebble(PebbleOptions::default());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    // The supervisor binds --listen and --http-listen and passes both down
    // (FERROPHP_LISTEN_FD); the child serves HTTPS on one, redirects on the other.
    let server = serve(&pebble, ports, data.path(), &["a.test"], &["--supervise"]);
    let response = wait_served(
        &client(Some(&root), &["a.test"]),
        &server,
        "a.test",
        "/hello.php",
    );
    assert_eq!(response.text().unwrap(), "Hello, World!");
    let moved = client(None, &["a.test"])
        .get(format!("http://a.test:{}/hello.php", ports.http))
        .send()
        .unwrap();
    assert_eq!(moved.status(), 308);
    assert_eq!(
        moved.headers()["location"],
        format!("https://a.test:{}/hello.php", ports.https).as_str()
    );
    stop(server);
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
}

#[test]
fn configured_by_the_environment_alone_as_the_image_is() {
    let ports = Ports::free();
    let pebble = ports.pebble(PebbleOptions::default());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let http_root = http_root();
    // What docker/entrypoint.sh leaves for `ferrophp serve` with FERROPHP_DOMAINS set:
    // no flags, every setting a FERROPHP_* variable.
    let ca_root = pebble.ca_root.to_str().unwrap().to_owned();
    let data_dir = data.path().to_str().unwrap().to_owned();
    let env = [
        ("FERROPHP_ROOT", http_root.to_str().unwrap().to_owned()),
        ("FERROPHP_DOMAINS", "a.test,b.test".to_owned()),
        ("FERROPHP_LISTEN", format!("127.0.0.1:{}", ports.https)),
        ("FERROPHP_HTTP_LISTEN", format!("127.0.0.1:{}", ports.http)),
        ("FERROPHP_ACME_DIRECTORY", pebble.directory_url.clone()),
        ("FERROPHP_ACME_CA_ROOT", ca_root),
        ("FERROPHP_ACME_CHALLENGES", "http-01".to_owned()),
        ("FERROPHP_DATA_DIR", data_dir),
        ("FERROPHP_THREADS", "2".to_owned()),
        ("FERROPHP_HEADER_TIMEOUT_MS", "1500".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrophp"));
    cmd.arg("serve");
    let server = Server::from_command(cmd, &http_root, &env, Duration::from_secs(60));
    assert_eq!((server.scheme, server.port()), ("https", ports.https));
    let https = client(Some(&root), &["a.test", "b.test"]);
    for name in ["a.test", "b.test"] {
        let response = wait_served(&https, &server, name, "/hello.php");
        assert_eq!(leaf(&response).1, [name]);
        assert_eq!(response.text().unwrap(), "Hello, World!");
        assert_eq!(stored_challenge(data.path(), &pebble, name), "http-01");
    }
    let moved = client(None, &["b.test"])
        .get(format!("http://b.test:{}/", ports.http))
        .send()
        .unwrap();
    assert_eq!(moved.status(), 308);
    // A client that connects to the plain port and sends nothing, or half a request
    // line, is closed at the header timeout (1.5 s here), not held.
    for sent in [&b""[..], b"GET /x HT"] {
        use std::io::{Read, Write};
        let mut idle = common::connect(SocketAddr::from(([127, 0, 0, 1], ports.http)));
        idle.write_all(sent).unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        let started = Instant::now();
        let mut rest = Vec::new();
        // EOF, or a reset: either way the server let go (a read timeout is not).
        let closed = idle.read_to_end(&mut rest);
        assert!(
            closed.is_ok()
                || closed
                    .as_ref()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "{sent:?}: not closed: {closed:?}"
        );
        assert!(
            started.elapsed() > Duration::from_millis(1000)
                && started.elapsed() < Duration::from_secs(6),
            "{sent:?}: {:?}",
            started.elapsed()
        );
    }
    stop(server);
}
