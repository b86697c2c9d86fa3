//! What a running server costs, read from /proc: the processes of its tree (the ones the
//! harness started and all their descendants: nginx's master and workers, php-fpm's
//! master and children, or the one ferrophp process), their CPU time (utime + stime, the
//! counters getrusage reads) and their proportional set size (PSS: each page divided by
//! the number of processes mapping it, so shared OPcache memory and shared libraries are
//! counted once over the whole server, whatever its process model).

use std::collections::BTreeMap;

/// One process's parent and CPU ticks, from /proc/PID/stat.
struct Stat {
    ppid: u32,
    ticks: u64,
}

fn all_stats() -> BTreeMap<u32, Stat> {
    let mut stats = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may contain spaces) start after ") ".
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        stats.insert(
            pid,
            Stat {
                ppid: field(1).unwrap_or(0) as u32,
                ticks: field(11).unwrap_or(0) + field(12).unwrap_or(0),
            },
        );
    }
    stats
}

/// The pids of `roots` and all their descendants.
fn tree_of(roots: &[u32], stats: &BTreeMap<u32, Stat>) -> Vec<u32> {
    let in_tree = |mut pid: u32| loop {
        if roots.contains(&pid) {
            return true;
        }
        match stats.get(&pid) {
            Some(s) if s.ppid > 1 && s.ppid != pid => pid = s.ppid,
            _ => return false,
        }
    };
    stats.keys().copied().filter(|pid| in_tree(*pid)).collect()
}

/// utime + stime of the given processes and all their descendants, in seconds.
pub(crate) fn tree_cpu_seconds(roots: &[u32]) -> f64 {
    let stats = all_stats();
    let ticks: u64 = tree_of(roots, &stats)
        .iter()
        .filter_map(|pid| stats.get(pid))
        .map(|s| s.ticks)
        .sum();
    ticks as f64 / clock_ticks_per_second()
}

/// PSS of a process tree: the sum of `Pss:` in /proc/PID/smaps_rollup over every process,
/// in bytes, and how many processes it summed.
pub(crate) fn tree_pss_bytes(roots: &[u32]) -> (u64, usize) {
    let stats = all_stats();
    let pids = tree_of(roots, &stats);
    let mut total = 0;
    let mut counted = 0;
    for pid in pids {
        let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
            continue;
        };
        if let Some(kb) = rollup.lines().find_map(|l| {
            l.strip_prefix("Pss:")?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()
        }) {
            total += kb * 1024;
            counted += 1;
        }
    }
    (total, counted)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}
