//! The Docker base image (issue 14), for real: the base made from Debian packages
//! (scripts/docker-base-image.sh), `docker build` of the root Dockerfile from the release
//! tarball, a container serving the demo app through a published loopback port as a
//! non-root user, healthy by its HEALTHCHECK, `php` on PATH being ferrophp (Debian's
//! Composer runs on it), restarted, then a derived app image (worker
//! mode from the environment) stopped with a request in flight that still completes.
//! Every container and image this test makes is removed at the end.

mod common;

use std::time::{Duration, Instant};

use common::docker::{build_image, docker, Cleanup};

fn published_port(container: &str) -> u16 {
    let mapping = docker(&["port", container, "80/tcp"]);
    mapping
        .lines()
        .next()
        .and_then(|l| l.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no published port: {mapping}"))
}

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let r = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .send()
        .ok()?;
    let status = r.status().as_u16();
    Some((status, r.text().ok()?))
}

fn wait_serving(port: u16, path: &str) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(r) = get(port, path) {
            return r;
        }
        assert!(Instant::now() < deadline, "container never served {path}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn base_image_builds_serves_restarts_and_drains() {
    let (version, php) = (env!("CARGO_PKG_VERSION"), worker::PHP_VERSION);
    let id = std::process::id();
    let image = format!("ferrophp-test:{id}");
    let app_image = format!("ferrophp-test-app:{id}");
    let mut cleanup = Cleanup::default();
    cleanup.images = vec![app_image.clone(), image.clone()];
    build_image(&image);
    let label = |key: &str| {
        docker(&[
            "image",
            "inspect",
            "-f",
            &format!("{{{{index .Config.Labels \"{key}\"}}}}"),
            &image,
        ])
    };
    assert_eq!(label("org.opencontainers.image.version"), version);
    assert_eq!(label("dev.ferrophp.php.version"), php);

    // The demo app, classic mode, published on loopback only.
    let name = format!("ferrophp-test-{id}");
    cleanup.containers.push(name.clone());
    docker(&["run", "-d", "--name", &name, "-p", "127.0.0.1::80", &image]);
    let port = published_port(&name);
    let (status, body) = wait_serving(port, "/");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("ferrophp"), "{body}");
    let uid = docker(&["exec", &name, "id", "-u"]);
    assert_ne!(uid, "0", "the server runs as root");
    let ps = docker(&["exec", &name, "cat", "/proc/1/status"]);
    assert!(ps.contains("Name:\tferrophp"), "ferrophp is PID 1: {ps}");
    // `php` on PATH is ferrophp (a link), PHP's own CLI.
    let version = docker(&["exec", &name, "php", "-v"]);
    assert!(
        version.starts_with(&format!("PHP {php} (cli)")),
        "{version}"
    );
    let binary = docker(&["exec", &name, "php", "-r", "echo PHP_BINARY;"]);
    assert_eq!(binary, "/opt/ferrophp/ferrophp");
    // Debian's Composer (the host's, mounted read-only) runs on it.
    let composer = docker(&[
        "run",
        "--rm",
        "-v",
        "/usr/bin/composer:/usr/bin/composer:ro",
        "-v",
        "/usr/share/php:/usr/share/php:ro",
        "--entrypoint",
        "php",
        &image,
        "/usr/bin/composer",
        "--version",
    ]);
    assert!(composer.starts_with("Composer version 2."), "{composer}");

    // HEALTHCHECK (GET /healthz on the admin port) turns healthy.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = docker(&["inspect", "-f", "{{.State.Health.Status}}", &name]);
        if health == "healthy" {
            break;
        }
        assert!(Instant::now() < deadline, "never healthy: {health}");
        std::thread::sleep(Duration::from_millis(500));
    }

    // Restarted, it serves again.
    docker(&["restart", "-t", "10", &name]);
    let port = published_port(&name);
    assert_eq!(wait_serving(port, "/").0, 200);
    docker(&["rm", "-f", &name]);

    // A derived application image, worker mode configured by the environment.
    let base_arg = format!("BASE={image}");
    docker(&[
        "build",
        "-q",
        "--build-arg",
        &base_arg,
        "-t",
        &app_image,
        "test-data/docker-app",
    ]);
    let app = format!("ferrophp-test-app-{id}");
    cleanup.containers.push(app.clone());
    docker(&[
        "run",
        "-d",
        "--name",
        &app,
        "-p",
        "127.0.0.1::80",
        &app_image,
    ]);
    let port = published_port(&app);
    let (status, first) = wait_serving(port, "/worker.php");
    assert_eq!(status, 200, "{first}");
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    let (_, second) = wait_serving(port, "/worker.php");
    let second: serde_json::Value = serde_json::from_str(&second).unwrap();
    assert_eq!(second["boot"], first["boot"], "one worker boot serves both");
    assert_eq!(second["served"], first["served"].as_u64().unwrap() + 1);
    assert_ne!(first["uid"], 0);

    // docker stop (SIGTERM) with a request in flight: the request completes, the
    // container exits 0 within the grace period.
    let slow = std::thread::spawn(move || get(port, "/slow.php?ms=3000"));
    std::thread::sleep(Duration::from_millis(700));
    let stopped = Instant::now();
    docker(&["stop", "-t", "20", &app]);
    let in_flight = slow.join().unwrap();
    assert_eq!(
        in_flight,
        Some((200, "slow done".to_owned())),
        "the in-flight request was cut"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(15),
        "drain took too long"
    );
    let code = docker(&["inspect", "-f", "{{.State.ExitCode}}", &app]);
    assert_eq!(code, "0", "{}", docker(&["logs", &app]));
}

/// The Dockerfile's from-source path (`COPY . /src`, then `cargo build`) sees only what
/// .dockerignore lets through: every workspace member and every patched crate must be in
/// it, or that build fails where the prebuilt path (the one tested above) never looks.
#[test]
fn the_build_context_holds_every_crate_the_workspace_builds() {
    let repo = common::docker::repo();
    let manifest: toml::Table = std::fs::read_to_string(repo.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let mut dirs: Vec<String> = manifest["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    if let Some(patched) = manifest
        .get("patch")
        .and_then(|p| p.get("crates-io"))
        .and_then(|p| p.as_table())
    {
        for spec in patched.values() {
            if let Some(path) = spec.get("path").and_then(|p| p.as_str()) {
                dirs.push(path.split('/').next().unwrap().to_owned());
            }
        }
    }
    let ignore = std::fs::read_to_string(repo.join(".dockerignore")).unwrap();
    let allowed: Vec<&str> = ignore
        .lines()
        .filter_map(|l| l.trim().strip_prefix('!'))
        .collect();
    let missing: Vec<&String> = dirs
        .iter()
        .filter(|d| !allowed.contains(&format!("{d}/").as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        ".dockerignore keeps these out of the build context: {missing:?}"
    );
}
