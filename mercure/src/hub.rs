//! The hub: publishing (validation, id, history, fan-out or the Redis stream),
//! subscribing (registration, replay, the live stream), subscription events, the list of
//! active subscriptions, statistics, and stopping.
//!
//! One lock orders everything that must agree: the sequence number, the history append,
//! fan-out, and subscriber registration. A subscriber registered at sequence `S` replays
//! the history up to `S` and receives everything after `S` live, so the two never
//! overlap or leave a gap. Fan-out under the lock only appends to bounded buffers (no
//! I/O, no waiting on a subscriber).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use ferrophp_metrics::DDSketch;
use ferrophp_trace::SpanContext;
use tokio::time::Instant;

use crate::auth::{Grants, PublishOrigins};
use crate::config::{Config, HistoryConfig, JwtKey, TransportConfig};
use crate::cors::Cors;
use crate::history::durable::DurableHistory;
use crate::history::memory::MemoryHistory;
use crate::history::{History, HistoryLimits};
use crate::jwt::Verifier;
use crate::redis_transport::{RedisTransport, Sink};
use crate::registry::Registry;
use crate::selector::{Selector, SelectorCache};
use crate::stats::{latency_sketch, Counters, Stats};
use crate::subscriber::{CloseReason, Subscriber, Subscription, Unregister};
use crate::subscriptions::{SubscriptionDoc, SubscriptionsDoc};
use crate::trace::PublishSpan;
use crate::update::{
    generate_subscriber_id, Published, StoredUpdate, Update, UpdateError, EARLIEST,
};

/// A Mercure hub. Cheap to clone (shared inside).
#[derive(Clone)]
pub struct Hub {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

/// A configuration the hub cannot start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mercure: {}", self.0)
    }
}

impl std::error::Error for StartError {}

/// Why a publish failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// The update was refused (400, or 403 for a reserved topic).
    Invalid(UpdateError),
    /// The transport could not take it (Redis unreachable): 503.
    Unavailable(String),
    /// The hub is stopped: 503.
    Stopped,
}

impl PublishError {
    /// The HTTP status to answer with.
    pub fn status(&self) -> u16 {
        match self {
            PublishError::Invalid(e) => e.status(),
            PublishError::Unavailable(_) | PublishError::Stopped => 503,
        }
    }
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PublishError::Invalid(e) => e.fmt(f),
            PublishError::Unavailable(e) => write!(f, "the update could not be dispatched: {e}"),
            PublishError::Stopped => f.write_str("the Mercure hub is stopped"),
        }
    }
}

impl std::error::Error for PublishError {}

impl From<UpdateError> for PublishError {
    fn from(e: UpdateError) -> PublishError {
        PublishError::Invalid(e)
    }
}

/// What a subscriber asks for (the query's selectors and where to resume) and what its
/// token grants.
#[derive(Debug, Clone, Default)]
pub struct SubscribeOptions {
    /// The topic selectors.
    pub topics: Vec<String>,
    /// Resume after this id (`earliest`: the whole history).
    pub last_event_id: Option<String>,
    /// The verified token's grants (None: anonymous).
    pub grants: Option<Grants>,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) publisher: Option<Verifier>,
    pub(crate) subscriber: Option<Verifier>,
    pub(crate) cors: Cors,
    pub(crate) publish_origins: PublishOrigins,
    pub(crate) selectors: SelectorCache,
    core: Mutex<Core>,
    history: Box<dyn History>,
    counters: Counters,
    redis: Option<RedisTransport>,
    runtime: tokio::runtime::Handle,
    stopped: AtomicBool,
    me: Weak<Inner>,
}

struct Core {
    registry: Registry,
    seq: u64,
    last_event_id: Option<String>,
    fanout: DDSketch,
}

fn verifier(key: &Option<JwtKey>, max: usize, role: &str) -> Result<Option<Verifier>, StartError> {
    let v = match key {
        None => return Ok(None),
        Some(JwtKey::Key { key, alg }) => Verifier::from_key(key.as_bytes(), alg),
        Some(JwtKey::JwksFile(path)) => Verifier::from_jwks_file(path),
    };
    v.map(|v| Some(v.with_max_claim_selectors(max)))
        .map_err(|e| StartError(format!("{role} key: {e}")))
}

/// 80 to 100% of `d`: connections opened together do not all end together.
fn randomized(d: Duration) -> Duration {
    d.mul_f64(0.8 + 0.2 * fastrand::f64())
}

