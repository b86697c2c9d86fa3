//! PHP's own phpt tests, the short form: `scripts/phpt-compare.sh` runs PHP 8.2.32's
//! `run-tests.php` (from the source tarball build-php.sh downloaded) over `tests/` and a
//! slice of `Zend/tests` (fibers, generators, try/finally, enums, type declarations), once with the PHP build's
//! `bin/php` as the executable under test and once with ferrophp, and fails on any test
//! whose result differs (after two more tries on both sides, which tell a timing-dependent
//! test from a difference). The long form, with `Zend/tests` and `ext/standard/tests`
//! whole, is the script run by hand; its figures are in docs/operating.md.

use std::path::Path;
use std::process::Command;

const SUITES: &[&str] = &[
    "tests",
    "Zend/tests/fibers",
    "Zend/tests/generators",
    "Zend/tests/try",
    "Zend/tests/enum",
    "Zend/tests/type_declarations",
];

#[test]
fn phpt_results_are_bin_phps() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("scripts/phpt-compare.sh"))
        .args(SUITES)
        .env("FERROPHP", env!("CARGO_BIN_EXE_ferrophp"))
        .env("PHPT_VIA", "direct")
        .env_remove("PHPT_KEEP")
        .output()
        .expect("scripts/phpt-compare.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The runs really ran: most of the 1,700-odd tests pass on both sides.
    for run in ["bin-php", "ferrophp"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{run} ")))
            .unwrap_or_else(|| panic!("no {run} summary in:\n{stdout}\n{stderr}"));
        let passed: usize = line
            .split("PASSED ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(passed > 1400, "{line}");
    }
}
