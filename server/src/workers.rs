//! Worker scripts on the HTTP side: parsing `--worker` specs and `[[worker]]` tables,
//! deciding which requests a worker serves, and restarting workers on `--watch` file
//! changes. (SIGHUP, SIGUSR1 and the admin endpoint reload the whole release, workers
//! included: `site.rs`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use worker::{EngineControl, WorkerConfig};

/// One worker as configured (command line or file).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// The worker script, relative to the current directory.
    pub script: PathBuf,
    /// PHP threads for this worker [default: 2 x CPUs].
    pub threads: Option<usize>,
    /// Most threads autoscaling may give this worker; `threads` is then the floor
    /// [default: threads, no autoscaling].
    pub max_threads: Option<usize>,
    /// Extra environment for this worker's boot and requests.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// URL path pattern (`*` wildcards) this worker serves regardless of routing, e.g.
    /// `/api/*`. Without it, the worker serves requests routed to its script file.
    #[serde(rename = "match")]
    pub match_path: Option<String>,
    /// Requests per thread before its PHP state is rebuilt [default: unlimited].
    pub max_requests: Option<u64>,
    /// The memory guard: restart a thread's script once its PHP memory grew this much
    /// above its level after boot (`64M`, `50%`) [default: off].
    pub memory_growth: Option<String>,
}

impl WorkerSpec {
    /// `path/to/worker.php`, `path/to/worker.php,N` or `path/to/worker.php,N,MAX`.
    pub fn parse_flag(spec: &str) -> Result<WorkerSpec, String> {
        let number = |n: &str| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| format!("--worker {spec}: thread counts must be numbers"))
        };
        // Counts come from the right, so a path may contain commas.
        let mut path = spec;
        let mut counts = Vec::new();
        while counts.len() < 2 {
            match path.rsplit_once(',') {
                Some((rest, n)) if n.trim().parse::<usize>().is_ok() || counts.is_empty() => {
                    counts.insert(0, number(n)?);
                    path = rest;
                }
                _ => break,
            }
        }
        let (threads, max_threads) = match counts[..] {
            [] => (None, None),
            [n] => (Some(n), None),
            [n, max] => (Some(n), Some(max)),
            _ => unreachable!("at most two counts are taken"),
        };
        Ok(WorkerSpec {
            script: PathBuf::from(path),
            threads,
            max_threads,
            env: Default::default(),
            match_path: None,
            max_requests: None,
            memory_growth: None,
        })
    }

    /// The engine's configuration of this worker: its script resolved, its threads
    /// (`default_threads` unless set) and limits checked.
    pub fn to_config(&self, default_threads: usize) -> Result<WorkerConfig, String> {
        let script = std::fs::canonicalize(&self.script)
            .map_err(|e| format!("worker script {}: {e}", self.script.display()))?;
        let mut config = WorkerConfig::new(script, self.threads.unwrap_or(default_threads).max(1));
        config.max_threads = match self.max_threads {
            Some(max) if max < config.threads => {
                return Err(format!(
                    "worker {}: max_threads ({max}) must be at least threads ({})",
                    self.script.display(),
                    config.threads
                ))
            }
            Some(max) => max,
            None => config.threads,
        };
        config.env = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        config.max_requests = self.max_requests.unwrap_or(0);
        config.memory_growth = self
            .memory_growth
            .as_deref()
            .map(worker::MemoryGrowth::parse)
            .transpose()
            .map_err(|e| format!("worker {}: {e}", self.script.display()))?;
        Ok(config)
    }
}

/// Picks the worker for a request.
pub(crate) struct WorkerRouter {
    /// Each worker's script (shared with the requests routed to it) and `match` pattern.
    workers: Vec<(Arc<Path>, Option<GlobMatcher>)>,
}

