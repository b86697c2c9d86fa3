//! The multi-instance deployment files checked without a cluster: scripts/check-deploy.py
//! lints and renders the Helm chart (deploy/helm/ferrophp) with Helm's own engine, renders
//! deploy/kubernetes with kustomize, validates every object against the Kubernetes
//! schemas (strict), and checks that the chart, the manifests and the Swarm stack
//! (deploy/swarm/stack.yml) agree on probes, drain and session settings. What a cluster
//! would do with them is not tested here (docs/operating.md, "Several instances").

use std::path::Path;
use std::process::Command;

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
