//! Request deadlines through blocking calls (issue 25), for real: a PHP request stuck in
//! each kind of wait a real application meets ends within a second of its limit, in
//! classic and worker mode, under PHP's `max_execution_time` (500) and under the server's
//! `--request-timeout` (504); what it held is released at once; the next request on the
//! same (only) PHP thread succeeds. The peers are real: a TCP listener that never
//! answers, one that trickles a byte per 100 ms, a `flock` process holding a lock, a second
//! ferrophp server whose request holds a session, private MariaDB and PostgreSQL servers
//! (`common/databases.rs`) running `SLEEP(30)` / `pg_sleep(30)`, `proc_open('sleep')`.
//! Each test prints, per kind, the time from the limit to the response (run with
//! `--nocapture`; docs/operating.md records them).
//!
//! Also here: a thread stuck where nothing reaches it (glibc's pclose() waiting for a
//! command) is retired and replaced, counted, ends cleanly when the command ends, and past
//! `--max-retired-threads` the process exits 75 for `--supervise` to start a new one;
//! `ferrophp_request_heartbeat()`; the slow log (one JSON entry with the stack of a
//! request sleeping in a nested function, whose sleep is not shortened).
//!
//! The scripts are `test-data/deadlines/kinds.php`, run by `run.php` (classic) and
//! `worker.php` (worker mode).

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::db::{databases, Databases};
use common::{wait_until, RawResponse, Server};

/// Every limit in these tests.
const LIMIT: Duration = Duration::from_secs(1);
/// How long past its limit a request may take to end.
const SLACK: Duration = Duration::from_secs(1);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/deadlines")
        .canonicalize()
        .expect("test-data/deadlines exists")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Classic,
    Worker,
}

impl Mode {
    fn script(self) -> &'static str {
        match self {
            Mode::Classic => "/run.php",
            Mode::Worker => "/worker.php",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Limit {
    /// `-d max_execution_time=1`: PHP's own timer, PHP's 500.
    TimeLimit,
    /// `--request-timeout 1s` with max_execution_time=0: the server's, a 504.
    RequestTimeout,
}

impl Limit {
    fn status(self) -> u16 {
        match self {
            Limit::TimeLimit => 500,
            Limit::RequestTimeout => 504,
        }
    }
}

/// A TCP peer that accepts (the kernel does, into the backlog) and never says anything.
fn blackhole() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

/// An HTTP peer that answers with a large body, one byte every 100 ms; records when a
/// client's connection went away.
struct Trickle {
    addr: SocketAddr,
    closed: Arc<Mutex<Vec<Instant>>>,
}

fn trickle() -> Trickle {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let closed = Arc::new(Mutex::new(Vec::new()));
    let record = closed.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let record = record.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n";
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                loop {
                    std::thread::sleep(Duration::from_millis(100));
                    if conn.write_all(b"x").is_err() {
                        record.lock().unwrap().push(Instant::now());
                        return;
                    }
                }
            });
        }
    });
    Trickle { addr, closed }
}

/// A `flock` process (util-linux) holding an exclusive lock on `path`; killed on drop.
struct LockHolder(Child);

impl LockHolder {
    fn hold(path: &Path) -> LockHolder {
        Self::hold_for(path, "60")
    }

