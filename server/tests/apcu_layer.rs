//! The apcu_* layer's own behaviour through `ferrophp php-cli` (APCu not loaded):
//! test-data/apcu/layer.php checks the apc.* ini entries, keys APCu accepts (empty,
//! binary), APCu's warnings for resources, references and cycles, the info functions'
//! shapes and APCUIterator; with `-d apc.enabled=0` every function behaves as APCu
//! disabled (APCu's own apc_disabled.phpt cannot show that under a SAPI not named cli).

use std::process::Command;

fn layer(args: &[&str]) -> String {
    let script = format!("{}/../test-data/apcu/layer.php", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("php-cli")
        .args(args)
        .arg(&script)
        .args(args.is_empty().then_some("enabled").or(Some("disabled")))
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
    layer(&[]);
}

#[test]
fn apcu_layer_disabled_by_apc_enabled_0() {
    layer(&["-d", "apc.enabled=0"]);
}
