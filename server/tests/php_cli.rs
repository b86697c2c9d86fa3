//! `ferrophp php-cli` is the `php` CLI (PHP's own CLI SAPI linked into ferrophp): argv,
//! std streams, exit codes and errors byte for byte as the PHP build's own `bin/php`,
//! `-d` overrides, the script's own options, `-i` and `--ini`, and `-S`, PHP's
//! development server (served by ferrophp). Runs the real binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn script(name: &str) -> String {
    format!("{}/../test-data/cli/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn php_cli(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("php-cli")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ferrophp runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn argv_and_argc_include_every_argument_verbatim() {
    let path = script("argv.php");
    let out = php_cli(&[&path, "one", "-x", "--flag=2", "with space"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!("5\n0:{path}\n1:one\n2:-x\n3:--flag=2\n4:with space\n5 5\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[test]
fn std_streams_and_exit_code() {
    let out = php_cli(&[&script("streams.php"), "3"], b"piped input");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"PIPED INPUT|echo|");
    assert_eq!(out.stderr, b"to-stderr\n");
}

/// The same arguments through the build's own `bin/php`: stdout, stderr, exit status.
fn build_php_run(args: &[&str]) -> Output {
    Command::new(build_php())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("bin/php runs")
}

/// `ferrophp php-cli` is PHP's CLI: the same bytes on both streams and the same status as
/// the build's `bin/php` (with no php.ini, the CLI's own display_errors=1 puts errors on
/// stdout, as `php -n` does).
fn assert_same_as_build_php(args: &[&str]) -> Output {
    let ours = php_cli(args, b"");
    let theirs = build_php_run(args);
    assert_eq!(
        (
            ours.status.code(),
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&ours.stderr)
        ),
        (
            theirs.status.code(),
            String::from_utf8_lossy(&theirs.stdout),
            String::from_utf8_lossy(&theirs.stderr)
        ),
        "ferrophp php-cli {args:?} differs from bin/php"
    );
    ours
}

#[test]
fn fatal_error_exits_255_like_php() {
    let out = assert_same_as_build_php(&["-n", &script("fatal.php")]);
    assert_eq!(out.status.code(), Some(255));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("before\n") && text.contains("undefined_function_call"),
        "{text}"
    );
    // With errors logged instead of shown, they go to stderr (log_errors, no error_log).
    let out = php_cli(
        &[
            "-n",
            "-d",
            "display_errors=0",
            "-d",
            "log_errors=1",
            &script("fatal.php"),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PHP Fatal error:"));
}

#[test]
fn uncaught_exception_exits_255_like_php() {
    let out = assert_same_as_build_php(&["-n", &script("exception.php")]);
    assert_eq!(out.status.code(), Some(255));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Uncaught RuntimeException: boom from exception.php"),
        "{text}"
    );
}

#[test]
fn ini_overrides_with_dash_d() {
    let out = php_cli(
        &[
            "-d",
            "memory_limit=77M",
            "-d",
            "precision=5",
            &script("ini.php"),
        ],
        b"",
    );
    assert!(out.status.success());
    assert_eq!(out.stdout, b"77M 5\n");
}

#[test]
fn missing_script_is_an_error_like_php() {
    let out = assert_same_as_build_php(&["-n", "/nonexistent/script.php"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Could not open input file"));
}

#[test]
fn opcache_is_active() {
    // As with `php`: the SAPI is "cli" (PHP_SAPI and php_sapi_name() agree), and OPcache
    // runs for it when opcache.enable_cli says so.
    let out = php_cli(&["-d", "opcache.enable_cli=1", &script("opcache.php")], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r#""opcache_enabled":true"#), "{text}");
    assert!(text.contains(r#""sapi":"cli""#), "{text}");
    assert!(text.contains(r#""sapi_const":"cli""#), "{text}");
}

/// What PHP's run-tests.php passes to a CLI: `-f FILE args`, `-r CODE`, `-q`.
#[test]
fn run_tests_options_f_r_q() {
    let path = script("argv.php");
    let out = php_cli(&["-q", "-d", "precision=14", "-f", &path, "one", "-x"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!("3\n0:{path}\n1:one\n2:-x\n3 3\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);

    let out = php_cli(&["-n", "-r", "echo PHP_VERSION, ' ', $argv[0];"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("8.") && stdout.ends_with(" Standard input code"),
        "{stdout}"
    );
}

/// php's rule: every argument after the script name is the script's, `--help` and `-i`
/// too (before, clap took `--help` as ferrophp's own and printed its help).
#[test]
fn options_after_the_script_name_belong_to_the_script() {
    let path = script("argv.php");
    let out = php_cli(
        &["-d", "precision=5", &path, "--help", "-i", "-d", "x"],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!("5\n0:{path}\n1:--help\n2:-i\n3:-d\n4:x\n5 5\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    // `--` right after the script is the script's too, as with php.
    let out = php_cli(&[&path, "--", "a"], b"");
    let expected = format!("3\n0:{path}\n1:--\n2:a\n3 3\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

/// The PHP build's own CLI, to compare with (scripts/setup.sh prints its prefix).
fn build_php() -> std::path::PathBuf {
    let setup = format!("{}/../scripts/setup.sh", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(setup).output().expect("scripts/setup.sh runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let prefix = stdout
        .lines()
        .last()
        .expect("setup.sh prints the PHP prefix");
    std::path::Path::new(prefix.trim()).join("bin/php")
}

/// Runs `cmd` with only the environment the ini search reads set as given.
fn ini_run(cmd: &mut Command, scan_dir: Option<&std::path::Path>) -> String {
    cmd.env_remove("PHPRC").env_remove("PHP_INI_SCAN_DIR");
    if let Some(dir) = scan_dir {
        cmd.env("PHP_INI_SCAN_DIR", dir);
    }
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn dash_dash_ini_prints_what_the_builds_php_prints() {
    let php = build_php();
    let dir = tempfile::tempdir().unwrap();
    let ini_dir = dir.path().join("etc");
    let scan = dir.path().join("conf.d");
    std::fs::create_dir_all(&ini_dir).unwrap();
    std::fs::create_dir_all(&scan).unwrap();
    std::fs::write(ini_dir.join("php.ini"), "memory_limit=99M\n").unwrap();
    std::fs::write(scan.join("10-a.ini"), "precision=9\n").unwrap();
    std::fs::write(scan.join("20-b.ini"), "").unwrap();
    let ferrophp = env!("CARGO_BIN_EXE_ferrophp");
    let cases: [(&[&str], Option<&std::path::Path>); 3] = [
        (&["-c", ini_dir.to_str().unwrap()], Some(&scan)),
        (&["-c", ini_dir.to_str().unwrap()], None),
        (&["-n"], Some(&scan)),
    ];
    for (args, scan_dir) in cases {
        let theirs = ini_run(Command::new(&php).args(args).arg("--ini"), scan_dir);
        let ours = ini_run(
            Command::new(ferrophp)
                .arg("php-cli")
                .args(args)
                .arg("--ini"),
            scan_dir,
        );
        assert!(
            theirs.starts_with("Configuration File (php.ini) Path: "),
            "{theirs}"
        );
        assert_eq!(
            ours, theirs,
            "php-cli {args:?} --ini (scan dir {scan_dir:?})"
        );
    }
}

#[test]
fn dash_i_prints_phpinfo_as_text_like_php_dash_i() {
    let php = build_php();
    let theirs = ini_run(Command::new(&php).args(["-n", "-i"]), None);
    let out = php_cli(&["-n", "-i"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = String::from_utf8(out.stdout).unwrap();
    assert!(ours.starts_with("phpinfo()\nPHP Version => "), "{ours}");
    assert!(
        !ours.contains("<table") && !ours.contains("<tr>"),
        "text, not HTML"
    );
    // Lines about the build and its configuration read the same as php's.
    for key in [
        "PHP Version => ",
        "Configuration File (php.ini) Path => ",
        "Loaded Configuration File => ",
        "Thread Safety => ",
        "memory_limit => ",
        "precision => ",
    ] {
        let line = |text: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .map(str::to_owned)
                .unwrap_or_else(|| panic!("no {key:?} line in:\n{text}"))
        };
        assert_eq!(line(&ours), line(&theirs));
    }
}

/// A running `ferrophp php-cli -S 127.0.0.1:0 ...`, killed (by its own pid) on drop.
struct DevServer {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    stdout: std::process::ChildStdout,
}

impl DevServer {
    fn start(args: &[&str], envs: &[(&str, &str)]) -> DevServer {
        use std::io::BufRead;
        let dir = format!("{}/../test-data/cli/devserver", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
            .args(["php-cli", "-n", "-S", "127.0.0.1:0", "-t", &dir])
            .args(args)
            .envs(envs.iter().copied())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ferrophp runs");
        // PHP's own harness (sapi/cli/tests/php_cli_server.inc) waits for this line on
        // stderr and reads the address from it.
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("the server printed its start-up line")
                .unwrap();
            if let Some(rest) = line.split(" Development Server (http://").nth(1) {
                assert!(line.contains("] PHP 8."), "{line}");
                let addr = rest.strip_suffix(") started").expect("php's wording");
                break addr.parse().expect("an address");
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        let stdout = child.stdout.take().unwrap();
        DevServer {
            child,
            addr,
            stdout,
        }
    }

    /// Sends `request` and reads until the server closes the connection (within 5 s),
    /// as APCu's server_test.inc does: php -S closes after each response.
    fn exchange(&self, request: &str) -> String {
        use std::io::Read;
        let mut stream = std::net::TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .expect("the server closes the connection after the response");
        String::from_utf8_lossy(&response).into_owned()
    }

    fn get(&self, path: &str) -> (String, String) {
        // Bare LF after the request line, as APCu's harness sends it.
        let response = self.exchange(&format!("GET {path} HTTP/1.1\nHost: 127.0.0.1\r\n\r\n"));
        let (head, body) = response.split_once("\r\n\r\n").expect("a response");
        (head.to_owned(), body.to_owned())
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn dev_server_runs_the_router_and_serves_what_it_declines() {
    let server = DevServer::start(&["router.php"], &[]);
    let (head, body) = server.get("/missing.txt?x=1");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // PHP_SAPI is "cli-server", as under php -S (front controllers test for it to let
    // static files through). SCRIPT_FILENAME is the router when the path names no file,
    // else the file php -S resolved (a path without a dot falls back to the nearest
    // index.php).
    assert_eq!(body, "router /missing.txt cli-server router.php");
    assert_eq!(server.get("/a/b").1, "router /a/b cli-server index.php");
    // The router returns false: the static file, or the script in the same request.
    let (head, body) = server.get("/static.txt");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "static file\n");
    let (_, body) = server.get("/page.php?q");
    assert_eq!(body, "page /page.php?q");
    // Several requests, one connection each, all answered and closed.
    for _ in 0..3 {
        assert!(server.get("/").1.starts_with("router / "));
    }
}

// The usual `php -S` front-controller idiom (`PHP_SAPI === 'cli-server' && is_file(...)`
// → `return false`) only lets static files through under PHP's own SAPI name.
#[test]
fn dev_server_front_controllers_see_the_cli_server_sapi() {
    let server = DevServer::start(&["front.php"], &[]);
    assert_eq!(server.get("/static.txt").1, "static file\n");
    assert_eq!(server.get("/blog/42?x").1, "app /blog/42?x");
}

#[test]
fn dev_server_without_router_falls_back_to_the_nearest_index() {
    let mut server = DevServer::start(&[], &[("PHP_CLI_SERVER_WORKERS", "2")]);
    assert_eq!(server.get("/static.txt").1, "static file\n");
    assert_eq!(server.get("/page.php").1, "page /page.php");
    assert_eq!(server.get("/no/such/file").1, "index /no/such/file");
    assert_eq!(server.get("/sub/missing").1, "sub index\n");
    assert!(server
        .get("/no/such/file.txt")
        .0
        .starts_with("HTTP/1.1 404"));
    // Nothing on stdout: PHP's harnesses pass their own stdout to the server.
    let _ = server.child.kill();
    let mut out = Vec::new();
    use std::io::Read;
    server.stdout.read_to_end(&mut out).unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}
