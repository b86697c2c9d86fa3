//! The comparison harness: ferrophp (classic and worker mode, one or several builds)
//! against nginx + Debian's php8.2-fpm with FastCGI keep-alive, and a pure hyper hello
//! world, on loopback, with the same load generator (wrk) for all. Workloads range from
//! hello world to real apps from Debian's packages (WordPress on a private MariaDB,
//! MediaWiki on SQLite, a Symfony app), plus the PSS of the whole server under load.
//! Rounds are interleaved (A B C D, A B C D, ...); each run starts the system fresh,
//! checks its PHP settings and its page, warms it up, measures, and stops it. The report
//! gives per-round ratios against nginx + php-fpm (min/median/max), an A/A run of
//! ferrophp against itself for the noise floor, latency percentiles, the CPU time the
//! server processes used during the measured window (utime + stime of the server's
//! process tree, the counters getrusage reads), and the targets as pass/fail.
//!
//! `cargo run --release -p ferrophp-benches --bin compare -- --help` lists the flags;
//! benchmarks.json and benchmarks.md go into `--out DIR` (default docs/).
//! `--ferrophp-bin NAME=PATH` (repeatable) measures each binary as systems of its own,
//! interleaved with the others in every round. Each `--ferrophp-arg` is one more
//! argument for every ferrophp server started (`--ferrophp-arg --max-threads
//! --ferrophp-arg 64`); a `--threads` given that way replaces the harness's own PHP
//! thread count for ferrophp (worker pools keep theirs), and a `--max-threads` is also
//! the worker pool's ceiling.
//!
//! Modules: `options` (flags), `tools` (what must be installed or built), `apps` (the
//! document roots and their set-up, MariaDB), `workloads` (the table), `systems` (start
//! and stop), `ini` (the shared PHP settings and their probe), `measure` (one run), `wrk`,
//! `http` (single requests), `procs` (CPU and PSS from /proc), `memory` (the PSS
//! workload), `stats` (the median), `report` (what a run found: docs/benchmarks.json),
//! `tables` + `markdown` (rendering it: docs/benchmarks.md and the summary).

mod apps;
mod http;
mod ini;
mod markdown;
mod measure;
mod memory;
mod options;
mod procs;
mod report;
mod stats;
mod systems;
mod tables;
mod tools;
mod workloads;
mod wrk;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use measure::Bench;
use workloads::Workload;

/// Where docs/benchmarks.md's sections written by other benchmarks begin (the marker
/// line itself is theirs to keep).
pub const KEPT_MARKER: &str =
    "<!-- Sections below are written by other benchmarks; compare.rs keeps them. -->";

