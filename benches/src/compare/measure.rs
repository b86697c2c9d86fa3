//! One run: a system started fresh, its PHP settings probed and compared, the workload's
//! page checked (status 200 and its markers), warmed up, measured, checked again, and
//! stopped. The CPU time of the server's process tree is read around the measured
//! window only.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::load;

use super::apps::Sites;
use super::ini::{self, Settings};
use super::options::Options;
use super::procs;
use super::systems::{self, Kind, Launch, Running, System};
use super::workloads::{Site, SlowClass, Workload, SESSION_IDS};
use super::wrk;

#[derive(Serialize, Clone, Debug)]
pub(crate) struct Run {
    pub(crate) workload: String,
    pub(crate) system: String,
    pub(crate) kind: Kind,
    /// The ferrophp build's name (`--ferrophp-bin NAME=...`), for ferrophp systems.
    pub(crate) build: Option<String>,
    pub(crate) round: usize,
    pub(crate) requests_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) errors: u64,
    pub(crate) cpu_seconds: f64,
    pub(crate) cpu_us_per_request: f64,
    /// MariaDB's CPU time per request in the same window (WordPress workloads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) db_cpu_us_per_request: Option<f64>,
    /// Mixed workloads only; `p50_ms`/`p99_ms` are then the fast class's with the mix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) head_of_line: Option<HeadOfLine>,
}

/// Per-class latencies of a mixed workload's run.
#[derive(Serialize, Clone, Debug)]
pub(crate) struct HeadOfLine {
    /// The fast class with no slow requests at all (same server, just before).
    pub(crate) fast_alone: load::ClassStats,
    pub(crate) fast_mixed: load::ClassStats,
    pub(crate) slow_mixed: load::ClassStats,
    /// fast_mixed.p99 / fast_alone.p99 (target: <= 2).
    pub(crate) p99_ratio: f64,
    pub(crate) requests_per_sec_alone: f64,
}

/// What every run of a harness invocation shares.
pub(crate) struct Bench<'a> {
    pub(crate) options: &'a Options,
    pub(crate) sites: &'a Sites,
    pub(crate) scratch: &'a Path,
    pub(crate) hyper: &'a Path,
    pub(crate) settings: Settings,
}