    fn hold_for(path: &Path, seconds: &str) -> LockHolder {
        let child = Command::new("flock")
            .arg(path)
            .args(["sleep", seconds])
            .stdin(Stdio::null())
            .spawn()
            .expect("flock (util-linux) runs");
        assert!(
            wait_until(Duration::from_secs(5), || is_locked(path)),
            "flock never took {}",
            path.display()
        );
        LockHolder(child)
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether someone holds an exclusive lock on `path` (a test of our own, LOCK_NB).
fn is_locked(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own, released with it.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    !free
}

/// A PHP thread's kernel thread id, from `kind=hello`.
fn hello(server: &Server, mode: Mode) -> String {
    let r = server.get(&format!("{}?kind=hello", mode.script()));
    assert_eq!(r.status, 200, "{r:?}\n{}", server.stderr());
    r.text()
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("{:?}", r.text()))
        .to_owned()
}

/// One request run past its limit: how long after the limit its answer came.
#[derive(Debug)]
struct Measured {
    kind: String,
    status: u16,
    over_limit: Duration,
}

/// Runs `query` (a kind that blocks), checks it ended with `limit`'s status within
/// [`SLACK`] of the limit, and that the next request runs on the same thread.
fn past_limit(server: &Server, mode: Mode, limit: Limit, label: &str, query: &str) -> Measured {
    let tid = hello(server, mode);
    let started = Instant::now();
    let r = server.get(&format!("{}?{query}", mode.script()));
    let took = started.elapsed();
    check_ended(server, limit, label, &r, took);
    assert_eq!(
        hello(server, mode),
        tid,
        "{label}: the next request ran on another thread"
    );
    Measured {
        kind: label.to_owned(),
        status: r.status,
        over_limit: took.saturating_sub(LIMIT),
    }
}

fn check_ended(server: &Server, limit: Limit, label: &str, r: &RawResponse, took: Duration) {
    assert_eq!(
        r.status,
        limit.status(),
        "{label}: {:?} after {took:?}\n{}",
        r.text(),
        server.stderr()
    );
    assert!(
        took >= LIMIT - Duration::from_millis(50) && took <= LIMIT + SLACK,
        "{label}: ended after {took:?}, limit {LIMIT:?}"
    );
    assert!(
        !r.text().contains(" after "),
        "{label}: the blocking call returned and the script finished: {:?}",
        r.text()
    );
}

/// Threads of `pid` in `state` (R, S, Z...) that are children: zombies left behind.
fn zombie_children(pid: u32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let mut f = rest.split_whitespace();
            let state = f.next();
            let ppid = f.next().and_then(|p| p.parse::<u32>().ok());
            state == Some("Z") && ppid == Some(pid)
        })
        .count()
}

/// Established unix-socket connections between process `pid` and the socket at `path`
/// (from `ss`: the server side names the path, the client side its peer inode).
fn connections_to(pid: u32, path: &Path) -> usize {
    let out = Command::new("ss")
        .args(["-xpn"])
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let path = path.to_string_lossy();
    // Server-side sockets of that path: their own inodes.
    let server_inodes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&*path))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 5).then(|| f[5])
        })
        .collect();
    let me = format!("pid={pid},");
    text.lines()
        .filter(|l| l.contains(&me))
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 7 && server_inodes.contains(&f[7])
        })
        .count()
}

fn print_table(title: &str, rows: &[Measured]) {
    let mut out = format!("\n{title}: time from the limit to the response\n");
    for m in rows {
        out.push_str(&format!(
            "  {:<34} {}  +{:>4} ms\n",
            m.kind,
            m.status,
            m.over_limit.as_millis()
        ));
    }
    eprintln!("{out}");
}

/// Everything the kinds need around one server.
struct Rig {
    server: Server,
    /// Serves the other request that holds a session.
    holder: Server,
    sessions: tempfile::TempDir,
    uploads: tempfile::TempDir,
    locks: tempfile::TempDir,
    dbs: Arc<Databases>,
}

fn rig(mode: Mode, limit: Limit) -> Rig {
    let dbs = databases();
    let sessions = tempfile::tempdir().unwrap();
    let uploads = tempfile::tempdir().unwrap();
    let locks = tempfile::tempdir().unwrap();
    let save_path = format!("session.save_path={}", sessions.path().display());
    let upload_dir = format!("upload_tmp_dir={}", uploads.path().display());
    let worker = format!("{},1", root().join("worker.php").display());
    let env = dbs.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut args = vec!["--threads", "1", "-d", &save_path, "-d", &upload_dir];
    match limit {
        Limit::TimeLimit => args.extend(["-d", "max_execution_time=1"]),
        Limit::RequestTimeout => {
            args.extend(["-d", "max_execution_time=0", "--request-timeout", "1s"])
        }
    }
    if mode == Mode::Worker {
        args.extend(["--worker", &worker]);
    }
    let server = Server::start_with_env(&root(), &args, &env);
    let holder = Server::start_with_env(
        &root(),
        &[
            "--threads",
            "2",
            "-d",
            &save_path,
            "-d",
            "max_execution_time=0",
        ],
        &env,
    );
    Rig {
        server,
        holder,
        sessions,
        uploads,
        locks,
        dbs,
    }
}

