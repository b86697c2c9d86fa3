//! Sessions at scale: no garbage collection on the request path, a background sweep on
//! its own schedule, and a private default `session.save_path`.
//!
//! With PHP's defaults, one request in `gc_divisor / gc_probability` (1 in 100 built in,
//! 1 in 1000 in php.ini-production) scans the whole session directory while a client
//! waits: with 150,000 session files that single request takes most of a second and the
//! server's throughput collapses. We have threads to spare, so by default the server sets
//! `session.gc_probability=0` (a `-d` value still wins) and a tokio task deletes
//! `sess_*` files older than `session.gc_maxlifetime` from the effective save path, on
//! a blocking thread, every `--session-gc-interval-ms`. `--session-gc php` keeps PHP's
//! own behaviour. Both settings are read from PHP itself once the engine is up, so a
//! php.ini value is honoured.
//!
//! The default save path is a per-instance directory (mode 0700, owned by us) under the
//! temporary directory rather than `/tmp` itself, which every local user can list.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::GcMode;
use crate::metrics::{SESSION_FILES_DELETED, SESSION_SWEEPS, SESSION_SWEEP_ERRORS};

/// ini settings the server adds for sessions: `defaults` may be overridden by php.ini,
/// `forced` only by `-d`/TOML `ini` (they are applied like `-d`, before the user's).
pub(crate) struct IniPlan {
    pub defaults: Vec<(String, String)>,
    pub forced: Vec<(String, String)>,
    /// A pid-keyed private directory (listening on port 0), removed at exit: no later
    /// instance can reuse it, so keeping it would only litter the temporary directory.
    pub remove_at_exit: Option<PathBuf>,
}

/// Decides the session ini settings; creates the private save path when it is the one
/// that will be used.
pub(crate) fn plan(
    mode: GcMode,
    user_ini: &[(String, String)],
    port: u16,
) -> Result<IniPlan, String> {
    let user_sets = |k: &str| user_ini.iter().any(|(key, _)| key == k);
    let mut plan = IniPlan {
        defaults: Vec::new(),
        forced: Vec::new(),
        remove_at_exit: None,
    };
    if mode == GcMode::Background && !user_sets("session.gc_probability") {
        // Forced rather than a default: php.ini-production says 1, and the point is that
        // no request pays for a directory scan unless the operator asks for it.
        plan.forced
            .push(("session.gc_probability".into(), "0".into()));
    }
    if !user_sets("session.save_path") {
        let dir = private_dir(port)?;
        if port == 0 {
            plan.remove_at_exit = dir.parent().map(Path::to_path_buf);
            remove_dead_instances_dirs();
        }
        plan.defaults.push((
            "session.save_path".into(),
            dir.to_string_lossy().into_owned(),
        ));
    }
    Ok(plan)
}

