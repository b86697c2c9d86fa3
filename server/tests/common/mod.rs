//! Shared helpers for the HTTP integration tests: start the real `ferrophp` binary on a
//! free port, talk to it over raw TCP or reqwest, watch its stderr and memory, and kill it
//! (by PID, through `Child::kill`) when the test is done.

#![allow(dead_code)]

pub mod collector;
pub mod db;
pub mod docker;
pub mod pebble;
pub mod php;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a server may take to print its listening line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default socket timeout for raw exchanges.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// `test-data/http`, the document root holding one script per behaviour.
/// The release's name, `ferrophp-<version>-php<PHP version>-linux-x86_64` (the PHP inside
/// is the developer build's, which the release build shares): the tarball in `dist/`
/// that scripts/release.sh makes and the directory it unpacks to.
#[allow(dead_code)]
pub fn release_name() -> String {
    format!(
        "ferrophp-{}-php{}-linux-x86_64",
        env!("CARGO_PKG_VERSION"),
        worker::PHP_VERSION
    )
}

/// `dist/<release_name>.tar.gz`, failing with what to run when it is missing.
#[allow(dead_code)]
pub fn release_tarball() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("dist")
        .join(format!("{}.tar.gz", release_name()));
    assert!(
        path.is_file(),
        "{} is missing: run scripts/release.sh (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The `ferrophp` a measurement runs: FERROPHP_BENCH_BIN (a release tree's `ferrophp`, the
/// shipped build) when set, else this test build's.
#[allow(dead_code)]
pub fn bench_binary() -> PathBuf {
    std::env::var_os("FERROPHP_BENCH_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_ferrophp").into(), PathBuf::from)
}

pub fn http_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/http")
        .canonicalize()
        .expect("test-data/http exists")
}

