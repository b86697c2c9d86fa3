//! The Redis transport: several hub instances share one Redis stream. Publishing is an
//! `XADD` (trimmed to the history bound with `MAXLEN ~`); every instance reads the stream
//! with `XREAD BLOCK` from where it left off and fans each entry out to its own
//! subscribers, its own included. So all instances deliver updates in one order (the
//! stream's), an update published on one reaches the subscribers of all, and the stream
//! is the shared history: an instance starts by loading its tail into its in-memory
//! history, and keeps it mirrored.
//!
//! Losing Redis never stops the hub: publishing fails (the caller gets an error) while
//! the reader logs, counts, and reconnects with exponential backoff, then resumes from the
//! last entry it saw (stream ids grow with time, so this holds even when Redis restarted
//! empty).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::streams::{StreamRangeReply, StreamReadReply};
use redis::{AsyncConnectionConfig, Client};
use tokio::time::Instant;

use crate::update::{Published, StoredUpdate};

/// The field of a stream entry holding the stored update.
const FIELD: &str = "u";
/// How long one `XREAD` blocks before it is re-issued.
const BLOCK: Duration = Duration::from_secs(5);
/// Entries one `XREAD` returns at most.
const READ_COUNT: usize = 512;
/// Reconnection delays.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Where the reader hands what it reads (the hub).
pub(crate) trait Sink: Send + Sync {
    /// A new entry: into the history and out to the subscribers.
    fn deliver(&self, published: Arc<Published>, stored: &[u8], arrived: Instant);
    /// An old entry (the stream's tail at start): into the history only.
    fn mirror(&self, published: Arc<Published>, stored: &[u8]);
    /// A Redis error happened (counted); the reader is no longer reading.
    fn transport_error(&self, reconnecting: bool);
    /// The reader is connected and has loaded the history: it delivers from now on.
    fn transport_ready(&self);
}

/// The publishing side of the transport (the reader runs as a task of its own).
pub(crate) struct RedisTransport {
    client: Client,
    stream: String,
    max_len: usize,
    connection: Mutex<Option<MultiplexedConnection>>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn connection_config(response: Duration) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(response))
}

impl RedisTransport {
    /// The client for `url` (a malformed URL is an error; an unreachable server is not).
    pub(crate) fn client(url: &str) -> Result<Client, String> {
        Client::open(url).map_err(|e| format!("invalid Redis URL {url:?}: {e}"))
    }

    /// The transport's publishing side (the reader starts with [`RedisTransport::start`]).
    pub(crate) fn new(client: Client, stream: &str, max_len: usize) -> RedisTransport {
        RedisTransport {
            client,
            stream: stream.to_owned(),
            max_len: max_len.max(1),
            connection: Mutex::new(None),
            reader: Mutex::new(None),
        }
    }

    /// Starts the reader task, which keeps trying until Redis answers and hands what it
    /// reads to `sink` (it ends when the sink is gone).
    pub(crate) fn start(&self, sink: Weak<dyn Sink>, runtime: &tokio::runtime::Handle) {
        let task = runtime.spawn(read_loop(
            self.client.clone(),
            self.stream.clone(),
            self.max_len,
            sink,
        ));
        if let Some(old) = self.reader.lock().unwrap().replace(task) {
            old.abort();
        }
    }

    async fn connection(&self) -> redis::RedisResult<MultiplexedConnection> {
        if let Some(c) = self.connection.lock().unwrap().clone() {
            return Ok(c);
        }
        let c = self
            .client
            .get_multiplexed_async_connection_with_config(&connection_config(Duration::from_secs(
                5,
            )))
            .await?;
        *self.connection.lock().unwrap() = Some(c.clone());
        Ok(c)
    }