impl Hub {
    /// Starts a hub. Must be called within a tokio runtime (its timers and the Redis
    /// reader run on it). Fails on a configuration it cannot use: a key that does not fit
    /// its algorithm, an unreadable JWK Set, a malformed origin or Redis URL, a history
    /// directory that cannot be opened, or no way for anyone to subscribe.
    pub fn start(config: Config) -> Result<Hub, StartError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| StartError("the hub must start within a tokio runtime".into()))?;
        let publisher = verifier(
            &config.publisher_jwt,
            config.max_claim_selectors,
            "publisher",
        )?;
        let subscriber = verifier(
            &config.subscriber_jwt,
            config.max_claim_selectors,
            "subscriber",
        )?;
        if subscriber.is_none() && !config.anonymous {
            return Err(StartError(
                "a JWT key or a JWK Set for subscribers must be provided (or allow anonymous subscribers)".into(),
            ));
        }
        let cors = Cors::new(&config.cors_origins).map_err(StartError)?;
        let publish_origins = PublishOrigins::new(&config.publish_origins).map_err(StartError)?;
        let (history, redis): (Box<dyn History>, Option<RedisTransport>) =
            match (&config.transport, &config.history) {
                (TransportConfig::Local, HistoryConfig::Memory(limits)) => {
                    (Box::new(MemoryHistory::new(*limits)), None)
                }
                (TransportConfig::Local, HistoryConfig::Durable { path, max_updates }) => (
                    Box::new(DurableHistory::open(path, *max_updates).map_err(StartError)?),
                    None,
                ),
                (TransportConfig::Redis { url, stream }, history) => {
                    // The stream is the shared (and, with Redis persistence, durable)
                    // history; this instance keeps a mirror of its tail in memory.
                    let limits = match history {
                        HistoryConfig::Memory(limits) => *limits,
                        HistoryConfig::Durable { max_updates, .. } => HistoryLimits {
                            max_updates: *max_updates,
                            ..HistoryLimits::default()
                        },
                    };
                    let client = RedisTransport::client(url).map_err(StartError)?;
                    (
                        Box::new(MemoryHistory::new(limits)),
                        Some(RedisTransport::new(client, stream, limits.max_updates)),
                    )
                }
            };
        let last = history.last();
        let inner = Arc::new_cyclic(|me: &Weak<Inner>| Inner {
            selectors: SelectorCache::new(config.selector_cache),
            config,
            publisher,
            subscriber,
            cors,
            publish_origins,
            core: Mutex::new(Core {
                registry: Registry::default(),
                seq: last.as_ref().map_or(0, |(s, _)| *s),
                last_event_id: last.map(|(_, id)| id),
                fanout: latency_sketch(),
            }),
            history,
            counters: Counters::default(),
            redis,
            runtime: runtime.clone(),
            stopped: AtomicBool::new(false),
            me: me.clone(),
        });
        if inner.redis.is_none() {
            inner
                .counters
                .transport_connected
                .store(true, Ordering::Relaxed);
        }
        if let Some(redis) = &inner.redis {
            let sink: Weak<dyn Sink> = Arc::downgrade(&inner) as Weak<dyn Sink>;
            redis.start(sink, &runtime);
        }
        Ok(Hub { inner })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Publishes an update from outside the hub (it is validated first). Returns its id.
    pub async fn publish(&self, update: Update) -> Result<String, PublishError> {
        self.publish_traced(update, None).await
    }

    /// [`Hub::publish`] recorded as a child of `parent` (the request's span) when
    /// tracing is on.
    pub async fn publish_traced(
        &self,
        update: Update,
        parent: Option<&SpanContext>,
    ) -> Result<String, PublishError> {
        let span = PublishSpan::start(parent);
        // The span's attributes, copied only when a span is recorded.
        let attributes = span
            .is_recording()
            .then(|| (update.topics.clone(), update.private));
        let result = match update.validate(self.inner.config.max_topics) {
            Ok(()) => self.inner.dispatch(update, Instant::now()).await,
            Err(e) => Err(e.into()),
        };
        if let Some((topics, private)) = attributes {
            match &result {
                Ok(id) => span.finish(Some(id), &topics, private, None),
                Err(e) => span.finish(None, &topics, private, Some(&e.to_string())),
            }
        }
        if result.is_err() {
            Counters::add(&self.inner.counters.publish_errors, 1);
        }
        result
    }

    /// [`Hub::publish_traced`] for threads outside the runtime (the PHP threads'
    /// `mercure_publish()`): with the local transport it runs on the caller; with Redis it
    /// blocks the caller until Redis answers. Never call it from a task of the runtime.
    pub fn publish_blocking(
        &self,
        update: Update,
        parent: Option<&SpanContext>,
    ) -> Result<String, PublishError> {
        let fut = self.publish_traced(update, parent);
        if self.inner.redis.is_none() {
            // Nothing in the local path waits: one poll finishes it.
            let mut fut = std::pin::pin!(fut);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                return r;
            }
            return self.inner.runtime.block_on(fut);
        }
        self.inner.runtime.block_on(fut)
    }

    /// Compiles the grants of verified claims (through the hub's selector cache).
    pub fn grants(&self, claims: crate::jwt::Claims) -> Grants {
        Grants::new(claims, &self.inner.selectors)
    }

    /// Subscribes: registers the subscriber, replays the history when asked to resume,
    /// and returns the stream. With subscription events on, an `active` event goes out for
    /// each selector (and an inactive one when the subscription is dropped).
    pub async fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription, PublishError> {
        let inner = &self.inner;
        if inner.stopped.load(Ordering::Acquire) {
            return Err(PublishError::Stopped);
        }
        if options.topics.is_empty() {
            return Err(PublishError::Invalid(UpdateError::MissingTopic));
        }
        if options.topics.len() > inner.config.max_topics {
            return Err(PublishError::Invalid(UpdateError::TooManyTopics));
        }
        let selectors: Box<[Arc<Selector>]> = options
            .topics
            .iter()
            .map(|t| inner.selectors.get(t))
            .collect();
        let (private, payload, expires_at) = match options.grants {
            Some(g) => (g.subscribe, g.claims.payload, g.claims.expires_at),
            None => (None, None, None),
        };
        let subscriber = Arc::new(Subscriber::new(
            generate_subscriber_id().into_boxed_str(),
            selectors,
            private,
            payload,
            inner.config.subscriber_buffer,
        ));
        if inner.config.subscriptions {
            inner.subscription_events(&subscriber, true);
        }
        let (slot, snapshot) = {
            let mut core = inner.core.lock().unwrap();
            (core.registry.insert(subscriber.clone()), core.seq)
        };
        Counters::add(&inner.counters.subscriptions_total, 1);
        let (replay, last_event_id) = match &options.last_event_id {
            Some(id) => {
                let r = inner
                    .history
                    .replay(id, snapshot, &|p: &Published| subscriber.wants(p));
                (r.events, Some(r.last_event_id))
            }
            None => (Vec::new(), None),
        };
        let mut ends_at = inner
            .config
            .write_timeout
            .map(|t| (Instant::now() + randomized(t), CloseReason::Timeout));
        if let Some(exp) = expires_at {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let at = Instant::now() + Duration::from_secs(exp.saturating_sub(now));
            if ends_at.is_none_or(|(e, _)| at < e) {
                ends_at = Some((at, CloseReason::TokenExpired));
            }
        }
        let unregister: Arc<dyn Unregister> = self.inner.clone();
        Ok(Subscription::new(
            subscriber,
            unregister,
            slot,
            replay,
            last_event_id,
            inner.config.heartbeat,
            ends_at,
        ))
    }

    /// The id of the last update dispatched (`earliest` when none).
    pub fn last_event_id(&self) -> String {
        let core = self.inner.core.lock().unwrap();
        core.last_event_id
            .clone()
            .unwrap_or_else(|| EARLIEST.to_owned())
    }

    /// The active subscriptions (of this instance), optionally only those with selector
    /// `topic`, as documents without their own context.
    pub fn subscriptions(&self, topic: Option<&str>) -> Vec<SubscriptionDoc> {
        let core = self.inner.core.lock().unwrap();
        let mut docs = Vec::new();
        for sub in core.registry.subscribers() {
            for sel in sub.selectors.iter() {
                if topic.is_some_and(|t| t != sel.as_str()) {
                    continue;
                }
                let mut doc =
                    SubscriptionDoc::new(sel.as_str(), &sub.id, true, sub.payload.as_ref());
                doc.context = None;
                docs.push(doc);
            }
        }
        docs
    }

    /// The collection document of the subscriptions API for `id` (the requested URL).
    pub fn subscriptions_doc(&self, id: &str, topic: Option<&str>) -> SubscriptionsDoc {
        SubscriptionsDoc {
            context: crate::subscriptions::JSONLD_CONTEXT,
            id: id.to_owned(),
            kind: "Subscriptions",
            last_event_id: self.last_event_id(),
            subscriptions: self.subscriptions(topic),
        }
    }

    /// The hub's metrics now.
    pub fn stats(&self) -> Stats {
        let (subscribers, fanout) = {
            let core = self.inner.core.lock().unwrap();
            (core.registry.len(), core.fanout.clone())
        };
        let mut s = Stats::from_counters(&self.inner.counters, self.inner.history.len(), fanout);
        s.subscribers = subscribers as u64;
        s
    }

    /// Stops the hub: publishing fails from now on, every stream ends once it has sent
    /// what it holds, the Redis reader stops, and the history is synced to disk.
    pub fn stop(&self) {
        let inner = &self.inner;
        if inner.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let core = inner.core.lock().unwrap();
            for sub in core.registry.subscribers() {
                sub.close(CloseReason::HubStopped, false);
            }
        }
        if let Some(r) = &inner.redis {
            r.stop();
        }
        inner.history.flush();
    }
}

