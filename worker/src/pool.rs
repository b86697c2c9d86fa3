//! The pool that owns a set of PHP threads of one role (the classic threads, or one
//! worker script's): their job queue, their state machines (through their `Slot`s), how
//! many there are (floor and ceiling, `scale.rs`), the orders given to all of them
//! (stop), and the rolling restart that replaces them one by one.
//!
//! A rolling restart ([`Pool::roll`]) replaces every thread by a fresh one: a new thread
//! is spawned and boots (the new release's worker script) while the old ones serve;
//! only once it serves is one old thread ordered to drain (it finishes its request, long
//! or not, and ends), then the next. So the pool never has fewer threads ready than
//! before the roll, and a new script that never boots stops the roll with the old
//! threads still serving. Threads carry the pool's generation from when they were
//! spawned; a roll raises it and replaces every thread of an older one, so a second roll
//! ordered during the first simply continues with the newest generation.
//!
//! What a thread does is its role's business (`classic.rs`, `worker_mode/`); how it is
//! spawned is `spawn.rs`'s. Jobs are never run on tokio's blocking pool: PHP state is per
//! thread and must stay on the thread that created it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::observe::{PoolKind, PoolStats, Slot};
use crate::queue::JobQueue;
use crate::scale::{self, Grow, Grown, Scaling};
use crate::thread_state::ThreadState;

/// How a thread's body ended, for the pool's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Stopped (shutdown, startup given up).
    Stopped,
    /// Retired after idling above the floor (already uncounted by `try_retire`).
    Retired,
    /// Wants a fresh OS thread in its place (`max_requests`: a new TSRM context).
    Replace,
    /// Retired by the deadline watchdog, which already spawned its replacement (and moved
    /// its count to it).
    Abandoned,
}

/// What the threads of a pool do.
pub(crate) trait Role: Send + Sync + Sized + 'static {
    /// The kind the operator's views show for the pool.
    const KIND: PoolKind;
    /// Thread names are this plus an index.
    const PREFIX: &'static str;
    /// True: a stop lets the threads finish the queued jobs (classic). False: each
    /// thread is ordered to stop after its current request (worker scripts).
    const DRAIN_ON_STOP: bool;
    /// The thread's life, attached to PHP, from `Booting` until it returns.
    fn run(pool: &Arc<Pool<Self>>, slot: &Slot) -> Exit;
    /// A rolling restart ended: every thread was replaced (`true`), or a new thread never
    /// came to serve and the roll stopped with old threads still running (`false`).
    fn rolled(&self, _complete: bool) {}
    /// The pool is stopping: tell the threads by the role's own means too (background
    /// scripts poll a stop signal, not the pool's queue).
    fn stopping(&self) {}
    /// How long a stop waits for a thread before leaving it running (None: for ever).
    fn stop_timeout(&self) -> Option<Duration> {
        None
    }
}

/// Threads a stop gave up waiting for ([`Role::stop_timeout`]): still inside PHP, so the
/// engine must not shut PHP down under them.
static LEFT_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Threads left running by a pool's stop (see [`LEFT_RUNNING`]).
pub(crate) fn left_running() -> usize {
    LEFT_RUNNING.load(Ordering::Acquire)
}

pub(crate) struct Pool<R: Role> {
    pub(crate) role: R,
    pub(crate) queue: JobQueue,
    pub(crate) stats: Arc<PoolStats>,
    pub(crate) scaling: Scaling,
    members: Mutex<Members>,
    /// Threads counted against the floor and the ceiling: spawned, not yet retired or
    /// gone.
    live: AtomicUsize,
    /// A startup failure a role reported (worker scripts that never reach their loop).
    startup: Mutex<Option<String>>,
    /// Notified when a thread leaves `Booting` or startup fails.
    startup_changed: Condvar,
    watcher: Mutex<Option<JoinHandle<()>>>,
    /// The generation new threads belong to; [`Pool::roll`] raises it.
    generation: AtomicU64,
    /// A roll is under way: no thread retires for idling meanwhile (the roll keeps the
    /// count it found, one thread in for one thread out).
    rolling: AtomicBool,
    roller: Mutex<Roller>,
    /// This pool, for the threads it spawns (each holds it).
    me: Weak<Pool<R>>,
}

struct Members {
    threads: Vec<Member>,
    next_index: usize,
}

/// One thread of the pool.
struct Member {
    slot: Arc<Slot>,
    handle: JoinHandle<()>,
    /// The pool's generation when it was spawned.
    generation: u64,
}

/// The thread that carries out rolling restarts, while one runs.
#[derive(Default)]
struct Roller {
    running: bool,
    handle: Option<JoinHandle<()>>,
}

