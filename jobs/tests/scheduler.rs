//! The scheduler: no overlapping runs unless allowed, the missed-run policy across a
//! restart, and, with two schedulers on one Redis, each fire time run exactly once.

mod common;

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::{eventually, local_queue, redis_queue, RedisServer};
use jobs::{ClaimArgs, MissedRuns, Run, RunOutcome, ScheduleEntry, Scheduler, Task, Trigger};

fn every_second(name: &str) -> ScheduleEntry {
    ScheduleEntry::new(
        name,
        Trigger::every("1s").unwrap(),
        Task::Script(format!("{name}.php")),
    )
}

fn totals(s: &Scheduler, name: &str) -> jobs::EntryTotals {
    s.totals().into_iter().find(|(n, _)| n == name).unwrap().1
}

fn ms(t: SystemTime) -> u64 {
    u64::try_from(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[test]
fn runs_do_not_overlap_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let q = local_queue(dir.path());
    let (tx, rx) = mpsc::channel::<Run>();
    let mut overlapping = every_second("overlapping");
    overlapping.allow_overlap = true;
    let s = Scheduler::start(
        vec![every_second("exclusive"), overlapping],
        q.schedule_store(),
        move |run| {
            tx.send(run).unwrap();
        },
    )
    .unwrap();
    // Hold every run: the exclusive entry must skip its fires, the other must not.
    let held = Arc::new(Mutex::new(Vec::new()));
    let collector = {
        let held = Arc::clone(&held);
        std::thread::spawn(move || {
            while let Ok(run) = rx.recv() {
                held.lock().unwrap().push(run);
            }
        })
    };
    eventually("two skipped fires", || {
        totals(&s, "exclusive").skipped_overlap >= 2
    });
    assert_eq!(totals(&s, "exclusive").started, 1);
    eventually("overlapping runs", || {
        totals(&s, "overlapping").started >= 2
    });
    let exclusive_runs = held
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.entry == "exclusive")
        .count();
    assert_eq!(exclusive_runs, 1);
    // Finishing the run lets the next fire start it again.
    let run = {
        let mut held = held.lock().unwrap();
        let i = held.iter().position(|r| r.entry == "exclusive").unwrap();
        held.remove(i)
    };
    assert_eq!(run.task, Task::Script("exclusive.php".into()));
    run.finish(RunOutcome::Succeeded);
    eventually("the next run", || totals(&s, "exclusive").started >= 2);
    assert_eq!(totals(&s, "exclusive").succeeded, 1);
    // A run dropped unfinished counts as failed and frees the entry too.
    let dropped = {
        let mut held = held.lock().unwrap();
        let i = held.iter().position(|r| r.entry == "exclusive").unwrap();
        held.remove(i)
    };
    drop(dropped);
    eventually("a failure recorded", || totals(&s, "exclusive").failed == 1);
    s.stop();
    drop(held);
    collector.join().unwrap();
}

fn claim_args() -> ClaimArgs {
    ClaimArgs {
        fire_lease: Duration::from_secs(600),
        allow_overlap: true,
        run_id: 1,
        max_run: Duration::from_secs(60),
    }
}

#[test]
fn missed_runs_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let hourly = Trigger::every("1h").unwrap();
    let now = ms(SystemTime::now());
    let latest = hourly.last_at_or_before(now).unwrap();
    // A previous process ran both entries three hours before the latest fire time.
    {
        let q = local_queue(dir.path());
        let store = q.schedule_store();
        for name in ["catch-up", "skip"] {
            store
                .claim(name, latest - 3 * 3_600_000, &claim_args())
                .unwrap();
        }
    }
    let q = local_queue(dir.path());
    assert_eq!(
        q.schedule_store().last_fire("skip").unwrap(),
        Some(latest - 3 * 3_600_000)
    );
    let mut catch_up = ScheduleEntry::new(
        "catch-up",
        hourly.clone(),
        Task::Command("bin/console app:report".into()),
    );
    catch_up.missed = MissedRuns::RunOnce;
    let skip = ScheduleEntry::new(
        "skip",
        hourly.clone(),
        Task::Callable("App\\Report::run".into()),
    );
    let (tx, rx) = mpsc::channel::<Run>();
    let s = Scheduler::start(vec![catch_up, skip], q.schedule_store(), move |run| {
        tx.send(run).unwrap()
    })
    .unwrap();
    let run = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the missed run, once, at start");
    assert_eq!(run.entry, "catch-up");
    assert!(run.catch_up);
    assert_eq!(ms(run.fire_time), latest);
    run.finish(RunOutcome::Succeeded);
    assert_eq!(totals(&s, "skip").skipped_missed, 1);
    assert_eq!(totals(&s, "skip").started, 0);
    assert_eq!(totals(&s, "catch-up").started, 1);
    let next_skip = s
        .next_fires()
        .into_iter()
        .find(|(n, _)| n == "skip")
        .unwrap()
        .1
        .unwrap();
    assert_eq!(ms(next_skip), latest + 3_600_000);
    s.stop();
    drop(q);
    // The catch-up run is recorded: a second restart has nothing to catch up.
    let q = local_queue(dir.path());
    assert_eq!(
        q.schedule_store().last_fire("catch-up").unwrap(),
        Some(latest)
    );
}

