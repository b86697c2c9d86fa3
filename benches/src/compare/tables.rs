//! The report's tables, from the runs of one harness invocation: throughput per workload
//! and system with its per-round ratio to the tuned nginx + php-fpm of the same round,
//! the mixed workload's latencies, the PSS table, and the targets as pass/fail.

use super::measure::{HeadOfLine, Run};
use super::memory::MemoryRun;
use super::report::Report;
use super::stats::median;
use super::systems::Kind;
use super::workloads::WORKLOADS;

/// `min / median / max` of per-round ratios.
fn spread(ratios: &[f64]) -> String {
    if ratios.is_empty() {
        return "-".into();
    }
    let mut sorted = ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    format!(
        "{:.2} / {:.2} / {:.2}",
        sorted[0],
        median(ratios.to_vec()),
        sorted[sorted.len() - 1]
    )
}

impl Report {
    fn runs_of(&self, workload: &str, system: &str) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|r| r.workload == workload && r.system == system)
            .collect()
    }

    /// The systems that ran `workload`, in the order they first ran.
    fn systems_of(&self, workload: &str) -> Vec<&str> {
        let mut systems: Vec<&str> = Vec::new();
        for run in self.runs.iter().filter(|r| r.workload == workload) {
            if !systems.contains(&run.system.as_str()) {
                systems.push(&run.system);
            }
        }
        systems
    }

    /// Per-round ratios of `system` to the tuned nginx + php-fpm for `workload`.
    pub(crate) fn ratios(&self, workload: &str, system: &str) -> Vec<f64> {
        let base: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.workload == workload && r.kind == Kind::NginxFpm)
            .collect();
        self.runs_of(workload, system)
            .iter()
            .filter_map(|r| {
                let b = base.iter().find(|b| b.round == r.round)?;
                (b.requests_per_sec > 0.0).then(|| r.requests_per_sec / b.requests_per_sec)
            })
            .collect()
    }

    /// The throughput table of the workloads `real_app` selects (mixed ones excluded).
    pub(crate) fn throughput_table(&self, real_app: bool) -> String {
        let mut rows = String::new();
        for workload in WORKLOADS
            .iter()
            .filter(|w| w.slow.is_none() && w.real_app == real_app)
        {
            for system in self.systems_of(workload.name) {
                let runs = self.runs_of(workload.name, system);
                let ratio = if runs.iter().any(|r| r.kind == Kind::NginxFpm) {
                    "1.00 (baseline)".to_string()
                } else {
                    spread(&self.ratios(workload.name, system))
                };
                let m = |f: fn(&Run) -> f64| median(runs.iter().map(|r| f(r)).collect());
                let db: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| r.db_cpu_us_per_request)
                    .collect();
                let db = match (real_app, db.is_empty()) {
                    (false, _) => String::new(),
                    (true, true) => " - |".to_string(),
                    (true, false) => format!(" {:.1} |", median(db)),
                };
                rows.push_str(&format!(
                    "| {} | {} | {:.0} | {} | {:.2} | {:.2} | {:.1} |{db} {} |\n",
                    workload.name,
                    system,
                    m(|r| r.requests_per_sec),
                    ratio,
                    m(|r| r.p50_ms),
                    m(|r| r.p99_ms),
                    m(|r| r.cpu_us_per_request),
                    runs.iter().map(|r| r.errors).sum::<u64>(),
                ));
            }
        }
        if rows.is_empty() {
            return String::new();
        }
        let (db, db_align) = match real_app {
            true => (" MariaDB CPU us/req |", "---:|"),
            false => ("", ""),
        };
        format!(
            "| workload | system | req/s (median) | vs nginx + php-fpm: min / median / max | p50 ms | p99 ms | server CPU us/req |{db} errors |\n|---|---|---:|---|---:|---:|---:|{db_align}---:|\n{rows}"
        )
    }

    /// The mixed workloads' own table (medians over rounds): the fast class's p99 alone
    /// and with the slow class, and their ratio.
    pub(crate) fn head_of_line_table(&self) -> String {
        let mut out = String::new();
        for workload in WORKLOADS.iter().filter(|w| w.slow.is_some()) {
            let mut rows = String::new();
            for system in self.systems_of(workload.name) {
                let runs = self.runs_of(workload.name, system);
                let hol: Vec<&HeadOfLine> = runs
                    .iter()
                    .filter_map(|r| r.head_of_line.as_ref())
                    .collect();
                if hol.is_empty() {
                    continue;
                }
                let m = |f: fn(&HeadOfLine) -> f64| median(hol.iter().map(|h| f(h)).collect());
                rows.push_str(&format!(
                    "| {} | {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2} | {} |\n",
                    workload.name,
                    system,
                    m(|h| h.requests_per_sec_alone),
                    m(|h| h.fast_alone.p99_ms),
                    median(runs.iter().map(|r| r.requests_per_sec).collect()),
                    m(|h| h.fast_mixed.p50_ms),
                    m(|h| h.fast_mixed.p99_ms),
                    m(|h| h.p99_ratio),
                    m(|h| h.slow_mixed.p50_ms),
                    median(runs.iter().map(|r| r.cpu_us_per_request).collect()),
                    runs.iter().map(|r| r.errors).sum::<u64>(),
                ));
            }
            if rows.is_empty() {
                continue;
            }
            out.push_str("| workload | system | req/s fast only | fast p99 ms alone | req/s mixed | fast p50 ms mixed | fast p99 ms mixed | p99 ratio (target <= 2) | slow p50 ms | server CPU us/req | errors |\n");
            out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            out.push_str(&rows);
        }
        out
    }

    fn memory_of(&self, concurrency: usize, system: &str) -> Vec<&MemoryRun> {
        self.memory
            .iter()
            .filter(|m| m.concurrency == concurrency && m.system == system)
            .collect()
    }

    /// Per-round ratios of `system`'s median PSS to the tuned baseline's, at `concurrency`.
    pub(crate) fn memory_ratios(&self, concurrency: usize, system: &str) -> Vec<f64> {
        let base: Vec<&MemoryRun> = self
            .memory
            .iter()
            .filter(|m| m.concurrency == concurrency && m.kind == Kind::NginxFpm)
            .collect();
        self.memory_of(concurrency, system)
            .iter()
            .filter_map(|m| {
                let b = base.iter().find(|b| b.round == m.round)?;
                (b.pss_mib_median > 0.0).then(|| m.pss_mib_median / b.pss_mib_median)
            })
            .collect()
    }

    pub(crate) fn memory_table(&self) -> String {
        let mut rows = String::new();
        let mut concurrencies: Vec<usize> = self.memory.iter().map(|m| m.concurrency).collect();
        concurrencies.dedup();
        for c in concurrencies {
            let mut systems: Vec<&str> = Vec::new();
            for m in self.memory.iter().filter(|m| m.concurrency == c) {
                if !systems.contains(&m.system.as_str()) {
                    systems.push(&m.system);
                }
            }
            for system in systems {
                let runs = self.memory_of(c, system);
                let ratio = if runs.iter().any(|r| r.kind == Kind::NginxFpm) {
                    "1.00 (baseline)".to_string()
                } else {
                    spread(&self.memory_ratios(c, system))
                };
                let m = |f: fn(&MemoryRun) -> f64| median(runs.iter().map(|r| f(r)).collect());
                rows.push_str(&format!(
                    "| {c} | {system} | {:.1} | {:.1} | {ratio} | {} | {:.0} | {} |\n",
                    m(|r| r.pss_mib_median),
                    m(|r| r.pss_mib_max),
                    runs.last().map_or(0, |r| r.processes),
                    m(|r| r.requests_per_sec),
                    runs.iter().map(|r| r.errors).sum::<u64>(),
                ));
            }
        }
        if rows.is_empty() {
            return String::new();
        }
        format!(
            "| concurrent requests = PHP threads / children | system | PSS MiB (median of samples) | PSS MiB (peak) | vs nginx + php-fpm: min / median / max | processes | req/s | errors |\n|---:|---|---:|---:|---|---:|---:|---:|\n{rows}"
        )
    }

    /// The targets, per ferrophp build: the median per-round ratio, pass or fail.
    pub(crate) fn targets_table(&self) -> String {
        let mut rows = String::new();
        for target in TARGETS {
            for build in &self.builds {
                let of_build = |kind: Kind, b: &Option<String>| {
                    kind == target.kind && b.as_deref() == Some(build.name.as_str())
                };
                let ratios = match target.measure {
                    Measure::Throughput(workload) => self
                        .runs
                        .iter()
                        .find(|r| r.workload == workload && of_build(r.kind, &r.build))
                        .map(|r| self.ratios(workload, &r.system))
                        .unwrap_or_default(),
                    Measure::Pss(concurrency) => self
                        .memory
                        .iter()
                        .find(|m| m.concurrency == concurrency && of_build(m.kind, &m.build))
                        .map(|m| self.memory_ratios(concurrency, &m.system))
                        .unwrap_or_default(),
                };
                if ratios.is_empty() {
                    continue;
                }
                let ratio = median(ratios);
                let pass = if target.at_most {
                    ratio <= target.threshold
                } else {
                    ratio >= target.threshold
                };
                rows.push_str(&format!(
                    "| {} | {} | {}{:.2}x | {:.2}x | {} |\n",
                    target.what,
                    build.name,
                    if target.at_most { "<= " } else { ">= " },
                    target.threshold,
                    ratio,
                    if pass { "pass" } else { "**fail**" }
                ));
            }
        }
        if rows.is_empty() {
            return String::new();
        }
        format!("| target | ferrophp build | wanted | median ratio | |\n|---|---|---:|---:|---|\n{rows}")
    }
}

