//! Start-up, 10,000 tiny scripts across 4 PHP threads, clean shutdown; and the same run
//! under valgrind, failing if any definitely/indirectly lost block has a frame in our code.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

const INNER_TEST: &str = "start_run_ten_thousand_scripts_and_shut_down";

#[test]
fn start_run_ten_thousand_scripts_and_shut_down() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/cli/tiny.php");
    let engine = Engine::start(EngineConfig {
        threads: 4,
        ini: vec![("register_argc_argv".into(), "1".into())],
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .expect("engine starts");
    const SCRIPTS: usize = 10_000;
    const IN_FLIGHT: usize = 32;
    let mut pending = std::collections::VecDeque::new();
    for i in 0..SCRIPTS {
        let sink = Arc::new(Mutex::new(BufferSink::default()));
        let mut req = ScriptRequest::new(&script, Box::new(sink.clone()));
        req.argv = vec!["tiny.php".into(), i.to_string()];
        pending.push_back((i, sink, engine.submit(req).expect("engine running")));
        while pending.len() > IN_FLIGHT || (i + 1 == SCRIPTS && !pending.is_empty()) {
            let (n, sink, rx) = pending.pop_front().unwrap();
            let outcome = rx.blocking_recv().expect("script ran");
            assert_eq!(outcome.exit_status, 0);
            assert_eq!(sink.lock().unwrap().body, format!("4:{n}").into_bytes());
        }
    }
    engine.shutdown();
}

#[test]
fn no_leak_in_our_code_under_valgrind() {
    let Ok(out) = Command::new("valgrind").arg("--version").output() else {
        panic!("valgrind is not installed; scripts/setup.sh installs it");
    };
    assert!(out.status.success());
    let exe = std::env::current_exe().unwrap();
    let log = std::env::temp_dir().join(format!("ferrophp-valgrind-{}.log", std::process::id()));
    // With the Zend allocator off, every emalloc is a malloc valgrind can track.
    let status = Command::new("valgrind")
        .env("USE_ZEND_ALLOC", "0")
        .args([
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect",
            "--num-callers=50",
        ])
        .arg(format!("--log-file={}", log.display()))
        .arg(&exe)
        .args(["--exact", INNER_TEST, "--test-threads=1"])
        .status()
        .expect("valgrind runs");
    let report = std::fs::read_to_string(&log).expect("valgrind log");
    let _ = std::fs::remove_file(&log);
    assert!(
        status.success(),
        "inner run failed under valgrind:\n{report}"
    );
    let ours: Vec<&str> = loss_records(&report)
        .into_iter()
        .filter(|record| {
            record.lines().any(|l| {
                ["worker::", "php_sys", "ferrophp_", "lifecycle::"]
                    .iter()
                    .any(|m| l.contains(m))
            })
        })
        .collect();
    assert!(
        ours.is_empty(),
        "leaks attributed to ferrophp:\n{}",
        ours.join("\n\n")
    );
    assert!(report.contains("LEAK SUMMARY") || report.contains("All heap blocks were freed"));
}

/// Splits valgrind's log into its "are definitely/indirectly lost" records.
fn loss_records(report: &str) -> Vec<&str> {
    let mut records = Vec::new();
    let mut start = None;
    for (pos, line) in line_offsets(report) {
        let body = line.split_once("== ").map_or("", |(_, b)| b);
        if body.contains("are definitely lost") || body.contains("are indirectly lost") {
            if let Some(s) = start.take() {
                records.push(&report[s..pos]);
            }
            start = Some(pos);
        } else if start.is_some() && body.trim().is_empty() {
            records.push(&report[start.take().unwrap()..pos]);
        }
    }
    if let Some(s) = start {
        records.push(&report[s..]);
    }
    records
}

fn line_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |pos, line| {
        let at = *pos;
        *pos += line.len();
        Some((at, line))
    })
}
