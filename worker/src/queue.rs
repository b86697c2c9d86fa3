//! The hand-off from the HTTP side to PHP threads: a FIFO of jobs and a LIFO of idle
//! threads under one mutex. A job that finds an idle thread is handed to the one that
//! went idle last (its caches are warm; threads idle longer stay asleep, and retire when
//! the pool autoscales) and wakes exactly that thread through its own parker: no
//! condition variable, so the woken thread does not contend for the queue's mutex on
//! its way out. Jobs queue only while no thread is idle.
//!
//! Not a spinning channel on purpose: PHP threads outnumber cores, and a receiver that
//! spins or yields before sleeping steals the CPU from the threads that would feed it.
//!
//! For the same reason a job does not always wake an idle thread: while as many threads as
//! the process has CPUs hold jobs they started less than [`STALLED_AFTER`] ago (they are
//! computing, not waiting on a database or `sleep`), a new job queues and the next of
//! them to finish takes it without sleeping. Waking a third thread on two busy CPUs only
//! preempts the I/O threads that feed the pool, and costs a sleep and a wake per job
//! (measured in `scripts/count-handoffs.sh`). A job held longer than `STALLED_AFTER` no
//! longer counts, so slow or blocked requests never hold the others back for more than
//! that; [`JobQueue::nudge`] applies the same rule when nothing else happens (the HTTP
//! side calls it for a job still queued after `STALLED_AFTER`).
//! A waiting thread also wakes for an order to it (`wake_all`: its state changed, see
//! `thread_state.rs`), for `close` (stop), or when it has been idle long enough to retire.
//!
//! A queued job can be withdrawn by the side that submitted it ([`JobQueue::withdraw`],
//! by the ticket `push` gave): that is how a request gives up at its `--max-wait-ms`
//! deadline while the HTTP side lets a few more requests in than there are threads. Those
//! extra requests are what keeps threads from sleeping between jobs under load: a thread
//! that finishes takes the next queued job at once instead of parking and being woken
//! for it (measured in `scripts/count-handoffs.sh`).
//!
//! The queue also tells the autoscaler (`scale.rs`) when a job is queued with no idle
//! thread to take it: one atomic swap on that path, nothing on the others. It reports its
//! depth and its jobs' waits to the pool's counters ([`PoolStats`]) for the metrics. It
//! imports only [`Job`] and those counters.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::job::Job;
use crate::observe::PoolStats;

/// How long a thread's job counts as computing against the pool's limit of running
/// threads; past it the thread is taken to be blocked (I/O, `sleep`, a lock) or on a
/// heavy request, and another thread may start. A job that has run this long pays for
/// waking another thread (a futex wake and a context switch, 5-10 us on a VM), so only
/// the shortest requests (hello world: ~5 us of PHP) wait for a running thread. 250 us
/// also kept pages of ~50 us on the running threads, and made them 5-10% slower
/// (docs/benchmarks.md).
pub const STALLED_AFTER: Duration = Duration::from_micros(50);

pub(crate) struct JobQueue {
    state: Mutex<State>,
    /// Only for `wait_closed` (a worker's start-up backoff).
    closed_changed: Condvar,
    /// The autoscaler's thread, woken when jobs wait with no idle thread.
    watcher: OnceLock<std::thread::Thread>,
    /// Set when the watcher was woken and has not looked yet (so a saturated queue wakes
    /// it once, not per job).
    watcher_poked: AtomicBool,
    stats: Arc<PoolStats>,
    /// How many threads may compute at once before new jobs queue for them instead of
    /// waking an idle thread: the CPUs this process may use.
    running_limit: usize,
    /// [`STALLED_AFTER`] (tests shorten or lengthen it).
    stalled_after: Duration,
}

struct State {
    /// Jobs no thread has taken yet, each with the moment it was queued (what the
    /// autoscaler's rule reads).
    jobs: VecDeque<Box<Job>>,
    /// The ticket the next job gets.
    next_ticket: u64,
    closed: bool,
    /// Threads blocked in `next`, the most recently idle last.
    idle: Vec<Arc<Waiter>>,
    /// Threads holding a job, each with the moment it got it. Weak: a thread that exits
    /// holding its job (a crash) is pruned once its waiter is gone.
    running: Vec<(Weak<Waiter>, Instant)>,
}

