//! Issue 36's "done when", for real: a fresh Debian 12 container of the image (built from
//! the release tarball, `common/docker.rs`) given only `FERROPHP_DOMAINS`, pebble's
//! directory URL and pebble's HTTPS root serves a valid HTTPS page.
//!
//! The container sits on a Docker network of its own at a fixed address; pebble and
//! pebble-challtestsrv run on the host, pebble listening on the network's gateway, and
//! challtestsrv answers every name with the container's address, so pebble validates by
//! connecting to the container's ports 443 (TLS-ALPN-01) and 80 (HTTP-01) as a real CA
//! would. The host's client trusts only pebble's issuing root and reaches the name at the
//! container's address by SNI. A second container on the same data volume serves the
//! stored certificate and orders nothing. Everything the test makes (containers, network,
//! volume, image) is removed on drop, failing or not.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use common::docker::{build_image, docker, repo, Cleanup};
use common::pebble::{Pebble, PebbleOptions};

/// The name the container is given: pebble resolves it through challtestsrv.
const NAME: &str = "shop.test";
/// Start-up, the first order (pebble takes about a second) and the container's start.
const SERVE_TIMEOUT: Duration = Duration::from_secs(90);

/// A client trusting only `root` (PEM) and no built-in root, reaching [`NAME`] at `ip`,
/// following no redirect, keeping the TLS details of each response.
fn client(root: &str, ip: Ipv4Addr) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(root.as_bytes()).unwrap())
        .resolve(NAME, SocketAddr::from((ip, 0)))
        .tls_info(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// The serial (hex) and DNS names of the certificate a response came over.
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

/// Waits until `https://NAME/` answers over a chain valid under `client`'s root (the
/// handshake fails until the name has a certificate); the status, certificate and body.
fn wait_https(
    client: &reqwest::blocking::Client,
    container: &str,
    pebble: &Pebble,
) -> (u16, (String, Vec<String>), String) {
    let deadline = Instant::now() + SERVE_TIMEOUT;
    loop {
        let last = match client.get(format!("https://{NAME}/")).send() {
            Ok(response) => {
                let status = response.status().as_u16();
                let cert = leaf(&response);
                return (status, cert, response.text().unwrap());
            }
            Err(e) => format!("{e:?}"),
        };
        assert!(
            Instant::now() < deadline,
            "https://{NAME}/ never served: {last}\ncontainer log:\n{}\npebble log:\n{}",
            logs(container),
            pebble.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn logs(container: &str) -> String {
    std::process::Command::new("docker")
        .args(["logs", container])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
        })
        .unwrap_or_default()
}

/// Creates the bridge network `name` on a /24 of its own, trying 10.213.N.0/24 from
/// the process id on past ranges other networks hold (Docker refuses an overlap, and only
/// a subnet given by the test admits `--ip`); the subnet's base address.
fn create_network(name: &str, cleanup: &mut Cleanup) -> Ipv4Addr {
    let mut refusals = String::new();
    for k in 0..32 {
        let base = Ipv4Addr::new(10, 213, ((std::process::id() + k) % 256) as u8, 0);
        let out = std::process::Command::new("docker")
            .args(["network", "create", "--subnet", &format!("{base}/24"), name])
            .output()
            .expect("docker runs");
        if out.status.success() {
            cleanup.networks.push(name.to_owned());
            return base;
        }
        refusals += &String::from_utf8_lossy(&out.stderr);
    }
    panic!("no free 10.213.x.0/24 for a network: {refusals}");
}

/// `docker run` of the image on the network at `ip`, the data volume on /app/var/data and
/// pebble's HTTPS root mounted: three variables and nothing else.
fn run(image: &str, name: &str, network: &str, ip: Ipv4Addr, volume: &str, pebble: &Pebble) {
    docker(&[
        "run",
        "-d",
        "--name",
        name,
        "--network",
        network,
        "--ip",
        &ip.to_string(),
        "-v",
        &format!("{volume}:/app/var/data"),
        "-v",
        &format!("{}:/etc/pebble-root.pem:ro", pebble.ca_root.display()),
        "-e",
        &format!("FERROPHP_DOMAINS={NAME}"),
        "-e",
        &format!("FERROPHP_ACME_DIRECTORY={}", pebble.directory_url),
        "-e",
        "FERROPHP_ACME_CA_ROOT=/etc/pebble-root.pem",
        image,
    ]);
}

/// `ferrophp_certificate_orders_total` from the container's admin listener (the image's
/// FERROPHP_ADMIN is 0.0.0.0:2019), with the whole text.
fn orders_total(ip: Ipv4Addr) -> (Option<f64>, String) {
    let text = reqwest::blocking::get(format!("http://{ip}:2019/metrics"))
        .and_then(|r| r.text())
        .unwrap();
    let series = "ferrophp_certificate_orders_total";
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok());
    (value, text)
}

/// One GET of `/` over HTTP/3 to `ip`:443 as NAME, trusting only `root`: the result of
/// test-data/http3/h3client.py (status, body).
fn http3_get(ip: Ipv4Addr, root: &str) -> serde_json::Value {
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), root).unwrap();
    let out = std::process::Command::new("python3")
        .arg(repo().join("test-data/http3/h3client.py"))
        .arg(ip.to_string())
        .arg("443")
        .arg(ca.path())
        .args(["requests", r#"[{"path": "/"}]"#])
        .env("H3_SERVER_NAME", NAME)
        .output()
        .expect("python3 runs (aioquic: scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "HTTP/3 GET failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    reply["results"][0].clone()
}

#[test]
fn a_fresh_container_given_only_a_domain_and_the_ca_serves_https_and_keeps_its_certificate() {
    let started = Instant::now();
    let id = std::process::id();
    let image = format!("ferrophp-test-https:{id}");
    let network = format!("ferrophp-https-{id}");
    let volume = format!("ferrophp-https-data-{id}");
    let mut cleanup = Cleanup::default();
    cleanup.images.push(image.clone());
    build_image(&image);
    let built = started.elapsed();

    let base = create_network(&network, &mut cleanup);
    // The host's side of the bridge is the subnet's first address; the container's is
    // fixed, because challtestsrv must know it before the container starts ordering.
    let gateway = Ipv4Addr::from(u32::from(base) + 1);
    let ip = Ipv4Addr::from(u32::from(base) + 2);
    let pebble = Pebble::start(PebbleOptions {
        http_port: 80,
        tls_port: 443,
        listen_ip: Some(gateway),
        challenge_ipv4: Some(ip),
        ..PebbleOptions::default()
    });
    let root = pebble.issuing_root();
    let client = client(&root, ip);
    cleanup.volumes.push(volume.clone());
    docker(&["volume", "create", &volume]);

    // First container: orders, then serves the PHP page over HTTPS.
    let first = format!("ferrophp-https-{id}-1");
    cleanup.containers.push(first.clone());
    let run_at = Instant::now();
    run(&image, &first, &network, ip, &volume, &pebble);
    let (status, (serial, names), body) = wait_https(&client, &first, &pebble);
    let first_served = run_at.elapsed();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!("PHP {} (ZTS)", worker::PHP_VERSION)),
        "not the PHP page: {body}"
    );
    assert_eq!(names, [NAME], "the certificate names the domain alone");
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    // The plain port redirects to HTTPS, keeping the path and query.
    let plain = client
        .get(format!("http://{NAME}/worker.php?x=1"))
        .send()
        .unwrap();
    assert_eq!(plain.status().as_u16(), 308);
    assert_eq!(
        plain.headers()["location"],
        format!("https://{NAME}/worker.php?x=1").as_str()
    );
    let (orders, metrics) = orders_total(ip);
    assert_eq!(orders, Some(1.0), "{metrics}");
    // HTTP/3 on the same port (UDP), the same certificate, a real client (aioquic).
    let h3 = http3_get(ip, &root);
    assert_eq!(h3["status"], 200, "{h3}");
    assert!(
        h3["body"]
            .as_str()
            .is_some_and(|b| b.contains(&format!("PHP {} (ZTS)", worker::PHP_VERSION))),
        "not the PHP page over HTTP/3: {h3}"
    );

    // A second, fresh container on the same volume: the stored certificate from the
    // first handshake, no order (pebble's log and the server's own counter).
    docker(&["rm", "-f", &first]);
    let second = format!("ferrophp-https-{id}-2");
    cleanup.containers.push(second.clone());
    let restarted = Instant::now();
    run(&image, &second, &network, ip, &volume, &pebble);
    let (status, (serial_again, _), body) = wait_https(&client, &second, &pebble);
    let second_served = restarted.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(serial_again, serial, "the stored certificate serves");
    assert_eq!(pebble.orders(), 1, "the restart ordered: {}", pebble.log());
    let (orders, metrics) = orders_total(ip);
    assert_eq!(orders, Some(0.0), "{metrics}");
    eprintln!(
        "image built in {built:?}; HTTPS served {first_served:?} after `docker run` \
         (ordering), {second_served:?} on the second container (stored)"
    );
}
