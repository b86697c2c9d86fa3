//! Active subscriptions: the JSON-LD documents of subscription events (published when a
//! subscription starts and ends, if enabled) and of the subscriptions API
//! (`/.well-known/mercure/subscriptions[/{topic}[/{subscriber}]]`), in the shape and key
//! order the reference hub writes them.

use serde::Serialize;

/// The JSON-LD context of Mercure documents.
pub const JSONLD_CONTEXT: &str = "https://mercure.rocks/";

/// The path of the subscriptions API (and the prefix of subscription event topics).
pub const SUBSCRIPTIONS_PATH: &str = "/.well-known/mercure/subscriptions";

/// Escapes a topic or subscriber id for a path segment as Go's `url.QueryEscape` does:
/// letters, digits and `-_.~` stay, a space becomes `+`, every other byte is `%XX`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
    out
}

/// The topic of the subscription event (and the API path) for a subscriber's selector.
pub fn subscription_topic(selector: &str, subscriber_id: &str) -> String {
    format!(
        "{SUBSCRIPTIONS_PATH}/{}/{}",
        query_escape(selector),
        query_escape(subscriber_id)
    )
}

/// One subscription, as a document.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubscriptionDoc {
    /// The JSON-LD context (omitted inside a collection).
    #[serde(rename = "@context", skip_serializing_if = "Option::is_none")]
    pub context: Option<&'static str>,
    /// Its topic ([`subscription_topic`]).
    pub id: String,
    /// Always `Subscription`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The subscriber's id.
    pub subscriber: String,
    /// The selector it subscribed with.
    pub topic: String,
    /// Whether it is active.
    pub active: bool,
    /// The hub's last event id (single-subscription API answers only).
    #[serde(rename = "lastEventID", skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
    /// `mercure.payload` of the subscriber's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
}

impl SubscriptionDoc {
    /// The document of `subscriber_id`'s subscription to `selector`.
    pub fn new(
        selector: &str,
        subscriber_id: &str,
        active: bool,
        payload: Option<&serde_json::Value>,
    ) -> SubscriptionDoc {
        SubscriptionDoc {
            context: Some(JSONLD_CONTEXT),
            id: subscription_topic(selector, subscriber_id),
            kind: "Subscription",
            subscriber: subscriber_id.to_owned(),
            topic: selector.to_owned(),
            active,
            last_event_id: None,
            payload: payload.cloned(),
        }
    }

    /// Pretty-printed JSON (two-space indent), as events and the API send it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

/// A collection of subscriptions, as the API's collection endpoints answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubscriptionsDoc {
    /// The JSON-LD context.
    #[serde(rename = "@context")]
    pub context: &'static str,
    /// The URL the document was requested at.
    pub id: String,
    /// Always `Subscriptions`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The hub's last event id (`earliest` if none).
    #[serde(rename = "lastEventID")]
    pub last_event_id: String,
    /// The subscriptions (without their own context).
    pub subscriptions: Vec<SubscriptionDoc>,
}

impl SubscriptionsDoc {
    /// Pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

/// What an API path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiPath {
    /// `/.well-known/mercure/subscriptions`.
    All,
    /// `/.well-known/mercure/subscriptions/{topic}`.
    Topic(String),
    /// `/.well-known/mercure/subscriptions/{topic}/{subscriber}`.
    One {
        /// The selector.
        topic: String,
        /// The subscriber id.
        subscriber: String,
    },
}

/// Reads an API path (percent-encoded as received); None when it is not one.
pub fn parse_api_path(path: &str) -> Option<ApiPath> {
    let rest = path.strip_prefix(SUBSCRIPTIONS_PATH)?;
    if rest.is_empty() {
        return Some(ApiPath::All);
    }
    let rest = rest.strip_prefix('/')?;
    let unescape = |s: &str| crate::request::unescape_component(s.as_bytes()).ok();
    let mut parts = rest.split('/');
    let topic = parts.next().filter(|s| !s.is_empty())?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(ApiPath::Topic(unescape(topic)?)),
        (Some(sub), None) if !sub.is_empty() => Some(ApiPath::One {
            topic: unescape(topic)?,
            subscriber: unescape(sub)?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_go_query_escape() {
        assert_eq!(
            query_escape("https://example.com/{selector}"),
            "https%3A%2F%2Fexample.com%2F%7Bselector%7D"
        );
        assert_eq!(query_escape("a b~*é"), "a+b~%2A%C3%A9");
        assert_eq!(
            subscription_topic("https://example.com/{selector}", "urn:uuid:bb3de268-05b0-4c65-b44e-8f9acefc29d6"),
            "/.well-known/mercure/subscriptions/https%3A%2F%2Fexample.com%2F%7Bselector%7D/urn%3Auuid%3Abb3de268-05b0-4c65-b44e-8f9acefc29d6"
        );
    }

    #[test]
    fn documents_as_the_spec_shows_them() {
        let payload = serde_json::json!({"foo": "bar"});
        let doc = SubscriptionDoc::new(
            "https://example.com/{selector}",
            "urn:uuid:bb3de268-05b0-4c65-b44e-8f9acefc29d6",
            true,
            Some(&payload),
        );
        let v: serde_json::Value = serde_json::from_str(&doc.to_json()).unwrap();
        assert_eq!(v["@context"], "https://mercure.rocks/");
        assert_eq!(v["type"], "Subscription");
        assert_eq!(v["active"], true);
        assert_eq!(v["payload"]["foo"], "bar");
        assert_eq!(v["id"], "/.well-known/mercure/subscriptions/https%3A%2F%2Fexample.com%2F%7Bselector%7D/urn%3Auuid%3Abb3de268-05b0-4c65-b44e-8f9acefc29d6");
        assert!(v.get("lastEventID").is_none());
        // Key order as the reference hub writes it.
        let text = doc.to_json();
        let pos = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(
            pos("@context") < pos("id")
                && pos("id") < pos("type")
                && pos("type") < pos("subscriber")
        );
        assert!(
            pos("subscriber") < pos("topic")
                && pos("topic") < pos("active")
                && pos("active") < pos("payload")
        );
    }

    #[test]
    fn api_paths() {
        assert_eq!(
            parse_api_path("/.well-known/mercure/subscriptions"),
            Some(ApiPath::All)
        );
        assert_eq!(
            parse_api_path("/.well-known/mercure/subscriptions/a%2Fb"),
            Some(ApiPath::Topic("a/b".into()))
        );
        assert_eq!(
            parse_api_path("/.well-known/mercure/subscriptions/t/urn%3Auuid%3Ax"),
            Some(ApiPath::One {
                topic: "t".into(),
                subscriber: "urn:uuid:x".into()
            })
        );
        assert_eq!(
            parse_api_path("/.well-known/mercure/subscriptions/a/b/c"),
            None
        );
        assert_eq!(parse_api_path("/.well-known/mercure/subscriptionsX"), None);
        assert_eq!(parse_api_path("/.well-known/mercure"), None);
    }
}