impl State {
    /// True when a job may go to an idle thread now: fewer than `limit` running threads
    /// got their job less than `stalled_after` ago.
    fn may_start_another(&mut self, limit: usize, stalled_after: Duration) -> bool {
        if self.running.len() < limit {
            return true;
        }
        let now = Instant::now();
        self.running.retain(|(waiter, _)| waiter.strong_count() > 0);
        let computing = self
            .running
            .iter()
            .filter(|(_, since)| now.saturating_duration_since(*since) < stalled_after)
            .count();
        computing < limit
    }

    /// Hands `job` to `waiter` (just taken off the idle list), counted as running from
    /// now; the caller wakes it once the lock is released.
    fn start(&mut self, waiter: &Arc<Waiter>, job: Box<Job>) {
        *waiter.handoff.lock().unwrap() = Some(job);
        self.runs(waiter);
    }

    /// Counts `waiter`'s thread as running from now.
    fn runs(&mut self, waiter: &Arc<Waiter>) {
        self.running.push((Arc::downgrade(waiter), Instant::now()));
    }

    /// The calling thread is back for its next job: no longer running.
    fn returned(&mut self, me: &Arc<Waiter>) {
        let me = Arc::as_ptr(me);
        if let Some(at) = self.running.iter().position(|(w, _)| w.as_ptr() == me) {
            self.running.swap_remove(at);
        }
    }
}

/// A thread blocked in `next`: how to wake it, and the job handed to it.
struct Waiter {
    thread: std::thread::Thread,
    /// Set under the queue's lock by the `push` that chose this thread.
    handoff: Mutex<Option<Box<Job>>>,
    /// Set (after the hand-off or an order) before the unpark; a park that returns
    /// without it is spurious.
    woken: AtomicBool,
}

impl Waiter {
    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

thread_local! {
    /// The calling thread's waiter, made once.
    static WAITER: Arc<Waiter> = Arc::new(Waiter {
        thread: std::thread::current(),
        handoff: Mutex::new(None),
        woken: AtomicBool::new(false),
    });
}

/// What a waiting thread got.
pub(crate) enum Next {
    Job(Box<Job>),
    /// The thread's own state changed (an order): it should look at it.
    Interrupted,
    /// Nothing came for the idle timeout it asked for.
    TimedOut,
    Closed,
}

/// Where `push` put a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Handed to an idle thread, which runs it now.
    Running,
    /// Queued until a thread is free; the ticket withdraws it (`JobQueue::withdraw`).
    Queued(Ticket),
}

/// Names one queued job, to withdraw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

/// How `next` treats a closed queue.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnClose {
    /// Classic threads: finish the jobs already queued, then stop.
    Drain,
    /// Worker threads: stop at once (queued jobs are dropped: their clients get an error).
    Stop,
}

impl JobQueue {
    /// A queue whose jobs wake idle threads while fewer than `running_limit` threads
    /// compute (see the module doc).
    pub(crate) fn new(stats: Arc<PoolStats>, running_limit: usize) -> JobQueue {
        JobQueue::with_stall(stats, running_limit, STALLED_AFTER)
    }

