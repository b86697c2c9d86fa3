//! Differential test: for a matrix of requests, every `$_SERVER` entry that nginx +
//! Debian's php8.2-fpm also sets has the same value under ferrophp.
//!
//! nginx + php-fpm are started from throwaway configs (benches/baseline/nginx-fpm.sh) on
//! loopback. Needs root (php-fpm -R) and the packages from scripts/install-test-deps.sh;
//! skipped with a message otherwise.

mod common;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{exchange, parse_response, Server};

/// Keys whose values legitimately differ between the two servers.
const VOLATILE: &[&str] = &[
    "REMOTE_PORT",
    "REQUEST_TIME",
    "REQUEST_TIME_FLOAT",
    "SERVER_SOFTWARE",
    "SERVER_PORT",
    "HTTP_HOST",
    // Both servers put their process environment in $_SERVER (the baseline runs php-fpm
    // with clear_env = no); these differ between the two processes by nature.
    "PWD",
    "SHLVL",
    "_",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/diff")
        .canonicalize()
        .unwrap()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Baseline {
    run_dir: tempfile::TempDir,
    addr: SocketAddr,
}

impl Baseline {
    fn start() -> Option<Baseline> {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/baseline/nginx-fpm.sh");
        let run_dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let status = Command::new("bash")
            .arg(&script)
            .args([
                "start",
                run_dir.path().to_str().unwrap(),
                root().to_str().unwrap(),
                &port.to_string(),
                "2",
                "1",
            ])
            .status()
            .ok()?;
        status.success().then(|| Baseline {
            run_dir,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/baseline/nginx-fpm.sh");
        let _ = Command::new("bash")
            .arg(script)
            .args(["stop", self.run_dir.path().to_str().unwrap()])
            .status();
    }
}

fn dump(addr: SocketAddr, target: &str, headers: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut request = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let bytes = exchange(addr, request.as_bytes(), Duration::from_secs(10)).expect("exchange");
    let response = parse_response(&bytes).expect("an HTTP response");
    assert_eq!(
        response.status,
        200,
        "{target} on {addr}: {}",
        response.text()
    );
    let json: serde_json::Value = serde_json::from_str(&response.text())
        .unwrap_or_else(|e| panic!("{e}: {}", response.text()));
    json.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
            )
        })
        .collect()
}

#[test]
fn server_vars_match_nginx_php_fpm() {
    if !nix_is_root() {
        eprintln!("SKIPPED: the php-fpm baseline needs root (php-fpm -R); run as root to compare");
        return;
    }
    if !std::path::Path::new("/usr/sbin/php-fpm8.2").exists() {
        panic!("php-fpm8.2 missing: scripts/install-test-deps.sh installs it");
    }
    let Some(baseline) = Baseline::start() else {
        panic!("nginx + php-fpm did not start (see benches/baseline/nginx-fpm.sh)");
    };
    let ours = Server::start(&root(), &[]);

    let cases: &[(&str, &[(&str, &str)])] = &[
        ("/dump.php", &[]),
        ("/dump.php?", &[]),
        (
            "/dump.php?a=1&b[]=2&c=%20x",
            &[("Accept", "text/html"), ("User-Agent", "diff/1.0")],
        ),
        ("/dump.php/path/info?x=y", &[]),
        ("/dump.php/%C3%A9t%C3%A9/caf%C3%A9", &[]),
        ("/caf%C3%A9/unicode%20path?q=%E2%9C%93", &[]),
        (
            "/front/controller/route",
            &[("X-Requested-With", "XMLHttpRequest")],
        ),
        (
            "/dump.php",
            &[("X-Custom-Header", "one"), ("X-Custom-Header", "two")],
        ),
        (
            "/dump.php",
            &[("Accept-Language", "fr"), ("Accept-Language", "en;q=0.5")],
        ),
        (
            "/dump.php",
            &[("Authorization", "Basic dXNlcjpwYXNzd29yZA==")],
        ),
        (
            "/dump.php",
            &[(
                "Authorization",
                "Digest username=\"u\", realm=\"r\", nonce=\"n\", uri=\"/\", response=\"x\"",
            )],
        ),
        (
            "/dump.php",
            &[
                ("X-Odd.Name", "dot"),
                ("X-Mixed-CASE", "case"),
                ("x-lower", "lower"),
            ],
        ),
        (
            "/dump.php",
            &[("Cookie", "a=1; b=2"), ("Content-Type", "text/plain")],
        ),
        ("/index.php?only=query", &[]),
    ];
    // Repeated headers: php-fpm keeps only the last FastCGI param of a name, while ferrophp
    // joins them with ", " as RFC 9110 defines a repeated field's value (and as the HTTP
    // server issue requires); compared separately below.
    let repeated = ["HTTP_X_CUSTOM_HEADER", "HTTP_ACCEPT_LANGUAGE"];
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (target, headers) in cases {
        let theirs = dump(baseline.addr, target, headers);
        let mine = dump(ours.addr, target, headers);
        for (key, their_value) in &theirs {
            if VOLATILE.contains(&key.as_str()) {
                continue;
            }
            if repeated.contains(&key.as_str()) {
                let joined = mine.get(key).map(String::as_str).unwrap_or_default();
                assert!(
                    joined.ends_with(their_value.as_str()),
                    "{target} {key}: {joined:?} lacks {their_value:?}"
                );
                continue;
            }
            if let Some(my_value) = mine.get(key) {
                compared += 1;
                if my_value != their_value {
                    mismatches.push(format!(
                        "{target} {key}: ferrophp {my_value:?} vs php-fpm {their_value:?}"
                    ));
                }
            }
        }
        // The CGI essentials must be there on our side whenever php-fpm has them.
        for key in [
            "REQUEST_URI",
            "SCRIPT_NAME",
            "SCRIPT_FILENAME",
            "QUERY_STRING",
            "PHP_SELF",
            "DOCUMENT_ROOT",
        ] {
            if theirs.contains_key(key) {
                assert!(mine.contains_key(key), "{target}: ferrophp lacks {key}");
            }
        }
    }
    assert!(compared > 200, "compared only {compared} values");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}
