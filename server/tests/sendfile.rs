//! `--sendfile-dir` over real HTTP: PHP hands a file over with `X-Accel-Redirect` or
//! `X-Sendfile` (plain PHP, Symfony's `BinaryFileResponse`, a worker), the file is served
//! as a static file with PHP's other headers kept, and no name can reach a file outside
//! the directory.

mod common;

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{encode, exchange, read_response, RawResponse, Server};

fn public() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/sendfile/public")
        .canonicalize()
        .expect("test-data/sendfile/public exists")
}

/// A private directory beside a file that must stay out of reach, with a symlink from the
/// inside to it and a large file for ranges.
struct Private {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    outside: PathBuf,
    big: Vec<u8>,
}

fn private() -> Private {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let dir = base.join("private");
    std::fs::create_dir_all(dir.join("reports")).unwrap();
    std::fs::write(dir.join("reports/q3.txt"), "Quarter 3: revenue up.\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(dir.join("big.txt"), &big).unwrap();
    let outside = base.join("outside.txt");
    std::fs::write(&outside, "secret outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(&base, dir.join("up")).unwrap();
    Private {
        _tmp: tmp,
        dir,
        outside,
        big,
    }
}

fn start(p: &Private, extra: &[&str]) -> Server {
    let dir = p.dir.to_string_lossy().into_owned();
    let env = format!("SENDFILE_DIR={dir}");
    let mut args = vec!["--sendfile-dir", dir.as_str(), "-e", env.as_str()];
    args.extend_from_slice(extra);
    Server::start(&public(), &args)
}

fn get(server: &Server, path: &str, headers: &str) -> RawResponse {
    server.raw(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n")
            .as_bytes(),
    )
}

fn accel(server: &Server, target: &str) -> RawResponse {
    get(
        server,
        &format!("/accel.php?token=let-me-in&f={}", encode(target)),
        "",
    )
}

#[test]
fn x_accel_redirect_serves_the_file_with_the_headers_php_set() {
    let p = private();
    let server = start(&p, &[]);
    let r = accel(&server, "/reports/q3.txt");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.text(), "Quarter 3: revenue up.\n");
    // The file's representation, PHP's everything else.
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("content-length"), Some("23"));
    assert!(r.header("etag").is_some() && r.header("last-modified").is_some());
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=\"report.txt\"")
    );
    assert_eq!(r.header("cache-control"), Some("private, max-age=60"));
    assert_eq!(r.header("x-app"), Some("sendfile-test"));
    assert!(r
        .header("set-cookie")
        .unwrap()
        .starts_with("downloaded=yes"));
    assert_eq!(r.header("x-accel-redirect"), None);

    // Without the leading slash, the path is still inside the directory.
    assert_eq!(accel(&server, "reports/q3.txt").status, 200);
    // PHP's own refusal passes through untouched.
    let denied = get(&server, "/accel.php?f=/reports/q3.txt", "");
    assert_eq!((denied.status, denied.text().as_str()), (403, "denied\n"));
}

#[test]
fn ranges_conditionals_and_head_work_on_handed_over_files() {
    let p = private();
    let server = start(&p, &[]);
    let r = get(
        &server,
        "/accel.php?token=let-me-in&f=/big.txt",
        "Range: bytes=1000-1999\r\n",
    );
    assert_eq!(r.status, 206, "{:?}", r.headers);
    assert_eq!(r.body, &p.big[1000..2000]);
    assert_eq!(r.header("content-range"), Some("bytes 1000-1999/300000"));

    let full = accel(&server, "/big.txt");
    assert_eq!(full.body, p.big);
    let etag = full.header("etag").unwrap().to_owned();
    let again = get(
        &server,
        "/accel.php?token=let-me-in&f=/big.txt",
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());

    let bytes = exchange(
        server.addr,
        b"HEAD /accel.php?token=let-me-in&f=/big.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .unwrap();
    let head = read_response(&mut BufReader::new(&bytes[..]), true).unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("300000"));
    assert!(head.body.is_empty());

    // A POST that ends in a download gets the file, as nginx's internal redirect does.
    let post = server.raw(
        b"POST /accel.php?token=let-me-in&f=/reports/q3.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=b",
    );
    assert_eq!(post.status, 200);
    assert_eq!(post.text(), "Quarter 3: revenue up.\n");
}

