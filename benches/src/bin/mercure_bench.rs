//! The Mercure hub through the real server (issue 37): a release-built `ferrophp serve`
//! with the hub on, and this process as its clients over real TCP on the loopback.
//!
//! 1. Memory per idle subscriber: the server's RSS (`/proc/PID/status` `VmRSS`) with
//!    `--subscribers` (10,000) SSE streams open and idle, minus its RSS before they
//!    opened (after a warm-up of 100 subscribers that came and went), divided by their
//!    number. Socket buffers are the kernel's and not in it.
//! 2. Fan-out latency: `--rounds` updates, one at a time, each to all of them; a
//!    subscriber's latency is from just before the publishing POST is written to the
//!    moment its task has read and parsed the event. Percentiles over every delivery.
//! 3. CPU per delivered event: the server's utime + stime (`/proc/PID/stat`) over the
//!    rounds of 2, divided by the deliveries.
//! 0. For comparison, on a server of its own: as many idle keep-alive HTTP/1.1
//!    connections, each after one answer (no PHP), measured the same way. And after the
//!    subscribers of 1 left, as many new ones, three times: the RSS says whether their memory is
//!    reused (retained by the allocator) or lost.
//! 4. Publishes per second with `--small` (100) subscribers: `--publishers` (8)
//!    keep-alive connections publishing back to back (closed loop) for `--seconds` (5),
//!    counted until every subscriber has read every update; with the server's CPU per
//!    publish and per delivered event.
//!
//! Client and server share this machine's cores: the client's reading is part of every
//! latency. The soft `RLIMIT_NOFILE` is raised to the hard limit (each subscriber is one
//! descriptor here and one in the server).
//!
//! Run: `cargo build --release -p ferrophp && cargo run --release -p ferrophp-benches
//! --bin mercure_bench -- [--bin target/release/ferrophp] [--subscribers 10000]
//! [--rounds 10] [--small 100] [--publishers 8] [--seconds 5]`

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The publishers' HMAC key the server is started with.
const PUBLISHER_KEY: &str = "ferrophp-mercure-bench-publisher-key";
/// An HS256 token signed with [`PUBLISHER_KEY`], claims `{"mercure":{"publish":["*"]}}`
/// (made once with Python's `hmac`; the server checks it on every publish, so a wrong one
/// fails the run at its first POST).
const PUBLISHER_TOKEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJtZXJjdXJlIjp7InB1Ymxpc2giOlsiKiJdfX0.mR8VtAFNnKVvvegka6gTxH2uLkBAWYJLm4_zecThAb4";
const HUB: &str = "/.well-known/mercure";
/// Every stage waits at most this long for its deliveries.
const STAGE_TIMEOUT: Duration = Duration::from_secs(30);

struct Options {
    bin: PathBuf,
    subscribers: usize,
    rounds: usize,
    small: usize,
    publishers: usize,
    seconds: u64,
}

fn options() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut o = Options {
        bin: root.join("target/release/ferrophp"),
        subscribers: 10_000,
        rounds: 10,
        small: 100,
        publishers: 8,
        seconds: 5,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        let number = || {
            value
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag}: a positive number, got {value:?}"))
        };
        match flag.as_str() {
            "--bin" => o.bin = PathBuf::from(value),
            "--subscribers" => o.subscribers = number()?,
            "--rounds" => o.rounds = number()?,
            "--small" => o.small = number()?,
            "--publishers" => o.publishers = number()?,
            "--seconds" => o.seconds = number()? as u64,
            _ => return Err(format!("unknown flag {flag} (see the file's header)")),
        }
    }
    if !o.bin.exists() {
        return Err(format!(
            "{} does not exist: cargo build --release -p ferrophp (or --bin PATH)",
            o.bin.display()
        ));
    }
    Ok(o)
}

