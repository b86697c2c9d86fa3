//! The one way a PHP thread comes to life: named, with the PHP stack size, attached to
//! TSRM, registered for the admin view, and detached again when its body returns. Every
//! PHP thread (classic, worker, autoscaled, a `max_requests` replacement) starts here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::deadline;
use crate::observe::{self, PoolStats, Slot};
use crate::sapi;

/// PHP 8.2 has no stack-overflow guard: recursion that nests C frames (a callback of
/// `array_map`, `usort`, `__toString`...) must reach memory_limit before the end of the
/// stack, where a guard page kills the whole process. Default size: see
/// docs/operating.md ("Deep recursion"). The stack is reserved address space; only the
/// pages a recursion touches take memory.
pub const DEFAULT_PHP_STACK_SIZE: usize = 512 * 1024 * 1024;

static PHP_STACK_SIZE: AtomicUsize = AtomicUsize::new(DEFAULT_PHP_STACK_SIZE);

/// The stack size PHP threads are spawned with (`EngineConfig::php_stack_size`).
pub(crate) fn php_stack_size() -> usize {
    PHP_STACK_SIZE.load(Ordering::Relaxed)
}

/// Set once by `Engine::start`, before any PHP thread exists.
pub(crate) fn set_php_stack_size(bytes: usize) {
    PHP_STACK_SIZE.store(bytes, Ordering::Relaxed);
}

/// Puts the calling PHP thread in Linux's `SCHED_BATCH` class: same priority and share
/// of CPU time, but no wakeup preemption. Programs PHP starts inherit it (the kernel's
/// reset-on-fork flag only undoes real-time classes), which changes nothing for them but
/// that same preemption rule.
///
/// Why: an I/O thread that hands a job to a sleeping PHP thread wakes it; as a normal
/// thread the woken one preempted that I/O thread at once on a busy machine, so the I/O
/// thread stopped feeding the pool and answering clients in the middle of its batch of
/// events, and the PHP thread, soon out of work, slept again. As a batch thread it runs
/// when a CPU comes free (at once when one is idle). Measured in docs/benchmarks.md
/// (tokio threads' preemptions 0.36 -> 0.12 per hello-world request). Failure (a
/// seccomp profile that forbids it) leaves the thread as it was.
fn schedule_as_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads `param` (a valid, initialised struct that outlives
    // the call) and changes only the calling thread (pid 0) in the kernel; no memory of
    // ours is written.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if rc != 0 {
        tracing::debug!(
            "PHP thread stays in the normal scheduling class: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Spawns a PHP thread named `name` in the pool `stats` describes. Its [`Slot`] (state
/// machine and counters) exists before the thread runs, so the pool can give it orders
/// at once; `body` runs attached to PHP and registered (for the admin view and the
/// deadline watchdog, which calls `replace` if it ever retires the thread), and the
/// thread ends in `ThreadState::Done`.
pub(crate) fn spawn(
    name: String,
    stats: &Arc<PoolStats>,
    replace: Box<dyn Fn() + Send + Sync>,
    body: impl FnOnce(&Slot) + Send + 'static,
) -> std::io::Result<(Arc<Slot>, JoinHandle<()>)> {
    let slot = Arc::new(Slot::new(name.clone(), stats.clone()));
    let handle = std::thread::Builder::new()
        .name(name)
        .stack_size(php_stack_size())
        .spawn({
            let slot = slot.clone();
            move || {
                schedule_as_batch();
                sapi::attach_thread();
                let registered = observe::enter(&slot);
                deadline::register(slot.clone(), replace);
                body(&slot);
                slot.state.done();
                drop(registered);
                let was_retired = deadline::unregister();
                sapi::detach_thread();
                if was_retired {
                    deadline::retired_thread_ended();
                }
            }
        })?;
    Ok((slot, handle))
}
