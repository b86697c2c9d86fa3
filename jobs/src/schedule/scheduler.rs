//! The scheduler's thread: sleeps until the next fire time (or a stop), claims the run in
//! the [`ScheduleStore`], and hands a [`Run`] to the caller's runner, which runs it
//! elsewhere (a PHP thread) and calls [`Run::finish`]; until then the entry counts as
//! running and, unless overlap is allowed, its next fires are skipped.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::spec::{MissedRuns, ScheduleEntry, Task};
use super::{Claim, ClaimArgs, ScheduleStore};
use crate::error::{JobsError, Result};
use crate::job::{from_ms, now_ms};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// It completed.
    Succeeded,
    /// It failed (an exception, a non-zero exit, a fatal error), with why.
    Failed(String),
}

/// Counts for one entry since the scheduler started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryTotals {
    /// Runs handed to the runner.
    pub started: u64,
    /// Runs that finished successfully.
    pub succeeded: u64,
    /// Runs that failed (or were dropped unfinished).
    pub failed: u64,
    /// Fires skipped because the previous run was still going.
    pub skipped_overlap: u64,
    /// Missed fire times skipped (at start by [`MissedRuns::Skip`], or while late).
    pub skipped_missed: u64,
    /// Fires another instance claimed.
    pub claimed_elsewhere: u64,
    /// Fires that could not be claimed because the store failed.
    pub store_errors: u64,
    /// The last finished run's duration in ms.
    pub last_duration_ms: u64,
}

/// A run to do now. Dropping it unfinished counts as a failure.
pub struct Run {
    /// The entry's name.
    pub entry: String,
    /// What to run.
    pub task: Task,
    /// The fire time this run is for.
    pub fire_time: SystemTime,
    /// True when this run catches up a fire time missed while no instance ran.
    pub catch_up: bool,
    /// Identifies this run in logs and traces.
    pub run_id: u64,
    started: Instant,
    shared: Option<Arc<Shared>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("entry", &self.entry)
            .field("task", &self.task)
            .field("fire_time", &self.fire_time)
            .field("catch_up", &self.catch_up)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl Run {
    /// Reports the run's end; the entry may run again.
    pub fn finish(mut self, outcome: RunOutcome) {
        self.end(&outcome);
    }

    fn end(&mut self, outcome: &RunOutcome) {
        let Some(shared) = self.shared.take() else {
            return;
        };
        let elapsed = self.started.elapsed();
        match outcome {
            RunOutcome::Succeeded => {
                tracing::info!(entry = %self.entry, run_id = self.run_id, ms = elapsed.as_millis() as u64, "schedule: run finished");
            }
            RunOutcome::Failed(why) => {
                tracing::warn!(entry = %self.entry, run_id = self.run_id, ms = elapsed.as_millis() as u64, error = %why, "schedule: run failed");
            }
        }
        if let Err(e) = shared.store.finish(&self.entry, self.run_id) {
            tracing::warn!(entry = %self.entry, error = %e, "schedule: cannot record a run's end");
        }
        let mut state = shared.lock();
        if let Some(e) = state
            .entries
            .iter_mut()
            .find(|e| e.entry.name == self.entry)
        {
            e.running = e.running.saturating_sub(1);
            e.totals.last_duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
            match outcome {
                RunOutcome::Succeeded => e.totals.succeeded += 1,
                RunOutcome::Failed(_) => e.totals.failed += 1,
            }
        }
        drop(state);
        shared.wake.notify_all();
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.end(&RunOutcome::Failed(
            "the run was dropped without being finished".into(),
        ));
    }
}

struct EntryState {
    entry: ScheduleEntry,
    /// The next fire time (ms), or none when the trigger never fires again.
    next_fire: Option<u64>,
    catch_up: bool,
    running: u32,
    totals: EntryTotals,
}

impl EntryState {
    fn due_ms(&self) -> Option<u64> {
        self.next_fire
            .map(|f| f.saturating_add(self.entry.jitter_for(f)))
    }
}

struct State {
    entries: Vec<EntryState>,
    stopping: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    store: Arc<dyn ScheduleStore>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

type Runner = dyn Fn(Run) + Send + Sync;

/// A running scheduler; stop it with [`stop`](Self::stop) (or drop it).
pub struct Scheduler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

impl Scheduler {
    /// Starts firing `entries`, handing each run to `runner` (called on the scheduler's
    /// thread: it must hand the run off, not do it). Applies each entry's missed-run
    /// policy against the last fire times in `store`.
    pub fn start(
        entries: Vec<ScheduleEntry>,
        store: Arc<dyn ScheduleStore>,
        runner: impl Fn(Run) + Send + Sync + 'static,
    ) -> Result<Self> {
        let mut names = std::collections::HashSet::new();
        for e in &entries {
            e.validate()?;
            if !names.insert(e.name.clone()) {
                return Err(JobsError::InvalidArgument(format!(
                    "two schedule entries are named {:?}",
                    e.name
                )));
            }
        }
        let now = now_ms();
        let mut states = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut totals = EntryTotals::default();
            let last = store.last_fire(&entry.name).unwrap_or_else(|e| {
                tracing::warn!(entry = %entry.name, error = %e, "schedule: cannot read the last run");
                None
            });
            let missed = match (last, entry.trigger.last_at_or_before(now)) {
                (Some(last), Some(latest)) if latest > last => Some(latest),
                _ => None,
            };
            let (next_fire, catch_up) = match (missed, entry.missed) {
                (Some(latest), MissedRuns::RunOnce) => (Some(latest), true),
                (Some(_), MissedRuns::Skip) => {
                    totals.skipped_missed += 1;
                    tracing::info!(entry = %entry.name, "schedule: skipping runs missed while stopped");
                    (entry.trigger.next_after(now), false)
                }
                (None, _) => (entry.trigger.next_after(now), false),
            };
            states.push(EntryState {
                entry,
                next_fire,
                catch_up,
                running: 0,
                totals,
            });
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: states,
                stopping: false,
            }),
            wake: Condvar::new(),
            store,
        });
        let runner: Arc<Runner> = Arc::new(runner);
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("jobs-scheduler".into())
                .spawn(move || run_loop(&shared, &*runner))
                .map_err(|e| {
                    JobsError::Storage(format!("cannot start the scheduler thread: {e}"))
                })?
        };
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Each entry's totals, by name.
    pub fn totals(&self) -> Vec<(String, EntryTotals)> {
        self.shared
            .lock()
            .entries
            .iter()
            .map(|e| (e.entry.name.clone(), e.totals))
            .collect()
    }

    /// Each entry's next fire time.
    pub fn next_fires(&self) -> Vec<(String, Option<SystemTime>)> {
        self.shared
            .lock()
            .entries
            .iter()
            .map(|e| (e.entry.name.clone(), e.next_fire.map(from_ms)))
            .collect()
    }

    /// Stops firing (runs already handed out go on; finishing them is harmless).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// A fire time that came, reserved under the lock and claimed outside it.
