//! The one way a PHP thread comes to life: named, with the PHP stack size, attached to
//! TSRM, registered for the admin view, and detached again when its body returns. Every
//! PHP thread (classic, worker, autoscaled, a `max_requests` replacement) starts here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

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

/// Spawns a PHP thread named `name` in the pool `stats` describes. Its [`Slot`] (state
/// machine and counters) exists before the thread runs, so the pool can give it orders
/// at once; `body` runs attached to PHP and registered, and the thread ends in
/// `ThreadState::Done`.
pub(crate) fn spawn(
    name: String,
    stats: &Arc<PoolStats>,
    body: impl FnOnce(&Slot) + Send + 'static,
) -> std::io::Result<(Arc<Slot>, JoinHandle<()>)> {
    let slot = Arc::new(Slot::new(name.clone(), stats.clone()));
    let handle = std::thread::Builder::new()
        .name(name)
        .stack_size(php_stack_size())
        .spawn({
            let slot = slot.clone();
            move || {
                sapi::attach_thread();
                let registered = observe::enter(&slot);
                body(&slot);
                slot.state.done();
                drop(registered);
                sapi::detach_thread();
            }
        })?;
    Ok((slot, handle))
}
