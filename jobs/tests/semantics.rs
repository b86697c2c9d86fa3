//! The queue's semantics, run against both backends (the local fjall store and a real
//! redis-server started by the test): order, priorities, several queues, delays, retries
//! and the dead-letter list, unique keys, leases that expire or are extended, refused
//! input, waking blocked takes.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, local_queue, redis_queue, RedisServer};
use jobs::{Backoff, DispatchOptions, FailOutcome, JobsError, Queue, QueueCounts, StopSignal};

fn opts() -> DispatchOptions {
    DispatchOptions {
        backoff: Backoff::NONE,
        ..DispatchOptions::default()
    }
}

const NOW: Duration = Duration::ZERO;

fn take(q: &Queue, queue: &str) -> Option<jobs::Lease> {
    q.take(&[queue], NOW).unwrap()
}

fn counts(ready: u64, delayed: u64, running: u64, dead: u64) -> QueueCounts {
    QueueCounts {
        ready,
        delayed,
        running,
        dead,
    }
}

fn fifo_and_ack(q: &Queue) {
    let a = q.dispatch("mail", b"a", &opts()).unwrap();
    let b = q.dispatch("mail", b"b", &opts()).unwrap();
    assert_ne!(a.id, b.id);
    assert!(!a.deduplicated);
    assert_eq!(q.counts("mail").unwrap(), counts(2, 0, 0, 0));
    let first = take(q, "mail").unwrap();
    assert_eq!(
        (first.id.as_str(), first.payload.as_slice(), first.attempt),
        (a.id.as_str(), &b"a"[..], 1)
    );
    assert_eq!(q.counts("mail").unwrap(), counts(1, 0, 1, 0));
    q.ack(&first).unwrap();
    assert_eq!(
        q.ack(&first),
        Err(JobsError::LeaseLost { id: a.id.clone() })
    );
    let second = take(q, "mail").unwrap();
    assert_eq!(second.payload, b"b");
    q.ack(&second).unwrap();
    assert!(take(q, "mail").is_none());
    assert_eq!(q.counts("mail").unwrap(), counts(0, 0, 0, 0));
    assert!(q.queues().unwrap().contains(&"mail".to_string()));
    let t = q.totals();
    assert_eq!((t.dispatched, t.taken, t.acked), (2, 2, 2));
}

fn priorities_and_queues(q: &Queue) {
    for (payload, priority) in [(&b"low"[..], -5), (b"mid", 0), (b"high", 7), (b"mid2", 0)] {
        q.dispatch("work", payload, &DispatchOptions { priority, ..opts() })
            .unwrap();
    }
    q.dispatch("urgent", b"u", &opts()).unwrap();
    let order: Vec<Vec<u8>> = std::iter::from_fn(|| q.take(&["urgent", "work"], NOW).unwrap())
        .map(|l| {
            q.ack(&l).unwrap();
            l.payload
        })
        .collect();
    let expected: Vec<&[u8]> = vec![b"u", b"high", b"mid", b"mid2", b"low"];
    assert_eq!(order, expected);
    let bad = q.dispatch(
        "work",
        b"x",
        &DispatchOptions {
            priority: 5000,
            ..opts()
        },
    );
    assert!(matches!(bad, Err(JobsError::InvalidArgument(_))));
}

