//! Helpers shared by the crate's integration tests: tokens, requests through
//! `Hub::handle`, and reading a subscription's stream up to a marker event (so "not
//! received" is decided by order, never by waiting).

#![allow(dead_code)]

use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header};
use mercure::sse::{parse_stream, ParsedEvent};
use mercure::{Body, Hub, Request, Response, Subscription};

pub const PUBLISHER_KEY: &str = "!ChangeThisMercureHubJWTSecretKey!";
pub const SUBSCRIBER_KEY: &str = "!ChangeThisSubscriberKey!";

pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// An HS256 token with these claims.
pub fn hs256(key: &str, claims: &serde_json::Value) -> String {
    jsonwebtoken::encode(
        &Header::default(),
        claims,
        &EncodingKey::from_secret(key.as_bytes()).unwrap(),
    )
    .unwrap()
}

pub fn publisher_token() -> String {
    hs256(
        PUBLISHER_KEY,
        &serde_json::json!({"mercure": {"publish": ["*"]}}),
    )
}

pub fn subscriber_token(subscribe: &[&str]) -> String {
    hs256(
        SUBSCRIBER_KEY,
        &serde_json::json!({"mercure": {"subscribe": subscribe}}),
    )
}

/// Sends a request through `hub.handle`.
pub async fn call(
    hub: &Hub,
    method: &str,
    path: &str,
    query: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    hub.handle(
        Request {
            method,
            path,
            query,
            headers,
            trace: None,
        },
        body,
    )
    .await
}

pub fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

pub fn body_text(r: &Response) -> String {
    match &r.body {
        Body::Full(b) => String::from_utf8(b.to_vec()).unwrap(),
        Body::Empty => String::new(),
        Body::Events(_) => panic!("a stream"),
    }
}

/// Publishes over the hub's HTTP endpoint; returns (status, body).
pub async fn publish_http(hub: &Hub, token: &str, form: &str) -> (u16, String) {
    let auth = format!("Bearer {token}");
    let r = call(
        hub,
        "POST",
        "/.well-known/mercure",
        None,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
    )
    .await;
    let status = r.status;
    (status, body_text(&r))
}

/// Subscribes over the hub's endpoint; panics unless it answers a stream.
pub async fn subscribe_http(
    hub: &Hub,
    query: &str,
    headers: &[(&str, &str)],
) -> (Response, Subscription) {
    let mut r = call(
        hub,
        "GET",
        "/.well-known/mercure",
        Some(query),
        headers,
        b"",
    )
    .await;
    assert_eq!(r.status, 200, "{}", body_or_stream(&r));
    let body = std::mem::replace(&mut r.body, Body::Empty);
    match body {
        Body::Events(s) => (r, s),
        _ => panic!("not a stream"),
    }
}

fn body_or_stream(r: &Response) -> String {
    match &r.body {
        Body::Events(_) => "<stream>".into(),
        _ => body_text(r),
    }
}

/// Reads events until one with id `marker` (inclusive); fails after 10 s (a hang).
pub async fn read_until(sub: &mut Subscription, marker: &str) -> Vec<ParsedEvent> {
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), sub.next_chunk())
            .await
            .unwrap_or_else(|_| panic!("no event {marker:?} within 10 s; got {text:?}"))
            .unwrap_or_else(|| panic!("stream ended before {marker:?}; got {text:?}"));
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        let events = parse_stream(&text);
        if events.iter().any(|e| e.id.as_deref() == Some(marker)) {
            return events;
        }
    }
}

/// Reads the stream to its end (10 s at most).
pub async fn read_to_end(sub: &mut Subscription) -> String {
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), sub.next_chunk())
        .await
        .expect("the stream did not end within 10 s")
    {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    text
}
