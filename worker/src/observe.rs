//! What an operator can observe of the runtime: each PHP thread's state (the admin
//! `/threads` view), per-pool counters (busy/ready threads, boots, crashes, restarts,
//! requests and their time) and the shared cache's counters (for `/metrics`).
//!
//! Kept deliberately small and separate from the pool and worker code: a thread registers
//! a `Slot` once when it starts, and the request path only does a few relaxed atomic
//! operations plus one uncontended per-thread mutex (the current URI, which only the
//! admin view reads). Nothing here is derived by iterating requests; a scrape iterates
//! the (few) threads and pools. A thread's state is its state machine's
//! (`thread_state.rs`), held in its `Slot` and read here.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

extern "C" {
    // Exported by libphp (ZEND_API); declared here rather than in php-sys's allowlist so
    // that observing memory does not change the shared bindings. Reads the calling
    // thread's own heap (AG is per thread under ZTS).
    fn zend_memory_usage(real_usage: bool) -> usize;
}

/// The calling PHP thread's heap: what PHP code holds (`memory_get_usage()`), or with
/// `real`, what ZendMM holds from the OS (`memory_get_usage(true)`). Call it only on a
/// thread attached to PHP.
pub(crate) fn php_memory_usage(real: bool) -> usize {
    // SAFETY: every caller runs on a PHP thread after attach_thread; the function only
    // reads that thread's own allocator globals (AG is per thread under ZTS).
    unsafe { zend_memory_usage(real) }
}

use crate::thread_state::StateCell;
pub use crate::thread_state::ThreadState;

/// What a pool's threads do. Each pool of the engine has one kind, and the operator's
/// views (`/metrics`, `/threads`, `/status`) match on it rather than on a flag, so a new
/// kind of pool is a compile error wherever a view has to decide how to show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Classic threads: each request runs its script from scratch, as under php-fpm.
    Classic,
    /// A worker script's threads: the script boots once per thread and serves requests
    /// in a loop.
    Worker,
    /// A background script's threads: the script runs in a loop, outside any request.
    Background,
}

impl PoolKind {
    /// `"classic"`, `"worker"` or `"background"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolKind::Classic => "classic",
            PoolKind::Worker => "worker",
            PoolKind::Background => "background",
        }
    }
}

/// A pool's place among the process's pools: the order they were registered in, which is
/// the order [`pools`] lists them. It never changes for the pool's life, and nothing
/// else about a pool follows from it (ask its [`PoolKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolId(usize);

impl PoolId {
    /// The position in [`pools`], from 0.
    pub fn index(self) -> usize {
        self.0
    }
}

/// How many threads a pool may run and how many requests it takes in, fixed when it
/// starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolSize {
    /// The floor: threads started with the pool and never retired for idling.
    pub min_threads: usize,
    /// The ceiling (`min_threads` when the pool does not autoscale).
    pub max_threads: usize,
    /// Requests the HTTP side lets into the pool at once (`Engine::max_in_flight`).
    pub max_in_flight: usize,
}

/// Counters of one pool of PHP threads: the classic pool or one worker script's.
#[derive(Debug)]
pub struct PoolStats {
    /// Its place among the process's pools.
    pub id: PoolId,
    /// `"classic"` or the worker's name (its script's path unless named).
    pub name: String,
    /// The same, shared with each thread's state machine (for its log lines).
    label: Arc<str>,
    /// What its threads do.
    pub kind: PoolKind,
    /// Its floor, ceiling and admission.
    pub size: PoolSize,
    threads: AtomicI64,
    busy: AtomicI64,
    /// Worker threads that have reached `ferrophp_handle_request` in their current run.
    ready: AtomicI64,
    requests: AtomicU64,
    request_micros: AtomicU64,
    boots: AtomicU64,
    crashes: AtomicU64,
    restarts: AtomicU64,
    memory_restarts: AtomicU64,
    /// Jobs in the pool's queue that no thread has taken yet.
    queued: AtomicI64,
    /// Summed time jobs spent in the queue before a thread took them.
    queue_wait_micros: AtomicU64,
    /// The deepest the queue has been, and the most threads busy at once (`/status`).
    max_queued: AtomicI64,
    max_busy: AtomicI64,
    /// Times the autoscaler wanted another thread while at the ceiling.
    max_children_reached: AtomicU64,
    /// Requests that ran longer than `--slow-request-ms`.
    slow: AtomicU64,
}

