//! Updates: what a publisher hands the hub ([`Update`]), the checks every update from
//! outside passes ([`Update::validate`]), the ids the hub generates, and the form an
//! update takes once published ([`Published`]: its SSE event encoded once, shared by every
//! subscriber, the history and the transports).

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::sse;

/// The topic namespace the hub keeps for itself (subscription events): a publisher may not
/// publish there, or it could forge them. Checked as a substring, as the reference hub does.
pub const RESERVED_TOPIC_PART: &str = "/.well-known/mercure";

/// The reserved `Last-Event-ID` value asking for the whole history.
pub const EARLIEST: &str = "earliest";

/// An update to dispatch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update {
    /// The topics: the first is the canonical one, the others alternates. Subscribers
    /// matching any of them receive the update.
    pub topics: Vec<String>,
    /// The content (the SSE `data`).
    pub data: String,
    /// Only subscribers authorized for one of the topics receive it.
    pub private: bool,
    /// The SSE `id`; the hub generates a `urn:uuid:` one when None (or empty).
    pub id: Option<String>,
    /// The SSE `event` field.
    pub event_type: Option<String>,
    /// The SSE `retry` field (reconnection delay in milliseconds).
    pub retry: Option<u64>,
}

/// Why an update was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateError {
    /// No topic at all.
    MissingTopic,
    /// More topics than [`crate::Limits::max_topics`].
    TooManyTopics,
    /// A topic in the hub's reserved namespace.
    ReservedTopic(String),
    /// An id with CR, LF or NUL (it would inject SSE fields), or the reserved `earliest`.
    InvalidId,
    /// An event type with CR, LF or NUL.
    InvalidType,
    /// A `retry` that is not a number.
    InvalidRetry,
}

impl UpdateError {
    /// The HTTP status the publish endpoint answers with (403 for a reserved topic, as
    /// the reference hub; 400 otherwise).
    pub fn status(&self) -> u16 {
        match self {
            UpdateError::ReservedTopic(_) => 403,
            _ => 400,
        }
    }
}

impl std::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpdateError::MissingTopic => f.write_str(r#"Missing "topic" parameter"#),
            UpdateError::TooManyTopics => f.write_str("too many topics in update"),
            UpdateError::ReservedTopic(t) => write!(
                f,
                r#"{t:?}: topic value references the reserved "/.well-known/mercure" namespace"#
            ),
            UpdateError::InvalidId => f.write_str(r#""id" field contains a forbidden character"#),
            UpdateError::InvalidType => {
                f.write_str(r#""type" field contains a forbidden control character"#)
            }
            UpdateError::InvalidRetry => f.write_str(r#"Invalid "retry" parameter"#),
        }
    }
}

impl std::error::Error for UpdateError {}

/// CR, LF and NUL copied into an `id:` or `event:` line would start new SSE fields.
fn has_field_breaker(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b'\r' | b'\n' | b'\0'))
}

impl Update {
    /// An update of one topic.
    pub fn new(topic: impl Into<String>, data: impl Into<String>) -> Update {
        Update {
            topics: vec![topic.into()],
            data: data.into(),
            ..Update::default()
        }
    }

    /// The checks an update from outside the hub passes (publishers over HTTP and
    /// `mercure_publish()` alike): at least one topic and at most `max_topics`, none in
    /// the reserved namespace, an id and a type that cannot inject SSE fields, an id that
    /// is not `earliest`.
    pub fn validate(&self, max_topics: usize) -> Result<(), UpdateError> {
        if self.topics.is_empty() {
            return Err(UpdateError::MissingTopic);
        }
        if self.topics.len() > max_topics {
            return Err(UpdateError::TooManyTopics);
        }
        if let Some(t) = self.topics.iter().find(|t| t.contains(RESERVED_TOPIC_PART)) {
            return Err(UpdateError::ReservedTopic(t.clone()));
        }
        if let Some(id) = &self.id {
            if has_field_breaker(id) || id == EARLIEST {
                return Err(UpdateError::InvalidId);
            }
        }
        if self.event_type.as_deref().is_some_and(has_field_breaker) {
            return Err(UpdateError::InvalidType);
        }
        Ok(())
    }

    /// The id, generating a `urn:uuid:` one (UUID v7: time-ordered) when none was given.
    pub(crate) fn take_or_generate_id(&mut self) -> String {
        match self.id.take().filter(|id| !id.is_empty()) {
            Some(id) => id,
            None => generate_update_id(),
        }
    }
}

/// A fresh update id: `urn:uuid:` and a UUID v7, as the reference hub generates them.
pub fn generate_update_id() -> String {
    format!("urn:uuid:{}", uuid::Uuid::now_v7())
}