/// The holder server's request takes session `sid` and keeps it; returns once it has it.
fn hold_session(rig: &Rig, handler: &str, sid: &str) -> std::thread::JoinHandle<()> {
    let addr = rig.holder.addr;
    let path = format!("/run.php?kind=session_hold&handler={handler}&sid={sid}&seconds=20");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let handle = std::thread::spawn(move || {
        let _ = common::exchange(addr, request.as_bytes(), Duration::from_secs(30));
    });
    let lock = session_lock(rig, handler, sid);
    assert!(
        wait_until(Duration::from_secs(10), || is_locked(&lock)),
        "the other request never took session {sid} ({handler})"
    );
    handle
}

/// The file whose flock is session `sid`'s lock.
fn session_lock(rig: &Rig, handler: &str, sid: &str) -> PathBuf {
    match handler {
        "user" => rig.sessions.path().join(format!("user_lock_{sid}")),
        _ => rig.sessions.path().join(format!("sess_{sid}")),
    }
}

fn every_kind(mode: Mode, limit: Limit) {
    let rig = rig(mode, limit);
    let server = &rig.server;
    let hole = blackhole();
    let port = hole.local_addr().unwrap().port();
    let peer = trickle();
    let mut rows = Vec::new();
    let run = |rows: &mut Vec<Measured>, label: &str, query: &str| {
        rows.push(past_limit(server, mode, limit, label, query));
    };
    let tag = format!("{mode:?}{limit:?}").to_lowercase();

    run(
        &mut rows,
        "socket read (blackhole peer)",
        &format!("kind=socket&port={port}"),
    );
    run(
        &mut rows,
        "socket read, no PHP call after it",
        &format!("kind=plain&port={port}"),
    );
    run(
        &mut rows,
        "sleep (nested function)",
        "kind=sleep&seconds=30",
    );
    run(&mut rows, "usleep", "kind=usleep&seconds=30");
    run(&mut rows, "PHP code (busy loop)", "kind=busy&seconds=30");

    // flock: this request holds `held`, waits for `wanted` (another process has it).
    let held = rig.locks.path().join("held");
    let wanted = rig.locks.path().join("wanted");
    File::create(&held).unwrap();
    let _holder = LockHolder::hold(&wanted);
    let query = format!(
        "kind=flock&held={}&wanted={}",
        held.display(),
        wanted.display()
    );
    let m = past_limit(server, mode, limit, "flock (held by a process)", &query);
    assert!(!is_locked(&held), "the request's own flock outlived it");
    rows.push(m);

    // Sessions another request holds, then a session this request holds while stuck.
    for handler in ["files", "user"] {
        let sid = format!("{tag}other{handler}");
        let other = hold_session(&rig, handler, &sid);
        // Its data file, with data, dated back (not so far that a session sweep removes
        // it): any write by the waiting request would show.
        let data = match handler {
            "user" => rig.sessions.path().join(format!("user_sess_{sid}")),
            _ => rig.sessions.path().join(format!("sess_{sid}")),
        };
        let dated = std::time::SystemTime::now() - Duration::from_secs(600);
        let mut file = File::options()
            .create(true)
            .append(true)
            .open(&data)
            .unwrap();
        file.write_all(b"k|s:1:\"v\";").unwrap();
        file.set_modified(dated).unwrap();
        drop(file);
        let query = format!("kind=session&handler={handler}&sid={sid}&lazy_write=0");
        let m = past_limit(
            server,
            mode,
            limit,
            &format!("session lock ({handler} handler)"),
            &query,
        );
        rows.push(m);
        // Without its lock it must not have written the session back (lazy_write=0 would
        // write it even unchanged).
        let modified = std::fs::metadata(&data).unwrap().modified().unwrap();
        assert!(
            modified < dated + Duration::from_secs(1),
            "{handler}: a session read without its lock was written back"
        );
        drop(other);
        let sid = format!("{tag}mine{handler}");
        let query = format!("kind=session_hold&handler={handler}&sid={sid}&port={port}");
        let tid = hello(server, mode);
        let started = Instant::now();
        let r = server.get(&format!("{}?{query}", mode.script()));
        let took = started.elapsed();
        check_ended(server, limit, "session held, socket read", &r, took);
        assert!(
            !is_locked(&session_lock(&rig, handler, &sid)),
            "session {sid} ({handler}) still locked after its request ended"
        );
        assert_eq!(hello(server, mode), tid);
    }

    // proc_close() waiting for a child that does not exit: the child is reaped later.
    run(
        &mut rows,
        "proc_close (child runs on)",
        "kind=proc&seconds=3",
    );

    // A request with an upload, stuck: its temp file goes with it.
    let body = "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\
                Content-Type: text/plain\r\n\r\nupload body\r\n--b--\r\n";
    let request = format!(
        "POST {}?kind=socket&port={port} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {}\r\n\r\n{body}",
        mode.script(),
        body.len()
    );
    let started = Instant::now();
    let r = server.raw(request.as_bytes());
    check_ended(server, limit, "upload, socket read", &r, started.elapsed());
    let left: Vec<_> = std::fs::read_dir(rig.uploads.path()).unwrap().collect();
    assert!(left.is_empty(), "upload temp files left: {left:?}");

    // Databases: the query in flight is cut, its connection closed.
    let my_socket = rig.dbs.mariadb.socket.clone();
    for api in ["mysqli", "pdo_mysql"] {
        let m = past_limit(
            server,
            mode,
            limit,
            &format!("MariaDB SELECT SLEEP(30) ({api})"),
            &format!("kind={api}&seconds=30"),
        );
        assert_eq!(
            connections_to(server.pid(), &my_socket),
            0,
            "{api}: ferrophp still holds a connection to MariaDB"
        );
        rows.push(m);
    }
    for api in ["pgsql", "pdo_pgsql"] {
        let m = past_limit(
            server,
            mode,
            limit,
            &format!("PostgreSQL pg_sleep(30) ({api})"),
            &format!("kind={api}&seconds=30"),
        );
        rows.push(m);
        // The backend, which checks its client every 100 ms, saw it go.
        let active = || {
            rig.dbs
                .postgres
                .sql(
                    "app",
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%deadline-probe%' \
                     AND pid <> pg_backend_pid()",
                )
                .trim()
                .to_owned()
        };
        assert!(
            wait_until(Duration::from_secs(3), || active() == "0"),
            "{api}: the query still runs on the server: its connection was not closed"
        );
    }

    // curl: a transfer that never ends (a byte per 100 ms); the peer sees us hang up.
    let m = past_limit(
        server,
        mode,
        limit,
        "curl transfer (trickling peer)",
        &format!("kind=curl&port={}", peer.addr.port()),
    );
    let answered = Instant::now();
    assert!(
        wait_until(Duration::from_secs(2), || !peer
            .closed
            .lock()
            .unwrap()
            .is_empty()),
        "the trickling peer never saw the transfer end"
    );
    let _ = answered;
    rows.push(m);

    // The proc_open child (sleep 3) has ended by now: reaped, not a zombie.
    assert!(
        wait_until(Duration::from_secs(5), || zombie_children(server.pid())
            == 0),
        "a child whose wait the deadline cut is left a zombie"
    );
    drop(hole);
    print_table(&format!("{mode:?}, {limit:?} (1 s)"), &rows);
}