    /// Appends an update to the stream.
    pub(crate) async fn publish(&self, stored: &[u8]) -> Result<(), String> {
        let result = async {
            let mut c = self.connection().await?;
            redis::cmd("XADD")
                .arg(&self.stream)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.max_len)
                .arg("*")
                .arg(FIELD)
                .arg(stored)
                .query_async::<String>(&mut c)
                .await
        }
        .await;
        result.map(|_| ()).map_err(|e| {
            // The next publish connects afresh.
            *self.connection.lock().unwrap() = None;
            format!("Redis: {e}")
        })
    }

    /// Stops the reader.
    pub(crate) fn stop(&self) {
        if let Some(task) = self.reader.lock().unwrap().take() {
            task.abort();
        }
    }
}

impl Drop for RedisTransport {
    fn drop(&mut self) {
        self.stop();
    }
}

fn decode(entry: &redis::streams::StreamId) -> Option<(Arc<Published>, Vec<u8>)> {
    let bytes: Vec<u8> = redis::from_redis_value_ref(entry.map.get(FIELD)?).ok()?;
    let stored = StoredUpdate::decode(&bytes)?;
    Some((stored.into_published(), bytes))
}

/// Reads the stream forever: the tail first (into the history), then every new entry.
async fn read_loop(client: Client, stream: String, max_len: usize, sink: Weak<dyn Sink>) {
    let mut last_id: Option<String> = None;
    let mut backoff = BACKOFF_MIN;
    let mut failed = false;
    loop {
        if sink.strong_count() == 0 {
            return;
        }
        let connected = client
            .get_multiplexed_async_connection_with_config(&connection_config(BLOCK * 2))
            .await;
        let mut conn = match connected {
            Ok(c) => c,
            Err(e) => {
                if !failed {
                    tracing::error!(error = %e, "mercure: cannot reach Redis; retrying");
                }
                failed = true;
                if let Some(s) = sink.upgrade() {
                    s.transport_error(true);
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        if failed {
            tracing::info!("mercure: Redis reachable again");
            failed = false;
        }
        if last_id.is_none() {
            let tail: redis::RedisResult<StreamRangeReply> = redis::cmd("XREVRANGE")
                .arg(&stream)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(max_len)
                .query_async(&mut conn)
                .await;
            match tail {
                Ok(reply) => {
                    let Some(s) = sink.upgrade() else { return };
                    for entry in reply.ids.iter().rev() {
                        if let Some((p, bytes)) = decode(entry) {
                            s.mirror(p, &bytes);
                        }
                    }
                    last_id = Some(
                        reply
                            .ids
                            .first()
                            .map_or_else(|| "0-0".to_owned(), |e| e.id.clone()),
                    );
                }
                Err(e) => {
                    tracing::error!(error = %e, "mercure: cannot read the Redis stream's history");
                    if let Some(s) = sink.upgrade() {
                        s.transport_error(true);
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            }
        }
        backoff = BACKOFF_MIN;
        match sink.upgrade() {
            Some(s) => s.transport_ready(),
            None => return,
        }
        loop {
            let from = last_id.clone().expect("set above");
            let read: redis::RedisResult<Option<StreamReadReply>> = redis::cmd("XREAD")
                .arg("COUNT")
                .arg(READ_COUNT)
                .arg("BLOCK")
                .arg(BLOCK.as_millis() as u64)
                .arg("STREAMS")
                .arg(&stream)
                .arg(&from)
                .query_async(&mut conn)
                .await;
            let reply = match read {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "mercure: lost the Redis stream; reconnecting");
                    failed = true;
                    if let Some(s) = sink.upgrade() {
                        s.transport_error(true);
                    }
                    tokio::time::sleep(backoff).await;
                    break;
                }
            };
            let Some(s) = sink.upgrade() else { return };
            for key in reply.map(|r| r.keys).unwrap_or_default() {
                for entry in &key.ids {
                    let arrived = Instant::now();
                    match decode(entry) {
                        Some((p, bytes)) => s.deliver(p, &bytes, arrived),
                        None => {
                            tracing::warn!(id = %entry.id, "mercure: skipping an unreadable stream entry")
                        }
                    }
                    last_id = Some(entry.id.clone());
                }
            }
        }
    }
}
