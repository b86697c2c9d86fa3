//! The systems under test and how each one starts and stops: ferrophp (classic, worker,
//! and classic again for the A/A noise floor; once per `--ferrophp-bin` build), nginx +
//! Debian's php-fpm with FastCGI keep-alive (the tuned baseline every ratio is against)
//! and without it (the set-up of earlier reports, for hello world only), and a pure hyper
//! hello world. Every system is a child process tree of the harness, started fresh for
//! each run, so its CPU time and memory can be read from /proc.
//!
//! Every system runs in the harness's own session, so the kernel schedules them alike:
//! with autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`, on in Debian's
//! kernels and here) each session is one group with an equal share of the CPUs, and
//! php-fpm calls `setsid()` at start-up even in the foreground. On a machine with other
//! load that gave php-fpm's children one group's share while ferrophp shared the
//! harness's, which measured the other sessions, not the servers. php-fpm is therefore
//! started as a process group leader, for which `setsid()` fails and it stays in the
//! harness's session. Every child also gets SIGTERM if the harness dies
//! (`PR_SET_PDEATHSIG`), since php-fpm no longer sees a terminal's Ctrl-C.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::options::{Build, Options};

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub(crate) enum Kind {
    FerrophpClassic,
    FerrophpWorker,
    /// ferrophp classic again, for the A/A noise floor.
    FerrophpClassicAa,
    /// nginx + php-fpm with FastCGI keep-alive: the baseline.
    NginxFpm,
    /// nginx + php-fpm opening a FastCGI connection per request (earlier reports).
    NginxFpmNoKeepalive,
    HyperHello,
}

impl Kind {
    pub(crate) fn is_ferrophp(self) -> bool {
        matches!(
            self,
            Kind::FerrophpClassic | Kind::FerrophpWorker | Kind::FerrophpClassicAa
        )
    }

    pub(crate) fn is_baseline(self) -> bool {
        matches!(self, Kind::NginxFpm | Kind::NginxFpmNoKeepalive)
    }

    pub(crate) fn runs_php(self) -> bool {
        self != Kind::HyperHello
    }

    fn label(self) -> &'static str {
        match self {
            Kind::FerrophpClassic => "ferrophp classic",
            Kind::FerrophpWorker => "ferrophp worker",
            Kind::FerrophpClassicAa => "ferrophp classic (A/A)",
            Kind::NginxFpm => "nginx + php-fpm",
            Kind::NginxFpmNoKeepalive => "nginx + php-fpm, no FastCGI keep-alive",
            Kind::HyperHello => "pure hyper (no PHP)",
        }
    }
}

/// One system of a run: a kind, and for ferrophp the build it runs.
#[derive(Clone, Debug)]
pub(crate) struct System {
    pub(crate) kind: Kind,
    /// Index into `Options::builds` (ferrophp kinds only).
    pub(crate) build: Option<usize>,
    pub(crate) label: String,
}

/// The systems of a workload, in the order each round runs them: each ferrophp kind once
/// per build (the A/A row for the first build only), then the others.
pub(crate) fn expand(kinds: &[Kind], builds: &[Build]) -> Vec<System> {
    let named = builds.len() > 1 || builds.first().is_some_and(|b| b.explicit);
    let mut systems = Vec::new();
    for &kind in kinds {
        if !kind.is_ferrophp() {
            systems.push(System {
                kind,
                build: None,
                label: kind.label().to_string(),
            });
            continue;
        }
        for (i, build) in builds.iter().enumerate() {
            if kind == Kind::FerrophpClassicAa && i > 0 {
                continue;
            }
            let label = if named {
                format!("{} [{}]", kind.label(), build.name)
            } else {
                kind.label().to_string()
            };
            systems.push(System {
                kind,
                build: Some(i),
                label,
            });
        }
    }
    systems
}

/// How to start a system for one run.
pub(crate) struct Launch<'a> {
    pub(crate) options: &'a Options,
    pub(crate) root: &'a Path,
    /// The worker script (ferrophp worker kind only).
    pub(crate) worker_script: Option<PathBuf>,
    /// PHP threads / php-fpm children / worker threads.
    pub(crate) threads: usize,
    /// `key=value` PHP settings given to ferrophp and php-fpm alike as `-d`.
    pub(crate) ini: &'a [String],
    pub(crate) scratch: &'a Path,
    pub(crate) hyper: &'a Path,
}