/// The `compare` binary's whole life; errors end it with a message and exit status 1.
pub fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("compare: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scratch directory of one invocation, removed at the end however it ends (unless
/// `--keep-scratch`).
struct Scratch(PathBuf, bool);

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.1 {
            eprintln!("compare: scratch directory kept: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn run() -> Result<(), String> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .map_err(|e| format!("the repository: {e}"))?;
    let Some(options) = options::parse(std::env::args().skip(1), &repo)
        .map_err(|e| format!("{e}\n{}", options::USAGE))?
    else {
        print!("{}", options::USAGE);
        return Ok(());
    };
    if options.list {
        for name in workloads::names() {
            println!("{name}");
        }
        return Ok(());
    }
    let (selected, memory) = workloads::select(&options.only, &options.skip)?;
    let needs = tools::Needs::of(&selected, memory);
    let tools = tools::prepare(&repo, &options, &needs)?;

    let scratch = Scratch(
        std::env::temp_dir().join(format!("ferrophp-compare-{}", std::process::id())),
        options.keep_scratch,
    );
    std::fs::create_dir_all(&scratch.0).map_err(|e| format!("{}: {e}", scratch.0.display()))?;
    // Set-up scripts run through the first build's php-cli.
    let php_cli = &options.builds[0].path;
    let sites = apps::Sites::prepare(&repo, &scratch.0, &needs.sites, php_cli)?;
    let mut bench = Bench {
        options: &options,
        sites: &sites,
        scratch: &scratch.0,
        hyper: &tools.hyper,
        settings: ini::Settings::default(),
    };

    let mut runs = Vec::new();
    for workload in &selected {
        runs.extend(run_workload(&mut bench, workload)?);
    }
    let mut memory_runs = Vec::new();
    if memory {
        let systems = systems::expand(memory::KINDS, &options.builds);
        for &concurrency in &options.memory_concurrency {
            for round in 0..options.rounds {
                for system in &systems {
                    let m = memory::measure(&mut bench, concurrency, system, round)?;
                    eprintln!(
                        "{:<15} round {} {:<34} {:>3} concurrent  PSS {:>7.1} MiB (peak {:>7.1}, {} processes)  {:>7.0} req/s  errors {}",
                        workloads::MEMORY, round, system.label, concurrency, m.pss_mib_median, m.pss_mib_max, m.processes, m.requests_per_sec, m.errors
                    );
                    memory_runs.push(m);
                }
            }
        }
    }

    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mariadb = sites.mariadb.as_ref().map(|db| db.version());
    let report = report::Report::new(
        &options,
        &tools.build_versions,
        &bench.settings,
        mariadb,
        runs,
        memory_runs,
        command,
    );
    drop(sites);
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    let out = options.out.clone().unwrap_or_else(|| repo.join("docs"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(out.join(name), text)
            .map_err(|e| format!("{}: {e}", out.join(name).display()))
    };
    write("benchmarks.json", &json)?;
    // Sections other benchmarks wrote (trace_bench's, the PHP builds' ablation) stay below
    // the marker; this harness rewrites what is above it.
    let kept = std::fs::read_to_string(out.join("benchmarks.md"))
        .ok()
        .and_then(|old| old.find(KEPT_MARKER).map(|i| old[i..].to_owned()))
        .unwrap_or_default();
    let mut md = report.markdown(&json);
    if !kept.is_empty() {
        md.push('\n');
        md.push_str(&kept);
    }
    write("benchmarks.md", &md)?;
    println!("{}", report.summary());
    eprintln!(
        "wrote benchmarks.md and benchmarks.json in {}",
        out.display()
    );
    Ok(())
}

/// Every round of one workload: each system once per round, in the same order.
fn run_workload(bench: &mut Bench, workload: &Workload) -> Result<Vec<measure::Run>, String> {
    let options = bench.options;
    let extra_ini = match workload.session_files {
        0 => Vec::new(),
        n => vec![format!(
            "session.save_path={}",
            prepare_sessions(bench.scratch, workload.name, n)?.display()
        )],
    };
    let systems = systems::expand(workload.kinds, &options.builds);
    if let Some(first) = systems.first() {
        bench.prime(workload, first, &extra_ini)?;
    }
    let mut runs = Vec::new();
    for round in 0..options.rounds {
        for system in &systems {
            let run = bench.measure(workload, system, round, &extra_ini)?;
            eprintln!(
                "{:<15} round {} {:<40} {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  cpu {:>7.1} us/req  errors {}",
                workload.name, round, system.label, run.requests_per_sec, run.p50_ms, run.p99_ms, run.cpu_us_per_request, run.errors
            );
            runs.push(run);
        }
    }
    Ok(runs)
}

/// A session save path holding `files` session files ten minutes old: alive for PHP's GC
/// (gc_maxlifetime 1440 s), so a GC pass would scan them all and delete none, the state
/// of a busy site between clean-ups.
fn prepare_sessions(scratch: &Path, workload: &str, files: usize) -> Result<PathBuf, String> {
    let dir = scratch.join(format!("sessions-{workload}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mtime = std::time::SystemTime::now() - Duration::from_secs(600);
    eprintln!(
        "{workload}: creating {files} session files in {}",
        dir.display()
    );
    for i in 0..files {
        let path = dir.join(format!("sess_pre{i:08}"));
        let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        (&file).write_all(b"n|i:1;").map_err(|e| e.to_string())?;
        file.set_modified(mtime).map_err(|e| e.to_string())?;
    }
    Ok(dir)
}
