//! Crash durability of the local store: a child process (this test binary re-run as the
//! ignored test `crash_child`) dispatches from four threads, takes and acknowledges some jobs, and is SIGKILLed at a
//! random moment, 25 times over the same data directory, with no fsync. After each kill
//! the store reopens: every job whose dispatch returned and that was not acknowledged is
//! there (ready or, if it ran out of attempts, dead), jobs taken and not acknowledged are
//! delivered again, and no acknowledged job comes back.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::{BackendConfig, DispatchOptions, Durability, Queue, QueueConfig};

const CHILD_DIR: &str = "JOBS_CRASH_CHILD_DIR";

/// The process the test kills: opens the store named by `JOBS_CRASH_CHILD_DIR` with no
/// fsync at all (`Durability::Buffered`, so what survives is what reached the OS), then
/// dispatches from four threads while one of them also takes jobs and acknowledges every
/// other one, printing `D <id>` after each dispatch returned, `T <id>` after each take and
/// `A <id>` after each ack returned, until it is killed.
#[test]
#[ignore = "the child process of sigkill_loses_no_returned_dispatch, run by it"]
fn crash_child() {
    let dir = std::env::var(CHILD_DIR).expect("run by sigkill_loses_no_returned_dispatch");
    let queue = Arc::new(open(std::path::Path::new(&dir)));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let say = move |line: String| {
        let mut out = out.lock().unwrap();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    };
    say("READY".into());
    let opts = DispatchOptions {
        max_attempts: 1000,
        ..DispatchOptions::default()
    };
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let (queue, say, opts) = (Arc::clone(&queue), say.clone(), opts.clone());
            std::thread::spawn(move || {
                for i in 0usize.. {
                    let payload = vec![t; 64 + i % 512];
                    let id = queue.dispatch("crash", &payload, &opts).unwrap().id;
                    say(format!("D {id}"));
                    if t == 0 {
                        if let Some(lease) = queue.take(&["crash"], Duration::ZERO).unwrap() {
                            say(format!("T {}", lease.id));
                            if i % 2 == 0 {
                                queue.ack(&lease).unwrap();
                                say(format!("A {}", lease.id));
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn open(dir: &std::path::Path) -> Queue {
    Queue::open(QueueConfig {
        backend: BackendConfig::Local {
            data_dir: dir.to_path_buf(),
            durability: Durability::Buffered,
        },
        max_payload_bytes: 1 << 20,
    })
    .unwrap()
}

#[test]
fn sigkill_loses_no_returned_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let bin = std::env::current_exe().unwrap();
    let mut dispatched = HashSet::new();
    let mut acked = HashSet::new();
    let mut taken = HashSet::new();
    // A job acknowledged just before the kill whose `A` line never got out: the ack may
    // have happened, so its absence is no loss. One per round at most (one thread acks).
    let mut maybe_acked = HashSet::new();
    let mut round_of = std::collections::HashMap::new();
    let kills = 25;
    for round in 0..kills {
        let mut child = Command::new(&bin)
            .args([
                "--ignored",
                "--exact",
                "crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        // Kill somewhere in the first ~300 ms of dispatching (a few hundred to thousands of
        // jobs per round), after the store opened in most rounds, before it in some.
        let wait = fastrand::u64(if round % 5 == 0 { 0..20 } else { 20..300 });
        std::thread::sleep(Duration::from_millis(wait));
        // Child::kill sends SIGKILL.
        child.kill().unwrap();
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        let last_taken = lines.iter().rev().find_map(|l| l.strip_prefix("T "));
        if let Some(id) = last_taken {
            if !lines.iter().any(|l| l.strip_prefix("A ") == Some(id)) {
                maybe_acked.insert(id.to_owned());
            }
        }
        for line in &lines {
            if let Some(id) = line.strip_prefix("D ") {
                round_of.insert(id.to_owned(), round);
            }
            match line.split_once(' ') {
                Some(("D", id)) => {
                    dispatched.insert(id.to_owned());
                }
                Some(("T", id)) => {
                    taken.insert(id.to_owned());
                }
                Some(("A", id)) => {
                    acked.insert(id.to_owned());
                }
                _ => {} // READY and the test harness's own lines
            }
        }
        // Reopen after every kill: the store must open and hold every returned dispatch.
        let q = open(dir.path());
        let counts = q.counts("crash").unwrap();
        let live = dispatched.difference(&acked).count() as u64;
        assert!(
            counts.ready + counts.dead >= live,
            "round {round}: {counts:?} holds fewer than the {live} dispatched and unacknowledged jobs"
        );
        assert_eq!(counts.running, 0, "leases do not survive a restart");
    }
    assert!(
        dispatched.len() > 1000,
        "only {} dispatches in {kills} rounds",
        dispatched.len()
    );
    assert!(!acked.is_empty() && !taken.is_empty());
    // Drain: exactly the dispatched-and-unacknowledged jobs, each once.
    let q = open(dir.path());
    let mut present = HashSet::new();
    while let Some(lease) = q.take(&["crash"], Duration::ZERO).unwrap() {
        assert!(
            present.insert(lease.id.clone()),
            "{} delivered twice in one drain",
            lease.id
        );
        q.ack(&lease).unwrap();
    }
    for dead in q.dead_jobs("crash", 0, usize::MAX).unwrap() {
        present.insert(dead.id);
    }
    let expected: HashSet<String> = dispatched.difference(&acked).cloned().collect();
    let lost: Vec<_> = expected
        .difference(&present)
        .filter(|id| !maybe_acked.contains(*id))
        .map(|id| (id, round_of.get(id), taken.contains(id)))
        .collect();
    assert!(
        lost.is_empty(),
        "{} returned dispatches lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    let acked_unreported = expected.difference(&present).count();
    let resurrected: Vec<_> = present.intersection(&acked).collect();
    assert!(
        resurrected.is_empty(),
        "acknowledged jobs came back: {resurrected:?}"
    );
    let not_back: Vec<_> = taken
        .difference(&acked)
        .filter(|id| !maybe_acked.contains(*id) && !present.contains(*id))
        .collect();
    assert!(
        not_back.is_empty(),
        "taken, unacknowledged jobs must come back: {not_back:?}"
    );
    // Jobs present that the parent never saw returned: dispatches cut between the store
    // write and the print. Allowed (at-least-once), but they must be few.
    let unseen = present.difference(&expected).count();
    assert!(
        unseen <= 4 * kills,
        "{unseen} jobs the child never reported"
    );
    eprintln!(
        "{kills} kills: {} dispatched, {} taken, {} acked (+{acked_unreported} unreported), {} present at the end, {unseen} dispatches unreported",
        dispatched.len(),
        taken.len(),
        acked.len(),
        present.len()
    );
}
