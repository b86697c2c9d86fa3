//! The Mercure conformance cases and the spec's MUSTs, through `Hub::handle` (the same
//! entry point the server mounts): the reference hub's conformance table (`cases/`),
//! publish and subscribe errors, private updates, reconnection, heartbeats, token expiry,
//! slow subscribers, subscription events and the subscriptions API, CORS, cookies.
//! "Not received" is decided by order: a marker update is published after the case's
//! update, and the stream is read up to the marker.

mod cases;
mod common;

use std::time::Duration;

use mercure::sse::parse_stream;
use mercure::{Body, CloseReason, Config, Hub, Update};
use serde_json::json;

use common::*;

fn config() -> Config {
    Config {
        anonymous: true,
        ..Config::with_hmac(PUBLISHER_KEY, SUBSCRIBER_KEY)
    }
}

fn enc(s: &str) -> String {
    mercure::subscriptions::query_escape(s)
}

fn query(selectors: &[&str]) -> String {
    selectors
        .iter()
        .map(|s| format!("topic={}", enc(s)))
        .collect::<Vec<_>>()
        .join("&")
}

#[tokio::test]
async fn the_conformance_table() {
    let hub = Hub::start(config()).unwrap();
    let publisher = publisher_token();
    for (i, case) in cases::CASES.iter().enumerate() {
        let marker = format!("urn:marker:{i}");
        let mut selectors = case.selectors.to_vec();
        selectors.push(&marker);
        let bearer;
        let mut headers = Vec::new();
        if let Some(claim) = case.subscribe_claim {
            bearer = format!("Bearer {}", subscriber_token(claim));
            headers.push(("Authorization", bearer.as_str()));
        }
        let (_, mut sub) = subscribe_http(&hub, &query(&selectors), &headers).await;

        let id = format!("id-{i}");
        let data = format!("data for\n\n        {}", case.name);
        let mut form = case
            .update_topics
            .iter()
            .map(|t| format!("topic={}", enc(t)))
            .collect::<Vec<_>>();
        form.push(format!("id={}", enc(&id)));
        form.push(format!("data={}", enc(&data)));
        if case.private {
            form.push("private=on".into());
        }
        let (status, body) = publish_http(&hub, &publisher, &form.join("&")).await;
        assert_eq!((status, body.as_str()), (200, id.as_str()), "{}", case.name);
        let (status, _) = publish_http(
            &hub,
            &publisher,
            &format!("topic={}&id={}", enc(&marker), enc(&marker)),
        )
        .await;
        assert_eq!(status, 200);

        let events = read_until(&mut sub, &marker).await;
        let got = events.iter().find(|e| e.id.as_deref() == Some(id.as_str()));
        assert_eq!(got.is_some(), case.must_receive, "case {:?}", case.name);
        if let Some(e) = got {
            assert_eq!(e.data, data, "{}", case.name);
            assert_eq!(e.event_type, None);
        }
    }
}

