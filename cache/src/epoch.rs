//! When retired cache memory may be freed: quiescent-state reclamation with per-block
//! reader bits, and nothing written to shared memory per fetch.
//!
//! Two things can point into a retired (overwritten, deleted, evicted) entry:
//!
//! 1. A thread inside a cache call that is walking the index. Each thread publishes, in
//!    its own record, the global epoch it saw when the call began (`active`) and resets
//!    it when the call ends. An entry retired at epoch `e` is out of reach of calls once
//!    every thread is idle or began its call after `e`. Calls are short, so this passes
//!    almost at once.
//! 2. PHP values handed out zero-copy: a fetched immutable array or string lives in the
//!    script's variables (and in anything copied from them, which keeps pointing at the
//!    shared keys and nested arrays) until the request that fetched it ends. The first
//!    time a thread hands a block out it sets its bit in the block's `readers` mask (once
//!    per thread and block, never per fetch). A retired block is freed only when every
//!    thread in its mask has ended the request during which it could have fetched it:
//!    its `request` epoch (set when a request starts, `OFFLINE` once its variables are
//!    destroyed) is past `e`.
//!
//! Publishing `active` must be ordered before the index reads that follow it (a
//! store-load order), which normally takes a full fence on every fetch. Instead the fence
//! is asymmetric: readers use a compiler fence and the reclaimer, which is rare, runs
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of the
//! process execute a full barrier before it returns. Where the kernel refuses membarrier
//! both sides fall back to `fence(SeqCst)`.
//!
//! In worker mode the worker script is one long request, so a worker thread holds every
//! block it ever handed out until its script ends or restarts: worker variables and
//! statics persist across HTTP requests, and an HTTP request's end is not a point where
//! they are gone. The memory this pins is counted as retired bytes; above the retired cap
//! fetches switch to copying (see `table.rs`) and `info()` reports it, so a worker pool
//! can restart its scripts.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{compiler_fence, fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// `active`: not inside a cache call.
pub(crate) const IDLE: u64 = u64::MAX;
/// `request`: no request running; the thread holds no cache value.
pub(crate) const OFFLINE: u64 = u64::MAX;
/// Threads beyond the first 63 share this reader bit.
const OVERFLOW_BIT: u32 = 63;

static EPOCH: AtomicU64 = AtomicU64::new(1);

/// Whether this process is registered for expedited private membarrier (decided once,
/// before the first thread record exists, so every reader and reclaimer agree).
static MEMBARRIER: OnceLock<bool> = OnceLock::new();

// linux/membarrier.h
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

fn membarrier(cmd: libc::c_long) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no user memory.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_long,
            0 as libc::c_long,
        ) == 0
    }
}

