//! The local backend: jobs in an embedded fjall database under `<data-dir>/jobs/`, indexed
//! in memory ([`state`]), made durable per the [`Durability`] policy ([`sync`]).
//!
//! Why fjall: an LSM store in pure Rust with a write-ahead journal whose every batch is
//! handed to the OS before the write returns (so `kill -9` loses nothing returned),
//! atomic multi-keyspace batches (a job's record and payload appear and vanish together),
//! and an explicit `persist` for fsync, which lets the fsync policy be ours. The Mercure
//! hub's history uses the same crate, so the server carries one storage engine.
//!
//! What is written when: dispatch writes one value, the job's record followed by its
//! payload, in the `jobs` keyspace (one journal write per dispatch); every later change
//! writes only the small record, in the `state` keyspace, which overrides the first one: a
//! take records the attempt (so a job whose worker dies every time still runs out of
//! attempts), fail and lease expiry record the outcome; ack deletes both in one batch.
//! Leases live in memory only: at open every job stored as taken is ready again.

mod record;
mod state;
mod sync;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

pub use sync::{Durability, DEFAULT_SYNC_INTERVAL};

use self::record::{format_id, id_of_key, key, parse_id, JobRecord, StoredState};
use self::state::{State, Waiter};
use self::sync::Syncer;
use crate::backend::Backend;
use crate::error::{JobsError, Result};
use crate::job::{
    due_ms_after, duration_ms, from_ms, now_ms, DeadJob, DispatchOptions, DispatchOutcome,
    FailOutcome, Lease, QueueCounts,
};
use crate::schedule::{Claim, ScheduleStore};
use crate::stats::QueueStats;
use crate::stop::StopSignal;

/// Ids are `boot << 40 | sequence`: the boot number, bumped and synced at each open, keeps
/// ids unique across restarts without a write per dispatch.
const SEQUENCE_BITS: u32 = 40;

/// The longest a take parks without looking at the timers again: a lease taken by another
/// thread after this one parked may expire before the timer it computed.
const MAX_PARK: Duration = Duration::from_secs(1);

/// The fjall keyspaces of the job store.
struct Store {
    db: Database,
    jobs: Keyspace,
    state: Keyspace,
    meta: Keyspace,
    syncer: Syncer,
}

impl Store {
    fn write_record(&self, id: u64, record: &JobRecord) -> Result<()> {
        self.state.insert(key(id), record.encode())?;
        Ok(())
    }

    /// A live job's payload.
    fn payload(&self, id: u64) -> Result<Vec<u8>> {
        let value = self
            .jobs
            .get(key(id))?
            .ok_or_else(|| JobsError::Storage(format!("job {} has no payload", format_id(id))))?;
        Ok(record::split_job(&value)?.1.to_vec())
    }
}

/// The local job store.
pub(crate) struct LocalBackend {
    store: Arc<Store>,
    state: Mutex<State>,
    stats: Arc<QueueStats>,
    closed: StopSignal,
    id_base: u64,
    sequence: AtomicU64,
}

