//! One subscriber: what it listens to and may see ([`Subscriber`], shared with the
//! fan-out index), its bounded buffer of encoded events, and the handle the HTTP layer
//! streams from ([`Subscription`]: the replay first, then live events, heartbeats when
//! idle, and the end of the stream when the subscriber falls behind, its token expires, or
//! the hub stops).
//!
//! A subscriber that falls behind is closed, never waited for: when its buffer is full the
//! buffer is discarded, the stream ends (the connection closes, the client reconnects
//! with `Last-Event-ID`), and fan-out goes on to the others.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, Sleep};

use crate::selector::Selector;
use crate::sse::HEARTBEAT;
use crate::update::Published;

/// Why a subscription's stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Its buffer filled up: it did not read fast enough.
    TooSlow,
    /// Its token expired (the spec: the connection must close at `exp`).
    TokenExpired,
    /// It reached the hub's write timeout (clients reconnect; this spreads long-lived
    /// connections across proxies' limits).
    Timeout,
    /// The hub stopped.
    HubStopped,
}

/// A subscriber as the fan-out sees it.
pub(crate) struct Subscriber {
    pub(crate) id: Box<str>,
    /// The subscribe request's selectors.
    pub(crate) selectors: Box<[Arc<Selector>]>,
    /// `mercure.subscribe` of its token: which private updates it may receive.
    pub(crate) private: Option<Arc<[Arc<Selector>]>>,
    /// `mercure.payload` of its token (subscription events and API).
    pub(crate) payload: Option<serde_json::Value>,
    /// The sequence number of the last update fan-out offered it: one subscriber matched
    /// by several selectors receives an update once. Written under the hub's lock only.
    pub(crate) last_seq: AtomicU64,
    capacity: usize,
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    queue: VecDeque<Bytes>,
    waker: Option<Waker>,
    closed: Option<CloseReason>,
}

/// What a push did.
pub(crate) enum Push {
    /// In the buffer.
    Queued,
    /// The buffer was full: the subscriber is now closed; this many events were lost.
    Overflow(usize),
    /// Already closed.
    Closed,
}

/// A buffer that grew past this keeps its memory only while it holds events.
const KEPT_CAPACITY: usize = 16;

impl Subscriber {
    pub(crate) fn new(
        id: Box<str>,
        selectors: Box<[Arc<Selector>]>,
        private: Option<Arc<[Arc<Selector>]>>,
        payload: Option<serde_json::Value>,
        capacity: usize,
    ) -> Subscriber {
        Subscriber {
            id,
            selectors,
            private,
            payload,
            last_seq: AtomicU64::new(0),
            capacity: capacity.max(1),
            state: Mutex::new(QueueState::default()),
        }
    }

    /// Whether a topic of `topics` matches one of its selectors.
    pub(crate) fn listens_to(&self, topics: &[String]) -> bool {
        self.selectors.iter().any(|s| s.matches_any(topics))
    }

    /// Whether it may receive a private update of `topics`.
    pub(crate) fn may_receive_private(&self, topics: &[String]) -> bool {
        self.private
            .as_deref()
            .is_some_and(|sel| sel.iter().any(|s| s.matches_any(topics)))
    }

    /// Whether it is entitled to `p`: one of its selectors matches a topic, and, for a
    /// private update, its token allows one of the topics.
    pub(crate) fn wants(&self, p: &Published) -> bool {
        self.listens_to(&p.topics) && (!p.private || self.may_receive_private(&p.topics))
    }

    /// Adds an event to its buffer.
    pub(crate) fn push(&self, event: &Bytes) -> Push {
        let mut st = self.state.lock().unwrap();
        if st.closed.is_some() {
            return Push::Closed;
        }
        if st.queue.len() >= self.capacity {
            let lost = st.queue.len() + 1;
            st.queue = VecDeque::new();
            st.closed = Some(CloseReason::TooSlow);
            let waker = st.waker.take();
            drop(st);
            if let Some(w) = waker {
                w.wake();
            }
            return Push::Overflow(lost);
        }
        st.queue.push_back(event.clone());
        let waker = st.waker.take();
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
        Push::Queued
    }

    /// Ends its stream (once what is buffered has been read, unless `discard`).
    pub(crate) fn close(&self, reason: CloseReason, discard: bool) {
        let mut st = self.state.lock().unwrap();
        st.closed.get_or_insert(reason);
        if discard {
            st.queue = VecDeque::new();
        }
        let waker = st.waker.take();
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.state.lock().unwrap().closed
    }

