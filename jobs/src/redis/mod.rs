//! The shared backend: the same queue on one Redis (`--jobs-backend redis://...`), so
//! instances behind a balancer share jobs and schedules. Every move is one Lua script
//! ([`scripts`]), so a job is always in exactly one of ready, delayed, running or dead.
//! Leases are entries of a per-queue `running` sorted set scored by their deadline: a
//! lease whose instance died expires like any other and the job is delivered again (the
//! reclaim runs inside every take). Connections come from a small pool; when Redis is
//! unreachable, callers get [`JobsError::Unavailable`] at once and reconnects are spaced
//! by an exponential backoff.

mod scripts;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::{Connection, Value};

use crate::backend::Backend;
use crate::error::{JobsError, Result};
use crate::job::{
    duration_ms, from_ms, DeadJob, DispatchOptions, DispatchOutcome, FailOutcome, Lease,
    QueueCounts,
};
use crate::schedule::{Claim, ClaimArgs, ScheduleStore};
use crate::stats::QueueStats;
use crate::stop::StopSignal;

/// How long one blocking wait on Redis lasts before a take looks at its stop signal again.
const WAIT_SLICE: Duration = Duration::from_millis(500);

/// Connection settings for the Redis backend.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// Prefix of every key (several applications can share one Redis).
    pub prefix: String,
    /// Longest wait for a connection or a reply (a blocking take adds its own wait).
    pub io_timeout: Duration,
    /// Idle connections kept for reuse.
    pub pool_size: usize,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: "ferrophp:jobs".into(),
            io_timeout: Duration::from_secs(5),
            pool_size: 32,
        }
    }
}

struct Scripts {
    dispatch: redis::Script,
    take: redis::Script,
    ack: redis::Script,
    fail: redis::Script,
    extend: redis::Script,
    counts: redis::Script,
    dead_list: redis::Script,
    retry_dead: redis::Script,
    purge_dead: redis::Script,
    schedule_claim: redis::Script,
    schedule_finish: redis::Script,
}

/// When connecting failed: the next attempt waits until `retry_at`.
struct Outage {
    retry_at: Instant,
    backoff: Duration,
    error: String,
}

/// A pool of connections to one Redis, with reconnect backoff.
struct Pool {
    client: redis::Client,
    options: RedisOptions,
    idle: Mutex<Vec<Connection>>,
    outage: Mutex<Option<Outage>>,
}

impl Pool {
    fn get(&self) -> Result<Connection> {
        if let Some(conn) = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
        {
            return Ok(conn);
        }
        let mut outage = self.outage.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(o) = outage.as_ref() {
            if Instant::now() < o.retry_at {
                return Err(JobsError::Unavailable(format!(
                    "redis unreachable ({}); next reconnect in {} ms",
                    o.error,
                    o.retry_at
                        .saturating_duration_since(Instant::now())
                        .as_millis()
                )));
            }
        }
        match self
            .client
            .get_connection_with_timeout(self.options.io_timeout)
        {
            Ok(conn) => {
                if outage.take().is_some() {
                    tracing::info!("jobs: reconnected to redis");
                }
                conn.set_read_timeout(Some(self.options.io_timeout))?;
                conn.set_write_timeout(Some(self.options.io_timeout))?;
                Ok(conn)
            }
            Err(e) => {
                let backoff = outage.as_ref().map_or(Duration::from_millis(50), |o| {
                    (o.backoff * 2).min(Duration::from_secs(2))
                });
                tracing::warn!(error = %e, "jobs: cannot connect to redis");
                *outage = Some(Outage {
                    retry_at: Instant::now() + backoff,
                    backoff,
                    error: e.to_string(),
                });
                Err(JobsError::Unavailable(e.to_string()))
            }
        }
    }

    /// Returns a connection that answered normally; one that failed is dropped.
    fn put(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.options.pool_size {
            idle.push(conn);
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> redis::RedisResult<T>) -> Result<T> {
        let mut conn = self.get()?;
        match f(&mut conn) {
            Ok(v) => {
                self.put(conn);
                Ok(v)
            }
            Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                self.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                Err(JobsError::Unavailable(e.to_string()))
            }
            Err(e) => {
                self.put(conn);
                Err(JobsError::Unavailable(e.to_string()))
            }
        }
    }
}

