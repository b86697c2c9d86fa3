//! The pool that owns a set of PHP threads of one role (the classic threads, or one
//! worker script's): their job queue, their state machines (through their `Slot`s), how
//! many there are (floor and ceiling, `scale.rs`), and the orders given to all of them
//! (restart, stop).
//!
//! What a thread does is its role's business (`classic.rs`, `worker_mode.rs`); how it is
//! spawned is `spawn.rs`'s. Jobs are never run on tokio's blocking pool: PHP state is per
//! thread and must stay on the thread that created it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::observe::{PoolStats, Slot};
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
}

/// What the threads of a pool do.
pub(crate) trait Role: Send + Sync + Sized + 'static {
    /// Thread names are this plus an index.
    const PREFIX: &'static str;
    /// True: a stop lets the threads finish the queued jobs (classic). False: each
    /// thread is ordered to stop after its current request (worker scripts).
    const DRAIN_ON_STOP: bool;
    /// The thread's life, attached to PHP, from `Booting` until it returns.
    fn run(pool: &Arc<Pool<Self>>, slot: &Slot) -> Exit;
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
    /// This pool, for the threads it spawns (each holds it).
    me: Weak<Pool<R>>,
}

struct Members {
    threads: Vec<(Arc<Slot>, JoinHandle<()>)>,
    next_index: usize,
}

impl<R: Role> Pool<R> {
    /// Creates the pool and spawns its floor of threads (and the autoscaler's watcher if
    /// it may grow). Does not wait for them to boot: see [`Pool::wait_booted`].
    pub(crate) fn start(
        role: R,
        stats: Arc<PoolStats>,
        scaling: Scaling,
    ) -> std::io::Result<Arc<Self>> {
        let scaling = Scaling {
            min: scaling.min.max(1),
            max: scaling.max.max(scaling.min.max(1)),
            ..scaling
        };
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
        let Some(pool) = self.me.upgrade() else {
            return Ok(false);
        };
        let mut members = self.members.lock().unwrap();
        // Checked under the members lock, which `stop` takes after closing the queue: a
        // thread spawned here is always one `stop` joins.
        if self.queue.is_closed() {
            return Ok(false);
        }
        // Retired and replaced threads leave their handles behind: join them here.
        let (gone, alive): (Vec<_>, Vec<_>) = members
            .threads
            .drain(..)
            .partition(|(_, handle)| handle.is_finished());
        members.threads = alive;
        for (_, handle) in gone {
            let _ = handle.join();
        }
        let name = format!("{}-{}", R::PREFIX, members.next_index);
        members.next_index += 1;
        if count {
            self.live.fetch_add(1, Ordering::AcqRel);
        }
        match crate::spawn::spawn(name, &self.stats, move |slot| pool.thread_body(slot)) {
            Ok(member) => {
                members.threads.push(member);
                Ok(true)
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

    /// For a thread whose idle wait timed out: true (and it is no longer counted) when
    /// the pool is above its floor, so the thread may end.
    pub(crate) fn try_retire(&self) -> bool {
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

    /// Orders every thread to restart its worker script after its current request.
    pub(crate) fn restart_all(&self) {
        for (slot, _) in &self.members.lock().unwrap().threads {
            slot.state.order_restart();
        }
        self.queue.wake_all();
    }

    /// Stops every thread (as [`Role::DRAIN_ON_STOP`] says) and waits for them.
    pub(crate) fn stop(&self) {
        self.queue.close();
        if !R::DRAIN_ON_STOP {
            for (slot, _) in &self.members.lock().unwrap().threads {
                slot.state.order_stop();
            }
            self.queue.wake_all();
        }
        // Threads may hand over to replacements while we join: drain until none is left.
        loop {
            let handles: Vec<_> = self.members.lock().unwrap().threads.drain(..).collect();
            if handles.is_empty() {
                break;
            }
            for (_, h) in handles {
                let _ = h.join();
            }
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
                .filter(|(s, _)| matches!(s.state.get(), ThreadState::Idle | ThreadState::Busy))
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
            .any(|(s, _)| s.state.get() == ThreadState::Booting);
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
