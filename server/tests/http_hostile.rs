//! Hostile HTTP against the real binary over real TCP (issue 12, the protocol part):
//! request smuggling (framing headers that disagree or are malformed, broken chunked
//! encoding), malformed request lines, the four request-target forms, pipelining,
//! slowloris on the head and on the body, floods of idle connections, and HTTP/2 abuse
//! spoken in hand-written frames (rapid reset, CONTINUATION floods, oversized frames and
//! header lists, a flow-control window that never opens, too many streams, idle
//! connections kept busy with PINGs).
//!
//! Every attack must end in a 4xx/5xx or a closed connection and leave the server
//! serving; `test-data/security/journal.php` appends a line per execution to a temp file,
//! so each case also proves how often PHP ran: a smuggled request never, an accepted one
//! exactly once.

mod common;

use std::collections::HashMap;
use std::io::{self, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{client_builder, connect, read_response, RawResponse, Server};

fn security_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/security")
        .canonicalize()
        .expect("test-data/security exists")
}

/// The lines journal.php (and output.php) appended, one per PHP execution.
struct Journal {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Journal {
    fn new() -> Journal {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.log");
        std::fs::write(&path, "").unwrap();
        Journal { _dir: dir, path }
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Lines whose first field (the `tag` query parameter) is `tag`.
    fn with_tag(&self, tag: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.split(' ').next() == Some(tag))
            .collect()
    }

    fn clear(&self) {
        std::fs::write(&self.path, "").unwrap();
    }
}

/// A server on test-data/security whose journal.php writes to a fresh journal.
fn start(args: &[&str]) -> (Server, Journal) {
    let journal = Journal::new();
    let server = Server::start_with_env(
        &security_root(),
        args,
        &[("FERRO_JOURNAL", journal.path.to_str().unwrap())],
    );
    (server, journal)
}

/// Writes `request` on a fresh connection and reads until the server closes it or stays
/// silent for `quiet`; returns the responses that could be parsed, in order, and whether
/// the server closed the connection.
fn converse(addr: SocketAddr, request: &[u8], quiet: Duration) -> (Vec<RawResponse>, bool) {
    let mut stream = connect(addr);
    // The server may answer and close before taking everything: not an error here.
    let _ = stream.write_all(request);
    let (bytes, closed) = read_quietly(&mut stream, quiet);
    (parse_all(&bytes), closed)
}

/// Reads until EOF/reset (closed = true) or `quiet` without a byte.
fn read_quietly(stream: &mut TcpStream, quiet: Duration) -> (Vec<u8>, bool) {
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (out, false)
            }
            Err(_) => return (out, true),
        }
    }
}

fn parse_all(bytes: &[u8]) -> Vec<RawResponse> {
    let mut reader = BufReader::new(bytes);
    let mut out = Vec::new();
    while let Ok(r) = read_response(&mut reader, false) {
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// HTTP/1 request smuggling
// ---------------------------------------------------------------------------------------

/// A request that must not run if the framing before it is ambiguous or broken.
const SMUGGLED: &str = "GET /journal.php?tag=SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n";
/// A request that follows an unambiguous message and must run exactly once.
const NEXT: &str = "GET /journal.php?tag=next HTTP/1.1\r\nHost: x\r\n\r\n";

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A 4xx/5xx or a closed connection without a response; PHP's answer never reaches
    /// the client.
    Refused,
    /// Served once with a body of this length.
    Served(usize),
    /// RFC 9112 lets the server refuse or serve (with a body of this length); either way
    /// nothing after the message may be taken for another request unless it is NEXT.
    Either(usize),
}

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
}

/// `POST /journal.php?tag=front` with `headers` (each ending in CRLF) and `rest` after the
/// blank line.
fn post(name: &'static str, headers: &str, rest: &str, expect: Expect) -> Case {
    Case {
        name,
        bytes: format!("POST /journal.php?tag=front HTTP/1.1\r\nHost: x\r\n{headers}\r\n{rest}")
            .into_bytes(),
        expect,
    }
}

/// A chunked POST whose body is `chunks`, followed by SMUGGLED if the body must be
/// refused (the bytes after a broken body are never a request), else by NEXT (after a
/// body the server may accept, they are an ordinary pipelined request).
fn chunked(name: &'static str, chunks: &str, expect: Expect) -> Case {
    let after = match expect {
        Expect::Refused => SMUGGLED,
        Expect::Served(_) | Expect::Either(_) => NEXT,
    };
    post(
        name,
        "Transfer-Encoding: chunked\r\n",
        &format!("{chunks}{after}"),
        expect,
    )
}

/// Runs each case on a fresh connection and checks the response, the journal, and that
/// the server still serves.
fn run_cases(server: &Server, journal: &Journal, cases: &[Case]) {
    for case in cases {
        journal.clear();
        let (responses, _closed) = converse(server.addr, &case.bytes, Duration::from_millis(700));
        // Whatever PHP was going to run has run by now (the journal line is written before
        // the response is sent), but a request smuggled behind a slow one may lag.
        std::thread::sleep(Duration::from_millis(100));
        let name = case.name;
        let lines = journal.lines();
        assert!(
            journal.with_tag("SMUGGLED").is_empty(),
            "{name}: a smuggled request ran: {lines:?}"
        );
        let front = journal.with_tag("front");
        assert!(
            front.len() <= 1,
            "{name}: ran {} times: {lines:?}",
            front.len()
        );
        let first = responses.first();
        let served = first.is_some_and(|r| (200..300).contains(&r.status));
        let check_served = |len: usize| {
            let r = first.unwrap();
            assert_eq!(
                front.len(),
                1,
                "{name}: served but not journaled: {lines:?}"
            );
            assert_eq!(
                r.text(),
                format!("journal {}\n", front[0]),
                "{name}: response is not the one execution"
            );
            assert_eq!(
                front[0],
                format!("front POST {len} x"),
                "{name}: PHP saw another body"
            );
        };
        match case.expect {
            Expect::Served(len) => {
                assert!(served, "{name}: not served: {responses:?}");
                check_served(len);
            }
            Expect::Refused => {
                if let Some(r) = first {
                    assert!(
                        (400..600).contains(&r.status),
                        "{name}: answered {} {:?}",
                        r.status,
                        r.text()
                    );
                }
            }
            Expect::Either(len) => {
                if served {
                    check_served(len);
                } else if let Some(r) = first {
                    assert!((400..600).contains(&r.status), "{name}: {}", r.status);
                }
            }
        }
        // Anything answered after the first response is NEXT's answer, and NEXT ran as
        // often as it was answered.
        let next = journal.with_tag("next");
        let next_answers = responses
            .iter()
            .skip(1)
            .filter(|r| r.status == 200 && r.text().starts_with("journal next "))
            .count();
        assert_eq!(
            next.len(),
            next_answers,
            "{name}: {lines:?} / {responses:?}"
        );
        for r in responses.iter().skip(1) {
            assert!(
                r.status >= 400 || r.text().starts_with("journal next "),
                "{name}: unexpected second response {} {:?}",
                r.status,
                r.text()
            );
        }
        if case.bytes.ends_with(NEXT.as_bytes()) && served {
            assert_eq!(
                next.len(),
                1,
                "{name}: the request after it was lost: {lines:?}"
            );
        }
        server.assert_alive();
    }
}