#[test]
fn two_schedulers_on_one_redis_run_each_fire_once() {
    let server = RedisServer::start();
    let fired: Arc<Mutex<Vec<(u64, usize)>>> = Arc::default();
    let queues: Vec<_> = (0..2).map(|_| redis_queue(&server, "sched")).collect();
    let schedulers: Vec<Scheduler> = queues
        .iter()
        .enumerate()
        .map(|(instance, q)| {
            let fired = Arc::clone(&fired);
            Scheduler::start(vec![every_second("tick")], q.schedule_store(), move |run| {
                fired.lock().unwrap().push((ms(run.fire_time), instance));
                run.finish(RunOutcome::Succeeded);
            })
            .unwrap()
        })
        .collect();
    eventually("six fire times", || fired.lock().unwrap().len() >= 6);
    for s in schedulers.iter() {
        let _ = s.totals();
    }
    let claimed_elsewhere: u64 = schedulers
        .iter()
        .map(|s| totals(s, "tick").claimed_elsewhere)
        .sum();
    for s in schedulers {
        s.stop();
    }
    let fired = fired.lock().unwrap();
    let mut per_fire: HashMap<u64, usize> = HashMap::new();
    for (fire, _) in fired.iter() {
        *per_fire.entry(*fire).or_default() += 1;
    }
    assert!(
        per_fire.values().all(|n| *n == 1),
        "a fire time ran twice: {fired:?}"
    );
    assert!(
        claimed_elsewhere >= 3,
        "both instances tried each fire: {claimed_elsewhere}"
    );
}

#[test]
fn on_redis_a_run_blocks_the_next_on_every_instance() {
    let server = RedisServer::start();
    let queues: Vec<_> = (0..2).map(|_| redis_queue(&server, "overlap")).collect();
    let held: Arc<Mutex<Vec<Run>>> = Arc::default();
    let schedulers: Vec<Scheduler> = queues
        .iter()
        .map(|q| {
            let held = Arc::clone(&held);
            Scheduler::start(vec![every_second("long")], q.schedule_store(), move |run| {
                held.lock().unwrap().push(run)
            })
            .unwrap()
        })
        .collect();
    let sum = |f: fn(&jobs::EntryTotals) -> u64| {
        schedulers
            .iter()
            .map(|s| f(&totals(s, "long")))
            .sum::<u64>()
    };
    eventually("fires skipped for overlap", || {
        sum(|t| t.skipped_overlap) >= 3
    });
    assert_eq!(sum(|t| t.started), 1, "one run at a time across instances");
    held.lock()
        .unwrap()
        .pop()
        .unwrap()
        .finish(RunOutcome::Succeeded);
    eventually("the next run", || sum(|t| t.started) >= 2);
    let started = sum(|t| t.started);
    for s in schedulers {
        s.stop();
    }
    assert_eq!(held.lock().unwrap().len() as u64, started - 1);
}

#[test]
fn two_instances_catch_up_a_missed_run_once() {
    let server = RedisServer::start();
    let hourly = Trigger::every("1h").unwrap();
    let latest = hourly.last_at_or_before(ms(SystemTime::now())).unwrap();
    let queues: Vec<_> = (0..2).map(|_| redis_queue(&server, "catchup")).collect();
    queues[0]
        .schedule_store()
        .claim("nightly", latest - 3_600_000, &claim_args())
        .unwrap();
    let (tx, rx) = mpsc::channel::<(u64, bool)>();
    let schedulers: Vec<Scheduler> = queues
        .iter()
        .map(|q| {
            let tx = Mutex::new(tx.clone());
            let mut entry =
                ScheduleEntry::new("nightly", hourly.clone(), Task::Script("n.php".into()));
            entry.missed = MissedRuns::RunOnce;
            Scheduler::start(vec![entry], q.schedule_store(), move |run| {
                tx.lock()
                    .unwrap()
                    .send((ms(run.fire_time), run.catch_up))
                    .unwrap();
                run.finish(RunOutcome::Succeeded);
            })
            .unwrap()
        })
        .collect();
    drop(tx);
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(30)).unwrap(),
        (latest, true)
    );
    // The other instance either finds the run claimed (claimed_elsewhere) or, when it looks
    // after the run finished, finds nothing missed and counts nothing: give it time to look,
    // then a second run would have arrived.
    std::thread::sleep(Duration::from_secs(2));
    for s in schedulers {
        s.stop();
    }
    assert!(rx.try_recv().is_err(), "the missed run ran twice");
}

#[test]
fn bad_entries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let q = local_queue(dir.path());
    let dup = vec![every_second("same"), every_second("same")];
    assert!(Scheduler::start(dup, q.schedule_store(), |_| {}).is_err());
    assert!(Scheduler::start(vec![every_second("bad name")], q.schedule_store(), |_| {}).is_err());
}

#[test]
fn a_panicking_runner_does_not_stop_the_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let q = local_queue(dir.path());
    let calls = Arc::new(Mutex::new(0));
    let s = {
        let calls = Arc::clone(&calls);
        Scheduler::start(
            vec![every_second("flaky")],
            q.schedule_store(),
            move |run| {
                let first = {
                    let mut calls = calls.lock().unwrap();
                    *calls += 1;
                    *calls == 1
                };
                assert!(!first, "the runner fails on its first call");
                run.finish(RunOutcome::Succeeded);
            },
        )
        .unwrap()
    };
    eventually("a run after the panic", || {
        totals(&s, "flaky").succeeded >= 1
    });
    // The run the panic dropped counts as failed and did not block the next.
    assert_eq!(totals(&s, "flaky").failed, 1);
    s.stop();
}