impl Inner {
    /// Sends a validated update on its way: the local fan-out, or the Redis stream.
    async fn dispatch(&self, mut update: Update, started: Instant) -> Result<String, PublishError> {
        if self.stopped.load(Ordering::Acquire) {
            return Err(PublishError::Stopped);
        }
        let id = update.take_or_generate_id();
        update.id = Some(id.clone());
        match &self.redis {
            None => {
                let stored = if self.history.persists() {
                    StoredUpdate::new(&id, &update).encode()
                } else {
                    Vec::new()
                };
                self.deliver_now(Arc::new(Published::from_update(update)), &stored, started);
            }
            Some(redis) => {
                let stored = StoredUpdate::new(&id, &update).encode();
                redis
                    .publish(&stored)
                    .await
                    .map_err(PublishError::Unavailable)?;
            }
        }
        Counters::add(&self.counters.published, 1);
        Ok(id)
    }

    /// Appends to the history and fans out, under the hub's lock.
    fn deliver_now(&self, published: Arc<Published>, stored: &[u8], started: Instant) {
        let mut core = self.core.lock().unwrap();
        core.seq += 1;
        let seq = core.seq;
        if let Err(e) = self.history.append(seq, &published, stored) {
            Counters::add(&self.counters.history_errors, 1);
            tracing::error!(error = %e, "mercure: history");
        }
        let out = core.registry.fan_out(seq, &published);
        core.last_event_id = Some(published.id.clone());
        core.fanout.add(started.elapsed().as_secs_f64());
        drop(core);
        Counters::add(&self.counters.delivered, out.delivered);
        if out.overflowed > 0 {
            Counters::add(&self.counters.slow_subscribers_closed, out.overflowed);
            Counters::add(&self.counters.updates_dropped, out.lost);
            tracing::info!(
                subscribers = out.overflowed,
                "mercure: closed subscribers unable to receive updates fast enough"
            );
        }
    }

