//! Automatic HTTPS's core (`ferrophp_server::tls`) against a real ACME CA: Debian's
//! pebble, started by each test with its own configuration (`common/pebble.rs`), which
//! really validates every challenge by connecting to this test's listeners:
//!
//! - a plain HTTP responder that answers `/.well-known/acme-challenge/{token}` through
//!   `Challenges::http01_answer_for_path` (what the server's route will call), and
//! - a TLS listener built with `tls::server_config` over the manager's resolver, which
//!   answers `acme-tls/1` handshakes with the validation certificate and everything
//!   else with the served certificate (one small HTTP/1.1 answer per request, on
//!   kept-alive connections).
//!
//! Orders are counted from pebble's own log, not only from the manager's counters.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::pebble::{Pebble, PebbleOptions};
use ferrophp_server::tls::{self, AcmeConfig, CertManager, ChallengeTypes, Challenges};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Challenge answers one test's listeners gave: HTTP-01 bodies, `acme-tls/1` handshakes.
#[derive(Default)]
struct Answers {
    http01: AtomicUsize,
    alpn: AtomicUsize,
}

/// The longest a state may take to appear (an order against pebble takes about a second).
const STATE_TIMEOUT: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------- log capture

/// Every log line of this test binary (the manager logs through `tracing`).
fn log_lines() -> &'static Mutex<String> {
    static LOG: OnceLock<Mutex<String>> = OnceLock::new();
    LOG.get_or_init(|| {
        struct Sink;
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let text = String::from_utf8_lossy(buf);
                eprint!("{text}");
                log_lines().lock().unwrap().push_str(&text);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let _ = tracing_subscriber::fmt()
            .with_writer(|| Sink)
            .with_ansi(false)
            .with_env_filter("ferrophp_server=debug,info")
            .try_init();
        Mutex::new(String::new())
    })
}

// ---------------------------------------------------------------- listeners

/// The test's two listeners, bound before pebble starts so it can be told their ports.
struct Listeners {
    http: TcpListener,
    https: TcpListener,
    answers: Arc<Answers>,
}

impl Listeners {
    async fn bind() -> Listeners {
        Listeners {
            http: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            https: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            answers: Arc::default(),
        }
    }

    fn pebble_options(&self) -> PebbleOptions {
        PebbleOptions {
            http_port: self.http.local_addr().unwrap().port(),
            tls_port: self.https.local_addr().unwrap().port(),
            ..PebbleOptions::default()
        }
    }

    /// Serves HTTP-01 answers from `challenges` and HTTPS with `manager`'s resolver;
    /// returns the HTTPS address.
    fn serve(self, challenges: Arc<Challenges>, resolver: Arc<tls::CertResolver>) -> SocketAddr {
        let https_addr = self.https.local_addr().unwrap();
        tokio::spawn(serve_http01(self.http, challenges, self.answers.clone()));
        let config = tls::server_config(resolver).unwrap();
        tokio::spawn(serve_https(self.https, config, self.answers));
        https_addr
    }
}