/// What one step of a roll did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RollStep {
    /// One old thread was replaced.
    Replaced,
    /// No thread of an older generation is left.
    Done,
    /// The new thread never came to serve (its script failed to boot): stop here.
    Failed,
    /// The pool is stopping.
    Closed,
}

impl<R: Role> Pool<R> {
    /// Creates the pool, lists it for the operator's views under `name` (after the
    /// pools started before it), and spawns its floor of threads (and the autoscaler's
    /// watcher if it may grow). Does not wait for them to boot: see [`Pool::wait_booted`].
    pub(crate) fn start(role: R, name: String, scaling: Scaling) -> std::io::Result<Arc<Self>> {
        let scaling = Scaling {
            min: scaling.min.max(1),
            max: scaling.max.max(scaling.min.max(1)),
            ..scaling
        };
        let stats = PoolStats::register(name, R::KIND, scaling.size());
        let pool = Arc::new_cyclic(|me| Pool {
            me: me.clone(),
            role,
            queue: JobQueue::new(stats.clone(), scale::cpus()),
            stats,
            scaling,
            members: Mutex::new(Members {
                threads: Vec::new(),
                next_index: 0,
            }),
            live: AtomicUsize::new(0),
            startup: Mutex::new(None),
            startup_changed: Condvar::new(),
            watcher: Mutex::new(None),
            generation: AtomicU64::new(0),
            rolling: AtomicBool::new(false),
            roller: Mutex::new(Roller::default()),
        });
        for _ in 0..scaling.min {
            if let Err(e) = pool.spawn_thread(true) {
                pool.stop();
                return Err(e);
            }
        }
        if scaling.scales() {
            let weak: Weak<dyn Grow> = Arc::downgrade(&(pool.clone() as Arc<dyn Grow>));
            let name = pool.stats.name.clone();
            let watcher = std::thread::Builder::new()
                .name(format!("{}-scale", R::PREFIX))
                .spawn(move || scale::watch(weak, name))?;
            *pool.watcher.lock().unwrap() = Some(watcher);
        }
        Ok(pool)
    }

    /// Spawns one more thread; false when the pool is stopping. `count`: the thread is a
    /// new one for `live`; false for a replacement that inherits its predecessor's count.
    fn spawn_thread(&self, count: bool) -> std::io::Result<bool> {
        self.spawn_member(count).map(|slot| slot.is_some())
    }

    /// [`Pool::spawn_thread`], giving the new thread's slot.
    fn spawn_member(&self, count: bool) -> std::io::Result<Option<Arc<Slot>>> {
        let Some(pool) = self.me.upgrade() else {
            return Ok(None);
        };
        let mut members = self.members.lock().unwrap();
        // Checked under the members lock, which `stop` takes after closing the queue: a
        // thread spawned here is always one `stop` joins.
        if self.queue.is_closed() {
            return Ok(None);
        }
        // Retired and replaced threads leave their handles behind: join them here.
        let (gone, alive): (Vec<_>, Vec<_>) = members
            .threads
            .drain(..)
            .partition(|m| m.handle.is_finished());
        members.threads = alive;
        for m in gone {
            let _ = m.handle.join();
        }
        let name = format!("{}-{}", R::PREFIX, members.next_index);
        members.next_index += 1;
        if count {
            self.live.fetch_add(1, Ordering::AcqRel);
        }
        // For the deadline watchdog, should this thread ever be retired.
        let weak = self.me.clone();
        let replace = Box::new(move || {
            if let Some(pool) = weak.upgrade() {
                pool.replace_retired();
            }
        });
        match crate::spawn::spawn(name, &self.stats, replace, move |slot| {
            pool.thread_body(slot)
        }) {
            Ok((slot, handle)) => {
                members.threads.push(Member {
                    slot: slot.clone(),
                    handle,
                    // Under the members lock, as the roll reads it.
                    generation: self.generation.load(Ordering::Acquire),
                });
                Ok(Some(slot))
            }
            Err(e) => {
                if count {
                    self.live.fetch_sub(1, Ordering::AcqRel);
                }
                Err(e)
            }
        }
    }