/// A running `ferrophp serve`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub root: PathBuf,
    pub scheme: &'static str,
    stderr: Arc<Mutex<Vec<u8>>>,
    exited: Option<ExitStatus>,
    /// Lines the server printed on stdout so far.
    stdout_lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// `ferrophp serve --root ROOT --listen 127.0.0.1:0 [--threads 2] ARGS...`
    pub fn start(root: &Path, args: &[&str]) -> Server {
        Self::start_with_env(root, args, &[])
    }

    pub fn start_with_env(root: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        Self::start_binary(Path::new(env!("CARGO_BIN_EXE_ferrophp")), root, args, envs)
    }

    /// As [`Server::start_with_env`], with another `ferrophp` binary (a release tree's).
    pub fn start_binary(bin: &Path, root: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        Self::launch(Command::new(bin), root, args, envs, STARTUP_TIMEOUT)
    }

    /// As [`Server::start_with_env`], from `cmd`: the `ferrophp` binary (or what runs it)
    /// with whatever the test set up on it (a seccomp filter installed before exec, say).
    pub fn start_command(
        cmd: Command,
        root: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        Self::launch(cmd, root, args, envs, STARTUP_TIMEOUT)
    }

    /// As [`Server::start_with_env`], run by valgrind's memcheck with PHP's allocator off
    /// (every emalloc its own checked block). Errors go to `log` as they happen (so a
    /// server killed at the end still reports them): see [`valgrind_errors`].
    pub fn start_under_valgrind(
        root: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        log: &Path,
    ) -> Server {
        let mut cmd = Command::new("valgrind");
        // fair-sched: without it a thread running PHP code can starve the others (the
        // watchdog) for seconds, which no real scheduler does.
        cmd.args([
            "--quiet",
            "--error-limit=no",
            "--num-callers=30",
            "--leak-check=no",
        ])
        .arg("--fair-sched=yes")
        .arg(format!(
            "--suppressions={}/../test-data/valgrind/php.supp",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(format!("--log-file={}", log.display()))
        .arg(env!("CARGO_BIN_EXE_ferrophp"))
        .env("USE_ZEND_ALLOC", "0");
        // PHP's start-up (every extension, ICU) is slow under valgrind.
        Self::launch(cmd, root, args, envs, STARTUP_TIMEOUT * 6)
    }

    /// As [`Server::start_with_env`], run by valgrind's callgrind, which writes the calls
    /// between functions (who called whom, how often) to `out` when the server exits.
    /// Only what runs inside a function named by `collect` is recorded.
    pub fn start_under_callgrind(
        root: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        out: &Path,
        collect: &[&str],
    ) -> Server {
        let mut cmd = Command::new("valgrind");
        cmd.args([
            "--quiet",
            "--tool=callgrind",
            "--dump-instr=no",
            "--compress-strings=no",
            "--compress-pos=no",
            // Mangled names keep the hash that tells two instances of a generic apart.
            "--demangle=no",
            "--fair-sched=yes",
        ])
        .arg(format!("--callgrind-out-file={}", out.display()));
        for function in collect {
            cmd.arg(format!("--toggle-collect={function}"));
        }
        cmd.arg(env!("CARGO_BIN_EXE_ferrophp"));
        Self::launch(cmd, root, args, envs, STARTUP_TIMEOUT * 6)
    }

    fn launch(
        mut cmd: Command,
        root: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        startup_timeout: Duration,
    ) -> Server {
        cmd.arg("serve")
            .arg("--root")
            .arg(root)
            .arg("--listen")
            .arg("127.0.0.1:0");
        if !args.contains(&"--threads") {
            cmd.args(["--threads", "2"]);
        }
        cmd.args(args);
        Self::from_command(cmd, root, envs, startup_timeout)
    }

    /// Starts `cmd` as it is (it must end up printing ferrophp's listening line, as a
    /// one-file package or `docker run` of one does) and waits for that line.
    pub fn from_command(
        mut cmd: Command,
        root: &Path,
        envs: &[(&str, &str)],
        startup_timeout: Duration,
    ) -> Server {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Settings from the caller's environment must not leak into a test (OTEL_* would
        // turn tracing on).
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("FERROPHP_") || key_text.starts_with("OTEL_") {
                cmd.env_remove(key);
            }
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("ferrophp starts");

        let stderr = Arc::new(Mutex::new(Vec::new()));
        {
            let mut pipe = child.stderr.take().unwrap();
            let sink = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
                    }
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        let stdout_lines = Arc::new(Mutex::new(Vec::new()));
        {
            let stdout = child.stdout.take().unwrap();
            let stdout_lines = stdout_lines.clone();
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                for line in lines.by_ref() {
                    let Ok(line) = line else { break };
                    stdout_lines.lock().unwrap().push(line.clone());
                    if let Some(url) = line.strip_prefix("ferrophp listening on ") {
                        let _ = tx.send(url.to_owned());
                    }
                }
            });
        }
        let mut server = Server {
            child,
            addr: "127.0.0.1:1".parse().unwrap(),
            root: root.to_path_buf(),
            scheme: "http",
            stderr,
            exited: None,
            stdout_lines,
        };
        let url = match rx.recv_timeout(startup_timeout) {
            Ok(url) => url,
            Err(_) => panic!(
                "ferrophp did not print its listening line; stderr:\n{}",
                server.stderr()
            ),
        };
        let (scheme, hostport) = url.split_once("://").expect("url has a scheme");
        server.scheme = if scheme == "https" { "https" } else { "http" };
        server.addr = hostport.parse().expect("listening address");
        server
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Lines the server printed on stdout so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout_lines.lock().unwrap().clone()
    }

    /// The admin listener's address, from its `ferrophp admin on http://ADDR` line (printed
    /// before the listening line, so known once `start` returns).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.stdout_lines()
            .iter()
            .find_map(|l| l.strip_prefix("ferrophp admin on http://"))
            .and_then(|a| a.trim().parse().ok())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://127.0.0.1:PORT{path}` (or https).
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{}", self.scheme, self.addr, path)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits until stderr contains `needle`; false on timeout.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stderr().contains(needle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resident set size of the server process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("server process status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS line")
    }

    /// Sends SIGTERM through the `kill` command (no libc needed).
    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the process to exit; None on timeout.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.exited = Some(status);
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process is still alive.
    pub fn is_running(&mut self) -> bool {
        self.exited.is_none() && self.child.try_wait().ok().flatten().is_none()
    }

    /// GET `path` over a fresh raw connection.
    pub fn get(&self, path: &str) -> RawResponse {
        self.raw(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    }

    /// Sends `request` bytes on a fresh connection, reads until the server closes it and
    /// parses the response. Panics if no response could be parsed.
    pub fn raw(&self, request: &[u8]) -> RawResponse {
        let bytes = exchange(self.addr, request, IO_TIMEOUT).expect("raw exchange");
        parse_response(&bytes).unwrap_or_else(|| {
            panic!(
                "unparsable response to {:?}: {:?}",
                String::from_utf8_lossy(&request[..request.len().min(200)]),
                String::from_utf8_lossy(&bytes)
            )
        })
    }

    /// Asserts the server still answers a plain request.
    pub fn assert_alive(&self) {
        let r = self.get("/hello.php");
        assert_eq!(r.status, 200, "server no longer serving: {r:?}");
        assert_eq!(r.body, b"Hello, World!");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited.is_none() && self.child.try_wait().ok().flatten().is_none() {
            // Child::kill sends SIGKILL to this child's PID only.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `ferrophp serve --root ROOT ARGS...` in a mount namespace of its own where each
/// `(source, target)` directory is bound over `target`. `unshare` execs `sh`, which mounts
/// and execs ferrophp: the pid the `Server` holds (and kills) is ferrophp's.
pub fn serve_with_binds(
    dir: &Path,
    root: &Path,
    binds: &[(&Path, &str)],
    args: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let quote = |p: &str| {
        assert!(!p.contains('\''), "{p}");
        format!("'{p}'")
    };
    let mounts: Vec<String> = binds
        .iter()
        .map(|(src, dst)| {
            format!(
                "mount --bind {} {}",
                quote(&src.display().to_string()),
                quote(dst)
            )
        })
        .collect();
    let wrapper = dir.join("ferrophp-in-namespace.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec unshare --mount --propagation private -- /bin/sh -c \
             '{} && exec \"$0\" \"$@\"' {} \"$@\"\n",
            mounts.join(" && ").replace('\'', "'\\''"),
            quote(env!("CARGO_BIN_EXE_ferrophp"))
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    Server::start_binary(&wrapper, root, args, env)
}

/// A blocking reqwest client for tests: no proxy, bounded timeouts, any certificate.
/// The errors valgrind wrote to `log`, one string per error with its stack. With
/// `--quiet` valgrind writes nothing else but warnings about the client's own tricks
/// (switching stacks, large address ranges, unhandled ioctls), which are left out.
pub fn valgrind_errors(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut errors = Vec::new();
    // The block being read: Some(text) for an error, None for a warning or nothing.
    let mut block: Option<Option<String>> = None;
    for line in text.lines() {
        // "==PID== body"; an empty body ends a block.
        let body = line.split_once("== ").map_or("", |(_, b)| b);
        if body.trim().is_empty() {
            if let Some(Some(error)) = block.take() {
                errors.push(error);
            }
            continue;
        }
        match &mut block {
            Some(Some(error)) => {
                error.push('\n');
                error.push_str(line);
            }
            Some(None) => {}
            None => {
                let warning = body.starts_with("Warning: ") || body.starts_with(' ');
                block = Some((!warning).then(|| line.to_owned()));
            }
        }
    }
    if let Some(Some(error)) = block {
        errors.push(error);
    }
    errors
}

pub fn client() -> reqwest::blocking::Client {
    client_builder().build().expect("client")
}

pub fn client_builder() -> reqwest::blocking::ClientBuilder {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(5))
        .danger_accept_invalid_certs(true)
        .redirect(reqwest::redirect::Policy::none())
}

/// Connects with read/write timeouts set.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream
}

/// Writes `request`, then reads until EOF (or a reset after some bytes) or `timeout`.
pub fn exchange(addr: SocketAddr, request: &[u8], timeout: Duration) -> io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    // The server may answer (and close) before taking the whole request: not an error.
    let _ = stream.write_all(request);
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if !out.is_empty() && e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// A parsed HTTP/1.x response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    /// Names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn headers_all(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Parses a complete response read until EOF: Content-Length, chunked, or to-the-end body.
pub fn parse_response(bytes: &[u8]) -> Option<RawResponse> {
    let mut reader = BufReader::new(bytes);
    read_response(&mut reader, false).ok()
}

/// Reads one response from a keep-alive connection. `head_request`: no body follows.
/// Informational (1xx) responses before it are skipped, as HTTP clients do (101, which
/// ends HTTP/1 on the connection, is returned).
pub fn read_response<R: BufRead>(reader: &mut R, head_request: bool) -> io::Result<RawResponse> {
    let (status, headers) = loop {
        let (status, headers) = read_head(reader)?;
        if !(100..200).contains(&status) || status == 101 {
            break (status, headers);
        }
    };
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    let bodiless = head_request || status == 204 || status == 304 || (100..200).contains(&status);
    if bodiless {
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let size_text = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    let mut t = String::new();
                    if reader.read_line(&mut t)? == 0 || t == "\r\n" || t == "\n" {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(len) = find("content-length") {
        let len: usize = len
            .trim()
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad content-length"))?;
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

/// Reads a status line and headers.
pub fn read_head<R: BufRead>(reader: &mut R) -> io::Result<(u16, Vec<(String, String)>)> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no response"));
    }
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad status line {line:?}"),
        ));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad status"))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "eof in head"));
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    Ok((status, headers))
}

/// Percent-encodes a query value (paths of temp files, mostly).
pub fn encode(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
/// True once a fresh connection to `addr` gets `/hello.php`'s answer within `timeout`: the
/// server serves new connections again (after a limit or a fault freed their slots).
pub fn serves_hello_again(addr: SocketAddr, timeout: Duration) -> bool {
    wait_until(timeout, || {
        exchange(
            addr,
            b"GET /hello.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(2),
        )
        .is_ok_and(|b| b.ends_with(b"Hello, World!"))
    })
}

/// Sends `n` requests at once with `request` (each on its own thread) and returns how long
/// the slowest took; every answer must be a 200.
pub fn side_by_side(n: usize, request: impl Fn() -> RawResponse + Sync) -> Duration {
    let started = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n).map(|_| s.spawn(&request)).collect();
        for handle in handles {
            let r = handle.join().unwrap();
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        }
    });
    started.elapsed()
}

pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a `ferrophp serve` run that was expected to end left behind.
#[derive(Debug)]
pub struct Exited {
    /// None when it was still running at the deadline (it is then killed).
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs `ferrophp serve --root ROOT --listen 127.0.0.1:0 [--threads 2] ARGS...` and waits
/// up to `timeout` for it to exit by itself (start-up failures), killing it (by PID, through
/// `Child::kill`) if it is still running then.
pub fn serve_until_exit(root: &Path, args: &[&str], timeout: Duration) -> Exited {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrophp"));
    cmd.arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--listen")
        .arg("127.0.0.1:0");
    if !args.contains(&"--threads") {
        cmd.args(["--threads", "2"]);
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("FERROPHP_") {
            cmd.env_remove(key);
        }
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("ferrophp starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = started + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    Exited {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        elapsed,
    }
}

/// One keep-alive HTTP/1.1 connection: requests go out one at a time on it.
pub struct KeepAlive {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl KeepAlive {
    pub fn connect(addr: SocketAddr) -> io::Result<KeepAlive> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        let _ = stream.set_nodelay(true);
        Ok(KeepAlive {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
        })
    }

    /// Writes one complete request (head and body) and reads its response.
    pub fn send(&mut self, request: &[u8]) -> io::Result<RawResponse> {
        self.writer.write_all(request)?;
        read_response(&mut self.reader, false)
    }

    /// `GET path` with `Host: localhost` on this connection.
    pub fn get(&mut self, path: &str) -> io::Result<RawResponse> {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
    }
}

/// The `name => value` pairs of an HTML page's hidden form inputs (CSRF tokens and
/// the like that a real form post sends back).
pub fn hidden_inputs(html: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    for tag in html.split("<input").skip(1) {
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        let attr = |name: &str| {
            let key = format!(" {name}=\"");
            tag.find(&key).map(|i| {
                let rest = &tag[i + key.len()..];
                rest[..rest.find('"').unwrap_or(rest.len())].to_string()
            })
        };
        if attr("type").as_deref() == Some("hidden") {
            if let (Some(name), Some(value)) = (attr("name"), attr("value")) {
                fields.push((name, html_unescape(&value)));
            }
        }
    }
    fields
}

/// What a browser submits for an HTML form with its defaults left as they are: inputs
/// with a name (checkboxes and radios only when `checked`; no buttons, no file inputs,
/// nothing `disabled`), each `select`'s selected options (its first when none is), and each
/// `textarea`'s text, in document order. `form` is the form's HTML (`form_containing`).
/// The caller adds what the user types or clicks.
pub fn form_fields(form: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut at = 0;
    while let Some(i) = form[at..].find('<') {
        let start = at + i;
        let end = tag_end(form, start);
        let tag = &form[start..end];
        at = end;
        let kind = tag_name(tag);
        let attrs = tag_attrs(tag);
        let get = |n: &str| attrs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let Some(name) = get("name") else { continue };
        if get("disabled").is_some() {
            continue;
        }
        match kind.as_str() {
            "input" => {
                let kind = get("type").unwrap_or_default().to_ascii_lowercase();
                match kind.as_str() {
                    "submit" | "button" | "image" | "reset" | "file" => {}
                    "checkbox" | "radio" => {
                        if get("checked").is_some() {
                            fields.push((name, get("value").unwrap_or_else(|| "on".into())));
                        }
                    }
                    _ => fields.push((name, get("value").unwrap_or_default())),
                }
            }
            "select" => {
                let close = form[at..].find("</select>").map_or(form.len(), |i| at + i);
                let mut options = Vec::new();
                let mut o = at;
                while let Some(i) = form[o..close].find("<option") {
                    let ostart = o + i;
                    let oend = tag_end(form, ostart);
                    let oattrs = tag_attrs(&form[ostart..oend]);
                    let text_end = form[oend..close].find('<').map_or(close, |i| oend + i);
                    let value = oattrs
                        .iter()
                        .find(|(k, _)| k == "value")
                        .map(|(_, v)| v.clone())
                        .unwrap_or_else(|| html_unescape(form[oend..text_end].trim()));
                    let selected = oattrs.iter().any(|(k, _)| k == "selected");
                    options.push((value, selected));
                    o = oend;
                }
                let multiple = get("multiple").is_some();
                let chosen: Vec<String> = options
                    .iter()
                    .filter(|(_, s)| *s)
                    .map(|(v, _)| v.clone())
                    .collect();
                if chosen.is_empty() && !multiple {
                    if let Some((first, _)) = options.first() {
                        fields.push((name.clone(), first.clone()));
                    }
                }
                fields.extend(chosen.into_iter().map(|v| (name.clone(), v)));
                at = close;
            }
            "textarea" => {
                let close = form[at..]
                    .find("</textarea>")
                    .map_or(form.len(), |i| at + i);
                // A newline right after the start tag is not part of the value.
                let text = form[at..close]
                    .strip_prefix('\n')
                    .unwrap_or(&form[at..close]);
                fields.push((name, html_unescape(text)));
                at = close;
            }
            _ => {}
        }
    }
    fields
}

/// The `<form ...>...</form>` of `html` that contains `needle` (a form's name, id or one of
/// its fields), or None.
pub fn form_containing<'a>(html: &'a str, needle: &str) -> Option<&'a str> {
    let at = html.find(needle)?;
    let start = html[..=at].rfind("<form")?;
    let end = html[at..]
        .find("</form>")
        .map_or(html.len(), |i| at + i + 7);
    Some(&html[start..end])
}

