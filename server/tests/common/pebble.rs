//! Pebble, Let's Encrypt's ACME test CA (Debian's `pebble` package), started by a test on
//! loopback with its own configuration, with `pebble-challtestsrv` (same package) as its
//! DNS server, which answers every name with 127.0.0.1 (or [`PebbleOptions::challenge_ipv4`]:
//! a container's address, with pebble listening on its Docker network's gateway,
//! [`PebbleOptions::listen_ip`]). Challenges are really validated
//! (`PEBBLE_VA_ALWAYS_VALID` is removed from its environment): pebble connects to the
//! `http_port` and `tls_port` the test gives it, where the server (or the test's
//! responder) must answer. Pebble's own HTTPS uses a certificate made here, signed by a
//! CA whose PEM is [`Pebble::ca_root`] (what `--acme-ca-root` trusts).
//!
//! By hand, the same set-up is:
//!
//! ```text
//! pebble-challtestsrv -dns01 127.0.0.1:8053 -management 127.0.0.1:8055 -defaultIPv6 "" \
//!     -http01 "" -https01 "" -tlsalpn01 ""
//! PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 PEBBLE_AUTHZREUSE=0 \
//!     pebble -config pebble.json -dnsserver 127.0.0.1:8053
//! ```
//!
//! with `pebble.json` as [`Pebble::start`] writes it (`listenAddress`, `httpPort`,
//! `tlsPort`, `certificate`/`privateKey` for its own HTTPS, optionally
//! `certificateValidityPeriod` in seconds, `domainBlocklist`, EAB keys).

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How pebble is configured.
#[derive(Debug, Clone, Default)]
pub struct PebbleOptions {
    /// Where pebble's VA sends HTTP-01 requests.
    pub http_port: u16,
    /// Where pebble's VA makes TLS-ALPN-01 handshakes.
    pub tls_port: u16,
    /// Certificate lifetime in seconds (pebble's default is five years).
    pub validity_secs: Option<u64>,
    /// Names pebble refuses to issue for (`rejectedIdentifier`).
    pub blocklist: Vec<String>,
    /// External Account Binding required, with these (key id, base64url HMAC key) pairs.
    pub eab: Vec<(String, String)>,
    /// The ACME port, to start again where a stopped pebble listened.
    pub acme_port: Option<u16>,
    /// Where pebble's ACME and management interfaces listen, also named by its HTTPS
    /// certificate [default: 127.0.0.1]; a Docker network's gateway makes pebble reachable
    /// from a container on that network. Fixed by [`Pebble::start`] (a restart keeps it).
    pub listen_ip: Option<Ipv4Addr>,
    /// The address the DNS server gives every name, where pebble connects to validate
    /// [default: 127.0.0.1]; a container's address on a Docker network.
    pub challenge_ipv4: Option<Ipv4Addr>,
}

/// A running pebble and its DNS server, both killed on drop.
pub struct Pebble {
    dir: tempfile::TempDir,
    pebble: Option<Child>,
    dns: Child,
    dns_port: u16,
    listen_ip: Ipv4Addr,
    pub options: PebbleOptions,
    pub acme_port: u16,
    pub management_port: u16,
    /// `https://127.0.0.1:<port>/dir` (the `listen_ip` instead of 127.0.0.1 when set).
    pub directory_url: String,
    /// PEM of the CA behind pebble's own HTTPS certificate.
    pub ca_root: PathBuf,
    log: Arc<Mutex<String>>,
}

/// A free loopback port for TCP and UDP alike (the DNS server binds both).
pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

