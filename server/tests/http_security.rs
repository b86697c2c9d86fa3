//! Hostile input against the real binary over real TCP (issue 12): header names that pose
//! as other headers, HTTP/2 `host` against `:authority`, request bodies that break off,
//! libxml state leaking between worker requests, version banners, every spelling of a path
//! that could run a non-PHP file as PHP or read source, dotfiles or files outside the root,
//! and directories where PHP never runs. Scripts live in `test-data/security`; the path
//! tests run on a temporary copy of it with the odd files (trailing dots, symlinks) added.

mod common;

use std::io::{BufReader, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{client_builder, connect, exchange, parse_response, read_response, Server};
use serde_json::Value;

fn security_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/security")
        .canonicalize()
        .expect("test-data/security exists")
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `$_SERVER` and `getallheaders()` for a raw HTTP/1.1 request with `extra` header lines.
fn server_vars(server: &Server, extra: &str) -> (Value, Value) {
    let r = server.raw(
        format!("GET /server.php HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{extra:?}: {}", r.text());
    let v = json(&r.body);
    (v["server"].clone(), v["headers"].clone())
}

// ---------------------------------------------------------------------------------------
// Header names
// ---------------------------------------------------------------------------------------

#[test]
fn underscore_header_names_never_reach_php() {
    let server = Server::start(&security_root(), &[]);

    // Alone: a spoofed proxy header must not appear at all.
    let (vars, headers) = server_vars(&server, "X_Forwarded_For: 6.6.6.6\r\n");
    assert!(vars.get("HTTP_X_FORWARDED_FOR").is_none(), "{vars}");
    assert!(
        headers
            .as_object()
            .unwrap()
            .keys()
            .all(|k| !k.contains('_')),
        "{headers}"
    );

    // With the real header, in either order: the real one wins, whole and alone.
    for extra in [
        "X_Forwarded_For: 6.6.6.6\r\nX-Forwarded-For: 10.0.0.1\r\n",
        "X-Forwarded-For: 10.0.0.1\r\nX_Forwarded_For: 6.6.6.6\r\n",
        "X-Forwarded-For: 10.0.0.1\r\nx_forwarded_for: 6.6.6.6\r\nX_FORWARDED_FOR: 7.7.7.7\r\n",
    ] {
        let (vars, _) = server_vars(&server, extra);
        assert_eq!(vars["HTTP_X_FORWARDED_FOR"], "10.0.0.1", "{extra:?}");
    }

    // Content_Type must not pose as the content type.
    let (vars, _) = server_vars(&server, "Content_Type: text/evil\r\n");
    assert!(vars.get("HTTP_CONTENT_TYPE").is_none(), "{vars}");
    assert_eq!(
        vars.get("CONTENT_TYPE")
            .and_then(Value::as_str)
            .unwrap_or(""),
        "",
        "{vars}"
    );
    let (vars, _) = server_vars(
        &server,
        "Content-Type: text/plain\r\nContent_Type: text/evil\r\n",
    );
    assert_eq!(vars["CONTENT_TYPE"], "text/plain");
    assert_eq!(vars["HTTP_CONTENT_TYPE"], "text/plain");

    // PHP turns '.' into '_' in variable names: X.Forwarded.For would collide as well.
    let (vars, _) = server_vars(
        &server,
        "X-Forwarded-For: 10.0.0.1\r\nX.Forwarded.For: 6.6.6.6\r\nX.Forwarded-For: 6.6.6.6\r\n",
    );
    assert_eq!(vars["HTTP_X_FORWARDED_FOR"], "10.0.0.1");
    let (vars, _) = server_vars(&server, "X.Forwarded.For: 6.6.6.6\r\n");
    assert!(vars.get("HTTP_X_FORWARDED_FOR").is_none(), "{vars}");

    // Ordinary dashed names still arrive.
    let (vars, _) = server_vars(&server, "X-Custom-Thing: yes\r\n");
    assert_eq!(vars["HTTP_X_CUSTOM_THING"], "yes");
}

#[test]
fn underscore_header_names_are_dropped_in_worker_mode_too() {
    let root = security_root();
    let spec = format!("{},1", root.join("server_worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    let r = server.raw(
        b"GET /server_worker.php HTTP/1.1\r\nHost: localhost\r\nX_Forwarded_For: 6.6.6.6\r\n\
          X-Forwarded-For: 10.0.0.1\r\nContent_Type: text/evil\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = json(&r.body);
    assert_eq!(v["boot_worker"], "1", "{v}");
    assert_eq!(v["server"]["HTTP_X_FORWARDED_FOR"], "10.0.0.1");
    assert!(v["server"].get("HTTP_CONTENT_TYPE").is_none(), "{v}");
}

#[test]
fn httpoxy_proxy_header_is_dropped() {
    let server = Server::start(&security_root(), &[]);
    let (vars, headers) = server_vars(&server, "Proxy: http://evil.test:8080\r\n");
    assert!(vars.get("HTTP_PROXY").is_none(), "{vars}");
    let _ = headers;
}

#[test]
fn header_names_with_non_token_bytes_get_400() {
    let server = Server::start(&security_root(), &[]);
    for line in [
        "X Bad: 1",
        "X(y): 1",
        "X@y: 1",
        "X\"y: 1",
        "X/y: 1",
        "X[y]: 1",
        "X\x01y: 1",
        "X\x7fy: 1",
        "X\u{e9}y: 1",
        ": empty",
        "X-Y : space before colon",
    ] {
        let request = format!(
            "GET /hello.php HTTP/1.1\r\nHost: localhost\r\n{line}\r\nConnection: close\r\n\r\n"
        );
        let bytes = exchange(server.addr, request.as_bytes(), Duration::from_secs(10)).unwrap();
        let status = parse_response(&bytes).map(|r| r.status);
        assert_eq!(status, Some(400), "{line:?}: {:?}", text(&bytes));
    }
    server.assert_alive();
}

#[test]
fn header_edge_cases_are_refused_or_joined() {
    let server = Server::start(&security_root(), &[]);
    let status = |head: &str| {
        let request = format!(
            "GET /server.php HTTP/1.1\r\nHost: localhost\r\n{head}Connection: close\r\n\r\n"
        );
        let bytes = exchange(server.addr, request.as_bytes(), Duration::from_secs(10)).unwrap();
        parse_response(&bytes).map(|r| r.status)
    };
    // obs-fold (RFC 9112 §5.2: reject or replace with spaces): never a folded value in PHP.
    assert_eq!(status("X-Folded: a\r\n b\r\n"), Some(400), "obs-fold");
    // NUL, CR and other control bytes in a value.
    assert_eq!(status("X-A: a\x00b\r\n"), Some(400), "NUL in value");
    assert_eq!(status("X-A: a\rb\r\n"), Some(400), "bare CR in value");
    // Over-long name, over-long value, too many headers: refused, never truncated.
    let long_name = format!("X-{}: 1\r\n", "a".repeat(70_000));
    let long_value = format!("X-A: {}\r\n", "a".repeat(70_000));
    let many: String = (0..10_000).map(|i| format!("X-H{i}: {i}\r\n")).collect();
    for (what, head) in [
        ("long name", long_name),
        ("long value", long_value),
        ("10,000 headers", many),
    ] {
        let s = status(&head);
        assert!(matches!(s, Some(400 | 431) | None), "{what}: {s:?}");
    }
    // Repeated headers are joined with ", " (as nginx does since 1.23), none is lost.
    let (vars, _) = server_vars(
        &server,
        "X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 10.0.0.2\r\n",
    );
    assert_eq!(vars["HTTP_X_FORWARDED_FOR"], "10.0.0.1, 10.0.0.2");
    // Two different Content-Lengths: request smuggling, refused.
    let request = b"POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\
                    Content-Length: 2\r\nConnection: close\r\n\r\nab";
    let bytes = exchange(server.addr, request, Duration::from_secs(10)).unwrap();
    assert_eq!(parse_response(&bytes).map(|r| r.status), Some(400));
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------
// HTTP/2 :authority against host
// ---------------------------------------------------------------------------------------

#[test]
fn http2_host_header_cannot_override_authority() {
    let server = Server::start(&security_root(), &[]);
    let client = client_builder().http2_prior_knowledge().build().unwrap();
    let authority = format!("127.0.0.1:{}", server.port());

    // A Host that differs from :authority: malformed (RFC 9113 §8.3.1), 400.
    let r = client
        .get(server.url("/server.php"))
        .header("host", "evil.test")
        .send()
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    let status = r.status().as_u16();
    let body = r.text().unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(!body.contains("evil.test"), "{body}");

    // The same host, in another case: fine, and :authority is what PHP sees.
    let r = client
        .get(server.url("/server.php"))
        .header("host", authority.to_uppercase())
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);

    // :authority alone (what browsers send): HTTP_HOST and SERVER_NAME come from it.
    let r = client.get(server.url("/server.php")).send().unwrap();
    assert_eq!(r.status(), 200);
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["server"]["HTTP_HOST"], authority);
    assert_eq!(v["server"]["SERVER_NAME"], "127.0.0.1");
    assert_eq!(v["server"]["SERVER_PROTOCOL"], "HTTP/2.0");
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------
// Request bodies that break off
// ---------------------------------------------------------------------------------------

/// Sends `head` + `first`, waits, then `rest`; returns everything the server answered.
fn send_in_two_parts(server: &Server, head: &str, first: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut stream = connect(server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(first).unwrap();
    stream.flush().unwrap();
    // Let the script start and block reading the body before the bad bytes arrive.
    std::thread::sleep(Duration::from_millis(300));
    let _ = stream.write_all(rest);
    let mut out = Vec::new();
    let _ = std::io::Read::read_to_end(&mut stream, &mut out);
    out
}

/// The request must not have succeeded: either an error status or a cut connection, and in
/// no case the script's answer built on a truncated body.
fn assert_body_failure(what: &str, bytes: &[u8]) {
    match parse_response(bytes) {
        None => {} // connection closed without a complete response
        Some(r) => {
            assert_eq!(r.status, 400, "{what}: body {:?}", r.text());
            assert!(!r.text().contains("input.php"), "{what}: {:?}", r.text());
        }
    }
}

#[test]
fn malformed_chunk_after_valid_data_fails_the_request() {
    let server = Server::start(&security_root(), &[]);
    let head =
        "POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let bad_tails: &[&[u8]] = &[
        b"ZZ\r\nworld\r\n0\r\n\r\n",    // chunk size not hex
        b"5\r\nworldXX0\r\n\r\n",       // chunk data not followed by CRLF
        b"-1\r\nx\r\n0\r\n\r\n",        // negative size
        b"ffffffffffffffffff\r\nx\r\n", // size overflows
    ];
    for tail in bad_tails {
        // All at once.
        let mut request = head.as_bytes().to_vec();
        request.extend_from_slice(b"5\r\nhello\r\n");
        request.extend_from_slice(tail);
        let bytes = exchange(server.addr, &request, Duration::from_secs(10)).unwrap();
        assert_body_failure(&format!("one piece, {:?}", text(tail)), &bytes);
        // With the script already waiting for more.
        let bytes = send_in_two_parts(&server, head, b"5\r\nhello\r\n", tail);
        assert_body_failure(&format!("two pieces, {:?}", text(tail)), &bytes);
    }

    // A form body is read before the script starts: same rule.
    let form_head = "POST /input.php HTTP/1.1\r\nHost: localhost\r\n\
                     Content-Type: application/x-www-form-urlencoded\r\n\
                     Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let bytes = send_in_two_parts(
        &server,
        form_head,
        b"3\r\na=1\r\n",
        b"ZZ\r\n&b=2\r\n0\r\n\r\n",
    );
    assert_body_failure("form body", &bytes);

    // The same body, well formed, works (the test can see a real answer).
    let mut request = head.as_bytes().to_vec();
    request.extend_from_slice(b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n");
    let r = server.raw(&request);
    assert_eq!(r.status, 200);
    assert_eq!(json(&r.body)["body"], "helloworld");
    server.assert_alive();
}

/// The lines record.php wrote, once `tag` appears (the script may end after the client
/// saw its answer).
fn recorded(file: &Path, tag: &str) -> Vec<String> {
    let found = common::wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(file).is_ok_and(|t| t.lines().any(|l| l.starts_with(tag)))
    });
    assert!(found, "record.php wrote no line for {tag}");
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(tag))
        .map(str::to_owned)
        .collect()
}

#[test]
fn php_sees_a_failed_read_not_a_shorter_body() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.txt");
    let env = format!("FERRO_RECORD={}", record.display());
    let server = Server::start(&security_root(), &["--env", &env]);

    // PUT: PHP reads a POST body while the request starts (an abort there ends it before
    // the script runs, which is fine but shows nothing); a PUT body only when the script
    // reads php://input.
    // HTTP/1.1: a malformed chunk after "hello".
    let head = "PUT /record.php?tag=h1 HTTP/1.1\r\nHost: localhost\r\n\
                Content-Type: application/octet-stream\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let bytes = send_in_two_parts(&server, head, b"5\r\nhello\r\n", b"ZZ\r\n");
    assert_body_failure("h1 record", &bytes);
    // The script saw the connection aborted, and not the 5 bytes as the whole body.
    assert_eq!(recorded(&record, "h1 "), ["h1 0 1"]);

    // HTTP/2: the client resets the stream after "hello".
    struct BreaksOff(u8);
    impl std::io::Read for BreaksOff {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0 += 1;
            if self.0 == 1 {
                buf[..5].copy_from_slice(b"hello");
                return Ok(5);
            }
            std::thread::sleep(Duration::from_millis(300));
            Err(std::io::Error::other("client gives up"))
        }
    }
    let client = client_builder().http2_prior_knowledge().build().unwrap();
    let result = client
        .put(server.url("/record.php?tag=h2"))
        .header("content-type", "application/octet-stream")
        .body(reqwest::blocking::Body::new(BreaksOff(0)))
        .send();
    if let Ok(r) = result {
        assert_eq!(r.status(), 400);
    }
    assert_eq!(recorded(&record, "h2 "), ["h2 0 1"]);

    // A whole body is recorded whole (the record is what the test thinks it is).
    let r = client
        .put(server.url("/record.php?tag=ok"))
        .body("hello")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(recorded(&record, "ok "), ["ok 5 0"]);
    server.assert_alive();
}