/// A fresh subscriber id: `urn:uuid:` and a random UUID (v4).
pub fn generate_subscriber_id() -> String {
    format!("urn:uuid:{}", uuid::Uuid::new_v4())
}

/// A published update: its id fixed, its event encoded once. Shared (behind an [`Arc`])
/// by every subscriber queue it reaches and by the in-memory history.
#[derive(Debug)]
pub struct Published {
    /// The update's id.
    pub id: String,
    /// Its topics (canonical first).
    pub topics: Box<[String]>,
    /// Private updates reach only authorized subscribers.
    pub private: bool,
    /// The SSE event, ready to write.
    pub event: Bytes,
}

impl Published {
    /// Fixes the id (generating one if needed) and encodes the event.
    pub fn from_update(mut update: Update) -> Published {
        let id = update.take_or_generate_id();
        let mut event = Vec::new();
        sse::encode_event(
            &mut event,
            &id,
            update.event_type.as_deref(),
            update.retry,
            &update.data,
        );
        Published {
            id,
            topics: update.topics.into_boxed_slice(),
            private: update.private,
            event: Bytes::from(event),
        }
    }
}

/// What the durable history and the Redis stream store of an update: its fields, not its
/// encoding, so a change of encoding never meets old records.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredUpdate {
    pub(crate) id: String,
    pub(crate) topics: Vec<String>,
    pub(crate) private: bool,
    pub(crate) data: String,
    pub(crate) event_type: Option<String>,
    pub(crate) retry: Option<u64>,
}

impl StoredUpdate {
    /// The record of `update`, whose id is `id`.
    pub(crate) fn new(id: &str, update: &Update) -> StoredUpdate {
        StoredUpdate {
            id: id.to_owned(),
            topics: update.topics.clone(),
            private: update.private,
            data: update.data.clone(),
            event_type: update.event_type.clone(),
            retry: update.retry,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("serializing to a Vec cannot fail")
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<StoredUpdate> {
        postcard::from_bytes(bytes).ok()
    }

    pub(crate) fn into_published(self) -> Arc<Published> {
        Arc::new(Published::from_update(Update {
            topics: self.topics,
            data: self.data,
            private: self.private,
            id: Some(self.id),
            event_type: self.event_type,
            retry: self.retry,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ok = Update::new("https://example.com/a", "x");
        assert_eq!(ok.validate(10), Ok(()));
        assert_eq!(
            Update::default().validate(10),
            Err(UpdateError::MissingTopic)
        );
        let mut many = ok.clone();
        many.topics = vec!["a".into(); 11];
        assert_eq!(many.validate(10), Err(UpdateError::TooManyTopics));
        let mut reserved = ok.clone();
        reserved
            .topics
            .push("https://hub.example/.well-known/mercure/subscriptions/x/y".into());
        assert!(matches!(
            reserved.validate(10),
            Err(UpdateError::ReservedTopic(_))
        ));
        assert_eq!(reserved.validate(10).unwrap_err().status(), 403);
        for bad in ["a\nid: b", "a\rb", "a\0", "earliest"] {
            let mut u = ok.clone();
            u.id = Some(bad.into());
            assert_eq!(u.validate(10), Err(UpdateError::InvalidId), "{bad:?}");
        }
        let mut t = ok.clone();
        t.event_type = Some("x\ndata: forged".into());
        assert_eq!(t.validate(10), Err(UpdateError::InvalidType));
    }

    #[test]
    fn ids_are_generated_when_absent_or_empty() {
        for id in [None, Some(String::new())] {
            let u = Update {
                id,
                ..Update::new("t", "d")
            };
            let p = Published::from_update(u);
            assert!(p.id.starts_with("urn:uuid:"), "{}", p.id);
            assert_eq!(p.id.len(), "urn:uuid:".len() + 36);
        }
        let p = Published::from_update(Update {
            id: Some("mine".into()),
            ..Update::new("t", "d")
        });
        assert_eq!(p.id, "mine");
        assert_eq!(&p.event[..], b"id: mine\ndata: d\n\n");
    }

    #[test]
    fn stored_round_trip() {
        let u = Update {
            topics: vec!["a".into(), "b".into()],
            data: "x\ny".into(),
            private: true,
            id: None,
            event_type: Some("t".into()),
            retry: Some(3),
        };
        let s = StoredUpdate::new("id-9", &u);
        let back = StoredUpdate::decode(&s.encode()).unwrap().into_published();
        assert_eq!(back.id, "id-9");
        assert_eq!(&*back.topics, &["a".to_string(), "b".to_string()]);
        assert!(back.private);
        assert_eq!(
            &back.event[..],
            b"event: t\nretry: 3\nid: id-9\ndata: x\ndata: y\n\n"
        );
        assert!(StoredUpdate::decode(b"\xff\xff\xff").is_none());
    }
}
