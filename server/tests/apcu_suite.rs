//! APCu's own test suite (APCu 5.1.22's tests/*.phpt) against our apcu_* layer, through
//! scripts/apcu-suite.sh, which also runs it against the real APCu built for the same PHP.
//! Every test of the layer must pass unless docs/apcu-compat.md lists it with the result
//! it gets (failures and skips, each with its reason), and the listed results of the real
//! APCu must hold too, so the table stays true. test-data/apcu/edge.php (API edge cases)
//! must print the same under the real APCu and under the layer.
//!
//! The script downloads and builds what it needs into ~/.cache/ferrophp/apcu (as root it
//! installs missing tools with apt); the first run takes a minute or two.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// test name -> [layer, real, real-cli] from the table in docs/apcu-compat.md.
fn expected() -> BTreeMap<String, [String; 3]> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/apcu-compat.md");
    let text = std::fs::read_to_string(&doc).expect("docs/apcu-compat.md");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", "`name.phpt`", layer, real, real-cli, reason, ""
        if cells.len() < 6 || !cells[1].ends_with(".phpt`") {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        out.insert(
            name,
            [
                cells[2].to_string(),
                cells[3].to_string(),
                cells[4].to_string(),
            ],
        );
    }
    assert!(!out.is_empty(), "no expected results found in {doc:?}");
    out
}

fn results_dir() -> std::path::PathBuf {
    let home = std::env::var("HOME").expect("HOME");
    let cache = std::env::var("FERROPHP_CACHE").unwrap_or(format!("{home}/.cache/ferrophp"));
    Path::new(&cache).join("apcu")
}

fn results(mode: &str) -> BTreeMap<String, String> {
    let path = results_dir().join(format!("results-{mode}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(status, name)| (name.to_string(), status.to_string()))
        .collect()
}

#[test]
fn apcu_own_suite_passes_on_our_layer_except_the_listed_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("scripts/apcu-suite.sh"))
        .arg("all")
        .env("FERROPHP_BIN", env!("CARGO_BIN_EXE_ferrophp"))
        .output()
        .expect("scripts/apcu-suite.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "apcu-suite.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");

    // API edge cases (test-data/apcu/edge.php): real APCu and the layer print the same.
    assert!(
        stdout.contains("apcu-suite edge: same output"),
        "edge cases differ from real APCu:\n{stdout}\n{}",
        std::fs::read_to_string(results_dir().join("edge.diff")).unwrap_or_default()
    );

    let expected = expected();
    let modes = ["layer", "real", "real-cli"];
    let runs: Vec<_> = modes.iter().map(|m| results(m)).collect();
    let total = runs[0].len();
    assert!(total >= 60, "only {total} tests ran:\n{stdout}");

    let mut problems = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        assert_eq!(runs[i].len(), total, "{mode} ran a different set of tests");
        for (name, status) in &runs[i] {
            let want = expected.get(name).map_or("PASS", |e| e[i].as_str());
            if status != want {
                problems.push(format!("{mode}: {name} is {status}, expected {want}"));
            }
        }
    }
    let listed_layer_passes = expected.values().filter(|e| e[0] == "PASS").count();
    let floor = total - expected.len() + listed_layer_passes;
    let passes = runs[0].values().filter(|s| *s == "PASS").count();
    assert!(
        problems.is_empty() && passes >= floor,
        "layer passes {passes} of {total} (floor {floor}); differences from \
         docs/apcu-compat.md:\n{}\n(logs: ~/.cache/ferrophp/apcu/run-*.log, diffs next to \
         the copied tests)",
        problems.join("\n")
    );
}
