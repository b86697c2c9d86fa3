//! Issue 11: the shared cache's hand-made memory (string arena, immutable arrays, object
//! recipes, reclamation) checked against PHP itself on generated values, by the real
//! binary: the crash repro in `php-cli` and over HTTP, and the randomised
//! freeze -> fetch -> compare script under valgrind (short form; `scripts/cache-fuzz.sh`
//! is the long form).

mod common;

use std::process::Command;

use common::Server;

fn cache_script(name: &str) -> String {
    format!("{}/../test-data/cache/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn php_cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("php-cli")
        // roundtrip.php stores through apcu_* too, which the "cli" SAPI disables by default.
        .args(["-d", "apc.enable_cli=1"])
        .args(args)
        .output()
        .expect("ferrophp runs")
}

#[test]
fn issue_11_repro_in_php_cli() {
    let out = php_cli(&[&cache_script("roundtrip.php"), "1", "0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("checked 0 values"), "{stdout}");
}

#[test]
fn issue_11_repro_over_http_leaves_the_server_serving() {
    let server = Server::start(&common::http_root(), &[]);
    for _ in 0..5 {
        let r = server.get("/cache_issue11.php");
        assert_eq!(r.status, 200, "{}", server.stderr());
        assert_eq!(r.text(), "785 7963\n");
    }
    server.assert_alive();
}

/// Randomised values for a few seconds at native speed: thousands of values per run.
#[test]
fn randomised_roundtrip_native() {
    for seed in [11, 12, 13] {
        let out = php_cli(&[
            "-d",
            "memory_limit=1G",
            &cache_script("roundtrip.php"),
            &seed.to_string(),
            "3",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "seed {seed}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{stdout}");
    }
}

/// The same under valgrind with PHP's allocator off, so every emalloc and every arena
/// chunk is its own checked block: an out-of-bounds write anywhere in freeze, fetch or
/// reclamation fails the test even when it corrupts nothing visible.
#[test]
fn randomised_roundtrip_under_valgrind() {
    let secs: u64 = std::env::var("FERROPHP_VALGRIND_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let out = Command::new("valgrind")
        .args(["--error-exitcode=99", "--quiet", "--trace-children=no"])
        .arg(format!(
            "--suppressions={}/../test-data/valgrind/php.supp",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(env!("CARGO_BIN_EXE_ferrophp"))
        .args([
            "php-cli",
            "-d",
            "memory_limit=1G",
            "-d",
            "opcache.enable_cli=0",
            // apcu_* are off under the "cli" SAPI unless asked for, as with APCu.
            "-d",
            "apc.enable_cli=1",
        ])
        .arg(cache_script("roundtrip.php"))
        .args(["7", &secs.to_string()])
        .env("USE_ZEND_ALLOC", "0")
        .output()
        .expect("valgrind runs (scripts/setup.sh installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(" OK"), "{stdout}\n{stderr}");
    // Enough values for the run to mean something (about 70 a second here).
    let checked: u64 = stdout
        .split_whitespace()
        .skip_while(|w| *w != "checked")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(checked >= 100, "only {checked} values checked: {stdout}");
    eprintln!("{stdout}");
}
