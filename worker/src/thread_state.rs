//! The state machine of one PHP thread: the only place a thread's state lives.
//!
//! ```text
//!            spawn (pool: floor, scaler, max_requests replacement)
//!              │
//!              ▼        boot ok / attached                take a job
//!          ┌────────┐ ─────────────────────▶ ┌──────┐ ──────────────▶ ┌──────┐
//!          │Booting │                        │ Idle │                 │ Busy │
//!          └────────┘ ◀──┐                   └──────┘ ◀────────────── └──────┘
//!            │  │        │ reboot               │ │      job done       │ │
//!            │  │  ┌────────────┐                │ │                     │ │
//!            │  └─▶│ Restarting │ ◀──────────────┘ │ ◀───────────────────┘ │
//!            │     └────────────┘  memory guard, cache pressure, script    │
//!            │           │         ended, boot failed (thread)             │
//!            │  stop     │ stop order / startup given up                   │
//!            ▼  order    ▼                                                 │
//!          ┌──────────┐ ◀── stop order (pool: shutdown, rolling restart), ─┘
//!          │ Draining │     idle retire, max_requests, queue closed (thread)
//!          └──────────┘
//!               │ current request finished, script ended, TSRM freed
//!               ▼
//!          ┌──────┐
//!          │ Done │
//!          └──────┘
//! ```
//!
//! One more state sits beside the diagram: `Retired`, ordered by the deadline watchdog
//! (`deadline.rs`) for a thread still running a request well past its deadline, in code
//! that cannot be interrupted (from `Busy`, or `Restarting`/`Draining` ordered while it
//! was busy). Another thread takes its place; if the call it is stuck in ever returns,
//! its own next transition fails with `Retired` and it drains and ends without serving
//! again.
//!
//! Orders from outside (a stop: shutdown, or a rolling restart replacing the thread) are
//! transitions too, made with a compare-and-swap from whatever state the thread is in,
//! so an order that arrives while a thread is busy or booting is not lost: the thread's
//! own next transition (`job_done`, `booted`) fails and tells it what happened. Stopping
//! is what the pool's `stopping` flag did, `Busy` what worker mode's `handling` flag did,
//! and "left `Booting`" what its `ready` flag did. A restart of every worker script is no
//! order to the threads: the pool replaces them one by one (`pool.rs`, `Pool::roll`).
//! Classic threads use the same machine without `Restarting`.
//!
//! Each transition is logged at debug level with the thread and its pool; the admin
//! `/threads` view shows the current state (`observe.rs`).

use std::sync::atomic::{AtomicU8, Ordering};

/// Where a PHP thread is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ThreadState {
    /// Spawned and attached to PHP, booting its worker script (classic threads pass
    /// through at once).
    Booting = 0,
    /// Waiting for a request.
    Idle = 1,
    /// Running a request.
    Busy = 2,
    /// Asked to stop (shutdown, idle retirement, `max_requests`): finishes what it runs,
    /// then ends.
    Draining = 3,
    /// Its worker script ends and boots again on the same thread: the memory guard, cache
    /// pressure, a crash, or a failed boot waiting out its backoff.
    Restarting = 4,
    /// Ended; the OS thread is gone or about to be.
    Done = 5,
    /// Given up while stuck in a request past its deadline; replaced, ends if it returns.
    Retired = 6,
}

impl ThreadState {
    fn from_u8(v: u8) -> ThreadState {
        match v {
            0 => ThreadState::Booting,
            1 => ThreadState::Idle,
            2 => ThreadState::Busy,
            3 => ThreadState::Draining,
            4 => ThreadState::Restarting,
            6 => ThreadState::Retired,
            _ => ThreadState::Done,
        }
    }

    /// The name the admin view and the logs use.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadState::Booting => "booting",
            ThreadState::Idle => "idle",
            ThreadState::Busy => "busy",
            ThreadState::Draining => "draining",
            ThreadState::Restarting => "restarting",
            ThreadState::Done => "done",
            ThreadState::Retired => "retired",
        }
    }
}