fn delayed(q: &Queue) {
    let started = Instant::now();
    q.dispatch(
        "later",
        b"d",
        &DispatchOptions {
            delay: Duration::from_millis(300),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(q.counts("later").unwrap(), counts(0, 1, 0, 0));
    assert!(take(q, "later").is_none());
    // A blocking take wakes by itself when the delay passes.
    let lease = q
        .take(&["later"], Duration::from_secs(30))
        .unwrap()
        .expect("delayed job");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(lease.payload, b"d");
    q.ack(&lease).unwrap();
}

fn retries_then_dead_letter(q: &Queue) {
    let id = q
        .dispatch(
            "poison",
            b"boom",
            &DispatchOptions {
                max_attempts: 3,
                ..opts()
            },
        )
        .unwrap()
        .id;
    for attempt in 1..=3 {
        let lease = take(q, "poison").expect("delivered again");
        assert_eq!(
            (lease.id.as_str(), lease.attempt, lease.max_attempts),
            (id.as_str(), attempt, 3)
        );
        let outcome = q.fail(&lease, Some(&format!("failure {attempt}"))).unwrap();
        if attempt < 3 {
            assert!(matches!(outcome, FailOutcome::Retry { .. }));
        } else {
            assert_eq!(outcome, FailOutcome::Dead);
        }
    }
    assert!(take(q, "poison").is_none());
    assert_eq!(q.counts("poison").unwrap(), counts(0, 0, 0, 1));
    let dead = q.dead_jobs("poison", 0, 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (
            dead[0].id.as_str(),
            dead[0].payload.as_slice(),
            dead[0].attempts
        ),
        (id.as_str(), &b"boom"[..], 3)
    );
    assert_eq!(dead[0].reason, "failure 3");
    // Retry from the dead-letter list: a fresh set of attempts.
    q.retry_dead("poison", &id).unwrap();
    assert!(matches!(
        q.retry_dead("poison", &id),
        Err(JobsError::NotFound { .. })
    ));
    let lease = take(q, "poison").unwrap();
    assert_eq!(lease.attempt, 1);
    q.fail(&lease, None).unwrap();
    for _ in 0..2 {
        let lease = take(q, "poison").unwrap();
        q.fail(&lease, Some("again")).unwrap();
    }
    assert_eq!(q.counts("poison").unwrap().dead, 1);
    assert_eq!(q.purge_dead("poison", None).unwrap(), 1);
    assert_eq!(q.counts("poison").unwrap(), counts(0, 0, 0, 0));
    assert!(q.dead_jobs("poison", 0, 10).unwrap().is_empty());
    let t = q.totals();
    assert_eq!((t.failed, t.dead), (6, 2));
}

fn backoff_delays_retry(q: &Queue) {
    let backoff = Backoff {
        initial: Duration::from_secs(60),
        factor: 2,
        max: Duration::from_secs(600),
        jitter: 0.0,
    };
    q.dispatch("slow", b"s", &DispatchOptions { backoff, ..opts() })
        .unwrap();
    let lease = take(q, "slow").unwrap();
    let before = std::time::SystemTime::now();
    match q.fail(&lease, Some("later")).unwrap() {
        FailOutcome::Retry { at } => {
            let wait = at.duration_since(before).unwrap_or_default();
            assert!(
                wait > Duration::from_secs(55) && wait <= Duration::from_secs(61),
                "{wait:?}"
            );
        }
        FailOutcome::Dead => panic!("dead after one attempt"),
    }
    assert_eq!(q.counts("slow").unwrap(), counts(0, 1, 0, 0));
    assert!(take(q, "slow").is_none());
}

fn unique_keys(q: &Queue) {
    let with_key = |k: &str| DispatchOptions {
        unique_key: Some(k.into()),
        ..opts()
    };
    let first = q.dispatch("u", b"1", &with_key("report-42")).unwrap();
    let second = q.dispatch("u", b"2", &with_key("report-42")).unwrap();
    assert!(second.deduplicated);
    assert_eq!(second.id, first.id);
    // Another queue has its own keys.
    assert!(
        !q.dispatch("u2", b"x", &with_key("report-42"))
            .unwrap()
            .deduplicated
    );
    // Still held while running and across a retry.
    let lease = take(q, "u").unwrap();
    assert!(
        q.dispatch("u", b"3", &with_key("report-42"))
            .unwrap()
            .deduplicated
    );
    q.fail(&lease, Some("retry")).unwrap();
    assert!(
        q.dispatch("u", b"4", &with_key("report-42"))
            .unwrap()
            .deduplicated
    );
    // Freed by the ack.
    let lease = take(q, "u").unwrap();
    assert_eq!(lease.payload, b"1");
    q.ack(&lease).unwrap();
    let third = q.dispatch("u", b"5", &with_key("report-42")).unwrap();
    assert!(!third.deduplicated);
    assert_ne!(third.id, first.id);
    assert_eq!(q.counts("u").unwrap().ready, 1);
    assert_eq!(q.totals().deduplicated, 3);
}

fn lease_expiry_and_extend(q: &Queue) {
    let vis = |ms| DispatchOptions {
        visibility_timeout: Duration::from_millis(ms),
        ..opts()
    };
    let id = q.dispatch("v", b"x", &vis(300)).unwrap().id;
    let first = take(q, "v").unwrap();
    // Extended: still leased after the original timeout.
    q.extend(&first, Duration::from_secs(60)).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert!(take(q, "v").is_none());
    assert_eq!(q.counts("v").unwrap().running, 1);
    // Shortened to expire: delivered again, and the old lease is lost.
    q.extend(&first, Duration::from_millis(100)).unwrap();
    let again = q
        .take(&["v"], Duration::from_secs(30))
        .unwrap()
        .expect("redelivered");
    assert_eq!((again.id.as_str(), again.attempt), (id.as_str(), 2));
    assert!(matches!(q.ack(&first), Err(JobsError::LeaseLost { .. })));
    assert!(matches!(
        q.fail(&first, None),
        Err(JobsError::LeaseLost { .. })
    ));
    assert!(matches!(
        q.extend(&first, Duration::from_secs(1)),
        Err(JobsError::LeaseLost { .. })
    ));
    q.ack(&again).unwrap();
    assert!(q.totals().expired >= 1);
    // An expiry on the last attempt dead-letters.
    q.dispatch(
        "v",
        b"y",
        &DispatchOptions {
            max_attempts: 1,
            ..vis(100)
        },
    )
    .unwrap();
    let lease = take(q, "v").unwrap();
    eventually("the expired job to be dead", || {
        q.counts("v").unwrap().dead == 1
    });
    assert!(matches!(q.ack(&lease), Err(JobsError::LeaseLost { .. })));
    assert!(q.dead_jobs("v", 0, 1).unwrap()[0]
        .reason
        .contains("lease expired"));
}

fn refuses_bad_input(q: &Queue) {
    let big = vec![7u8; q.max_payload_bytes() + 1];
    assert_eq!(
        q.dispatch("bad", &big, &opts()),
        Err(JobsError::PayloadTooLarge {
            size: big.len(),
            limit: q.max_payload_bytes()
        })
    );
    let exact = vec![7u8; q.max_payload_bytes()];
    q.dispatch("bad", &exact, &opts()).unwrap();
    for name in ["", "has space", "x".repeat(200).as_str(), "nul\0"] {
        assert!(
            matches!(
                q.dispatch(name, b"", &opts()),
                Err(JobsError::InvalidArgument(_))
            ),
            "{name:?}"
        );
    }
    assert!(matches!(
        q.dispatch(
            "bad",
            b"",
            &DispatchOptions {
                max_attempts: 0,
                ..opts()
            }
        ),
        Err(JobsError::InvalidArgument(_))
    ));
    assert!(matches!(
        q.take(&[], NOW),
        Err(JobsError::InvalidArgument(_))
    ));
    assert_eq!(q.totals().refused, 6);
    // Nothing refused was stored; the queue still serves.
    let lease = take(q, "bad").unwrap();
    assert_eq!(lease.payload.len(), q.max_payload_bytes());
    q.ack(&lease).unwrap();
    // Binary and empty payloads round-trip.
    let binary: Vec<u8> = (0..=255).collect();
    q.dispatch("bad", &binary, &opts()).unwrap();
    q.dispatch("bad", b"", &opts()).unwrap();
    assert_eq!(take(q, "bad").unwrap().payload, binary);
    assert_eq!(take(q, "bad").unwrap().payload, b"");
}

fn blocked_take_is_woken(q: Arc<Queue>) {
    // By a dispatch.
    let taker = {
        let q = Arc::clone(&q);
        std::thread::spawn(move || q.take(&["wake"], Duration::from_secs(60)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(100));
    q.dispatch("wake", b"hi", &opts()).unwrap();
    assert_eq!(
        taker
            .join()
            .unwrap()
            .expect("woken by the dispatch")
            .payload,
        b"hi"
    );
    // By a stop signal.
    let stop = StopSignal::new();
    let taker = {
        let (q, stop) = (Arc::clone(&q), stop.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            (
                q.take_or_stop(&["idle"], Duration::from_secs(60), &stop)
                    .unwrap(),
                started.elapsed(),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    stop.stop();
    let (lease, waited) = taker.join().unwrap();
    assert!(lease.is_none());
    assert!(waited < Duration::from_secs(30));
    // Many waiters, many jobs: each job to exactly one taker.
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(l) = q.take(&["many"], Duration::from_secs(2)).unwrap() {
                    q.ack(&l).unwrap();
                    got.push(l.id);
                }
                got
            })
        })
        .collect();
    let mut sent = HashSet::new();
    for i in 0..200 {
        sent.insert(
            q.dispatch("many", format!("{i}").as_bytes(), &opts())
                .unwrap()
                .id,
        );
    }
    let mut got = Vec::new();
    for t in takers {
        got.extend(t.join().unwrap());
    }
    assert_eq!(got.len(), 200);
    assert_eq!(got.into_iter().collect::<HashSet<_>>(), sent);
    // By close.
    let taker = {
        let q = Arc::clone(&q);
        std::thread::spawn(move || q.take(&["closed"], Duration::from_secs(60)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(100));
    q.close();
    assert!(taker.join().unwrap().is_none());
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;
            #[test]
            fn local() {
                let dir = tempfile::tempdir().unwrap();
                super::$name(&local_queue(dir.path()));
            }
            #[test]
            fn redis() {
                let server = RedisServer::start();
                super::$name(&redis_queue(&server, "t"));
            }
        }
    )*};
}

on_both_backends!(
    fifo_and_ack,
    priorities_and_queues,
    delayed,
    retries_then_dead_letter,
    backoff_delays_retry,
    unique_keys,
    lease_expiry_and_extend,
    refuses_bad_input,
);

mod blocked_take {
    use super::*;
    #[test]
    fn local() {
        let dir = tempfile::tempdir().unwrap();
        blocked_take_is_woken(Arc::new(local_queue(dir.path())));
    }
    #[test]
    fn redis() {
        let server = RedisServer::start();
        blocked_take_is_woken(Arc::new(redis_queue(&server, "t")));
    }
}

/// Local: leases do not survive the process; every job taken and not acknowledged is
/// delivered again after a reopen, with its attempt counted.
#[test]
fn local_restart_redelivers_taken_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let (taken, acked, waiting) = {
        let q = local_queue(dir.path());
        for i in 0..5 {
            q.dispatch("r", &[i], &opts()).unwrap();
        }
        q.dispatch(
            "r",
            b"poison",
            &DispatchOptions {
                max_attempts: 1,
                priority: 100,
                ..opts()
            },
        )
        .unwrap();
        let poison = take(&q, "r").unwrap();
        assert_eq!(poison.payload, b"poison");
        let taken = take(&q, "r").unwrap();
        let acked = take(&q, "r").unwrap();
        q.ack(&acked).unwrap();
        (taken, acked, 3)
    };
    let q = local_queue(dir.path());
    assert_eq!(q.counts("r").unwrap(), counts(waiting + 1, 0, 0, 1));
    let dead = q.dead_jobs("r", 0, 10).unwrap();
    assert_eq!(dead[0].payload, b"poison");
    assert!(
        dead[0].reason.contains("worker stopped"),
        "{}",
        dead[0].reason
    );
    let again = take(&q, "r").unwrap();
    assert_eq!((again.id.as_str(), again.attempt), (taken.id.as_str(), 2));
    let mut rest = Vec::new();
    while let Some(l) = take(&q, "r") {
        rest.push(l.id.clone());
        q.ack(&l).unwrap();
    }
    assert_eq!(rest.len(), waiting as usize);
    assert!(!rest.contains(&acked.id));
    // Ids stay unique across restarts.
    let fresh = q.dispatch("r", b"n", &opts()).unwrap().id;
    assert!(fresh != taken.id && fresh != acked.id);
}

/// One process owns a data directory: a second open is refused with a clear error.
#[test]
fn local_store_is_owned_by_one_opener() {
    let dir = tempfile::tempdir().unwrap();
    let first = local_queue(dir.path());
    let second = jobs::Queue::open(jobs::QueueConfig::local(dir.path())).unwrap_err();
    assert!(
        second.to_string().contains("in use by another process"),
        "{second}"
    );
    drop(first);
    jobs::Queue::open(jobs::QueueConfig::local(dir.path())).unwrap();
}
