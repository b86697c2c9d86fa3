//! Background work mounted into the server (issue 38; docs/jobs.md): the job store the
//! engine opens for `Ferrophp\Jobs` (`--data-dir`'s `jobs/`, or `--jobs-backend
//! redis://...`), the background workers' engine configuration, and the scheduler of
//! `[[schedule]]` entries, whose runs go to PHP threads: a `script` runs on the classic
//! pool (so it may dispatch jobs), a `command` as `ferrophp php-cli <command>` in a child
//! process, as cron would run it. Each run is waited for on a thread of its own (the
//! scheduler's runner must hand runs off) and logged with its outcome and duration.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use worker::{BackgroundConfig, EngineControl};

use crate::config::ServeConfig;

/// Where jobs are kept: Redis when `--jobs-backend` names one, else `<data-dir>/jobs`
/// (None without a data directory: `Ferrophp\Jobs` then throws, saying so).
pub(crate) fn queue_config(config: &ServeConfig) -> Option<jobs::QueueConfig> {
    if let Some(url) = &config.jobs.redis {
        return Some(jobs::QueueConfig::redis(url.clone()));
    }
    let data_dir = config.data_dir.as_ref()?;
    let mut queue = jobs::QueueConfig::local(data_dir.clone());
    if let jobs::BackendConfig::Local { durability, .. } = &mut queue.backend {
        *durability = config.jobs.durability;
    }
    Some(queue)
}

/// The background workers for the engine: scripts resolved, the server's environment
/// under each one's own.
pub(crate) fn background_configs(config: &ServeConfig) -> Result<Vec<BackgroundConfig>, String> {
    config
        .jobs
        .background
        .iter()
        .map(|spec| {
            // Absolute, links kept: after a deploy switched `current`, the next run (a
            // reload restarts them) runs the new release's script.
            let script = std::path::absolute(&spec.script)
                .ok()
                .filter(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "background worker script {}: not a file",
                        spec.script.display()
                    )
                })?;
            let mut bg = BackgroundConfig::new(script, spec.threads.unwrap_or(1).max(1));
            bg.name = Some(spec.script.display().to_string());
            bg.stop_timeout = match &spec.stop_timeout {
                Some(t) => crate::config::parse_duration(t)?,
                None => config.jobs.stop_timeout,
            };
            bg.env = config
                .env
                .iter()
                .filter(|(k, _)| !spec.env.contains_key(k))
                .cloned()
                .chain(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())))
                .collect();
            Ok(bg)
        })
        .collect()
}

/// The scheduler of the `[[schedule]]` entries, once it started.
pub(crate) type SchedulerSlot = Arc<std::sync::Mutex<Option<jobs::Scheduler>>>;

/// The process's scheduler, for `/metrics`.
static SCHEDULER: std::sync::OnceLock<std::sync::Weak<std::sync::Mutex<Option<jobs::Scheduler>>>> =
    std::sync::OnceLock::new();

/// Each schedule entry's totals, while a scheduler runs.
pub(crate) fn schedule_totals() -> Vec<(String, jobs::EntryTotals)> {
    let Some(slot) = SCHEDULER.get().and_then(std::sync::Weak::upgrade) else {
        return Vec::new();
    };
    let scheduler = slot.lock().unwrap();
    scheduler
        .as_ref()
        .map(jobs::Scheduler::totals)
        .unwrap_or_default()
}

/// Starts the scheduler when `[[schedule]]` entries exist, over the job store (which
/// keeps each entry's last run, and on Redis the leases that make one instance run it).
/// When another process holds the local store (the one a `--supervise` reload replaces),
/// a thread tries again every second until it is free, and starts it then.
pub(crate) fn start_scheduler(
    config: &ServeConfig,
    control: EngineControl,
) -> Result<Option<SchedulerSlot>, String> {
    if config.jobs.schedules.is_empty() {
        return Ok(None);
    }
    let slot: SchedulerSlot = Arc::default();
    let _ = SCHEDULER.set(Arc::downgrade(&slot));
    let runner = Arc::new(Runner {
        control,
        env: config.env.clone(),
        root: config.root.clone(),
    });
    let entries = config.jobs.schedules.clone();
    match worker::open_jobs_queue() {
        Ok(queue) => {
            *slot.lock().unwrap() = Some(scheduler(entries, &queue, runner)?);
        }
        Err(e) if worker::jobs_queue_held_elsewhere(&e) => {
            tracing::warn!("[[schedule]]: {e}: the scheduler starts once it lets go");
            let waiting = slot.clone();
            std::thread::Builder::new()
                .name("schedule-wait".into())
                .spawn(move || loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    let mut slot = waiting.lock().unwrap();
                    // The server stopped meanwhile (stop_scheduler let go of its handle).
                    if Arc::strong_count(&waiting) == 1 {
                        return;
                    }
                    match worker::open_jobs_queue() {
                        Ok(queue) => {
                            match scheduler(entries.clone(), &queue, runner.clone()) {
                                Ok(s) => *slot = Some(s),
                                Err(e) => tracing::error!("{e}"),
                            }
                            return;
                        }
                        Err(e) if worker::jobs_queue_held_elsewhere(&e) => {}
                        Err(e) => {
                            tracing::error!("[[schedule]]: {e}");
                            return;
                        }
                    }
                })
                .map_err(|e| format!("[[schedule]]: {e}"))?;
        }
        Err(e) => return Err(format!("[[schedule]]: {e}")),
    }
    Ok(Some(slot))
}

