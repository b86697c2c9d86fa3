//! Streaming in both directions: flush() reaches the client before the script ends, a
//! 100 MB response streams with bounded server memory, and a 200 MB upload reaches
//! php://input incrementally without the server holding it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{connect, http_root, parse_response, read_head, Server};

const MIB: u64 = 1024 * 1024;

#[test]
fn flushed_output_reaches_the_client_before_the_script_ends() {
    let server = Server::start(&http_root(), &[]);
    let mut stream = connect(server.addr);
    let started = Instant::now();
    stream
        .write_all(
            b"GET /stream.php?ms=1500 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let mut first_at = None;
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        received.extend_from_slice(&buf[..n]);
        if first_at.is_none() && received.windows(11).any(|w| w == b"first chunk") {
            first_at = Some(started.elapsed());
        }
    }
    let total = started.elapsed();
    let first_at = first_at.expect("first chunk received");
    assert!(
        first_at < Duration::from_millis(1000),
        "first chunk took {first_at:?}: flush() did not stream"
    );
    assert!(
        total >= Duration::from_millis(1450),
        "script sleeps 1.5 s, took {total:?}"
    );
    let r = parse_response(&received).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "first chunk\nsecond chunk\n");
    // No length was known when the head went out.
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
}

#[test]
fn flushed_output_streams_over_http2_too() {
    let server = Server::start(&http_root(), &[]);
    let client = common::client_builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let started = Instant::now();
    let mut r = client
        .get(server.url("/stream.php?ms=1500"))
        .send()
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    let mut received = Vec::new();
    let mut buf = [0u8; 1024];
    let mut first_at = None;
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        received.extend_from_slice(&buf[..n]);
        if first_at.is_none() && received.starts_with(b"first chunk") {
            first_at = Some(started.elapsed());
        }
    }
    let first_at = first_at.expect("first chunk");
    assert!(
        first_at < Duration::from_millis(1000),
        "first chunk after {first_at:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(1450));
    assert_eq!(received, b"first chunk\nsecond chunk\n");
}

/// Reads a chunked body, checking it against big.php's pattern, calling `tick` with the
/// running byte count after every read. Returns the body length.
fn read_big_chunked<R: BufRead>(reader: &mut R, mut tick: impl FnMut(u64)) -> u64 {
    const PATTERN: &[u8] = b"0123456789abcdef";
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let size = u64::from_str_radix(line.trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {line:?} at {total}"));
        if size == 0 {
            let mut end = String::new();
            reader.read_line(&mut end).unwrap();
            break;
        }
        let mut left = size;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            reader.read_exact(&mut buf[..n]).unwrap();
            // Spot-check the content: first and last byte of each read.
            for i in [0, n - 1] {
                let want = PATTERN[((total + i as u64) % 16) as usize];
                assert_eq!(buf[i], want, "byte {} differs", total + i as u64);
            }
            total += n as u64;
            left -= n as u64;
            tick(total);
        }
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf).unwrap();
    }
    total
}

