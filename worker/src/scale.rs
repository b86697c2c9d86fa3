//! Autoscaling, like FrankenPHP's `max_threads`: a pool keeps at least `min` threads and
//! may grow to `max`.
//!
//! The rule, checked by one watcher thread per pool that can grow (never on the request
//! path, which only does the queue's one atomic swap when a job finds no idle thread):
//!
//! - **Add** one thread when the oldest queued job has waited [`SCALE_AFTER`] for a
//!   thread, the server process used less than [`MAX_CPU_FOR_SCALING`] of the machine's
//!   CPUs over that wait (`getrusage` delta / wall time / CPUs: a saturated CPU would
//!   only share its time among more threads), no thread of the pool is still booting
//!   (a worker thread boots its script before it takes requests; adding more while one
//!   boots would overshoot), and the pool is below `max`.
//! - **Retire** a thread above `min` that waited `max_idle` for a job without getting
//!   one (the thread decides itself when its wait times out; see `Pool::try_retire`).

use std::sync::Weak;
use std::time::{Duration, Instant};

use crate::queue::JobQueue;

/// How long a request may wait for a thread before the pool grows.
pub(crate) const SCALE_AFTER: Duration = Duration::from_millis(5);

/// Above this share of the machine's CPUs used by the server, the pool does not grow.
pub(crate) const MAX_CPU_FOR_SCALING: f64 = 0.8;

/// How often a saturated pool looks again while its queue stays non-empty.
const SATURATED_RECHECK: Duration = Duration::from_millis(20);

/// The CPUs this process may use (affinity and cgroup quota included).
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How many threads a pool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scaling {
    /// The floor: started with the pool and never retired.
    pub(crate) min: usize,
    /// The ceiling (`min` when autoscaling is off).
    pub(crate) max: usize,
    /// How long a thread above the floor may wait for a job before it retires.
    pub(crate) max_idle: Duration,
}

/// Requests in flight per thread a pool may run: see [`Scaling::max_in_flight`].
const IN_FLIGHT_PER_THREAD: usize = 3;

impl Scaling {
    /// How many requests the HTTP side should let be in the pool at once: three per
    /// thread its ceiling allows, so each thread has one request running and about two
    /// queued behind it. A thread that finishes then takes its next request without
    /// sleeping, which saves a wake-up (a futex call and a context switch) per request
    /// under load. The queued ones still give up at their deadline (`Engine::withdraw`).
    /// Measured on worker hello (A/B, 2 cores, 32 connections, 4 threads): 1 -> 2 per
    /// thread +14% req/s and -20% CPU per request, 2 -> 3 about +5%, 3 -> 4 nothing.
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max * IN_FLIGHT_PER_THREAD
    }

    /// What the operator's views show of it.
    pub(crate) fn size(&self) -> crate::observe::PoolSize {
        crate::observe::PoolSize {
            min_threads: self.min,
            max_threads: self.max,
            max_in_flight: self.max_in_flight(),
        }
    }

    /// True when the pool may grow.
    pub(crate) fn scales(&self) -> bool {
        self.max > self.min
    }

    /// The idle wait after which a thread considers retiring; None when the pool is fixed.
    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        self.scales().then_some(self.max_idle)
    }
}

/// What a pool answered to a request to grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grown {
    Added,
    /// A thread is still booting: ask again later.
    Booting,
    /// At `max`, or stopping.
    No,
}

/// What the watcher needs of a pool.
pub(crate) trait Grow: Send + Sync {
    fn queue(&self) -> &JobQueue;
    fn grow(&self) -> Grown;
}

/// The server process's CPU time at one moment.
struct CpuSample {
    at: Instant,
    cpu: Duration,
}

impl CpuSample {
    fn now() -> CpuSample {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage fills the struct it is given when it returns 0; it is read
        // only then.
        let cpu = unsafe {
            if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) == 0 {
                let u = usage.assume_init();
                let tv = |t: libc::timeval| {
                    Duration::new(t.tv_sec as u64, (t.tv_usec as u32).saturating_mul(1000))
                };
                tv(u.ru_utime) + tv(u.ru_stime)
            } else {
                Duration::ZERO
            }
        };
        CpuSample {
            at: Instant::now(),
            cpu,
        }
    }

    /// The share of all CPUs the process used since `self` (0.0 to 1.0).
    fn busy_since(&self, now: &CpuSample, cpus: usize) -> f64 {
        let wall = now.at.duration_since(self.at).as_secs_f64() * cpus.max(1) as f64;
        if wall <= 0.0 {
            return 0.0;
        }
        now.cpu.saturating_sub(self.cpu).as_secs_f64() / wall
    }
}

/// The watcher's loop, on its own (non-PHP) thread until the pool's queue closes or the
/// pool is gone.
pub(crate) fn watch(pool: Weak<dyn Grow>, name: String) {
    match pool.upgrade() {
        Some(p) => p.queue().set_watcher(),
        None => return,
    }
    let cpus = cpus();
    loop {
        std::thread::park_timeout(Duration::from_secs(1));
        let Some(p) = pool.upgrade() else { return };
        let queue = p.queue();
        if queue.is_closed() {
            return;
        }
        queue.watcher_looked();
        let mut sample = CpuSample::now();
        while let Some(waited) = queue.oldest_wait() {
            if queue.is_closed() {
                return;
            }
            // Wait until the oldest job has waited SCALE_AFTER, and for at least that long
            // since the CPU sample, so the CPU share covers a real window.
            let window = sample.at.elapsed();
            let sleep = SCALE_AFTER
                .saturating_sub(waited)
                .max(SCALE_AFTER.saturating_sub(window));
            if !sleep.is_zero() {
                std::thread::sleep(sleep);
                continue;
            }
            let now = CpuSample::now();
            let busy = sample.busy_since(&now, cpus);
            sample = now;
            if busy >= MAX_CPU_FOR_SCALING {
                tracing::debug!(pool = %name, busy, "requests wait, but CPU is saturated: not growing");
                std::thread::sleep(SATURATED_RECHECK);
                continue;
            }
            match p.grow() {
                Grown::Added => {
                    tracing::debug!(pool = %name, waited_ms = waited.as_millis() as u64, busy, "autoscaling: added a PHP thread");
                }
                Grown::Booting => std::thread::sleep(SCALE_AFTER),
                Grown::No => {
                    // At the ceiling: pushes keep poking while the queue is full; look at
                    // most this often.
                    std::thread::sleep(SATURATED_RECHECK);
                    break;
                }
            }
        }
    }
}