    /// Publishes the subscription events of `sub` (one per selector). Hub-generated:
    /// their topics are in the reserved namespace, so they skip validation.
    fn subscription_events(&self, sub: &Subscriber, active: bool) {
        for sel in sub.selectors.iter() {
            let doc = SubscriptionDoc::new(sel.as_str(), &sub.id, active, sub.payload.as_ref());
            let update = Update {
                topics: vec![doc.id.clone()],
                data: doc.to_json(),
                private: true,
                ..Update::default()
            };
            match &self.redis {
                None => {
                    let fut = self.dispatch(update, Instant::now());
                    let mut fut = std::pin::pin!(fut);
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    // The local path never waits.
                    let _ = fut.as_mut().poll(&mut cx);
                }
                Some(_) => {
                    let Some(me) = self.me.upgrade() else { return };
                    self.runtime.spawn(async move {
                        if let Err(e) = me.dispatch(update, Instant::now()).await {
                            tracing::warn!(error = %e, "mercure: subscription event not published");
                        }
                    });
                }
            }
        }
    }
}

impl Unregister for Inner {
    fn unregister(&self, slot: u32, subscriber: &Arc<Subscriber>) {
        self.core.lock().unwrap().registry.remove(slot, subscriber);
        if self.config.subscriptions && !self.stopped.load(Ordering::Acquire) {
            self.subscription_events(subscriber, false);
        }
    }
}

impl Sink for Inner {
    fn deliver(&self, published: Arc<Published>, stored: &[u8], arrived: Instant) {
        self.deliver_now(published, stored, arrived);
    }

    fn mirror(&self, published: Arc<Published>, stored: &[u8]) {
        let mut core = self.core.lock().unwrap();
        core.seq += 1;
        let seq = core.seq;
        if self.history.append(seq, &published, stored).is_err() {
            Counters::add(&self.counters.history_errors, 1);
        }
        core.last_event_id = Some(published.id.clone());
    }

    fn transport_ready(&self) {
        self.counters
            .transport_connected
            .store(true, Ordering::Relaxed);
    }

    fn transport_error(&self, reconnecting: bool) {
        self.counters
            .transport_connected
            .store(false, Ordering::Relaxed);
        Counters::add(&self.counters.transport_errors, 1);
        if reconnecting {
            Counters::add(&self.counters.transport_reconnects, 1);
        }
    }
}

/// The encoded heartbeat, for callers that write their own.
pub fn heartbeat() -> Bytes {
    Bytes::from_static(crate::sse::HEARTBEAT)
}