    fn with_stall(
        stats: Arc<PoolStats>,
        running_limit: usize,
        stalled_after: Duration,
    ) -> JobQueue {
        JobQueue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                next_ticket: 1,
                closed: false,
                idle: Vec::new(),
                running: Vec::new(),
            }),
            closed_changed: Condvar::new(),
            watcher: OnceLock::new(),
            watcher_poked: AtomicBool::new(false),
            stats,
            running_limit: running_limit.max(1),
            stalled_after,
        }
    }

    /// Hands a job to the most recently idle thread, or queues it when none is idle or
    /// the running threads already use every CPU; None when the queue is closed (the job
    /// is dropped).
    pub(crate) fn push(&self, mut job: Box<Job>) -> Option<Placement> {
        let mut state = self.state.lock().unwrap();
        if state.closed {
            return None;
        }
        if state.may_start_another(self.running_limit, self.stalled_after) {
            if let Some(waiter) = state.idle.pop() {
                state.start(&waiter, job);
                drop(state);
                waiter.wake();
                return Some(Placement::Running);
            }
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        job.ticket = ticket;
        job.queued_at = Some(Instant::now());
        state.jobs.push_back(job);
        self.stats.set_queued(state.jobs.len());
        let none_idle = state.idle.is_empty();
        drop(state);
        // No idle thread: the autoscaler may want to know.
        if none_idle {
            self.poke_watcher();
        }
        Some(Placement::Queued(Ticket(ticket)))
    }

    /// Gives the front queued job to an idle thread if the running threads have stalled
    /// (see [`STALLED_AFTER`]): for a job that stayed queued that long while no push or
    /// finished job looked again. True when a job was handed over.
    pub(crate) fn nudge(&self) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.jobs.is_empty()
            || state.idle.is_empty()
            || !state.may_start_another(self.running_limit, self.stalled_after)
        {
            return false;
        }
        let (Some(waiter), Some(job)) = (state.idle.pop(), self.pop_queued(&mut state)) else {
            unreachable!("both checked non-empty under this lock");
        };
        state.start(&waiter, job);
        drop(state);
        waiter.wake();
        true
    }

    /// Takes back a queued job no thread has taken yet (its submitter gave up waiting);
    /// None when a thread already has it, or the queue dropped it on a stop.
    pub(crate) fn withdraw(&self, ticket: Ticket) -> Option<Box<Job>> {
        let mut state = self.state.lock().unwrap();
        let at = state.jobs.iter().position(|job| job.ticket == ticket.0)?;
        let job = state.jobs.remove(at);
        self.stats.set_queued(state.jobs.len());
        job
    }

    /// The front job of the FIFO, with its wait counted; under the state lock.
    fn pop_queued(&self, state: &mut State) -> Option<Box<Job>> {
        let job = state.jobs.pop_front()?;
        self.stats.set_queued(state.jobs.len());
        if let Some(queued_at) = job.queued_at {
            self.stats.queue_waited(queued_at.elapsed());
        }
        Some(job)
    }

    fn poke_watcher(&self) {
        if let Some(watcher) = self.watcher.get() {
            if !self.watcher_poked.swap(true, Ordering::AcqRel) {
                watcher.unpark();
            }
        }
    }

    /// Puts back a job a thread took but cannot serve (an order reached it first), ahead
    /// of the others, as it was.
    pub(crate) fn push_front(&self, mut job: Box<Job>) {
        let mut state = self.state.lock().unwrap();
        if let Some(waiter) = state.idle.pop() {
            state.start(&waiter, job);
            drop(state);
            waiter.wake();
            return;
        }
        // Its ticket stays valid: its submitter may still withdraw it.
        job.queued_at = Some(Instant::now());
        state.jobs.push_front(job);
        self.stats.set_queued(state.jobs.len());
    }

    /// Makes the calling thread the one `push` wakes when jobs wait with no idle thread.
    pub(crate) fn set_watcher(&self) {
        let _ = self.watcher.set(std::thread::current());
    }

    /// For the watcher: clears the poke it woke for.
    pub(crate) fn watcher_looked(&self) {
        self.watcher_poked.store(false, Ordering::Release);
    }

    /// How long the oldest queued job has waited, if one is queued.
    pub(crate) fn oldest_wait(&self) -> Option<Duration> {
        let state = self.state.lock().unwrap();
        state
            .jobs
            .front()
            .and_then(|job| job.queued_at)
            .map(|queued| queued.elapsed())
    }

    /// The next job, waiting for one. Returns early when `interrupted()` holds (checked
    /// before each wait, under the lock that `wake_all` takes, so no order is missed),
    /// when the queue is closed (as `on_close` says), or after `idle_timeout` without a
    /// job.
    pub(crate) fn next(
        &self,
        on_close: OnClose,
        interrupted: &dyn Fn() -> bool,
        idle_timeout: Option<Duration>,
    ) -> Next {
        let deadline = idle_timeout.map(|t| Instant::now() + t);
        WAITER.with(|me| loop {
            let mut state = self.state.lock().unwrap();
            state.returned(me);
            // After a wake without a job (an order, a late wake from an earlier round)
            // this thread may still be listed: never twice.
            if let Some(at) = state.idle.iter().position(|w| Arc::ptr_eq(w, me)) {
                state.idle.remove(at);
            }
            if let Some(job) = me.handoff.lock().unwrap().take() {
                // Handed over while this thread was listed idle (counted then): it runs.
                state.runs(me);
                return Next::Job(job);
            }
            if state.closed && on_close == OnClose::Stop {
                return Next::Closed;
            }
            if interrupted() {
                return Next::Interrupted;
            }
            if let Some(job) = self.pop_queued(&mut state) {
                state.runs(me);
                return Next::Job(job);
            }
            if state.closed {
                return Next::Closed;
            }
            me.woken.store(false, Ordering::Relaxed);
            state.idle.push(me.clone());
            drop(state);
            loop {
                match deadline {
                    None => std::thread::park(),
                    Some(deadline) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            let mut state = self.state.lock().unwrap();
                            if let Some(at) = state.idle.iter().position(|w| Arc::ptr_eq(w, me)) {
                                state.idle.remove(at);
                                return Next::TimedOut;
                            }
                            // Chosen meanwhile: its job or order is here (set under the
                            // lock just taken).
                            break;
                        }
                        std::thread::park_timeout(left);
                    }
                }
                if me.woken.load(Ordering::Acquire) {
                    break;
                }
            }
            if let Some(job) = me.handoff.lock().unwrap().take() {
                return Next::Job(job);
            }
        })
    }

    /// Wakes every waiting thread so each looks at its state (an order was given).
    pub(crate) fn wake_all(&self) {
        let idle = std::mem::take(&mut self.state.lock().unwrap().idle);
        for waiter in idle {
            waiter.wake();
        }
    }

    /// Refuses new jobs and wakes everyone (the watcher too).
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap();
        state.closed = true;
        let idle = std::mem::take(&mut state.idle);
        drop(state);
        for waiter in idle {
            waiter.wake();
        }
        self.closed_changed.notify_all();
        if let Some(watcher) = self.watcher.get() {
            watcher.unpark();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().unwrap().closed
    }

    /// Sleeps up to `timeout` unless the queue is closed meanwhile; true if closed.
    pub(crate) fn wait_closed(&self, timeout: Duration) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .closed_changed
            .wait_timeout_while(state, timeout, |s| !s.closed)
            .unwrap();
        state.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{PoolKind, PoolSize};
    use crate::request::{BufferSink, ScriptRequest};
    use std::sync::mpsc;

    fn queue() -> JobQueue {
        JobQueue::new(
            PoolStats::register("queue-test".into(), PoolKind::Classic, PoolSize::default()),
            usize::MAX,
        )
    }

    /// A job whose script name says which it is.
    fn job(name: &str) -> Box<Job> {
        let sink = Arc::new(Mutex::new(BufferSink::default()));
        Job::new(ScriptRequest::new(name, Box::new(sink)), None)
    }

    fn name(job: &Job) -> String {
        job.request.script_filename.display().to_string()
    }

    fn queued(placement: Option<Placement>) -> Ticket {
        match placement {
            Some(Placement::Queued(ticket)) => ticket,
            other => panic!("expected a queued job, got {other:?}"),
        }
    }

    fn take(q: &JobQueue) -> Box<Job> {
        match q.next(OnClose::Drain, &|| false, Some(Duration::from_millis(1))) {
            Next::Job(job) => job,
            _ => panic!("expected a job"),
        }
    }

    #[test]
    fn a_withdrawn_job_is_never_taken_and_the_others_keep_their_order() {
        let q = queue();
        let a = queued(q.push(job("a")));
        let b = queued(q.push(job("b")));
        let c = queued(q.push(job("c")));
        assert_ne!(a, b);
        assert_eq!(q.stats.info().queued, 3);
        assert_eq!(name(&q.withdraw(b).expect("still queued")), "b");
        assert!(q.withdraw(b).is_none(), "withdrawn twice");
        assert_eq!(q.stats.info().queued, 2);
        assert_eq!(name(&take(&q)), "a");
        // Taken by a thread: too late to withdraw.
        assert!(q.withdraw(a).is_none());
        assert_eq!(name(&take(&q)), "c");
        assert!(q.withdraw(c).is_none());
        assert_eq!(q.stats.info().queued, 0);
        assert!(matches!(
            q.next(OnClose::Drain, &|| false, Some(Duration::from_millis(1))),
            Next::TimedOut
        ));
    }

    #[test]
    fn a_job_put_back_at_the_front_can_still_be_withdrawn() {
        let q = queue();
        let a = queued(q.push(job("a")));
        let _b = queued(q.push(job("b")));
        let taken = take(&q);
        q.push_front(taken);
        assert_eq!(q.stats.info().queued, 2);
        assert_eq!(name(&q.withdraw(a).expect("queued again")), "a");
        assert_eq!(name(&take(&q)), "b");
    }

    #[test]
    fn a_job_for_an_idle_thread_runs_at_once_and_a_closed_queue_refuses() {
        let q = Arc::new(queue());
        let waiter = {
            let q = q.clone();
            std::thread::spawn(move || match q.next(OnClose::Drain, &|| false, None) {
                Next::Job(job) => name(&job),
                _ => "no job".into(),
            })
        };
        // Until the thread is listed as idle, a push queues; either way it gets the job.
        while q.state.lock().unwrap().idle.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(q.push(job("now")), Some(Placement::Running));
        assert_eq!(waiter.join().unwrap(), "now");
        q.close();
        assert_eq!(q.push(job("late")), None);
    }

    /// A thread that takes jobs until the queue closes: reports each job's name, then
    /// holds it until told to go on.
    fn taker(q: &Arc<JobQueue>) -> (mpsc::Receiver<String>, mpsc::Sender<()>) {
        let (took, jobs) = mpsc::channel();
        let (go_on, release) = mpsc::channel::<()>();
        let q = q.clone();
        std::thread::spawn(move || {
            while let Next::Job(job) = q.next(OnClose::Stop, &|| false, None) {
                took.send(name(&job)).unwrap();
                if release.recv().is_err() {
                    return;
                }
            }
        });
        (jobs, go_on)
    }

    fn idle_threads(q: &JobQueue) -> usize {
        q.state.lock().unwrap().idle.len()
    }

    fn wait_idle(q: &JobQueue, n: usize) {
        while idle_threads(q) < n {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn while_the_running_threads_compute_a_job_waits_for_them_instead_of_waking_another() {
        // One CPU's worth of running threads, and jobs never stall.
        let q = Arc::new(JobQueue::with_stall(
            PoolStats::register("queue-test".into(), PoolKind::Classic, PoolSize::default()),
            1,
            Duration::from_secs(3600),
        ));
        let takers = [taker(&q), taker(&q)];
        wait_idle(&q, 2);
        assert_eq!(q.push(job("a")), Some(Placement::Running));
        let holder = loop {
            if let Some(at) = takers.iter().position(|(jobs, _)| jobs.try_recv().is_ok()) {
                break at;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let other = 1 - holder;
        // A thread is idle, but the running one computes: b waits, and a nudge changes
        // nothing.
        queued(q.push(job("b")));
        assert!(!q.nudge());
        assert_eq!(idle_threads(&q), 1);
        // The running thread takes it when it is done with a, without the idle one.
        takers[holder].1.send(()).unwrap();
        assert_eq!(takers[holder].0.recv().unwrap(), "b");
        assert!(takers[other].0.try_recv().is_err());
        assert_eq!(idle_threads(&q), 1);
        q.close();
    }

    #[test]
    fn a_job_held_past_the_stall_time_no_longer_holds_the_queue_back() {
        let q = Arc::new(JobQueue::with_stall(
            PoolStats::register("queue-test".into(), PoolKind::Classic, PoolSize::default()),
            1,
            Duration::from_millis(20),
        ));
        let (jobs_1, _go_1) = taker(&q);
        let (jobs_2, _go_2) = taker(&q);
        wait_idle(&q, 2);
        let started = Instant::now();
        assert_eq!(q.push(job("a")), Some(Placement::Running));
        let ticket = q.push(job("b"));
        std::thread::sleep(Duration::from_millis(30));
        match ticket {
            // Pushed within the stall time (as almost always): queued, and the nudge
            // after it hands it to the idle thread.
            Some(Placement::Queued(_)) => assert!(q.nudge(), "a stalled pool was not nudged"),
            // A machine so slow that a had stalled already: b went to the idle thread.
            other => {
                assert_eq!(other, Some(Placement::Running));
                assert!(started.elapsed() >= Duration::from_millis(20));
            }
        }
        let mut names = vec![
            jobs_1.recv_timeout(Duration::from_secs(5)).unwrap(),
            jobs_2.recv_timeout(Duration::from_secs(5)).unwrap(),
        ];
        names.sort();
        assert_eq!(names, ["a", "b"]);
        // Both held past the stall time: a third job goes straight to a thread... none is
        // idle, so it queues; nothing to nudge it to.
        queued(q.push(job("c")));
        assert!(!q.nudge());
        q.close();
    }
}