/// An attribute of a form's start tag (`action`, `method`...), entities decoded.
pub fn form_attr(form: &str, name: &str) -> Option<String> {
    let tag = &form[..tag_end(form, 0)];
    tag_attrs(tag)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// The end (one past `>`) of the tag starting at `start`, quotes respected.
fn tag_end(html: &str, start: usize) -> usize {
    let bytes = html.as_bytes();
    let mut quote = None;
    for (i, &b) in bytes.iter().enumerate().skip(start + 1) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
    }
    html.len()
}

fn tag_name(tag: &str) -> String {
    tag.trim_start_matches('<')
        .split(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// A start tag's attributes, names lower-cased, values entity-decoded; a bare attribute
/// (`checked`) has an empty value.
fn tag_attrs(tag: &str) -> Vec<(String, String)> {
    let b = tag.as_bytes();
    let ws = |c: u8| c.is_ascii_whitespace();
    let mut i = 1;
    while i < b.len() && !ws(b[i]) && b[i] != b'>' {
        i += 1;
    }
    let mut out = Vec::new();
    loop {
        while i < b.len() && (ws(b[i]) || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() || b[i] == b'>' {
            break;
        }
        let s = i;
        while i < b.len() && !ws(b[i]) && !b"=/>".contains(&b[i]) {
            i += 1;
        }
        let name = tag[s..i].to_ascii_lowercase();
        while i < b.len() && ws(b[i]) {
            i += 1;
        }
        let mut value = String::new();
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && ws(b[i]) {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                i += 1;
                let s = i;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                value = html_unescape(&tag[s..i]);
                i += 1;
            } else {
                let s = i;
                while i < b.len() && !ws(b[i]) && b[i] != b'>' {
                    i += 1;
                }
                value = html_unescape(&tag[s..i]);
            }
        }
        if name.is_empty() {
            i += 1;
            continue;
        }
        out.push((name, value));
    }
    out
}

/// The few HTML entities form values use.
pub fn html_unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#039;", "'")
        .replace("&#x3F;", "?")
        .replace("&#x3D;", "=")
        .replace("&#x25;", "%")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A self-signed certificate for `localhost` and `127.0.0.1` in `dir`: (cert, key) PEM paths.
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, signing_key.serialize_pem()).unwrap();
    (cert_path, key_path)
}

