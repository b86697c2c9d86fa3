//! deploy/compose for real: the image built from the root Dockerfile, three instances
//! behind the nginx balancer (deploy/compose/lb, nginx from Debian's package on our base
//! image), a steady load from 8 client threads through the balancer while the three
//! instances are restarted one at a time (each waited for until healthy, i.e. `/readyz`)
//! and then one is killed outright (SIGKILL) and started again. Failed requests are
//! counted per phase and printed; the rolling restart must have none. Everything the
//! test creates (project containers, network, images) is removed at the end.
//!
//! Needs docker, docker-compose (or `docker compose`) and the release tarball
//! (scripts/release.sh); the base image is made by scripts/docker-base-image.sh if
//! missing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `docker-compose` (Debian 12's package) or the `docker compose` plugin.
fn compose_command() -> Option<Vec<String>> {
    let ok = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok(&["docker-compose", "version"]) {
        Some(vec!["docker-compose".into()])
    } else if ok(&["docker", "compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        None
    }
}

struct Project {
    compose: Vec<String>,
    name: String,
    app_image: String,
    /// The Dockerfile's first stage, tagged so that it is removed too (the classic
    /// builder would leave it as a dangling image).
    stage_image: String,
    lb_image: String,
}

impl Project {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.compose[0]);
        c.args(&self.compose[1..])
            .args(["-p", &self.name, "-f"])
            .arg(repo().join("deploy/compose/docker-compose.yml"))
            .args(args)
            .env("FERROPHP_IMAGE", &self.app_image)
            .env("LB_IMAGE", &self.lb_image)
            // Loopback only, on a port docker picks.
            .env("LB_PUBLISH", "127.0.0.1:0")
            .current_dir(repo().join("deploy/compose"));
        c
    }

    fn compose(&self, args: &[&str]) -> String {
        run(&mut self.cmd(args))
    }

    fn container(&self, service: &str) -> String {
        self.compose(&["ps", "-q", service])
    }

    fn health(&self, service: &str) -> String {
        let id = self.container(service);
        if id.is_empty() {
            return "missing".into();
        }
        Command::new("docker")
            .args(["inspect", "-f", "{{.State.Health.Status}}", &id])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }

    fn wait_healthy(&self, service: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.health(service) != "healthy" {
            assert!(
                Instant::now() < deadline,
                "{service} not healthy: {}",
                self.health(service)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self
            .cmd(&["down", "-v", "--remove-orphans", "-t", "2"])
            .output();
        for image in [&self.app_image, &self.stage_image, &self.lb_image] {
            let _ = Command::new("docker").args(["rmi", "-f", image]).output();
        }
    }
}

/// Results of the load, per phase.
#[derive(Clone, Default)]
struct Phase {
    requests: usize,
    failed: usize,
    first_failure: Option<String>,
    /// Answered after the balancer retried on another instance (X-Upstream lists two).
    retried: usize,
}

const PHASES: [&str; 4] = ["warm-up", "rolling restart", "kill one", "after"];

#[test]
fn rolling_restart_behind_the_balancer_fails_no_request() {
    // scripts/install-test-deps.sh installs Debian's docker-compose: a missing tool is a
    // broken set-up, not a reason to pass.
    let compose = compose_command()
        .expect("neither docker-compose nor docker compose is available (install-test-deps.sh)");
    let dist = repo().join("dist");
    let has_tarball = std::fs::read_dir(&dist).is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("-linux-x86_64.tar.gz")
        })
    });
    assert!(
        has_tarball,
        "run scripts/release.sh first (scripts/test.sh does)"
    );
    run(&mut Command::new(
        repo().join("scripts/docker-base-image.sh"),
    ));

    let tag = format!(
        "{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    let project = Project {
        compose,
        name: format!("ferrophpops{}", std::process::id()),
        app_image: format!("ferrophp-compose-test:{tag}"),
        stage_image: format!("ferrophp-compose-test-stage:{tag}"),
        lb_image: format!("ferrophp-compose-lb:{tag}"),
    };
    run(Command::new("docker")
        .args([
            "build",
            "-q",
            "--build-arg",
            "PREBUILT=1",
            "--target",
            "release",
            "-t",
            &project.stage_image,
            ".",
        ])
        .current_dir(repo()));
    run(Command::new("docker")
        .args([
            "build",
            "-q",
            "--build-arg",
            "PREBUILT=1",
            "-t",
            &project.app_image,
            ".",
        ])
        .current_dir(repo()));
    project.compose(&["build", "-q", "lb"]);
    project.compose(&["up", "-d"]);
    for s in ["app1", "app2", "app3"] {
        project.wait_healthy(s, Duration::from_secs(60));
    }
    let lb_port: u16 = project
        .compose(&["port", "lb", "80"])
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("published balancer port");
    let url = format!("http://127.0.0.1:{lb_port}/");
    let deadline = Instant::now() + Duration::from_secs(30);
    while reqwest::blocking::get(&url).map_or(true, |r| !r.status().is_success()) {
        assert!(Instant::now() < deadline, "balancer never served");
        std::thread::sleep(Duration::from_millis(200));
    }

    // The load: 8 client threads, keep-alive, each request tallied in the current phase.
    let phase = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(vec![Phase::default(); PHASES.len()]));
    let upstreams = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (phase, stop, tally, url, upstreams) = (
                phase.clone(),
                stop.clone(),
                tally.clone(),
                url.clone(),
                upstreams.clone(),
            );
            std::thread::spawn(move || {
                let c = reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs(20))
                    .build()
                    .unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let p = phase.load(Ordering::Relaxed);
                    let mut retried = false;
                    let result = c.get(&url).send().map_err(|e| e.to_string()).and_then(|r| {
                        let status = r.status().as_u16();
                        if let Some(u) = r.headers().get("x-upstream") {
                            let u = u.to_str().unwrap_or("");
                            retried = u.contains(',');
                            let mut seen = upstreams.lock().unwrap();
                            for one in u.split(", ") {
                                seen.insert(one.to_owned());
                            }
                        }
                        let body = r.text().map_err(|e| e.to_string())?;
                        if status == 200 && !body.is_empty() {
                            Ok(())
                        } else {
                            Err(format!("status {status}"))
                        }
                    });
                    let mut t = tally.lock().unwrap();
                    t[p].requests += 1;
                    t[p].retried += usize::from(retried);
                    if let Err(e) = result {
                        t[p].failed += 1;
                        t[p].first_failure.get_or_insert(e);
                    }
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_secs(3));
    phase.store(1, Ordering::Relaxed);
    for s in ["app1", "app2", "app3"] {
        // SIGTERM (graceful drain), then start again; wait until ready before the next.
        project.compose(&["restart", "-t", "12", s]);
        project.wait_healthy(s, Duration::from_secs(60));
        // Past the balancer's fail_timeout, so the restarted instance takes traffic
        // again before the next one goes down.
        std::thread::sleep(Duration::from_secs(4));
    }
    phase.store(2, Ordering::Relaxed);
    project.compose(&["kill", "-s", "SIGKILL", "app2"]);
    std::thread::sleep(Duration::from_secs(5));
    project.compose(&["start", "app2"]);
    project.wait_healthy("app2", Duration::from_secs(60));
    phase.store(3, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }

    let tally = tally.lock().unwrap().clone();
    for (name, p) in PHASES.iter().zip(&tally) {
        println!(
            "compose: {name}: {} requests, {} failed, {} retried by the balancer{}",
            p.requests,
            p.failed,
            p.retried,
            p.first_failure
                .as_ref()
                .map_or(String::new(), |e| format!(" (first failure: {e})"))
        );
    }
    let upstreams = upstreams.lock().unwrap().clone();
    println!("compose: upstreams seen: {upstreams:?}");
    assert_eq!(upstreams.len(), 3, "the balancer used {upstreams:?}");
    for (i, p) in tally.iter().enumerate() {
        assert!(p.requests > 50, "too little load in phase {}", PHASES[i]);
    }
    assert_eq!(tally[0].failed, 0, "failures before any restart");
    assert_eq!(tally[1].failed, 0, "failures during the rolling restart");
    assert_eq!(
        tally[3].failed, 0,
        "failures after the kill, once recovered"
    );
}