/// The processes of one running system.
pub(crate) struct Running {
    children: Vec<Child>,
    pub(crate) port: u16,
    pub(crate) logs: Vec<PathBuf>,
}

impl Running {
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    pub(crate) fn stop(mut self) {
        self.stop_children();
    }

    fn stop_children(&mut self) {
        for child in &self.children {
            // SAFETY: kill(2) on the pid of a child we spawned and have not reaped; at
            // worst it is already a zombie, which ignores the signal.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        }
        for child in &mut self.children {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.children.clear();
    }

    /// The last lines of each log, for an error message.
    pub(crate) fn log_tail(&self) -> String {
        let mut out = String::new();
        for log in &self.logs {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            out.push_str(&format!("--- {}\n{tail}\n", log.display()));
        }
        out
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop_children();
    }
}

/// Spawns a process of a system under test (or the database): SIGTERM when the harness
/// dies (see the module doc).
pub(crate) fn spawn_child(cmd: &mut Command) -> std::io::Result<Child> {
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // prctl(2), which is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn log_file(dir: &Path, name: &str) -> Result<(PathBuf, File), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(name);
    let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((path, file))
}

/// Starts `system` and waits until it answers HTTP.
pub(crate) fn start(system: &System, launch: &Launch) -> Result<Running, String> {
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let logs_dir = launch.scratch.join("logs");
    let slug: String = system
        .label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut running = Running {
        children: Vec::new(),
        port,
        logs: Vec::new(),
    };
    match system.kind {
        Kind::FerrophpClassic | Kind::FerrophpClassicAa | Kind::FerrophpWorker => {
            let options = launch.options;
            let build = &options.builds[system.build.unwrap_or(0)];
            let (log, file) = log_file(&logs_dir, &format!("{slug}-{port}.log"))?;
            let mut cmd = Command::new(&build.path);
            cmd.args(["serve", "--no-access-log", "--log", "warn"])
                .args(["--listen", &listen])
                .arg("--root")
                .arg(launch.root)
                .arg("--php-ini")
                .arg(&options.php_ini);
            if !options.ferrophp_sets_threads() {
                cmd.args(["--threads", &launch.threads.to_string()]);
            }
            for kv in launch.ini {
                cmd.args(["-d", kv.as_str()]);
            }
            cmd.args(&options.ferrophp_args);
            if system.kind == Kind::FerrophpWorker {
                let script = launch
                    .worker_script
                    .as_ref()
                    .ok_or("a worker system without a worker script")?;
                // A `--max-threads` given to ferrophp is the worker pool's ceiling too,
                // so both modes can grow the same way (`--worker script,N,MAX`).
                let ceiling = options
                    .ferrophp_max_threads()
                    .map(|max| format!(",{max}"))
                    .unwrap_or_default();
                cmd.arg("--worker").arg(format!(
                    "{},{}{ceiling}",
                    script.display(),
                    launch.threads
                ));
            }
            let child = spawn_child(cmd.stdout(Stdio::null()).stderr(file))
                .map_err(|e| format!("{}: {e}", build.path.display()))?;
            running.children.push(child);
            running.logs.push(log);
        }
        Kind::HyperHello => {
            let child = spawn_child(
                Command::new(launch.hyper)
                    .arg(&listen)
                    .stdout(Stdio::null()),
            )
            .map_err(|e| format!("{}: {e}", launch.hyper.display()))?;
            running.children.push(child);
        }
        Kind::NginxFpm | Kind::NginxFpmNoKeepalive => {
            start_baseline(system.kind, launch, port, &mut running)?;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !answers(port) {
        if Instant::now() > deadline {
            return Err(format!(
                "{} did not answer on port {port} within 30 s\n{}",
                system.label,
                running.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(running)
}

/// nginx + php-fpm from the configuration `baseline/nginx-fpm.sh config` writes, run in
/// the foreground as children of the harness.
fn start_baseline(
    kind: Kind,
    launch: &Launch,
    port: u16,
    running: &mut Running,
) -> Result<(), String> {
    let run_dir = launch.scratch.join(format!("nginx-{port}"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baseline/nginx-fpm.sh");
    let keepalive = match kind {
        Kind::NginxFpmNoKeepalive => "0".to_string(),
        _ => launch
            .options
            .fpm_keepalive
            .map(|n| n.to_string())
            .unwrap_or_default(),
    };
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg("config")
        .arg(&run_dir)
        .arg(launch.root)
        .args([port.to_string(), launch.threads.to_string(), "auto".into()]);
    if !keepalive.is_empty() {
        cmd.arg(&keepalive);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} config failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = line.split_whitespace();
        let Some(program) = parts.next() else {
            continue;
        };
        let mut cmd = Command::new(program);
        let fpm = program.contains("php-fpm");
        let mut parts: Vec<String> = parts.map(String::from).collect();
        if fpm {
            // The script's `-c` names Debian's php.ini; the harness's own choice wins.
            if let Some(i) = parts.iter().position(|p| p == "-c") {
                if i + 1 < parts.len() {
                    parts[i + 1] = launch.options.php_ini.display().to_string();
                }
            }
        }
        cmd.args(&parts);
        if fpm {
            for kv in launch.ini {
                cmd.args(["-d", kv.as_str()]);
            }
            // Keeps php-fpm in the harness's session (see the module doc).
            cmd.process_group(0);
        }
        let name = if fpm { "php-fpm" } else { "nginx" };
        let (log, file) = log_file(&run_dir, &format!("{name}-stderr.log"))?;
        let child = spawn_child(cmd.stdout(Stdio::null()).stderr(file))
            .map_err(|e| format!("{program}: {e}"))?;
        running.children.push(child);
        running.logs.push(log);
    }
    for log in ["fpm-error.log", "php-error.log", "nginx-error.log"] {
        running.logs.push(run_dir.join(log));
    }
    Ok(())
}

/// The server answers HTTP at all (any status: nginx may answer 502 while php-fpm starts;
/// the settings probe that follows waits for a 200).
fn answers(port: u16) -> bool {
    super::http::request(port, super::ini::PROBE_PATH, None, Duration::from_secs(5)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(name: &str, explicit: bool) -> Build {
        Build {
            name: name.into(),
            path: PathBuf::from(name),
            explicit,
        }
    }

    #[test]
    fn each_ferrophp_kind_runs_once_per_build_and_the_a_a_row_for_the_first_only() {
        let kinds = [
            Kind::FerrophpClassic,
            Kind::NginxFpm,
            Kind::FerrophpClassicAa,
        ];
        let labels: Vec<String> = expand(&kinds, &[build("shared", true), build("pgo", true)])
            .into_iter()
            .map(|s| s.label)
            .collect();
        assert_eq!(
            labels,
            [
                "ferrophp classic [shared]",
                "ferrophp classic [pgo]",
                "nginx + php-fpm",
                "ferrophp classic (A/A) [shared]"
            ]
        );
        // The default build alone keeps the plain labels of earlier reports.
        let labels: Vec<String> = expand(&kinds, &[build("default", false)])
            .into_iter()
            .map(|s| s.label)
            .collect();
        assert_eq!(
            labels,
            [
                "ferrophp classic",
                "nginx + php-fpm",
                "ferrophp classic (A/A)"
            ]
        );
    }

    /// The two baselines differ in FastCGI keep-alive only.
    #[test]
    fn the_tuned_baseline_keeps_fastcgi_connections_and_the_untuned_one_does_not() {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baseline/nginx-fpm.sh");
        let dir = std::env::temp_dir().join(format!("compare-nginx-{}", std::process::id()));
        let config = |keepalive: Option<&str>| {
            let mut cmd = Command::new("bash");
            cmd.arg(&script)
                .arg("config")
                .arg(&dir)
                .arg("/tmp")
                .args(["8080", "4", "2"]);
            if let Some(k) = keepalive {
                cmd.arg(k);
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::read_to_string(dir.join("nginx.conf")).unwrap()
        };
        let tuned = config(None);
        let untuned = config(Some("0"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(tuned.contains("keepalive 2;"), "{tuned}");
        assert!(tuned.contains("fastcgi_pass php;"), "{tuned}");
        assert!(!untuned.contains("upstream"), "{untuned}");
        assert!(untuned.contains("fastcgi_pass unix:"), "{untuned}");
        assert!(
            tuned.contains("fastcgi_keep_conn on;") && untuned.contains("fastcgi_keep_conn on;")
        );
    }
}
