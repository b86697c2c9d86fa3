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
        headers.as_object().unwrap().keys().all(|k| !k.contains('_')),
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
        vars.get("CONTENT_TYPE").and_then(Value::as_str).unwrap_or(""),
        "",
        "{vars}"
    );
    let (vars, _) = server_vars(
        &server,
        "Content-Type: text/plain\r\nContent_Type: text/evil\r\n",
    );
    assert_eq!(vars["CONTENT_TYPE"], "text/plain");
    assert_eq!(vars["HTTP_CONTENT_TYPE"], "text/plain");

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
    assert_eq!(v["server"]["FRANKENPHP_WORKER"], "1", "{v}");
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
        let request = format!("GET /hello.php HTTP/1.1\r\nHost: localhost\r\n{line}\r\nConnection: close\r\n\r\n");
        let bytes = exchange(server.addr, request.as_bytes(), Duration::from_secs(10)).unwrap();
        let status = parse_response(&bytes).map(|r| r.status);
        assert_eq!(status, Some(400), "{line:?}: {:?}", text(&bytes));
    }
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
            assert!(
                (400..500).contains(&r.status),
                "{what}: status {} body {:?}",
                r.status,
                r.text()
            );
            assert!(!r.text().contains("input.php"), "{what}: {:?}", r.text());
        }
    }
}

#[test]
fn malformed_chunk_after_valid_data_fails_the_request() {
    let server = Server::start(&security_root(), &[]);
    let head = "POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let bad_tails: &[&[u8]] = &[
        b"ZZ\r\nworld\r\n0\r\n\r\n",      // chunk size not hex
        b"5\r\nworldXX0\r\n\r\n",         // chunk data not followed by CRLF
        b"-1\r\nx\r\n0\r\n\r\n",          // negative size
        b"ffffffffffffffffff\r\nx\r\n",   // size overflows
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
    let bytes = send_in_two_parts(&server, form_head, b"3\r\na=1\r\n", b"ZZ\r\n&b=2\r\n0\r\n\r\n");
    assert_body_failure("form body", &bytes);

    // The same body, well formed, works (the test can see a real answer).
    let mut request = head.as_bytes().to_vec();
    request.extend_from_slice(b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n");
    let r = server.raw(&request);
    assert_eq!(r.status, 200);
    assert_eq!(json(&r.body)["body"], "helloworld");
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
        Some(r) => assert!((400..500).contains(&r.status), "{} {:?}", r.status, r.text()),
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
        assert_eq!(v["entity_loader_disabled"], true, "{v}");
        fresh(&format!("after dirty request {round}"));
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
        assert!(r.header("x-powered-by").is_none(), "{path}: {:?}", r.headers);
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