/// A copy of [`PoolStats`] at one moment.
#[derive(Debug, Clone)]
pub struct PoolInfo {
    /// Its place among the process's pools ([`PoolStats::id`]).
    pub id: PoolId,
    /// `"classic"` or the worker's name ([`PoolStats::name`]).
    pub name: String,
    /// What its threads do.
    pub kind: PoolKind,
    /// Its floor, ceiling and admission.
    pub size: PoolSize,
    /// PHP threads alive now.
    pub threads: u64,
    /// Threads running a request now.
    pub busy: u64,
    /// Worker threads that have reached `ferrophp_handle_request` in their current run.
    pub ready: u64,
    /// Requests served since start.
    pub requests: u64,
    /// Summed time of those requests.
    pub request_seconds: f64,
    /// Times a worker script booted on one of the threads (first boots included).
    pub boots: u64,
    /// Times a worker script ended by itself (exit, fatal error) and was booted again.
    pub crashes: u64,
    /// Times a thread's worker script was restarted (an order, cache pressure, the
    /// memory guard).
    pub restarts: u64,
    /// Restarts by the worker memory guard (`--worker-memory-growth`), also in `restarts`.
    pub memory_restarts: u64,
    /// Requests in the pool's queue now, waiting for a thread to take them.
    pub queued: u64,
    /// Summed time requests waited in the pool's queue, since start.
    pub queue_wait_seconds: f64,
    /// The deepest the pool's queue has been since start.
    pub max_queued: u64,
    /// The most threads of the pool busy at once since start.
    pub max_busy: u64,
    /// Times the autoscaler found requests waiting and the pool at its ceiling (php-fpm's
    /// "max children reached"; a pool that does not scale never tries).
    pub max_children_reached: u64,
    /// Requests that ran longer than `--slowlog-ms` or `--slow-request-ms`, each counted
    /// once (see [`set_slow_request_threshold`]).
    pub slow_requests: u64,
}

static POOLS: Mutex<Vec<Arc<PoolStats>>> = Mutex::new(Vec::new());
static THREADS: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());

impl PoolStats {
    /// Registers a pool (once, when it starts); it is listed after the pools registered
    /// before it.
    pub(crate) fn register(name: String, kind: PoolKind, size: PoolSize) -> Arc<PoolStats> {
        let mut pools = POOLS.lock().unwrap();
        let stats = Arc::new(PoolStats {
            id: PoolId(pools.len()),
            label: Arc::from(name.as_str()),
            name,
            kind,
            size,
            threads: AtomicI64::new(0),
            busy: AtomicI64::new(0),
            ready: AtomicI64::new(0),
            requests: AtomicU64::new(0),
            request_micros: AtomicU64::new(0),
            boots: AtomicU64::new(0),
            crashes: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            memory_restarts: AtomicU64::new(0),
            queued: AtomicI64::new(0),
            queue_wait_micros: AtomicU64::new(0),
            max_queued: AtomicI64::new(0),
            max_busy: AtomicI64::new(0),
            max_children_reached: AtomicU64::new(0),
            slow: AtomicU64::new(0),
        });
        pools.push(stats.clone());
        stats
    }

    /// A worker script (re)boots on one thread.
    pub(crate) fn boot(&self) {
        self.boots.fetch_add(1, Ordering::Relaxed);
    }

    /// A worker script ended by itself (exit, fatal error) and will be booted again.
    pub(crate) fn crash(&self) {
        self.crashes.fetch_add(1, Ordering::Relaxed);
    }

