//! Static files of several MiB over real TCP: exact bytes, ranges that cross the server's
//! read chunks (256 KiB, so every MiB edge is one), HEAD and keep-alive over HTTP/1.1, h2c, and TLS (HTTP/1.1 and h2
//! through ALPN); and a file truncated while it is being served, which must cut that
//! response (never complete it with wrong bytes) and leave the server serving.

mod common;

use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

use common::{client_builder, http_root, read_head, KeepAlive, Server};

const MIB: usize = 1024 * 1024;

/// Bytes that differ at every offset a misplaced chunk could land on.
fn pattern(len: usize, salt: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_add(salt).wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// A document root with hello.php and `files`.
fn root_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(http_root().join("hello.php"), tmp.path().join("hello.php")).unwrap();
    for (name, bytes) in files {
        std::fs::write(tmp.path().join(name), bytes).unwrap();
    }
    tmp
}

/// (range header, first byte, last byte) around and across chunk edges.
fn ranges(len: usize) -> Vec<(String, usize, usize)> {
    vec![
        (format!("bytes={}-{}", MIB - 10, MIB + 9), MIB - 10, MIB + 9),
        (format!("bytes={}-", 2 * MIB), 2 * MIB, len - 1),
        (format!("bytes=1-{}", 3 * MIB), 1, 3 * MIB),
        ("bytes=-5".to_owned(), len - 5, len - 1),
        (format!("bytes={}-{}", MIB, 2 * MIB - 1), MIB, 2 * MIB - 1),
    ]
}

#[test]
fn multi_mib_file_over_http1_keep_alive() {
    let len = 3 * MIB + 12_345;
    let data = pattern(len, 1);
    let tmp = root_with(&[("big.bin", &data)]);
    let server = Server::start(tmp.path(), &[]);

    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for round in 0..2 {
        let r = conn.get("/big.bin").unwrap();
        assert_eq!(r.status, 200, "round {round}");
        assert_eq!(r.header("content-length"), Some(len.to_string().as_str()));
        assert!(r.body == data, "round {round}: body differs");
    }
    for (range, first, last) in ranges(len) {
        let request = format!("GET /big.bin HTTP/1.1\r\nHost: localhost\r\nRange: {range}\r\n\r\n");
        let r = conn.send(request.as_bytes()).unwrap();
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes {first}-{last}/{len}").as_str()),
            "{range}"
        );
        assert!(r.body == data[first..=last], "{range}: body differs");
    }
    // HEAD: the GET's headers and nothing after them.
    let raw = common::exchange(
        server.addr,
        b"HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        common::IO_TIMEOUT,
    )
    .unwrap();
    let mut reader = BufReader::new(raw.as_slice());
    let (status, headers) = read_head(&mut reader).unwrap();
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-length".to_owned(), len.to_string())));
    let mut after = Vec::new();
    reader.read_to_end(&mut after).unwrap();
    assert!(after.is_empty(), "HEAD sent {} body bytes", after.len());
    let r = conn.get("/hello.php").unwrap();
    assert_eq!(r.body, b"Hello, World!");
}

