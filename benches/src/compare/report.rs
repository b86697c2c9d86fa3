//! What one harness invocation found, as docs/benchmarks.json holds it: the machine, the
//! versions of everything measured (each ferrophp build, how it links libphp), the exact
//! command, the PHP settings every system ran with (as the probe read them), and every
//! run. Rendering it is `tables` (the tables) and `markdown` (docs/benchmarks.md and the
//! summary printed at the end), which read this data and never the other way round.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde::Serialize;

use super::ini::{self, Settings};
use super::measure::Run;
use super::memory::MemoryRun;
use super::options::Options;

#[derive(Serialize)]
pub(crate) struct BuildInfo {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) version: String,
    /// The first 16 hex digits of the binary's SHA-256, telling builds apart.
    pub(crate) sha256: String,
    /// How the binary gets libphp: the shared library `ldd` resolves, or "static".
    pub(crate) libphp: String,
}

#[derive(Serialize)]
pub(crate) struct SystemPhp {
    pub(crate) system: String,
    pub(crate) php_version: String,
    pub(crate) sapi: String,
    pub(crate) zts: bool,
}

#[derive(Serialize)]
pub(crate) struct Report {
    pub(crate) generated: String,
    pub(crate) machine: BTreeMap<String, String>,
    pub(crate) versions: BTreeMap<String, String>,
    pub(crate) builds: Vec<BuildInfo>,
    pub(crate) command: String,
    pub(crate) rounds: usize,
    pub(crate) seconds: u64,
    pub(crate) warmup: u64,
    pub(crate) php_threads: usize,
    pub(crate) fpm_keepalive: String,
    pub(crate) php_ini: PathBuf,
    pub(crate) php_ini_d: Vec<String>,
    /// Every probed setting (the same on every PHP system, or the run stopped).
    pub(crate) php_settings: Vec<(String, String)>,
    pub(crate) php_by_system: Vec<SystemPhp>,
    pub(crate) extensions_only_ferrophp: Vec<String>,
    pub(crate) extensions_only_fpm: Vec<String>,
    pub(crate) runs: Vec<Run>,
    pub(crate) memory: Vec<MemoryRun>,
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
    pub(crate) fn new(
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
}