/// The Redis job store.
pub(crate) struct RedisBackend {
    pool: Arc<Pool>,
    scripts: Arc<Scripts>,
    stats: Arc<QueueStats>,
    closed: StopSignal,
    tokens: AtomicU64,
}

impl RedisBackend {
    /// Connects to `url` and checks that Redis answers.
    pub(crate) fn connect(
        url: &str,
        options: RedisOptions,
        stats: Arc<QueueStats>,
    ) -> Result<Self> {
        let client = redis::Client::open(url)
            .map_err(|e| JobsError::InvalidArgument(format!("redis url {url:?}: {e}")))?;
        let pool = Arc::new(Pool {
            client,
            options,
            idle: Mutex::new(Vec::new()),
            outage: Mutex::new(None),
        });
        pool.with(|c| redis::cmd("PING").query::<String>(c))?;
        let scripts = Arc::new(Scripts {
            dispatch: scripts::script(scripts::DISPATCH),
            take: scripts::script(scripts::TAKE),
            ack: scripts::script(scripts::ACK),
            fail: scripts::script(scripts::FAIL),
            extend: scripts::script(scripts::EXTEND),
            counts: scripts::script(scripts::COUNTS),
            dead_list: scripts::script(scripts::DEAD_LIST),
            retry_dead: scripts::script(scripts::RETRY_DEAD),
            purge_dead: scripts::script(scripts::PURGE_DEAD),
            schedule_claim: scripts::script(scripts::SCHEDULE_CLAIM),
            schedule_finish: scripts::script(scripts::SCHEDULE_FINISH),
        });
        Ok(Self {
            pool,
            scripts,
            stats,
            closed: StopSignal::new(),
            tokens: AtomicU64::new(0),
        })
    }

    fn prefix(&self) -> &str {
        &self.pool.options.prefix
    }

    fn wake_key(&self, queue: &str) -> String {
        format!("{}:q:{queue}:wake", self.prefix())
    }

    fn count_expiries(&self, retried: i64, died: i64) {
        let retried = u64::try_from(retried).unwrap_or(0);
        let died = u64::try_from(died).unwrap_or(0);
        QueueStats::add(&self.stats.expired, retried + died);
        QueueStats::add(&self.stats.retried, retried);
        QueueStats::add(&self.stats.dead, died);
    }

    /// One take attempt: a lease, or how long until a timer is due (negative: none).
    fn take_once(&self, queues: &[&str], token: u64) -> Result<std::result::Result<Lease, i64>> {
        let reply: Vec<Value> = self.pool.with(|c| {
            let mut inv = self.scripts.take.prepare_invoke();
            inv.arg(self.prefix()).arg(token.to_string());
            for q in queues {
                inv.arg(*q);
            }
            inv.invoke(c)
        })?;
        let id = text(reply.first())?;
        if id.is_empty() {
            self.count_expiries(int(reply.get(2))?, int(reply.get(3))?);
            return Ok(Err(int(reply.get(1))?));
        }
        self.count_expiries(int(reply.get(5))?, int(reply.get(6))?);
        Ok(Ok(Lease {
            id,
            queue: text(reply.get(1))?,
            payload: bytes(reply.get(2))?,
            attempt: u32::try_from(int(reply.get(3))?).unwrap_or(u32::MAX),
            max_attempts: u32::try_from(int(reply.get(4))?).unwrap_or(u32::MAX),
            token,
        }))
    }
}

fn malformed(what: &str) -> JobsError {
    JobsError::Unavailable(format!("unexpected reply from redis: {what}"))
}

fn bytes(v: Option<&Value>) -> Result<Vec<u8>> {
    match v {
        Some(Value::BulkString(b)) => Ok(b.clone()),
        Some(Value::SimpleString(s)) => Ok(s.clone().into_bytes()),
        Some(Value::Int(i)) => Ok(i.to_string().into_bytes()),
        Some(Value::Nil) => Ok(Vec::new()),
        other => Err(malformed(&format!("{other:?}"))),
    }
}

fn text(v: Option<&Value>) -> Result<String> {
    String::from_utf8(bytes(v)?).map_err(|_| malformed("non-UTF-8 text"))
}

fn int(v: Option<&Value>) -> Result<i64> {
    match v {
        Some(Value::Int(i)) => Ok(*i),
        other => {
            let t = text(other)?;
            t.parse()
                .map_err(|_| malformed(&format!("{t:?} is not a number")))
        }
    }
}

