//! The apcu_* layer's own behaviour through `ferrophp php-cli` (APCu not loaded):
//! test-data/apcu/layer.php checks the apc.* ini entries, keys APCu accepts (empty,
//! binary), APCu's warnings for resources, references and cycles, the info functions'
//! shapes and APCUIterator; with `-d apc.enabled=0`, or without `apc.enable_cli=1` (the
//! SAPI is "cli"), every function behaves as APCu disabled.

use std::process::Command;

/// Runs layer.php in `mode` ("enabled" or "disabled") with these ini flags.
fn layer(args: &[&str], mode: &str) -> String {
    let script = format!("{}/../test-data/apcu/layer.php", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("php-cli")
        .args(args)
        .arg(&script)
        .arg(mode)
        .output()
        .expect("ferrophp runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn apcu_layer_behaves_as_apcu() {
    layer(&["-d", "apc.enable_cli=1"], "enabled");
}

#[test]
fn apcu_layer_disabled_by_apc_enabled_0() {
    layer(
        &["-d", "apc.enable_cli=1", "-d", "apc.enabled=0"],
        "disabled",
    );
}

/// As APCu under the "cli" SAPI: apc.enable_cli defaults to 0, which turns the cache off
/// (apcu_enabled() false, stores fail) while `ini_get('apc.enabled')` still says "1".
#[test]
fn apcu_layer_disabled_under_cli_without_apc_enable_cli() {
    layer(&[], "disabled");
    layer(&["-d", "apc.enable_cli=0"], "disabled");
}
