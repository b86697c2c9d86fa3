//! A worker script that fails before reaching its request loop is retried with growing
//! backoff; after the configured number of consecutive failures the engine refuses to
//! start, with a message that says why.

use std::time::{Duration, Instant};

use worker::{Engine, EngineConfig, LogTarget, WorkerConfig};

#[test]
fn broken_worker_is_retried_with_backoff_then_refused() {
    let script = format!(
        "{}/../test-data/worker/broken.php",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut config = WorkerConfig::new(&script, 1);
    config.max_startup_failures = 4;
    let started = Instant::now();
    let result = Engine::start(EngineConfig {
        workers: vec![config],
        ini: vec![
            ("log_errors".into(), "1".into()),
            ("display_errors".into(), "0".into()),
        ],
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    });
    let elapsed = started.elapsed();
    let err = match result {
        Ok(_) => panic!("a broken worker must not start"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("broken.php"), "{err}");
    assert!(
        err.contains("before reaching ferrophp_handle_request"),
        "{err}"
    );
    assert!(err.contains("4 times in a row"), "{err}");
    // Backoff after failures 1..3: 100 + 200 + 400 ms.
    assert!(
        elapsed >= Duration::from_millis(700),
        "no backoff: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}
