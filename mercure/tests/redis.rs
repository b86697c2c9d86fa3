//! Several hubs on one real Redis (Debian's `redis-server`, started here on a free
//! loopback port): an update published on one instance reaches the subscribers of the
//! others in one order for all, reconnection history is shared (an instance started later
//! replays what others published), and losing Redis mid-way neither crashes a hub nor ends
//! its subscriptions: publishing fails while Redis is down and works again once it is back.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mercure::{Config, Hub, PublishError, SubscribeOptions, TransportConfig, Update};

struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(port: u16) -> Redis {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian package redis-server) must be installed");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    // Bound and released: redis-server has no `--port 0`.
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn hub(port: u16, stream: &str) -> Hub {
    Hub::start(Config {
        anonymous: true,
        transport: TransportConfig::Redis {
            url: format!("redis://127.0.0.1:{port}/"),
            stream: stream.to_owned(),
        },
        ..Config::with_hmac(common::PUBLISHER_KEY, common::SUBSCRIBER_KEY)
    })
    .unwrap()
}

async fn wait_connected(hub: &Hub) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !hub.stats().transport_connected {
        assert!(
            Instant::now() < deadline,
            "the hub did not connect to Redis"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn subscribe(hub: &Hub, topic: &str, last: Option<&str>) -> mercure::Subscription {
    hub.subscribe(SubscribeOptions {
        topics: vec![topic.into()],
        last_event_id: last.map(str::to_owned),
        grants: None,
    })
    .await
    .unwrap()
}

fn update(id: &str) -> Update {
    Update {
        id: Some(id.into()),
        ..Update::new("t", format!("data {id}"))
    }
}

fn ids(events: &[mercure::sse::ParsedEvent]) -> Vec<String> {
    events.iter().filter_map(|e| e.id.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hubs_share_updates_and_history_and_survive_losing_redis() {
    let port = free_port();
    let mut redis = Redis::start(port);
    let stream = format!("test:mercure:{}", std::process::id());
    let a = hub(port, &stream);
    let b = hub(port, &stream);
    wait_connected(&a).await;
    wait_connected(&b).await;

    let mut on_a = subscribe(&a, "t", None).await;
    let mut on_b = subscribe(&b, "t", None).await;
    // Published on both instances, interleaved: every subscriber sees one order.
    for i in 0..10 {
        let h = if i % 2 == 0 { &a } else { &b };
        h.publish(update(&format!("u{i}"))).await.unwrap();
    }
    let seen_a = ids(&common::read_until(&mut on_a, "u9").await);
    let seen_b = ids(&common::read_until(&mut on_b, "u9").await);
    assert_eq!(seen_a.len(), 10);
    assert_eq!(seen_a, seen_b, "one order on every instance");
    assert_eq!(a.stats().published + b.stats().published, 10);

    // History is shared: resume on B after an update A published.
    let mut resumed = subscribe(&b, "t", Some("u3")).await;
    assert_eq!(resumed.last_event_id(), Some("u3"));
    let got = ids(&common::read_until(&mut resumed, "u9").await);
    let expected: Vec<String> =
        seen_a[seen_a.iter().position(|x| x == "u3").unwrap() + 1..].to_vec();
    assert_eq!(got, expected);
    // And an instance started later loads it from the stream.
    let c = hub(port, &stream);
    wait_connected(&c).await;
    let mut late = subscribe(&c, "t", Some("earliest")).await;
    assert_eq!(ids(&common::read_until(&mut late, "u9").await), seen_a);

    // Redis goes away: publishing fails, nothing crashes, subscriptions stay open.
    redis.stop();
    let err = a.publish(update("lost")).await.unwrap_err();
    assert!(matches!(err, PublishError::Unavailable(_)), "{err:?}");
    assert_eq!(err.status(), 503);
    let deadline = Instant::now() + Duration::from_secs(20);
    while b.stats().transport_connected {
        assert!(Instant::now() < deadline, "B did not notice Redis was gone");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Back on the same port (empty: no persistence): the readers reconnect and carry on.
    let _redis = Redis::start(redis.port);
    wait_connected(&a).await;
    wait_connected(&b).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match a.publish(update("back")).await {
            Ok(_) => break,
            Err(e) => {
                assert!(Instant::now() < deadline, "publishing never recovered: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let after = ids(&common::read_until(&mut on_b, "back").await);
    assert!(!after.contains(&"lost".to_string()));
    let after_a = ids(&common::read_until(&mut on_a, "back").await);
    assert_eq!(after_a.last().map(String::as_str), Some("back"));
    let stats = b.stats();
    assert!(
        stats.transport_errors >= 1 && stats.transport_reconnects >= 1,
        "{stats:?}"
    );
    assert!(a.stats().publish_errors >= 1);
}
