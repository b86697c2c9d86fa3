//! The multi-instance deployment files checked without a cluster: scripts/check-deploy.py
//! lints and renders the Helm chart (deploy/helm/ferrophp) with Helm's own engine, renders
//! deploy/kubernetes with kustomize, validates every object against the Kubernetes
//! schemas (strict), and checks that the chart, the manifests and the Swarm stack
//! (deploy/swarm/stack.yml) agree on probes, drain and session settings. What a cluster
//! would do with them is not tested here (docs/operating.md, "Several instances").
//! The Grafana dashboard (deploy/grafana/ferrophp-dashboard.json) queries only metrics
//! that a running server's `/metrics` exports.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{client, Server};

/// The Python packages the script needs, installed with pip when missing (as
/// scripts/test.sh does).
fn python() -> &'static str {
    let ok = || {
        Command::new("python3")
            .args(["-c", "import helm_python, kubernetes_validate, yaml"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok() {
        let _ = Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "helm-python-sdk==0.2.2",
                "kubernetes-validate==1.37.0",
                "pyyaml",
            ])
            .status();
    }
    assert!(
        ok(),
        "python3 with helm-python-sdk, kubernetes-validate and pyyaml is required"
    );
    "python3"
}

#[test]
fn chart_and_manifests_render_validate_and_agree_with_the_swarm_stack() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/check-deploy.py");
    let out = Command::new(python()).arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every variant rendered something and each object was validated.
    assert!(stdout.contains("ok   helm (defaults): Deployment/shop-ferrophp "));
    assert!(stdout.contains("ok   helm (defaults): Deployment/shop-ferrophp-redis "));
    assert!(stdout.contains("ok   deploy/kubernetes"));
    assert!(stdout.contains("deploy files: all checks passed"));
}

/// Metric names a PromQL expression uses: `ferrophp_...` words, with a summary's
/// `_sum`/`_count` series taken back to their family.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = expr;
    while let Some(i) = rest.find("ferrophp_") {
        let word: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + word.len()..];
        out.push(word);
    }
    out
}

#[test]
fn the_dashboard_queries_only_metrics_the_server_exports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/metrics/app")
        .canonicalize()
        .unwrap();
    let worker = format!("{},1", root.join("worker.php").display());
    let server = Server::start(
        &root,
        &[
            "--admin",
            "127.0.0.1:0",
            "--worker",
            &worker,
            "--no-access-log",
        ],
    );
    for path in ["/classic.php?v=1", "/worker.php?v=1"] {
        let r = client().get(server.url(path)).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }
    let admin = server.admin_addr().expect("admin address");
    let text = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let families: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/ferrophp-dashboard.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut used = BTreeSet::new();
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries += 1;
            used.extend(metric_names(target["expr"].as_str().unwrap()));
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = variable["definition"].as_str() {
            used.extend(metric_names(q));
        }
    }
    assert!(queries >= 20, "{queries} queries");
    let missing: Vec<&String> = used
        .iter()
        .filter(|m| {
            let family = m
                .strip_suffix("_sum")
                .or_else(|| m.strip_suffix("_count"))
                .unwrap_or(m);
            !families.contains(m.as_str()) && !families.contains(family)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics the server does not export: {missing:?}\n{text}"
    );
    println!(
        "dashboard: {queries} queries over {} metrics, all exported",
        used.len()
    );
}
