//! The release being served: the document root and the worker scripts as their configured
//! paths resolve now, and the switch to the next release.
//!
//! Deployer and Capistrano lay an application out as `/srv/app/releases/N` with a
//! `/srv/app/current -> releases/N` symlink switched atomically at each deploy, and the
//! server pointed at `/srv/app/current/public`. Everything downstream works on resolved
//! paths (routing canonicalizes, so `SCRIPT_FILENAME`, `DOCUMENT_ROOT` and `__DIR__` name
//! `releases/N/...`, and OPcache keys its entries by those paths), so the one thing to
//! redo at a switch is the resolution of the configured paths. A [`Site`] holds one
//! resolution (router, worker routes, document root); [`Sites`] holds the current one and
//! replaces it:
//!
//! - on demand ([`Sites::reload`]: SIGHUP, SIGUSR1, the admin `POST /workers/restart`):
//!   the paths are resolved again, the new site takes every request from then on, each
//!   PHP thread empties its realpath cache before its next request, and the workers roll
//!   over to the new script paths (a rolling restart, `worker/src/pool.rs`);
//! - by itself: the configured root is resolved again at most once per route-cache
//!   interval (`--route-cache-ms`, 1 s by default; 0: for every request, as nginx's
//!   `$realpath_root` does), on the request path of whichever request comes first, so a
//!   switched link is served within that interval even if nobody says so.
//!
//! A request holds the `Site` it was routed with until it ends: one in flight at the
//! switch runs, and reports in `$_SERVER`, the release it started on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use worker::EngineControl;

use crate::routing::Router;
use crate::workers::{WorkerRouter, WorkerSpec};

/// One resolution of the configured paths: what routes and runs a request.
pub(crate) struct Site {
    pub(crate) router: Router,
    pub(crate) workers: WorkerRouter,
    /// The canonical document root, as `$_SERVER['DOCUMENT_ROOT']`.
    pub(crate) document_root: Arc<str>,
}

/// How a site is built from the configured paths.
pub(crate) struct Layout {
    /// The document root as configured (absolute, links unresolved).
    pub(crate) root: PathBuf,
    pub(crate) no_php_dirs: Vec<PathBuf>,
    pub(crate) route_cache: Duration,
    /// A path naming nothing goes to the root's index.php (off for `php-cli -S`).
    pub(crate) front_controller: bool,
    /// The workers as configured; their scripts absolute, links unresolved.
    pub(crate) workers: Vec<WorkerSpec>,
}

impl Layout {
    /// `root` and the worker scripts made absolute against the current directory (a
    /// later reload resolves them against the same one), symlinks left in place.
    pub(crate) fn new(
        root: &Path,
        no_php_dirs: &[PathBuf],
        route_cache: Duration,
        front_controller: bool,
        workers: &[WorkerSpec],
    ) -> Result<Layout, String> {
        let absolute =
            |p: &Path| std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()));
        let workers = workers
            .iter()
            .map(|spec| {
                Ok(WorkerSpec {
                    script: absolute(&spec.script)?,
                    ..spec.clone()
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Layout {
            root: absolute(root)?,
            no_php_dirs: no_php_dirs.to_vec(),
            route_cache,
            front_controller,
            workers,
        })
    }

    /// The worker scripts as they resolve now.
    pub(crate) fn worker_scripts(&self) -> Result<Vec<PathBuf>, String> {
        self.workers
            .iter()
            .map(|w| {
                std::fs::canonicalize(&w.script)
                    .map_err(|e| format!("worker script {}: {e}", w.script.display()))
            })
            .collect()
    }

    /// A site from the paths as they resolve now; `scripts` from
    /// [`Layout::worker_scripts`].
    pub(crate) fn site(&self, scripts: &[PathBuf]) -> Result<Site, String> {
        let router = Router::new(&self.root)
            .map_err(|e| format!("document root {}: {e}", self.root.display()))?
            .with_no_php_dirs(&self.no_php_dirs)
            .map_err(|e| e.to_string())?
            .with_cache(self.route_cache);
        let router = if self.front_controller {
            router
        } else {
            router.without_front_controller()
        };
        let workers = WorkerRouter::new(scripts, &self.workers)?;
        let document_root = router.document_root().to_string_lossy().into();
        Ok(Site {
            router,
            workers,
            document_root,
        })
    }
}

/// The current site, and the switch to the next.
pub(crate) struct Sites {
    layout: Layout,
    current: RwLock<Arc<Site>>,
    engine: EngineControl,
    /// Milliseconds since `epoch` of the last look at the root (see the module docs).
    last_check_ms: AtomicU64,
    check_every_ms: u64,
    epoch: Instant,
    /// One reload at a time.
    reloading: Mutex<()>,
}

/// What a reload found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reloaded {
    /// The canonical document root serving from now on.
    pub(crate) root: PathBuf,
    /// The root or a worker script resolves to another place than before.
    pub(crate) moved: bool,
}

