//! Randomised entitlement: many subscribers with random selector sets and claims, joining
//! and leaving at random points, random public and private publishes. Every subscriber
//! must receive exactly the updates it is entitled to (by a reference rule written here
//! independently of the crate's matcher and index), in publish order, and nothing else.

mod common;

use mercure::{Config, Hub, SubscribeOptions, Subscription, Update};

/// A selector and the reference rule for it.
struct Sel {
    text: &'static str,
    matches: fn(&str) -> bool,
}

fn seg_ok(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// `https://ex.com/r/<a>/i/<b>` split into (a, b).
fn parts(topic: &str) -> Option<(&str, &str)> {
    let rest = topic.strip_prefix("https://ex.com/r/")?;
    let (a, b) = rest.split_once("/i/")?;
    Some((a, b))
}

const SELECTORS: &[Sel] = &[
    Sel {
        text: "*",
        matches: |_| true,
    },
    Sel {
        text: "t0",
        matches: |t| t == "t0",
    },
    Sel {
        text: "t1",
        matches: |t| t == "t1",
    },
    Sel {
        text: "https://ex.com/r/1/i/2",
        matches: |t| t == "https://ex.com/r/1/i/2",
    },
    Sel {
        text: "https://ex.com/r/{r}/i/{i}",
        matches: |t| {
            parts(t)
                .is_some_and(|(a, b)| (a.is_empty() || seg_ok(a)) && (b.is_empty() || seg_ok(b)))
        },
    },
    Sel {
        text: "https://ex.com/r/1/i/{i}",
        matches: |t| parts(t).is_some_and(|(a, b)| a == "1" && (b.is_empty() || seg_ok(b))),
    },
    Sel {
        text: "https://ex.com/r/{r}/i/3",
        matches: |t| parts(t).is_some_and(|(a, b)| (a.is_empty() || seg_ok(a)) && b == "3"),
    },
    Sel {
        text: "https://ex.com/{+rest}",
        matches: |t| t.starts_with("https://ex.com/"),
    },
    Sel {
        text: "nothing-{x}-here",
        matches: |t| t.starts_with("nothing-") && t.ends_with("-here"),
    },
];

fn random_topic(rng: &mut fastrand::Rng) -> String {
    match rng.u8(0..5) {
        0 => "t0".into(),
        1 => "t1".into(),
        2 => "t2".into(),
        _ => format!("https://ex.com/r/{}/i/{}", rng.u8(0..4), rng.u8(0..5)),
    }
}

struct Sub {
    selectors: Vec<usize>,
    claim: Option<Vec<usize>>,
    expected: Vec<String>,
    stream: Subscription,
}

fn entitled(sub: &Sub, topics: &[String], private: bool) -> bool {
    let listens = sub
        .selectors
        .iter()
        .any(|&s| topics.iter().any(|t| (SELECTORS[s].matches)(t)));
    let allowed = !private
        || sub.claim.as_ref().is_some_and(|c| {
            c.iter()
                .any(|&s| topics.iter().any(|t| (SELECTORS[s].matches)(t)))
        });
    listens && allowed
}

fn pick(rng: &mut fastrand::Rng, max: usize) -> Vec<usize> {
    (0..rng.usize(1..=max))
        .map(|_| rng.usize(0..SELECTORS.len()))
        .collect()
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
