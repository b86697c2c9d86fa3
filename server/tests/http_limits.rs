//! Limits: request body size (413), post_max_size, all PHP threads busy (503),
//! max_execution_time (500, thread reusable), request head size (431), and slow clients
//! that never finish their headers (slowloris).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{connect, encode, exchange, http_root, parse_response, Server};
use serde_json::Value;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

#[test]
fn body_over_max_body_size_with_content_length_is_413_without_running_php() {
    let server = Server::start(&http_root(), &["--max-body-size", "1000"]);
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let target = format!("/touch.php?marker={}", encode(marker.to_str().unwrap()));

    // Only the head is sent: the answer must not wait for a body it will not read.
    let started = Instant::now();
    let bytes = exchange(
        server.addr,
        format!(
            "POST {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: 5000\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
        Duration::from_secs(5),
    )
    .unwrap();
    let r = parse_response(&bytes).expect("a response");
    assert_eq!(r.status, 413);
    assert!(started.elapsed() < Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !marker.exists(),
        "PHP ran for a request over the body limit"
    );

    // With Expect: 100-continue the client is refused before sending anything.
    let bytes = exchange(
        server.addr,
        format!(
            "POST {target} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\
             Expect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
        Duration::from_secs(5),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(!text.contains("100 Continue"), "{text}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !marker.exists(),
        "PHP ran for a request over the body limit"
    );

    // At the limit, PHP runs.
    let body = "x".repeat(1000);
    let r = server.raw(
        format!(
            "POST {target} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"touched");
    assert!(marker.exists());
}

#[test]
fn chunked_body_over_max_body_size_is_not_passed_off_as_complete() {
    // Without a Content-Length the limit can only be noticed while streaming; the
    // script must not get a silently truncated body and a normal 200 for it.
    let server = Server::start(&http_root(), &["--max-body-size", "1000"]);
    let mut req = String::from(
        "PUT /hash_input.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    );
    for _ in 0..5 {
        req.push_str(&format!("3e8\r\n{}\r\n", "y".repeat(1000)));
    }
    req.push_str("0\r\n\r\n");
    let bytes = exchange(server.addr, req.as_bytes(), Duration::from_secs(5)).unwrap_or_default();
    match parse_response(&bytes) {
        None => {} // connection closed: acceptable
        Some(r) => assert_eq!(r.status, 413, "got {} {:?}", r.status, r.text()),
    }
    server.assert_alive();
}

#[test]
fn post_max_size_leaves_post_empty() {
    let server = Server::start(&http_root(), &["-d", "post_max_size=1K"]);
    let post = |body: &str| {
        server.raw(
            format!(
                "POST /vars.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    let small = post("a=1&b=2");
    assert_eq!(json(&small.body)["post"]["a"], "1");
    let big = format!("a=1&pad={}", "z".repeat(2048));
    let r = post(&big);
    assert_eq!(r.status, 200);
    assert_eq!(
        json(&r.body)["post"],
        serde_json::json!([]),
        "$_POST must be empty"
    );
    assert!(
        server.wait_for_stderr("exceeds the limit of 1024 bytes", Duration::from_secs(3)),
        "PHP's post_max_size warning not logged: {}",
        server.stderr()
    );
}

#[test]
fn all_threads_busy_gives_503_after_max_wait() {
    let server = Server::start(&http_root(), &["--threads", "1", "--max-wait-ms", "300"]);
    let addr = server.addr;
    let slow = std::thread::spawn(move || {
        exchange(
            addr,
            b"GET /sleep.php?ms=2000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(10),
        )
    });
    // Let the slow request take the only PHP thread.
    std::thread::sleep(Duration::from_millis(400));
    let started = Instant::now();
    let r = server.get("/hello.php");
    let waited = started.elapsed();
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_millis(1500),
        "503 after {waited:?}, expected about 300 ms"
    );
    // Static files and errors do not need a PHP thread.
    assert_eq!(server.get("/.env").status, 404);

    let slow = parse_response(&slow.join().unwrap().unwrap()).unwrap();
    assert_eq!(slow.status, 200);
    assert_eq!(slow.body, b"slept 2000");
    server.assert_alive();
}

/// Requests wait in the pool's queue behind busy threads (the HTTP side lets about three
/// per thread in). One still queued at its `--max-wait-ms` deadline is taken back: it gets
/// the 503 and must never run later, when the thread frees up. One that a thread takes
/// before its deadline is served. (The worker pool's twin is in frankenphp_worker.rs.)
#[test]
fn a_queued_request_that_gave_up_never_runs_and_one_taken_in_time_is_served() {
    let server = Server::start(&http_root(), &["--threads", "1", "--max-wait-ms", "600"]);
    let addr = server.addr;
    let tmp = tempfile::tempdir().unwrap();
    let hold = move |ms: u64| {
        std::thread::spawn(move || {
            exchange(
                addr,
                format!("GET /sleep.php?ms={ms} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
                Duration::from_secs(10),
            )
        })
    };
    let touch = |marker: &std::path::Path| {
        server.get(&format!(
            "/touch.php?marker={}",
            encode(marker.to_str().unwrap())
        ))
    };

    // Gave up: queued behind a 1.5 s request with a 600 ms deadline.
    let slow = hold(1500);
    std::thread::sleep(Duration::from_millis(300));
    let marker = tmp.path().join("gave-up");
    let started = Instant::now();
    let r = touch(&marker);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    assert!(
        started.elapsed() < Duration::from_millis(1100),
        "the 503 came after {:?}, not at the deadline",
        started.elapsed()
    );
    let slow = parse_response(&slow.join().unwrap().unwrap()).unwrap();
    assert_eq!(slow.status, 200);
    // The thread is free now: the withdrawn request left nothing behind to run.
    assert_eq!(server.get("/hello.php").status, 200);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!marker.exists(), "a request answered 503 ran anyway");

    // Taken in time: queued behind a 300 ms request with a 600 ms deadline.
    let short = hold(300);
    std::thread::sleep(Duration::from_millis(100));
    let marker = tmp.path().join("served");
    let r = touch(&marker);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "touched");
    assert!(marker.exists());
    assert_eq!(
        parse_response(&short.join().unwrap().unwrap())
            .unwrap()
            .status,
        200
    );
    server.assert_alive();
}

#[test]
fn max_execution_time_gives_500_and_the_thread_serves_the_next_request() {
    let server = Server::start(
        &http_root(),
        &["--threads", "1", "-d", "max_execution_time=1"],
    );
    let started = Instant::now();
    let r = server.get("/busy.php?seconds=20");
    let took = started.elapsed();
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(!r.text().contains("finished"));
    assert!(took < Duration::from_secs(8), "timeout took {took:?}");
    assert!(
        server.wait_for_stderr(
            "Maximum execution time of 1 second exceeded",
            Duration::from_secs(3)
        ),
        "{}",
        server.stderr()
    );
    // The same (only) PHP thread is fine afterwards, several times over.
    for _ in 0..3 {
        server.assert_alive();
    }
    let r = server.get("/busy.php?seconds=0.1");
    assert_eq!(r.status, 200);
    assert!(r.text().starts_with("finished"));
}

/// Sends `request`; Some(status) if a response came back, None if the connection was
/// closed or reset without one.
fn try_status(server: &Server, request: &[u8]) -> Option<u16> {
    match exchange(server.addr, request, Duration::from_secs(5)) {
        Ok(bytes) => parse_response(&bytes).map(|r| r.status),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
            ) =>
        {
            None
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn oversized_request_head_is_431_or_closed() {
    let server = Server::start(&http_root(), &["--max-header-size", "16384"]);
    let big = format!(
        "GET /hello.php HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let status = try_status(&server, big.as_bytes());
    assert!(matches!(status, None | Some(431)), "{status:?}");
    // Many medium headers adding up past the limit.
    let mut many = String::from("GET /hello.php HTTP/1.1\r\nHost: x\r\n");
    for i in 0..40 {
        many.push_str(&format!("X-H{i}: {}\r\n", "b".repeat(1000)));
    }
    many.push_str("Connection: close\r\n\r\n");
    let status = try_status(&server, many.as_bytes());
    assert!(matches!(status, None | Some(431)), "{status:?}");
    // Under the limit is fine.
    let ok = format!(
        "GET /hello.php HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(8 * 1024)
    );
    assert_eq!(try_status(&server, ok.as_bytes()), Some(200));
    server.assert_alive();
}

/// Reads until EOF/reset or `limit`; returns what was read and when reading stopped.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Option<Duration>) {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, Some(started.elapsed())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (out, None)
            }
            Err(_) => return (out, Some(started.elapsed())),
        }
    }
}

#[test]
fn slowloris_partial_request_is_cut_off_and_others_are_served() {
    let server = Server::start(&http_root(), &["--header-timeout-ms", "500"]);
    let mut slow = connect(server.addr);
    slow.write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // Meanwhile others are served normally.
    server.assert_alive();
    let (bytes, closed_after) = read_until_closed(&mut slow, Duration::from_secs(4));
    let closed_after = closed_after.expect("slow connection still open after 4 s");
    assert!(
        closed_after < Duration::from_secs(2),
        "closed after {closed_after:?}"
    );
    if let Some(r) = parse_response(&bytes) {
        assert_eq!(r.status, 408);
    }
    server.assert_alive();
}

#[test]
fn slowloris_dribbling_bytes_is_cut_off() {
    let server = Server::start(&http_root(), &["--header-timeout-ms", "500"]);
    let mut slow = connect(server.addr);
    let request =
        b"GET /hello.php HTTP/1.1\r\nHost: x\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n";
    let started = Instant::now();
    let mut cut_off = None;
    for &b in request.iter() {
        if slow.write_all(&[b]).is_err() {
            cut_off = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let cut_off = match cut_off {
        Some(t) => t,
        None => {
            let (bytes, closed) = read_until_closed(&mut slow, Duration::from_secs(2));
            if let Some(r) = parse_response(&bytes) {
                assert_ne!(r.status, 200, "a dribbled request was served");
            }
            closed
                .map(|_| started.elapsed())
                .expect("dribbling connection never closed")
        }
    };
    assert!(
        cut_off < Duration::from_secs(4),
        "cut off after {cut_off:?}"
    );
    server.assert_alive();
}

#[test]
fn header_timeout_restarts_for_each_request_on_a_connection() {
    // hyper keeps one header timer per connection and resets it for each head (our
    // third_party patch): a request that runs past the timeout must not leave it
    // expired for the next head on the same connection, and a later idle wait is still
    // cut at the timeout.
    let server = Server::start(&http_root(), &["--header-timeout-ms", "800"]);
    let stream = connect(server.addr);
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    for (path, body) in [
        ("/sleep.php?ms=1200", "slept 1200"),
        ("/hello.php", "Hello, World!"),
        ("/sleep.php?ms=1000", "slept 1000"),
    ] {
        writer
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let r = common::read_response(&mut reader, false).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, body), "{path}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A head in two writes, well within the timeout.
    writer.write_all(b"GET /hello.php HTTP/1.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    writer.write_all(b"Host: x\r\n\r\n").unwrap();
    let r = common::read_response(&mut reader, false).unwrap();
    assert_eq!(r.status, 200);
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    let closed = started.elapsed();
    assert!(
        closed < Duration::from_secs(2),
        "idle keep-alive closed after {closed:?}"
    );
}

#[test]
fn idle_connections_are_closed_after_the_header_timeout() {
    let server = Server::start(&http_root(), &["--header-timeout-ms", "500"]);
    // Connected, nothing sent (before protocol detection).
    let mut idle = connect(server.addr);
    // A prefix of the HTTP/2 preface, then silence.
    let mut preface = connect(server.addr);
    preface.write_all(b"PRI * HTTP/2.0\r\n").unwrap();
    // Idle keep-alive connection after one complete request.
    let mut keep_alive = connect(server.addr);
    keep_alive
        .write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reader = std::io::BufReader::new(keep_alive.try_clone().unwrap());
    let r = common::read_response(&mut reader, false).unwrap();
    assert_eq!(r.status, 200);

    for (what, stream) in [
        ("idle", &mut idle),
        ("h2 preface prefix", &mut preface),
        ("keep-alive", &mut keep_alive),
    ] {
        let (_, closed) = read_until_closed(stream, Duration::from_secs(4));
        let closed = closed.unwrap_or_else(|| panic!("{what} connection kept open for 4 s"));
        assert!(
            closed < Duration::from_secs(2),
            "{what}: closed after {closed:?}"
        );
    }
    server.assert_alive();
}

#[test]
fn unread_request_body_is_never_parsed_as_the_next_request() {
    // PHP refuses a form over post_max_size without reading it. The unread bytes left on
    // the keep-alive connection must be discarded (or the connection closed), never taken
    // for a pipelined request.
    let server = Server::start(&http_root(), &["-d", "post_max_size=1K"]);
    let smuggled = "\r\n\r\nGET /status.php?code=299 HTTP/1.1\r\nHost: x\r\n\r\n";
    let body = format!("a={}{smuggled}", "z".repeat(4000));
    let mut stream = connect(server.addr);
    write!(
        stream,
        "POST /vars.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let first = common::read_response(&mut reader, false).unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(json(&first.body)["post"], serde_json::json!([]));
    // Whatever comes next on this connection must not be the smuggled request's answer.
    stream
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let _ = stream.write_all(b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    let text = String::from_utf8_lossy(&rest);
    assert!(!text.contains("299"), "smuggled request was served: {text}");
    if !rest.is_empty() {
        let r = parse_response(&rest).unwrap();
        assert_eq!(r.status, 200, "{text}");
        assert_eq!(r.body, b"Hello, World!");
    }
    server.assert_alive();
}

/// A pool lets only about as many threads compute at once as there are CPUs, and queues
/// the rest for them (worker/src/queue.rs); a thread blocked in `usleep` (or on a
/// database) must not count. Eight requests sleeping 600 ms on eight threads run side by
/// side: all answered in well under two sleeps, however few CPUs the machine has.
/// (The worker pool's twin is in frankenphp_worker.rs.)
#[test]
fn requests_blocked_in_php_run_side_by_side_whatever_the_cpu_count() {
    let server = Server::start(&http_root(), &["--threads", "8"]);
    let took = common::side_by_side(8, || server.get("/sleep.php?ms=600"));
    assert!(
        took < Duration::from_millis(1100),
        "8 sleeps of 600 ms on 8 threads took {took:?}"
    );
    server.assert_alive();
}

/// PHP threads run as SCHED_BATCH (no wakeup preemption: a woken PHP thread does not
/// preempt the I/O thread that handed it a job; see worker/src/spawn.rs), in both modes
/// and whatever started them; the I/O threads stay in the normal class.
#[test]
fn php_threads_are_batch_threads_and_io_threads_are_not() {
    const SCHED_OTHER: &str = "0";
    const SCHED_BATCH: &str = "3";
    let worker = format!(
        "{},2",
        http_root().join("../frankenphp/dual/sleep.php").display()
    );
    let server = Server::start(&http_root(), &["--worker", worker.as_str()]);
    let v = json(&server.get("/sched.php").body);
    assert_eq!(v["policy"], 3, "the classic thread that ran it: {v}");
    // Every thread by name: classic (php-N), worker (php-worker-N), tokio's.
    let mut seen = std::collections::BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{}/task", server.pid())).unwrap() {
        let task = task.unwrap().path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(task.join("stat")).unwrap_or_default();
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 2..]) else {
            continue;
        };
        let policy = after.split(' ').nth(38).unwrap_or("?").to_string();
        seen.insert(name.trim().to_string(), policy);
    }
    let php: Vec<_> = seen
        .iter()
        .filter(|(n, _)| n.starts_with("php-") && *n != "php-main")
        .collect();
    assert!(
        php.iter().any(|(n, _)| n.starts_with("php-worker")),
        "{seen:?}"
    );
    assert!(
        php.iter().all(|(_, p)| p.as_str() == SCHED_BATCH),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .filter(|(n, _)| n.starts_with("tokio"))
            .all(|(_, p)| p.as_str() == SCHED_OTHER),
        "{seen:?}"
    );
}
