//! The durable history (fjall): updates survive the hub, a new hub on the same directory
//! replays them to a reconnecting subscriber and carries on live, and the log stays
//! bounded.

mod common;

use mercure::{Config, HistoryConfig, Hub, SubscribeOptions, Update};

fn hub(dir: &std::path::Path, max: usize) -> Hub {
    Hub::start(Config {
        anonymous: true,
        history: HistoryConfig::Durable {
            path: dir.to_owned(),
            max_updates: max,
        },
        ..Config::with_hmac(common::PUBLISHER_KEY, common::SUBSCRIBER_KEY)
    })
    .unwrap()
}

fn update(id: &str) -> Update {
    Update {
        id: Some(id.into()),
        ..Update::new("t", format!("data {id}"))
    }
}

#[tokio::test]
async fn history_survives_a_restart_and_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mercure");
    {
        let h = hub(&path, 100);
        for i in 1..=5 {
            h.publish(update(&format!("u{i}"))).await.unwrap();
        }
        h.stop();
    }
    let h = hub(&path, 100);
    assert_eq!(h.last_event_id(), "u5");
    let mut sub = h
        .subscribe(SubscribeOptions {
            topics: vec!["t".into()],
            last_event_id: Some("u2".into()),
            grants: None,
        })
        .await
        .unwrap();
    assert_eq!(sub.last_event_id(), Some("u2"));
    h.publish(update("u6")).await.unwrap();
    let events = common::read_until(&mut sub, "u6").await;
    let ids: Vec<_> = events.iter().filter_map(|e| e.id.clone()).collect();
    assert_eq!(ids, ["u3", "u4", "u5", "u6"]);
    assert_eq!(events[0].data, "data u3");

    for i in 7..=400 {
        h.publish(update(&format!("u{i}"))).await.unwrap();
    }
    let len = h.stats().history_len;
    assert!((100..=164).contains(&len), "bounded: {len}");
    drop(sub);
    h.stop();
    drop(h);
    // Still bounded and readable after another restart.
    let h = hub(&path, 100);
    assert_eq!(h.last_event_id(), "u400");
    let mut sub = h
        .subscribe(SubscribeOptions {
            topics: vec!["t".into()],
            last_event_id: Some("u398".into()),
            grants: None,
        })
        .await
        .unwrap();
    let ids: Vec<_> = common::read_until(&mut sub, "u400")
        .await
        .iter()
        .filter_map(|e| e.id.clone())
        .collect();
    assert_eq!(ids, ["u399", "u400"]);
}
