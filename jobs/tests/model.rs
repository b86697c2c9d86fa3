//! Randomised sequences of dispatch, take, ack, fail, dead-letter retry and purge, stale
//! acknowledgements and restarts, run against a plain model of the queue: after every
//! step each backend must hand out the job the model expects and report the model's
//! counts, and after a final reopen the store must hold exactly the model's jobs (the
//! store never corrupts).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{local_queue, redis_queue, RedisServer};
use jobs::{Backoff, DispatchOptions, FailOutcome, JobsError, Lease, Queue, QueueCounts};
use proptest::prelude::*;

const QUEUES: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    Dispatch {
        queue: usize,
        payload: Vec<u8>,
        priority: i16,
        unique: Option<u8>,
        max_attempts: u32,
        delayed: bool,
    },
    Take {
        queues: Vec<usize>,
    },
    Ack {
        lease: usize,
    },
    Fail {
        lease: usize,
    },
    StaleAck,
    RetryDead {
        queue: usize,
        pick: usize,
    },
    PurgeDead {
        queue: usize,
        pick: Option<usize>,
    },
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, prop::collection::vec(any::<u8>(), 0..48), -2i16..=2, prop::option::weighted(0.3, 0..3u8), 1..=3u32, prop::bool::weighted(0.1))
            .prop_map(|(queue, payload, priority, unique, max_attempts, delayed)| Op::Dispatch { queue, payload, priority, unique, max_attempts, delayed }),
        4 => prop::sample::subsequence(vec![0usize, 1, 2], 1..=3).prop_shuffle().prop_map(|queues| Op::Take { queues }),
        2 => any::<usize>().prop_map(|lease| Op::Ack { lease }),
        2 => any::<usize>().prop_map(|lease| Op::Fail { lease }),
        1 => Just(Op::StaleAck),
        1 => (0..3usize, any::<usize>()).prop_map(|(queue, pick)| Op::RetryDead { queue, pick }),
        1 => (0..3usize, prop::option::of(any::<usize>())).prop_map(|(queue, pick)| Op::PurgeDead { queue, pick }),
        1 => Just(Op::Restart),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Ready,
    Delayed,
    Running,
    Dead,
}

#[derive(Debug, Clone)]
struct MJob {
    seq: u64,
    queue: usize,
    payload: Vec<u8>,
    priority: i16,
    order: u64,
    state: St,
    attempts: u32,
    max_attempts: u32,
    unique: Option<String>,
}

#[derive(Default)]
struct Model {
    jobs: HashMap<String, MJob>,
    unique: HashMap<(usize, String), String>,
    next_order: u64,
    next_seq: u64,
}

impl Model {
    fn order(&mut self) -> u64 {
        self.next_order += 1;
        self.next_order
    }

    fn next_ready(&self, queues: &[usize]) -> Option<String> {
        queues.iter().find_map(|q| {
            self.jobs
                .iter()
                .filter(|(_, j)| j.queue == *q && j.state == St::Ready)
                .min_by_key(|(_, j)| (-j.priority, j.order))
                .map(|(id, _)| id.clone())
        })
    }

    fn counts(&self, queue: usize) -> QueueCounts {
        let n = |s| {
            self.jobs
                .values()
                .filter(|j| j.queue == queue && j.state == s)
                .count() as u64
        };
        QueueCounts {
            ready: n(St::Ready),
            delayed: n(St::Delayed),
            running: n(St::Running),
            dead: n(St::Dead),
        }
    }

    fn release_unique(&mut self, id: &str) {
        let j = &self.jobs[id];
        if let Some(k) = &j.unique {
            let key = (j.queue, k.clone());
            if self.unique.get(&key).map(String::as_str) == Some(id) {
                self.unique.remove(&key);
            }
        }
    }

