//! docs/benchmarks.md and docs/benchmarks.json: the machine, the versions of everything
//! measured (each ferrophp build, how it links libphp), the exact command, the PHP
//! settings every system ran with (as the probe read them), the baseline's set-up, the
//! targets, and the tables of [`super::tables`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde::Serialize;

use super::ini::{self, Settings};
use super::measure::Run;
use super::memory::MemoryRun;
use super::options::Options;
use super::workloads::{self, WORKLOADS};

#[derive(Serialize)]
pub struct BuildInfo {
    pub name: String,
    pub path: PathBuf,
    pub version: String,
    /// The first 16 hex digits of the binary's SHA-256, telling builds apart.
    pub sha256: String,
    /// How the binary gets libphp: the shared library `ldd` resolves, or "static".
    pub libphp: String,
}

#[derive(Serialize)]
pub struct SystemPhp {
    pub system: String,
    pub php_version: String,
    pub sapi: String,
    pub zts: bool,
}

#[derive(Serialize)]
pub struct Report {
    pub generated: String,
    pub machine: BTreeMap<String, String>,
    pub versions: BTreeMap<String, String>,
    pub builds: Vec<BuildInfo>,
    pub command: String,
    pub rounds: usize,
    pub seconds: u64,
    pub warmup: u64,
    pub php_threads: usize,
    pub fpm_keepalive: String,
    pub php_ini: PathBuf,
    pub php_ini_d: Vec<String>,
    /// Every probed setting (the same on every PHP system, or the run stopped).
    pub php_settings: Vec<(String, String)>,
    pub php_by_system: Vec<SystemPhp>,
    pub extensions_only_ferrophp: Vec<String>,
    pub extensions_only_fpm: Vec<String>,
    pub runs: Vec<Run>,
    pub memory: Vec<MemoryRun>,
}