/// Raises the soft descriptor limit to the hard one; the limit now.
fn raise_nofile() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a valid, exclusive pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 1024;
    }
    rl.rlim_cur = rl.rlim_max;
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    // SAFETY: as above.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    rl.rlim_cur
}

/// The server under test; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    admin: SocketAddr,
    stderr: PathBuf,
}

impl Server {
    fn start(o: &Options) -> Result<Server, String> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/mercure");
        let stderr = std::env::temp_dir().join(format!("mercure-bench-{}.log", std::process::id()));
        let log = std::fs::File::create(&stderr).map_err(|e| e.to_string())?;
        let max_connections = (o.subscribers + 1000).to_string();
        let mut child = Command::new(&o.bin)
            .args(["serve", "--root"])
            .arg(&root)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--admin",
                "127.0.0.1:0",
                "--threads",
                "1",
                "--no-access-log",
                "--max-connections",
                &max_connections,
                "--mercure-publisher-jwt",
                PUBLISHER_KEY,
                "--mercure-anonymous",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", o.bin.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut admin, mut listen) = (None, None);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(a) = line.strip_prefix("ferrophp admin on http://") {
                    admin = a.trim().parse::<SocketAddr>().ok();
                }
                if let Some(a) = line.strip_prefix("ferrophp listening on http://") {
                    listen = a.trim().parse::<SocketAddr>().ok();
                }
                if let (Some(a), Some(l)) = (admin, listen) {
                    let _ = tx.send((l, a));
                    admin = None;
                }
            }
        });
        let mut server = Server {
            child,
            addr: "127.0.0.1:1".parse().unwrap(),
            admin: "127.0.0.1:1".parse().unwrap(),
            stderr,
        };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok((addr, admin)) => {
                server.addr = addr;
                server.admin = admin;
                Ok(server)
            }
            Err(_) => Err(format!("the server did not start:\n{}", server.log_tail())),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Resident set size, bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the server is running");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }

    /// utime + stime of every thread of the server.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .expect("the server is running");
        // The fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Duration::from_nanos(ticks * 1_000_000_000 / hz)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// What the subscriber tasks record, shared with the driver.
struct Board {
    epoch: Instant,
    subscribers: usize,
    /// Fan-out rounds: nanoseconds since `epoch` at which subscriber `i` read round `r`,
    /// at `r * subscribers + i`.
    arrivals: Vec<AtomicU64>,
    /// Deliveries of each fan-out round so far.
    per_round: Vec<AtomicUsize>,
    /// Events read by all subscribers of the throughput stage.
    counted: AtomicU64,
    /// Streams that ended or failed while they should have been open.
    lost: AtomicUsize,
}

/// An HTTP/1.1 chunked body decoder over the bytes read after the response head, handing
/// each complete SSE line to `line`.
#[derive(Default)]
struct Stream {
    raw: Vec<u8>,
    /// Bytes left in the current chunk (`None`: a size line comes next).
    remaining: Option<usize>,
    text: Vec<u8>,
}

impl Stream {
    fn feed(&mut self, bytes: &[u8], mut line: impl FnMut(&[u8])) {
        self.raw.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            match self.remaining {
                None => {
                    let Some(end) = self.raw[at..].windows(2).position(|w| w == b"\r\n") else {
                        break;
                    };
                    let size_text = std::str::from_utf8(&self.raw[at..at + end]).unwrap_or("");
                    let size =
                        usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                            .unwrap_or(0);
                    at += end + 2;
                    // The chunk's data and its CRLF; a zero size ends the body.
                    self.remaining = Some(size + 2);
                }
                Some(n) => {
                    let take = n.min(self.raw.len() - at);
                    if take == 0 {
                        break;
                    }
                    // The last two bytes of a chunk are its CRLF, not data.
                    let data_end = (n.saturating_sub(2)).min(take);
                    self.text.extend_from_slice(&self.raw[at..at + data_end]);
                    at += take;
                    self.remaining = if n == take { None } else { Some(n - take) };
                }
            }
        }
        self.raw.drain(..at);
        while let Some(end) = self.text.iter().position(|&b| b == b'\n') {
            line(&self.text[..end]);
            self.text.drain(..=end);
        }
    }
}