    fn dead_ids(&self, queue: usize) -> Vec<String> {
        let mut ids: Vec<(u64, String)> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.queue == queue && j.state == St::Dead)
            .map(|(id, j)| (j.seq, id.clone()))
            .collect();
        ids.sort();
        ids.into_iter().map(|e| e.1).collect()
    }

    /// What a restart of the local store does: leases end; a job on its last attempt is
    /// dead; ready jobs line up in dispatch order.
    fn restart(&mut self) {
        let ids: Vec<String> = self.jobs.keys().cloned().collect();
        for id in &ids {
            if self.jobs[id].state == St::Running {
                if self.jobs[id].attempts >= self.jobs[id].max_attempts {
                    self.release_unique(id);
                    self.jobs.get_mut(id).unwrap().state = St::Dead;
                } else {
                    self.jobs.get_mut(id).unwrap().state = St::Ready;
                }
            }
        }
        for j in self.jobs.values_mut() {
            j.order = j.seq;
        }
        self.next_order = self.next_seq;
    }
}

fn run(
    ops: &[Op],
    mut open: impl FnMut() -> Queue,
    can_restart: bool,
) -> Result<(), TestCaseError> {
    let mut q = open();
    let mut model = Model::default();
    let mut leases: Vec<Lease> = Vec::new();
    let mut stale: Vec<Lease> = Vec::new();
    let opts = |priority, unique: &Option<u8>, max_attempts, delayed: bool| DispatchOptions {
        priority,
        unique_key: unique.map(|u| format!("key{u}")),
        max_attempts,
        backoff: Backoff::NONE,
        delay: if delayed {
            Duration::from_secs(3600)
        } else {
            Duration::ZERO
        },
        ..DispatchOptions::default()
    };
    for op in ops {
        match op {
            Op::Dispatch {
                queue,
                payload,
                priority,
                unique,
                max_attempts,
                delayed,
            } => {
                let out = q
                    .dispatch(
                        QUEUES[*queue],
                        payload,
                        &opts(*priority, unique, *max_attempts, *delayed),
                    )
                    .unwrap();
                let key = unique.map(|u| format!("key{u}"));
                let holder = key
                    .as_ref()
                    .and_then(|k| model.unique.get(&(*queue, k.clone())).cloned());
                if let Some(holder) = holder {
                    prop_assert!(out.deduplicated);
                    prop_assert_eq!(out.id, holder);
                } else {
                    prop_assert!(!out.deduplicated);
                    prop_assert!(!model.jobs.contains_key(&out.id));
                    if let Some(k) = &key {
                        model.unique.insert((*queue, k.clone()), out.id.clone());
                    }
                    let order = model.order();
                    model.next_seq += 1;
                    let seq = model.next_seq;
                    let state = if *delayed { St::Delayed } else { St::Ready };
                    model.jobs.insert(
                        out.id,
                        MJob {
                            seq,
                            queue: *queue,
                            payload: payload.clone(),
                            priority: *priority,
                            order,
                            state,
                            attempts: 0,
                            max_attempts: *max_attempts,
                            unique: key,
                        },
                    );
                }
            }
            Op::Take { queues } => {
                let names: Vec<&str> = queues.iter().map(|i| QUEUES[*i]).collect();
                let got = q.take(&names, Duration::ZERO).unwrap();
                let expected = model.next_ready(queues);
                prop_assert_eq!(got.as_ref().map(|l| l.id.clone()), expected.clone());
                if let (Some(lease), Some(id)) = (got, expected) {
                    let j = model.jobs.get_mut(&id).unwrap();
                    j.attempts += 1;
                    j.state = St::Running;
                    prop_assert_eq!(&lease.payload, &j.payload);
                    prop_assert_eq!(lease.attempt, j.attempts);
                    prop_assert_eq!(lease.queue.as_str(), QUEUES[j.queue]);
                    leases.push(lease);
                }
            }
            Op::Ack { lease } if !leases.is_empty() => {
                let lease = leases.swap_remove(lease % leases.len());
                q.ack(&lease).unwrap();
                model.release_unique(&lease.id);
                model.jobs.remove(&lease.id);
                stale.push(lease);
            }
            Op::Fail { lease } if !leases.is_empty() => {
                let lease = leases.swap_remove(lease % leases.len());
                let outcome = q.fail(&lease, Some("model")).unwrap();
                let (attempts, max) = (
                    model.jobs[&lease.id].attempts,
                    model.jobs[&lease.id].max_attempts,
                );
                if attempts >= max {
                    prop_assert_eq!(outcome, FailOutcome::Dead);
                    model.release_unique(&lease.id);
                    model.jobs.get_mut(&lease.id).unwrap().state = St::Dead;
                } else {
                    prop_assert!(
                        matches!(outcome, FailOutcome::Retry { .. }),
                        "retry expected"
                    );
                    let order = model.order();
                    let j = model.jobs.get_mut(&lease.id).unwrap();
                    j.state = St::Ready;
                    j.order = order;
                }
                stale.push(lease);
            }
            Op::StaleAck => {
                if let Some(lease) = stale.last() {
                    prop_assert!(
                        matches!(q.ack(lease), Err(JobsError::LeaseLost { .. })),
                        "stale ack"
                    );
                }
            }
            Op::RetryDead { queue, pick } => {
                let dead = model.dead_ids(*queue);
                if dead.is_empty() {
                    prop_assert!(
                        matches!(
                            q.retry_dead(QUEUES[*queue], "0000000000000000"),
                            Err(JobsError::NotFound { .. })
                        ),
                        "not found"
                    );
                } else {
                    let id = dead[pick % dead.len()].clone();
                    q.retry_dead(QUEUES[*queue], &id).unwrap();
                    let order = model.order();
                    let j = model.jobs.get_mut(&id).unwrap();
                    j.state = St::Ready;
                    j.attempts = 0;
                    j.order = order;
                    if let Some(k) = j.unique.clone() {
                        if model.unique.contains_key(&(*queue, k.clone())) {
                            model.jobs.get_mut(&id).unwrap().unique = None;
                        } else {
                            model.unique.insert((*queue, k), id.clone());
                        }
                    }
                }
            }
            Op::PurgeDead { queue, pick } => {
                let dead = model.dead_ids(*queue);
                match pick {
                    Some(p) if !dead.is_empty() => {
                        let id = &dead[p % dead.len()];
                        prop_assert_eq!(q.purge_dead(QUEUES[*queue], Some(id)).unwrap(), 1);
                        model.jobs.remove(id);
                    }
                    Some(_) => {}
                    None => {
                        prop_assert_eq!(
                            q.purge_dead(QUEUES[*queue], None).unwrap(),
                            dead.len() as u64
                        );
                        for id in dead {
                            model.jobs.remove(&id);
                        }
                    }
                }
            }
            Op::Restart if can_restart => {
                drop(q);
                q = open();
                model.restart();
                stale.append(&mut leases);
            }
            _ => {}
        }
        for (i, name) in QUEUES.iter().enumerate() {
            prop_assert_eq!(
                q.counts(name).unwrap(),
                model.counts(i),
                "queue {} after {:?}",
                name,
                op
            );
            let dead: Vec<String> = q
                .dead_jobs(name, 0, 1000)
                .unwrap()
                .into_iter()
                .map(|d| d.id)
                .collect();
            let mut expected = model.dead_ids(i);
            let mut got = dead.clone();
            expected.sort();
            got.sort();
            prop_assert_eq!(got, expected);
        }
    }
    // The whole store, after a reopen (local) or from a second instance (Redis): exactly
    // the model's jobs, with their payloads.
    drop(q);
    let q = open();
    if can_restart {
        model.restart();
    } else {
        // The first instance's leases are still running on Redis: settle them.
        for lease in &leases {
            q.ack(lease).unwrap();
            model.release_unique(&lease.id);
            model.jobs.remove(&lease.id);
        }
    }
    let all: Vec<usize> = (0..3).collect();
    while let Some(expected) = model.next_ready(&all) {
        let lease = q.take(&QUEUES, Duration::ZERO).unwrap();
        prop_assert_eq!(lease.as_ref().map(|l| l.id.clone()), Some(expected.clone()));
        let lease = lease.unwrap();
        prop_assert_eq!(&lease.payload, &model.jobs[&expected].payload);
        q.ack(&lease).unwrap();
        model.jobs.remove(&expected);
    }
    prop_assert!(q.take(&QUEUES, Duration::ZERO).unwrap().is_none());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn local_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        let dir = tempfile::tempdir().unwrap();
        run(&ops, || local_queue(dir.path()), true)?;
    }
}

#[test]
fn redis_matches_model() {
    let server = RedisServer::start();
    let case = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    });
    runner
        .run(&prop::collection::vec(op(), 1..80), |ops| {
            let prefix = format!("model{}", case.fetch_add(1, Ordering::Relaxed));
            run(&ops, || redis_queue(&server, &prefix), false)
        })
        .unwrap();
}