#[test]
fn classic_time_limit_ends_every_blocking_kind() {
    every_kind(Mode::Classic, Limit::TimeLimit);
}

#[test]
fn classic_request_timeout_ends_every_blocking_kind() {
    every_kind(Mode::Classic, Limit::RequestTimeout);
}

#[test]
fn worker_time_limit_ends_every_blocking_kind() {
    every_kind(Mode::Worker, Limit::TimeLimit);
}

#[test]
fn worker_request_timeout_ends_every_blocking_kind() {
    every_kind(Mode::Worker, Limit::RequestTimeout);
}

/// GET `path` on the admin listener; its body.
fn admin_get(server: &Server, path: &str) -> String {
    let admin = server.admin_addr().expect("the admin listener");
    let r = common::exchange(
        admin,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(5),
    )
    .expect("admin answers");
    let r = common::parse_response(&r).expect("an admin response");
    assert_eq!(r.status, 200);
    r.text()
}

/// The value of an unlabelled metric.
fn metric(server: &Server, name: &str) -> u64 {
    admin_get(server, "/metrics")
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

/// A request stuck where no signal or replaced function reaches it (shell_exec: glibc's
/// pclose() waits for the command in a loop of its own): at its deadline + grace the
/// client gets 504 from the HTTP side, the thread is retired and a new one serves the
/// next request at once; it is counted; once the command ends the stuck thread comes back
/// and ends cleanly. Both modes. Past --max-retired-threads stuck at once, the process
/// drains and exits 75.
#[test]
fn a_thread_stuck_past_its_deadline_is_retired_and_replaced() {
    let worker = format!("{},1", root().join("worker.php").display());
    let mut server = Server::start(
        &root(),
        &[
            "--threads",
            "1",
            "--worker",
            &worker,
            "--request-timeout",
            "1s",
            "--retire-grace",
            "1s",
            "--max-retired-threads",
            "1",
            "-d",
            "max_execution_time=0",
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let grace = Duration::from_secs(1);
    let mut rows = Vec::new();
    for (mode, seconds) in [(Mode::Classic, 3), (Mode::Worker, 3)] {
        let before = hello(&server, mode);
        let started = Instant::now();
        let r = server.get(&format!("{}?kind=stuck&seconds={seconds}", mode.script()));
        let took = started.elapsed();
        assert_eq!(
            r.status,
            504,
            "{mode:?}: {:?}\n{}",
            r.text(),
            server.stderr()
        );
        assert!(r.text().contains("Gateway Timeout"), "{:?}", r.text());
        assert!(
            took >= LIMIT + grace - Duration::from_millis(50) && took <= LIMIT + grace + SLACK,
            "{mode:?}: answered after {took:?}"
        );
        rows.push(Measured {
            kind: format!("{mode:?}: stuck in pclose() (retired)"),
            status: r.status,
            over_limit: took.saturating_sub(LIMIT),
        });
        // The pool is at full width again at once: a new thread serves.
        let started = Instant::now();
        let after = hello(&server, mode);
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_ne!(after, before, "{mode:?}: the stuck thread served again");
        assert_eq!(metric(&server, "ferrophp_threads_stuck"), 1);
        assert!(
            admin_get(&server, "/threads").contains("\"state\":\"retired\""),
            "{}",
            admin_get(&server, "/threads")
        );
        // The command ends: the retired thread comes back, and ends without serving.
        assert!(
            wait_until(Duration::from_secs(seconds + 2), || metric(
                &server,
                "ferrophp_threads_stuck"
            ) == 0),
            "{mode:?}: the retired thread never ended\n{}",
            server.stderr()
        );
        assert!(!admin_get(&server, "/threads").contains("\"state\":\"retired\""));
        assert_eq!(hello(&server, mode), after);
    }
    assert_eq!(metric(&server, "ferrophp_threads_retired_total"), 2);
    let timed_out = admin_get(&server, "/metrics");
    assert!(
        timed_out.contains("ferrophp_requests_timed_out_total{limit=\"request_timeout\"} 2"),
        "{timed_out}"
    );
    assert_eq!(
        server
            .stderr()
            .matches("a retired PHP thread came back from what it was stuck in")
            .count(),
        2
    );

    // A response already streaming when its thread is retired is cut, never completed.
    let started = Instant::now();
    let bytes = common::exchange(
        server.addr,
        b"GET /run.php?kind=stuck_streaming&seconds=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .expect("a response");
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked"));
    assert!(
        !text.ends_with("0\r\n\r\n"),
        "a cut response ended as complete"
    );
    assert!(!text.contains("command ended"));
    assert!(took <= LIMIT + grace + SLACK, "cut after {took:?}");
    assert!(wait_until(Duration::from_secs(5), || metric(
        &server,
        "ferrophp_threads_stuck"
    ) == 0));

    // Two stuck at once, past the cap of one: the process asks to be replaced.
    std::thread::scope(|s| {
        for mode in [Mode::Classic, Mode::Worker] {
            let server = &server;
            s.spawn(move || {
                let r = server.get(&format!("{}?kind=stuck&seconds=6", mode.script()));
                assert_eq!(r.status, 504);
            });
        }
    });
    let status = server.wait_exit(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(75),
        "{}",
        server.stderr()
    );
    assert!(server
        .stderr()
        .contains("asking for this process to be replaced"));
    print_table(
        "Retirement (--request-timeout 1s, --retire-grace 1s)",
        &rows,
    );
}

/// Under `--supervise`, the process that exceeded --max-retired-threads is replaced by a
/// new one on the same socket.
#[test]
fn past_the_cap_the_supervisor_starts_a_new_process() {
    let server = Server::start(
        &root(),
        &[
            "--supervise",
            "--threads",
            "1",
            "--request-timeout",
            "1s",
            "--retire-grace",
            "500ms",
            "--max-retired-threads",
            "0",
        ],
    );
    let first = server.get("/run.php?kind=pid").text();
    let r = server.get("/run.php?kind=stuck&seconds=5");
    assert_eq!(r.status, 504);
    assert!(
        wait_until(Duration::from_secs(15), || {
            let r = common::exchange(
                server.addr,
                b"GET /run.php?kind=pid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                Duration::from_secs(5),
            );
            r.ok()
                .and_then(|b| common::parse_response(&b))
                .is_some_and(|r| r.status == 200 && r.text() != first)
        }),
        "no new process took over\n{}",
        server.stderr()
    );
    assert!(server.stderr().contains("exit 75"), "{}", server.stderr());
}

/// `ferrophp_request_heartbeat()`: a job that beats runs past both limits; one that does
/// not is ended at them; bad values are refused with clear errors; outside a request it
/// is an error.
#[test]
fn heartbeats_extend_both_limits() {
    for mode in [Mode::Classic, Mode::Worker] {
        let worker = format!("{},1", root().join("worker.php").display());
        let mut args = vec![
            "--threads",
            "1",
            "-d",
            "max_execution_time=2",
            "--request-timeout",
            "2s",
        ];
        if mode == Mode::Worker {
            args.extend(["--worker", &worker]);
        }
        let server = Server::start(&root(), &args);
        let script = mode.script();
        // Four seconds of work, a beat of 2 s after each second: past both 2 s limits.
        let started = Instant::now();
        let r = server.get(&format!("{script}?kind=heartbeat&seconds=4&beat=2"));
        assert_eq!(
            r.status,
            200,
            "{mode:?}: {:?}\n{}",
            r.text(),
            server.stderr()
        );
        assert!(r.text().starts_with("job done"), "{:?}", r.text());
        assert!(started.elapsed() >= Duration::from_secs(4));
        // Without beats it ends at the limit (PHP's timer fires first: its 500).
        let started = Instant::now();
        let r = server.get(&format!("{script}?kind=heartbeat&seconds=4"));
        assert!(r.status >= 500, "{mode:?}: {:?}", r.text());
        assert!(started.elapsed() < Duration::from_secs(3));
        let r = server.get(&format!("{script}?kind=heartbeat_args"));
        assert_eq!(r.status, 200);
        let expected = "ValueError: ferrophp_request_heartbeat(): Argument #1 ($seconds) must be \
                        between 1 and 999999999";
        assert_eq!(
            r.text(),
            format!("{expected}\n{expected}\n{expected}\nTypeError\nok: true"),
            "{mode:?}"
        );
    }
    // Outside a request (a worker script's boot) it is an Error.
    let dir = tempfile::tempdir().unwrap();
    let boot = dir.path().join("boot.php");
    std::fs::write(
        &boot,
        "<?php\ntry { ferrophp_request_heartbeat(5); } catch (Error $e) { $boot = $e->getMessage(); }\n\
         while (ferrophp_handle_request(function () use ($boot) { echo $boot; })) {}\n",
    )
    .unwrap();
    let spec = format!("{},1", boot.display());
    let server = Server::start(dir.path(), &["--threads", "1", "--worker", &spec]);
    let r = server.get("/boot.php");
    assert_eq!(
        r.text(),
        "ferrophp_request_heartbeat() can only be called while a request is served"
    );
}

/// The slow log: a request sleeping in a nested function gets exactly one JSON entry with
/// that stack, captured on its thread; its sleep is not shortened; a request busy in PHP
/// code is captured at a VM safe point. Both modes; counted in /metrics.
#[test]
fn slow_requests_get_one_entry_with_their_stack() {
    let worker = format!("{},1", root().join("worker.php").display());
    let server = Server::start(
        &root(),
        &[
            "--threads",
            "1",
            "--worker",
            &worker,
            "--slowlog-ms",
            "300",
            "--log-format",
            "json",
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let entries = |uri: &str| -> Vec<serde_json::Value> {
        server
            .stderr()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["target"] == "slowlog" && v["uri"] == uri)
            .collect()
    };
    let mut logged = 0;
    for mode in [Mode::Classic, Mode::Worker] {
        let uri = format!("{}?kind=sleep&seconds=1", mode.script());
        let started = Instant::now();
        let r = server.get(&uri);
        let took = started.elapsed();
        assert_eq!(r.status, 200, "{:?}", r.text());
        assert!(r.text().starts_with("slept after 1"), "{:?}", r.text());
        assert!(
            took >= Duration::from_secs(1),
            "the sleep was cut short: {took:?}"
        );
        assert!(wait_until(Duration::from_secs(2), || !entries(&uri).is_empty()));
        // Exactly one, even though the request ran on well past the threshold.
        std::thread::sleep(Duration::from_millis(300));
        let found = entries(&uri);
        assert_eq!(found.len(), 1, "{mode:?}: {found:?}");
        let e = &found[0];
        assert_eq!(e["method"], "GET");
        assert_eq!(e["level"], "WARN");
        assert_eq!(e["captured_in"], "wait");
        let elapsed = e["elapsed_ms"].as_u64().unwrap();
        assert!((300..800).contains(&elapsed), "{e}");
        assert!(e["thread"].as_str().unwrap().starts_with("php-"));
        assert!(e["tid"].as_i64().unwrap() > 0);
        let functions: Vec<&str> = e["stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["function"].as_str().unwrap())
            .collect();
        assert_eq!(
            functions[..4],
            ["sleep", "deadline_inner", "deadline_outer", "deadline_run"],
            "{e}"
        );
        assert_eq!(*functions.last().unwrap(), "{main}");
        let sleep = &e["stack"][0];
        assert_eq!(sleep["args"], serde_json::json!(["int(1)"]));
        assert!(sleep["file"].as_str().unwrap().ends_with("kinds.php"));
        assert_eq!(e["stack"][1]["function"], "deadline_inner");
        assert!(e["stack"][1]["line"].as_u64().unwrap() > 0);
        logged += 1;

        // PHP code, not a wait: the VM stops at its next loop iteration to capture.
        let uri = format!("{}?kind=busy&seconds=1", mode.script());
        assert_eq!(server.get(&uri).status, 200);
        assert!(wait_until(Duration::from_secs(2), || entries(&uri).len() == 1));
        let e = &entries(&uri)[0];
        assert_eq!(e["captured_in"], "vm", "{e}");
        assert_eq!(e["stack"][0]["function"], "deadline_run");
        assert!(e["file"].as_str().unwrap().ends_with("kinds.php"));
        logged += 1;

        // Blocked in flock() (a process holds the lock for a while): the slow-log signal's
        // handler captures on that thread, and the wait goes on (the kernel restarts it).
        let locks = tempfile::tempdir().unwrap();
        let (held, wanted) = (locks.path().join("held"), locks.path().join("wanted"));
        File::create(&held).unwrap();
        let holder = LockHolder::hold_for(&wanted, "1.2");
        let uri = format!(
            "{}?kind=flock&held={}&wanted={}",
            mode.script(),
            held.display(),
            wanted.display()
        );
        let r = server.get(&uri);
        assert_eq!(r.status, 200, "{:?}", r.text());
        assert!(
            r.text().starts_with("flock returned true"),
            "{:?}",
            r.text()
        );
        drop(holder);
        assert!(wait_until(Duration::from_secs(2), || entries(&uri).len() == 1));
        let e = &entries(&uri)[0];
        assert_eq!(e["captured_in"], "signal", "{e}");
        assert_eq!(e["stack"][0]["function"], "flock");
        assert_eq!(e["stack"][1]["function"], "deadline_flock");
        logged += 1;

        // A fast request gets none.
        let uri = format!("{}?kind=hello", mode.script());
        assert_eq!(server.get(&uri).status, 200);
        std::thread::sleep(Duration::from_millis(400));
        assert!(entries(&uri).is_empty());
    }
    assert_eq!(metric(&server, "ferrophp_slow_requests_total"), logged);
}

/// One count of slow requests for both views: a request past `--slowlog-ms` (its stack
/// in the slow log), past `--slow-request-ms` (a warning when it ends), or past both is
/// counted once, and `/metrics` (`ferrophp_slow_requests_total`) and php-fpm's `/status`
/// page (`slow requests`, text and JSON) say the same number; a fast request adds none.
#[test]
fn slow_requests_count_once_in_metrics_and_in_status() {
    for (flags, entries) in [
        (&["--slowlog-ms", "500"][..], 1),
        (&["--slow-request-ms", "500"][..], 0),
        (&["--slowlog-ms", "500", "--slow-request-ms", "300"][..], 1),
    ] {
        let mut args = vec![
            "--threads",
            "1",
            "--log-format",
            "json",
            "--admin",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(flags);
        let server = Server::start(&root(), &args);
        let views = || {
            let text = admin_get(&server, "/status");
            let json: serde_json::Value =
                serde_json::from_str(&admin_get(&server, "/status?json")).unwrap();
            (
                metric(&server, "ferrophp_slow_requests_total"),
                text,
                json["slow requests"].as_u64().unwrap(),
            )
        };
        let (metric_before, text_before, json_before) = views();
        assert_eq!((metric_before, json_before), (0, 0), "{flags:?}");
        assert!(
            text_before.contains("slow requests:        0\n"),
            "{text_before}"
        );

        let uri = "/run.php?kind=sleep&seconds=1";
        let r = server.get(uri);
        assert_eq!(r.status, 200, "{flags:?}: {:?}", r.text());
        // The one PHP thread takes this request only once it has counted the one before
        // (a request is counted when it ends, which may be just after its response).
        assert_eq!(server.get("/run.php?kind=hello").status, 200);
        let slow_log = || {
            server
                .stderr()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| v["target"] == "slowlog" && v["uri"] == uri)
                .count()
        };
        wait_until(Duration::from_secs(5), || slow_log() >= entries);
        assert_eq!(slow_log(), entries, "{flags:?}");
        let (metric_after, text_after, json_after) = views();
        assert_eq!(metric_after, 1, "{flags:?}: /metrics");
        assert_eq!(json_after, 1, "{flags:?}: /status?json");
        assert!(
            text_after.contains("slow requests:        1\n"),
            "{flags:?}: /status\n{text_after}"
        );
    }
}

/// Our signals reach PHP threads at any time (the slow log's, a kick that raced the end
/// of a request): a wait whose request is not past its deadline must still last as long
/// as it was asked to. Both signals are sent to the serving thread every 10 ms while it
/// waits in usleep, sleep, time_nanosleep, a socket read with a 0.3 s timeout (poll) and
/// stream_select (select).
#[test]
fn our_signals_never_cut_a_wait_short() {
    let worker = format!("{},1", root().join("worker.php").display());
    let server = Server::start(&root(), &["--threads", "1", "--worker", &worker]);
    let hole = blackhole();
    let port = hole.local_addr().unwrap().port();
    for mode in [Mode::Classic, Mode::Worker] {
        let tid: i32 = hello(&server, mode).parse().unwrap();
        let pid = server.pid() as i32;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let signaller = {
            let (stop, sent) = (stop.clone(), sent.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for offset in [3, 4] {
                        // SAFETY: tgkill only sends a signal to that thread of that
                        // process; both handlers are installed (the server started PHP).
                        unsafe {
                            libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGRTMIN() + offset)
                        };
                        sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let r = server.get(&format!("{}?kind=waits&port={port}", mode.script()));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        signaller.join().unwrap();
        assert_eq!(
            r.status,
            200,
            "{mode:?}: {:?}\n{}",
            r.text(),
            server.stderr()
        );
        let took: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
        for (wait, at_least) in [
            ("usleep", 300),
            ("sleep", 1000),
            ("time_nanosleep", 300),
            ("fread", 300),
            ("stream_select", 300),
        ] {
            let ms = took[wait].as_u64().unwrap();
            assert!(
                ms >= at_least - 2,
                "{mode:?}: {wait} took {ms} ms of {at_least} under our signals: {took}"
            );
        }
        assert!(sent.load(std::sync::atomic::Ordering::Relaxed) > 200);
        assert_eq!(hello(&server, mode), tid.to_string());
    }
}