/// What an HTTP/2 client sees of one GET: each 1xx response with the time it took to
/// arrive, then the final head (and its time) and body.
pub struct H2Exchange {
    pub informational: Vec<(http::Response<()>, Duration)>,
    pub response: http::Response<()>,
    pub elapsed: Duration,
    pub body: Vec<u8>,
}

/// One GET over HTTP/2 with the h2 crate as the client, which (unlike reqwest) reports
/// 1xx responses: h2c with prior knowledge, or TLS with ALPN `h2` trusting `tls_cert`.
pub fn h2_get(addr: SocketAddr, tls_cert: Option<&Path>, path: &str) -> io::Result<H2Exchange> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            let Some(cert) = tls_cert else {
                return h2_exchange(tcp, "http", addr, path).await;
            };
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut BufReader::new(std::fs::File::open(cert)?)) {
                roots.add(cert?).map_err(io::Error::other)?;
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(io::Error::other)?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec()];
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await?;
            h2_exchange(tls, "https", addr, path).await
        };
        tokio::time::timeout(IO_TIMEOUT, exchange)
            .await
            .map_err(io::Error::other)?
    })
}

async fn h2_exchange<T>(io: T, scheme: &str, addr: SocketAddr, path: &str) -> io::Result<H2Exchange>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = h2::client::handshake(io).await.map_err(io::Error::other)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.map_err(io::Error::other)?;
    let uri = format!("{scheme}://localhost:{}{path}", addr.port());
    let request = http::Request::get(uri).body(()).unwrap();
    let started = Instant::now();
    let (mut response, _) = client
        .send_request(request, true)
        .map_err(io::Error::other)?;
    let mut informational = Vec::new();
    // Ready(None) once the final head is next: the 1xx responses are all in.
    while let Some(hint) = std::future::poll_fn(|cx| response.poll_informational(cx)).await {
        informational.push((hint.map_err(io::Error::other)?, started.elapsed()));
    }
    let (head, mut body) = response.await.map_err(io::Error::other)?.into_parts();
    let elapsed = started.elapsed();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(io::Error::other)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    Ok(H2Exchange {
        informational,
        response: http::Response::from_parts(head, ()),
        elapsed,
        body: bytes,
    })
}
