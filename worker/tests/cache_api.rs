//! UserCache\Cache through the engine: the API checks of test-data/cache/api.php, values
//! shared across PHP threads, values held by one request while others overwrite and
//! delete them, single-flight `remember`, and the memory limit with eviction.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use worker::{BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

const LIMIT: usize = 4 << 20;

/// Filling the cache past its limit evicts other tests' keys: those tests take turns.
static EXCLUSIVE: Mutex<()> = Mutex::new(());

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Engine::start(EngineConfig {
            threads: 4,
            ini: vec![
                ("display_errors".into(), "1".into()),
                ("log_errors".into(), "0".into()),
                ("register_argc_argv".into(), "1".into()),
                ("usercache.memory_limit".into(), "4M".into()),
            ],
            log_target: LogTarget::Stderr,
            ..EngineConfig::default()
        })
        .expect("engine starts")
    })
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/cache")
        .join(name)
}

/// Queues a script; the closure waits for its output.
fn submit(name: &str, args: &[&str]) -> impl FnOnce() -> String {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(script(name), Box::new(sink.clone()));
    req.argv = std::iter::once(name.to_string())
        .chain(args.iter().map(|s| s.to_string()))
        .collect();
    let rx = engine().submit(req).expect("engine running");
    let name = name.to_string();
    move || {
        let outcome = rx.blocking_recv().expect("script ran");
        let body = String::from_utf8_lossy(&sink.lock().unwrap().body).into_owned();
        assert_eq!(outcome.exit_status, 0, "{name} failed: {body}");
        body
    }
}

fn run(name: &str, args: &[&str]) -> String {
    submit(name, args)()
}

#[test]
fn api_checks_pass() {
    let _turn = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    let out = run("api.php", &[]);
    assert!(out.starts_with("DONE "), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn values_are_shared_across_threads() {
    let _turn = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    for i in 0..20 {
        let key = format!("cross:{i}");
        assert_eq!(run("cross_write.php", &[&key, &i.to_string()]), "stored");
        // Four readers at once land on different PHP threads.
        let readers: Vec<_> = (0..4).map(|_| submit("cross_read.php", &[&key])).collect();
        for r in readers {
            assert_eq!(r(), format!("{i}:1275"));
        }
    }
}

#[test]
fn a_held_value_survives_overwrite_delete_and_clear_by_other_threads() {
    let _turn = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("ferrophp-cache-hold-{}", std::process::id()));
    let flag = dir.with_extension("flag");
    let _ = std::fs::remove_file(&flag);
    let flag_s = flag.to_string_lossy().into_owned();
    // Seed the key, then hold it in two requests while a third overwrites it 2,000 times.
    let seeded = run("fill_held.php", &["held"]);
    assert_eq!(seeded, "seeded");
    let holders: Vec<_> = (0..2)
        .map(|_| submit("hold.php", &["held", &flag_s]))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let writer = submit("overwrite.php", &["held", &flag_s]);
    let w = writer();
    // Retired memory is held while the holders still run.
    assert_eq!(w, "retired:held");
    for h in holders {
        assert_eq!(h(), "intact");
    }
    let _ = std::fs::remove_file(&flag);
    // Once the holders' requests are over, the next writer frees what they held.
    run("cross_write.php", &["after-hold", "1"]);
    let info = run("info.php", &[]);
    let retired = json_number(&info, "retired_bytes");
    assert!(retired < 64 * 1024, "retired memory not reclaimed: {info}");
}

#[test]
fn remember_runs_one_producer_per_key() {
    let _turn = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    let waiters: Vec<_> = (0..4)
        .map(|_| submit("remember_slow.php", &["sf"]))
        .collect();
    for w in waiters {
        assert_eq!(w(), r#"{"produced":true} 1"#);
    }
}

#[test]
fn memory_limit_holds_and_evicts_least_recently_used() {
    let _turn = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    let out = run("fill.php", &["1000"]);
    let used = json_number(&out, "memory_used");
    let evictions = json_number(&out, "evictions");
    assert!(used <= LIMIT as u64, "{out}");
    assert!(evictions > 0, "{out}");
    assert!(out.contains(r#""fail":0"#), "{out}");
    assert!(out.contains(r#""last":"x999""#), "{out}");
}

fn json_number(json: &str, key: &str) -> u64 {
    let pat = format!("\"{key}\":");
    json.split(&pat)
        .nth(1)
        .and_then(|s| s.split([',', '}']).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {json}"))
}
