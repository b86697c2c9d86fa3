//! [`StopSignal`]: wakes a thread blocked in a take (or the scheduler's wait) from another
//! thread, so that a shutdown or a thread's retirement never waits for a take's timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;

/// A one-way flag that, once raised, wakes every thread parked on it and keeps later
/// waits from blocking. Cheap to clone (the clones share the flag).
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    stopped: AtomicBool,
    parked: Mutex<Vec<Thread>>,
}

impl StopSignal {
    /// A signal not raised yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal and wakes the threads waiting on it.
    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        let parked = std::mem::take(&mut *self.lock());
        for thread in parked {
            thread.unpark();
        }
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Registers the calling thread to be unparked by [`stop`](Self::stop); returns false
    /// (registering nothing) if the signal is already raised. The caller deregisters with
    /// [`forget_current`](Self::forget_current) when it stops waiting.
    pub(crate) fn park_current(&self) -> bool {
        let mut parked = self.lock();
        if self.is_stopped() {
            return false;
        }
        let me = std::thread::current();
        if !parked.iter().any(|t| t.id() == me.id()) {
            parked.push(me);
        }
        true
    }

    pub(crate) fn forget_current(&self) {
        let me = std::thread::current().id();
        self.lock().retain(|t| t.id() != me);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Thread>> {
        self.inner
            .parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