/// A plain HTTP/1.1 listener answering only the challenge path, one request per
/// connection, as the server's route will.
async fn serve_http01(listener: TcpListener, challenges: Arc<Challenges>, answers: Arc<Answers>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let challenges = challenges.clone();
        let answers = answers.clone();
        tokio::spawn(async move {
            let mut stream = BufReader::new(stream);
            let mut request_line = String::new();
            if stream.read_line(&mut request_line).await.is_err() {
                return;
            }
            loop {
                let mut line = String::new();
                match stream.read_line(&mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request_line.split(' ').nth(1).unwrap_or("");
            let response = match challenges.http01_answer_for_path(path) {
                Some(body) => {
                    answers.http01.fetch_add(1, Ordering::SeqCst);
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned(),
            };
            let _ = stream.get_mut().write_all(response.as_bytes()).await;
        });
    }
}

/// A TLS listener: `acme-tls/1` connections end after the handshake (RFC 8737 §3), others
/// get `served <sni>` for each request on the connection until the client closes it.
async fn serve_https(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    answers: Arc<Answers>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let acceptor = acceptor.clone();
        let answers = answers.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let (_, connection) = tls.get_ref();
            if connection.alpn_protocol() == Some(tls::ACME_TLS_ALPN) {
                answers.alpn.fetch_add(1, Ordering::SeqCst);
                return;
            }
            let sni = connection.server_name().unwrap_or("-").to_owned();
            let mut stream = BufReader::new(tls);
            loop {
                let mut line = String::new();
                match stream.read_line(&mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line == "\r\n" => {
                        let body = format!("served {sni}");
                        let response = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if stream
                            .get_mut()
                            .write_all(response.as_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Ok(_) => {}
                }
            }
        });
    }
}

// ---------------------------------------------------------------- clients

/// A TLS client connection kept open across requests.
struct Client {
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
}

impl Client {
    /// Connects to `addr` for `sni`, verifying the chain against `root_pem` (or, with
    /// `None`, accepting any certificate: for tests that only compare serials).
    async fn connect(addr: SocketAddr, sni: &str, root_pem: Option<&str>) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap();
        let config = match root_pem {
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
                    roots.add(cert.unwrap()).unwrap();
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate))
                .with_no_client_auth(),
        };
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from(sni.to_owned()).unwrap();
        let stream = connector
            .connect(name, tcp)
            .await
            .unwrap_or_else(|e| panic!("TLS handshake for {sni}: {e}"));
        Client { stream }
    }

    /// The served leaf's serial (hex) and DNS names.
    fn leaf(&self) -> (String, Vec<String>) {
        let certs = self.stream.get_ref().1.peer_certificates().unwrap();
        leaf_facts(&certs[0])
    }

    /// One request on this connection; the body.
    async fn get(&mut self) -> String {
        self.stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8];
            self.stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).await.unwrap();
        String::from_utf8(body).unwrap()
    }
}