/// `$TMPDIR/ferrophp-<uid>-<port>/sessions` (the pid when the port is 0), 0700 and ours.
/// Keyed by port rather than pid so a restarted instance keeps its sessions.
fn private_dir(port: u16) -> Result<PathBuf, String> {
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let key = if port == 0 {
        format!("pid{}", std::process::id())
    } else {
        port.to_string()
    };
    let base = std::env::temp_dir().join(format!("ferrophp-{uid}-{key}"));
    let dir = base.join("sessions");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create session directory {}: {e}", dir.display()))?;
    for d in [&base, &dir] {
        // Refuse a directory someone else made in advance (they could read our
        // sessions); tighten our own if its mode was loosened.
        let meta = std::fs::symlink_metadata(d).map_err(|e| e.to_string())?;
        if meta.uid() != uid || !meta.is_dir() {
            return Err(format!(
                "session directory {} exists and is not a directory owned by uid {uid}",
                d.display()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(dir)
}

/// Removes pid-keyed private directories of processes that no longer exist (killed
/// before they could remove their own), so ephemeral instances (tests, port 0) do not
/// accumulate directories.
fn remove_dead_instances_dirs() {
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let prefix = format!("ferrophp-{uid}-pid");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&prefix) else {
            continue;
        };
        let ours = entry.metadata().is_ok_and(|m| m.uid() == uid && m.is_dir());
        if ours && pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// What PHP will use, read back from PHP (php.ini may have set it).
#[derive(Debug, Clone)]
pub(crate) struct Effective {
    /// `session.save_handler`: only `files` leaves anything to sweep.
    pub handler: String,
    pub save_path: PathBuf,
    /// Subdirectory levels (`N;` prefix of save_path).
    pub depth: usize,
    pub max_lifetime: Duration,
}

/// Parses `ini_get` output of the probe script: save_path, gc_maxlifetime, save_handler.
pub(crate) fn parse_probe(out: &str) -> Option<Effective> {
    let mut lines = out.lines();
    let save_path = lines.next()?.trim();
    let max_lifetime: u64 = lines.next()?.trim().parse().ok()?;
    let handler = lines.next()?.trim().to_owned();
    // "N;MODE;/path" or "N;/path" or "/path".
    let parts: Vec<&str> = save_path.split(';').collect();
    let path = parts.last()?.trim();
    let depth = if parts.len() > 1 {
        parts[0].trim().parse().unwrap_or(0)
    } else {
        0
    };
    let path = if path.is_empty() {
        std::env::temp_dir()
    } else {
        PathBuf::from(path)
    };
    Some(Effective {
        handler,
        save_path: path,
        depth,
        max_lifetime: Duration::from_secs(max_lifetime),
    })
}

/// The probe script asked of PHP once at start-up.
pub(crate) const PROBE: &str = "<?php echo ini_get('session.save_path'), \"\\n\", \
                         ini_get('session.gc_maxlifetime'), \"\\n\", \
                         ini_get('session.save_handler'), \"\\n\";";

/// Deletes `sess_*` files under `dir` (down `depth` levels of subdirectories) not
/// modified for `max_lifetime` (PHP's files handler judges by mtime too). Returns the
/// number deleted.
pub(crate) fn sweep(dir: &Path, depth: usize, max_lifetime: Duration) -> u64 {
    let Some(cutoff) = SystemTime::now().checked_sub(max_lifetime) else {
        return 0;
    };
    let deleted = sweep_dir(dir, depth, cutoff);
    SESSION_SWEEPS.fetch_add(1, Ordering::Relaxed);
    deleted
}

fn sweep_dir(dir: &Path, depth: usize, cutoff: SystemTime) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut deleted = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth > 0 {
            deleted += sweep_dir(&entry.path(), depth - 1, cutoff);
            continue;
        }
        if !kind.is_file() || !name.as_encoded_bytes().starts_with(b"sess_") {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < cutoff);
        if !old {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => {
                deleted += 1;
                SESSION_FILES_DELETED.fetch_add(1, Ordering::Relaxed);
            }
            // Deleted meanwhile by PHP (session_destroy) or another sweeper: fine.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => {
                SESSION_SWEEP_ERRORS.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    deleted
}

/// Runs the sweep every `interval` on a blocking thread (a directory scan must not
/// stall the async workers), the first one right away.
pub(crate) fn spawn_sweeper(effective: Arc<Effective>, interval: Duration) {
    tracing::info!(
        save_path = %effective.save_path.display(),
        max_lifetime_s = effective.max_lifetime.as_secs(),
        interval_ms = interval.as_millis() as u64,
        "session files swept in the background"
    );
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let e = effective.clone();
            let started = std::time::Instant::now();
            let deleted =
                tokio::task::spawn_blocking(move || sweep(&e.save_path, e.depth, e.max_lifetime))
                    .await
                    .unwrap_or(0);
            if deleted > 0 {
                tracing::info!(
                    deleted,
                    micros = started.elapsed().as_micros() as u64,
                    "session sweep"
                );
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_output_with_depth() {
        let e = parse_probe("2;/var/s\n1440\nfiles\n").unwrap();
        assert_eq!(e.save_path, PathBuf::from("/var/s"));
        assert_eq!(e.depth, 2);
        assert_eq!(e.max_lifetime, Duration::from_secs(1440));
        assert_eq!(e.handler, "files");
        let e = parse_probe("/x\n60\nredis\n").unwrap();
        assert_eq!((e.depth, e.save_path), (0, PathBuf::from("/x")));
        assert_eq!(e.handler, "redis");
    }
}