#[tokio::test]
async fn publish_answers_the_id_as_text() {
    let hub = Hub::start(config()).unwrap();
    let r = call(
        &hub,
        "POST",
        "/.well-known/mercure",
        None,
        &[
            ("Authorization", &format!("Bearer {}", publisher_token())),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        b"topic=a&data=x",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        header(&r, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(body_text(&r).starts_with("urn:uuid:"));
}

#[tokio::test]
async fn publish_refusals() {
    let hub = Hub::start(config()).unwrap();
    let ok = publisher_token();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expired = hs256(
        PUBLISHER_KEY,
        &json!({"mercure": {"publish": ["*"]}, "exp": now - 10}),
    );
    let wrong_key = hs256("another key", &json!({"mercure": {"publish": ["*"]}}));
    let no_claim = hs256(PUBLISHER_KEY, &json!({"mercure": {"subscribe": ["*"]}}));
    let only_a = hs256(PUBLISHER_KEY, &json!({"mercure": {"publish": ["a"]}}));
    let none = {
        use base64::Engine;
        let b = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!(
            "{}.{}.",
            b(json!({"alg": "none"})),
            b(json!({"mercure": {"publish": ["*"]}}))
        )
    };
    for (token, form, status) in [
        (ok.as_str(), "data=x", 400),
        (ok.as_str(), "topic=a&retry=soon", 400),
        (ok.as_str(), "topic=a&id=x%0Adata:%20forged", 400),
        (ok.as_str(), "topic=a&type=x%0D", 400),
        (ok.as_str(), "topic=a&id=earliest", 400),
        (ok.as_str(), "topic=a&data=%zz", 400),
        (
            ok.as_str(),
            "topic=https%3A%2F%2Fhub%2F.well-known%2Fmercure%2Fsubscriptions%2Fx%2Fy",
            403,
        ),
        (expired.as_str(), "topic=a", 401),
        (wrong_key.as_str(), "topic=a", 401),
        (none.as_str(), "topic=a", 401),
        (no_claim.as_str(), "topic=a", 401),
        (only_a.as_str(), "topic=b", 401),
        (only_a.as_str(), "topic=a&topic=b", 401),
        (only_a.as_str(), "topic=a&private=on", 200),
    ] {
        let (got, body) = publish_http(&hub, token, form).await;
        assert_eq!(got, status, "{form} -> {body}");
    }
    // No token at all, a malformed header, a non-form body.
    let r = call(&hub, "POST", "/.well-known/mercure", None, &[], b"topic=a").await;
    assert_eq!(r.status, 401);
    let r = call(
        &hub,
        "POST",
        "/.well-known/mercure",
        None,
        &[("Authorization", &format!("Token {ok}"))],
        b"topic=a",
    )
    .await;
    assert_eq!(r.status, 401);
    let r = call(
        &hub,
        "POST",
        "/.well-known/mercure",
        None,
        &[
            ("Authorization", &format!("Bearer {ok}")),
            ("Content-Type", "application/json"),
        ],
        b"topic=a",
    )
    .await;
    assert_eq!(r.status, 400);
    // Other methods and paths.
    assert_eq!(
        call(&hub, "PUT", "/.well-known/mercure", None, &[], b"")
            .await
            .status,
        405
    );
    assert_eq!(
        call(&hub, "GET", "/.well-known/mercure/nope", None, &[], b"")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn subscribe_refusals() {
    let closed = Hub::start(Config::with_hmac(PUBLISHER_KEY, SUBSCRIBER_KEY)).unwrap();
    // Anonymous subscribers only when enabled.
    let r = call(
        &closed,
        "GET",
        "/.well-known/mercure",
        Some("topic=a"),
        &[],
        b"",
    )
    .await;
    assert_eq!(r.status, 401);
    let good = format!("Bearer {}", subscriber_token(&["*"]));
    let (_, _sub) = subscribe_http(&closed, "topic=a", &[("Authorization", &good)]).await;
    // The token in the query parameter and in the cookie.
    let t = subscriber_token(&["*"]);
    let (_, _s) = subscribe_http(&closed, &format!("topic=a&authorization={t}"), &[]).await;
    let cookie = format!("mercureAuthorization={t}");
    let (_, _s) = subscribe_http(&closed, "topic=a", &[("Cookie", &cookie)]).await;
    // Bad tokens are refused even when anonymous is allowed.
    let open = Hub::start(config()).unwrap();
    let bad = format!(
        "Bearer {}",
        hs256("wrong", &json!({"mercure": {"subscribe": ["*"]}}))
    );
    for hub in [&closed, &open] {
        let r = call(
            hub,
            "GET",
            "/.well-known/mercure",
            Some("topic=a"),
            &[("Authorization", &bad)],
            b"",
        )
        .await;
        assert_eq!(r.status, 401);
    }
    // No topic.
    let r = call(&open, "GET", "/.well-known/mercure", None, &[], b"").await;
    assert_eq!(r.status, 400);
    let r = call(
        &open,
        "GET",
        "/.well-known/mercure",
        Some("lastEventID=x"),
        &[],
        b"",
    )
    .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn reconnection_replays_from_last_event_id() {
    let hub = Hub::start(config()).unwrap();
    let p = publisher_token();
    for id in ["a", "b", "c"] {
        publish_http(&hub, &p, &format!("topic=t&id={id}&data={id}")).await;
    }
    publish_http(&hub, &p, "topic=other&id=o").await;

    // The header.
    let (r, mut sub) = subscribe_http(&hub, "topic=t", &[("Last-Event-ID", "a")]).await;
    assert_eq!(header(&r, "last-event-id"), Some("a"));
    publish_http(&hub, &p, "topic=t&id=d").await;
    let ids: Vec<_> = read_until(&mut sub, "d")
        .await
        .into_iter()
        .map(|e| e.id.unwrap())
        .collect();
    assert_eq!(
        ids,
        ["b", "c", "d"],
        "replay then live, no gap, no duplicate"
    );

    // The query parameter; the header wins over it.
    let (r, mut sub) = subscribe_http(&hub, "topic=t&lastEventID=b", &[]).await;
    assert_eq!(header(&r, "last-event-id"), Some("b"));
    publish_http(&hub, &p, "topic=t&id=e").await;
    let ids: Vec<_> = read_until(&mut sub, "e")
        .await
        .into_iter()
        .map(|e| e.id.unwrap())
        .collect();
    assert_eq!(ids, ["c", "d", "e"]);
    let (r, _s) = subscribe_http(&hub, "topic=t&lastEventID=b", &[("Last-Event-ID", "c")]).await;
    assert_eq!(header(&r, "last-event-id"), Some("c"));

    // earliest: everything it may see.
    let (r, mut sub) = subscribe_http(&hub, "topic=t&lastEventID=earliest", &[]).await;
    assert_eq!(header(&r, "last-event-id"), Some("earliest"));
    let ids: Vec<_> = read_until(&mut sub, "e")
        .await
        .into_iter()
        .map(|e| e.id.unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);

    // An unknown id: nothing replayed, and the header names the newest event it may see.
    let (r, mut sub) = subscribe_http(&hub, "topic=t", &[("Last-Event-ID", "unknown")]).await;
    assert_eq!(header(&r, "last-event-id"), Some("e"));
    publish_http(&hub, &p, "topic=t&id=f").await;
    let ids: Vec<_> = read_until(&mut sub, "f")
        .await
        .into_iter()
        .map(|e| e.id.unwrap())
        .collect();
    assert_eq!(ids, ["f"]);

    // No resume asked: no header.
    let (r, _s) = subscribe_http(&hub, "topic=t", &[]).await;
    assert_eq!(header(&r, "last-event-id"), None);
}

#[tokio::test]
async fn private_updates_are_not_replayed_to_the_unauthorized() {
    let hub = Hub::start(config()).unwrap();
    let p = publisher_token();
    publish_http(&hub, &p, "topic=t&id=secret&private=on").await;
    publish_http(&hub, &p, "topic=t&id=public").await;
    let (r, mut sub) = subscribe_http(&hub, "topic=t&lastEventID=earliest", &[]).await;
    assert_eq!(header(&r, "last-event-id"), Some("earliest"));
    publish_http(&hub, &p, "topic=t&id=end").await;
    let ids: Vec<_> = read_until(&mut sub, "end")
        .await
        .into_iter()
        .map(|e| e.id.unwrap())
        .collect();
    assert_eq!(ids, ["public", "end"]);
    // An unknown id does not disclose the id of a private update either.
    publish_http(&hub, &p, "topic=t&id=secret2&private=on").await;
    let (r, _s) = subscribe_http(&hub, "topic=t", &[("Last-Event-ID", "?")]).await;
    assert_eq!(header(&r, "last-event-id"), Some("end"));
}

#[tokio::test]
async fn heartbeats_when_idle() {
    let hub = Hub::start(Config {
        heartbeat: Some(Duration::from_millis(50)),
        ..config()
    })
    .unwrap();
    let (r, mut sub) = subscribe_http(&hub, "topic=quiet", &[]).await;
    assert_eq!(header(&r, "content-type"), Some("text/event-stream"));
    let first = sub.next_chunk().await.unwrap();
    assert_eq!(&first[..], b":\n", "the stream opens with a comment");
    let next = tokio::time::timeout(Duration::from_secs(10), sub.next_chunk())
        .await
        .expect("a heartbeat comes while idle")
        .unwrap();
    assert_eq!(&next[..], b":\n");
    assert!(
        parse_stream(":\n:\n").is_empty(),
        "heartbeats are not events"
    );
}

#[tokio::test]
async fn the_stream_closes_when_the_token_expires() {
    let hub = Hub::start(Config::with_hmac(PUBLISHER_KEY, SUBSCRIBER_KEY)).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = hs256(
        SUBSCRIBER_KEY,
        &json!({"mercure": {"subscribe": ["*"]}, "exp": now + 2}),
    );
    let (_, mut sub) = subscribe_http(
        &hub,
        "topic=a",
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await;
    read_to_end(&mut sub).await;
    assert_eq!(sub.close_reason(), Some(CloseReason::TokenExpired));
}

#[tokio::test]
async fn a_slow_subscriber_is_closed_and_counted_without_delaying_others() {
    let hub = Hub::start(Config {
        subscriber_buffer: 4,
        ..config()
    })
    .unwrap();
    let (_, mut slow) = subscribe_http(&hub, "topic=t", &[]).await;
    let (_, mut fast) = subscribe_http(&hub, "topic=t", &[]).await;
    let p = publisher_token();
    for i in 0..10 {
        publish_http(&hub, &p, &format!("topic=t&id={i}")).await;
        // The fast one keeps up.
        read_until(&mut fast, &i.to_string()).await;
    }
    let rest = read_to_end(&mut slow).await;
    assert_eq!(rest, ":\n", "its buffer was discarded");
    assert_eq!(slow.close_reason(), Some(CloseReason::TooSlow));
    let stats = hub.stats();
    assert_eq!(stats.slow_subscribers_closed, 1);
    assert_eq!(stats.updates_dropped, 5);
    assert_eq!(stats.subscribers, 1);
    assert_eq!(stats.published, 10);
    assert_eq!(stats.delivered, 10 + 4);
}

#[tokio::test]
async fn subscription_events_and_the_api() {
    let hub = Hub::start(Config {
        subscriptions: true,
        ..config()
    })
    .unwrap();
    let template = "/.well-known/mercure/subscriptions/{topic}/{subscriber}";
    let watcher_token = subscriber_token(&[template]);
    let watcher_auth = format!("Bearer {watcher_token}");
    let (_, mut watcher) = subscribe_http(
        &hub,
        &query(&[template]),
        &[("Authorization", &watcher_auth)],
    )
    .await;

    let member_token = hs256(
        SUBSCRIBER_KEY,
        &json!({"mercure": {"subscribe": ["room"], "payload": {"user": "alice"}}}),
    );
    let (_, member) = subscribe_http(
        &hub,
        "topic=room",
        &[("Authorization", &format!("Bearer {member_token}"))],
    )
    .await;
    let member_id = member.id().to_owned();

    let event = next_json(&mut watcher).await;
    assert_eq!(event["type"], "Subscription");
    assert_eq!(event["topic"], "room");
    assert_eq!(event["subscriber"], member_id.as_str());
    assert_eq!(event["active"], true);
    assert_eq!(event["payload"]["user"], "alice");
    let expected_id = format!(
        "/.well-known/mercure/subscriptions/room/{}",
        enc(&member_id)
    );
    assert_eq!(event["id"], expected_id.as_str());

    // The API: the collection, for a topic, one subscription; auth; ETag.
    let api = |path: String, auth: Option<String>, inm: Option<String>| {
        let hub = hub.clone();
        async move {
            let mut h: Vec<(&str, &str)> = Vec::new();
            if let Some(a) = &auth {
                h.push(("Authorization", a));
            }
            if let Some(e) = &inm {
                h.push(("If-None-Match", e));
            }
            call(&hub, "GET", &path, None, &h, b"").await
        }
    };
    let api_token = format!(
        "Bearer {}",
        subscriber_token(&["/.well-known/mercure/subscriptions{/topic}{/subscriber}"])
    );
    let r = api(
        "/.well-known/mercure/subscriptions".into(),
        Some(api_token.clone()),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", body_text(&r));
    assert_eq!(header(&r, "content-type"), Some("application/ld+json"));
    let doc: serde_json::Value = serde_json::from_str(&body_text(&r)).unwrap();
    assert_eq!(doc["type"], "Subscriptions");
    assert_eq!(doc["@context"], "https://mercure.rocks/");
    let subs = doc["subscriptions"].as_array().unwrap();
    assert!(subs
        .iter()
        .any(|s| s["subscriber"] == member_id.as_str() && s["topic"] == "room"));
    let etag = header(&r, "etag").unwrap().to_owned();
    assert_eq!(doc["lastEventID"], etag.as_str());
    let r = api(
        "/.well-known/mercure/subscriptions".into(),
        Some(api_token.clone()),
        Some(etag),
    )
    .await;
    assert_eq!(r.status, 304);
    let r = api("/.well-known/mercure/subscriptions".into(), None, None).await;
    assert_eq!(r.status, 401);
    let r = api(
        "/.well-known/mercure/subscriptions".into(),
        Some(watcher_auth.clone()),
        None,
    )
    .await;
    assert_eq!(r.status, 401, "the claim must match the requested URL");
    let r = api(
        "/.well-known/mercure/subscriptions/room".into(),
        Some(api_token.clone()),
        None,
    )
    .await;
    let doc: serde_json::Value = serde_json::from_str(&body_text(&r)).unwrap();
    assert_eq!(doc["subscriptions"].as_array().unwrap().len(), 1);
    let one = format!(
        "/.well-known/mercure/subscriptions/room/{}",
        enc(&member_id)
    );
    let r = api(one.clone(), Some(api_token.clone()), None).await;
    assert_eq!(r.status, 200);
    let doc: serde_json::Value = serde_json::from_str(&body_text(&r)).unwrap();
    assert_eq!(doc["@context"], "https://mercure.rocks/");
    assert_eq!(doc["active"], true);
    assert!(doc["lastEventID"].is_string());
    let r = api(
        "/.well-known/mercure/subscriptions/room/urn%3Auuid%3Anobody".into(),
        Some(api_token.clone()),
        None,
    )
    .await;
    assert_eq!(r.status, 404);

    // Leaving publishes the inactive event.
    drop(member);
    let event = next_json(&mut watcher).await;
    assert_eq!(event["active"], false);
    assert_eq!(event["subscriber"], member_id.as_str());
    let r = api(one, Some(api_token), None).await;
    assert_eq!(r.status, 404);

    // Anonymous subscribers never see subscription events (they are private).
    let (_, mut anon) = subscribe_http(&hub, &query(&[template, "mark"]), &[]).await;
    let (_, other) = subscribe_http(&hub, "topic=x", &[]).await;
    drop(other);
    publish_http(&hub, &publisher_token(), "topic=mark&id=mark").await;
    let events = read_until(&mut anon, "mark").await;
    assert_eq!(events.len(), 1);
}

async fn next_json(sub: &mut mercure::Subscription) -> serde_json::Value {
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), sub.next_chunk())
            .await
            .expect("an event")
            .expect("open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        if let Some(e) = parse_stream(&text).into_iter().next() {
            return serde_json::from_str(&e.data).unwrap();
        }
    }
}

#[tokio::test]
async fn cors_preflight_and_actual_requests() {
    let hub = Hub::start(Config {
        cors_origins: vec!["https://app.example".into()],
        ..config()
    })
    .unwrap();
    let r = call(
        &hub,
        "OPTIONS",
        "/.well-known/mercure",
        None,
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "last-event-id"),
        ],
        b"",
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(header(&r, "access-control-allow-credentials"), Some("true"));
    assert_eq!(
        header(&r, "access-control-allow-headers"),
        Some("last-event-id")
    );
    let r = call(
        &hub,
        "OPTIONS",
        "/.well-known/mercure",
        None,
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
        b"",
    )
    .await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
    let (r, _s) = subscribe_http(&hub, "topic=a", &[("Origin", "https://app.example")]).await;
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(header(&r, "x-frame-options"), Some("DENY"));
    // Without CORS origins, no CORS header at all.
    let plain = Hub::start(config()).unwrap();
    let (r, _s) = subscribe_http(&plain, "topic=a", &[("Origin", "https://app.example")]).await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
}

#[tokio::test]
async fn publishing_with_the_cookie_needs_an_allowed_origin() {
    let hub = Hub::start(Config {
        publish_origins: vec!["https://app.example".into()],
        ..config()
    })
    .unwrap();
    let cookie = format!("mercureAuthorization={}", publisher_token());
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    for (origin, status) in [
        (None, 401),
        (Some(("Origin", "https://evil.example")), 401),
        (Some(("Origin", "https://app.example")), 200),
        (Some(("Referer", "https://app.example/page")), 200),
    ] {
        let mut h = vec![("Cookie", cookie.as_str()), form];
        h.extend(origin);
        let r = call(&hub, "POST", "/.well-known/mercure", None, &h, b"topic=a").await;
        assert_eq!(r.status, status, "{origin:?}");
    }
}

#[test]
fn mercure_publish_from_a_plain_thread() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let hub = rt.block_on(async { Hub::start(config()).unwrap() });
    let mut sub = rt
        .block_on(hub.subscribe(mercure::SubscribeOptions {
            topics: vec!["php".into()],
            ..Default::default()
        }))
        .unwrap();
    let h = hub.clone();
    let id = std::thread::spawn(move || {
        h.publish_blocking(
            Update {
                topics: vec!["php".into()],
                data: "from PHP".into(),
                ..Update::default()
            },
            None,
        )
    })
    .join()
    .unwrap()
    .unwrap();
    let events = rt.block_on(read_until(&mut sub, &id));
    assert_eq!(events[0].data, "from PHP");
    // Invalid updates are refused the same way as over HTTP.
    let err = hub
        .publish_blocking(Update::new("https://x/.well-known/mercure/y", ""), None)
        .unwrap_err();
    assert_eq!(err.status(), 403);
    assert!(matches!(
        hub.publish_blocking(Update::default(), None),
        Err(mercure::PublishError::Invalid(_))
    ));
    let _ = Body::Empty;
    hub.stop();
    assert_eq!(
        hub.publish_blocking(Update::new("php", ""), None),
        Err(mercure::PublishError::Stopped)
    );
}