fn leaf_facts(der: &CertificateDer<'_>) -> (String, Vec<String>) {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
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

#[derive(Debug)]
struct AnyCertificate;

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

// ---------------------------------------------------------------- helpers

fn runtime() -> tokio::runtime::Runtime {
    log_lines();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A manager configuration for `domains` against `pebble`, with short retries.
fn acme_config(
    pebble: &Pebble,
    data_dir: &Path,
    domains: &[&str],
    types: ChallengeTypes,
) -> AcmeConfig {
    AcmeConfig {
        domains: domains.iter().map(|d| d.to_string()).collect(),
        ca: tls::CaSettings {
            directory_url: pebble.directory_url.clone(),
            ca_root: Some(pebble.ca_root.clone()),
            contact: vec!["mailto:ops@example.com".into()],
            external_account: None,
        },
        data_dir: data_dir.to_owned(),
        challenges: types,
        static_certificates: Vec::new(),
        timing: tls::Timing {
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(2),
            order_timeout: Duration::from_secs(60),
            max_sleep: Duration::from_secs(1),
        },
    }
}

const HTTP01: ChallengeTypes = ChallengeTypes {
    http01: true,
    tls_alpn01: false,
};
const TLS_ALPN01: ChallengeTypes = ChallengeTypes {
    http01: false,
    tls_alpn01: true,
};

/// Waits (async) until `check` holds, or fails with `what` and the manager's snapshot.
async fn wait_until(
    manager: &CertManager,
    what: &str,
    mut check: impl FnMut(&tls::AcmeSnapshot) -> bool,
) {
    let deadline = Instant::now() + STATE_TIMEOUT;
    loop {
        let snapshot = manager.snapshot();
        if check(&snapshot) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {snapshot:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn serial_of(snapshot: &tls::AcmeSnapshot, name: &str) -> Option<String> {
    snapshot.certificate(name)?.serial.clone()
}

/// The challenge type stored with `name`'s certificate.
fn stored_challenge(data_dir: &Path, directory_url: &str, name: &str) -> String {
    let issuer = directory_url
        .trim_start_matches("https://")
        .replace([':', '/'], "-");
    let meta = std::fs::read(
        data_dir
            .join("certs")
            .join(issuer)
            .join(name)
            .join("meta.json"),
    )
    .unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&meta).unwrap();
    meta["challenge"].as_str().unwrap().to_owned()
}

/// One first issuance with `types`, checked by a client verifying against pebble's root.
fn first_issuance(types: ChallengeTypes, expected: &str) {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    let pebble = Pebble::start(listeners.pebble_options());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let name = "shop.example.com";
    let manager = CertManager::new(acme_config(&pebble, data.path(), &[name], types)).unwrap();
    let answers = listeners.answers.clone();
    rt.block_on(async {
        let addr = listeners.serve(manager.challenges(), manager.resolver());
        let task = tokio::spawn(manager.clone().run());
        wait_until(&manager, "the first certificate", |s| {
            serial_of(s, name).is_some()
        })
        .await;
        let mut client = Client::connect(addr, name, Some(&root)).await;
        assert_eq!(client.get().await, format!("served {name}"));
        let (serial, names) = client.leaf();
        assert_eq!(names, [name]);
        assert_eq!(Some(serial), serial_of(&manager.snapshot(), name));
        task.abort();
    });
    assert_eq!(
        stored_challenge(data.path(), &pebble.directory_url, name),
        expected
    );
    let snapshot = manager.snapshot();
    assert_eq!(snapshot.orders, 1);
    assert_eq!(
        snapshot.renewals,
        [((name.to_owned(), "initial".to_owned()), 1)]
    );
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    // Pebble really validated, over the expected way only (it validates from three
    // places at once, as Let's Encrypt does).
    let (http, alpn) = (
        answers.http01.load(Ordering::SeqCst),
        answers.alpn.load(Ordering::SeqCst),
    );
    match expected {
        "http-01" => assert!(http >= 1 && alpn == 0, "{http} {alpn}"),
        _ => assert!(alpn >= 1 && http == 0, "{http} {alpn}"),
    }
    // Key, chain, account: private files.
    for entry in walk(data.path()) {
        if entry.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", entry.display());
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

// ---------------------------------------------------------------- tests

#[test]
fn first_issuance_over_http01_verifies_against_pebbles_root() {
    first_issuance(HTTP01, "http-01");
}

#[test]
fn first_issuance_over_tls_alpn01_verifies_against_pebbles_root() {
    first_issuance(TLS_ALPN01, "tls-alpn-01");
}

#[test]
fn a_restart_serves_the_stored_certificate_and_orders_nothing() {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    let pebble = Pebble::start(listeners.pebble_options());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let name = "restart.example.com";
    let config = acme_config(&pebble, data.path(), &[name], HTTP01);
    let first = CertManager::new(config.clone()).unwrap();
    let challenges = first.challenges();
    let serial = rt.block_on(async {
        let task = tokio::spawn(first.clone().run());
        // Only the challenge answers are served: the second manager's resolver is checked
        // below on its own listener.
        tokio::spawn(serve_http01(listeners.http, challenges, Arc::default()));
        wait_until(&first, "the first certificate", |s| {
            serial_of(s, name).is_some()
        })
        .await;
        task.abort();
        serial_of(&first.snapshot(), name).unwrap()
    });
    drop(first);
    assert_eq!(pebble.orders(), 1);

    // The "restarted" process: the stored certificate is served before its renewal task
    // ever runs, and the task's first pass leaves it alone.
    let started = std::time::SystemTime::now();
    let second = CertManager::new(config.clone()).unwrap();
    assert_eq!(
        serial_of(&second.snapshot(), name).as_deref(),
        Some(serial.as_str())
    );
    rt.block_on(async {
        let addr = {
            let https = listeners.https;
            let addr = https.local_addr().unwrap();
            let config = tls::server_config(second.resolver()).unwrap();
            tokio::spawn(serve_https(https, config, Arc::default()));
            addr
        };
        let client = Client::connect(addr, name, Some(&root)).await;
        assert_eq!(client.leaf().0, serial);
        let task = tokio::spawn(second.clone().run());
        // Its first pass asked pebble for renewal information (pebble 2.4 has none) and
        // scheduled the renewal at a third of the lifetime left, years ahead.
        wait_until(&second, "the first pass of the renewal task", |s| {
            s.certificate(name)
                .and_then(|c| c.next_renewal)
                .is_some_and(|at| at > started + Duration::from_secs(86_400))
        })
        .await;
        task.abort();
    });
    assert_eq!(second.snapshot().orders, 0);
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    drop(second);

    // A crash between the key's rename and the chain's leaves a key that is not the
    // chain's: refused at start, and ordered anew (the first process's responder answers
    // the challenge from the shared directory).
    let issuer = pebble
        .directory_url
        .trim_start_matches("https://")
        .replace([':', '/'], "-");
    let key_file = data
        .path()
        .join("certs")
        .join(issuer)
        .join(name)
        .join("key.pem");
    let other = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
    std::fs::write(&key_file, other.signing_key.serialize_pem()).unwrap();
    let third = CertManager::new(config).unwrap();
    assert_eq!(serial_of(&third.snapshot(), name), None);
    rt.block_on(async {
        let task = tokio::spawn(third.clone().run());
        wait_until(&third, "a new certificate", |s| {
            serial_of(s, name).is_some()
        })
        .await;
        task.abort();
    });
    assert_ne!(serial_of(&third.snapshot(), name), Some(serial));
    assert_eq!(pebble.orders(), 2);
}

#[test]
fn renewal_swaps_the_certificate_without_dropping_an_open_connection() {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    // 24 s certificates: renewal is due 16 s after issuance.
    let pebble = Pebble::start(PebbleOptions {
        validity_secs: Some(24),
        ..listeners.pebble_options()
    });
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let name = "renew.example.com";
    let manager = CertManager::new(acme_config(&pebble, data.path(), &[name], HTTP01)).unwrap();
    rt.block_on(async {
        let addr = listeners.serve(manager.challenges(), manager.resolver());
        let task = tokio::spawn(manager.clone().run());
        wait_until(&manager, "the first certificate", |s| {
            serial_of(s, name).is_some()
        })
        .await;
        let mut open = Client::connect(addr, name, Some(&root)).await;
        assert_eq!(open.get().await, format!("served {name}"));
        let (first, _) = open.leaf();
        wait_until(&manager, "the renewed certificate", |s| {
            serial_of(s, name).is_some_and(|serial| serial != first)
        })
        .await;
        // The connection opened before the swap still works, with its certificate...
        assert_eq!(open.get().await, format!("served {name}"));
        assert_eq!(open.leaf().0, first);
        // ...and a new one gets the new certificate, valid under pebble's root.
        let fresh = Client::connect(addr, name, Some(&root)).await;
        let renewed = serial_of(&manager.snapshot(), name).unwrap();
        assert_eq!(fresh.leaf().0, renewed);
        task.abort();
    });
    let snapshot = manager.snapshot();
    let reasons: Vec<_> = snapshot
        .renewals
        .iter()
        .map(|((_, r), _)| r.as_str())
        .collect();
    assert_eq!(reasons, ["expiring", "initial"], "{snapshot:#?}");
    let log = log_lines().lock().unwrap().clone();
    assert!(
        log.contains("certificate obtained") && log.contains("reason=\"expiring\""),
        "{log}"
    );
}

#[test]
fn the_ca_down_or_refusing_leaves_the_old_certificate_serving() {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    // 15 s certificates: renewal is due 10 s after issuance.
    let mut pebble = Pebble::start(PebbleOptions {
        validity_secs: Some(15),
        ..listeners.pebble_options()
    });
    let data = tempfile::tempdir().unwrap();
    let name = "down.example.com";
    let manager = CertManager::new(acme_config(&pebble, data.path(), &[name], HTTP01)).unwrap();
    let addr = rt.block_on(async {
        let addr = listeners.serve(manager.challenges(), manager.resolver());
        tokio::spawn(manager.clone().run());
        wait_until(&manager, "the first certificate", |s| {
            serial_of(s, name).is_some()
        })
        .await;
        addr
    });
    let first = serial_of(&manager.snapshot(), name).unwrap();

    // Down: nothing listens on the directory's port.
    pebble.stop();
    rt.block_on(async {
        wait_until(&manager, "a failure counted as ca_unreachable", |s| {
            s.failures
                .iter()
                .any(|((n, r), c)| n == name && r == "ca_unreachable" && *c >= 1)
        })
        .await;
        let client = Client::connect(addr, name, None).await;
        assert_eq!(client.leaf().0, first);
    });
    let status = manager.snapshot().certificate(name).cloned().unwrap();
    assert!(status.last_error.is_some(), "{status:?}");
    let log = log_lines().lock().unwrap().clone();
    assert!(
        log.lines().any(|l| l.contains("certificate order failed")
            && l.contains(name)
            && l.contains("ca_unreachable")),
        "{log}"
    );

    // Refusing: a CA that is up again (a fresh pebble, which knows no account) but will
    // not issue for the name.
    pebble.restart(PebbleOptions {
        blocklist: vec![name.to_owned()],
        ..pebble.options.clone()
    });
    rt.block_on(async {
        wait_until(&manager, "a failure counted as rejectedIdentifier", |s| {
            s.failures
                .iter()
                .any(|((n, r), _)| n == name && r == "rejectedIdentifier")
        })
        .await;
        let client = Client::connect(addr, name, None).await;
        assert_eq!(client.leaf().0, first);
    });
    let snapshot = manager.snapshot();
    // The CA had forgotten the account: that was counted too, and a new one made.
    assert!(
        snapshot
            .failures
            .iter()
            .any(|((_, r), _)| r == "accountDoesNotExist"),
        "{snapshot:#?}"
    );
    assert_eq!(snapshot.renewals_of(name), 1);
    // One account with each pebble: the set-aside one, and the one made for the new CA.
    assert_eq!(
        pebble
            .log()
            .matches("There are now 1 accounts in memory")
            .count(),
        2,
        "{}",
        pebble.log()
    );
}

#[test]
fn two_managed_names_and_a_static_certificate_by_sni() {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    let pebble = Pebble::start(listeners.pebble_options());
    let root = pebble.issuing_root();
    let data = tempfile::tempdir().unwrap();
    let statics = tempfile::tempdir().unwrap();
    let fixed = rcgen::generate_simple_self_signed(vec!["static.example.com".to_owned()]).unwrap();
    let (cert_path, key_path) = (statics.path().join("c.pem"), statics.path().join("k.pem"));
    std::fs::write(&cert_path, fixed.cert.pem()).unwrap();
    std::fs::write(&key_path, fixed.signing_key.serialize_pem()).unwrap();
    let (static_serial, _) = leaf_facts(fixed.cert.der());

    let names = ["a.example.com", "b.example.com"];
    let mut config = acme_config(
        &pebble,
        data.path(),
        &[names[0], names[1], "static.example.com"],
        ChallengeTypes {
            http01: true,
            tls_alpn01: true,
        },
    );
    config.static_certificates = vec![(cert_path, key_path)];
    let manager = CertManager::new(config).unwrap();
    // The static name is served from its file and never ordered.
    assert_eq!(manager.managed_names(), names);
    rt.block_on(async {
        let addr = listeners.serve(manager.challenges(), manager.resolver());
        let task = tokio::spawn(manager.clone().run());
        wait_until(&manager, "both certificates", |s| {
            names.iter().all(|n| serial_of(s, n).is_some())
        })
        .await;
        for name in names {
            let mut client = Client::connect(addr, name, Some(&root)).await;
            assert_eq!(client.get().await, format!("served {name}"));
            assert_eq!(client.leaf().1, [name]);
        }
        let client = Client::connect(addr, "static.example.com", None).await;
        assert_eq!(client.leaf().0, static_serial);
        task.abort();
    });
    assert_eq!(pebble.orders(), 2);
    let snapshot = manager.snapshot();
    let status = snapshot.certificate("static.example.com").unwrap();
    assert!(!status.managed);
    let expiry = status.expiry_seconds(std::time::SystemTime::now()).unwrap();
    assert!(expiry > 86_400.0, "{expiry}");
    for name in names {
        let left = snapshot
            .certificate(name)
            .unwrap()
            .expiry_seconds(std::time::SystemTime::now())
            .unwrap();
        // Pebble's default lifetime is five years.
        assert!(left > 4.0 * 365.0 * 86_400.0, "{name}: {left}");
    }
}

#[test]
fn external_account_binding_when_the_ca_requires_it() {
    let rt = runtime();
    let listeners = rt.block_on(Listeners::bind());
    let key = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
    let pebble = Pebble::start(PebbleOptions {
        eab: vec![("kid-1".into(), key.into())],
        ..listeners.pebble_options()
    });
    let name = "eab.example.com";
    let data = tempfile::tempdir().unwrap();
    // Without a binding the CA refuses the account.
    let unbound = CertManager::new(acme_config(&pebble, data.path(), &[name], HTTP01)).unwrap();
    let mut config = acme_config(&pebble, data.path(), &[name], HTTP01);
    config.ca.external_account = Some(tls::ExternalAccount {
        key_id: "kid-1".into(),
        hmac_key: base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, key)
            .unwrap(),
    });
    rt.block_on(async {
        let task = tokio::spawn(unbound.clone().run());
        wait_until(&unbound, "the refused account", |s| {
            s.failures
                .iter()
                .any(|((_, r), _)| r == "externalAccountRequired")
        })
        .await;
        task.abort();
        let bound = CertManager::new(config).unwrap();
        listeners.serve(bound.challenges(), bound.resolver());
        let task = tokio::spawn(bound.clone().run());
        wait_until(&bound, "the certificate", |s| serial_of(s, name).is_some()).await;
        task.abort();
    });
    assert!(
        pebble.log().contains("Successful newAccount Binding"),
        "{}",
        pebble.log()
    );
}

/// The environment variable that makes [`sharing_process`] run as one of the processes
/// of [`processes_sharing_the_data_directory_order_once`].
const CHILD_ENV: &str = "FERROPHP_ACME_TEST_CHILD";

#[test]
fn processes_sharing_the_data_directory_order_once() {
    let rt = runtime();
    let http = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let pebble = Pebble::start(PebbleOptions {
        http_port: http.local_addr().unwrap().port(),
        tls_port: 1,
        ..PebbleOptions::default()
    });
    let data = tempfile::tempdir().unwrap();
    // The challenge path is answered from the shared directory, by a third party: which
    // process orders is up to the lock, and the CA may reach any of them.
    let shared = Arc::new(Challenges::shared(data.path()));
    rt.spawn(serve_http01(http, shared, Arc::default()));
    let spawn = || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sharing_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_ENV,
                serde_json::json!({
                    "directory": pebble.directory_url,
                    "ca_root": pebble.ca_root,
                    "data_dir": data.path(),
                })
                .to_string(),
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    // (serial, orders placed) of each process.
    let results: Vec<(String, u64)> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(output.status.success(), "{stdout}");
            let value = |key: &str| {
                stdout
                    .lines()
                    .find_map(|l| l.split_once(key).map(|(_, v)| v.trim().to_owned()))
                    .unwrap_or_else(|| panic!("no {key} in {stdout}"))
            };
            (value("SERIAL "), value("ORDERS ").parse().unwrap())
        })
        .collect();
    let serials: Vec<&String> = results.iter().map(|(s, _)| s).collect();
    let orders: Vec<u64> = results.iter().map(|(_, o)| *o).collect();
    // One process ordered, the other waited on the lock and took its certificate.
    assert!(orders == [1, 0] || orders == [0, 1], "{orders:?}");
    assert_eq!(serials[0], serials[1]);
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    assert!(pebble.log().contains("There are now 1 accounts in memory"));
}

/// One of the processes sharing a data directory: a manager for `shared.example.com` that
/// prints `SERIAL <hex>` once it serves a certificate, and `ORDERS <n>`.
#[test]
fn sharing_process() {
    let Ok(settings) = std::env::var(CHILD_ENV) else {
        return; // Only a child process of the test above does anything.
    };
    let settings: serde_json::Value = serde_json::from_str(&settings).unwrap();
    let name = "shared.example.com";
    let rt = runtime();
    let config = AcmeConfig {
        domains: vec![name.into()],
        ca: tls::CaSettings {
            directory_url: settings["directory"].as_str().unwrap().into(),
            ca_root: Some(settings["ca_root"].as_str().unwrap().into()),
            contact: Vec::new(),
            external_account: None,
        },
        data_dir: settings["data_dir"].as_str().unwrap().into(),
        challenges: HTTP01,
        static_certificates: Vec::new(),
        timing: tls::Timing {
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(2),
            order_timeout: Duration::from_secs(60),
            max_sleep: Duration::from_secs(1),
        },
    };
    let manager = CertManager::new(config).unwrap();
    rt.block_on(async {
        tokio::spawn(manager.clone().run());
        wait_until(&manager, "a certificate", |s| serial_of(s, name).is_some()).await;
    });
    let snapshot = manager.snapshot();
    println!("SERIAL {}", serial_of(&snapshot, name).unwrap());
    println!("ORDERS {}", snapshot.orders);
}