/// Whether `from → to` is an edge of the diagram above.
fn legal(from: ThreadState, to: ThreadState) -> bool {
    use ThreadState::*;
    matches!(
        (from, to),
        (Booting, Idle)
            | (Idle, Busy)
            | (Busy, Idle)
            | (Booting | Idle | Busy, Restarting)
            | (Restarting, Booting)
            | (Booting | Idle | Busy | Restarting | Retired, Draining)
            | (Draining, Done)
            | (Busy | Restarting | Draining, Retired)
    )
}

/// One thread's state, shared between the thread (which makes most transitions) and its
/// pool (which gives orders). Only the transition methods write it.
#[derive(Debug)]
pub(crate) struct StateCell {
    state: AtomicU8,
    /// For the debug log of transitions: the thread's and its pool's names.
    thread: String,
    pool: std::sync::Arc<str>,
}

impl StateCell {
    pub(crate) fn new(thread: String, pool: std::sync::Arc<str>) -> StateCell {
        StateCell {
            state: AtomicU8::new(ThreadState::Booting as u8),
            thread,
            pool,
        }
    }

    pub(crate) fn get(&self) -> ThreadState {
        ThreadState::from_u8(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn thread_name(&self) -> &str {
        &self.thread
    }

    /// Moves to `to` if the state is one of `from`; the state it left, or the state that
    /// was not in `from`.
    fn step(
        &self,
        from: &[ThreadState],
        to: ThreadState,
        why: &'static str,
    ) -> Result<ThreadState, ThreadState> {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let now = ThreadState::from_u8(current);
            if !from.contains(&now) {
                return Err(now);
            }
            debug_assert!(
                legal(now, to),
                "illegal thread transition {now:?} -> {to:?}"
            );
            match self.state.compare_exchange_weak(
                current,
                to as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    tracing::debug!(
                        thread = %self.thread,
                        pool = %self.pool,
                        from = now.as_str(),
                        to = to.as_str(),
                        why,
                        "PHP thread state"
                    );
                    return Ok(now);
                }
                Err(actual) => current = actual,
            }
        }
    }

    // --- Transitions the thread makes itself. Each fails (with the state found) when an
    // --- order moved the thread elsewhere meanwhile.

    /// Booting → Idle: the worker script reached its request loop, or a classic thread
    /// is attached.
    pub(crate) fn booted(&self) -> Result<(), ThreadState> {
        self.step(&[ThreadState::Booting], ThreadState::Idle, "ready")
            .map(drop)
    }

    /// Idle → Busy: took a job.
    pub(crate) fn take_job(&self) -> Result<(), ThreadState> {
        self.step(&[ThreadState::Idle], ThreadState::Busy, "request")
            .map(drop)
    }

    /// Busy → Idle: the job is done.
    pub(crate) fn job_done(&self) -> Result<(), ThreadState> {
        self.step(&[ThreadState::Busy], ThreadState::Idle, "request done")
            .map(drop)
    }

    /// Booting/Idle/Busy → Restarting on the thread's own decision (memory guard, cache
    /// pressure, the script ended, a boot failed). Ok also when already restarting;
    /// Err(Draining) when a stop got there first.
    pub(crate) fn restart_self(&self, why: &'static str) -> Result<(), ThreadState> {
        match self.step(
            &[ThreadState::Booting, ThreadState::Idle, ThreadState::Busy],
            ThreadState::Restarting,
            why,
        ) {
            Ok(_) | Err(ThreadState::Restarting) => Ok(()),
            Err(other) => Err(other),
        }
    }

    /// Restarting → Booting: the script boots again.
    pub(crate) fn reboot(&self) -> Result<(), ThreadState> {
        self.step(&[ThreadState::Restarting], ThreadState::Booting, "boot")
            .map(drop)
    }

    /// → Draining on the thread's own decision (idle retirement, `max_requests`, the
    /// queue closed, back from the request it was retired in). A no-op when already
    /// draining.
    pub(crate) fn drain_self(&self, why: &'static str) {
        let _ = self.step(
            &[
                ThreadState::Booting,
                ThreadState::Idle,
                ThreadState::Busy,
                ThreadState::Restarting,
                ThreadState::Retired,
            ],
            ThreadState::Draining,
            why,
        );
    }