impl Bench<'_> {
    /// Starts `system` for `workload`'s site with `threads`, checks its PHP settings and
    /// its page.
    pub(crate) fn start(
        &mut self,
        workload: &Workload,
        system: &System,
        threads: usize,
        extra_ini: &[String],
    ) -> Result<Running, String> {
        let root = self.sites.root(workload.site)?;
        let mut ini = ini::shared_args();
        ini.extend(extra_ini.iter().cloned());
        let launch = Launch {
            options: self.options,
            root,
            worker_script: workload.worker.map(|(_, script)| root.join(script)),
            threads,
            ini: &ini,
            scratch: self.scratch,
            hyper: self.hyper,
        };
        let running = systems::start(system, &launch)?;
        if system.kind.runs_php() {
            let probe = ini::probe(running.port)
                .map_err(|e| format!("{}: {e}\n{}", system.label, running.log_tail()))?;
            self.settings.check(&system.label, probe)?;
        }
        check_page(&running, workload, path_of(workload, system.kind)).map_err(|e| {
            format!(
                "{} on {}: {e}\n{}",
                workload.name,
                system.label,
                running.log_tail()
            )
        })?;
        Ok(running)
    }

    /// Requests the workload's page a few times on `system` before any round, so the
    /// apps' own caches on disk and in the database (MediaWiki's localisation cache and
    /// parser cache, Twig's compiled templates) are built before the first measured
    /// system rather than during its run.
    pub(crate) fn prime(
        &mut self,
        workload: &Workload,
        system: &System,
        extra_ini: &[String],
    ) -> Result<(), String> {
        let running = self.start(workload, system, self.options.threads, extra_ini)?;
        for _ in 0..5 {
            check_page(&running, workload, path_of(workload, system.kind))
                .map_err(|e| format!("{} on {} (priming): {e}", workload.name, system.label))?;
        }
        running.stop();
        Ok(())
    }

    pub(crate) fn warmup_seconds(&self, workload: &Workload) -> u64 {
        if workload.real_app {
            self.options.warmup.max(2)
        } else {
            self.options.warmup
        }
    }

    pub(crate) fn measure(
        &mut self,
        workload: &Workload,
        system: &System,
        round: usize,
        extra_ini: &[String],
    ) -> Result<Run, String> {
        let running = self.start(workload, system, self.options.threads, extra_ini)?;
        let path = path_of(workload, system.kind);
        let mut run = Run {
            workload: workload.name.to_string(),
            system: system.label.clone(),
            kind: system.kind,
            build: system.build.map(|i| self.options.builds[i].name.clone()),
            round,
            requests_per_sec: 0.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            errors: 0,
            cpu_seconds: 0.0,
            cpu_us_per_request: 0.0,
            db_cpu_us_per_request: None,
            head_of_line: None,
        };
        if let Some(slow) = &workload.slow {
            let slow_path = match system.kind {
                Kind::FerrophpWorker => slow.worker_path,
                _ => slow.classic_path,
            };
            self.measure_mixed(workload, &running, path, slow_path, slow, &mut run);
        } else {
            let url = format!("http://127.0.0.1:{}{path}", running.port);
            let lua = wrk::Script {
                post_body: workload.post_body,
                session_ids: (workload.session_files > 0).then_some(SESSION_IDS),
                count_non_2xx: workload.real_app,
            }
            .write(self.scratch)?;
            wrk::run(
                &url,
                workload.connections,
                self.warmup_seconds(workload),
                lua.as_deref(),
            )?;
            let db: Vec<u32> = match workload.site {
                Site::WordPress => self.sites.mariadb.iter().map(|db| db.pid()).collect(),
                _ => Vec::new(),
            };
            let cpu_before = procs::tree_cpu_seconds(&running.pids());
            let db_before = procs::tree_cpu_seconds(&db);
            let result = wrk::run(
                &url,
                workload.connections,
                self.options.seconds,
                lua.as_deref(),
            )?;
            run.cpu_seconds = procs::tree_cpu_seconds(&running.pids()) - cpu_before;
            let db_seconds = procs::tree_cpu_seconds(&db) - db_before;
            run.requests_per_sec = result.requests_per_sec;
            run.p50_ms = result.p50_ms;
            run.p99_ms = result.p99_ms;
            run.errors = result.errors;
            let requests = result.requests_per_sec * self.options.seconds as f64;
            if requests > 0.0 {
                run.cpu_us_per_request = run.cpu_seconds / requests * 1e6;
                if !db.is_empty() {
                    run.db_cpu_us_per_request = Some(db_seconds / requests * 1e6);
                }
            }
        }
        // Still the real page after the load (a server that broke under it would
        // otherwise only show as fast errors).
        check_page(&running, workload, path).map_err(|e| {
            format!(
                "{} on {} after the load: {e}\n{}",
                workload.name,
                system.label,
                running.log_tail()
            )
        })?;
        running.stop();
        Ok(run)
    }

    /// A mixed workload on a running system: the fast class alone, then the mix, each
    /// after its own warm-up, with the load generator's 2 threads (as wrk's).
    fn measure_mixed(
        &self,
        workload: &Workload,
        running: &Running,
        fast_path: &str,
        slow_path: &str,
        slow: &SlowClass,
        run: &mut Run,
    ) {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], running.port));
        let connections = workload.connections as usize;
        let warmup = Duration::from_secs(self.options.warmup);
        let window = Duration::from_secs(self.options.seconds);
        let mut mix = load::Mix {
            fast_path: fast_path.to_string(),
            slow_path: slow_path.to_string(),
            slow_fraction: 0.0,
        };
        let alone = load::run(addr, connections, 2, warmup, window, &mix);
        mix.slow_fraction = slow.fraction;
        // CPU is counted over the mixed run only (its warm-up included: the generator
        // runs both in one call).
        let cpu_before = procs::tree_cpu_seconds(&running.pids());
        let mixed = load::run(addr, connections, 2, warmup, window, &mix);
        run.cpu_seconds = procs::tree_cpu_seconds(&running.pids()) - cpu_before;
        let requests = mixed.requests_per_sec * (self.options.seconds + self.options.warmup) as f64;
        if requests > 0.0 {
            run.cpu_us_per_request = run.cpu_seconds / requests * 1e6;
        }
        run.requests_per_sec = mixed.requests_per_sec;
        run.p50_ms = mixed.fast.p50_ms;
        run.p99_ms = mixed.fast.p99_ms;
        run.errors = alone.errors + mixed.errors;
        let p99_ratio = if alone.fast.p99_ms > 0.0 {
            mixed.fast.p99_ms / alone.fast.p99_ms
        } else {
            0.0
        };
        run.head_of_line = Some(HeadOfLine {
            fast_alone: alone.fast,
            fast_mixed: mixed.fast,
            slow_mixed: mixed.slow,
            p99_ratio,
            requests_per_sec_alone: alone.requests_per_sec,
        });
    }
}

pub(crate) fn path_of(workload: &Workload, kind: Kind) -> &'static str {
    match (kind, workload.worker) {
        (Kind::FerrophpWorker, Some((path, _))) => path,
        (Kind::HyperHello, _) => "/",
        _ => workload.classic_path,
    }
}

/// The page is the real one: status 200 and every marker in the body.
fn check_page(running: &Running, workload: &Workload, path: &str) -> Result<(), String> {
    let body = workload.post_body.map(|n| vec![b'x'; n]);
    let response =
        super::http::request(running.port, path, body.as_deref(), Duration::from_secs(30))?;
    let text = response.text();
    let missing: Vec<&&str> = workload
        .markers
        .iter()
        .filter(|m| !text.contains(**m))
        .collect();
    if response.status != 200 || !missing.is_empty() {
        let location = response.header("location").unwrap_or("");
        let start: String = text.chars().take(600).collect();
        return Err(format!(
            "GET {path}: status {} {location}, missing {missing:?}; body starts: {start}",
            response.status
        ));
    }
    Ok(())
}