enum Measure {
    /// req/s against the tuned baseline in the same round.
    Throughput(&'static str),
    /// PSS at this concurrency against the tuned baseline in the same round.
    Pss(usize),
}

struct Target {
    what: &'static str,
    measure: Measure,
    kind: Kind,
    at_most: bool,
    threshold: f64,
}

const fn at_least(
    what: &'static str,
    workload: &'static str,
    kind: Kind,
    threshold: f64,
) -> Target {
    Target {
        what,
        measure: Measure::Throughput(workload),
        kind,
        at_most: false,
        threshold,
    }
}

/// Issue 24's targets (ratios in one run, against the tuned baseline).
const TARGETS: &[Target] = &[
    at_least(
        "wordpress-front, classic",
        "wordpress-front",
        Kind::FerrophpClassic,
        1.25,
    ),
    at_least(
        "wordpress-post, classic",
        "wordpress-post",
        Kind::FerrophpClassic,
        1.25,
    ),
    at_least(
        "wordpress-rest, classic",
        "wordpress-rest",
        Kind::FerrophpClassic,
        1.25,
    ),
    at_least(
        "mediawiki-view, classic",
        "mediawiki-view",
        Kind::FerrophpClassic,
        1.25,
    ),
    at_least(
        "symfony-page, classic",
        "symfony-page",
        Kind::FerrophpClassic,
        1.3,
    ),
    at_least(
        "symfony-page, worker",
        "symfony-page",
        Kind::FerrophpWorker,
        4.0,
    ),
    at_least("hello, worker", "hello", Kind::FerrophpWorker, 2.8),
    at_least("hello, classic", "hello", Kind::FerrophpClassic, 2.1),
    Target {
        what: "PSS at 32 concurrent requests (WordPress front page)",
        measure: Measure::Pss(32),
        kind: Kind::FerrophpClassic,
        at_most: true,
        threshold: 0.7,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::options::Build;
    use crate::compare::report::BuildInfo;

    fn run(workload: &str, kind: Kind, build: Option<&str>, round: usize, rps: f64) -> Run {
        Run {
            workload: workload.into(),
            system: format!("{kind:?}{}", build.unwrap_or("")),
            kind,
            build: build.map(String::from),
            round,
            requests_per_sec: rps,
            p50_ms: 1.0,
            p99_ms: 2.0,
            errors: 0,
            cpu_seconds: 0.0,
            cpu_us_per_request: 0.0,
            db_cpu_us_per_request: None,
            head_of_line: None,
        }
    }

    fn memory(
        concurrency: usize,
        kind: Kind,
        build: Option<&str>,
        round: usize,
        mib: f64,
    ) -> MemoryRun {
        MemoryRun {
            concurrency,
            system: format!("{kind:?}{}", build.unwrap_or("")),
            kind,
            build: build.map(String::from),
            round,
            pss_mib_median: mib,
            pss_mib_max: mib,
            processes: 1,
            samples: 1,
            requests_per_sec: 1.0,
            errors: 0,
        }
    }

    fn report(runs: Vec<Run>, memory: Vec<MemoryRun>, builds: &[&str]) -> Report {
        Report {
            generated: String::new(),
            machine: Default::default(),
            versions: Default::default(),
            builds: builds
                .iter()
                .map(|n| {
                    let b = Build {
                        name: n.to_string(),
                        path: n.into(),
                        explicit: true,
                    };
                    BuildInfo {
                        name: b.name,
                        path: b.path,
                        version: String::new(),
                        sha256: String::new(),
                        libphp: String::new(),
                    }
                })
                .collect(),
            command: String::new(),
            rounds: 2,
            seconds: 1,
            warmup: 1,
            php_threads: 4,
            fpm_keepalive: String::new(),
            php_ini: Default::default(),
            php_ini_d: Vec::new(),
            php_settings: Vec::new(),
            php_by_system: Vec::new(),
            extensions_only_ferrophp: Vec::new(),
            extensions_only_fpm: Vec::new(),
            runs,
            memory,
        }
    }

    #[test]
    fn ratios_pair_each_round_with_the_keep_alive_baseline_of_that_round() {
        let r = report(
            vec![
                run("hello", Kind::NginxFpm, None, 0, 100.0),
                run("hello", Kind::NginxFpmNoKeepalive, None, 0, 1000.0),
                run("hello", Kind::NginxFpm, None, 1, 200.0),
                run("hello", Kind::FerrophpClassic, Some("a"), 0, 300.0),
                run("hello", Kind::FerrophpClassic, Some("a"), 1, 300.0),
            ],
            Vec::new(),
            &["a"],
        );
        assert_eq!(r.ratios("hello", "FerrophpClassica"), vec![3.0, 1.5]);
        let table = r.throughput_table(false);
        assert!(
            table.contains("| hello | FerrophpClassica | 300 | 1.50 / 2.25 / 3.00 |"),
            "{table}"
        );
        assert!(
            table.contains("| hello | NginxFpm | 150 | 1.00 (baseline) |"),
            "{table}"
        );
    }

    #[test]
    fn targets_pass_or_fail_per_build_on_the_median_ratio() {
        let mut runs = Vec::new();
        for round in 0..3 {
            runs.push(run("wordpress-front", Kind::NginxFpm, None, round, 100.0));
            runs.push(run(
                "wordpress-front",
                Kind::FerrophpClassic,
                Some("slow"),
                round,
                110.0,
            ));
            runs.push(run(
                "wordpress-front",
                Kind::FerrophpClassic,
                Some("fast"),
                round,
                130.0,
            ));
        }
        let mem = vec![
            memory(32, Kind::NginxFpm, None, 0, 200.0),
            memory(32, Kind::FerrophpClassic, Some("slow"), 0, 180.0),
            memory(32, Kind::FerrophpClassic, Some("fast"), 0, 120.0),
        ];
        let table = report(runs, mem, &["slow", "fast"]).targets_table();
        assert!(
            table.contains("| wordpress-front, classic | slow | >= 1.25x | 1.10x | **fail** |"),
            "{table}"
        );
        assert!(
            table.contains("| wordpress-front, classic | fast | >= 1.25x | 1.30x | pass |"),
            "{table}"
        );
        assert!(
            table.contains("| slow | <= 0.70x | 0.90x | **fail** |"),
            "{table}"
        );
        assert!(
            table.contains("| fast | <= 0.70x | 0.60x | pass |"),
            "{table}"
        );
        // No run of a target's workload: no row.
        assert!(!table.contains("mediawiki"), "{table}");
    }
}
