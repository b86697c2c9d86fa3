//! Static files of several MiB over real TCP: exact bytes, ranges that cross the server's
//! read chunks (256 KiB, so every MiB edge is one), HEAD and keep-alive over HTTP/1.1, h2c, and TLS (HTTP/1.1 and h2
//! through ALPN); and a file truncated while it is being served, which must cut that
//! response (never complete it with wrong bytes) and leave the server serving.
//!
//! The content cache (`server/src/static_cache.rs`): whether a response came from it is
//! seen in the server's `/proc/PID/io` `rchar` (bytes its read/pread calls returned),
//! which a hit leaves alone. Files are cached only once their ctime is 2.1 s old, so
//! those tests write their files and wait [`SETTLE`] first.

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

/// A plain and a TLS server of `root` (self-signed; the certificates' directory is kept
/// with them).
fn plain_and_tls(root: &Path) -> (Server, Server, tempfile::TempDir) {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = common::self_signed(certs.path());
    let plain = Server::start(root, &[]);
    let tls = Server::start(
        root,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    (plain, tls, certs)
}

/// Clients for h2c (prior knowledge), h2 over TLS and HTTP/1.1 over TLS.
fn protocol_clients() -> (
    reqwest::blocking::Client,
    reqwest::blocking::Client,
    reqwest::blocking::Client,
) {
    let h2c = client_builder().http2_prior_knowledge().build().unwrap();
    let h2 = client_builder().use_rustls_tls().build().unwrap();
    let tls_h1 = client_builder()
        .use_rustls_tls()
        .http1_only()
        .build()
        .unwrap();
    (h2c, h2, tls_h1)
}

#[test]
fn multi_mib_file_over_h2c_and_tls() {
    let len = 3 * MIB + 777;
    let data = pattern(len, 2);
    let tmp = root_with(&[("big.bin", &data)]);
    let (plain, tls, _certs) = plain_and_tls(tmp.path());
    let (h2c, h2, tls_h1) = protocol_clients();
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

/// Longer than the cache's settling time (2.1 s since the file's last change).
const SETTLE: Duration = Duration::from_millis(2300);

/// Bytes the server process has read with read/pread so far (sockets included).
fn rchar(server: &Server) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{}/io", server.pid())).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// GETs `path` `times` times on `conn`, each answered with `expected`; what the server
/// read meanwhile.
fn read_while_serving(
    server: &Server,
    conn: &mut KeepAlive,
    path: &str,
    times: usize,
    expected: &[u8],
) -> u64 {
    let before = rchar(server);
    for i in 0..times {
        let r = conn.get(path).unwrap();
        assert_eq!(r.status, 200, "{path} #{i}");
        assert!(r.body == expected, "{path} #{i}: body differs");
    }
    rchar(server) - before
}

/// Rewrites `path` in place (no truncation, same inode), as a tool writing into the
/// existing file does.
/// A sample of the server's `/metrics` (admin listener), 0 when absent.
fn metric(server: &Server, sample: &str) -> u64 {
    let admin = server.admin_addr().expect("admin listener");
    let body = client_builder()
        .build()
        .unwrap()
        .get(format!("http://{admin}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' '))
        .map_or(0, |v| v.parse().unwrap())
}

fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
    file.set_len(bytes.len() as u64).unwrap();
}

#[test]
fn cached_file_is_served_without_reading_it_and_revalidated_every_request() {
    let one = pattern(MIB, 10);
    let two = pattern(MIB, 11);
    let three = pattern(MIB, 12);
    let tmp = root_with(&[
        ("a.bin", &one),
        ("b.bin", &two),
        ("c.bin", &three),
        ("gone.bin", &one),
    ]);
    let server = Server::start(tmp.path(), &["--admin", "127.0.0.1:0"]);
    std::thread::sleep(SETTLE);
    let mut conn = KeepAlive::connect(server.addr).unwrap();

    // The first request reads and caches it; the next ten read nothing of it.
    let first = read_while_serving(&server, &mut conn, "/a.bin", 1, &one);
    assert!(
        first >= MIB as u64,
        "the miss read the file ({first} bytes)"
    );
    let hits = read_while_serving(&server, &mut conn, "/a.bin", 10, &one);
    assert!(hits < MIB as u64 / 4, "cache hits read {hits} bytes");
    // The metrics say the same.
    let lookups = |result: &str| {
        metric(
            &server,
            &format!("ferrophp_static_cache_lookups_total{{result=\"{result}\"}}"),
        )
    };
    assert_eq!(
        (lookups("hit"), lookups("miss"), lookups("stale")),
        (10, 1, 0)
    );
    assert_eq!(metric(&server, "ferrophp_static_cache_entries"), 1);
    assert!(metric(&server, "ferrophp_static_cache_bytes") >= MIB as u64);

    // Rewritten in place with the same size: the new bytes at once.
    read_while_serving(&server, &mut conn, "/b.bin", 2, &two);
    let new_two = pattern(MIB, 21);
    rewrite_in_place(&tmp.path().join("b.bin"), &new_two);
    read_while_serving(&server, &mut conn, "/b.bin", 2, &new_two);
    // Both requests after the rewrite find the old entry changed (the new bytes are too
    // fresh to be cached until they settle).
    assert_eq!(lookups("stale"), 2, "the rewrite was not seen as a change");

    // The same, with mtime set back to what it was (`touch -r`, `cp -p`): ctime tells.
    let c = tmp.path().join("c.bin");
    read_while_serving(&server, &mut conn, "/c.bin", 2, &three);
    let mtime = std::fs::metadata(&c).unwrap().modified().unwrap();
    let new_three = pattern(MIB, 22);
    rewrite_in_place(&c, &new_three);
    std::fs::File::options()
        .write(true)
        .open(&c)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&c).unwrap().modified().unwrap(), mtime);
    read_while_serving(&server, &mut conn, "/c.bin", 2, &new_three);

    // A new size, in place and by rename over it.
    let shorter = pattern(MIB / 2, 23);
    rewrite_in_place(&tmp.path().join("a.bin"), &shorter);
    read_while_serving(&server, &mut conn, "/a.bin", 1, &shorter);
    let longer = pattern(MIB + 3, 24);
    std::fs::write(tmp.path().join("a.new"), &longer).unwrap();
    std::fs::rename(tmp.path().join("a.new"), tmp.path().join("a.bin")).unwrap();
    read_while_serving(&server, &mut conn, "/a.bin", 1, &longer);

    // Deleted: 404, not the cached bytes.
    read_while_serving(&server, &mut conn, "/gone.bin", 2, &one);
    std::fs::remove_file(tmp.path().join("gone.bin")).unwrap();
    assert_eq!(conn.get("/gone.bin").unwrap().status, 404);

    // The changed files settle and are cached again, with their new bytes.
    std::thread::sleep(SETTLE);
    read_while_serving(&server, &mut conn, "/b.bin", 1, &new_two);
    let hits = read_while_serving(&server, &mut conn, "/b.bin", 5, &new_two);
    assert!(hits < MIB as u64 / 4, "cache hits read {hits} bytes");
    server.assert_alive();
}

#[test]
fn ranges_head_and_304_from_the_cache() {
    let len = MIB + 4321;
    let data = pattern(len, 30);
    let tmp = root_with(&[
        ("r.bin", &data),
        ("app.js", b"let identity = 1;"),
        ("app.js.br", b"BROTLI"),
        ("app.js.gz", b"GZIP"),
    ]);
    let server = Server::start(tmp.path(), &[]);
    std::thread::sleep(SETTLE);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    read_while_serving(&server, &mut conn, "/r.bin", 1, &data);
    let full = conn.get("/r.bin").unwrap();
    let etag = full.header("etag").unwrap().to_owned();
    let last_modified = full.header("last-modified").unwrap().to_owned();

    let before = rchar(&server);
    for (range, first, last) in [
        ("bytes=0-0".to_owned(), 0, 0),
        (format!("bytes={}-", len - 10), len - 10, len - 1),
        ("bytes=-7".to_owned(), len - 7, len - 1),
        (format!("bytes=1000-{}", MIB), 1000, MIB),
    ] {
        let r = conn
            .send(format!("GET /r.bin HTTP/1.1\r\nHost: x\r\nRange: {range}\r\n\r\n").as_bytes())
            .unwrap();
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes {first}-{last}/{len}").as_str())
        );
        assert!(r.body == data[first..=last], "{range}: body differs");
        assert_eq!(r.header("etag"), Some(etag.as_str()));
    }
    let r = conn
        .send(format!("GET /r.bin HTTP/1.1\r\nHost: x\r\nRange: bytes={len}-\r\n\r\n").as_bytes())
        .unwrap();
    assert_eq!(r.status, 416);
    for condition in [
        format!("If-None-Match: {etag}"),
        format!("If-Modified-Since: {last_modified}"),
    ] {
        let r = conn
            .send(format!("GET /r.bin HTTP/1.1\r\nHost: x\r\n{condition}\r\n\r\n").as_bytes())
            .unwrap();
        assert_eq!(r.status, 304, "{condition}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("etag"), Some(etag.as_str()));
    }
    // If-Range with the current ETag gets the range.
    let r = conn
        .send(
            format!(
                "GET /r.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=5-9\r\nIf-Range: {etag}\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    assert_eq!(r.status, 206);
    assert!(r.body == data[5..=9]);
    assert!(
        rchar(&server) - before < MIB as u64 / 4,
        "ranges and 304s read the file"
    );
    // HEAD: the GET's headers, no body.
    let raw = common::exchange(
        server.addr,
        b"HEAD /r.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        common::IO_TIMEOUT,
    )
    .unwrap();
    let mut reader = BufReader::new(raw.as_slice());
    let (status, headers) = read_head(&mut reader).unwrap();
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-length".to_owned(), len.to_string())));
    assert!(headers.contains(&("etag".to_owned(), etag.clone())));
    let mut after = Vec::new();
    reader.read_to_end(&mut after).unwrap();
    assert!(after.is_empty(), "HEAD sent {} body bytes", after.len());

    // Precompressed siblings come from the cache too, each under its own path.
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for (accept, body, encoding) in [
        ("br", &b"BROTLI"[..], Some("br")),
        ("gzip", b"GZIP", Some("gzip")),
        ("identity", b"let identity = 1;", None),
    ] {
        for _ in 0..2 {
            let r = conn
                .send(
                    format!("GET /app.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {accept}\r\n\r\n")
                        .as_bytes(),
                )
                .unwrap();
            assert_eq!(r.body, body, "{accept}");
            assert_eq!(r.header("content-encoding"), encoding, "{accept}");
            assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{accept}");
            assert!(r.header("content-type").unwrap().contains("javascript"));
        }
    }
    rewrite_in_place(&tmp.path().join("app.js.br"), b"BROTLI2");
    let r = conn
        .send(b"GET /app.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n")
        .unwrap();
    assert_eq!(r.body, b"BROTLI2");
    std::fs::remove_file(tmp.path().join("app.js.br")).unwrap();
    let r = conn
        .send(b"GET /app.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip\r\n\r\n")
        .unwrap();
    assert_eq!(r.body, b"GZIP");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
}

#[test]
fn cached_file_over_h2c_and_tls() {
    let len = MIB + 99;
    let data = pattern(len, 40);
    let tmp = root_with(&[("c.bin", &data)]);
    let (plain, tls, _certs) = plain_and_tls(tmp.path());
    std::thread::sleep(SETTLE);
    let (h2c, h2, tls_h1) = protocol_clients();
    for (what, client, server) in [
        ("h2c", &h2c, &plain),
        ("h2 over TLS", &h2, &tls),
        ("HTTP/1.1 over TLS", &tls_h1, &tls),
    ] {
        let _ = client.get(server.url("/c.bin")).send().unwrap().bytes();
        let before = rchar(server);
        for _ in 0..3 {
            let r = client.get(server.url("/c.bin")).send().unwrap();
            assert_eq!(r.status(), 200, "{what}");
            assert!(r.bytes().unwrap() == data, "{what}: body differs");
        }
        let r = client
            .get(server.url("/c.bin"))
            .header("range", "bytes=100-200")
            .send()
            .unwrap();
        assert_eq!(r.status(), 206, "{what}");
        assert!(r.bytes().unwrap() == data[100..=200], "{what}");
        // TLS reads its records from the socket, far less than the file.
        let read = rchar(server) - before;
        assert!(read < MIB as u64 / 2, "{what}: read {read} bytes");
    }
}

#[test]
fn cache_bounds_and_disabled() {
    // `--static-cache-mb 4`: 4 MiB in all: files up to 1 MiB are cached, a larger one streams as before.
    let small = pattern(MIB - 100, 50);
    let large = pattern(MIB + MIB / 2, 51);
    let many: Vec<Vec<u8>> = (0..8).map(|i| pattern(MIB / 2, 60 + i)).collect();
    let mut files: Vec<(String, &[u8])> = vec![
        ("small.bin".into(), &small[..]),
        ("large.bin".into(), &large[..]),
    ];
    for (i, bytes) in many.iter().enumerate() {
        files.push((format!("m{i}.bin"), bytes));
    }
    let named: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    let tmp = root_with(&named);
    let bounded = Server::start(tmp.path(), &["--static-cache-mb", "4"]);
    // Off through the config file (TOML `static_cache_mb`), the flag's twin.
    let conf = tempfile::tempdir().unwrap();
    let toml = conf.path().join("ferrophp.toml");
    std::fs::write(&toml, "static_cache_mb = 0\n").unwrap();
    let off = Server::start(tmp.path(), &["--config", toml.to_str().unwrap()]);
    std::thread::sleep(SETTLE);

    let mut conn = KeepAlive::connect(bounded.addr).unwrap();
    read_while_serving(&bounded, &mut conn, "/small.bin", 1, &small);
    let hits = read_while_serving(&bounded, &mut conn, "/small.bin", 5, &small);
    assert!(hits < MIB as u64 / 4, "small file hits read {hits} bytes");
    let streamed = read_while_serving(&bounded, &mut conn, "/large.bin", 4, &large);
    assert!(
        streamed >= 4 * large.len() as u64,
        "a file above the per-file maximum is read each time ({streamed} bytes)"
    );
    // Twice the total through a 4 MiB cache: every response still exact.
    for round in 0..3 {
        for (i, bytes) in many.iter().enumerate() {
            let r = conn.get(&format!("/m{i}.bin")).unwrap();
            assert!(r.body == *bytes, "round {round} m{i}");
        }
    }

    let mut conn = KeepAlive::connect(off.addr).unwrap();
    let read = read_while_serving(&off, &mut conn, "/small.bin", 5, &small);
    assert!(
        read >= 5 * small.len() as u64,
        "with the cache off every request reads the file ({read} bytes)"
    );
}