#[test]
fn hundred_megabyte_response_streams_with_bounded_memory() {
    let server = Server::start(&http_root(), &[]);
    // Warm up: PHP threads, allocator arenas and buffers reach their steady size.
    let warm = server.get("/big.php?mb=2");
    assert_eq!(warm.body.len() as u64, 2 * MIB);
    let baseline = server.rss_kib();

    let stream = connect(server.addr);
    let mut writer = stream.try_clone().unwrap();
    writer
        .write_all(b"GET /big.php?mb=100 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let (status, headers) = read_head(&mut reader).unwrap();
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked"));
    let mut peak = baseline;
    let mut next_sample = 0;
    let started = Instant::now();
    let total = read_big_chunked(&mut reader, |done| {
        if done >= next_sample {
            next_sample += 4 * MIB;
            peak = peak.max(server.rss_kib());
            // A slow client: about 100 MB/s at most, so PHP (faster) must be held back.
            let ahead = Duration::from_secs_f64(done as f64 / (100.0 * MIB as f64));
            if let Some(wait) = ahead.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    });
    assert_eq!(total, 100 * MIB);
    let growth_mib = peak.saturating_sub(baseline) / 1024;
    eprintln!("RSS baseline {baseline} KiB, peak {peak} KiB, growth {growth_mib} MiB");
    assert!(
        growth_mib < 40,
        "server RSS grew by {growth_mib} MiB while streaming 100 MiB (baseline {baseline} KiB)"
    );
}

/// Writes a deterministic pseudo-random 200 MiB body, chunk-encoded, to the server and to
/// `sha256sum`, sampling the server's RSS while it goes.
#[test]
fn two_hundred_megabyte_upload_reaches_php_input_incrementally() {
    const TOTAL: u64 = 200 * MIB;
    const BLOCK: usize = 64 * 1024;
    let server = Server::start(&http_root(), &[]);
    // Warm up the same path with a small body.
    let warm = server.raw(
        b"PUT /hash_input.php HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&warm.body).unwrap()["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let baseline = server.rss_kib();

    let blocks: Vec<Vec<u8>> = (0..7u32)
        .map(|b| {
            let mut x = 0x9e37_79b9u32.wrapping_mul(b + 1);
            (0..BLOCK)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect()
        })
        .collect();

    let mut sha = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils) runs");
    let mut sha_in = sha.stdin.take().unwrap();

    // Sample the server's RSS from another thread during the whole upload.
    let peak = Arc::new(AtomicU64::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        let path = format!("/proc/{}/status", server.pid());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Ok(status) = std::fs::read_to_string(&path) {
                    if let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let stream = connect(server.addr);
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut writer = std::io::BufWriter::with_capacity(256 * 1024, stream.try_clone().unwrap());
    writer
        .write_all(
            b"PUT /hash_input.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
              Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
    let started = Instant::now();
    let mut sent = 0u64;
    let mut i = 0usize;
    while sent < TOTAL {
        let block = &blocks[i % blocks.len()];
        i += 1;
        write!(writer, "{:x}\r\n", block.len()).unwrap();
        writer.write_all(block).unwrap();
        writer.write_all(b"\r\n").unwrap();
        sha_in.write_all(block).unwrap();
        sent += block.len() as u64;
    }
    writer.write_all(b"0\r\n\r\n").unwrap();
    writer.flush().unwrap();
    drop(sha_in);
    let mut reader = BufReader::new(stream);
    let response = common::read_response(&mut reader, false).unwrap();
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();

    let mut sha_out = String::new();
    sha.stdout
        .take()
        .unwrap()
        .read_to_string(&mut sha_out)
        .unwrap();
    sha.wait().unwrap();
    let expected_sha = sha_out.split_whitespace().next().unwrap().to_owned();

    assert_eq!(response.status, 200, "{}", response.text());
    let v: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(v["bytes"], TOTAL, "{v}");
    assert_eq!(v["sha256"], expected_sha.as_str());
    let peak = peak.load(Ordering::Relaxed);
    let growth_mib = peak.saturating_sub(baseline) / 1024;
    eprintln!(
        "upload of 200 MiB took {elapsed:?}; RSS baseline {baseline} KiB, peak {peak} KiB (+{growth_mib} MiB); PHP peak memory {}",
        v["peak_memory"]
    );
    assert!(
        growth_mib < 64,
        "server RSS grew by {growth_mib} MiB during a 200 MiB upload"
    );
}

#[test]
fn large_post_with_content_length_reaches_php_input() {
    // With post_max_size=0 (no limit), PHP reads a POST body at start-up into php://temp
    // (spilling to a temp file); the script still sees every byte.
    const TOTAL: usize = 24 * 1024 * 1024;
    let server = Server::start(&http_root(), &["-d", "post_max_size=0"]);
    let body: Vec<u8> = (0..TOTAL as u32).map(|i| (i % 253) as u8).collect();
    let mut sha = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    sha.stdin.take().unwrap().write_all(&body).unwrap();
    let out = sha.wait_with_output().unwrap();
    let expected = String::from_utf8(out.stdout).unwrap();
    let r = common::client()
        .post(server.url("/hash_input.php"))
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
    assert_eq!(v["bytes"], TOTAL);
    assert_eq!(v["sha256"], expected.split_whitespace().next().unwrap());
}

#[test]
fn http2_request_body_without_content_length_reaches_php() {
    // HTTP/2 has no chunked encoding: a body of unknown length is just DATA frames
    // without a content-length header.
    let server = Server::start(&http_root(), &[]);
    let client = common::client_builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    let body = reqwest::blocking::Body::new(std::io::Cursor::new(data.clone()));
    let r = client
        .put(server.url("/hash_input.php"))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    let v: serde_json::Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
    assert_eq!(v["bytes"], data.len(), "{v}");
    let mut sha = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    sha.stdin.take().unwrap().write_all(&data).unwrap();
    let out = String::from_utf8(sha.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(v["sha256"], out.split_whitespace().next().unwrap());
}