impl Backend for RedisBackend {
    fn dispatch(
        &self,
        queue: &str,
        payload: &[u8],
        opts: &DispatchOptions,
    ) -> Result<DispatchOutcome> {
        let b = &opts.backoff;
        let backoff = format!(
            "{} {} {} {}",
            duration_ms(b.initial),
            b.factor.max(1),
            duration_ms(b.max),
            b.jitter
        );
        let reply: Vec<Value> = self.pool.with(|c| {
            self.scripts
                .dispatch
                .arg(self.prefix())
                .arg(queue)
                .arg(payload)
                .arg(opts.priority)
                .arg(opts.max_attempts)
                .arg(backoff)
                .arg(duration_ms(opts.visibility_timeout))
                .arg(duration_ms(opts.delay))
                .arg(opts.unique_key.as_deref().unwrap_or(""))
                .invoke(c)
        })?;
        Ok(DispatchOutcome {
            id: text(reply.first())?,
            deduplicated: int(reply.get(1))? == 1,
        })
    }

    fn take(&self, queues: &[&str], timeout: Duration, stop: &StopSignal) -> Result<Option<Lease>> {
        let started = Instant::now();
        let token = (u64::from(std::process::id()) << 32)
            ^ self.tokens.fetch_add(1, Ordering::Relaxed)
            ^ fastrand::u64(..);
        let wake_keys: Vec<String> = queues.iter().map(|q| self.wake_key(q)).collect();
        loop {
            let next_timer = match self.take_once(queues, token)? {
                Ok(lease) => return Ok(Some(lease)),
                Err(ms) => ms,
            };
            let elapsed = started.elapsed();
            if elapsed >= timeout || stop.is_stopped() || self.closed.is_stopped() {
                return Ok(None);
            }
            let mut wait = (timeout - elapsed).min(WAIT_SLICE);
            if let Ok(ms) = u64::try_from(next_timer) {
                wait = wait.min(Duration::from_millis(ms));
            }
            // BLPOP's timeout is in seconds; 0 would mean forever.
            let seconds = wait.as_secs_f64().max(0.01);
            let read_timeout = self.pool.options.io_timeout + wait;
            self.pool.with(|c| {
                c.set_read_timeout(Some(read_timeout))?;
                let popped: redis::RedisResult<Value> =
                    redis::cmd("BLPOP").arg(&wake_keys).arg(seconds).query(c);
                c.set_read_timeout(Some(self.pool.options.io_timeout))?;
                popped
            })?;
        }
    }

    fn ack(&self, lease: &Lease) -> Result<()> {
        let ok: i64 = self.pool.with(|c| {
            self.scripts
                .ack
                .arg(self.prefix())
                .arg(&lease.id)
                .arg(lease.token.to_string())
                .invoke(c)
        })?;
        if ok == 1 {
            Ok(())
        } else {
            Err(JobsError::LeaseLost {
                id: lease.id.clone(),
            })
        }
    }

    fn fail(&self, lease: &Lease, reason: &str) -> Result<FailOutcome> {
        let reply: Vec<Value> = self.pool.with(|c| {
            self.scripts
                .fail
                .arg(self.prefix())
                .arg(&lease.id)
                .arg(lease.token.to_string())
                .arg(reason)
                .arg(fastrand::f64())
                .invoke(c)
        })?;
        match text(reply.first())?.as_str() {
            "retry" => Ok(FailOutcome::Retry {
                at: from_ms(u64::try_from(int(reply.get(1))?).unwrap_or(0)),
            }),
            "dead" => Ok(FailOutcome::Dead),
            _ => Err(JobsError::LeaseLost {
                id: lease.id.clone(),
            }),
        }
    }

    fn extend(&self, lease: &Lease, visibility: Duration) -> Result<()> {
        let ok: i64 = self.pool.with(|c| {
            self.scripts
                .extend
                .arg(self.prefix())
                .arg(&lease.id)
                .arg(lease.token.to_string())
                .arg(duration_ms(visibility))
                .invoke(c)
        })?;
        if ok == 1 {
            Ok(())
        } else {
            Err(JobsError::LeaseLost {
                id: lease.id.clone(),
            })
        }
    }

    fn queues(&self) -> Result<Vec<String>> {
        let key = format!("{}:queues", self.prefix());
        let mut names: Vec<String> = self
            .pool
            .with(|c| redis::cmd("SMEMBERS").arg(&key).query(c))?;
        names.sort();
        Ok(names)
    }

