//! Wire protocols: HTTP/1.1 keep-alive and pipelining, HTTP/2 cleartext (prior
//! knowledge), HTTP/2 over TLS with ALPN, many concurrent keep-alive connections, and
//! malformed requests answered with 400 while the server keeps serving.

mod common;

use std::io::{BufReader, Write};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{client_builder, connect, exchange, http_root, parse_response, read_response, Server};
use serde_json::Value;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

#[test]
fn http1_keep_alive_serves_several_requests_on_one_connection() {
    let server = Server::start(&http_root(), &[]);
    let stream = connect(server.addr);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut remote_ports = Vec::new();
    for i in 0..5 {
        write!(
            writer,
            "GET /server.php?i={i} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        )
        .unwrap();
        let r = read_response(&mut reader, false).unwrap();
        assert_eq!(r.status, 200);
        assert_ne!(r.header("connection"), Some("close"));
        let v = json(&r.body);
        assert_eq!(v["server"]["QUERY_STRING"], format!("i={i}"));
        assert_eq!(v["server"]["SERVER_PROTOCOL"], "HTTP/1.1");
        remote_ports.push(v["server"]["REMOTE_PORT"].as_str().unwrap().to_owned());
    }
    // Same TCP connection every time.
    let local_port = writer.local_addr().unwrap().port().to_string();
    assert!(
        remote_ports.iter().all(|p| *p == local_port),
        "{remote_ports:?}"
    );

    // HEAD on the same connection has headers only, then the connection still works.
    write!(
        writer,
        "HEAD /hello.php HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .unwrap();
    let r = read_response(&mut reader, true).unwrap();
    assert_eq!(r.status, 200);
    write!(writer, "GET /hello.php HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let r = read_response(&mut reader, false).unwrap();
    assert_eq!(r.body, b"Hello, World!");
}

#[test]
fn http1_pipelined_requests_are_answered_in_order() {
    let server = Server::start(&http_root(), &[]);
    let stream = connect(server.addr);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut batch = String::new();
    for i in 0..4 {
        batch.push_str(&format!(
            "GET /vars.php?n={i} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        ));
    }
    writer.write_all(batch.as_bytes()).unwrap();
    for i in 0..4 {
        let r = read_response(&mut reader, false).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(json(&r.body)["get"]["n"], i.to_string());
    }
}

#[test]
fn http1_0_request_without_keep_alive_is_closed_after_the_response() {
    let server = Server::start(&http_root(), &[]);
    let bytes = exchange(
        server.addr,
        b"GET /server.php HTTP/1.0\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(10),
    )
    .unwrap();
    let r = parse_response(&bytes).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(json(&r.body)["server"]["SERVER_PROTOCOL"], "HTTP/1.0");
}

#[test]
fn h2c_prior_knowledge() {
    let server = Server::start(&http_root(), &[]);
    let client = client_builder().http2_prior_knowledge().build().unwrap();
    let r = client.get(server.url("/hello.php")).send().unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().unwrap(), "Hello, World!");

    // Several requests share one HTTP/2 connection, concurrently too.
    let mut ports = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let client = client.clone();
                let url = server.url(&format!("/server.php?i={i}"));
                s.spawn(move || {
                    let r = client.get(url).send().unwrap();
                    assert_eq!(r.version(), reqwest::Version::HTTP_2);
                    let v = json(&r.bytes().unwrap());
                    assert_eq!(v["server"]["SERVER_PROTOCOL"], "HTTP/2.0");
                    assert_eq!(v["server"]["QUERY_STRING"], format!("i={i}"));
                    v["server"]["REMOTE_PORT"].as_str().unwrap().to_owned()
                })
            })
            .collect();
        for h in handles {
            ports.push(h.join().unwrap());
        }
    });
    ports.dedup();
    assert_eq!(ports.len(), 1, "one connection expected: {ports:?}");

    // POST bodies over HTTP/2 (no Content-Length framing needed).
    let r = client
        .post(server.url("/vars.php"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=1&b=two")
        .send()
        .unwrap();
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["post"]["a"], "1");
    assert_eq!(v["post"]["b"], "two");
}

#[test]
fn https_negotiates_http2_with_alpn_and_still_speaks_http1() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(tmp.path());
    let server = Server::start(
        &http_root(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(server.scheme, "https");

    let h2 = client_builder().use_rustls_tls().build().unwrap();
    let r = h2.get(server.url("/hello.php")).send().unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2, "ALPN should pick h2");
    assert_eq!(r.text().unwrap(), "Hello, World!");
    let r = h2.get(server.url("/server.php?x=1")).send().unwrap();
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["server"]["HTTPS"], "on");
    assert_eq!(v["server"]["REQUEST_SCHEME"], "https");
    assert_eq!(v["server"]["SERVER_PROTOCOL"], "HTTP/2.0");
    assert_eq!(v["server"]["QUERY_STRING"], "x=1");

    let h1 = client_builder()
        .use_rustls_tls()
        .http1_only()
        .build()
        .unwrap();
    let r = h1.get(server.url("/server.php")).send().unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_11);
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["server"]["SERVER_PROTOCOL"], "HTTP/1.1");
    assert_eq!(v["server"]["HTTPS"], "on");

    // Plain HTTP on the TLS port is not served, and does not hurt the server.
    let bytes = exchange(
        server.addr,
        b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .unwrap_or_default();
    assert!(!bytes.windows(5).any(|w| w == b"Hello"));
    let r = h2.get(server.url("/hello.php")).send().unwrap();
    assert_eq!(r.status(), 200);
}