/// What a subscriber does with the ids it reads.
#[derive(Clone, Copy)]
enum Role {
    /// `fan-R`: records its arrival for round R.
    FanOut,
    /// `p...`: counts it.
    Count,
}

/// Opens one subscription to `topic`; Ok once its 200 head was read.
async fn subscribe(addr: SocketAddr, topic: &str) -> Result<(TcpStream, Vec<u8>), String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    stream
        .write_all(
            format!("GET {HUB}?topic={topic} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the response head".into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            if !head.starts_with(b"HTTP/1.1 200") {
                return Err(String::from_utf8_lossy(&head[..end]).into_owned());
            }
            let rest = head.split_off(end + 4);
            return Ok((stream, rest));
        }
    }
}

/// A subscriber's reading loop, until the stream ends or the task is aborted.
async fn read_events(
    index: usize,
    mut stream: TcpStream,
    rest: Vec<u8>,
    role: Role,
    board: Arc<Board>,
) {
    let mut decoder = Stream::default();
    let on_line = |line: &[u8]| {
        let Some(id) = line.strip_prefix(b"id: ") else {
            return;
        };
        match role {
            Role::FanOut => {
                let now = board.epoch.elapsed().as_nanos() as u64;
                let round = std::str::from_utf8(id)
                    .ok()
                    .and_then(|id| id.strip_prefix("fan-"))
                    .and_then(|r| r.parse::<usize>().ok());
                if let Some(r) = round.filter(|&r| r < board.per_round.len()) {
                    board.arrivals[r * board.subscribers + index].store(now, Ordering::Relaxed);
                    board.per_round[r].fetch_add(1, Ordering::Release);
                }
            }
            Role::Count => {
                board.counted.fetch_add(1, Ordering::Release);
            }
        }
    };
    decoder.feed(&rest, on_line);
    let mut buf = vec![0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => {
                board.lost.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Ok(n) => decoder.feed(&buf[..n], on_line),
        }
    }
}

/// Opens `n` subscribers on `topic` (at most 256 connecting at once) and spawns their
/// reading loops.
async fn open_subscribers(
    addr: SocketAddr,
    n: usize,
    topic: &'static str,
    role: Role,
    board: &Arc<Board>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let opening: Vec<_> = (0..n)
        .map(|_| {
            let gate = gate.clone();
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.expect("never closed");
                subscribe(addr, topic).await
            })
        })
        .collect();
    let mut readers = Vec::with_capacity(n);
    for (i, o) in opening.into_iter().enumerate() {
        let (stream, rest) = o.await.map_err(|e| e.to_string())??;
        readers.push(tokio::spawn(read_events(
            i,
            stream,
            rest,
            role,
            board.clone(),
        )));
    }
    Ok(readers)
}

/// A keep-alive publishing connection.
async fn publisher(addr: SocketAddr) -> Result<http1::SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Publishes `form`; Err unless 200.
async fn publish(sender: &mut http1::SendRequest<Full<Bytes>>, form: String) -> Result<(), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let request = hyper::Request::post(HUB)
        .header(hyper::header::HOST, "127.0.0.1")
        .header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {PUBLISHER_TOKEN}"),
        )
        .header(
            hyper::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(Full::new(Bytes::from(form)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("publish: {status} {:?}", body.to_bytes()));
    }
    Ok(())
}

/// One keep-alive HTTP/1.1 connection that has had one answer (the router's 404, no PHP)
/// and stays open, idle.
async fn idle_connection(addr: SocketAddr) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    stream
        .write_all(b"GET /no-such-file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the answer".into());
        }
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or("an answer without content-length")?;
        if got.len() >= end + 4 + length {
            return Ok(stream);
        }
    }
}