#[test]
fn content_length_and_transfer_encoding_cannot_smuggle_a_request() {
    let (server, journal) = start(&[]);
    let s = SMUGGLED;
    let cases = vec![
        // Both framing headers: RFC 9112 §6.1, chunked wins and the connection is closed
        // after the response, so what a Content-Length-framing proxy saw as body can
        // never become a request here.
        post(
            "CL.TE",
            "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n",
            &format!("0\r\n\r\n{s}"),
            Expect::Either(0),
        ),
        post(
            "TE.CL",
            "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Either(5),
        ),
        post(
            "two differing Content-Lengths",
            "Content-Length: 5\r\nContent-Length: 6\r\n",
            &format!("hello!{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length list that disagrees",
            "Content-Length: 5, 6\r\n",
            &format!("hello!{s}"),
            Expect::Refused,
        ),
        post(
            "repeated equal Content-Length",
            "Content-Length: 5\r\nContent-Length: 5\r\n",
            "hello",
            Expect::Either(5),
        ),
        post(
            "Content-Length with leading zero",
            "Content-Length: 005\r\n",
            "hello",
            Expect::Served(5),
        ),
        post(
            "Content-Length +5",
            "Content-Length: +5\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length -1",
            "Content-Length: -1\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length 0x5",
            "Content-Length: 0x5\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length 5 5",
            "Content-Length: 5 5\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length 1e1",
            "Content-Length: 1e1\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "empty Content-Length",
            "Content-Length: \r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length overflowing u64",
            "Content-Length: 99999999999999999999999\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Content-Length u64::MAX",
            "Content-Length: 18446744073709551615\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        // Transfer-Encoding that does not end in chunked: the length cannot be known
        // (RFC 9112 §6.3), 400 and close.
        post(
            "Transfer-Encoding: chunked, identity",
            "Transfer-Encoding: chunked, identity\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding: xchunked",
            "Transfer-Encoding: xchunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding: chunked-false",
            "Transfer-Encoding: chunked-false\r\nContent-Length: 5\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        // Codings besides a final chunked: hyper would frame by the chunked and ignore
        // the rest, a front end may refuse the header and frame by Content-Length. 501
        // (RFC 9112 §6.1), and the connection closed.
        post(
            "Transfer-Encoding: identity, chunked",
            "Transfer-Encoding: identity, chunked\r\nContent-Length: 5\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding: gzip, chunked",
            "Transfer-Encoding: gzip, chunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding: CHUNKED",
            "Transfer-Encoding: CHUNKED\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{NEXT}"),
            Expect::Served(5),
        ),
        post(
            "Transfer-Encoding: chunked, chunked",
            "Transfer-Encoding: chunked, chunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding chunked on two lines",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        post(
            "space before the colon",
            "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n",
            &format!("hello{s}"),
            Expect::Refused,
        ),
        post(
            "Transfer-Encoding folded (obs-fold)",
            "Transfer-Encoding:\r\n chunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Either(5),
        ),
        post(
            "Transfer-Encoding hidden in a folded header",
            "X-A: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            &format!("hello{s}"),
            Expect::Either(5),
        ),
        post(
            "vertical tab before chunked",
            "Transfer-Encoding: \x0bchunked\r\n",
            &format!("5\r\nhello\r\n0\r\n\r\n{s}"),
            Expect::Refused,
        ),
        Case {
            name: "Transfer-Encoding in HTTP/1.0",
            bytes: format!(
                "POST /journal.php?tag=front HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\
                 Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n{s}"
            )
            .into_bytes(),
            expect: Expect::Either(5),
        },
    ];
    run_cases(&server, &journal, &cases);
}

#[test]
fn malformed_chunked_bodies_cannot_smuggle_a_request() {
    let (server, journal) = start(&[]);
    let long_extension = format!("5;{}\r\nhello\r\n0\r\n\r\n", "x".repeat(100_000));
    let long_trailer = format!("5\r\nhello\r\n0\r\nX-T: {}\r\n\r\n", "a".repeat(200_000));
    let cases = vec![
        chunked(
            "chunk size overflowing u64",
            "fffffffffffffffff1\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "negative chunk size",
            "-5\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "0x chunk size",
            "0x5\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "empty chunk size",
            "\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "no CRLF after chunk data",
            "5\r\nhelloXX0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "chunk longer than its size",
            "3\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "chunk size with a space inside",
            "5 5\r\nhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "chunk size with a trailing space",
            "5 \r\nhello\r\n0\r\n\r\n",
            Expect::Either(5),
        ),
        chunked("bare LF chunk lines", "5\nhello\n0\n\n", Expect::Either(5)),
        chunked(
            "bare CR after chunk size",
            "5\rhello\r\n0\r\n\r\n",
            Expect::Refused,
        ),
        chunked(
            "oversized chunk extension",
            &long_extension,
            Expect::Refused,
        ),
        chunked("oversized trailer", &long_trailer, Expect::Refused),
        // Valid extensions and trailers: served, and what follows is an ordinary
        // pipelined request that runs exactly once.
        post(
            "chunk extension",
            "Transfer-Encoding: chunked\r\n",
            &format!("5;name=value\r\nhello\r\n0\r\n\r\n{NEXT}"),
            Expect::Served(5),
        ),
        post(
            "quoted chunk extensions",
            "Transfer-Encoding: chunked\r\n",
            &format!("2;a=\"b;c\"\r\nhe\r\n3;x\r\nllo\r\n0;last\r\n\r\n{NEXT}"),
            Expect::Served(5),
        ),
        post(
            "trailer",
            "Transfer-Encoding: chunked\r\n",
            &format!("5\r\nhello\r\n0\r\nX-Trailer: v\r\n\r\n{NEXT}"),
            Expect::Served(5),
        ),
        post(
            "trailers posing as framing headers",
            "Transfer-Encoding: chunked\r\n",
            &format!(
                "5\r\nhello\r\n0\r\nContent-Length: 60\r\nTransfer-Encoding: chunked\r\n\r\n{NEXT}"
            ),
            Expect::Served(5),
        ),
    ];
    run_cases(&server, &journal, &cases);
}

// ---------------------------------------------------------------------------------------
// Request lines, line endings, versions
// ---------------------------------------------------------------------------------------

/// Sends a `GET /journal.php?tag=front` variant and returns its responses.
fn line_cases() -> Vec<Case> {
    let get = |name, text: String, expect| Case {
        name,
        bytes: text.into_bytes(),
        expect,
    };
    let s = SMUGGLED;
    vec![
        get(
            "bare LF line endings",
            format!("POST /journal.php?tag=front HTTP/1.1\nHost: x\nContent-Length: 5\n\nhello{NEXT}"),
            Expect::Either(5),
        ),
        get(
            "bare CR line endings",
            format!("POST /journal.php?tag=front HTTP/1.1\rHost: x\rContent-Length: 5\r\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "bare CR inside a header value",
            format!("POST /journal.php?tag=front HTTP/1.1\r\nHost: x\r\nX-A: a\rContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "method with a non-token byte",
            format!("PO(ST /journal.php?tag=front HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "method with a control byte",
            format!("PO\x01ST /journal.php?tag=front HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "method of 100 000 bytes",
            format!("{} /journal.php?tag=front HTTP/1.1\r\nHost: x\r\n\r\n{s}", "P".repeat(100_000)),
            Expect::Refused,
        ),
        get(
            "HTTP/1.2",
            format!("POST /journal.php?tag=front HTTP/1.2\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "HTTP/2.0 in an HTTP/1 request line",
            format!("POST /journal.php?tag=front HTTP/2.0\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "HTTP/0.9 (no version)",
            format!("GET /journal.php?tag=front\r\n\r\n{s}"),
            Expect::Refused,
        ),
        get(
            "lower-case version",
            format!("POST /journal.php?tag=front http/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "version with extra digits",
            format!("POST /journal.php?tag=front HTTP/01.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "two spaces in the request line",
            format!("POST  /journal.php?tag=front HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "NUL in the target",
            format!("POST /journal.php?tag=front\0 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
        get(
            "header line starting with whitespace before any header",
            format!("POST /journal.php?tag=front HTTP/1.1\r\n Host: x\r\nContent-Length: 5\r\n\r\nhello{s}"),
            Expect::Refused,
        ),
    ]
}

#[test]
fn malformed_request_lines_and_line_endings_are_refused() {
    let (server, journal) = start(&[]);
    run_cases(&server, &journal, &line_cases());
}

// ---------------------------------------------------------------------------------------
// Request-target forms
// ---------------------------------------------------------------------------------------

/// `$_SERVER` of one request to server.php, sent as `target` with `host_line`.
fn server_vars(server: &Server, target: &str, host_line: &str) -> (u16, serde_json::Value) {
    let (responses, _) = converse(
        server.addr,
        format!("GET {target} HTTP/1.1\r\n{host_line}Connection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(5),
    );
    let r = responses.first().expect("a response");
    let v = if r.status == 200 {
        serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["server"].clone()
    } else {
        serde_json::Value::Null
    };
    (r.status, v)
}

#[test]
fn host_is_required_on_http11_and_must_be_host_and_port() {
    // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host, with two, or with a value
    // that is not `uri-host [":" port]`; PHP never runs for them.
    let (server, journal) = start(&[]);
    let refused: &[(&str, &str)] = &[
        ("no Host", ""),
        (
            "no Host, other headers",
            "Accept: */*\r\nX-Host: a.test\r\n",
        ),
        ("two Host lines", "Host: a.test\r\nHost: a.test\r\n"),
        ("two Host lines, one empty", "Host: a.test\r\nHost:\r\n"),
        ("port of letters", "Host: a.test:http\r\n"),
        ("two ports", "Host: a.test:80:90\r\n"),
        ("bare IPv6", "Host: ::1\r\n"),
        ("unclosed IPv6", "Host: [::1\r\n"),
        ("junk after IPv6", "Host: [::1]x\r\n"),
        ("bad percent", "Host: a%zz.test\r\n"),
        ("userinfo", "Host: user@a.test\r\n"),
        ("space inside", "Host: a .test\r\n"),
        ("dot segments", "Host: ..\r\n"),
    ];
    for (what, host_line) in refused {
        journal.clear();
        let (responses, _) = converse(
            server.addr,
            format!("GET /journal.php?tag=host HTTP/1.1\r\n{host_line}Connection: close\r\n\r\n")
                .as_bytes(),
            Duration::from_secs(5),
        );
        assert_eq!(responses.first().map(|r| r.status), Some(400), "{what}");
        std::thread::sleep(Duration::from_millis(50));
        assert!(journal.lines().is_empty(), "{what}: {:?}", journal.lines());
    }
    // Valid values, and HTTP/1.0 without Host, are served with the name they give.
    for (host_line, name) in [
        ("Host: a.test:8080\r\n", "a.test"),
        ("Host: [::1]:8080\r\n", "[::1]"),
        ("Host: 127.0.0.1\r\n", "127.0.0.1"),
        ("Host: under_score.test\r\n", "under_score.test"),
    ] {
        let (status, v) = server_vars(&server, "/server.php", host_line);
        assert_eq!(status, 200, "{host_line:?}");
        assert_eq!(v["SERVER_NAME"], name, "{host_line:?}");
    }
    let (responses, _) = converse(
        server.addr,
        b"GET /journal.php?tag=old HTTP/1.0\r\n\r\n",
        Duration::from_secs(5),
    );
    assert_eq!(responses.first().map(|r| r.status), Some(200));
    assert_eq!(journal.with_tag("old").len(), 1);
    // HTTP/2 names the host in :authority and sends no Host: served.
    let mut h2 = H2::connect(server.addr, &[]);
    h2.get(1, "/hello.php").unwrap();
    let out = h2.collect(Duration::from_secs(5), |o| o.ended.contains(&1));
    assert!(out.ok(1), "{out:?}");
    server.assert_alive();
}

#[test]
fn absolute_form_target_names_the_host() {
    let (server, journal) = start(&[]);
    // RFC 9112 §3.2.2: the authority of an absolute-form target wins, Host is replaced.
    let (status, v) = server_vars(
        &server,
        "http://other.example/server.php?a=1",
        "Host: localhost\r\n",
    );
    assert_eq!(status, 200);
    assert_eq!(v["HTTP_HOST"], "other.example");
    assert_eq!(v["SERVER_NAME"], "other.example");
    assert_eq!(v["REQUEST_URI"], "/server.php?a=1");
    assert_eq!(v["SCRIPT_NAME"], "/server.php");
    // With a port, and with no Host header at all (allowed with absolute form).
    let (status, v) = server_vars(&server, "http://other.example:8080/server.php", "");
    assert_eq!(status, 200);
    assert_eq!(v["HTTP_HOST"], "other.example:8080");
    assert_eq!(v["SERVER_NAME"], "other.example");
    // Two Host headers, or a malformed one, are refused even when the target names the
    // host (RFC 9112 §3.2): a front end may have routed by either.
    for host_line in ["Host: a.test\r\nHost: b.test\r\n", "Host: a.test/evil\r\n"] {
        let (status, v) = server_vars(&server, "http://other.example/server.php", host_line);
        assert_eq!(status, 400, "{host_line:?}: {v}");
    }
    // Authorities that are no plain host are refused like such Host headers.
    for target in [
        "http://user:pw@other.example/server.php",
        "http://other.example%2f..%2f/server.php",
    ] {
        let (status, v) = server_vars(&server, target, "Host: localhost\r\n");
        assert_eq!(status, 400, "{target}: {v}");
    }
    // A journal request in absolute form runs once, with the target's host.
    let (responses, _) = converse(
        server.addr,
        b"GET http://other.example/journal.php?tag=abs HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_millis(700),
    );
    assert_eq!(responses.len(), 1);
    assert_eq!(journal.with_tag("abs"), vec!["abs GET 0 other.example"]);
    server.assert_alive();
}

#[test]
fn authority_and_asterisk_forms_never_run_php_or_open_a_tunnel() {
    let (server, journal) = start(&[]);
    let cases: &[(&str, &str)] = &[
        (
            "CONNECT",
            "CONNECT other.example:443 HTTP/1.1\r\nHost: other.example:443\r\n\r\n",
        ),
        (
            "CONNECT to our own port",
            "CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n",
        ),
        (
            "authority form with GET",
            "GET other.example:80 HTTP/1.1\r\nHost: other.example\r\n\r\n",
        ),
        // `*` is a target for OPTIONS only (options_asterisk_describes_the_server...).
        ("GET *", "GET * HTTP/1.1\r\nHost: x\r\n\r\n"),
        (
            "POST *",
            "POST * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        ),
    ];
    for (what, head) in cases {
        journal.clear();
        // After CONNECT the bytes are meant for a tunnel: they must not run here. After
        // the other forms they are an ordinary pipelined request.
        let after = if head.starts_with("CONNECT") {
            SMUGGLED
        } else {
            NEXT
        };
        let (responses, _) = converse(
            server.addr,
            format!("{head}{after}").as_bytes(),
            Duration::from_millis(700),
        );
        let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
        eprintln!("{what}: {statuses:?}");
        let first = responses.first();
        if let Some(r) = first {
            assert!(
                (400..600).contains(&r.status),
                "{what}: {} {:?}",
                r.status,
                r.text()
            );
        }
        if head.starts_with("CONNECT") {
            let r = first.expect("CONNECT answered");
            assert_eq!(r.status, 405, "{what}");
            assert_eq!(r.header("connection"), Some("close"), "{what}");
            assert_eq!(responses.len(), 1, "{what}: {responses:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            journal.with_tag("SMUGGLED").is_empty(),
            "{what}: {:?}",
            journal.lines()
        );
        // Only NEXT ever ran, once per answer it got.
        let answered_next = responses
            .iter()
            .filter(|r| r.text().starts_with("journal next"))
            .count();
        assert_eq!(
            journal.lines().len(),
            answered_next,
            "{what}: {:?}",
            journal.lines()
        );
        server.assert_alive();
    }
}

#[test]
fn options_asterisk_describes_the_server_without_running_php() {
    // RFC 9110 §9.3.7: `OPTIONS *` asks about the server, not a resource: 200, the methods
    // the server routes, no body, and no PHP (the document root's index is never run).
    let (server, journal) = start(&[]);
    for version in ["HTTP/1.1", "HTTP/1.0"] {
        journal.clear();
        let (responses, _) = converse(
            server.addr,
            format!("OPTIONS * {version}\r\nHost: x\r\n\r\n{NEXT}").as_bytes(),
            Duration::from_millis(700),
        );
        let r = responses.first().expect("OPTIONS * answered");
        assert_eq!(r.status, 200, "{version}: {:?}", r.text());
        assert_eq!(
            r.header("allow"),
            Some("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"),
            "{version}"
        );
        assert_eq!(r.header("content-length"), Some("0"), "{version}");
        assert!(r.body.is_empty(), "{version}");
        std::thread::sleep(Duration::from_millis(100));
        if version == "HTTP/1.1" {
            // The connection goes on: the pipelined request after it runs, once.
            assert_eq!(responses.len(), 2, "{responses:?}");
            assert!(responses[1].text().starts_with("journal next"));
            assert_eq!(journal.lines(), journal.with_tag("next"));
            assert_eq!(journal.lines().len(), 1);
        } else {
            assert!(journal.with_tag("next").len() <= 1);
        }
    }
    // Still HTTP/1.1: without a Host it is refused like any other request.
    let (responses, _) = converse(
        server.addr,
        b"OPTIONS * HTTP/1.1\r\n\r\n",
        Duration::from_millis(700),
    );
    assert_eq!(responses.first().map(|r| r.status), Some(400));
    // OPTIONS on a path is an ordinary request: PHP answers it.
    journal.clear();
    let (responses, _) = converse(
        server.addr,
        b"OPTIONS /journal.php?tag=opt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_millis(700),
    );
    assert_eq!(responses.first().map(|r| r.status), Some(200));
    assert_eq!(journal.with_tag("opt").len(), 1, "{:?}", journal.lines());
    // Over HTTP/2 (`:path *`), the same answer.
    journal.clear();
    let mut h2 = H2::connect(server.addr, &[]);
    // :method OPTIONS (literal), :scheme http (6), :authority (1), :path (4).
    let mut block = Vec::new();
    hpack_indexed_name(&mut block, 2, "OPTIONS");
    block.push(0x86);
    hpack_indexed_name(&mut block, 1, "localhost");
    hpack_indexed_name(&mut block, 4, "*");
    h2.send(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
        .unwrap();
    let out = h2.collect(Duration::from_secs(5), |o| o.ended.contains(&1));
    assert!(out.ok(1), "{out:?}");
    assert!(out.body.get(&1).is_none_or(|b| b.is_empty()), "{out:?}");
    assert!(journal.lines().is_empty(), "{:?}", journal.lines());
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------
// Bodies that end early, pipelining
// ---------------------------------------------------------------------------------------

#[test]
fn body_shorter_than_content_length_then_close_is_not_served() {
    let (server, journal) = start(&[]);
    for (what, framing, body) in [
        ("Content-Length", "Content-Length: 100\r\n", "hello"),
        ("chunked", "Transfer-Encoding: chunked\r\n", "64\r\nhello"),
        (
            "chunked, no last chunk",
            "Transfer-Encoding: chunked\r\n",
            "5\r\nhello\r\n",
        ),
    ] {
        journal.clear();
        let mut stream = connect(server.addr);
        write!(
            stream,
            "POST /journal.php?tag=short HTTP/1.1\r\nHost: x\r\n{framing}\r\n{body}"
        )
        .unwrap();
        stream.shutdown(Shutdown::Write).unwrap();
        let (bytes, closed) = read_quietly(&mut stream, Duration::from_secs(5));
        assert!(closed, "{what}: connection left open");
        if let Some(r) = parse_all(&bytes).first() {
            assert!(r.status >= 400, "{what}: {} {:?}", r.status, r.text());
        }
        // If PHP ran at all, it saw a failed read, not a complete 5-byte body it answered.
        std::thread::sleep(Duration::from_millis(200));
        for line in journal.with_tag("short") {
            assert!(!line.contains(" 100 "), "{what}: {line}");
        }
        server.assert_alive();
    }
}

#[test]
fn pipelined_requests_run_once_each_and_answer_in_order() {
    let (server, journal) = start(&[]);
    let mut batch = String::new();
    for i in 0..8 {
        if i % 2 == 0 {
            batch.push_str(&format!(
                "GET /journal.php?tag=p{i} HTTP/1.1\r\nHost: x\r\n\r\n"
            ));
        } else {
            batch.push_str(&format!(
                "POST /journal.php?tag=p{i} HTTP/1.1\r\nHost: x\r\nContent-Length: {i}\r\n\r\n{}",
                "b".repeat(i)
            ));
        }
    }
    batch.push_str("GET /journal.php?tag=p8 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let (responses, closed) = converse(server.addr, batch.as_bytes(), Duration::from_secs(10));
    assert!(closed);
    assert_eq!(responses.len(), 9, "{responses:?}");
    for (i, r) in responses.iter().enumerate() {
        let method = if i % 2 == 1 { "POST" } else { "GET" };
        let len = if i % 2 == 1 { i } else { 0 };
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("journal p{i} {method} {len} x\n"));
        assert_eq!(journal.with_tag(&format!("p{i}")).len(), 1, "p{i}");
    }
    assert_eq!(journal.lines().len(), 9);
}

// ---------------------------------------------------------------------------------------
// Slowloris: head, body, idle connections
// ---------------------------------------------------------------------------------------

/// Writes `bytes` one at a time, `every` apart, until a write fails or the server answers
/// or closes the connection; returns when that happened and what the server had sent by
/// then (None if everything was written).
fn trickle(stream: &mut TcpStream, bytes: &[u8], every: Duration) -> Option<(Duration, Vec<u8>)> {
    let started = Instant::now();
    let mut probe = [0u8; 4096];
    let mut answered = Vec::new();
    let mut cut = None;
    stream.set_nonblocking(true).unwrap();
    for &b in bytes {
        if stream.write_all(&[b]).is_err() {
            cut = Some(started.elapsed());
            break;
        }
        std::thread::sleep(every);
        // A close (EOF) or a response shows up as readable.
        match stream.read(&mut probe) {
            Ok(n) => {
                answered.extend_from_slice(&probe[..n]);
                cut = Some(started.elapsed());
                break;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => {
                cut = Some(started.elapsed());
                break;
            }
        }
    }
    stream.set_nonblocking(false).unwrap();
    cut.map(|t| (t, answered))
}

#[test]
fn head_trickled_one_byte_a_second_is_cut_at_the_header_timeout() {
    let (server, journal) = start(&["--header-timeout-ms", "2500"]);
    let mut slow = connect(server.addr);
    let request =
        b"GET /journal.php?tag=slowhead HTTP/1.1\r\nHost: x\r\nX-Padding: abcdefghij\r\n\r\n";
    let (cut, _) = trickle(&mut slow, request, Duration::from_secs(1))
        .expect("the whole head went through at one byte a second");
    assert!(
        cut >= Duration::from_millis(2000) && cut < Duration::from_millis(5000),
        "cut after {cut:?}"
    );
    server.assert_alive();
    assert!(journal.with_tag("slowhead").is_empty());
}

#[test]
fn body_trickled_slowly_is_cut_and_frees_the_php_thread() {
    // One PHP thread: a trickled body holds it in read_post until the body timeout.
    let (server, journal) = start(&[
        "--threads",
        "1",
        "--body-timeout-ms",
        "1500",
        "--max-wait-ms",
        "20000",
    ]);
    let mut slow = connect(server.addr);
    slow.write_all(
        b"POST /journal.php?tag=slowbody HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
    )
    .unwrap();
    let started = Instant::now();
    // Meanwhile another client waits for the only thread.
    let addr = server.addr;
    let other = std::thread::spawn(move || {
        let (responses, _) = converse(
            addr,
            b"GET /journal.php?tag=other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(25),
        );
        (responses.first().map(|r| r.status), started.elapsed())
    });
    let (cut, mut bytes) = trickle(&mut slow, &[b'a'; 20], Duration::from_secs(3))
        .expect("a body trickled at one byte per 3 s was taken whole");
    assert!(cut < Duration::from_secs(8), "cut after {cut:?}");
    bytes.extend(read_quietly(&mut slow, Duration::from_secs(2)).0);
    if let Some(r) = parse_all(&bytes).first() {
        assert_eq!(r.status, 408, "{:?}", r.text());
    }
    let (status, waited) = other.join().unwrap();
    assert_eq!(status, Some(200));
    assert!(
        waited < Duration::from_secs(8),
        "the other client waited {waited:?}"
    );
    for line in journal.with_tag("slowbody") {
        assert!(
            !line.contains(" 100 "),
            "trickled body passed off as complete: {line}"
        );
    }
    server.assert_alive();
}

#[test]
fn thousands_of_idle_connections_neither_block_new_clients_nor_grow_memory() {
    let (server, _journal) = start(&["--header-timeout-ms", "6000"]);
    server.assert_alive();
    let before = server.rss_kib();
    let mut idle = Vec::with_capacity(3000);
    for i in 0..3000 {
        let mut s = TcpStream::connect_timeout(&server.addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
        // A third say nothing, a third send part of a head, a third a prefix of the
        // HTTP/2 preface.
        match i % 3 {
            0 => {}
            1 => s
                .write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n")
                .unwrap(),
            _ => s.write_all(b"PRI * HTTP/2.0\r\n").unwrap(),
        }
        idle.push(s);
    }
    let opened = Instant::now();
    // New clients are served while all of them are open.
    for _ in 0..5 {
        let t = Instant::now();
        server.assert_alive();
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "served in {:?}",
            t.elapsed()
        );
    }
    let during = server.rss_kib();
    eprintln!("RSS before {before} KiB, with 3000 idle connections {during} KiB");
    assert!(
        during < before + 64 * 1024,
        "3000 idle connections cost {} KiB",
        during - before
    );
    // All of them are closed at the header timeout, not kept.
    for (i, s) in idle.iter_mut().enumerate() {
        let left = Duration::from_secs(15).saturating_sub(opened.elapsed());
        let (_, closed) = read_quietly(s, left.max(Duration::from_millis(10)));
        assert!(
            closed,
            "connection {i} still open {:?} after opening",
            opened.elapsed()
        );
    }
    drop(idle);
    server.assert_alive();
}

#[test]
fn connections_over_max_connections_are_closed_and_slots_come_back() {
    // From the TOML config, as operators set it.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ferrophp.toml");
    std::fs::write(&config, "max_connections = 50\nheader_timeout_ms = 1500\n").unwrap();
    let (server, _journal) = start(&["--config", config.to_str().unwrap()]);
    let mut held: Vec<TcpStream> = (0..50).map(|_| connect(server.addr)).collect();
    // Give the server time to accept them all.
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = connect(server.addr);
    let _ = extra.write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n");
    let (bytes, closed) = read_quietly(&mut extra, Duration::from_secs(1));
    assert!(
        closed && bytes.is_empty(),
        "connection 51 was served: {bytes:?}"
    );
    // The held connections time out (header timeout), and their slots serve again.
    for s in held.iter_mut() {
        let (_, closed) = read_quietly(s, Duration::from_secs(5));
        assert!(closed);
    }
    assert!(common::serves_hello_again(
        server.addr,
        Duration::from_secs(3)
    ));
    server.assert_alive();
}

#[test]
fn zero_timeouts_and_connection_limits_are_refused_at_start() {
    for flag in [
        "--body-timeout-ms",
        "--send-timeout-ms",
        "--idle-timeout-ms",
        "--max-connections",
    ] {
        let run = common::serve_until_exit(&security_root(), &[flag, "0"], Duration::from_secs(30));
        assert_eq!(
            run.status.and_then(|s| s.code()),
            Some(2),
            "{flag}: {run:?}"
        );
        assert!(run.stderr.contains("at least 1"), "{flag}: {}", run.stderr);
    }
}

#[test]
fn tls_connections_count_against_max_connections_and_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(dir.path());
    let (server, _journal) = start(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--max-connections",
        "20",
        "--header-timeout-ms",
        "1500",
    ]);
    // Twenty connections that never start the TLS handshake take every slot.
    let mut held: Vec<TcpStream> = (0..20).map(|_| connect(server.addr)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = connect(server.addr);
    let (bytes, closed) = read_quietly(&mut extra, Duration::from_secs(1));
    assert!(closed && bytes.is_empty(), "connection 21 was kept");
    // The handshake timeout frees them, and HTTP/2 over TLS is served again.
    for s in held.iter_mut() {
        let (_, closed) = read_quietly(s, Duration::from_secs(5));
        assert!(closed, "a silent TLS connection was kept");
    }
    let client = client_builder().build().unwrap();
    assert!(common::wait_until(Duration::from_secs(3), || {
        client
            .get(server.url("/hello.php"))
            .send()
            .is_ok_and(|r| r.version() == reqwest::Version::HTTP_2 && r.status() == 200)
    }));
}

#[test]
fn client_that_never_reads_a_big_response_does_not_hold_a_php_thread() {
    let (server, journal) = start(&[
        "--threads",
        "1",
        "--send-timeout-ms",
        "1500",
        "--max-wait-ms",
        "20000",
    ]);
    let mut stuck = connect(server.addr);
    // 256 MiB: far more than the socket buffers on both sides hold.
    stuck
        .write_all(b"GET /output.php?tag=stuck&mb=256 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    server.assert_alive();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the next request waited {:?} for the thread",
        started.elapsed()
    );
    assert!(common::wait_until(Duration::from_secs(5), || !journal
        .with_tag("stuck")
        .is_empty()));
    assert_eq!(journal.with_tag("stuck"), vec!["stuck output 0 1"]);
    // The stuck response was cut, not ended as if complete.
    let (bytes, closed) = read_quietly(&mut stuck, Duration::from_secs(10));
    assert!(closed, "stuck connection kept open");
    assert!(bytes.len() < 256 << 20);
    drop(stuck);
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------
// HTTP/2, frame by frame
// ---------------------------------------------------------------------------------------

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const CANCEL: u32 = 0x8;
const REFUSED_STREAM: u32 = 0x7;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK integer with an N-bit prefix (RFC 7541 §5.1), `first` holding the flag bits.
fn hpack_int(out: &mut Vec<u8>, first: u8, prefix_bits: u32, mut value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// A literal header field without indexing, new name, no Huffman coding.
fn hpack_literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    hpack_int(out, 0, 7, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 0, 7, value.len());
    out.extend_from_slice(value.as_bytes());
}

/// A literal field without indexing whose name is static-table entry `index`.
fn hpack_indexed_name(out: &mut Vec<u8>, index: usize, value: &str) {
    hpack_int(out, 0x00, 4, index);
    hpack_int(out, 0, 7, value.len());
    out.extend_from_slice(value.as_bytes());
}

/// The header block of `GET path` (or POST) with `:authority localhost`.
fn request_block(method_post: bool, path: &str) -> Vec<u8> {
    // Static table: 2 = :method GET, 3 = :method POST, 6 = :scheme http, 1 = :authority,
    // 4 = :path.
    let mut out = vec![if method_post { 0x83 } else { 0x82 }, 0x86];
    hpack_indexed_name(&mut out, 1, "localhost");
    hpack_indexed_name(&mut out, 4, path);
    out
}

#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// One HTTP/2 cleartext (prior knowledge) connection written by hand.
struct H2 {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl H2 {
    /// Sends the preface and our SETTINGS.
    fn connect(addr: SocketAddr, settings: &[(u16, u32)]) -> H2 {
        let stream = connect(addr);
        let _ = stream.set_nodelay(true);
        let mut h2 = H2 {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        };
        let mut payload = Vec::new();
        for (id, value) in settings {
            payload.extend_from_slice(&id.to_be_bytes());
            payload.extend_from_slice(&value.to_be_bytes());
        }
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend(frame(SETTINGS, 0, 0, &payload));
        h2.stream.write_all(&hello).unwrap();
        h2
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    fn get(&mut self, id: u32, path: &str) -> io::Result<()> {
        self.send(&frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            id,
            &request_block(false, path),
        ))
    }

    /// Reads one frame, acknowledging the server's SETTINGS on the way.
    fn read_frame(&mut self) -> io::Result<Frame> {
        let mut head = [0u8; 9];
        self.reader.read_exact(&mut head)?;
        let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
        let mut payload = vec![0u8; len];
        self.reader.read_exact(&mut payload)?;
        let f = Frame {
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
            payload,
        };
        if f.kind == SETTINGS && f.flags & ACK == 0 {
            let _ = self.send(&frame(SETTINGS, ACK, 0, &[]));
        }
        Ok(f)
    }

    /// Reads frames for up to `limit` (or until the connection ends / `done` says so).
    fn collect(&mut self, limit: Duration, mut done: impl FnMut(&Outcome) -> bool) -> Outcome {
        let deadline = Instant::now() + limit;
        let mut out = Outcome::default();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || done(&out) {
                return out;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.read_frame() {
                Ok(f) => out.add(f),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return out
                }
                Err(_) => {
                    out.closed = true;
                    return out;
                }
            }
        }
    }
}

/// What came back on an HTTP/2 connection.
#[derive(Default)]
struct Outcome {
    /// Per stream: the first byte of the response header block (0x88 is `:status 200`).
    status_byte: HashMap<u32, u8>,
    body: HashMap<u32, Vec<u8>>,
    ended: Vec<u32>,
    resets: Vec<(u32, u32)>,
    goaway: Option<u32>,
    closed: bool,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body: HashMap<u32, usize> = self.body.iter().map(|(k, v)| (*k, v.len())).collect();
        f.debug_struct("Outcome")
            .field("status_byte", &self.status_byte)
            .field("body_lengths", &body)
            .field("ended", &self.ended)
            .field("resets", &self.resets)
            .field("goaway", &self.goaway)
            .field("closed", &self.closed)
            .finish()
    }
}

impl Outcome {
    fn add(&mut self, f: Frame) {
        match f.kind {
            HEADERS => {
                if let Some(&b) = f.payload.first() {
                    self.status_byte.entry(f.stream).or_insert(b);
                }
                if f.flags & END_STREAM != 0 {
                    self.ended.push(f.stream);
                }
            }
            DATA => {
                self.body.entry(f.stream).or_default().extend(&f.payload);
                if f.flags & END_STREAM != 0 {
                    self.ended.push(f.stream);
                }
            }
            RST_STREAM => {
                let code = u32::from_be_bytes(f.payload[..4].try_into().unwrap());
                self.resets.push((f.stream, code));
            }
            GOAWAY => {
                self.goaway = Some(u32::from_be_bytes(f.payload[4..8].try_into().unwrap()));
            }
            _ => {}
        }
    }

    fn ok(&self, stream: u32) -> bool {
        self.status_byte.get(&stream) == Some(&0x88) && self.ended.contains(&stream)
    }
}

/// The server still answers HTTP/2 (a new connection) and HTTP/1.1.
fn assert_alive_both(server: &Server) {
    let client = client_builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let r = client.get(server.url("/hello.php")).send().unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().unwrap(), "Hello, World!");
    server.assert_alive();
}

#[test]
fn h2_hand_written_client_works() {
    // The frame helpers themselves, against a request that must succeed.
    let (server, journal) = start(&[]);
    let mut h2 = H2::connect(server.addr, &[]);
    h2.get(1, "/journal.php?tag=h2").unwrap();
    let out = h2.collect(Duration::from_secs(10), |o| o.ended.contains(&1));
    assert!(out.ok(1), "{out:?}");
    assert_eq!(out.body[&1], b"journal h2 GET 0 localhost\n");
    assert_eq!(journal.with_tag("h2").len(), 1);
}

#[test]
fn h2_rapid_reset_is_bounded_and_the_server_stays_responsive() {
    let (server, journal) = start(&[]);
    let mut h2 = H2::connect(server.addr, &[]);
    let mut reader = H2 {
        stream: h2.stream.try_clone().unwrap(),
        reader: BufReader::new(h2.stream.try_clone().unwrap()),
    };
    let collector =
        std::thread::spawn(move || reader.collect(Duration::from_secs(20), |o| o.closed));
    let started = Instant::now();
    let block = request_block(false, "/journal.php?tag=rr");
    let mut sent = 0u32;
    let mut server_cut = false;
    'flood: for batch in 0..50u32 {
        let mut bytes = Vec::new();
        for i in 0..100u32 {
            let id = 1 + 2 * (batch * 100 + i);
            bytes.extend(frame(HEADERS, END_STREAM | END_HEADERS, id, &block));
            bytes.extend(frame(RST_STREAM, 0, id, &CANCEL.to_be_bytes()));
        }
        if h2.send(&bytes).is_err() {
            server_cut = true;
            break 'flood;
        }
        sent += 100;
    }
    // While (or after) the flood, others are served.
    let t = Instant::now();
    assert_alive_both(&server);
    let served_in = t.elapsed();
    let _ = h2.stream.shutdown(Shutdown::Both);
    let out = collector.join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let ran = journal.with_tag("rr").len();
    eprintln!(
        "rapid reset: {sent} streams sent in {:?}, GOAWAY {:?}, PHP ran {ran}, others served in {served_in:?}",
        started.elapsed(),
        out.goaway
    );
    // The connection is told off (GOAWAY) or cut long before 5000 streams.
    assert!(
        out.goaway.is_some() || server_cut,
        "all {sent} streams taken: {out:?}"
    );
    assert!(ran < 500, "{ran} of {sent} reset streams ran PHP");
    assert!(served_in < Duration::from_secs(3));
}

#[test]
fn h2_continuation_flood_is_cut() {
    let (server, journal) = start(&[]);
    for (what, piece) in [
        ("16 KiB of headers per frame", {
            let mut b = Vec::new();
            while b.len() < 16_000 {
                hpack_literal(&mut b, "x-flood", &"a".repeat(200));
            }
            b
        }),
        ("empty frames", Vec::new()),
    ] {
        let rss_before = server.rss_kib();
        let mut h2 = H2::connect(server.addr, &[]);
        h2.send(&frame(
            HEADERS,
            0,
            1,
            &request_block(false, "/journal.php?tag=cont"),
        ))
        .unwrap();
        let one = frame(CONTINUATION, 0, 1, &piece);
        let mut batch = Vec::new();
        while batch.len() < 256 * 1024 {
            batch.extend_from_slice(&one);
        }
        let started = Instant::now();
        let mut sent = 0usize;
        let mut cut = false;
        h2.stream
            .set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // Up to 64 MiB of CONTINUATION frames, or 20 s.
        while sent < 64 << 20 && started.elapsed() < Duration::from_secs(20) {
            match h2.send(&batch) {
                Ok(()) => {}
                // The server stopped reading without closing: not a cut, the check
                // below decides.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                Err(_) => {
                    cut = true;
                    break;
                }
            }
            sent += batch.len();
        }
        let out = h2.collect(Duration::from_secs(5), |o| o.goaway.is_some() || o.closed);
        eprintln!(
            "CONTINUATION flood ({what}): {sent} bytes accepted in {:?}, cut {cut}, {out:?}",
            started.elapsed()
        );
        assert!(
            cut || out.goaway.is_some() || out.closed,
            "{what}: {sent} bytes of CONTINUATION taken without closing"
        );
        assert!(!out.ok(1), "{what}: the flooded request was served");
        let grown = server.rss_kib().saturating_sub(rss_before);
        assert!(grown < 64 * 1024, "{what}: RSS grew {grown} KiB");
        assert!(journal.with_tag("cont").is_empty());
        assert_alive_both(&server);
    }
}

#[test]
fn h2_oversized_frames_and_header_lists_are_refused() {
    let (server, journal) = start(&["--max-header-size", "16384"]);
    // A DATA frame over SETTINGS_MAX_FRAME_SIZE (16 384 by default): FRAME_SIZE_ERROR.
    let mut h2 = H2::connect(server.addr, &[]);
    h2.send(&frame(
        HEADERS,
        END_HEADERS,
        1,
        &request_block(true, "/journal.php?tag=big"),
    ))
    .unwrap();
    let _ = h2.send(&frame(DATA, END_STREAM, 1, &vec![b'a'; 16_385]));
    let out = h2.collect(Duration::from_secs(5), |o| o.goaway.is_some() || o.closed);
    assert!(
        out.goaway.is_some() || out.closed || out.resets.iter().any(|r| r.0 == 1),
        "{out:?}"
    );
    assert!(!out.ok(1), "{out:?}");

    // A frame header announcing 16 MiB, and then nothing: refused from the header alone.
    let mut h2 = H2::connect(server.addr, &[]);
    let mut head = frame(HEADERS, END_HEADERS | END_STREAM, 1, &[]);
    head[0] = 0xff;
    head[1] = 0xff;
    head[2] = 0xff;
    h2.send(&head).unwrap();
    let out = h2.collect(Duration::from_secs(5), |o| o.goaway.is_some() || o.closed);
    assert!(out.goaway.is_some() || out.closed, "{out:?}");

    // A header list over max_header_list_size (16 KiB here): one 64 KiB header value
    // in CONTINUATION frames. The request must not run.
    let mut block = request_block(false, "/journal.php?tag=bighead");
    hpack_literal(&mut block, "x-big", &"b".repeat(64 * 1024));
    let mut h2 = H2::connect(server.addr, &[]);
    let mut bytes = Vec::new();
    let pieces: Vec<&[u8]> = block.chunks(16_000).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let last = i + 1 == pieces.len();
        let flags = if last { END_HEADERS } else { 0 } | if i == 0 { END_STREAM } else { 0 };
        let kind = if i == 0 { HEADERS } else { CONTINUATION };
        bytes.extend(frame(kind, flags, 1, piece));
    }
    let _ = h2.send(&bytes);
    let out = h2.collect(Duration::from_secs(5), |o| {
        o.goaway.is_some() || o.closed || !o.resets.is_empty() || o.ended.contains(&1)
    });
    assert!(!out.ok(1), "an oversized header list was served: {out:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(journal.with_tag("bighead").is_empty());
    // hyper hands the first request to PHP on its HEADERS frame, so PHP may already be
    // running when the oversized DATA frame ends the connection (a race the test cannot
    // fix). What must hold is what holds for any body that breaks off: PHP never saw its
    // bytes, and the client got no answer (above).
    let big = journal.with_tag("big");
    assert!(
        big.iter().all(|l| l.split(' ').nth(2) == Some("0")),
        "PHP read the oversized frame's bytes: {big:?}"
    );
    assert_alive_both(&server);
}

#[test]
fn h2_window_never_opened_does_not_hold_a_php_thread() {
    let (server, journal) = start(&[
        "--idle-timeout-ms",
        "2000",
        "--threads",
        "1",
        "--send-timeout-ms",
        "1500",
        "--max-wait-ms",
        "20000",
    ]);
    // Stream windows of 0: the server may send headers but no DATA until a
    // WINDOW_UPDATE, which never comes.
    let mut h2 = H2::connect(server.addr, &[(SETTINGS_INITIAL_WINDOW_SIZE, 0)]);
    h2.get(1, "/output.php?tag=window&mb=8").unwrap();
    let out = h2.collect(Duration::from_millis(500), |_| false);
    assert!(
        out.body.get(&1).is_none_or(Vec::is_empty),
        "DATA beyond the window"
    );
    let started = Instant::now();
    // Other requests, over both protocols, get the only PHP thread back.
    assert_alive_both(&server);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "other requests waited {:?}",
        started.elapsed()
    );
    assert!(common::wait_until(Duration::from_secs(5), || !journal
        .with_tag("window")
        .is_empty()));
    assert_eq!(journal.with_tag("window"), vec!["window output 0 1"]);
    // The stalled stream never ends as if complete, and once PHP gave up it no longer
    // counts as a request in flight: the idle timeout closes the connection and frees
    // the output it still held (otherwise it stays open as long as the client likes).
    let out = h2.collect(Duration::from_secs(8), |o| o.closed || o.ended.contains(&1));
    assert!(!out.ended.contains(&1), "{out:?}");
    assert!(out.closed, "stalled connection kept open: {out:?}");
    assert_alive_both(&server);
}

#[test]
fn h2_too_many_concurrent_streams_are_refused_and_nothing_accepted_is_lost() {
    let (server, journal) = start(&[]);
    let mut h2 = H2::connect(server.addr, &[]);
    // Let the server's SETTINGS (SETTINGS_MAX_CONCURRENT_STREAMS) arrive and be acked.
    let _ = h2.collect(Duration::from_millis(300), |_| false);
    let mut bytes = Vec::new();
    let total = 500u32;
    for i in 0..total {
        let id = 1 + 2 * i;
        bytes.extend(frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            id,
            &request_block(false, &format!("/journal.php?tag=s{id}")),
        ));
    }
    h2.send(&bytes).unwrap();
    let out = h2.collect(Duration::from_secs(30), |o| {
        o.ended.len() + o.resets.len() >= total as usize || o.closed || o.goaway.is_some()
    });
    let refused = out.resets.iter().filter(|r| r.1 == REFUSED_STREAM).count();
    let served: Vec<u32> = (0..total)
        .map(|i| 1 + 2 * i)
        .filter(|id| out.ok(*id))
        .collect();
    eprintln!(
        "{total} streams at once: {} served, {refused} refused, other resets {:?}, GOAWAY {:?}",
        served.len(),
        out.resets
            .iter()
            .filter(|r| r.1 != REFUSED_STREAM)
            .collect::<Vec<_>>(),
        out.goaway
    );
    assert!(
        refused > 0 || out.goaway.is_some(),
        "all {total} streams taken at once"
    );
    std::thread::sleep(Duration::from_millis(300));
    // Every served stream ran once and answered its own execution; no refused one ran.
    for id in 1..(2 * total) {
        if id % 2 == 0 {
            continue;
        }
        let ran = journal.with_tag(&format!("s{id}"));
        if served.contains(&id) {
            assert_eq!(ran.len(), 1, "stream {id}");
            assert_eq!(out.body[&id], format!("journal {}\n", ran[0]).into_bytes());
        } else if out
            .resets
            .iter()
            .any(|r| r.0 == id && r.1 == REFUSED_STREAM)
        {
            assert!(ran.is_empty(), "refused stream {id} ran");
        }
    }
    assert_alive_both(&server);
}

#[test]
fn h2_connection_kept_busy_without_requests_is_closed_at_the_idle_timeout() {
    let (server, _journal) = start(&["--idle-timeout-ms", "1500"]);
    let mut h2 = H2::connect(server.addr, &[]);
    h2.get(1, "/hello.php").unwrap();
    let out = h2.collect(Duration::from_secs(5), |o| o.ended.contains(&1));
    assert!(out.ok(1), "{out:?}");
    // Then only PINGs, every 300 ms: the connection does not count as busy.
    let started = Instant::now();
    let mut closed_after = None;
    while started.elapsed() < Duration::from_secs(8) {
        if h2.send(&frame(PING, 0, 0, &[0; 8])).is_err() {
            closed_after = Some(started.elapsed());
            break;
        }
        let out = h2.collect(Duration::from_millis(300), |o| {
            o.closed || o.goaway.is_some()
        });
        if out.closed || out.goaway.is_some() {
            closed_after = Some(started.elapsed());
            break;
        }
    }
    let closed_after = closed_after.expect("idle HTTP/2 connection open after 8 s");
    assert!(
        closed_after < Duration::from_secs(4),
        "closed after {closed_after:?}"
    );

    // A request in flight longer than the idle timeout is not cut.
    let mut h2 = H2::connect(server.addr, &[]);
    h2.get(1, "/sleep.php?ms=3000").unwrap();
    let out = h2.collect(Duration::from_secs(10), |o| {
        o.ended.contains(&1) || o.closed
    });
    assert!(out.ok(1), "{out:?}");
    assert_eq!(out.body[&1], b"slept");
    // Nor a slow download: WINDOW_UPDATE-paced, never idle for the timeout.
    assert_alive_both(&server);
}

#[test]
fn h2_window_update_paced_download_survives_the_idle_timeout() {
    let (server, journal) = start(&["--idle-timeout-ms", "1000", "--send-timeout-ms", "5000"]);
    let mut h2 = H2::connect(server.addr, &[(SETTINGS_INITIAL_WINDOW_SIZE, 256 * 1024)]);
    // The connection window starts at 64 KiB whatever SETTINGS say: open it to 256 KiB.
    h2.send(&frame(WINDOW_UPDATE, 0, 0, &(192u32 * 1024).to_be_bytes()))
        .unwrap();
    h2.get(1, "/output.php?tag=paced&mb=2").unwrap();
    let started = Instant::now();
    let mut received = 0usize;
    let mut ended = false;
    while started.elapsed() < Duration::from_secs(20) && !ended {
        let out = h2.collect(Duration::from_millis(400), |o| o.ended.contains(&1));
        let got = out.body.get(&1).map_or(0, Vec::len);
        received += got;
        ended = out.ended.contains(&1);
        assert!(
            ended || !out.closed && out.goaway.is_none(),
            "cut after {received} bytes: {out:?}"
        );
        if got > 0 && !ended {
            // Open the windows by what was consumed, slowly: 2 MiB take several idle
            // timeouts.
            let inc = (got as u32).to_be_bytes();
            h2.send(&frame(WINDOW_UPDATE, 0, 0, &inc)).unwrap();
            h2.send(&frame(WINDOW_UPDATE, 0, 1, &inc)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(ended, "received {received} bytes");
    assert_eq!(received, 2 << 20);
    eprintln!("paced download of 2 MiB took {:?}", started.elapsed());
    assert!(started.elapsed() > Duration::from_secs(2));
    assert_eq!(journal.with_tag("paced"), vec!["paced output 1 0"]);
}