fn scheduler(
    entries: Vec<jobs::ScheduleEntry>,
    queue: &jobs::Queue,
    runner: Arc<Runner>,
) -> Result<jobs::Scheduler, String> {
    let scheduler =
        jobs::Scheduler::start(entries, queue.schedule_store(), move |run: jobs::Run| {
            let runner = runner.clone();
            let spawned = std::thread::Builder::new()
                .name("schedule-run".into())
                .spawn(move || runner.run(run));
            if let Err(e) = spawned {
                tracing::error!("schedule: cannot start a run's thread: {e}");
            }
        })
        .map_err(|e| format!("[[schedule]]: {e}"))?;
    for (name, next) in scheduler.next_fires() {
        tracing::info!(entry = %name, next = ?next, "schedule: entry armed");
    }
    Ok(scheduler)
}

struct Runner {
    control: EngineControl,
    env: Vec<(String, String)>,
    root: std::path::PathBuf,
}

impl Runner {
    /// Runs one scheduled task to its end (on its own thread) and reports the outcome.
    fn run(&self, run: jobs::Run) {
        let started = Instant::now();
        let outcome = match &run.task {
            jobs::Task::Script(script) => self.script(Path::new(script)),
            jobs::Task::Command(command) | jobs::Task::Callable(command) => self.command(command),
        };
        let ms = started.elapsed().as_millis() as u64;
        match &outcome {
            Ok(()) => {
                tracing::info!(entry = %run.entry, duration_ms = ms, catch_up = run.catch_up, "schedule: run succeeded")
            }
            Err(why) => {
                tracing::warn!(entry = %run.entry, duration_ms = ms, "schedule: run failed: {why}")
            }
        }
        run.finish(match outcome {
            Ok(()) => jobs::RunOutcome::Succeeded,
            Err(why) => jobs::RunOutcome::Failed(why),
        });
    }

    fn script(&self, script: &Path) -> Result<(), String> {
        let mut request = worker::ScriptRequest::new(script, Box::new(LogSink));
        request.import_environment = true;
        request.server_vars = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
        let rx = self
            .control
            .submit(request)
            .map_err(|_| "the server is stopping".to_string())?;
        let outcome = rx
            .blocking_recv()
            .map_err(|_| "the server is stopping".to_string())?;
        match (outcome.not_found, outcome.exit_status) {
            (true, _) => Err(format!("script {} not found", script.display())),
            (false, 0) => Ok(()),
            (false, status) => Err(format!("exit status {status}")),
        }
    }

    fn command(&self, command: &str) -> Result<(), String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find ferrophp: {e}"))?;
        let output = std::process::Command::new(exe)
            .arg("php-cli")
            .args(command.split_whitespace())
            .current_dir(self.root.parent().unwrap_or(&self.root))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {command:?}: {e}"))?;
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            tracing::info!(target: "php", "schedule output: {line}");
        }
        for line in String::from_utf8_lossy(&output.stderr).lines() {
            tracing::warn!(target: "php", "schedule stderr: {line}");
        }
        if output.status.success() {
            Ok(())
        } else {
            Err(format!("{command:?}: {}", output.status))
        }
    }
}

/// Stops the scheduler: no new runs (runs under way finish on the PHP threads). Blocks.
pub(crate) fn stop_scheduler(slot: Option<SchedulerSlot>) {
    let Some(slot) = slot else { return };
    let scheduler = slot.lock().unwrap().take();
    // The waiting thread (if any) sees it is the last holder and gives up.
    drop(slot);
    if let Some(s) = scheduler {
        s.stop();
    }
}

/// A scheduled script's output goes to the log.
struct LogSink;

impl worker::ResponseSink for LogSink {
    fn send_head(&mut self, _head: worker::ResponseHead) -> Result<(), worker::Disconnected> {
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), worker::Disconnected> {
        tracing::info!(target: "php", "schedule output: {}", String::from_utf8_lossy(bytes).trim_end());
        Ok(())
    }
}