fn wait_for_port(ip: Ipv4Addr, port: u16, what: &str, log: &Mutex<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect((ip, port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on {port}; its log:\n{}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Copies a child's stdout and stderr lines into `log`.
fn collect_output(child: &mut Child, log: &Arc<Mutex<String>>) {
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    for stream in [
        Box::new(out) as Box<dyn std::io::Read + Send>,
        Box::new(err),
    ] {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
    }
}

impl Pebble {
    /// Starts the DNS server and pebble, and waits until both accept connections.
    pub fn start(options: PebbleOptions) -> Pebble {
        let dir = tempfile::tempdir().unwrap();
        let listen_ip = options.listen_ip.unwrap_or(Ipv4Addr::LOCALHOST);
        let ca_root = write_listener_certificate(dir.path(), listen_ip);
        let challenge_ip = options.challenge_ipv4.unwrap_or(Ipv4Addr::LOCALHOST);
        let log = Arc::new(Mutex::new(String::new()));

        let dns_port = free_port();
        let dns_management = free_port();
        let mut dns = Command::new("pebble-challtestsrv")
            .args(["-dns01", &format!("127.0.0.1:{dns_port}")])
            .args(["-management", &format!("127.0.0.1:{dns_management}")])
            .args([
                "-defaultIPv4",
                &challenge_ip.to_string(),
                "-defaultIPv6",
                "",
            ])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pebble-challtestsrv (Debian package pebble: scripts/install-test-deps.sh)");
        collect_output(&mut dns, &log);
        wait_for_port(Ipv4Addr::LOCALHOST, dns_port, "pebble-challtestsrv", &log);

        let mut pebble = Pebble {
            dir,
            pebble: None,
            dns,
            dns_port,
            listen_ip,
            acme_port: 0,
            management_port: 0,
            directory_url: String::new(),
            ca_root,
            log,
            options: PebbleOptions::default(),
        };
        pebble.launch(options);
        pebble
    }

    fn launch(&mut self, options: PebbleOptions) {
        let acme_port = options.acme_port.unwrap_or_else(free_port);
        let management_port = free_port();
        let mut config = serde_json::json!({
            "pebble": {
                "listenAddress": format!("{}:{acme_port}", self.listen_ip),
                "managementListenAddress": format!("{}:{management_port}", self.listen_ip),
                "certificate": self.dir.path().join("listener.pem"),
                "privateKey": self.dir.path().join("listener.key"),
                "httpPort": options.http_port,
                "tlsPort": options.tls_port,
                "ocspResponderURL": "",
                "externalAccountBindingRequired": !options.eab.is_empty(),
                "externalAccountMACKeys": options.eab.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                "domainBlocklist": options.blocklist,
            }
        });
        if let Some(secs) = options.validity_secs {
            config["pebble"]["certificateValidityPeriod"] = secs.into();
        }
        let config_path = self.dir.path().join(format!("pebble-{acme_port}.json"));
        std::fs::write(&config_path, config.to_string()).unwrap();
        let mut child = Command::new("pebble")
            .arg("-config")
            .arg(&config_path)
            .args(["-dnsserver", &format!("127.0.0.1:{}", self.dns_port)])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .env_remove("PEBBLE_VA_ALWAYS_VALID")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pebble (Debian package pebble: scripts/install-test-deps.sh)");
        collect_output(&mut child, &self.log);
        wait_for_port(self.listen_ip, acme_port, "pebble", &self.log);
        wait_for_port(
            self.listen_ip,
            management_port,
            "pebble's management interface",
            &self.log,
        );
        self.pebble = Some(child);
        self.acme_port = acme_port;
        self.management_port = management_port;
        self.directory_url = format!("https://{}:{acme_port}/dir", self.listen_ip);
        self.options = PebbleOptions {
            acme_port: Some(acme_port),
            listen_ip: Some(self.listen_ip),
            ..options
        };
    }

    /// Kills pebble (the DNS server stays): the CA is down.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.pebble.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts pebble again on the same ACME port with `options` (a fresh CA: new roots,
    /// no accounts).
    pub fn restart(&mut self, options: PebbleOptions) {
        self.stop();
        self.launch(PebbleOptions {
            acme_port: Some(self.acme_port),
            ..options
        });
    }

    /// Everything pebble and its DNS server printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Orders pebble created ("Added order" lines), counted from its own log.
    pub fn orders(&self) -> usize {
        self.log().matches("Added order").count()
    }

    /// The root pebble issues under (`/roots/0` of its management interface, PEM).
    pub fn issuing_root(&self) -> String {
        self.management_get("/roots/0")
    }

    fn management_get(&self, path: &str) -> String {
        let root = std::fs::read(&self.ca_root).unwrap();
        let client = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&root).unwrap())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let url = format!("https://{}:{}{path}", self.listen_ip, self.management_port);
        let response = client.get(&url).send().unwrap();
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        response.text().unwrap()
    }

    /// pebble's ACME address.
    pub fn acme_addr(&self) -> SocketAddr {
        SocketAddr::from((IpAddr::V4(self.listen_ip), self.acme_port))
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.stop();
        let _ = self.dns.kill();
        let _ = self.dns.wait();
    }
}

/// A CA and, signed by it, the certificate of pebble's own HTTPS (for 127.0.0.1,
/// localhost and `listen_ip`) in `dir`: `listener.pem`, `listener.key`; returns the CA's
/// PEM path.
fn write_listener_certificate(dir: &std::path::Path, listen_ip: Ipv4Addr) -> PathBuf {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ferrophp test minica");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    if listen_ip != Ipv4Addr::LOCALHOST {
        names.push(listen_ip.to_string());
    }
    let params = rcgen::CertificateParams::new(names).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("listener.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("listener.key"), key.serialize_pem()).unwrap();
    let root = dir.join("minica.pem");
    std::fs::write(&root, ca_cert.pem()).unwrap();
    root
}