    /// One thread's worker script is being restarted (restart request, cache pressure).
    pub(crate) fn restart(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// One thread's worker script is restarted because its PHP memory grew past the guard.
    pub(crate) fn memory_restart(&self) {
        self.memory_restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// The queue's depth changed (under the queue's lock, so stores land in order).
    pub(crate) fn set_queued(&self, jobs: usize) {
        self.queued.store(jobs as i64, Ordering::Relaxed);
        self.max_queued.fetch_max(jobs as i64, Ordering::Relaxed);
    }

    /// The autoscaler wanted to add a thread and the pool was at its ceiling.
    pub(crate) fn reached_ceiling(&self) {
        self.max_children_reached.fetch_add(1, Ordering::Relaxed);
    }

    /// A thread took a job that had waited in the queue.
    pub(crate) fn queue_waited(&self, waited: std::time::Duration) {
        self.queue_wait_micros
            .fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn info(&self) -> PoolInfo {
        let g = |a: &AtomicI64| a.load(Ordering::Relaxed).max(0) as u64;
        PoolInfo {
            id: self.id,
            name: self.name.clone(),
            kind: self.kind,
            size: self.size,
            threads: g(&self.threads),
            busy: g(&self.busy),
            ready: g(&self.ready),
            requests: self.requests.load(Ordering::Relaxed),
            request_seconds: self.request_micros.load(Ordering::Relaxed) as f64 / 1e6,
            boots: self.boots.load(Ordering::Relaxed),
            crashes: self.crashes.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
            memory_restarts: self.memory_restarts.load(Ordering::Relaxed),
            queued: g(&self.queued),
            queue_wait_seconds: self.queue_wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
            max_queued: g(&self.max_queued),
            max_busy: g(&self.max_busy),
            max_children_reached: self.max_children_reached.load(Ordering::Relaxed),
            slow_requests: self.slow.load(Ordering::Relaxed),
        }
    }
}

/// One PHP thread: its state machine and what the admin view shows of it. Created by
/// `spawn` before the thread starts; listed from [`enter`] until the [`SlotGuard`] drops.
#[derive(Debug)]
pub(crate) struct Slot {
    name: String,
    pool: Arc<PoolStats>,
    /// The thread's state: the only place it lives (`thread_state.rs`).
    pub(crate) state: StateCell,
    ready: std::sync::atomic::AtomicBool,
    requests: AtomicU64,
    memory: AtomicU64,
    /// "METHOD URI" of the running request, or of the last one when `running` is false
    /// (empty before the first). The buffer is reused.
    current: Mutex<String>,
    running: std::sync::atomic::AtomicBool,
    started: Mutex<Option<Instant>>,
    /// How long the last request ran, in microseconds.
    last_micros: AtomicU64,
    /// The OS thread id (set when the thread lists itself) and its start (Unix ms).
    tid: AtomicI64,
    started_unix_ms: u64,
    /// Unix time in ms of the last begin or end (FrankenPHP's threads view reports the
    /// request's start and how long an idle thread has waited).
    since_ms: AtomicU64,
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Registration of the calling PHP thread; unregisters on drop.
pub(crate) struct SlotGuard(Arc<Slot>);

impl std::ops::Deref for SlotGuard {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        &self.0
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.set_ready(false);
        // The pool's count changes under the list's lock, after the list: a view of the
        // list that did not change around a read of the count agrees with that count.
        let mut threads = THREADS.lock().unwrap();
        threads.retain(|s| !Arc::ptr_eq(s, &self.0));
        self.0.pool.threads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Lists `slot` (the calling thread's) until the guard drops. Once, when the thread
/// starts, after it attached to PHP.
pub(crate) fn enter(slot: &Arc<Slot>) -> SlotGuard {
    // SAFETY: gettid has no arguments and cannot fail.
    slot.tid
        .store(unsafe { libc::gettid() } as i64, Ordering::Relaxed);
    // As in the guard's drop: the list first, the count under the same lock.
    let mut threads = THREADS.lock().unwrap();
    threads.push(slot.clone());
    slot.pool.threads.fetch_add(1, Ordering::Relaxed);
    drop(threads);
    SlotGuard(slot.clone())
}

impl Slot {
    pub(crate) fn new(name: String, pool: Arc<PoolStats>) -> Slot {
        Slot {
            state: StateCell::new(name.clone(), pool.label.clone()),
            name,
            pool,
            ready: std::sync::atomic::AtomicBool::new(false),
            requests: AtomicU64::new(0),
            memory: AtomicU64::new(0),
            current: Mutex::new(String::new()),
            running: std::sync::atomic::AtomicBool::new(false),
            started: Mutex::new(None),
            last_micros: AtomicU64::new(0),
            tid: AtomicI64::new(0),
            started_unix_ms: unix_ms(),
            since_ms: AtomicU64::new(unix_ms()),
        }
    }

    /// Whether this worker thread's script is in its request loop (FrankenPHP's
    /// "ready workers").
    pub(crate) fn set_ready(&self, ready: bool) {
        if self.ready.swap(ready, Ordering::Relaxed) != ready {
            self.pool
                .ready
                .fetch_add(if ready { 1 } else { -1 }, Ordering::Relaxed);
        }
    }

    /// The thread's name (`php-3`, `php-worker-0`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its pool's name (`classic` or the worker script).
    pub(crate) fn pool_name(&self) -> &str {
        &self.pool.name
    }

    /// "METHOD URI" of the request running now, if any.
    pub(crate) fn current_request(&self) -> Option<String> {
        let cur = self.current.lock().unwrap();
        (!cur.is_empty()).then(|| cur.clone())
    }

    /// A request starts on this thread.
    pub(crate) fn begin(&self, method: &str, uri: &str) {
        let busy = self.pool.busy.fetch_add(1, Ordering::Relaxed) + 1;
        // Read first: a new high is rare, and the load shares the busy count's cache line.
        if busy > self.pool.max_busy.load(Ordering::Relaxed) {
            self.pool.max_busy.fetch_max(busy, Ordering::Relaxed);
        }
        self.running.store(true, Ordering::Relaxed);
        let mut cur = self.current.lock().unwrap();
        cur.clear();
        cur.push_str(method);
        cur.push(' ');
        cur.push_str(uri);
        drop(cur);
        *self.started.lock().unwrap() = Some(Instant::now());
        self.since_ms.store(unix_ms(), Ordering::Relaxed);
    }

    /// The request ended; records its time and the thread's PHP memory. Returns how
    /// long it ran.
    pub(crate) fn end(&self) -> std::time::Duration {
        self.end_with_heap(php_memory_usage(true))
    }

    /// As [`Slot::end`], with the thread's PHP heap (`memory_get_usage(true)`) read by
    /// the caller.
    pub(crate) fn end_with_heap(&self, heap_bytes: usize) -> std::time::Duration {
        let took = self
            .started
            .lock()
            .unwrap()
            .take()
            .map_or(std::time::Duration::ZERO, |t| t.elapsed());
        let micros = took.as_micros() as u64;
        // The request line stays, as the last request's (php-fpm's status shows it).
        self.running.store(false, Ordering::Relaxed);
        self.last_micros.store(micros, Ordering::Relaxed);
        let warn_after = SLOW_REQUEST_MICROS.load(Ordering::Relaxed);
        let logged_after = SLOWLOG_MICROS.load(Ordering::Relaxed);
        let past = |threshold: u64| threshold > 0 && micros >= threshold;
        if past(warn_after) || past(logged_after) {
            // Once per request, whichever threshold it passed: the one count `/status`
            // and `/metrics` both show.
            self.pool.slow.fetch_add(1, Ordering::Relaxed);
        }
        if past(warn_after) {
            tracing::warn!(
                thread = %self.name,
                pool = %self.pool.name,
                request = %self.current.lock().unwrap(),
                millis = micros / 1000,
                "slow request (--slow-request-ms)"
            );
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.pool.requests.fetch_add(1, Ordering::Relaxed);
        self.pool
            .request_micros
            .fetch_add(micros, Ordering::Relaxed);
        self.memory.store(heap_bytes as u64, Ordering::Relaxed);
        self.since_ms.store(unix_ms(), Ordering::Relaxed);
        self.pool.busy.fetch_sub(1, Ordering::Relaxed);
        took
    }

    /// Records what the thread's PHP heap holds from the OS (`memory_get_usage(true)`).
    pub(crate) fn record_memory(&self) {
        // Slots are registered after attach_thread, on the thread they describe.
        self.memory
            .store(php_memory_usage(true) as u64, Ordering::Relaxed);
    }
}

/// Requests longer than this (microseconds) are slow and logged as such when they end
/// (`--slow-request-ms`); 0: off.
static SLOW_REQUEST_MICROS: AtomicU64 = AtomicU64::new(0);
/// Requests longer than this (microseconds) got a slow-log entry with their stack
/// (`--slowlog-ms`, written by `deadline.rs` while they run), so they are slow too; 0: off.
static SLOWLOG_MICROS: AtomicU64 = AtomicU64::new(0);

fn micros_or_off(threshold: Option<std::time::Duration>) -> u64 {
    threshold.map_or(0, |t| t.as_micros().max(1) as u64)
}

/// Sets the slow-request threshold (`--slow-request-ms`; None: off).
///
/// A request is counted slow (`PoolInfo::slow_requests`: php-fpm's "slow requests" on
/// `/status`, `ferrophp_slow_requests_total` on `/metrics`) once, when it ends, if it ran
/// past this threshold or the slow log's (`DeadlineConfig::slowlog`), whichever it passed.
pub fn set_slow_request_threshold(threshold: Option<std::time::Duration>) {
    SLOW_REQUEST_MICROS.store(micros_or_off(threshold), Ordering::Relaxed);
}

/// The slow log's threshold, for the count (see [`set_slow_request_threshold`]); set by
/// `Engine::start`.
pub(crate) fn set_slowlog_threshold(threshold: Option<std::time::Duration>) {
    SLOWLOG_MICROS.store(micros_or_off(threshold), Ordering::Relaxed);
}

/// One PHP thread in the admin `/threads` and `/status?full` views.
#[derive(Debug, Clone)]
pub struct ThreadInfo {
    /// The thread's name (`php-N`, `php-worker-N`...).
    pub name: String,
    /// The OS thread id.
    pub tid: i64,
    /// `"classic"` or the worker script.
    pub pool: String,
    /// Where the thread is in its life (booting, idle, busy...).
    pub state: ThreadState,
    /// `"METHOD URI"` of the request running now, if any.
    pub current: Option<String>,
    /// `"METHOD URI"` of the last request, when none runs now.
    pub last: Option<String>,
    /// How long the running request has run so far, else how long the last one ran.
    pub request_micros: u64,
    /// Unix time (ms) the thread started.
    pub started_unix_ms: u64,
    /// Requests the thread has served.
    pub requests: u64,
    /// Bytes the thread's PHP heap holds from the OS, as of its last request.
    pub memory_bytes: u64,
    /// Unix time (ms) the running request started, or the thread became idle.
    pub since_unix_ms: u64,
    /// What its pool's threads do.
    pub kind: PoolKind,
}

/// Every PHP thread alive now.
pub fn threads() -> Vec<ThreadInfo> {
    let slots: Vec<Arc<Slot>> = THREADS.lock().unwrap().clone();
    slots
        .iter()
        .map(|s| {
            let cur = s.current.lock().unwrap();
            let running = s.running.load(Ordering::Relaxed) && !cur.is_empty();
            let elapsed = s
                .started
                .lock()
                .unwrap()
                .map(|t| t.elapsed().as_micros() as u64);
            ThreadInfo {
                name: s.name.clone(),
                tid: s.tid.load(Ordering::Relaxed),
                pool: s.pool.name.clone(),
                state: s.state.get(),
                current: running.then(|| cur.clone()),
                last: (!running && !cur.is_empty()).then(|| cur.clone()),
                request_micros: match (running, elapsed) {
                    (true, Some(e)) => e,
                    _ => s.last_micros.load(Ordering::Relaxed),
                },
                started_unix_ms: s.started_unix_ms,
                requests: s.requests.load(Ordering::Relaxed),
                memory_bytes: s.memory.load(Ordering::Relaxed),
                since_unix_ms: s.since_ms.load(Ordering::Relaxed),
                kind: s.pool.kind,
            }
        })
        .collect()
}

/// Every pool registered so far, in the order they started (each at its [`PoolId`]).
pub fn pools() -> Vec<PoolInfo> {
    POOLS.lock().unwrap().iter().map(|p| p.info()).collect()
}

/// The shared cache's counters (the same numbers as `UserCache\Cache::info()`).
pub use ferrophp_cache::Stats as CacheInfo;

/// The shared cache's counters now.
pub fn cache() -> CacheInfo {
    ferrophp_cache::stats()
}