#[test]
fn two_hundred_concurrent_keep_alive_connections() {
    const CONNECTIONS: usize = 200;
    const REQUESTS: usize = 5;
    let server = Server::start(&http_root(), &["--threads", "4"]);
    let barrier = Arc::new(Barrier::new(CONNECTIONS));
    let addr = server.addr;
    let handles: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            let barrier = barrier.clone();
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || -> Result<(), String> {
                    let stream = connect(addr);
                    stream
                        .set_read_timeout(Some(Duration::from_secs(60)))
                        .unwrap();
                    // Every connection is open before any request is sent.
                    barrier.wait();
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    for r in 0..REQUESTS {
                        let path = if r % 2 == 0 {
                            format!("/vars.php?c={c}&r={r}")
                        } else {
                            "/hello.php".to_owned()
                        };
                        write!(writer, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
                            .map_err(|e| format!("conn {c} req {r}: write {e}"))?;
                        let resp = read_response(&mut reader, false)
                            .map_err(|e| format!("conn {c} req {r}: read {e}"))?;
                        if resp.status != 200 {
                            return Err(format!("conn {c} req {r}: status {}", resp.status));
                        }
                        if r % 2 == 0 {
                            let v = json(&resp.body);
                            let (want_c, want_r) = (c.to_string(), r.to_string());
                            if v["get"]["c"].as_str() != Some(&*want_c)
                                || v["get"]["r"].as_str() != Some(&*want_r)
                            {
                                return Err(format!("conn {c} req {r}: wrong answer {v}"));
                            }
                        } else if resp.body != b"Hello, World!" {
                            return Err(format!("conn {c} req {r}: body {:?}", resp.text()));
                        }
                    }
                    Ok(())
                })
                .unwrap()
        })
        .collect();
    let errors: Vec<String> = handles
        .into_iter()
        .filter_map(|h| h.join().unwrap().err())
        .collect();
    assert!(
        errors.is_empty(),
        "{} failures: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    server.assert_alive();
}

/// Sends `request` and returns the status, or None if the server closed without one.
fn status_of(server: &Server, request: &[u8]) -> Option<u16> {
    let bytes = exchange(server.addr, request, Duration::from_secs(5)).ok()?;
    parse_response(&bytes).map(|r| r.status)
}

