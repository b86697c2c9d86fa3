//! The `memory` workload: the PSS of the whole server while it serves a real, slow page
//! (the WordPress front page) at a given concurrency, with as many PHP threads (ferrophp)
//! or php-fpm children as concurrent requests (4 and 32 by default). PSS is summed over
//! every process of the server's tree (nginx master and workers, php-fpm master and
//! children; the one ferrophp process) from /proc/PID/smaps_rollup, sampled every 250 ms
//! during the measured window, after a warm-up that has had every thread or child serve
//! requests. MariaDB is not part of either server and not counted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::measure::{path_of, Bench};
use super::procs;
use super::stats::median;
use super::systems::{Kind, System};
use super::workloads::{Workload, WORKLOADS};
use super::wrk;

/// The page the memory workload loads.
pub(crate) const PAGE: &str = "wordpress-front";

pub(crate) const KINDS: &[Kind] = &[Kind::FerrophpClassic, Kind::NginxFpm];

#[derive(Serialize, Clone, Debug)]
pub(crate) struct MemoryRun {
    pub(crate) concurrency: usize,
    pub(crate) system: String,
    pub(crate) kind: Kind,
    pub(crate) build: Option<String>,
    pub(crate) round: usize,
    /// Median and largest of the samples, in MiB.
    pub(crate) pss_mib_median: f64,
    pub(crate) pss_mib_max: f64,
    /// Processes summed (in the last sample).
    pub(crate) processes: usize,
    pub(crate) samples: usize,
    pub(crate) requests_per_sec: f64,
    pub(crate) errors: u64,
}

pub(crate) fn page() -> &'static Workload {
    WORKLOADS
        .iter()
        .find(|w| w.name == PAGE)
        .expect("the memory workload's page is in the table")
}

pub(crate) fn measure(
    bench: &mut Bench,
    concurrency: usize,
    system: &System,
    round: usize,
) -> Result<MemoryRun, String> {
    let workload = page();
    let running = bench.start(workload, system, concurrency, &[])?;
    let url = format!(
        "http://127.0.0.1:{}{}",
        running.port,
        path_of(workload, system.kind)
    );
    let lua = wrk::Script {
        count_non_2xx: true,
        ..wrk::Script::default()
    }
    .write(bench.scratch)?;
    let connections = concurrency as u32;
    wrk::run(
        &url,
        connections,
        bench.warmup_seconds(workload),
        lua.as_deref(),
    )?;

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let (stop, samples, pids) = (stop.clone(), samples.clone(), running.pids());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let sample = procs::tree_pss_bytes(&pids);
                samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sample);
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    let result = wrk::run(&url, connections, bench.options.seconds, lua.as_deref());
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let result = result?;
    running.stop();

    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    let mut mib: Vec<f64> = samples
        .iter()
        .map(|(b, _)| *b as f64 / (1024.0 * 1024.0))
        .collect();
    mib.sort_by(f64::total_cmp);
    if mib.is_empty() {
        return Err(format!("no PSS sample of {}", system.label));
    }
    Ok(MemoryRun {
        concurrency,
        system: system.label.clone(),
        kind: system.kind,
        build: system.build.map(|i| bench.options.builds[i].name.clone()),
        round,
        pss_mib_median: median(mib.clone()),
        pss_mib_max: mib[mib.len() - 1],
        processes: samples.last().map_or(0, |(_, n)| *n),
        samples: mib.len(),
        requests_per_sec: result.requests_per_sec,
        errors: result.errors,
    })
}
