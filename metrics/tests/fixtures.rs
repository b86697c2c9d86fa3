//! Compatibility with DataDog's reference implementation, on fixtures its Python package
//! generated (`test-data/metrics/make_fixtures.py`):
//!
//! - our sketch of the same values has exactly the reference's bins and zero count;
//! - our quantiles equal the reference's (same bins, same representative values) and are
//!   within the relative accuracy of the exact quantiles of the values;
//! - we decode the reference's bytes to the same bins;
//! - the reference decodes our bytes to the same bins (when python3 can import
//!   `ddsketch`; the test installs it with pip when missing).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ferrophp_metrics::proto::{decode_sketch, encode_sketch};
use ferrophp_metrics::{DDSketch, Mapping};
use serde_json::Value;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/metrics")
}

struct Fixture {
    name: String,
    json: Value,
}

fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixture_dir()).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if n.starts_with("fixture_") && n.ends_with(".json") {
            let json = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            out.push(Fixture { name: n, json });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(
        out.len() >= 8,
        "fixtures missing in {}",
        fixture_dir().display()
    );
    out
}

fn bins(v: &Value) -> Vec<(i32, f64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|b| (b[0].as_i64().unwrap() as i32, b[1].as_f64().unwrap()))
        .collect()
}

fn values(f: &Fixture) -> Vec<f64> {
    f.json["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn ours(f: &Fixture) -> DDSketch {
    let alpha = f.json["relative_accuracy"].as_f64().unwrap();
    let mut s = DDSketch::new(Mapping::new(alpha).unwrap());
    for v in values(f) {
        s.add(v);
    }
    s
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
}

/// Checks a reference-side description (bins, zero count, quantiles) against our sketch.
fn check_against(name: &str, reference: &Value, s: &DDSketch) {
    let (pos, neg, zero) = s.bins();
    assert_eq!(
        pos,
        bins(&reference["positive_bins"]),
        "{name}: positive bins"
    );
    assert_eq!(
        neg,
        bins(&reference["negative_bins"]),
        "{name}: negative bins"
    );
    assert_eq!(
        zero,
        reference["zero_count"].as_f64().unwrap(),
        "{name}: zero count"
    );
    assert_eq!(
        s.count(),
        reference["count"].as_f64().unwrap(),
        "{name}: count"
    );
    for q in reference["quantiles"].as_array().unwrap() {
        let (qq, want) = (q[0].as_f64().unwrap(), q[1].as_f64().unwrap());
        let got = s.quantile(qq).unwrap();
        // Same bin; the representative value may differ in the last bits (pow vs exp2,
        // and a decoded gamma recomputed from alpha, amplified by keys near +-34,000).
        assert!(
            close(got, want, 1e-10),
            "{name}: q={qq} ours {got} reference {want}"
        );
    }
}

#[test]
fn our_bins_and_quantiles_equal_the_reference() {
    for f in fixtures() {
        let s = ours(&f);
        check_against(&f.name, &f.json, &s);
        assert!(
            close(
                s.mapping().gamma(),
                f.json["gamma"].as_f64().unwrap(),
                1e-15
            ),
            "{}: gamma",
            f.name
        );
    }
}

#[test]
fn quantiles_within_relative_accuracy_of_exact() {
    for f in fixtures() {
        let alpha = f.json["relative_accuracy"].as_f64().unwrap();
        let mut sorted = values(&f);
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let s = ours(&f);
        let min_indexable = s.mapping().min_indexable();
        for q in [0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0] {
            let exact = sorted[(q * (sorted.len() - 1) as f64).floor() as usize];
            let got = s.quantile(q).unwrap();
            if exact.abs() <= min_indexable {
                assert_eq!(got, 0.0, "{}: q={q}", f.name);
            } else {
                assert!(
                    (got - exact).abs() <= alpha * exact.abs() * (1.0 + 1e-9),
                    "{}: q={q} got {got} exact {exact}",
                    f.name
                );
            }
        }
    }
}

#[test]
fn we_decode_reference_bytes() {
    for f in fixtures() {
        let bytes = hex(f.json["proto_hex"].as_str().unwrap());
        let decoded = decode_sketch(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        check_against(&f.name, &f.json, &decoded);
        // And what we decoded merges with what we built: same mapping, double counts.
        let mut merged = ours(&f);
        assert!(
            merged.merge(&decoded),
            "{}: mappings must be compatible",
            f.name
        );
        assert_eq!(merged.count(), 2.0 * decoded.count());
    }
}

#[test]
fn our_bytes_round_trip() {
    for f in fixtures() {
        let s = ours(&f);
        let back = decode_sketch(&encode_sketch(&s)).unwrap();
        assert_eq!(back.bins(), s.bins(), "{}", f.name);
    }
}

/// python3 with the `ddsketch` package, installed with pip when missing; None when python3
/// itself is missing.
fn python_with_ddsketch() -> Option<&'static str> {
    let ok = |py: &str| {
        Command::new(py)
            .args(["-c", "import ddsketch, google.protobuf"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if ok("python3") {
        return Some("python3");
    }
    let _ = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "ddsketch", "protobuf"])
        .status();
    ok("python3").then_some("python3")
}

#[test]
fn reference_decodes_our_bytes() {
    let Some(py) = python_with_ddsketch() else {
        eprintln!("SKIP: python3 not available");
        return;
    };
    let fixtures = fixtures();
    let input: String = fixtures
        .iter()
        .map(|f| to_hex(&encode_sketch(&ours(f))) + "\n")
        .collect();
    let mut child = Command::new(py)
        .arg(fixture_dir().join("decode_ours.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "decode_ours.py failed");
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), fixtures.len());
    for (f, line) in fixtures.iter().zip(lines) {
        let reference: Value = serde_json::from_str(line).unwrap();
        check_against(
            &format!("{} (decoded by ddsketch)", f.name),
            &reference,
            &ours(f),
        );
        // What the reference decodes from our bytes answers the fixture's quantiles (to the
        // last bits: the reference's decoder recomputes gamma from alpha).
        let (a, b) = (
            reference["quantiles"].as_array().unwrap(),
            f.json["quantiles"].as_array().unwrap(),
        );
        for (x, y) in a.iter().zip(b) {
            let (x, y) = (x[1].as_f64().unwrap(), y[1].as_f64().unwrap());
            assert!(close(x, y, 1e-10), "{}: {x} vs {y}", f.name);
        }
    }
}
