//! Randomised entitlement: many subscribers with random selector sets and claims, joining
//! and leaving at random points, random public and private publishes. Every subscriber
//! must receive exactly the updates it is entitled to (by the reference rules of
//! `reference/`, written independently of the crate's matcher and index), in publish
//! order, and nothing else.

mod common;
mod reference;

use mercure::{Config, Hub, SubscribeOptions, Subscription, Update};
use reference::{pick, random_topic, SELECTORS};

struct Sub {
    selectors: Vec<usize>,
    claim: Option<Vec<usize>>,
    expected: Vec<String>,
    stream: Subscription,
}

fn entitled(sub: &Sub, topics: &[String], private: bool) -> bool {
    reference::entitled(&sub.selectors, sub.claim.as_deref(), topics, private)
}

#[tokio::test]
async fn every_subscriber_gets_exactly_what_it_is_entitled_to_in_order() {
    for seed in 0..8u64 {
        run(seed).await;
    }
}

async fn run(seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let hub = Hub::start(Config {
        anonymous: true,
        subscriber_buffer: 10_000,
        ..Config::with_hmac(common::PUBLISHER_KEY, common::SUBSCRIBER_KEY)
    })
    .unwrap();
    let mut subs: Vec<Sub> = Vec::new();
    let mut left: Vec<Subscription> = Vec::new();
    let mut published = 0usize;
    for step in 0..600 {
        match rng.u8(0..10) {
            // Join.
            0..=2 => {
                let selectors = pick(&mut rng, 3);
                let claim = match rng.u8(0..3) {
                    0 => None,
                    1 => Some(Vec::new()),
                    _ => Some(pick(&mut rng, 2)),
                };
                let mut topics: Vec<String> = selectors
                    .iter()
                    .map(|&s| SELECTORS[s].text.to_owned())
                    .collect();
                topics.push("marker".into());
                let grants = claim.as_ref().map(|c| {
                    hub.grants(mercure::Claims {
                        subscribe: Some(c.iter().map(|&s| SELECTORS[s].text.to_owned()).collect()),
                        ..Default::default()
                    })
                });
                let stream = hub
                    .subscribe(SubscribeOptions {
                        topics,
                        last_event_id: None,
                        grants,
                    })
                    .await
                    .unwrap();
                subs.push(Sub {
                    selectors,
                    claim,
                    expected: Vec::new(),
                    stream,
                });
            }
            // Leave (not checked any more; the others must not notice).
            3 if !subs.is_empty() && rng.u8(0..4) == 0 => {
                let gone = subs.swap_remove(rng.usize(0..subs.len()));
                left.push(gone.stream);
                if rng.bool() {
                    left.clear();
                }
            }
            // Publish.
            _ => {
                let n = rng.usize(1..=3);
                let topics: Vec<String> = (0..n).map(|_| random_topic(&mut rng)).collect();
                let private = rng.u8(0..10) < 4;
                let id = format!("u{step}");
                for s in subs.iter_mut() {
                    if entitled(s, &topics, private) {
                        s.expected.push(id.clone());
                    }
                }
                hub.publish(Update {
                    topics,
                    private,
                    id: Some(id),
                    data: format!("d{step}"),
                    ..Update::default()
                })
                .await
                .unwrap();
                published += 1;
            }
        }
    }
    hub.publish(Update {
        id: Some("end".into()),
        ..Update::new("marker", "")
    })
    .await
    .unwrap();
    let mut checked = 0;
    for s in subs.iter_mut() {
        let events = common::read_until(&mut s.stream, "end").await;
        let got: Vec<String> = events
            .iter()
            .filter_map(|e| e.id.clone())
            .filter(|id| id != "end")
            .collect();
        assert_eq!(
            got,
            s.expected,
            "seed {seed}: selectors {:?} claim {:?}",
            s.selectors
                .iter()
                .map(|&i| SELECTORS[i].text)
                .collect::<Vec<_>>(),
            s.claim
        );
        checked += got.len();
    }
    assert!(
        published > 100 && checked > 100,
        "seed {seed}: a meaningful run ({published}, {checked})"
    );
}