#[test]
fn malformed_requests_get_400_and_the_server_keeps_serving() {
    let server = Server::start(&http_root(), &[]);
    let cases: &[(&str, &[u8])] = &[
        ("garbage request line", b"GARBAGE\r\n\r\n"),
        ("missing version", b"GET /hello.php\r\nHost: x\r\n\r\n"),
        ("space in header name", b"GET /hello.php HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n"),
        ("control byte in header value", b"GET /hello.php HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"),
        ("NUL in header value", b"GET /hello.php HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"),
        ("header without colon", b"GET /hello.php HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"),
        ("invalid Content-Length", b"POST /vars.php HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"),
        ("conflicting Content-Lengths", b"POST /vars.php HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
        ("raw space in target", b"GET /hello php HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("non-ASCII in target", b"GET /h\xffllo.php HTTP/1.1\r\nHost: x\r\n\r\n"),
    ];
    for (what, request) in cases {
        assert_eq!(status_of(&server, request), Some(400), "{what}");
        server.assert_alive();
    }
    // An unknown HTTP version is refused too (400 or 505), never served.
    let status = status_of(&server, b"GET /hello.php HTTP/7.0\r\nHost: x\r\n\r\n");
    assert!(matches!(status, None | Some(400) | Some(505)), "{status:?}");
    // Binary noise, then a valid request on a fresh connection.
    let _ = exchange(
        server.addr,
        &[0x16, 0x03, 0x01, 0xff, 0x00, 0x13, 0x37],
        Duration::from_secs(5),
    );
    server.assert_alive();
}

#[test]
fn host_header_is_required_once_and_must_be_a_plain_host() {
    let server = Server::start(&http_root(), &[]);
    let cases: &[(&str, &[u8])] = &[
        (
            "HTTP/1.1 without Host",
            b"GET /hello.php HTTP/1.1\r\nConnection: close\r\n\r\n",
        ),
        (
            "two Host headers",
            b"GET /hello.php HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nConnection: close\r\n\r\n",
        ),
        (
            "Host with a slash",
            b"GET /hello.php HTTP/1.1\r\nHost: a.test/evil\r\nConnection: close\r\n\r\n",
        ),
        (
            "Host with dot segments",
            b"GET /hello.php HTTP/1.1\r\nHost: ../../etc\r\nConnection: close\r\n\r\n",
        ),
        (
            "Host with a backslash",
            b"GET /hello.php HTTP/1.1\r\nHost: a\\b\r\nConnection: close\r\n\r\n",
        ),
    ];
    for (what, request) in cases {
        assert_eq!(status_of(&server, request), Some(400), "{what}");
    }
    // HTTP/1.0 needs no Host; a port and an IPv6 literal are fine.
    assert_eq!(
        status_of(&server, b"GET /hello.php HTTP/1.0\r\n\r\n"),
        Some(200)
    );
    for (host, name) in [
        ("example.test:8080", "example.test"),
        ("[::1]:8080", "[::1]"),
        ("127.0.0.1", "127.0.0.1"),
    ] {
        let r = server.raw(
            format!("GET /server.php HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 200, "{host}");
        assert_eq!(json(&r.body)["server"]["SERVER_NAME"], name, "{host}");
        assert_eq!(json(&r.body)["server"]["HTTP_HOST"], host);
    }
}

#[test]
fn transfer_encoding_wins_over_content_length() {
    // Request smuggling guard: with both headers the body is framed by chunked encoding
    // (or refused), never by Content-Length.
    let server = Server::start(&http_root(), &[]);
    let bytes = exchange(
        server.addr,
        b"POST /input.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n\
          GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .unwrap();
    let r = parse_response(&bytes).unwrap();
    if r.status != 400 {
        assert_eq!(r.status, 200);
        assert_eq!(json(&r.body)["length"], 2);
        // The connection is not reused after such a request.
        assert_eq!(r.header("connection"), Some("close"));
    }
    server.assert_alive();
}