/// Stage 0, on a server of its own: what an idle keep-alive connection costs without a
/// subscription, for comparison with a subscriber's cost.
async fn connection_baseline(
    o: &Options,
    server: &Server,
    results: &mut Results,
) -> Result<(), String> {
    for c in 0..100 {
        drop(
            idle_connection(server.addr)
                .await
                .map_err(|e| format!("warm-up {c}: {e}"))?,
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.rss();
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let opening: Vec<_> = (0..o.subscribers)
        .map(|_| {
            let gate = gate.clone();
            let addr = server.addr;
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.expect("never closed");
                idle_connection(addr).await
            })
        })
        .collect();
    let mut open = Vec::with_capacity(o.subscribers);
    for c in opening {
        open.push(c.await.map_err(|e| e.to_string())??);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = server.rss();
    results.add(
        format!("for comparison, without the hub: {} idle keep-alive HTTP/1.1 connections, each after one answer (RSS delta / connections)", o.subscribers),
        format!("{:.2} KiB each", after.saturating_sub(before) as f64 / o.subscribers as f64 / 1024.0),
    );
    drop(open);
    Ok(())
}

/// Waits until `done()` or [`STAGE_TIMEOUT`].
async fn wait_until(what: &str, done: impl Fn() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + STAGE_TIMEOUT;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("{what}: not done within {STAGE_TIMEOUT:?}"));
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    Ok(())
}

/// The value of a `/metrics` family without labels.
async fn metric(admin: SocketAddr, name: &str) -> Result<f64, String> {
    let mut s = TcpStream::connect(admin).await.map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .await
        .map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no {name} on /metrics"))
}