#[test]
fn no_name_reaches_a_file_outside_the_directory() {
    let p = private();
    let server = start(&p, &[]);
    let outside = p.outside.to_string_lossy().into_owned();
    let cases: &[(&str, u16)] = &[
        ("/../outside.txt", 403),
        ("/reports/../../outside.txt", 403),
        ("../outside.txt", 403),
        ("/%2e%2e/outside.txt", 403),
        ("/reports%2f..%2f..%2foutside.txt", 403),
        ("/reports/%2e%2e/%2e%2e/outside.txt", 403),
        ("/escape.txt", 403),
        ("/up/outside.txt", 403),
        ("/reports/q3.txt%00.png", 403),
        ("/%zz", 403),
        (&outside, 404),
        ("/missing.txt", 404),
        ("/reports/", 404),
        ("/", 404),
    ];
    for (target, status) in cases {
        let r = accel(&server, target);
        assert_eq!(r.status, *status, "X-Accel-Redirect {target:?}: {r:?}");
        assert!(!r.text().contains("secret"), "{target:?} leaked: {r:?}");
        assert!(!r.text().contains("PHP BODY"), "{target:?}: {r:?}");
    }

    // X-Sendfile takes filesystem paths; only those inside the directory are served.
    let inside = p.dir.join("reports/q3.txt").to_string_lossy().into_owned();
    let escape = p.dir.join("escape.txt").to_string_lossy().into_owned();
    let dotdot = format!("{}/../outside.txt", p.dir.display());
    let cases: &[(&str, u16)] = &[
        (&inside, 200),
        (&outside, 403),
        (&escape, 403),
        (&dotdot, 403),
        ("reports/q3.txt", 403),
        ("/etc/passwd", 403),
        ("/nonexistent/file", 404),
    ];
    for (path, status) in cases {
        let r = get(&server, &format!("/xsendfile.php?p={}", encode(path)), "");
        assert_eq!(r.status, *status, "X-Sendfile {path:?}: {r:?}");
        assert!(!r.text().contains("secret") && !r.text().contains("root:"));
        assert!(!r.text().contains("PHP BODY"), "{path:?}: {r:?}");
    }
    assert!(server.wait_for_stderr("refusing X-Sendfile", Duration::from_secs(5)));
    // Still serving.
    assert_eq!(accel(&server, "/reports/q3.txt").status, 200);
}

#[test]
fn apps_are_told_how_to_hand_files_over_and_clients_cannot_say_otherwise() {
    let p = private();
    let server = start(&p, &[]);
    let r = get(
        &server,
        "/echo-sendfile-headers.php",
        "X-Sendfile-Type: X-Sendfile\r\nX-Accel-Mapping: /=/\r\n",
    );
    let expected = format!(
        "{{\"type\":\"X-Accel-Redirect\",\"mapping\":\"{}=\\/\"}}",
        p.dir.display().to_string().replace('/', "\\/")
    );
    assert_eq!(r.text(), expected);

    // Symfony's BinaryFileResponse reads them and hands the file over.
    let r = get(&server, "/symfony.php", "");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.text(), "Quarter 3: revenue up.\n");
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=q3.txt")
    );
    assert_eq!(r.header("x-accel-redirect"), None);
}

#[test]
fn worker_responses_hand_files_over_too() {
    let p = private();
    let worker = public().join("worker.php").to_string_lossy().into_owned();
    let spec = format!("{worker},1");
    let server = start(&p, &["--worker", &spec]);
    for _ in 0..3 {
        let r = get(&server, "/worker.php?f=/big.txt", "Range: bytes=0-9\r\n");
        assert_eq!(r.status, 206, "{r:?}");
        assert_eq!(r.body, &p.big[..10]);
        assert_eq!(r.header("x-worker"), Some("yes"));
        let r = get(&server, "/worker.php?f=/escape.txt", "");
        assert_eq!(r.status, 403, "{r:?}");
    }
}

#[test]
fn without_a_sendfile_dir_the_headers_are_only_headers() {
    let server = Server::start(&public(), &[]);
    let r = get(&server, "/accel.php?token=let-me-in&f=/reports/q3.txt", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "PHP BODY THAT MUST NOT BE SENT\n");
    assert_eq!(r.header("x-accel-redirect"), Some("/reports/q3.txt"));
    let r = get(&server, "/echo-sendfile-headers.php", "");
    assert_eq!(r.text(), "{\"type\":null,\"mapping\":null}");
}

#[test]
fn a_sendfile_dir_that_is_not_a_directory_is_refused_at_start_up() {
    let p = private();
    let file = p.dir.join("reports/q3.txt").to_string_lossy().into_owned();
    for bad in [file.as_str(), "/nonexistent/dir"] {
        let run =
            common::serve_until_exit(&public(), &["--sendfile-dir", bad], Duration::from_secs(20));
        let status = run.status.expect("exits");
        assert!(!status.success());
        assert!(run.stderr.contains("--sendfile-dir"), "{}", run.stderr);
    }
}