fn sh(cmd: &str) -> String {
    Command::new("bash")
        .args(["-c", cmd])
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s.lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

fn package_version(package: &str) -> String {
    sh(&format!(
        "dpkg-query -W -f='${{Version}}' {package} 2>/dev/null"
    ))
}

impl Report {
    pub fn new(
        options: &Options,
        build_versions: &[String],
        settings: &Settings,
        mariadb: Option<String>,
        runs: Vec<Run>,
        memory: Vec<MemoryRun>,
        command: String,
    ) -> Report {
        let mut machine = BTreeMap::new();
        machine.insert(
            "cpu".into(),
            sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        );
        machine.insert("cores".into(), sh("nproc"));
        machine.insert(
            "memory".into(),
            sh("grep MemTotal /proc/meminfo | awk '{print $2\" kB\"}'"),
        );
        machine.insert("kernel".into(), sh("uname -r"));
        machine.insert(
            "load average at the end".into(),
            sh("cut -d' ' -f1-3 /proc/loadavg"),
        );
        let mut versions = BTreeMap::new();
        versions.insert(
            "ferrophp (checkout)".into(),
            sh("git rev-parse --short HEAD"),
        );
        versions.insert("php-fpm".into(), sh("php-fpm8.2 -v"));
        versions.insert("nginx".into(), sh("nginx -v"));
        versions.insert("wrk".into(), sh("wrk -v"));
        if let Some(v) = mariadb {
            versions.insert("mariadb".into(), v);
        }
        for package in [
            "wordpress",
            "mediawiki",
            "php-symfony-framework-bundle",
            "php-twig",
        ] {
            let v = package_version(package);
            if !v.is_empty() {
                versions.insert(package.into(), v);
            }
        }
        let builds = options
            .builds
            .iter()
            .zip(build_versions)
            .map(|(b, version)| BuildInfo {
                name: b.name.clone(),
                path: b.path.clone(),
                version: version.clone(),
                sha256: sh(&format!("sha256sum {} | cut -c1-16", b.path.display())),
                libphp: {
                    let linked = sh(&format!(
                        "ldd {} | grep -o '/[^ ]*libphp[^ ]*'",
                        b.path.display()
                    ));
                    if linked.is_empty() {
                        "static (no libphp shared library)".into()
                    } else {
                        linked
                    }
                },
            })
            .collect();
        let php_by_system: Vec<SystemPhp> = settings
            .seen
            .iter()
            .map(|(system, p)| SystemPhp {
                system: system.clone(),
                php_version: p.php_version.clone(),
                sapi: p.sapi.clone(),
                zts: p.zts,
            })
            .collect();
        let extensions = |fpm: bool| -> Vec<String> {
            settings
                .seen
                .iter()
                .find(|(s, _)| s.starts_with("nginx") == fpm)
                .map(|(_, p)| p.extensions.clone())
                .unwrap_or_default()
        };
        let (ours, theirs) = (extensions(false), extensions(true));
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            if b.is_empty() {
                return Vec::new();
            }
            a.iter().filter(|e| !b.contains(e)).cloned().collect()
        };
        Report {
            generated: sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
            machine,
            versions,
            builds,
            command,
            rounds: options.rounds,
            seconds: options.seconds,
            warmup: options.warmup,
            php_threads: options.threads,
            fpm_keepalive: options
                .fpm_keepalive
                .map(|n| n.to_string())
                .unwrap_or_else(|| "children / nginx workers".into()),
            php_ini: options.php_ini.clone(),
            php_ini_d: ini::shared_args(),
            php_settings: settings.common(),
            php_by_system,
            extensions_only_ferrophp: only(&ours, &theirs),
            extensions_only_fpm: only(&theirs, &ours),
            runs,
            memory,
        }
    }

    /// What the harness prints at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for table in [
            self.throughput_table(false),
            self.throughput_table(true),
            self.head_of_line_table(),
            self.memory_table(),
            self.targets_table(),
        ] {
            if !table.is_empty() {
                out.push_str(&table);
                out.push('\n');
            }
        }
        out
    }

    pub fn markdown(&self, json: &str) -> String {
        let mut md = String::new();
        md.push_str("# Benchmarks: ferrophp vs nginx + php-fpm vs the pure-hyper limit\n\n");
        md.push_str("Generated by the comparison harness (`benches/src/compare/`, binary `compare`); do not edit by hand.\n\n");
        md.push_str(&format!(
            "- Generated: {}\n- Command: `{}`\n",
            self.generated, self.command
        ));
        md.push_str(&format!(
            "- {} interleaved rounds of {} s per system and workload (plus {} s warm-up, 2 s for real apps), wrk with 2 threads; {} PHP threads / php-fpm children / worker threads unless a table says otherwise\n",
            self.rounds, self.seconds, self.warmup, self.php_threads
        ));
        md.push_str("- Load generator, servers and MariaDB share this machine's cores; only ratios inside one run compare.\n");
        md.push_str("- To run it: `scripts/install-test-deps.sh` (as root) once, then `cargo run --release -p ferrophp-benches --bin compare -- --help` for the flags; `--ferrophp-bin NAME=PATH` (repeatable) measures several ferrophp builds in the same interleaved rounds.\n\n## Machine and versions\n\n");
        for (k, v) in self.machine.iter().chain(self.versions.iter()) {
            md.push_str(&format!("- {k}: {v}\n"));
        }
        md.push_str(
            "\n### ferrophp builds\n\n| name | binary | version | libphp |\n|---|---|---|---|\n",
        );
        for b in &self.builds {
            md.push_str(&format!(
                "| {} | `{}` | {} | {} |\n",
                b.name,
                b.path.display(),
                b.version,
                b.libphp
            ));
        }
        md.push_str(&self.settings_section());
        md.push_str(&format!(
            "\n## The baseline\n\nnginx (`worker_processes auto`) in front of Debian's php8.2-fpm with `pm = static` and as many children as ferrophp has PHP threads, from `benches/baseline/nginx-fpm.sh`. FastCGI keep-alive: `upstream php {{ server unix:...; keepalive N; }}` with `fastcgi_keep_conn on`, N = {} (a php-fpm child serves one connection until nginx closes it, so the idle connections all nginx workers cache stay within the children). The row \"nginx + php-fpm, no FastCGI keep-alive\" (hello world only) is the set-up of earlier reports: `fastcgi_keep_conn on` without an upstream cache, which nginx ignores, so it opens a FastCGI connection per request. Every ratio is against the keep-alive baseline measured in the same round. A php-fpm child serves one FastCGI connection at a time, so with more concurrent requests than children the requests nginx sends over kept connections are served at once while those that had to open a new connection wait in php-fpm's listen queue until nginx recycles a kept one (every 1000 requests, nginx's default): the baseline's p50 is its kept connections' latency and its p99 the wait of the others (which wrk only counts once they are answered).\n",
            self.fpm_keepalive
        ));
        md.push_str("\n## Workloads\n\n");
        for w in WORKLOADS {
            if self.runs.iter().any(|r| r.workload == w.name) {
                md.push_str(&format!(
                    "- `{}`: {} ({} connections)\n",
                    w.name, w.description, w.connections
                ));
            }
        }
        if !self.memory.is_empty() {
            md.push_str(&format!(
                "- `{}`: PSS of the whole server (every process of its tree, from /proc/PID/smaps_rollup, sampled every 250 ms) during load on the `{}` page, with as many concurrent requests as PHP threads or php-fpm children; MariaDB not counted\n",
                workloads::MEMORY,
                super::memory::PAGE
            ));
        }
        md.push_str("\nEvery run checks, before its warm-up and after its measurement, that the page is the real one (status 200 and the workload's marker strings, listed in `benches/src/compare/workloads.rs`). Errors are socket errors plus responses of status 400 and above; for the real apps every status outside 200-299 (wrk's Lua `response()` hook).\n");
        let targets = self.targets_table();
        if !targets.is_empty() {
            md.push_str("\n## Targets (issue 24)\n\nMedian over rounds of the per-round ratio against the tuned nginx + php-fpm.\n\n");
            md.push_str(&targets);
        }
        md.push_str("\n## Results\n\nRatios are per round against nginx + php-fpm (with FastCGI keep-alive) measured in the same round: min / median / max over rounds. The A/A row (ferrophp classic against itself) shows the noise floor. Server CPU is utime + stime of the server's whole process tree during the measured window, per request (MariaDB's is not included).\n");
        for (title, table) in [
            ("Real apps", self.throughput_table(true)),
            ("Synthetic workloads", self.throughput_table(false)),
            ("Memory (PSS)", self.memory_table()),
            ("Head-of-line", self.head_of_line_table()),
        ] {
            if !table.is_empty() {
                md.push_str(&format!("\n### {title}\n\n{table}"));
            }
        }
        md.push_str("\n## Raw data\n\n<details><summary>JSON (also in docs/benchmarks.json)</summary>\n\n```json\n");
        md.push_str(json);
        md.push_str("\n```\n</details>\n");
        md
    }

    fn settings_section(&self) -> String {
        let mut md = String::from("\n## PHP settings (the same on every PHP system)\n\n");
        md.push_str(&format!(
            "Every PHP system loads `{}` (ferrophp with `--php-ini`, php-fpm with `-c`) and gets these as `-d`: {}.\n",
            self.php_ini.display(),
            self.php_ini_d.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        ));
        md.push_str(&format!(
            "Before each run's load, a probe page (`{}`) on the system prints `ini_get()` of each setting below, whether OPcache is on and its JIT off, and the php.ini it loaded; the run stops at the first difference from the first system probed. As read:\n\n",
            ini::PROBE_PATH
        ));
        md.push_str("| setting | value |\n|---|---|\n");
        for (k, v) in &self.php_settings {
            md.push_str(&format!("| {k} | `{v}` |\n"));
        }
        md.push_str("\n| system | PHP | SAPI | ZTS |\n|---|---|---|---|\n");
        for p in &self.php_by_system {
            md.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                p.system, p.php_version, p.sapi, p.zts
            ));
        }
        if !self.extensions_only_ferrophp.is_empty() || !self.extensions_only_fpm.is_empty() {
            md.push_str(&format!(
                "\nExtensions loaded only by ferrophp (compiled into its libphp): {}. Only by php-fpm (Debian's packages): {}.\n",
                self.extensions_only_ferrophp.join(", "),
                if self.extensions_only_fpm.is_empty() { "none".into() } else { self.extensions_only_fpm.join(", ") }
            ));
        }
        md
    }
}