    fn thread_body(self: &Arc<Self>, slot: &Slot) {
        let exit = R::run(self, slot);
        if exit == Exit::Abandoned {
            return;
        }
        let replaced = exit == Exit::Replace
            && match self.spawn_thread(false) {
                Ok(spawned) => spawned,
                Err(e) => {
                    tracing::error!(pool = %self.stats.name, "cannot replace a PHP thread: {e}");
                    false
                }
            };
        if exit != Exit::Retired && !replaced {
            self.live.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// A thread of this pool was retired (stuck past a request's deadline): a new one
    /// takes its place and its count, so the pool keeps its width.
    fn replace_retired(&self) {
        let spawned = match self.spawn_thread(false) {
            Ok(spawned) => spawned,
            Err(e) => {
                tracing::error!(pool = %self.stats.name, "cannot replace a retired PHP thread: {e}");
                false
            }
        };
        if !spawned {
            self.live.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// For a thread whose idle wait timed out: true (and it is no longer counted) when
    /// the pool is above its floor, so the thread may end.
    pub(crate) fn try_retire(&self) -> bool {
        if self.rolling.load(Ordering::Acquire) {
            return false;
        }
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > self.scaling.min).then(|| n - 1)
            })
            .is_ok()
    }

    /// Threads counted now (floor ≤ n ≤ ceiling).
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Starts a rolling restart (see the module docs) and returns at once; a roll under
    /// way goes on to the new generation instead of starting over.
    pub(crate) fn roll(&self) {
        let Some(pool) = self.me.upgrade() else {
            return;
        };
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut roller = self.roller.lock().unwrap();
        if roller.running || self.queue.is_closed() {
            // The running roller looks for old threads again, under this lock, before it
            // ends: it finds those of the generation just raised.
            return;
        }
        if let Some(finished) = roller.handle.take() {
            let _ = finished.join();
        }
        roller.running = true;
        self.rolling.store(true, Ordering::Release);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-roll", R::PREFIX))
            .spawn(move || pool.roll_all());
        match spawned {
            Ok(handle) => roller.handle = Some(handle),
            Err(e) => {
                roller.running = false;
                self.rolling.store(false, Ordering::Release);
                tracing::error!(pool = %self.stats.name, "cannot start a rolling restart: {e}");
            }
        }
    }

    /// The roller thread: replaces old threads one at a time until none is left, the
    /// new ones fail to boot, or the pool stops.
    fn roll_all(&self) {
        let started = Instant::now();
        let mut replaced = 0usize;
        loop {
            let step = self.roll_step();
            if step == RollStep::Replaced {
                replaced += 1;
                continue;
            }
            let mut roller = self.roller.lock().unwrap();
            // A roll ordered meanwhile raised the generation: more threads are old now.
            if step == RollStep::Done && self.oldest_thread().is_some() {
                continue;
            }
            roller.running = false;
            self.rolling.store(false, Ordering::Release);
            drop(roller);
            match step {
                RollStep::Done => {
                    tracing::info!(
                        pool = %self.stats.name,
                        replaced,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "rolling restart done: every thread replaced"
                    );
                    self.role.rolled(true);
                }
                RollStep::Failed => {
                    tracing::error!(
                        pool = %self.stats.name,
                        replaced,
                        "rolling restart stopped: a new thread never came to serve (see the \
                         errors above); the threads not yet replaced keep serving"
                    );
                    self.role.rolled(false);
                }
                RollStep::Closed | RollStep::Replaced => {}
            }
            return;
        }
    }

    /// A thread of an older generation than the pool's that has not been told to go yet,
    /// an idle one first (it leaves at once).
    fn oldest_thread(&self) -> Option<Arc<Slot>> {
        let target = self.generation.load(Ordering::Acquire);
        let members = self.members.lock().unwrap();
        let rank = |s: ThreadState| match s {
            ThreadState::Idle => 0,
            ThreadState::Restarting | ThreadState::Booting => 1,
            _ => 2,
        };
        members
            .threads
            .iter()
            .filter(|m| m.generation < target)
            .filter(|m| {
                matches!(
                    m.slot.state.get(),
                    ThreadState::Booting
                        | ThreadState::Idle
                        | ThreadState::Busy
                        | ThreadState::Restarting
                )
            })
            .min_by_key(|m| rank(m.slot.state.get()))
            .map(|m| m.slot.clone())
    }

    /// Replaces one old thread: a new one is spawned and waited for until it serves,
    /// then an old one is ordered to drain.
    fn roll_step(&self) -> RollStep {
        if self.oldest_thread().is_none() {
            return RollStep::Done;
        }
        let fresh = match self.spawn_member(true) {
            Ok(Some(slot)) => slot,
            Ok(None) => return RollStep::Closed,
            Err(e) => {
                tracing::error!(pool = %self.stats.name, "cannot spawn a PHP thread: {e}");
                return RollStep::Failed;
            }
        };
        loop {
            match fresh.state.get() {
                // Booted and serving (a thread retired in its first request had booted too).
                ThreadState::Idle | ThreadState::Busy | ThreadState::Retired => break,
                // It gave up booting (or the pool stops it).
                ThreadState::Draining | ThreadState::Done => {
                    return if self.queue.is_closed() {
                        RollStep::Closed
                    } else {
                        RollStep::Failed
                    };
                }
                ThreadState::Booting | ThreadState::Restarting => {}
            }
            if self.queue.is_closed() {
                return RollStep::Closed;
            }
            let startup = self.startup.lock().unwrap();
            let _ = self
                .startup_changed
                .wait_timeout(startup, Duration::from_millis(20))
                .unwrap();
        }
        // One thread out for the one that came in. An old thread may have left on its own
        // meanwhile (max_requests hands over to a thread of the new generation): then
        // another old one goes, or, with none left, the surplus new one.
        loop {
            let victim = self.oldest_thread().unwrap_or_else(|| fresh.clone());
            if victim.state.order_stop() {
                self.stats.restart();
                self.queue.wake_all();
                return RollStep::Replaced;
            }
            if Arc::ptr_eq(&victim, &fresh) {
                // The new thread is leaving as well: nothing surplus left.
                return RollStep::Replaced;
            }
        }
    }

    /// Stops every thread (as [`Role::DRAIN_ON_STOP`] says) and waits for them.
    pub(crate) fn stop(&self) {
        self.queue.close();
        self.role.stopping();
        let give_up = self.role.stop_timeout().map(|t| Instant::now() + t);
        if !R::DRAIN_ON_STOP {
            for m in &self.members.lock().unwrap().threads {
                m.slot.state.order_stop();
            }
            self.queue.wake_all();
        }
        // Threads may hand over to replacements while we join: drain until none is left.
        // A retired thread may never come back from what it is stuck in: it is left to
        // end by itself (the engine then skips PHP's shutdown, see deadline.rs).
        loop {
            let handles: Vec<_> = self.members.lock().unwrap().threads.drain(..).collect();
            if handles.is_empty() {
                break;
            }
            for m in handles {
                // A thread stuck in a request may be retired while we wait for it.
                while !m.handle.is_finished() && m.slot.state.get() != ThreadState::Retired {
                    if give_up.is_some_and(|t| Instant::now() >= t) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if m.handle.is_finished() {
                    let _ = m.handle.join();
                } else if m.slot.state.get() != ThreadState::Retired {
                    LEFT_RUNNING.fetch_add(1, Ordering::AcqRel);
                    tracing::error!(
                        pool = %self.stats.name,
                        thread = m.slot.name(),
                        "a PHP thread did not end within its stop timeout: left running, \
                         the process exits without PHP's shutdown"
                    );
                } else {
                    tracing::warn!(pool = %self.stats.name, "not waiting for a retired PHP thread");
                }
            }
        }
        // The queue is closed: a roller spawns nothing more and ends.
        let roller = self.roller.lock().unwrap().handle.take();
        if let Some(roller) = roller {
            let _ = roller.join();
        }
        if let Some(watcher) = self.watcher.lock().unwrap().take() {
            let _ = watcher.join();
        }
    }

    /// For a role: this thread left `Booting` for its request loop.
    pub(crate) fn report_booted(&self) {
        let _guard = self.startup.lock().unwrap();
        self.startup_changed.notify_all();
    }

    /// For a role: the pool cannot start (the first failure wins).
    pub(crate) fn report_startup_failure(&self, why: String) {
        let mut startup = self.startup.lock().unwrap();
        if startup.is_none() {
            *startup = Some(why);
        }
        self.startup_changed.notify_all();
    }

    /// Waits until the floor of threads is in its request loop (`Idle` or `Busy`), or a
    /// startup failure was reported.
    pub(crate) fn wait_booted(&self) -> Result<(), String> {
        let mut startup = self.startup.lock().unwrap();
        loop {
            if let Some(why) = startup.clone() {
                return Err(why);
            }
            let ready = self
                .members
                .lock()
                .unwrap()
                .threads
                .iter()
                .filter(|m| matches!(m.slot.state.get(), ThreadState::Idle | ThreadState::Busy))
                .count();
            if ready >= self.scaling.min {
                return Ok(());
            }
            // The timeout covers a thread that booted between the count and the wait.
            startup = self
                .startup_changed
                .wait_timeout(startup, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }
}

impl<R: Role> Grow for Pool<R> {
    fn queue(&self) -> &JobQueue {
        &self.queue
    }

    fn grow(&self) -> Grown {
        if self.live() >= self.scaling.max {
            self.stats.reached_ceiling();
            return Grown::No;
        }
        let booting = self
            .members
            .lock()
            .unwrap()
            .threads
            .iter()
            .any(|m| m.slot.state.get() == ThreadState::Booting);
        if booting {
            return Grown::Booting;
        }
        match self.spawn_thread(true) {
            Ok(true) => Grown::Added,
            Ok(false) => Grown::No,
            Err(e) => {
                tracing::error!(pool = %self.stats.name, "cannot add a PHP thread: {e}");
                Grown::No
            }
        }
    }
}