impl WorkerRouter {
    /// `scripts`: each worker's script, canonical, in the order of `specs`.
    pub(crate) fn new(scripts: &[PathBuf], specs: &[WorkerSpec]) -> Result<WorkerRouter, String> {
        let workers = scripts
            .iter()
            .zip(specs)
            .map(|(script, spec)| {
                let matcher = match &spec.match_path {
                    Some(pattern) => Some(
                        Glob::new(pattern)
                            .map_err(|e| format!("worker match {pattern:?}: {e}"))?
                            .compile_matcher(),
                    ),
                    None => None,
                };
                Ok((Arc::from(script.as_path()), matcher))
            })
            .collect::<Result<_, String>>()?;
        Ok(WorkerRouter { workers })
    }

    /// The worker whose `match` pattern covers `path`.
    pub(crate) fn by_path(&self, path: &str) -> Option<usize> {
        self.workers
            .iter()
            .position(|(_, m)| m.as_ref().is_some_and(|m| m.is_match(path)))
    }

    pub(crate) fn script(&self, index: usize) -> &Arc<Path> {
        &self.workers[index].0
    }

    /// Whether the workers' scripts are `scripts`, in order.
    pub(crate) fn same_scripts(&self, scripts: &[PathBuf]) -> bool {
        self.workers.len() == scripts.len()
            && self
                .workers
                .iter()
                .zip(scripts)
                .all(|((s, _), o)| **s == **o)
    }

    /// The worker whose script is the routed script file.
    pub(crate) fn by_script(&self, script: &Path) -> Option<usize> {
        self.workers
            .iter()
            .position(|(s, m)| m.is_none() && **s == *script)
    }
}

/// What else a change is told to, after the workers restarted: the files changed in the
/// burst (`--hot-reload` publishes them on the Mercure hub).
pub(crate) type OnChange = Box<dyn Fn(Vec<PathBuf>) + Send>;

/// Restarts workers when a file matching one of `patterns` changes (debounced), then
/// calls `on_change`, until the returned watcher is dropped.
pub(crate) fn watch(
    engine: EngineControl,
    patterns: &[String],
    on_change: Option<OnChange>,
) -> Result<notify::RecommendedWatcher, String> {
    use notify::{RecursiveMode, Watcher};
    let mut builder = GlobSetBuilder::new();
    let mut roots: Vec<PathBuf> = Vec::new();
    for pattern in patterns {
        let absolute = if Path::new(pattern).is_absolute() {
            pattern.clone()
        } else {
            format!(
                "{}/{pattern}",
                std::env::current_dir()
                    .map_err(|e| e.to_string())?
                    .display()
            )
        };
        builder.add(Glob::new(&absolute).map_err(|e| format!("--watch {pattern:?}: {e}"))?);
        roots.push(glob_root(&absolute));
    }
    let set: GlobSet = builder.build().map_err(|e| e.to_string())?;
    let (tx, rx) = std::sync::mpsc::channel::<Vec<PathBuf>>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let matched: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|p| set.is_match(p))
                .collect();
            if !matched.is_empty() {
                let _ = tx.send(matched);
            }
        }
    })
    .map_err(|e| format!("cannot watch files: {e}"))?;
    for root in roots {
        watcher
            .watch(&root, RecursiveMode::Recursive)
            .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
    }
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || {
            while let Ok(mut changed) = rx.recv() {
                // Editors write in bursts: wait for quiet before restarting once.
                while let Ok(more) = rx.recv_timeout(Duration::from_millis(200)) {
                    changed.extend(more);
                }
                changed.sort();
                changed.dedup();
                tracing::info!("files changed: restarting workers");
                engine.restart_workers();
                if let Some(on_change) = &on_change {
                    on_change(changed);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(watcher)
}

/// The longest leading directory of a glob with no wildcard in it.
fn glob_root(pattern: &str) -> PathBuf {
    let mut root = PathBuf::new();
    for part in Path::new(pattern).components() {
        let s = part.as_os_str().to_string_lossy();
        if s.contains(['*', '?', '[', '{']) {
            break;
        }
        root.push(part);
    }
    if root.is_file() {
        root.pop();
    }
    root
}
