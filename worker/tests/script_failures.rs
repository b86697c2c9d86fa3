//! A fatal error, exit(), an uncaught exception or memory_limit exhaustion ends that
//! script only: the thread that ran it serves the next script normally.

mod common;

use common::{run, submit, THREADS};

fn assert_hello(context: &str) {
    let (outcome, body) = run("hello.php", &[]);
    assert_eq!(outcome.exit_status, 0, "after {context}");
    assert_eq!(body, b"hello from ferrophp\n", "after {context}");
}

#[test]
fn fatal_error_ends_only_the_script() {
    for _ in 0..THREADS * 3 {
        let (outcome, body) = run("fatal.php", &[]);
        assert_eq!(outcome.exit_status, 255);
        assert_eq!(body, b"before\n");
        assert_hello("fatal error");
    }
}

#[test]
fn exit_sets_the_status_and_stops_output() {
    for _ in 0..THREADS * 3 {
        let (outcome, body) = run("exit.php", &[]);
        assert_eq!(outcome.exit_status, 7);
        assert_eq!(body, b"before\n");
        assert_hello("exit(7)");
    }
}

#[test]
fn uncaught_exception_ends_only_the_script() {
    for _ in 0..THREADS * 3 {
        let (outcome, body) = run("exception.php", &[]);
        assert_eq!(outcome.exit_status, 255);
        assert_eq!(body, b"before\n");
        assert_hello("uncaught exception");
    }
}

#[test]
fn memory_limit_exhaustion_ends_only_the_script() {
    for _ in 0..THREADS * 3 {
        let (outcome, body) = run("memory.php", &[]);
        assert_eq!(outcome.exit_status, 255);
        assert_eq!(body, b"before\n");
        assert_hello("memory_limit");
    }
}

#[test]
fn every_thread_survives_failures_at_once() {
    // Keep all threads busy with failing scripts at the same time, then with good ones.
    let failing: Vec<_> = (0..THREADS * 4)
        .map(|i| {
            submit(
                ["fatal.php", "exit.php", "exception.php", "memory.php"][i % 4],
                &[],
            )
        })
        .collect();
    for wait in failing {
        let (outcome, _) = wait();
        assert_ne!(outcome.exit_status, 0);
    }
    let good: Vec<_> = (0..THREADS * 4).map(|_| submit("hello.php", &[])).collect();
    for wait in good {
        assert_eq!(wait().1, b"hello from ferrophp\n");
    }
}

#[test]
fn missing_script_is_reported_not_run() {
    let (outcome, body) = run("does-not-exist.php", &[]);
    assert!(outcome.not_found);
    assert_eq!(outcome.exit_status, 1);
    assert!(body.is_empty());
}

#[test]
fn opcache_is_on_and_sapi_name_is_consistent() {
    let (outcome, body) = run("opcache.php", &[]);
    assert_eq!(outcome.exit_status, 0);
    let text = String::from_utf8(body).unwrap();
    assert!(text.contains(r#""sapi":"ferrophp""#), "{text}");
    assert!(text.contains(r#""sapi_const":"ferrophp""#), "{text}");
    assert!(text.contains(r#""opcache_enabled":true"#), "{text}");
    assert!(text.contains(r#""zts":1"#), "{text}");
}
