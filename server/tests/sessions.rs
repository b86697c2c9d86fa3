//! Sessions at scale: by default no request runs PHP's session GC
//! (`session.gc_probability` is 0), sessions live in a private per-instance directory
//! (mode 0700), and a background sweep deletes `sess_*` files older than
//! `session.gc_maxlifetime` (and only those), counted in `/metrics`.
//! `--session-gc php` and `-d` give PHP's own behaviour back.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{client, wait_until, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/ops/public")
        .canonicalize()
        .expect("test-data/ops/public exists")
}

fn metric(admin: std::net::SocketAddr, name: &str) -> f64 {
    let text = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name}"))
        .parse()
        .unwrap()
}

/// Creates `dir/name` last modified `age` ago.
fn file_aged(dir: &Path, name: &str, age: Duration) {
    let path = dir.join(name);
    std::fs::write(&path, "n|i:1;").unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn default_is_a_private_directory_and_no_gc_on_requests() {
    let server = Server::start(&root(), &["--no-access-log"]);
    let c = reqwest::blocking::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let body = c
        .get(server.url("/session.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let parts: Vec<&str> = body.trim().split('|').collect();
    assert_eq!(parts.len(), 3, "{body}");
    let dir = PathBuf::from(parts[0]);
    assert_ne!(dir, Path::new("/tmp"));
    assert!(dir.ends_with("sessions"), "{}", dir.display());
    assert!(dir
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("ferrophp-"));
    for d in [&dir, &dir.parent().unwrap().to_path_buf()] {
        let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    assert_eq!(parts[1], "0", "session.gc_probability");
    assert_eq!(parts[2], "1");
    // The session persists (the file is in that directory).
    let body = c
        .get(server.url("/session.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(body.trim().ends_with("|2"), "{body}");
    assert!(std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("sess_")));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn the_sweep_deletes_old_session_files_keeps_fresh_ones_and_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for i in 0..40 {
        file_aged(dir, &format!("sess_old{i}"), Duration::from_secs(3600));
    }
    for i in 0..15 {
        file_aged(dir, &format!("sess_new{i}"), Duration::from_secs(10));
    }
    // Old, but not a session file: never touched.
    file_aged(dir, "other_old", Duration::from_secs(3600));
    let save_path = format!("session.save_path={}", dir.display());
    let server = Server::start(
        &root(),
        &[
            "--admin",
            "127.0.0.1:0",
            "--no-access-log",
            "--session-gc-interval-ms",
            "200",
            "-d",
            &save_path,
            "-d",
            "session.gc_maxlifetime=600",
        ],
    );
    let admin = server.admin_addr().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || metric(
            admin,
            "ferrophp_session_files_deleted_total"
        ) == 40.0),
        "{}",
        server.stderr()
    );
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left.len(), 16, "{left:?}");
    assert!(left
        .iter()
        .all(|n| n.starts_with("sess_new") || n == "other_old"));
    // Files that age past the lifetime later go at a later sweep.
    file_aged(dir, "sess_late", Duration::from_secs(601));
    assert!(wait_until(Duration::from_secs(10), || !dir
        .join("sess_late")
        .exists()));
    assert_eq!(metric(admin, "ferrophp_session_files_deleted_total"), 41.0);
    assert!(metric(admin, "ferrophp_session_sweeps_total") >= 2.0);
    assert_eq!(metric(admin, "ferrophp_session_sweep_errors_total"), 0.0);
    // A session page still works against that directory, without GC.
    let body = client()
        .get(server.url("/session.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(body, format!("{}|0|1\n", dir.display()));
}

#[test]
fn php_mode_and_explicit_ini_keep_phps_own_gc() {
    let server = Server::start(
        &root(),
        &[
            "--admin",
            "127.0.0.1:0",
            "--session-gc",
            "php",
            "--no-access-log",
        ],
    );
    let body = client()
        .get(server.url("/session.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    // No php.ini in tests: PHP's built-in default.
    assert_eq!(body.split('|').nth(1), Some("1"), "{body}");
    assert_eq!(
        metric(
            server.admin_addr().unwrap(),
            "ferrophp_session_sweeps_total"
        ),
        0.0
    );
    let explicit = Server::start(&root(), &["-d", "session.gc_probability=5"]);
    let body = client()
        .get(explicit.url("/session.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(body.split('|').nth(1), Some("5"), "{body}");
}
