//! What only the Redis backend has: several instances sharing one queue, the reclaim of a
//! dead instance's jobs, and Redis going away and coming back.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, redis_queue, RedisServer};
use jobs::{DispatchOptions, JobsError};

#[test]
fn two_instances_share_one_queue() {
    let server = RedisServer::start();
    let a = Arc::new(redis_queue(&server, "shared"));
    let b = Arc::new(redis_queue(&server, "shared"));
    let mut sent = HashSet::new();
    for i in 0..300 {
        let q = if i % 2 == 0 { &a } else { &b };
        sent.insert(
            q.dispatch("q", format!("{i}").as_bytes(), &DispatchOptions::default())
                .unwrap()
                .id,
        );
    }
    let workers: Vec<_> = [&a, &b, &a, &b]
        .into_iter()
        .map(|q| {
            let q = Arc::clone(q);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(lease) = q.take(&["q"], Duration::from_millis(500)).unwrap() {
                    q.ack(&lease).unwrap();
                    got.push(lease.id);
                }
                got
            })
        })
        .collect();
    let got: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert_eq!(got.len(), 300, "each job once");
    assert_eq!(got.into_iter().collect::<HashSet<_>>(), sent);
    // A unique key is shared too.
    let key = DispatchOptions {
        unique_key: Some("k".into()),
        ..DispatchOptions::default()
    };
    let first = a.dispatch("q", b"x", &key).unwrap();
    let second = b.dispatch("q", b"y", &key).unwrap();
    assert!(second.deduplicated);
    assert_eq!(first.id, second.id);
    // A blocked take on one instance wakes for a dispatch on the other.
    let lease = a.take(&["q"], Duration::ZERO).unwrap().unwrap();
    a.ack(&lease).unwrap();
    let waiter = {
        let b = Arc::clone(&b);
        std::thread::spawn(move || b.take(&["q"], Duration::from_secs(60)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200));
    a.dispatch("q", b"wake", &DispatchOptions::default())
        .unwrap();
    assert_eq!(waiter.join().unwrap().unwrap().payload, b"wake");
}

#[test]
fn a_dead_instances_jobs_are_reclaimed() {
    let server = RedisServer::start();
    let opts = DispatchOptions {
        visibility_timeout: Duration::from_millis(500),
        ..DispatchOptions::default()
    };
    let id = {
        // This instance takes the job and vanishes without acknowledging it.
        let dying = redis_queue(&server, "reclaim");
        let id = dying.dispatch("q", b"orphan", &opts).unwrap().id;
        let lease = dying.take(&["q"], Duration::ZERO).unwrap().unwrap();
        assert_eq!(lease.id, id);
        id
    };
    let survivor = redis_queue(&server, "reclaim");
    assert_eq!(survivor.counts("q").unwrap().running, 1);
    let lease = survivor
        .take(&["q"], Duration::from_secs(30))
        .unwrap()
        .expect("reclaimed after the lease expired");
    assert_eq!(
        (lease.id.as_str(), lease.attempt, lease.payload.as_slice()),
        (id.as_str(), 2, &b"orphan"[..])
    );
    survivor.ack(&lease).unwrap();
    assert!(survivor.totals().expired >= 1);
}

#[test]
fn redis_loss_gives_clear_errors_and_recovers() {
    let mut server = RedisServer::start();
    let port = server.port;
    let q = redis_queue(&server, "loss");
    q.dispatch("q", b"before", &DispatchOptions::default())
        .unwrap();
    server.kill();
    let err = q
        .dispatch("q", b"during", &DispatchOptions::default())
        .unwrap_err();
    assert!(matches!(err, JobsError::Unavailable(_)), "{err:?}");
    assert!(err.to_string().contains("unavailable"), "{err}");
    assert!(matches!(
        q.take(&["q"], Duration::from_millis(100)),
        Err(JobsError::Unavailable(_))
    ));
    assert!(matches!(q.counts("q"), Err(JobsError::Unavailable(_))));
    // Back (empty: the test's Redis keeps nothing on disk): the same Queue works again
    // once its reconnect backoff allows.
    let _server = RedisServer::start_on(port);
    eventually("the queue to reconnect", || {
        q.dispatch("q", b"after", &DispatchOptions::default())
            .is_ok()
    });
    let lease = q.take(&["q"], Duration::ZERO).unwrap().unwrap();
    assert_eq!(lease.payload, b"after");
    q.ack(&lease).unwrap();
}

#[test]
fn unreachable_redis_is_a_clear_error_at_open() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = jobs::Queue::open(jobs::QueueConfig::redis(format!(
        "redis://127.0.0.1:{port}/"
    )))
    .unwrap_err();
    assert!(matches!(err, JobsError::Unavailable(_)), "{err:?}");
    let err = jobs::Queue::open(jobs::QueueConfig::redis("not a url")).unwrap_err();
    assert!(matches!(err, JobsError::InvalidArgument(_)), "{err:?}");
}