    /// Draining → Done: the last transition, just before the thread detaches from PHP.
    pub(crate) fn done(&self) {
        self.drain_self("ending");
        let _ = self.step(&[ThreadState::Draining], ThreadState::Done, "ended");
    }

    // --- Orders from the pool (any thread).

    /// The deadline watchdog gives up the thread, stuck in its request (see the module
    /// doc). False when it is not in a request any more.
    pub(crate) fn order_retire(&self) -> bool {
        self.step(
            &[
                ThreadState::Busy,
                ThreadState::Restarting,
                ThreadState::Draining,
            ],
            ThreadState::Retired,
            "stuck past its deadline",
        )
        .is_ok()
    }

    /// Stop after the current request. False when already draining or done.
    pub(crate) fn order_stop(&self) -> bool {
        self.step(
            &[
                ThreadState::Booting,
                ThreadState::Idle,
                ThreadState::Busy,
                ThreadState::Restarting,
            ],
            ThreadState::Draining,
            "stop order",
        )
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell() -> StateCell {
        StateCell::new("t".into(), "p".into())
    }

    #[test]
    fn a_request_cycle_and_a_stop() {
        let c = cell();
        assert_eq!(c.get(), ThreadState::Booting);
        assert_eq!(c.take_job(), Err(ThreadState::Booting));
        c.booted().unwrap();
        c.take_job().unwrap();
        assert_eq!(c.get(), ThreadState::Busy);
        c.job_done().unwrap();
        assert!(c.order_stop());
        assert!(!c.order_stop());
        assert_eq!(c.take_job(), Err(ThreadState::Draining));
        c.done();
        assert_eq!(c.get(), ThreadState::Done);
        assert!(!c.order_stop());
    }

    #[test]
    fn an_order_while_busy_is_seen_when_the_job_ends() {
        let c = cell();
        c.booted().unwrap();
        c.take_job().unwrap();
        // A restart of the thread's own (memory guard) while busy; the reboot starts over.
        assert_eq!(c.restart_self("test"), Ok(()));
        assert_eq!(c.job_done(), Err(ThreadState::Restarting));
        c.reboot().unwrap();
        assert_eq!(c.get(), ThreadState::Booting);
        // A stop ordered during boot (a rolling restart's): the boot's end finds it, and a
        // restart cannot undo it.
        assert!(c.order_stop());
        assert_eq!(c.booted(), Err(ThreadState::Draining));
        assert_eq!(c.restart_self("test"), Err(ThreadState::Draining));
        assert_eq!(c.reboot(), Err(ThreadState::Draining));
    }

    #[test]
    fn a_retired_thread_never_serves_again() {
        let c = cell();
        c.booted().unwrap();
        assert!(
            !c.order_retire(),
            "an idle thread is not stuck in a request"
        );
        c.take_job().unwrap();
        assert!(c.order_retire());
        assert!(!c.order_retire());
        // Back from the request: every way on to another request fails.
        assert_eq!(c.job_done(), Err(ThreadState::Retired));
        assert_eq!(c.restart_self("test"), Err(ThreadState::Retired));
        assert!(!c.order_stop());
        c.done();
        assert_eq!(c.get(), ThreadState::Done);
        // A stop ordered while busy does not keep a stuck thread from being retired.
        let c = cell();
        c.booted().unwrap();
        c.take_job().unwrap();
        assert!(c.order_stop());
        assert!(c.order_retire());
    }

    #[test]
    fn only_the_diagram_edges_are_legal() {
        use ThreadState::*;
        let all = [Booting, Idle, Busy, Draining, Restarting, Done, Retired];
        let edges = all
            .iter()
            .flat_map(|&a| all.iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| legal(a, b))
            .count();
        assert_eq!(edges, 16);
        assert!(!legal(Retired, Idle));
        assert!(!legal(Idle, Retired));
        assert!(!legal(Done, Booting));
        assert!(!legal(Draining, Idle));
        assert!(!legal(Idle, Booting));
    }
}