impl LocalBackend {
    /// Opens (creating if needed) the store in `dir` and makes every job that was taken
    /// when the last process ended deliverable again.
    pub(crate) fn open(dir: &Path, durability: Durability, stats: Arc<QueueStats>) -> Result<Self> {
        if !dir.exists() {
            create(dir)?;
        }
        let db = Database::builder(dir).open().map_err(|e| match e {
            fjall::Error::Locked => JobsError::Storage(format!(
                "the job store {} is in use by another process",
                dir.display()
            )),
            other => other.into(),
        })?;
        let jobs = db.keyspace("jobs", KeyspaceCreateOptions::default)?;
        let state = db.keyspace("state", KeyspaceCreateOptions::default)?;
        let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
        let boot = match meta.get("boot")? {
            Some(v) => u64::from_be_bytes(
                v.as_ref()
                    .try_into()
                    .map_err(|_| JobsError::Storage("unreadable boot counter".into()))?,
            ),
            None => 0,
        } + 1;
        meta.insert("boot", boot.to_be_bytes())?;
        db.persist(PersistMode::SyncAll)?;
        let syncer = Syncer::new(db.clone(), durability);
        let store = Arc::new(Store {
            db,
            jobs,
            state,
            meta,
            syncer,
        });
        let state = recover(&store)?;
        Ok(Self {
            store,
            state: Mutex::new(state),
            stats,
            closed: StopSignal::new(),
            id_base: boot << SEQUENCE_BITS,
            sequence: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Promotes due delayed jobs and expires passed leases.
    fn tick(&self, state: &mut State, now: u64) -> Result<()> {
        for id in state.due_delayed(now) {
            let Some(mut job) = state.detach(id) else {
                continue;
            };
            job.record.state = StoredState::Ready;
            let write = self.store.write_record(id, &job.record);
            let queue = job.record.queue.clone();
            state.insert(id, job.record);
            write?;
            state.wake_one(&queue);
        }
        for id in state.expired_leases(now) {
            let Some(job) = state.detach(id) else {
                continue;
            };
            let mut record = job.record;
            QueueStats::add(&self.stats.expired, 1);
            let reason = format!(
                "lease expired: not acknowledged within {} ms (attempt {} of {})",
                record.visibility_ms, record.attempts, record.max_attempts
            );
            record.last_error = Some(reason);
            if record.attempts >= record.max_attempts {
                record.state = StoredState::Dead { at_ms: now };
                state.release_unique(id, &record);
                QueueStats::add(&self.stats.dead, 1);
            } else {
                record.state = StoredState::Ready;
                QueueStats::add(&self.stats.retried, 1);
            }
            let write = self.store.write_record(id, &record);
            let queue = record.queue.clone();
            state.insert(id, record);
            write?;
            state.wake_one(&queue);
        }
        Ok(())
    }

    /// Checks that `lease` is the job's current lease and returns the job's id.
    fn check_lease(state: &State, lease: &Lease) -> Result<u64> {
        let lost = || JobsError::LeaseLost {
            id: lease.id.clone(),
        };
        let id = parse_id(&lease.id).ok_or_else(lost)?;
        match state.jobs.get(&id).and_then(|j| j.lease) {
            Some((token, _)) if token == lease.token => Ok(id),
            _ => Err(lost()),
        }
    }

    /// Takes the next ready job of `queues` if there is one.
    fn try_take(&self, state: &mut State, queues: &[&str], now: u64) -> Result<Option<Lease>> {
        let Some(id) = state.peek_ready(queues) else {
            return Ok(None);
        };
        let Some(job) = state.jobs.get(&id) else {
            return Ok(None);
        };
        let mut record = job.record.clone();
        record.attempts += 1;
        record.state = StoredState::Taken;
        self.store.write_record(id, &record)?;
        let token = fastrand::u64(..);
        let deadline = now.saturating_add(record.visibility_ms);
        let lease = Lease {
            id: format_id(id),
            queue: record.queue.clone(),
            payload: Vec::new(),
            attempt: record.attempts,
            max_attempts: record.max_attempts,
            token,
        };
        state.lease(id, record, token, deadline);
        Ok(Some(lease))
    }
}

/// Creates an empty store at `dir`. fjall's own creation is not atomic (a process killed
/// during it leaves files that make the next open fail), so the store is made in a
/// sibling folder and renamed into place once complete.
fn create(dir: &Path) -> Result<()> {
    let io = |what: &str, e: std::io::Error| JobsError::Storage(format!("{what}: {e}"));
    let staging = dir.with_extension("creating");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io("cannot clear a half-made store", e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| io("cannot create the job store", e))?;
    {
        let db = Database::builder(&staging).open()?;
        db.keyspace("meta", KeyspaceCreateOptions::default)?;
        db.persist(PersistMode::SyncAll)?;
    }
    std::fs::rename(&staging, dir).map_err(|e| io("cannot move the new job store in place", e))?;
    if let Some(parent) = dir.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("cannot sync the data directory", e))?;
    }
    Ok(())
}

/// Rebuilds the index from the store; jobs stored as taken become ready again, or dead
/// if that attempt was their last.
fn recover(store: &Store) -> Result<State> {
    let mut latest = std::collections::HashMap::new();
    for item in store.state.iter() {
        let (k, v) = item.into_inner()?;
        latest.insert(id_of_key(&k)?, JobRecord::decode(&v)?);
    }
    let mut state = State::default();
    let now = now_ms();
    for item in store.jobs.iter() {
        let (k, v) = item.into_inner()?;
        let id = id_of_key(&k)?;
        let mut record = match latest.remove(&id) {
            Some(record) => record,
            None => record::split_job(&v)?.0,
        };
        if record.state == StoredState::Taken {
            if record.attempts >= record.max_attempts {
                record.state = StoredState::Dead { at_ms: now };
                record.last_error = Some(format!(
                    "worker stopped before finishing the job (attempt {} of {})",
                    record.attempts, record.max_attempts
                ));
            } else {
                record.state = StoredState::Ready;
            }
            store.write_record(id, &record)?;
        }
        state.insert(id, record);
    }
    Ok(state)
}

impl Backend for LocalBackend {
    fn dispatch(
        &self,
        queue: &str,
        payload: &[u8],
        opts: &DispatchOptions,
    ) -> Result<DispatchOutcome> {
        let mut state = self.lock();
        if let Some(key) = &opts.unique_key {
            if let Some(holder) = state.unique_holder(queue, key) {
                return Ok(DispatchOutcome {
                    id: format_id(holder),
                    deduplicated: true,
                });
            }
        }
        let id = self.id_base | (self.sequence.fetch_add(1, Ordering::Relaxed) + 1);
        let record = JobRecord {
            queue: queue.to_owned(),
            priority: opts.priority,
            attempts: 0,
            max_attempts: opts.max_attempts,
            backoff: opts.backoff,
            unique_key: opts.unique_key.clone(),
            visibility_ms: duration_ms(opts.visibility_timeout),
            state: if opts.delay.is_zero() {
                StoredState::Ready
            } else {
                StoredState::Delayed {
                    due_ms: due_ms_after(opts.delay),
                }
            },
            last_error: None,
        };
        self.store
            .jobs
            .insert(key(id), record::join_job(&record, payload))?;
        state.insert(id, record);
        // A delayed job may be due before the timer a waiter computed: wake one to look.
        state.wake_one(queue);
        drop(state);
        self.store.syncer.written()?;
        Ok(DispatchOutcome {
            id: format_id(id),
            deduplicated: false,
        })
    }

