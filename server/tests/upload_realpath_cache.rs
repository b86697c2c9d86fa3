//! Uploads on long-lived PHP threads: the realpath cache entry a plain-file call on an
//! uploaded file's temporary name leaves in the thread's cache must go when the request
//! ends (the SAPI deactivate hook in the shim). PHP frees an expired entry only when a
//! later lookup walks its bucket, so without that every upload kept one malloc'd entry,
//! up to `realpath_cache_size` per thread: the resident-memory growth of issue 12's soak.
//! Both modes, with the soak's own scripts (`test-data/soak`).

mod common;

use common::*;
use std::path::{Path, PathBuf};

const UPLOADS: usize = 40;

fn soak_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/soak")
        .canonicalize()
        .expect("test-data/soak exists")
}

/// A multipart POST of one 20000-byte file to `path` (the soak's upload).
fn upload_request(path: &str) -> Vec<u8> {
    let boundary = "----realpathboundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&[b'u'; 20000]);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend(body);
    request
}

/// Runs UPLOADS uploads (each script stats its temporary file) on a server with one PHP
/// thread, then asserts what that thread's realpath cache holds.
fn uploads_leave_no_cache_entries(mode_args: &[&str], prefix: &str) {
    let uploads = tempfile::tempdir().expect("temp dir");
    let dir = uploads.path().canonicalize().unwrap();
    let ini = format!("upload_tmp_dir={}", dir.display());
    let mut args = vec!["--threads", "1", "-d", &ini];
    args.extend_from_slice(mode_args);
    let server = Server::start(&soak_root(), &args);
    let mut conn = KeepAlive::connect(server.addr).expect("connect");
    for i in 0..UPLOADS {
        let r = conn
            .send(&upload_request(&format!("{prefix}/upload.php")))
            .expect("upload answered");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "uploaded 20000"),
            "upload {i}"
        );
    }
    let cached = conn
        .get(&format!("{prefix}/realpath.php"))
        .expect("realpath.php answered")
        .text();
    let dir = dir.to_str().unwrap();
    // The cache is on and this thread saw the uploads: PHP cached the upload directory
    // when it made the temporary names.
    assert!(
        cached.lines().any(|l| l == dir),
        "upload dir {dir} not in the realpath cache:\n{cached}"
    );
    let left: Vec<&str> = cached
        .lines()
        .filter(|l| l.starts_with(&format!("{dir}/")))
        .collect();
    assert!(
        left.is_empty(),
        "{} of {UPLOADS} upload temp names still in the realpath cache: {left:?}",
        left.len()
    );
    // The hook runs before PHP unlinks the files, and must not keep it from doing so.
    let empty = || std::fs::read_dir(dir).unwrap().next().is_none();
    assert!(
        wait_until(std::time::Duration::from_secs(5), empty),
        "upload temp files left in {dir}"
    );
    server.assert_alive();
}

#[test]
fn classic_thread_forgets_upload_temp_names() {
    uploads_leave_no_cache_entries(&[], "");
}

#[test]
fn worker_thread_forgets_upload_temp_names() {
    let worker = format!("{}/worker.php,1", soak_root().display());
    uploads_leave_no_cache_entries(&["--worker", &worker], "/worker.php");
}