#[test]
fn multi_mib_file_over_h2c_and_tls() {
    let len = 3 * MIB + 777;
    let data = pattern(len, 2);
    let tmp = root_with(&[("big.bin", &data)]);
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(certs.path());
    let plain = Server::start(tmp.path(), &[]);
    let tls = Server::start(
        tmp.path(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let h2c = client_builder().http2_prior_knowledge().build().unwrap();
    let h2 = client_builder().use_rustls_tls().build().unwrap();
    let tls_h1 = client_builder()
        .use_rustls_tls()
        .http1_only()
        .build()
        .unwrap();
    for (what, client, server, version) in [
        ("h2c", &h2c, &plain, reqwest::Version::HTTP_2),
        ("h2 over TLS", &h2, &tls, reqwest::Version::HTTP_2),
        (
            "HTTP/1.1 over TLS",
            &tls_h1,
            &tls,
            reqwest::Version::HTTP_11,
        ),
    ] {
        let r = client.get(server.url("/big.bin")).send().unwrap();
        assert_eq!(r.version(), version, "{what}");
        assert_eq!(r.status(), 200, "{what}");
        assert!(r.bytes().unwrap() == data, "{what}: body differs");
        for (range, first, last) in ranges(len) {
            let r = client
                .get(server.url("/big.bin"))
                .header("range", &range)
                .send()
                .unwrap();
            assert_eq!(r.status(), 206, "{what} {range}");
            assert!(
                r.bytes().unwrap() == data[first..=last],
                "{what} {range}: body differs"
            );
        }
        let r = client.head(server.url("/big.bin")).send().unwrap();
        assert_eq!(r.status(), 200, "{what}");
        assert_eq!(
            r.headers()["content-length"],
            len.to_string().as_str(),
            "{what}"
        );
        assert!(r.bytes().unwrap().is_empty(), "{what}");
    }
}

/// Truncates `path` in place to `keep` (what `cp` of a smaller file over it does).
fn truncate(path: &Path, keep: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    file.write_all(keep).unwrap();
}

#[test]
fn file_truncated_while_served_cuts_that_response_only() {
    // Larger than what the socket buffers and the server's two chunks in flight hold, so
    // the server is still reading the file when it shrinks.
    let len = 48 * MIB;
    let data = pattern(len, 3);
    let tmp = root_with(&[("big.bin", &data)]);
    let path = tmp.path().join("big.bin");
    let mut server = Server::start(tmp.path(), &[]);

    let stream = common::connect(server.addr);
    (&stream)
        .write_all(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader).unwrap();
    assert_eq!(status, 200);
    let announced: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap();
    assert_eq!(announced, len);
    let mut first = vec![0u8; 64 * 1024];
    reader.read_exact(&mut first).unwrap();
    assert!(first == data[..first.len()]);
    // Let the server fill the socket buffers and block, then shrink the file under it.
    std::thread::sleep(Duration::from_millis(300));
    let replacement = pattern(MIB, 4);
    truncate(&path, &replacement);

    let mut rest = Vec::new();
    // The server ends the connection early (EOF or reset), never with all bytes.
    let _ = reader.read_to_end(&mut rest);
    let received = first.len() + rest.len();
    assert!(
        received < len,
        "a shrunk file still produced a complete response ({received} bytes)"
    );
    // What did arrive is the file's original prefix, not filler.
    let received_prefix = [first.as_slice(), rest.as_slice()].concat();
    assert!(
        received_prefix == data[..received],
        "bytes differ from the file"
    );

    assert!(server.is_running(), "server died: {}", server.stderr());
    server.assert_alive();
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    let r = conn.get("/big.bin").unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == replacement, "the new content is served");
}

#[test]
fn file_truncated_while_served_over_tls_and_h2() {
    // Over TLS the bytes pass through user space (rustls encrypts them), where a
    // memory-mapped file would raise SIGBUS: the server must survive this too.
    let len = 48 * MIB;
    let data = pattern(len, 5);
    let tmp = root_with(&[("big.bin", &data)]);
    let path = tmp.path().join("big.bin");
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(certs.path());
    let mut server = Server::start(
        tmp.path(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    for http1 in [true, false] {
        std::fs::write(&path, &data).unwrap();
        let builder = client_builder().use_rustls_tls();
        let client = if http1 {
            builder.http1_only().build().unwrap()
        } else {
            builder.build().unwrap()
        };
        let mut response = client.get(server.url("/big.bin")).send().unwrap();
        assert_eq!(response.status(), 200);
        let mut first = vec![0u8; 64 * 1024];
        response.read_exact(&mut first).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        truncate(&path, b"short");
        let mut rest = Vec::new();
        let outcome = response.read_to_end(&mut rest);
        assert!(
            outcome.is_err() || first.len() + rest.len() < len,
            "http1 {http1}: a shrunk file still produced a complete response"
        );
        assert!(server.is_running(), "server died: {}", server.stderr());
    }
    let r = client_builder()
        .use_rustls_tls()
        .build()
        .unwrap()
        .get(server.url("/big.bin"))
        .send()
        .unwrap();
    assert_eq!(r.bytes().unwrap().as_ref(), b"short");
}
