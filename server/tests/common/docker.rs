//! Docker for the container tests (`docker.rs`, `auto_https_container.rs`): the `docker`
//! command run from the checkout, the image built from the release tarball on the base
//! made from Debian packages (scripts/docker-base-image.sh; no registry is pulled from),
//! and a guard that removes every container, network, volume and image a test made,
//! whatever happened.

use std::path::PathBuf;
use std::process::Command;

/// The checkout (the Dockerfile's build context).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// Runs `docker args...` from the checkout; its trimmed stdout, or a panic with both
/// streams.
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .current_dir(repo())
        .output()
        .expect("docker runs");
    assert!(
        out.status.success(),
        "docker {args:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Removes what the test made on drop (containers first: networks and volumes in use
/// cannot go), passing or panicking.
#[derive(Default)]
pub struct Cleanup {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
    pub images: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", c]).output();
        }
        for n in &self.networks {
            let _ = Command::new("docker").args(["network", "rm", n]).output();
        }
        for v in &self.volumes {
            let _ = Command::new("docker")
                .args(["volume", "rm", "-f", v])
                .output();
        }
        for i in &self.images {
            let _ = Command::new("docker").args(["rmi", "-f", i]).output();
        }
    }
}

/// The base image (made once from a debootstrap, scripts/docker-base-image.sh), then
/// `docker build` of the root Dockerfile's fast path as `tag`: the release tarball in
/// dist/ unpacked instead of compiled in the builder (that path is proved once by hand,
/// docs/operating.md), with the versions docker/build-image.sh passes as the labels.
pub fn build_image(tag: &str) {
    let (version, php) = (env!("CARGO_PKG_VERSION"), worker::PHP_VERSION);
    let tarball = repo().join(format!(
        "dist/ferrophp-{version}-php{php}-linux-x86_64.tar.gz"
    ));
    assert!(
        tarball.is_file(),
        "run scripts/release.sh first (scripts/test.sh does)"
    );
    let base = Command::new(repo().join("scripts/docker-base-image.sh"))
        .output()
        .expect("base image script runs");
    assert!(
        base.status.success(),
        "{}",
        String::from_utf8_lossy(&base.stderr)
    );
    docker(&[
        "build",
        "-q",
        "--build-arg",
        "PREBUILT=1",
        "--build-arg",
        &format!("FERROPHP_VERSION={version}"),
        "--build-arg",
        &format!("PHP_VERSION={php}"),
        "-t",
        tag,
        ".",
    ]);
}