struct Due {
    index: usize,
    fire_ms: u64,
    catch_up: bool,
    entry: ScheduleEntry,
}

fn run_loop(shared: &Arc<Shared>, runner: &Runner) {
    let mut state = shared.lock();
    while !state.stopping {
        let now = now_ms();
        let mut due = Vec::new();
        for (index, e) in state.entries.iter_mut().enumerate() {
            let (Some(fire_ms), Some(due_ms)) = (e.next_fire, e.due_ms()) else {
                continue;
            };
            if due_ms > now {
                continue;
            }
            let catch_up = std::mem::take(&mut e.catch_up);
            // The next fire after now: fires missed while this one was late are skipped.
            e.next_fire = e.entry.trigger.next_after(fire_ms.max(now));
            if let (Some(next), Some(latest)) =
                (e.next_fire, e.entry.trigger.last_at_or_before(now))
            {
                if latest > fire_ms && latest < next {
                    e.totals.skipped_missed += 1;
                }
            }
            if e.running > 0 && !e.entry.allow_overlap {
                e.totals.skipped_overlap += 1;
                tracing::info!(entry = %e.entry.name, "schedule: previous run still going; skipping this fire");
                continue;
            }
            e.running += 1;
            due.push(Due {
                index,
                fire_ms,
                catch_up,
                entry: e.entry.clone(),
            });
        }
        if !due.is_empty() {
            drop(state);
            let runs: Vec<(usize, Option<Run>, Claim)> =
                due.into_iter().map(|d| claim(shared, d)).collect();
            state = shared.lock();
            let mut handed = Vec::new();
            for (index, run, outcome) in runs {
                let e = &mut state.entries[index];
                match (outcome, run) {
                    (Claim::Run, Some(run)) => {
                        e.totals.started += 1;
                        handed.push(run);
                    }
                    (Claim::Taken, _) => {
                        e.running -= 1;
                        e.totals.claimed_elsewhere += 1;
                    }
                    (Claim::Overlap, _) => {
                        e.running -= 1;
                        e.totals.skipped_overlap += 1;
                    }
                    (Claim::Run, None) => {
                        e.running -= 1;
                        e.totals.store_errors += 1;
                    }
                }
            }
            drop(state);
            for run in handed {
                tracing::info!(entry = %run.entry, run_id = run.run_id, catch_up = run.catch_up, "schedule: run starts");
                let entry = run.entry.clone();
                // A panicking runner must not stop every other entry's schedule.
                let handed_off =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner(run)));
                if handed_off.is_err() {
                    tracing::error!(entry = %entry, "schedule: the runner panicked");
                }
            }
            state = shared.lock();
            continue;
        }
        let wait = state
            .entries
            .iter()
            .filter_map(EntryState::due_ms)
            .min()
            .map_or(Duration::from_secs(3600), |due| {
                Duration::from_millis(due.saturating_sub(now))
            });
        state = shared
            .wake
            .wait_timeout(state, wait.min(Duration::from_secs(3600)))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Claims one due fire in the store; `(index, run, claim)`, with no run when the store
/// failed.
fn claim(shared: &Arc<Shared>, due: Due) -> (usize, Option<Run>, Claim) {
    let run_id = fastrand::u64(1..);
    let args = ClaimArgs {
        fire_lease: (due.entry.trigger.period_hint() * 2)
            .max(due.entry.jitter * 2)
            .max(Duration::from_secs(600)),
        allow_overlap: due.entry.allow_overlap,
        run_id,
        max_run: due.entry.max_run,
    };
    match shared.store.claim(&due.entry.name, due.fire_ms, &args) {
        Ok(Claim::Run) => {
            let run = Run {
                entry: due.entry.name,
                task: due.entry.task,
                fire_time: from_ms(due.fire_ms),
                catch_up: due.catch_up,
                run_id,
                started: Instant::now(),
                shared: Some(Arc::clone(shared)),
            };
            (due.index, Some(run), Claim::Run)
        }
        Ok(other) => (due.index, None, other),
        Err(e) => {
            tracing::warn!(entry = %due.entry.name, error = %e, "schedule: cannot claim a run; skipping this fire");
            (due.index, None, Claim::Run)
        }
    }
}