    fn counts(&self, queue: &str) -> Result<QueueCounts> {
        let reply: Vec<i64> = self
            .pool
            .with(|c| self.scripts.counts.arg(self.prefix()).arg(queue).invoke(c))?;
        let get = |i: usize| u64::try_from(reply.get(i).copied().unwrap_or(0)).unwrap_or(0);
        self.count_expiries(
            reply.get(4).copied().unwrap_or(0),
            reply.get(5).copied().unwrap_or(0),
        );
        Ok(QueueCounts {
            ready: get(0),
            delayed: get(1),
            running: get(2),
            dead: get(3),
        })
    }

    fn dead_jobs(&self, queue: &str, offset: usize, limit: usize) -> Result<Vec<DeadJob>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let reply: Vec<Value> = self.pool.with(|c| {
            self.scripts
                .dead_list
                .arg(self.prefix())
                .arg(queue)
                .arg(offset)
                .arg(limit)
                .invoke(c)
        })?;
        reply
            .chunks(5)
            .map(|f| {
                Ok(DeadJob {
                    id: text(f.first())?,
                    queue: queue.to_owned(),
                    payload: bytes(f.get(1))?,
                    attempts: u32::try_from(int(f.get(2))?).unwrap_or(0),
                    reason: text(f.get(3))?,
                    failed_at: from_ms(u64::try_from(int(f.get(4))?).unwrap_or(0)),
                })
            })
            .collect()
    }

    fn retry_dead(&self, queue: &str, id: &str) -> Result<()> {
        let ok: i64 = self.pool.with(|c| {
            self.scripts
                .retry_dead
                .arg(self.prefix())
                .arg(queue)
                .arg(id)
                .invoke(c)
        })?;
        if ok == 1 {
            Ok(())
        } else {
            Err(JobsError::NotFound { id: id.to_owned() })
        }
    }

    fn purge_dead(&self, queue: &str, id: Option<&str>) -> Result<u64> {
        let mut total = 0u64;
        loop {
            let n: u64 = self.pool.with(|c| {
                self.scripts
                    .purge_dead
                    .arg(self.prefix())
                    .arg(queue)
                    .arg(id.unwrap_or(""))
                    .invoke(c)
            })?;
            total += n;
            if id.is_some() {
                return if n == 0 {
                    Err(JobsError::NotFound {
                        id: id.unwrap_or_default().to_owned(),
                    })
                } else {
                    Ok(total)
                };
            }
            if n == 0 {
                return Ok(total);
            }
        }
    }

    fn schedule_store(&self) -> Arc<dyn ScheduleStore> {
        Arc::new(RedisScheduleStore {
            pool: Arc::clone(&self.pool),
            scripts: Arc::clone(&self.scripts),
        })
    }

    fn close(&self) {
        self.closed.stop();
    }
}

/// Last runs, one-run-per-fire-time leases and the no-overlap marker, shared by every
/// instance on this Redis.
struct RedisScheduleStore {
    pool: Arc<Pool>,
    scripts: Arc<Scripts>,
}

impl ScheduleStore for RedisScheduleStore {
    fn last_fire(&self, entry: &str) -> Result<Option<u64>> {
        let key = format!("{}:sched:{entry}:last", self.pool.options.prefix);
        self.pool.with(|c| redis::cmd("GET").arg(&key).query(c))
    }

    fn claim(&self, entry: &str, fire_ms: u64, args: &ClaimArgs) -> Result<Claim> {
        let reply: String = self.pool.with(|c| {
            self.scripts
                .schedule_claim
                .arg(&self.pool.options.prefix)
                .arg(entry)
                .arg(fire_ms)
                .arg(duration_ms(args.fire_lease).max(1))
                .arg(if args.allow_overlap { "1" } else { "0" })
                .arg(args.run_id)
                .arg(duration_ms(args.max_run).max(1))
                .invoke(c)
        })?;
        Ok(match reply.as_str() {
            "run" => Claim::Run,
            "overlap" => Claim::Overlap,
            _ => Claim::Taken,
        })
    }

    fn finish(&self, entry: &str, run_id: u64) -> Result<()> {
        let _: i64 = self.pool.with(|c| {
            self.scripts
                .schedule_finish
                .arg(&self.pool.options.prefix)
                .arg(entry)
                .arg(run_id)
                .invoke(c)
        })?;
        Ok(())
    }
}
