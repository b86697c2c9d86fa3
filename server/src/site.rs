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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// `/tmp/.../current -> releases/1`, `releases/1/public/index.php`, and its layout.
    fn layout() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let public = dir.path().join("releases/1/public");
        std::fs::create_dir_all(&public).unwrap();
        std::fs::write(public.join("index.php"), "<?php").unwrap();
        std::os::unix::fs::symlink("releases/1", dir.path().join("current")).unwrap();
        let layout = Layout::new(
            &dir.path().join("current/public"),
            &[],
            Duration::from_secs(1),
            true,
            &[],
        )
        .unwrap();
        (dir, layout)
    }

    #[test]
    fn a_site_resolves_the_link_and_a_new_one_sees_the_switch() {
        let (dir, layout) = layout();
        let first = layout.site(&[]).unwrap();
        assert!(first.document_root.ends_with("releases/1/public"));
        let public = dir.path().join("releases/2/public");
        std::fs::create_dir_all(&public).unwrap();
        std::fs::write(public.join("index.php"), "<?php").unwrap();
        let tmp = dir.path().join("current.tmp");
        std::os::unix::fs::symlink("releases/2", &tmp).unwrap();
        std::fs::rename(&tmp, dir.path().join("current")).unwrap();
        // The first site keeps routing in release 1 (requests routed with it finish
        // there); a site built now routes in release 2.
        assert!(matches!(
            first.router.route("/index.php"),
            crate::routing::Route::Php { script_filename, .. } if script_filename.starts_with(dir.path().canonicalize().unwrap().join("releases/1"))
        ));
        let second = layout.site(&[]).unwrap();
        assert!(second.document_root.ends_with("releases/2/public"));
    }

    fn thread_cpu() -> Duration {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage fills the struct it is given; RUSAGE_THREAD is Linux's.
        let usage = unsafe {
            libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr());
            usage.assume_init()
        };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        tv(usage.ru_utime) + tv(usage.ru_stime)
    }

    /// (wall, CPU) per call of `f`, over `n` calls.
    fn per_call(n: u32, mut f: impl FnMut()) -> (Duration, Duration) {
        let (wall, cpu) = (Instant::now(), thread_cpu());
        for _ in 0..n {
            f();
        }
        (wall.elapsed() / n, (thread_cpu() - cpu) / n)
    }

    /// What noticing a switched `current` link costs a request, against what routing
    /// costs it already (a route-cache hit): the lazy check ferrophp does (a clock read
    /// and an atomic load; the resolution itself once per interval) and resolving the
    /// root for every request (`--route-cache-ms 0`, nginx's `$realpath_root`).
    ///
    /// cargo test --release -p ferrophp --lib site::tests::bench -- --ignored --nocapture
    #[test]
    #[ignore = "benchmark; prints numbers"]
    fn bench_root_resolution_per_request() {
        let (_dir, layout) = layout();
        let site = layout.site(&[]).unwrap();
        let n = 200_000;
        let epoch = Instant::now();
        let last = AtomicU64::new(0);
        let route = per_call(n, || {
            std::hint::black_box(site.router.route("/index.php"));
        });
        let current = RwLock::new(Arc::new(layout.site(&[]).unwrap()));
        // What `Sites::current` does when no look is due: the clock, the atomic, and the
        // snapshot (a read lock and an Arc clone; single-threaded here, so without the
        // cache-line traffic of many I/O threads).
        let lazy = per_call(n, || {
            let now = epoch.elapsed().as_millis() as u64;
            std::hint::black_box(now.saturating_sub(last.load(Ordering::Relaxed)) >= 1000);
            std::hint::black_box(current.read().unwrap().clone());
        });
        let every = per_call(n, || {
            let root = std::fs::canonicalize(&layout.root).unwrap();
            std::hint::black_box(root == site.router.document_root());
        });
        let show = |what: &str, (wall, cpu): (Duration, Duration)| {
            println!(
                "{what:<44} wall {:>8.0} ns  cpu {:>8.0} ns  ratio to a route-cache hit {:.2} (cpu {:.2})",
                wall.as_nanos(),
                cpu.as_nanos(),
                wall.as_nanos() as f64 / route.0.as_nanos() as f64,
                cpu.as_nanos() as f64 / route.1.as_nanos().max(1) as f64,
            );
        };
        show("route-cache hit (baseline)", route);
        show("lazy check (once per --route-cache-ms)", lazy);
        show("root resolved for every request", every);
    }
}