    /// Moves every buffered event into `out` (one lock for a burst), or registers the
    /// waker when there is none. Ready(false) means closed with nothing left.
    pub(crate) fn poll_drain(&self, out: &mut VecDeque<Bytes>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut st = self.state.lock().unwrap();
        if !st.queue.is_empty() {
            // Swap buffers: the stream keeps the full one, the hub gets the (empty) other.
            std::mem::swap(&mut st.queue, out);
            if st.queue.capacity() > KEPT_CAPACITY {
                st.queue = VecDeque::new();
            }
            return Poll::Ready(true);
        }
        if st.closed.is_some() {
            return Poll::Ready(false);
        }
        if !st.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// One event, for tests.
    #[cfg(test)]
    pub(crate) fn poll_queue(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut out = VecDeque::new();
        match self.poll_drain(&mut out, cx) {
            Poll::Ready(true) => {
                let first = out.pop_front();
                let mut st = self.state.lock().unwrap();
                while let Some(e) = out.pop_back() {
                    st.queue.push_front(e);
                }
                Poll::Ready(first)
            }
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Unregisters a subscription from its hub when the subscription goes.
pub(crate) trait Unregister: Send + Sync {
    fn unregister(&self, slot: u32, subscriber: &Arc<Subscriber>);
}

/// A live subscription: a stream of encoded SSE chunks for the HTTP body. It opens with a
/// comment (so the response starts at once), then the replayed history, then live
/// updates, with a heartbeat comment after each idle `heartbeat` (sent between one and two
/// periods of silence: the timer is re-armed only when it fires). Dropping it
/// unsubscribes.
pub struct Subscription {
    subscriber: Arc<Subscriber>,
    hub: Arc<dyn Unregister>,
    slot: u32,
    /// The opening comment and the replay, then each burst taken from the buffer.
    pending: VecDeque<Bytes>,
    timer: Option<Pin<Box<Sleep>>>,
    heartbeat: Option<Duration>,
    /// Something was sent since the timer was last armed.
    active: bool,
    ends_at: Option<(Instant, CloseReason)>,
    done: bool,
    last_event_id: Option<String>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.subscriber.id)
            .field("last_event_id", &self.last_event_id)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        subscriber: Arc<Subscriber>,
        hub: Arc<dyn Unregister>,
        slot: u32,
        replay: Vec<Bytes>,
        last_event_id: Option<String>,
        heartbeat: Option<Duration>,
        ends_at: Option<(Instant, CloseReason)>,
    ) -> Subscription {
        let mut pending = VecDeque::with_capacity(replay.len() + 1);
        pending.push_back(Bytes::from_static(HEARTBEAT));
        pending.extend(replay);
        Subscription {
            subscriber,
            hub,
            slot,
            pending,
            timer: None,
            heartbeat,
            active: true,
            ends_at,
            done: false,
            last_event_id,
        }
    }

    /// The subscriber's id (`urn:uuid:...`), as subscription events name it.
    pub fn id(&self) -> &str {
        &self.subscriber.id
    }

    /// The `Last-Event-ID` response header, when the request asked to resume.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Why the stream ended, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.subscriber.close_reason()
    }

    /// The next chunk to write, or None when the stream is over.
    pub async fn next_chunk(&mut self) -> Option<Bytes> {
        std::future::poll_fn(|cx| self.poll_chunk(cx)).await
    }

    fn next_deadline(&self) -> Option<Instant> {
        let beat = self.heartbeat.map(|h| Instant::now() + h);
        match (beat, self.ends_at) {
            (Some(b), Some((e, _))) => Some(b.min(e)),
            (b, e) => b.or(e.map(|(e, _)| e)),
        }
    }

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(chunk) = self.pending.pop_front() {
            if self.pending.is_empty() && self.pending.capacity() > KEPT_CAPACITY {
                // An idle subscriber does not keep the memory of its last burst.
                self.pending = VecDeque::new();
            }
            self.active = true;
            return Poll::Ready(Some(chunk));
        }
        match self.subscriber.poll_drain(&mut self.pending, cx) {
            Poll::Ready(true) => {
                self.active = true;
                return Poll::Ready(self.pending.pop_front());
            }
            Poll::Ready(false) => {
                self.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        if self.timer.is_none() {
            match self.next_deadline() {
                Some(at) => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
                None => return Poll::Pending,
            }
        }
        loop {
            let timer = self.timer.as_mut().expect("armed above");
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if let Some((end, reason)) = self.ends_at {
                if Instant::now() >= end {
                    self.subscriber.close(reason, true);
                    self.done = true;
                    return Poll::Ready(None);
                }
            }
            let Some(next) = self.next_deadline() else {
                return Poll::Pending;
            };
            self.timer.as_mut().expect("armed").as_mut().reset(next);
            if self.active {
                self.active = false;
                continue;
            }
            return Poll::Ready(Some(Bytes::from_static(HEARTBEAT)));
        }
    }
}

impl futures_core::Stream for Subscription {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.get_mut().poll_chunk(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unregister(self.slot, &self.subscriber);
    }
}
