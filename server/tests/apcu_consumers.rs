//! Real APCu consumers on our apcu_* layer (APCu itself not loaded), over real HTTP, in
//! classic and worker mode: Symfony 5.4's `ApcuAdapter` (Debian's php-symfony-cache:
//! isSupported() reads `apc.enabled`, clear() deletes through `APCUIterator`) and
//! Composer's `ClassLoader::setApcuPrefix()` (Debian's composer), plus `apcu_entry()`
//! under concurrency: one producer runs, every other request gets its value.
//! Scripts: test-data/apcu/. Packages: scripts/install-test-deps.sh.

mod common;

use std::path::{Path, PathBuf};

use common::Server;
use serde_json::Value;

fn root() -> PathBuf {
    for f in [
        "/usr/share/php/Symfony/Component/Cache/Adapter/ApcuAdapter.php",
        "/usr/share/php/Composer/Autoload/ClassLoader.php",
    ] {
        assert!(
            Path::new(f).is_file(),
            "{f} is missing: run scripts/install-test-deps.sh (php-symfony-cache, composer)"
        );
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/apcu")
        .canonicalize()
        .expect("test-data/apcu exists")
}

fn call(server: &Server, script: &str, query: &str) -> Value {
    let r = server.get(&format!("/{script}?{query}"));
    assert_eq!(r.status, 200, "{query}: {}\n{}", r.text(), server.stderr());
    serde_json::from_slice(&r.body).unwrap_or_else(|e| {
        panic!(
            "{query}: not JSON ({e}): {:?}\n{}",
            r.text(),
            server.stderr()
        )
    })
}

/// The whole consumer sequence against one server; `script` is classic.php or worker.php.
/// Requests go to whichever PHP thread is free, so values cross threads.
fn consumers(server: &Server, script: &str) {
    let ini = call(server, script, "op=ini");
    assert_eq!(ini["apc.enabled"], "1", "{ini}");
    assert_eq!(ini["supported"], true, "{ini}");
    assert_eq!(ini["iterator"], true, "{ini}");
    assert_eq!(ini["ITER_KEY"], 2, "{ini}");

    // Symfony's ApcuAdapter: save, read back (several times, any thread), clear.
    let saved = call(server, script, "op=symfony_save&key=greeting&val=hello");
    assert_eq!(saved, serde_json::json!({"supported": true, "saved": true}));
    for _ in 0..4 {
        let got = call(server, script, "op=symfony_get&key=greeting");
        assert_eq!(
            got,
            serde_json::json!({"hit": true, "n": "hello", "list": [1, 2, 3], "obj_a": 1})
        );
    }
    let missing = call(server, script, "op=symfony_get&key=never-saved");
    assert_eq!(missing["hit"], false, "{missing}");
    // clear() deletes the adapter's namespace through apcu_delete(new APCUIterator(...))
    // and leaves other keys alone.
    let cleared = call(server, script, "op=symfony_clear");
    assert_eq!(
        cleared,
        serde_json::json!({"cleared": true, "unrelated": "kept"})
    );
    let gone = call(server, script, "op=symfony_get&key=greeting");
    assert_eq!(gone["hit"], false, "{gone}");

    // Composer's class map cache: the first lookup stores the file, later ones read it;
    // a class that does not exist is cached as a miss.
    let mut seen_cached = false;
    for _ in 0..4 {
        let c = call(server, script, "op=composer");
        assert_eq!(c["prefix"], "ferrophp-cl:", "{c}");
        assert_eq!(c["hello"], "hi from ApcuFixture", "{c}");
        assert_eq!(c["after"], c["file"], "{c}");
        assert_eq!(c["missing"], false, "{c}");
        assert_eq!(c["missing_cached"], true, "{c}");
        if c["before"] == c["file"] {
            seen_cached = true;
        } else {
            assert_eq!(c["before"], false, "{c}");
        }
    }
    assert!(
        seen_cached,
        "the class path was never read back from the cache"
    );
}

#[test]
fn symfony_and_composer_on_the_apcu_layer_classic() {
    let root = root();
    let server = Server::start(&root, &["--threads", "2"]);
    consumers(&server, "classic.php");
}

#[test]
fn symfony_and_composer_on_the_apcu_layer_worker() {
    let root = root();
    let spec = format!("{},2", root.join("worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    consumers(&server, "worker.php");
}

/// Concurrent apcu_entry() calls for one key: the producer runs once, the other requests
/// wait for it and return its value.
fn entry_single_flight(server: &Server, script: &str, clients: usize) {
    let values: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| s.spawn(|| call(server, script, "op=entry&key=shared")))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = &values[0]["value"];
    assert!(
        first.as_str().is_some_and(|v| v.starts_with("made:")),
        "{values:?}"
    );
    for v in &values {
        assert_eq!(&v["value"], first, "{values:?}");
        assert_eq!(v["runs"], 1, "the producer ran more than once: {values:?}");
    }
}

#[test]
fn apcu_entry_runs_one_producer_under_concurrency_classic() {
    let root = root();
    let server = Server::start(&root, &["--threads", "4"]);
    entry_single_flight(&server, "classic.php", 4);
}

#[test]
fn apcu_entry_runs_one_producer_under_concurrency_worker() {
    let root = root();
    let spec = format!("{},4", root.join("worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    entry_single_flight(&server, "worker.php", 4);
}