impl Sites {
    /// `site` is `layout`'s site at start-up; `engine` runs its workers.
    pub(crate) fn new(layout: Layout, site: Site, engine: EngineControl) -> Sites {
        Sites {
            check_every_ms: layout.route_cache.as_millis() as u64,
            layout,
            current: RwLock::new(Arc::new(site)),
            engine,
            last_check_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            reloading: Mutex::new(()),
        }
    }

    /// The site a new request is served by (after a look at the root, when one is due).
    pub(crate) fn current(&self) -> Arc<Site> {
        if self.check_due() {
            self.check();
        }
        self.snapshot()
    }

    fn snapshot(&self) -> Arc<Site> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// True for one caller per interval.
    fn check_due(&self) -> bool {
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.last_check_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= self.check_every_ms
            && self
                .last_check_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Resolves the configured root and worker scripts; when either moved, switches to
    /// them as [`Sites::reload`] does. Skipped while a reload runs (it resolves anyway).
    fn check(&self) {
        let Ok(_one) = self.reloading.try_lock() else {
            return;
        };
        let Ok(root) = std::fs::canonicalize(&self.layout.root) else {
            // Mid-switch or gone: keep serving what resolved last.
            return;
        };
        let site = self.snapshot();
        let moved = root != site.router.document_root()
            || self
                .layout
                .worker_scripts()
                .is_ok_and(|scripts| !site.workers.same_scripts(&scripts));
        if moved {
            match self.switch(false) {
                Ok(r) => tracing::info!(
                    root = %r.root.display(),
                    "the document root moved (a switched symlink): serving the new release"
                ),
                Err(e) => tracing::warn!(
                    "the document root moved, but: {e}; still serving the previous release"
                ),
            }
        }
    }

    /// Resolves the configured paths again and serves from there on (see the module docs),
    /// and rolls the workers over (always: the code may have changed in place too). On an
    /// error (the new root or a worker script is missing) nothing changes.
    pub(crate) fn reload(&self) -> Result<Reloaded, String> {
        let _one = self.reloading.lock().unwrap_or_else(|e| e.into_inner());
        self.switch(true)
    }

    fn switch(&self, restart_workers: bool) -> Result<Reloaded, String> {
        let scripts = self.layout.worker_scripts()?;
        let site = self.layout.site(&scripts)?;
        let root = site.router.document_root().to_path_buf();
        let old = self.snapshot();
        let moved = root != old.router.document_root() || !old.workers.same_scripts(&scripts);
        if moved {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(site);
            tracing::info!(
                from = %old.router.document_root().display(),
                to = %root.display(),
                "document root resolved again"
            );
        }
        // After the switch: a thread that empties its cache resolves into the new release.
        self.engine.forget_resolved_paths();
        if restart_workers || moved {
            let root = self.snapshot().document_root.clone();
            self.engine.restart_workers_at(&scripts, Some(root));
        }
        Ok(Reloaded { root, moved })
    }
}

/// Reloads on SIGHUP and SIGUSR1 until the process ends (SIGUSR1 restarted the workers
/// before reloads existed; it now does the same as SIGHUP, which is what a deploy sends).
pub(crate) fn reload_on_signals(sites: Arc<Sites>) {
    use tokio::signal::unix::{signal, SignalKind};
    for (kind, name) in [
        (SignalKind::hangup(), "SIGHUP"),
        (SignalKind::user_defined1(), "SIGUSR1"),
    ] {
        let Ok(mut signals) = signal(kind) else {
            tracing::warn!("cannot handle {name}: no reload on it");
            continue;
        };
        let sites = sites.clone();
        tokio::spawn(async move {
            while signals.recv().await.is_some() {
                tracing::info!("{name}: restarting workers, resolving the document root again");
                let sites = sites.clone();
                let reloaded = tokio::task::spawn_blocking(move || sites.reload()).await;
                log_reload(name, reloaded.unwrap_or_else(|e| Err(e.to_string())));
            }
        });
    }
}

/// The log line of a requested reload.
pub(crate) fn log_reload(source: &str, reloaded: Result<Reloaded, String>) {
    match reloaded {
        Ok(r) => tracing::info!(
            source,
            root = %r.root.display(),
            moved = r.moved,
            "reloaded"
        ),
        Err(e) => tracing::error!(
            source,
            "reload refused, still serving the previous release: {e}"
        ),
    }
}