/// Exact percentile of sorted `v`.
fn pct(v: &[u64], p: f64) -> u64 {
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

struct Results {
    rows: Vec<(String, String)>,
}

impl Results {
    fn add(&mut self, what: impl Into<String>, value: impl Into<String>) {
        let (what, value) = (what.into(), value.into());
        eprintln!("  {what}: {value}");
        self.rows.push((what, value));
    }
}

async fn run(o: &Options, server: &Server, results: &mut Results) -> Result<(), String> {
    let board = Arc::new(Board {
        epoch: Instant::now(),
        subscribers: o.subscribers,
        arrivals: (0..o.rounds * o.subscribers)
            .map(|_| AtomicU64::new(0))
            .collect(),
        per_round: (0..o.rounds).map(|_| AtomicUsize::new(0)).collect(),
        counted: AtomicU64::new(0),
        lost: AtomicUsize::new(0),
    });
    let mut pub0 = publisher(server.addr).await?;
    publish(&mut pub0, "topic=warm&data=x".into()).await?;

    // Warm-up: 100 subscribers come and go, so the baseline has the runtime's and the
    // allocator's first growth in it.
    let warm = open_subscribers(server.addr, 100, "warm", Role::Count, &board).await?;
    publish(&mut pub0, "topic=warm&data=x".into()).await?;
    wait_until("warm-up", || board.counted.load(Ordering::Acquire) >= 100).await?;
    for t in &warm {
        t.abort();
    }
    let admin = server.admin;
    let deadline = Instant::now() + STAGE_TIMEOUT;
    while metric(admin, "ferrophp_mercure_subscribers").await? > 0.0 {
        if Instant::now() > deadline {
            return Err("the warm-up subscribers never left".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = server.rss();

    // 1. Idle subscribers.
    eprintln!("opening {} subscribers ...", o.subscribers);
    let opened = Instant::now();
    let big = open_subscribers(server.addr, o.subscribers, "fan", Role::FanOut, &board).await?;
    let open_time = opened.elapsed();
    let registered = metric(admin, "ferrophp_mercure_subscribers").await? as usize;
    if registered != o.subscribers {
        return Err(format!(
            "{registered} subscribers registered, {} opened",
            o.subscribers
        ));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = server.rss();
    let per = rss_idle.saturating_sub(rss_before) as f64 / o.subscribers as f64;
    results.add(
        format!(
            "{} SSE subscribers opened (connect + 200 head)",
            o.subscribers
        ),
        format!("{:.2} s", open_time.as_secs_f64()),
    );
    results.add(
        "server RSS before / with them idle",
        format!(
            "{:.1} MiB / {:.1} MiB",
            rss_before as f64 / 1048576.0,
            rss_idle as f64 / 1048576.0
        ),
    );
    results.add(
        "server memory per idle subscriber (RSS delta / subscribers)",
        format!("{:.2} KiB (goal <= 8 KiB)", per / 1024.0),
    );

    // 2 and 3. One update to all, `rounds` times.
    let payload = "x".repeat(100);
    let mut latencies = Vec::with_capacity(o.rounds * o.subscribers);
    let mut round_p99 = Vec::new();
    let cpu_before = server.cpu();
    for r in 0..o.rounds {
        let sent = board.epoch.elapsed().as_nanos() as u64;
        publish(&mut pub0, format!("topic=fan&id=fan-{r}&data={payload}")).await?;
        wait_until(&format!("fan-out round {r}"), || {
            board.per_round[r].load(Ordering::Acquire) >= o.subscribers
        })
        .await?;
        let mut this: Vec<u64> = (0..o.subscribers)
            .map(|i| {
                board.arrivals[r * o.subscribers + i]
                    .load(Ordering::Relaxed)
                    .saturating_sub(sent)
            })
            .collect();
        this.sort_unstable();
        round_p99.push(pct(&this, 0.99));
        latencies.extend(this);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The pauses between rounds are idle time, but idle subscribers cost no CPU.
    let fan_cpu = server.cpu().saturating_sub(cpu_before);
    latencies.sort_unstable();
    results.add(
        format!(
            "one update to all {}: delivery latency p50 / p99 / max ({} rounds)",
            o.subscribers, o.rounds
        ),
        format!(
            "{} / {} / {}",
            ms(pct(&latencies, 0.5)),
            ms(pct(&latencies, 0.99)),
            ms(*latencies.last().unwrap())
        ),
    );
    round_p99.sort_unstable();
    results.add(
        "  p99 of each round: min / median / max",
        format!(
            "{} / {} / {}",
            ms(round_p99[0]),
            ms(round_p99[round_p99.len() / 2]),
            ms(*round_p99.last().unwrap())
        ),
    );
    let deliveries = (o.rounds * o.subscribers) as f64;
    results.add(
        "server CPU per delivered event, fan-out to all",
        format!(
            "{:.2} us ({:.0} ms CPU for {} deliveries)",
            fan_cpu.as_secs_f64() * 1e6 / deliveries,
            fan_cpu.as_secs_f64() * 1e3,
            deliveries
        ),
    );
    if board.lost.load(Ordering::Relaxed) != 0 {
        return Err(format!(
            "{} streams ended early",
            board.lost.load(Ordering::Relaxed)
        ));
    }
    for t in &big {
        t.abort();
    }
    drop(big);
    let deadline = Instant::now() + STAGE_TIMEOUT;
    while metric(admin, "ferrophp_mercure_subscribers").await? > 0.0 {
        if Instant::now() > deadline {
            return Err("the subscribers never left".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    results.add(
        "server RSS once they left",
        format!("{:.1} MiB", server.rss() as f64 / 1048576.0),
    );
    // Retained or leaked: as many new subscribers again, three times.
    let mut cycles = Vec::new();
    for _ in 0..3 {
        let again =
            open_subscribers(server.addr, o.subscribers, "again", Role::Count, &board).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        cycles.push(format!("{:.1}", server.rss() as f64 / 1048576.0));
        for t in &again {
            t.abort();
        }
        drop(again);
        let deadline = Instant::now() + STAGE_TIMEOUT;
        while metric(admin, "ferrophp_mercure_subscribers").await? > 0.0 {
            if Instant::now() > deadline {
                return Err("the new subscribers never left".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    results.add(
        format!(
            "server RSS with {} new subscribers after those left, 3 times over",
            o.subscribers
        ),
        format!("{} MiB", cycles.join(" / ")),
    );

    // 4. Publishes per second with a few subscribers.
    board.counted.store(0, Ordering::Release);
    let small = open_subscribers(server.addr, o.small, "rate", Role::Count, &board).await?;
    let published = Arc::new(AtomicU64::new(0));
    let cpu_before = server.cpu();
    let started = Instant::now();
    let end = started + Duration::from_secs(o.seconds);
    let mut loops = Vec::new();
    for c in 0..o.publishers {
        let published = published.clone();
        let addr = server.addr;
        let data = payload.clone();
        loops.push(tokio::spawn(async move {
            let mut p = publisher(addr).await?;
            let mut n = 0u64;
            while Instant::now() < end {
                publish(&mut p, format!("topic=rate&id=p{c}-{n}&data={data}")).await?;
                published.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
            Ok::<_, String>(())
        }));
    }
    for l in loops {
        l.await.map_err(|e| e.to_string())??;
    }
    let answered = started.elapsed();
    let total = published.load(Ordering::Relaxed);
    let expected = total * o.small as u64;
    wait_until("throughput deliveries", || {
        board.counted.load(Ordering::Acquire) >= expected
    })
    .await?;
    let delivered_at = started.elapsed();
    let rate_cpu = server.cpu().saturating_sub(cpu_before);
    if board.counted.load(Ordering::Acquire) != expected || board.lost.load(Ordering::Relaxed) != 0
    {
        return Err(format!(
            "{} events read, {expected} expected; {} streams ended",
            board.counted.load(Ordering::Acquire),
            board.lost.load(Ordering::Relaxed)
        ));
    }
    results.add(
        format!(
            "publishes per second, {} subscribers ({} keep-alive publishers, {} s)",
            o.small, o.publishers, o.seconds
        ),
        format!(
            "{:.0}/s ({total} publishes, each read by all {}; last read {:.0} ms after the last answer)",
            total as f64 / delivered_at.as_secs_f64(),
            o.small,
            (delivered_at - answered).as_secs_f64() * 1e3
        ),
    );
    results.add(
        "server CPU per publish / per delivered event, with them",
        format!(
            "{:.1} us / {:.2} us",
            rate_cpu.as_secs_f64() * 1e6 / total as f64,
            rate_cpu.as_secs_f64() * 1e6 / expected as f64
        ),
    );
    for t in small {
        t.abort();
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mercure_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = raise_nofile();
    if limit < o.subscribers as u64 + 200 {
        eprintln!(
            "mercure_bench: the descriptor limit {limit} is too low for {} subscribers (ulimit -Hn)",
            o.subscribers
        );
        return ExitCode::from(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut results = Results { rows: Vec::new() };
    let started = Instant::now();
    let outcome = Server::start(&o).and_then(|baseline| {
        let outcome = runtime.block_on(connection_baseline(&o, &baseline, &mut results));
        if outcome.is_err() {
            eprintln!("server log:\n{}", baseline.log_tail());
        }
        outcome
    });
    let server = match outcome.and_then(|()| Server::start(&o)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mercure_bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(&o, &server, &mut results));
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Err(e) = outcome {
        eprintln!("mercure_bench: {e}\nserver log:\n{}", server.log_tail());
        return ExitCode::FAILURE;
    }
    println!(
        "\nMercure hub through `ferrophp serve` ({}), {} cores, {:.0} s\n",
        o.bin.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        started.elapsed().as_secs_f64()
    );
    println!("| measure | result |\n|---|---|");
    for (what, value) in &results.rows {
        println!("| {what} | {value} |");
    }
    ExitCode::SUCCESS
}