    fn take(&self, queues: &[&str], timeout: Duration, stop: &StopSignal) -> Result<Option<Lease>> {
        let started = Instant::now();
        let waiter = Arc::new(Waiter {
            thread: std::thread::current(),
            woken: AtomicBool::new(false),
        });
        let mut registered = false;
        let result = loop {
            let now = now_ms();
            let mut state = self.lock();
            if registered {
                state.remove_waiter(queues, &waiter);
                registered = false;
            }
            if let Err(e) = self.tick(&mut state, now) {
                break Err(e);
            }
            match self.try_take(&mut state, queues, now) {
                Ok(Some(lease)) => break Ok(Some(lease)),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            let elapsed = started.elapsed();
            if elapsed >= timeout || stop.is_stopped() || self.closed.is_stopped() {
                // Pass on a wake-up this thread consumed but will not use.
                if waiter.woken.load(Ordering::SeqCst) {
                    for q in queues {
                        if state.has_ready(q) {
                            state.wake_one(q);
                        }
                    }
                }
                break Ok(None);
            }
            let mut park = (timeout - elapsed).min(MAX_PARK);
            if let Some(timer) = state.next_timer() {
                park = park.min(Duration::from_millis(timer.saturating_sub(now)));
            }
            waiter.woken.store(false, Ordering::SeqCst);
            state.add_waiter(queues, &waiter);
            registered = true;
            drop(state);
            if stop.park_current() && self.closed.park_current() {
                std::thread::park_timeout(park);
            }
            stop.forget_current();
            self.closed.forget_current();
        };
        if registered {
            self.lock().remove_waiter(queues, &waiter);
        }
        let mut lease = match result? {
            Some(lease) => lease,
            None => return Ok(None),
        };
        // The payload is immutable while the job lives; read it without the index lock.
        lease.payload = self
            .store
            .payload(parse_id(&lease.id).unwrap_or_default())?;
        self.store.syncer.written()?;
        Ok(Some(lease))
    }

    fn ack(&self, lease: &Lease) -> Result<()> {
        let mut state = self.lock();
        let id = Self::check_lease(&state, lease)?;
        let mut batch = self.store.db.batch();
        batch.remove(&self.store.jobs, key(id));
        batch.remove(&self.store.state, key(id));
        batch.commit()?;
        if let Some(job) = state.detach(id) {
            state.release_unique(id, &job.record);
        }
        drop(state);
        self.store.syncer.written()
    }

    fn fail(&self, lease: &Lease, reason: &str) -> Result<FailOutcome> {
        let now = now_ms();
        let mut state = self.lock();
        let id = Self::check_lease(&state, lease)?;
        let Some(job) = state.jobs.get(&id) else {
            return Err(JobsError::LeaseLost {
                id: lease.id.clone(),
            });
        };
        let mut record = job.record.clone();
        record.last_error = Some(reason.to_owned());
        let retry_delay = record.backoff.delay(record.attempts);
        let outcome = if record.attempts >= record.max_attempts {
            record.state = StoredState::Dead { at_ms: now };
            FailOutcome::Dead
        } else if retry_delay.is_zero() {
            record.state = StoredState::Ready;
            FailOutcome::Retry { at: from_ms(now) }
        } else {
            let due_ms = due_ms_after(retry_delay);
            record.state = StoredState::Delayed { due_ms };
            FailOutcome::Retry {
                at: from_ms(due_ms),
            }
        };
        self.store.write_record(id, &record)?;
        state.detach(id);
        if outcome == FailOutcome::Dead {
            state.release_unique(id, &record);
        }
        let queue = record.queue.clone();
        state.insert(id, record);
        state.wake_one(&queue);
        drop(state);
        self.store.syncer.written()?;
        Ok(outcome)
    }

    fn extend(&self, lease: &Lease, visibility: Duration) -> Result<()> {
        let mut state = self.lock();
        let id = Self::check_lease(&state, lease)?;
        state.set_lease_deadline(id, due_ms_after(visibility));
        Ok(())
    }

    fn queues(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.lock().queues.keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    fn counts(&self, queue: &str) -> Result<QueueCounts> {
        let mut state = self.lock();
        self.tick(&mut state, now_ms())?;
        Ok(state.counts(queue))
    }

    fn dead_jobs(&self, queue: &str, offset: usize, limit: usize) -> Result<Vec<DeadJob>> {
        let page: Vec<(u64, JobRecord)> = {
            let state = self.lock();
            let Some(qi) = state.queues.get(queue) else {
                return Ok(Vec::new());
            };
            qi.dead
                .iter()
                .skip(offset)
                .take(limit)
                .filter_map(|id| state.jobs.get(id).map(|j| (*id, j.record.clone())))
                .collect()
        };
        let mut out = Vec::with_capacity(page.len());
        for (id, record) in page {
            let payload = self.store.payload(id)?;
            let failed_at = match record.state {
                StoredState::Dead { at_ms } => from_ms(at_ms),
                _ => continue,
            };
            out.push(DeadJob {
                id: format_id(id),
                queue: record.queue,
                payload,
                attempts: record.attempts,
                reason: record.last_error.unwrap_or_default(),
                failed_at,
            });
        }
        Ok(out)
    }

    fn retry_dead(&self, queue: &str, id_text: &str) -> Result<()> {
        let not_found = || JobsError::NotFound {
            id: id_text.to_owned(),
        };
        let id = parse_id(id_text).ok_or_else(not_found)?;
        let mut state = self.lock();
        let Some(job) = state.jobs.get(&id) else {
            return Err(not_found());
        };
        if job.record.queue != queue || !matches!(job.record.state, StoredState::Dead { .. }) {
            return Err(not_found());
        }
        let mut record = job.record.clone();
        record.attempts = 0;
        record.state = StoredState::Ready;
        // The key may have been taken by a newer job meanwhile: then this one runs without.
        if let Some(key) = &record.unique_key {
            if state.unique_holder(queue, key).is_some() {
                record.unique_key = None;
            }
        }
        self.store.write_record(id, &record)?;
        state.detach(id);
        state.insert(id, record);
        state.wake_one(queue);
        drop(state);
        self.store.syncer.written()
    }

    fn purge_dead(&self, queue: &str, id: Option<&str>) -> Result<u64> {
        let mut state = self.lock();
        let ids: Vec<u64> = match id {
            Some(text) => {
                let id = parse_id(text).ok_or_else(|| JobsError::NotFound {
                    id: text.to_owned(),
                })?;
                let dead = state
                    .queues
                    .get(queue)
                    .is_some_and(|q| q.dead.contains(&id));
                if !dead {
                    return Err(JobsError::NotFound {
                        id: text.to_owned(),
                    });
                }
                vec![id]
            }
            None => state
                .queues
                .get(queue)
                .map(|q| q.dead.iter().copied().collect())
                .unwrap_or_default(),
        };
        for chunk in ids.chunks(1024) {
            let mut batch = self.store.db.batch();
            for id in chunk {
                batch.remove(&self.store.jobs, key(*id));
                batch.remove(&self.store.state, key(*id));
            }
            batch.commit()?;
            for id in chunk {
                state.detach(*id);
            }
        }
        drop(state);
        self.store.syncer.written()?;
        Ok(ids.len() as u64)
    }

    fn schedule_store(&self) -> Arc<dyn ScheduleStore> {
        Arc::new(LocalScheduleStore {
            store: Arc::clone(&self.store),
        })
    }

    fn close(&self) {
        self.closed.stop();
        self.lock().wake_all();
    }
}

/// The scheduler's last runs in the job store's `meta` keyspace. One process owns a data
/// directory, so every claim succeeds; overlap is the scheduler's own business here.
struct LocalScheduleStore {
    store: Arc<Store>,
}

impl LocalScheduleStore {
    fn key(entry: &str) -> Vec<u8> {
        [b"schedule.last:".as_slice(), entry.as_bytes()].concat()
    }
}

impl ScheduleStore for LocalScheduleStore {
    fn last_fire(&self, entry: &str) -> Result<Option<u64>> {
        Ok(self.store.meta.get(Self::key(entry))?.and_then(|v| {
            let bytes: [u8; 8] = v.as_ref().try_into().ok()?;
            Some(u64::from_be_bytes(bytes))
        }))
    }

    fn claim(
        &self,
        entry: &str,
        fire_ms: u64,
        _claim: &crate::schedule::ClaimArgs,
    ) -> Result<Claim> {
        self.store
            .meta
            .insert(Self::key(entry), fire_ms.to_be_bytes())?;
        self.store.syncer.written()?;
        Ok(Claim::Run)
    }

    fn finish(&self, _entry: &str, _run_id: u64) -> Result<()> {
        Ok(())
    }
}