fn asymmetric_fences() -> bool {
    *MEMBARRIER.get_or_init(|| membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
}

/// The reader's half of the store-load fence (see the module docs).
#[inline]
fn light_fence(asymmetric: bool) {
    if asymmetric {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The reclaimer's half: after it returns, every store a reader made before its light
/// fence is visible here, and every load it makes after that fence sees our prior stores.
fn heavy_fence() {
    if !(asymmetric_fences() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
        fence(Ordering::SeqCst);
    }
}

/// One PHP thread as the cache sees it. Only the owning thread writes it; writers read it
/// when they reclaim, and `info()` sums the statistics.
#[repr(align(128))]
pub(crate) struct ThreadRec {
    active: AtomicU64,
    request: AtomicU64,
    bit: u32,
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
}

struct Registry {
    threads: Vec<Arc<ThreadRec>>,
    slots_used: u64,
    /// Statistics of threads that have exited.
    gone_hits: u64,
    gone_misses: u64,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    threads: Vec::new(),
    slots_used: 0,
    gone_hits: 0,
    gone_misses: 0,
});

/// The calling thread's record, and its pending LRU touches (flushed at request end).
pub(crate) struct Local {
    pub(crate) rec: Arc<ThreadRec>,
    pub(crate) touches: RefCell<Vec<(u32, u32)>>,
    /// Nesting of cache calls (an autoloader run while rebuilding an object may call the
    /// cache again); only the outermost call publishes and clears `active`.
    depth: Cell<u32>,
    /// `asymmetric_fences()`, read once.
    asymmetric: bool,
}

impl Local {
    fn new() -> Local {
        let asymmetric = asymmetric_fences();
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let free = !reg.slots_used & !(1u64 << OVERFLOW_BIT);
        let bit = if free == 0 {
            OVERFLOW_BIT
        } else {
            free.trailing_zeros()
        };
        if bit != OVERFLOW_BIT {
            reg.slots_used |= 1 << bit;
        }
        let rec = Arc::new(ThreadRec {
            active: AtomicU64::new(IDLE),
            request: AtomicU64::new(OFFLINE),
            bit,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        });
        reg.threads.push(rec.clone());
        Local {
            rec,
            touches: RefCell::new(Vec::new()),
            depth: Cell::new(0),
            asymmetric,
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.rec.active.store(IDLE, Ordering::Release);
        self.rec.request.store(OFFLINE, Ordering::Release);
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.threads.retain(|t| !Arc::ptr_eq(t, &self.rec));
        if self.rec.bit != OVERFLOW_BIT {
            reg.slots_used &= !(1 << self.rec.bit);
        }
        reg.gone_hits += self.rec.hits.load(Ordering::Relaxed);
        reg.gone_misses += self.rec.misses.load(Ordering::Relaxed);
    }
}

thread_local! {
    static LOCAL: Local = Local::new();
}

/// Runs `f` with the calling thread's record.
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// Adds one to a counter only this thread writes: a plain load and store, no RMW.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Marks the start of a cache call on this thread; everything it reads from the index
/// stays allocated until [`leave`].
#[inline]
pub(crate) fn enter(local: &Local) {
    let depth = local.depth.get();
    local.depth.set(depth + 1);
    if depth > 0 {
        return;
    }
    let rec = &local.rec;
    if rec.request.load(Ordering::Relaxed) == OFFLINE {
        // A call outside RINIT..post-deactivate (should not happen): act as a request.
        rec.request
            .store(EPOCH.load(Ordering::Acquire), Ordering::Release);
    }
    rec.active
        .store(EPOCH.load(Ordering::Acquire), Ordering::Release);
    // Pairs with the heavy fence in `Snapshot::take`: either the reclaimer sees our
    // epoch, or we see its unlinks.
    light_fence(local.asymmetric);
}

/// Ends a cache call on this thread.
#[inline]
pub(crate) fn leave(local: &Local) {
    let depth = local.depth.get().saturating_sub(1);
    local.depth.set(depth);
    if depth == 0 {
        local.rec.active.store(IDLE, Ordering::Release);
    }
}

/// Runs `f` as one cache call on this thread ([`enter`] before, [`leave`] after): what
/// it reads from the index stays allocated until it returns.
#[inline]
pub(crate) fn in_call<R>(f: impl FnOnce(&Local) -> R) -> R {
    with_local(|local| {
        enter(local);
        let r = f(local);
        leave(local);
        r
    })
}

/// The start epoch of this thread's current request (identifies the request).
pub(crate) fn current_request(local: &Local) -> u64 {
    local.rec.request.load(Ordering::Relaxed)
}

impl ThreadRec {
    /// The start epoch of this thread's current request, or OFFLINE.
    pub(crate) fn request(&self) -> u64 {
        self.request.load(Ordering::Acquire)
    }
}

/// Records that this thread hands `readers`' block out zero-copy.
#[inline]
pub(crate) fn mark_reader(local: &Local, readers: &AtomicU64) {
    let bit = 1u64 << local.rec.bit;
    // A read first: after the first fetch by this thread the line stays shared.
    if readers.load(Ordering::Relaxed) & bit == 0 {
        readers.fetch_or(bit, Ordering::Relaxed);
    }
}

/// A request starts on this thread (RINIT, including a worker script's boot request).
pub(crate) fn request_start() {
    with_local(|local| {
        local.depth.set(0);
        local.rec.active.store(IDLE, Ordering::Release);
        local
            .rec
            .request
            .store(EPOCH.load(Ordering::Acquire), Ordering::Release);
    });
}

/// This thread's request has ended and its variables are destroyed (post-deactivate).
pub(crate) fn request_end() {
    with_local(|local| {
        local.depth.set(0);
        local.rec.active.store(IDLE, Ordering::Release);
        local.rec.request.store(OFFLINE, Ordering::Release);
    });
}

/// Resets a cache call left open by a bailout (a fatal error longjmps over Rust frames).
pub(crate) fn reset_active() {
    with_local(|local| {
        local.depth.set(0);
        local.rec.active.store(IDLE, Ordering::Release);
    });
}

/// Starts a new epoch; what was unlinked before this call is "retired at" the returned
/// value.
pub(crate) fn retire_epoch() -> u64 {
    EPOCH.fetch_add(1, Ordering::SeqCst)
}

/// The threads' positions at one moment, to decide which retired items can go.
pub(crate) struct Snapshot {
    /// Oldest epoch a running cache call may have seen.
    min_active: u64,
    /// Per reader bit: oldest request start among the threads owning that bit.
    request: [u64; 64],
}

impl Snapshot {
    /// Takes the snapshot on the thread holding the writer lock. That thread's own call
    /// is not counted when it is not nested: a writer holds no node reference outside the
    /// lock, so what it retired can go at once (a nested call, e.g. a store from an
    /// autoloader run while a fetch rebuilds an object, keeps the outer call's nodes).
    pub(crate) fn take() -> Snapshot {
        let me = with_local(|l| (l.depth.get() <= 1).then_some(Arc::as_ptr(&l.rec)));
        heavy_fence();
        let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let mut snap = Snapshot {
            min_active: IDLE,
            request: [OFFLINE; 64],
        };
        for t in &reg.threads {
            if Some(Arc::as_ptr(t)) != me {
                snap.min_active = snap.min_active.min(t.active.load(Ordering::Acquire));
            }
            let r = &mut snap.request[t.bit as usize];
            *r = (*r).min(t.request.load(Ordering::Acquire));
        }
        snap
    }

    /// Whether an item retired at `epoch`, handed out by the threads in `readers`, is out
    /// of every thread's reach.
    pub(crate) fn can_free(&self, epoch: u64, readers: u64) -> bool {
        if self.min_active <= epoch {
            return false;
        }
        let mut bits = readers;
        while bits != 0 {
            let bit = bits.trailing_zeros();
            if self.request[bit as usize] <= epoch {
                return false;
            }
            bits &= bits - 1;
        }
        true
    }
}

/// Sum of every thread's (hits, misses), past and present.
pub(crate) fn stats() -> (u64, u64, usize) {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let mut hits = reg.gone_hits;
    let mut misses = reg.gone_misses;
    for t in &reg.threads {
        hits += t.hits.load(Ordering::Relaxed);
        misses += t.misses.load(Ordering::Relaxed);
    }
    (hits, misses, reg.threads.len())
}
