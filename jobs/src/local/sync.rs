//! The local store's fsync policy ([`Durability`]). Every write reaches the OS before the
//! call that made it returns (fjall flushes its journal's buffer on each batch), so a
//! `kill -9` of the process loses nothing that was returned. What a machine crash or
//! power loss can lose is bounded here: by an fsync on a timer ([`Durability::Interval`],
//! the default, like Redis's `appendfsync everysec`), or by an fsync before each dispatch
//! returns ([`Durability::Always`], group-committed: threads that wrote while one fsync
//! ran share the next one).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use fjall::{Database, PersistMode};

use crate::error::Result;

/// How far a returned write is from the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// In the OS's page cache only: survives the process being killed, not the machine
    /// crashing (the OS writes it back on its own schedule, typically within 30 s).
    Buffered,
    /// As [`Buffered`](Self::Buffered), plus an `fdatasync` of the journal at this
    /// interval when anything was written: a machine crash loses at most about this much
    /// time's writes.
    Interval(Duration),
    /// `fdatasync` before each dispatch (and each other write) returns.
    Always,
}

impl Default for Durability {
    fn default() -> Self {
        Self::Interval(DEFAULT_SYNC_INTERVAL)
    }
}

impl std::str::FromStr for Durability {
    type Err = crate::error::JobsError;

    /// `buffered` (no fsync), `always`, or an interval like `200ms` or `1s`.
    fn from_str(text: &str) -> Result<Self> {
        match text.trim() {
            "buffered" | "none" => Ok(Self::Buffered),
            "always" => Ok(Self::Always),
            other => match humantime::parse_duration(other) {
                Ok(every) if !every.is_zero() => Ok(Self::Interval(every)),
                _ => Err(crate::error::JobsError::InvalidArgument(format!(
                    "fsync policy {text:?}: expected buffered, always or an interval like 200ms"
                ))),
            },
        }
    }
}

/// The default fsync interval (see docs: measured cost in `jobs/benches/throughput.rs`).
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_millis(200);

/// Applies a [`Durability`] to one database.
pub(crate) struct Syncer {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

struct Shared {
    db: Database,
    mode: Durability,
    /// Writes that reached the OS.
    written: AtomicU64,
    /// Writes known to be on disk (the lock is held across an fsync, which is what
    /// groups the commits that queue up behind it).
    synced: Mutex<u64>,
    stopping: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    fn sync_through(&self, target: u64) -> Result<()> {
        let mut synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
        if *synced >= target {
            return Ok(());
        }
        let covered = self.written.load(Ordering::SeqCst);
        self.db.persist(PersistMode::SyncData)?;
        *synced = covered;
        Ok(())
    }
}

impl Syncer {
    pub(crate) fn new(db: Database, mode: Durability) -> Self {
        let shared = Arc::new(Shared {
            db,
            mode,
            written: AtomicU64::new(0),
            synced: Mutex::new(0),
            stopping: Mutex::new(false),
            wake: Condvar::new(),
        });
        let flusher = match mode {
            Durability::Interval(every) => {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("jobs-fsync".into())
                    .spawn(move || flush_loop(&shared, every))
                    .ok()
            }
            Durability::Buffered | Durability::Always => None,
        };
        Self { shared, flusher }
    }

    /// Called after each write batch reached the OS: makes it as durable as the mode says.
    pub(crate) fn written(&self) -> Result<()> {
        let seq = self.shared.written.fetch_add(1, Ordering::SeqCst) + 1;
        if self.shared.mode == Durability::Always {
            self.shared.sync_through(seq)?;
        }
        Ok(())
    }

    /// Forces everything written so far to disk.
    pub(crate) fn sync_now(&self) -> Result<()> {
        self.shared
            .sync_through(self.shared.written.load(Ordering::SeqCst))
    }
}

fn flush_loop(shared: &Shared, every: Duration) {
    let mut stopping = shared
        .stopping
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    while !*stopping {
        stopping = shared
            .wake
            .wait_timeout(stopping, every)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        let target = shared.written.load(Ordering::SeqCst);
        if let Err(e) = shared.sync_through(target) {
            tracing::error!(error = %e, "jobs: periodic fsync of the job store failed");
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        *self
            .shared
            .stopping
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
        if let Err(e) = self.sync_now() {
            tracing::error!(error = %e, "jobs: final fsync of the job store failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse() {
        assert_eq!("always".parse::<Durability>(), Ok(Durability::Always));
        assert_eq!("buffered".parse::<Durability>(), Ok(Durability::Buffered));
        assert_eq!(
            "200ms".parse::<Durability>(),
            Ok(Durability::Interval(Duration::from_millis(200)))
        );
        for bad in ["", "0s", "sometimes"] {
            assert!(bad.parse::<Durability>().is_err(), "{bad:?}");
        }
    }
}
