//! Laravel Octane's FrankenPHP worker contract, end to end: a fixture of Octane's
//! `frankenphp-worker.php` (`test-data/frankenphp/octane/public/octane-worker.php`; Octane
//! itself is not in Debian) driving a minimal Laravel 8 app on Debian's
//! `php-laravel-framework`, as a catch-all worker. Checks what the server owes the script:
//! worker mode visible at boot, `APP_BASE_PATH` and `MAX_REQUESTS` from the process
//! environment (as Octane's `octane:frankenphp` command passes them),
//! each request's superglobals for `Request::createFromGlobals()`, Symfony's
//! `Response::send()` (status, headers, cookies, body), the booted app kept across requests,
//! and a fresh boot after `MAX_REQUESTS`. Skipped (with a message) without the package.

mod common;

use std::path::{Path, PathBuf};

use common::{KeepAlive, Server};
use serde_json::Value;

const LARAVEL: &str = "/usr/share/php/Illuminate/autoload.php";

fn octane() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/octane")
        .canonicalize()
        .expect("test-data/frankenphp/octane exists")
}

/// Octane's `octane:frankenphp` command starts FrankenPHP with `APP_BASE_PATH` and
/// `MAX_REQUESTS` in its process environment: so do we. A worker script's boot `$_SERVER`
/// carries the process environment (even with `--clear-env`, which applies to requests).
fn start(cache: &Path) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("ferrophp.toml");
    std::fs::write(
        &toml,
        format!(
            "[env]\n\
             APP_PACKAGES_CACHE = \"{cache}/packages.php\"\nAPP_SERVICES_CACHE = \"{cache}/services.php\"\n\n\
             [[worker]]\nscript = \"{base}/public/octane-worker.php\"\nthreads = 1\nmatch = \"*\"\n",
            base = octane().display(),
            cache = cache.display()
        ),
    )
    .unwrap();
    let base = octane().display().to_string();
    let server = Server::start_with_env(
        &octane().join("public"),
        &["--threads", "1", "--config", toml.to_str().unwrap()],
        &[("APP_BASE_PATH", base.as_str()), ("MAX_REQUESTS", "3")],
    );
    (server, dir)
}

#[test]
fn octane_worker_contract_with_a_laravel_app() {
    if !Path::new(LARAVEL).exists() {
        eprintln!("SKIPPED: {LARAVEL} missing: scripts/install-test-deps.sh installs php-laravel-framework");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let (server, _dir) = start(cache.path());
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    let mut boots = Vec::new();
    for i in 1..=7 {
        let r = conn.get(&format!("/hello/ann?x={i}")).unwrap();
        assert_eq!(r.status, 200, "{}\n{}", r.text(), server.stderr());
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["hello"], "ann", "{v}");
        assert_eq!(v["query"], serde_json::json!({"x": i.to_string()}), "{v}");
        assert_eq!(v["uri"], format!("/hello/ann?x={i}"), "{v}");
        assert_eq!(v["worker"], Value::Null, "a request's $_SERVER: {v}");
        // MAX_REQUESTS=3: the booted app serves three requests, then the script ends and
        // the server boots it again.
        assert_eq!(v["served"], (i - 1) % 3 + 1, "{v}");
        boots.push(v["boot"].as_str().unwrap().to_owned());
    }
    assert_eq!(boots[0], boots[2]);
    assert_ne!(boots[2], boots[3]);
    assert_ne!(boots[5], boots[6]);

    let body = br#"{"a":1}"#;
    let req = format!(
        "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nX-Fixture: f\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        std::str::from_utf8(body).unwrap()
    );
    let r = conn.send(req.as_bytes()).unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r
        .header("set-cookie")
        .unwrap()
        .starts_with("octane=yes; path=/"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v, serde_json::json!({"json": {"a": 1}, "header": "f"}));

    // An exception inside the app is Laravel's 500, and the worker goes on.
    let r = conn
        .send(b"GET /boom HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n")
        .unwrap();
    assert_eq!(r.status, 500);
    assert!(r.text().contains("Server Error"), "{}", r.text());
    let r = conn.get("/hello/bob").unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn the_octane_worker_refuses_classic_mode() {
    if !Path::new(LARAVEL).exists() {
        eprintln!("SKIPPED: {LARAVEL} missing");
        return;
    }
    let server = Server::start(&octane().join("public"), &["--threads", "1"]);
    let r = server.get("/octane-worker.php");
    assert_eq!(
        r.text(),
        "FrankenPHP must be in worker mode to use this script."
    );
}