#[test]
fn malformed_chunk_fails_the_request_in_worker_mode() {
    let root = security_root();
    let spec = format!("{},1", root.join("server_worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    // A form body is read while the worker request starts, before the handler runs.
    let head = "POST /server_worker.php HTTP/1.1\r\nHost: localhost\r\n\
                Content-Type: application/x-www-form-urlencoded\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let bytes = send_in_two_parts(&server, head, b"3\r\na=1\r\n", b"ZZ\r\n&b=2\r\n0\r\n\r\n");
    match parse_response(&bytes) {
        None => {}
        Some(r) => assert!(
            (400..500).contains(&r.status),
            "{} {:?}",
            r.status,
            r.text()
        ),
    }
    // The worker keeps serving.
    let r = server.get("/server_worker.php");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn body_shorter_than_content_length_is_not_a_complete_body() {
    let server = Server::start(&security_root(), &[]);
    let mut stream = connect(server.addr);
    stream
        .write_all(
            b"POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
              Content-Length: 100\r\nConnection: close\r\n\r\nhello",
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Half-close: the client will send nothing more.
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    let _ = std::io::Read::read_to_end(&mut stream, &mut out);
    assert_body_failure("short Content-Length body", &out);
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------
// Worker mode: libxml state
// ---------------------------------------------------------------------------------------

#[test]
fn worker_libxml_state_does_not_leak_into_the_next_request() {
    let root = security_root();
    let spec = format!("{},1", root.join("libxml_worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    let fresh = |what: &str| {
        let r = server.get("/libxml_worker.php");
        assert_eq!(r.status, 200, "{what}: {}", r.text());
        let v = json(&r.body);
        assert_eq!(v["errors"], 0, "{what}: {v}");
        assert_eq!(v["last_error"], Value::Null, "{what}: {v}");
        assert_eq!(v["internal_errors"], false, "{what}: {v}");
        assert_eq!(v["entity_loader_set"], false, "{what}: {v}");
        assert_eq!(v["entity_loader_disabled"], false, "{what}: {v}");
    };
    fresh("first request");
    for round in 0..3 {
        let r = server.get("/libxml_worker.php?step=dirty");
        assert_eq!(r.status, 200, "{}", r.text());
        let v = json(&r.body);
        // The dirty request really changed everything (or the test proves nothing).
        assert!(v["errors"].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v["internal_errors"], true, "{v}");
        assert_eq!(v["entity_loader_set"], true, "{v}");
        fresh(&format!("after dirty request {round}"));
        fresh(&format!("after a clean request, round {round}"));
        // Only libxml's own last error: PHP's globals stay as they were.
        let r = server.get("/libxml_worker.php?step=warn");
        let v = json(&r.body);
        assert_eq!(v["parsed"], false, "{v}");
        assert!(
            v["last_error"].is_string(),
            "the parse error is recorded: {v}"
        );
        fresh(&format!("after a parse warning, round {round}"));
        // State the worker script changes between two requests, outside either.
        let r = server.get("/libxml_worker.php?step=between");
        assert_eq!(r.status, 200, "{}", r.text());
        fresh(&format!("after the loop dirtied libxml, round {round}"));
    }
}

// ---------------------------------------------------------------------------------------
// Banners
// ---------------------------------------------------------------------------------------

#[test]
fn no_version_banners_by_default() {
    let server = Server::start(&security_root(), &[]);
    for path in ["/hello.php", "/uploads/photo.txt", "/missing"] {
        let r = server.get(path);
        assert!(
            r.header("x-powered-by").is_none(),
            "{path}: {:?}",
            r.headers
        );
        assert!(r.header("server").is_none(), "{path}: {:?}", r.headers);
    }
    // Worker mode adds it itself when expose_php is on: off there too.
    let root = security_root();
    let spec = format!("{},1", root.join("libxml_worker.php").display());
    let worker = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    let r = worker.get("/libxml_worker.php");
    assert_eq!(r.status, 200);
    assert!(r.header("x-powered-by").is_none(), "{:?}", r.headers);
}

#[test]
fn expose_php_can_be_turned_back_on() {
    let server = Server::start(&security_root(), &["-d", "expose_php=1"]);
    let r = server.get("/hello.php");
    assert_eq!(r.status, 200);
    let powered = r.header("x-powered-by").unwrap_or_default();
    assert!(powered.starts_with("PHP/"), "{:?}", r.headers);
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

const SECRET: &str = "TOPSECRET-4b1d";

/// A copy of test-data/security with the odd files the path tests need, plus files
/// outside the root that must stay unreachable.
struct PathFixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn path_fixture() -> PathFixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_dir(&security_root(), &root);
    let outside = dir.path();
    let w = |path: &Path, content: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    w(&outside.join("secret.txt"), SECRET);
    w(
        &outside.join("outside.php"),
        "<?php echo 'EXECUTED outside.php';",
    );
    // PHP code in files that do not end in .php: must never run, nor leak as source.
    let code = |name: &str| format!("<?php echo 'EXECUTED {name}'; // {SECRET}\n");
    // Names with trailing dots or spaces are what Windows would strip: their contents are
    // PHP source all the same.
    for name in [
        "shell.jpg",
        "hello.php.",
        "hello.php..",
        "hello.php ",
        "hello.php. .",
        "notes.phps",
        "config.inc",
        "page.phtml",
        "old.php5",
        "backup.inc.",
    ] {
        w(&root.join(name), &code(name));
    }
    w(&root.join(".env"), &format!("DB_PASSWORD={SECRET}\n"));
    w(&root.join(".git/config"), &format!("[remote] {SECRET}\n"));
    w(&root.join(".user.ini"), &format!("; {SECRET}\n"));
    w(&root.join(".hidden/page.php"), &code(".hidden/page.php"));
    symlink(outside.join("secret.txt"), root.join("secret_link.txt")).unwrap();
    symlink(outside.join("outside.php"), root.join("outside_link.php")).unwrap();
    symlink(outside, root.join("outdir")).unwrap();
    symlink(root.join("shell.jpg"), root.join("jpg_link.php")).unwrap();
    symlink(root.join(".env"), root.join("env.txt")).unwrap();
    symlink(root.join(".git"), root.join("gitdir")).unwrap();
    symlink(root.join("hello.php"), root.join("source.txt")).unwrap();
    symlink(root.join(".hidden/page.php"), root.join("hidden_link.php")).unwrap();
    PathFixture { _dir: dir, root }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Sends `GET {target}` as raw bytes (the target is not re-encoded by any client).
fn raw_get(server: &Server, target: &[u8]) -> (Option<u16>, Vec<u8>) {
    let mut request = b"GET ".to_vec();
    request.extend_from_slice(target);
    request.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let bytes = exchange(server.addr, &request, Duration::from_secs(10)).unwrap();
    let status = parse_response(&bytes).map(|r| r.status);
    (status, bytes)
}

/// Nothing ran but hello.php, and nothing secret or any PHP source came back.
fn assert_refused(server: &Server, target: &[u8]) {
    let (status, bytes) = raw_get(server, target);
    let shown = text(&bytes);
    let what = String::from_utf8_lossy(target);
    assert!(
        matches!(status, Some(400 | 403 | 404) | None),
        "{what}: status {status:?}: {shown}"
    );
    assert!(!shown.contains("EXECUTED"), "{what} ran PHP: {shown}");
    assert!(!shown.contains(SECRET), "{what} leaked: {shown}");
    assert!(!shown.contains("<?php"), "{what} showed source: {shown}");
}

#[test]
fn paths_cannot_run_non_php_files_or_read_source() {
    let f = path_fixture();
    let server = Server::start(&f.root, &[]);
    // Controls: the real script runs, a real static file is served.
    let (status, bytes) = raw_get(&server, b"/hello.php");
    assert_eq!(status, Some(200));
    assert!(text(&bytes).ends_with("Hello, World!"));
    let (status, bytes) = raw_get(&server, b"/uploads/photo.txt");
    assert_eq!(status, Some(200));
    assert!(text(&bytes).contains("not really a photo"));

    let targets: &[&[u8]] = &[
        // PATH_INFO splitting on a non-PHP file.
        b"/shell.jpg/x.php",
        b"/shell.jpg/.php",
        b"/shell.jpg/hello.php",
        b"/shell.jpg%2fx.php",
        b"/shell.jpg%2Fx.php",
        b"/shell.jpg/",
        // NUL, raw and encoded.
        b"/shell.jpg%00.php",
        b"/hello.php%00",
        b"/hello.php%00.txt",
        b"/shell.jpg\x00.php",
        // Trailing dots and spaces, raw files of those names exist.
        b"/hello.php.",
        b"/hello.php..",
        b"/hello.php%2e",
        b"/hello.php%20",
        b"/hello.php%20%20",
        b"/hello.php.%20.",
        b"/backup.inc.",
        b"/hello.php%09",
        // ';' and NTFS streams.
        b"/hello.php;.txt",
        b"/shell.jpg;.php",
        b"/hello.php::$DATA",
        b"/hello.php::%24DATA",
        b"/shell.jpg::$DATA.php",
        // Backslashes.
        b"/hello.php%5c",
        b"/shell.jpg%5cx.php",
        b"/..%5csecret.txt",
        b"/shell.jpg\\x.php",
        // Encoded and overlong dots and slashes.
        b"/%2e%2e/secret.txt",
        b"/%2E%2E/outside.php",
        b"/uploads/%2e%2e/%2e%2e/secret.txt",
        b"/%c0%ae%c0%ae/secret.txt",
        b"/%c0%ae%c0%ae%c0%afsecret.txt",
        b"/%e0%80%ae%e0%80%ae/secret.txt",
        b"/shell.jpg%c0%afx.php",
        b"/%252e%252e/secret.txt",
        // Case: on Linux hello.PHP is not hello.php.
        b"/hello.PHP",
        b"/HELLO.php",
        b"/hello.pHp",
        b"/hello.PHP/x",
        // Unicode that changes length or meaning when case-folded.
        b"/shell.jpg/%C8%BA%C8%BA%C8%BA.php",
        b"/%C8%BA%C8%BA.php/shell.jpg",
        b"/shell.jpg%C8%BA.php",
        b"/shell.jpg.%E2%84%AA.php",
        b"/shell.jpg.%E2%84%AA.php.txt",
        b"/shell.jpg/%C4%B0.php",
        b"/shell.jpg.%EF%BD%90%EF%BD%88%EF%BD%90",
        b"/hello.%EF%BD%90%EF%BD%88%EF%BD%90",
        b"/hello.%E2%84%99hp",
        // Source and include files are never static.
        b"/notes.phps",
        b"/config.inc",
        b"/page.phtml",
        b"/old.php5",
        b"/source.txt",
        // Dotfiles, directly, encoded, and through symlinks.
        b"/.env",
        b"/%2eenv",
        b"/.git/config",
        b"/.user.ini",
        b"/.hidden/page.php",
        b"/env.txt",
        b"/gitdir/config",
        b"/hidden_link.php",
        // Outside the root.
        b"/../secret.txt",
        b"/secret_link.txt",
        b"/outside_link.php",
        b"/outdir/secret.txt",
        b"/outdir/outside.php",
        // A .php link whose target is not PHP.
        b"/jpg_link.php",
        b"/jpg_link.php/x",
    ];
    for target in targets {
        assert_refused(&server, target);
    }
    server.assert_alive();

    // A script really named with a mixed-case extension runs under its own name only.
    let (status, bytes) = raw_get(&server, b"/Mixed.pHp");
    assert_eq!(status, Some(200));
    assert!(text(&bytes).contains("EXECUTED Mixed.pHp"));
    assert_refused(&server, b"/Mixed.php");
    assert_refused(&server, b"/mixed.pHp");
}

#[test]
fn no_php_dir_refuses_scripts_and_never_shows_their_source() {
    let f = path_fixture();
    let server = Server::start(&f.root, &["--no-php-dir", "uploads"]);
    for target in [
        &b"/uploads/evil.php"[..],
        b"/uploads/evil.php/x",
        b"/uploads/evil.PHP",
        b"/uploads//evil.php",
        b"/%75ploads/evil.php",
    ] {
        let (status, bytes) = raw_get(&server, target);
        let shown = text(&bytes);
        assert!(
            !shown.contains("EXECUTED") && !shown.contains("<?php"),
            "{}: {shown}",
            String::from_utf8_lossy(target)
        );
        assert!(matches!(status, Some(403 | 404)), "{status:?}: {shown}");
    }
    let (status, _) = raw_get(&server, b"/uploads/evil.php");
    assert_eq!(status, Some(403));
    // Static files there are still served, and PHP elsewhere still runs.
    let (status, bytes) = raw_get(&server, b"/uploads/photo.txt");
    assert_eq!(status, Some(200));
    assert!(text(&bytes).contains("not really a photo"));
    server.assert_alive();

    // A link from elsewhere into the no-PHP directory is refused as well.
    symlink(f.root.join("uploads/evil.php"), f.root.join("innocent.php")).unwrap();
    let (status, bytes) = raw_get(&server, b"/innocent.php");
    assert_eq!(status, Some(403), "{}", text(&bytes));

    // Without the option the same script runs (the fixture is what the test thinks it is).
    let open = Server::start(&f.root, &[]);
    let (status, bytes) = raw_get(&open, b"/uploads/evil.php");
    assert_eq!(status, Some(200));
    assert!(text(&bytes).contains("EXECUTED uploads/evil.php"));
}

#[test]
fn no_php_dir_from_the_toml_config() {
    let f = path_fixture();
    let config = f.root.parent().unwrap().join("ferrophp.toml");
    std::fs::write(&config, "no_php_dirs = [\"uploads\"]\n").unwrap();
    let server = Server::start(&f.root, &["--config", config.to_str().unwrap()]);
    let (status, bytes) = raw_get(&server, b"/uploads/evil.php");
    assert_eq!(status, Some(403), "{}", text(&bytes));
    server.assert_alive();
}

#[test]
fn keep_alive_connection_survives_refused_paths() {
    // Refusals are ordinary responses: the connection stays usable.
    let f = path_fixture();
    let server = Server::start(&f.root, &[]);
    let stream = connect(server.addr);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    for target in [
        "/%2e%2e/secret.txt",
        "/.env",
        "/shell.jpg/x.php",
        "/hello.php",
    ] {
        write!(writer, "GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let r = read_response(&mut reader, false).unwrap();
        if target == "/hello.php" {
            assert_eq!(r.status, 200);
        } else {
            assert!(matches!(r.status, 400 | 404), "{target}: {}", r.status);
        }
    }
}
