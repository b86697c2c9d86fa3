//! `ferrophp php-cli` is the `php` CLI (PHP's own CLI SAPI linked into ferrophp): every
//! option php 8.2 accepts, run through `ferrophp php-cli`, bare `ferrophp` and a link named
//! `php`, gives the PHP build's own `bin/php`'s stdout, stderr and exit status byte for
//! byte, except where ferrophp differs by design (listed in [`Differs`]). Also: the
//! interactive shell `-a` through a pseudo-terminal, `--ini` with each php.ini search, and
//! `-S`, PHP's development server (served by ferrophp) answering as `bin/php -S` does.
//! Runs the real binaries.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::php::{build_php, ferrophp, Outcome, Via};

fn script(name: &str) -> String {
    format!("{}/../test-data/cli/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// What may differ from bin/php, by design; anything else is a bug.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Differs {
    Nothing,
    /// `php -h` and the usage printed for a bad option name the program as it was called
    /// (`Usage: php [options]...`); `ferrophp php-cli` and bare ferrophp are called
    /// `ferrophp`, whose own command line takes the same options.
    ProgramName,
    /// ferrophp's own extension (`UserCache\Cache`, the `apcu_*` layer) is loaded: one
    /// more line in `-m`.
    ModuleList,
    /// `-i`: that module's (empty) section; the request time; and the build date, since
    /// libtool compiles main/main.c twice (once for libphp.so, once for bin/php), seconds
    /// apart; a ferrophp linked with libphp.a (release builds) has bin/php's.
    Phpinfo,
    /// `PHP_BINARY` is the real path of the binary that runs (a link resolved).
    PhpBinary,
}

/// One command line: its arguments, its standard input, and whether bare `ferrophp` can
/// take it (`-h`, `--help` and `--version` are ferrophp's own unless it is called `php`).
struct Case {
    args: Vec<String>,
    stdin: &'static [u8],
    differs: Differs,
    bare: bool,
}

fn case(args: &[&str]) -> Case {
    Case {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        stdin: b"",
        differs: Differs::Nothing,
        bare: true,
    }
}

impl Case {
    fn stdin(mut self, stdin: &'static [u8]) -> Case {
        self.stdin = stdin;
        self
    }
    fn differs(mut self, differs: Differs) -> Case {
        self.differs = differs;
        self
    }
    fn not_bare(mut self) -> Case {
        self.bare = false;
        self
    }
}

fn run(via: Via, args: &[String], stdin: &[u8]) -> Outcome {
    let mut cmd = via.command();
    cmd.args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/cli"))
        .env_remove("PHPRC")
        .env_remove("PHP_INI_SCAN_DIR");
    Outcome::of(cmd, stdin)
}

/// Applies what may differ (`differs`) to both outcomes, checking on the way that ours
/// differed only there.
fn normalized(theirs: Outcome, ours: Outcome, via: Via, differs: Differs) -> (Outcome, Outcome) {
    match differs {
        Differs::Nothing => (theirs, ours),
        Differs::ProgramName => {
            let ours = if via == Via::Link {
                ours
            } else {
                assert!(
                    ours.stdout.contains("Usage: ferrophp [options]"),
                    "{ours:?}"
                );
                ours.replace("ferrophp [options]", "php [options]")
            };
            (theirs, ours)
        }
        Differs::ModuleList => {
            let mut ours = ours;
            assert!(ours.stdout.contains("\nferrophp\n"), "{ours:?}");
            ours.stdout = ours.stdout.replacen("\nferrophp\n", "\n", 1);
            (theirs, ours)
        }
        Differs::Phpinfo => {
            let clean = |mut o: Outcome, ours: bool| {
                if ours {
                    assert!(o.stdout.contains("\nferrophp\n\n"), "no ferrophp section");
                    o.stdout = o.stdout.replacen("\nferrophp\n\n", "\n", 1);
                }
                o.stdout = o
                    .stdout
                    .lines()
                    .map(|l| {
                        if l.starts_with("Build Date => ") || l.contains("REQUEST_TIME") {
                            l.split(" => ").next().unwrap()
                        } else {
                            l
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                o
            };
            (clean(theirs, false), clean(ours, true))
        }
        Differs::PhpBinary => {
            let theirs = theirs.replace(build_php().to_str().unwrap(), "PHP_BINARY");
            let real = ferrophp().canonicalize().unwrap();
            assert!(ours.stdout.contains(real.to_str().unwrap()), "{ours:?}");
            (theirs, ours.replace(real.to_str().unwrap(), "PHP_BINARY"))
        }
    }
}

/// Every option of `php -h`, and the conventions around them.
fn cases() -> Vec<Case> {
    let shebang = script("shebang.php");
    let argv = script("argv.php");
    let filter = script("filter.php");
    let lines: &[u8] = b"first line\nsecond\n\nlast, no newline";
    vec![
        case(&["-v"]),
        case(&["-m"]).differs(Differs::ModuleList),
        case(&["-n", "-m"]).differs(Differs::ModuleList),
        case(&["-h"]).differs(Differs::ProgramName).not_bare(),
        case(&["--help"]).differs(Differs::ProgramName).not_bare(),
        case(&["--version"]).not_bare(),
        case(&["-X"]).differs(Differs::ProgramName),
        case(&["--rz"]).differs(Differs::ProgramName),
        case(&["-i"]).differs(Differs::Phpinfo),
        case(&["-n", "-i"]).differs(Differs::Phpinfo),
        case(&["--ini"]),
        case(&["-n", "--ini"]),
        // Lint, highlight, strip.
        case(&["-l", &shebang]),
        case(&["-l", &script("lint_bad.php")]),
        case(&["-n", "-l", &script("lint_bad.php")]),
        case(&["-s", &shebang]),
        case(&["-w", &shebang]),
        // Code on the command line, per input line, and around the lines.
        case(&["-r", "echo 1 + 1, PHP_EOL;"]),
        case(&[
            "-n",
            "-r",
            "var_dump(PHP_SAPI, php_sapi_name(), ini_get('include_path'));",
        ]),
        case(&["-r", "echo $argc, json_encode($argv);", "--", "-a", "b"]),
        case(&["-r", "echo json_encode($argv);", "a", "-b"]),
        case(&["-r", "echo PHP_BINARY, PHP_EOL;"]).differs(Differs::PhpBinary),
        case(&[
            "-B",
            "echo \"begin\\n\"; $n = 0;",
            "-R",
            "$n++; echo strtoupper($argn), \"\\n\";",
            "-E",
            "echo \"end $n\\n\";",
        ])
        .stdin(lines),
        case(&["-R", "echo $argi, ':', $argn, PHP_EOL;"]).stdin(lines),
        case(&["-F", &filter]).stdin(lines),
        case(&["-B", "echo 'only begin';"]),
        // Reflection.
        case(&["--ri", "standard"]),
        case(&["--ri", "date"]),
        case(&["--ri", "nosuch"]),
        case(&["--re", "json"]),
        case(&["--re", "nosuch"]),
        case(&["--rf", "strlen"]),
        case(&["--rf", "nosuch"]),
        case(&["--rc", "ArrayObject"]),
        case(&["--rc", "NoSuchClass"]),
        case(&["--rz", "nosuch"]),
        case(&["--rz", "Zend OPcache"]),
        // -z, -H, -e, -q, -c, -d, -n.
        case(&["-z", "/nonexistent/zend_ext.so", "-r", "echo 1;"]),
        case(&["-H", &argv, "secret", "-x"]),
        case(&["-e", &argv, "x"]),
        case(&["-q", &argv, "x"]),
        case(&["-c", "/nonexistent", "-r", "echo ini_get('memory_limit');"]),
        case(&[
            "-d",
            "memory_limit=77M",
            "-d",
            "precision=5",
            &script("ini.php"),
        ]),
        case(&["-dmemory_limit=3M", "-r", "echo ini_get('memory_limit');"]),
        case(&["-d", "opcache.enable_cli=1", &script("opcache.php")]),
        case(&["--no-php-ini", "-r", "echo 1;"]),
        // A script: its shebang skipped, its arguments (options included) its own.
        case(&[&shebang]),
        case(&[&shebang, "a", "--", "-b"]),
        case(&["-f", &shebang, "--", "-x"]),
        case(&["-f", &argv, "one", "-x"]),
        case(&["-d", "precision=5", &argv, "--help", "-i", "-d", "x"]),
        case(&[&argv, "one", "-x", "--flag=2", "with space"]),
        case(&["--", &argv, "a"]),
        // A script on stdin: no arguments (bare ferrophp, as PHPUnit runs PHP_BINARY for a
        // test in a separate process), `--` before the arguments, `-` as the file.
        case(&[]).stdin(b"<?php echo 'from stdin ', PHP_SAPI, \"\\n\";"),
        case(&["-n"]).stdin(b"#!/usr/bin/php\n<?php echo json_encode($argv);"),
        case(&["--", "a", "b"]).stdin(b"<?php echo json_encode($argv);"),
        case(&["-", "a"]).stdin(b"<?php echo json_encode($argv);"),
        // Streams, exit codes, errors (on stdout with no php.ini, as display_errors=1).
        case(&[&script("streams.php"), "3"]).stdin(b"piped input"),
        case(&[&script("exit.php")]),
        case(&["-n", &script("fatal.php")]),
        case(&["-n", &script("exception.php")]),
        case(&[
            "-n",
            "-d",
            "display_errors=0",
            "-d",
            "log_errors=1",
            &script("fatal.php"),
        ]),
        case(&["-n", &script("memory.php")]),
        case(&["-n", "/nonexistent/script.php"]),
    ]
}

#[test]
fn every_option_is_bin_phps_byte_for_byte() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in cases() {
        let theirs = run(Via::BuildPhp, &case.args, case.stdin);
        for via in Via::FERROPHP {
            if via == Via::Bare && !case.bare {
                continue;
            }
            let ours = run(via, &case.args, case.stdin);
            let (theirs, ours) = normalized(theirs.clone(), ours, via, case.differs);
            compared += 1;
            if ours != theirs {
                failures.push(format!(
                    "php {:?} through {via:?}:\n  bin/php:  {theirs:?}\n  ferrophp: {ours:?}",
                    case.args
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 150, "{compared}");
}

/// The shebang line of the main script is skipped (Composer printed `#!/usr/bin/php`
/// before ferrophp ran PHP's own CLI), spelled out on top of the table above.
#[test]
fn main_scripts_shebang_is_skipped() {
    let out = run(Via::PhpCli, &[script("shebang.php")], b"");
    let expected = format!(
        "argv: [\"{}\"] 42\n",
        script("shebang.php").replace('/', "\\/")
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), expected.as_str())
    );
}

/// As with `php`, the SAPI is "cli" (PHP_SAPI and php_sapi_name() agree), and OPcache
/// runs for it when opcache.enable_cli says so (the table above compares with bin/php;
/// this says what both print).
#[test]
fn opcache_is_active() {
    let out = run(
        Via::PhpCli,
        &[
            "-d".into(),
            "opcache.enable_cli=1".into(),
            script("opcache.php"),
        ],
        b"",
    );
    assert!(out.stdout.contains(r#""opcache_enabled":true"#), "{out:?}");
    assert!(
        out.stdout.contains(r#""sapi":"cli","sapi_const":"cli""#),
        "{out:?}"
    );
}

/// `php -a` through a pseudo-terminal (libedit, as Debian's php): prompts, results,
/// a function defined and called on later lines, tab completion of a function name, `quit`.
#[test]
fn interactive_shell_is_bin_phps() {
    let session = |via: Via| {
        let mut cmd = Command::new("python3");
        cmd.arg(script("pty_session.py")).arg("php > ").arg(
            "echo 1 + 1;\nfunction f($x) { return $x * 3; }\necho f(14), PHP_EOL;\n\
             echo strtou\t\"x\"), PHP_EOL;\n$a = [1, 2];\nprint_r($a);\nquit",
        );
        let program = via.command();
        cmd.arg(program.get_program()).args(program.get_args());
        cmd.arg("-n").arg("-a");
        Outcome::of(cmd, b"")
    };
    let theirs = session(Via::BuildPhp);
    assert!(
        theirs
            .stdout
            .contains(r"php > echo f(14), PHP_EOL;\r\n42\r\n")
            && theirs.stdout.contains(r#"pper("x"), PHP_EOL;\r\nX\r\n"#)
            && theirs.stdout.ends_with("php > quit\\r\\n'\n0\n"),
        "{theirs:?}"
    );
    for via in Via::FERROPHP {
        assert_eq!(session(via), theirs, "php -a through {via:?}");
    }
}

/// Runs `cmd` with only the environment the ini search reads set as given.
fn ini_run(cmd: &mut Command, scan_dir: Option<&Path>) -> String {
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
    let dir = tempfile::tempdir().unwrap();
    let ini_dir = dir.path().join("etc");
    let scan = dir.path().join("conf.d");
    std::fs::create_dir_all(&ini_dir).unwrap();
    std::fs::create_dir_all(&scan).unwrap();
    std::fs::write(ini_dir.join("php.ini"), "memory_limit=99M\n").unwrap();
    std::fs::write(scan.join("10-a.ini"), "precision=9\n").unwrap();
    std::fs::write(scan.join("20-b.ini"), "").unwrap();
    let cases: [(&[&str], Option<&Path>); 3] = [
        (&["-c", ini_dir.to_str().unwrap()], Some(&scan)),
        (&["-c", ini_dir.to_str().unwrap()], None),
        (&["-n"], Some(&scan)),
    ];
    for (args, scan_dir) in cases {
        let theirs = ini_run(Via::BuildPhp.command().args(args).arg("--ini"), scan_dir);
        assert!(
            theirs.starts_with("Configuration File (php.ini) Path: "),
            "{theirs}"
        );
        for via in Via::FERROPHP {
            let ours = ini_run(via.command().args(args).arg("--ini"), scan_dir);
            assert_eq!(
                ours, theirs,
                "{via:?} {args:?} --ini (scan dir {scan_dir:?})"
            );
        }
    }
}

/// A running `php -S 127.0.0.1:0 ...` (bin/php's or ferrophp's), killed (by its own pid)
/// on drop.
struct DevServer {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    stdout: std::process::ChildStdout,
}

fn devserver_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/cli/devserver")
}

impl DevServer {
    fn start(via: Via, args: &[&str], envs: &[(&str, &str)]) -> DevServer {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let dir = devserver_dir();
        let mut child = via
            .command()
            // A process group of its own: with PHP_CLI_SERVER_WORKERS, php -S forks
            // workers that outlive a parent killed alone (drop ends the whole group).
            .process_group(0)
            .args(["-n", "-S", "127.0.0.1:0", "-t"])
            .arg(&dir)
            .args(args)
            .envs(envs.iter().copied())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("php -S runs");
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

    /// The status line and the body of `GET path`.
    fn get(&self, path: &str) -> (String, String) {
        // Bare LF after the request line, as APCu's harness sends it.
        let response = self.exchange(&format!("GET {path} HTTP/1.1\nHost: 127.0.0.1\r\n\r\n"));
        let (head, body) = response.split_once("\r\n\r\n").expect("a response");
        (head.lines().next().unwrap().to_owned(), body.to_owned())
    }

    /// A header's value in the response to `GET path`, its name matched case-sensitively
    /// (as `get_headers($url, true)` keys are).
    fn header(&self, path: &str, name: &str) -> Option<String> {
        let response = self.exchange(&format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
        let head = response.split_once("\r\n\r\n").expect("a response").0;
        head.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        // The group this test made (its id is the child's pid): the server and its workers.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same requests to bin/php's development server and to ferrophp's (each way it can
/// be called): the same status line and body each time.
fn dev_servers_agree(
    args: &[&str],
    envs: &[(&str, &str)],
    paths: &[&str],
) -> Vec<(String, String)> {
    let theirs_server = DevServer::start(Via::BuildPhp, args, envs);
    let theirs: Vec<_> = paths.iter().map(|p| theirs_server.get(p)).collect();
    drop(theirs_server);
    for via in Via::FERROPHP {
        let server = DevServer::start(via, args, envs);
        for (path, theirs) in paths.iter().zip(&theirs) {
            let mut ours = server.get(path);
            // php -S writes its own error pages; only their status must agree.
            if theirs.0.contains(" 404 ") {
                ours.1.clone_from(&theirs.1);
            }
            assert_eq!(
                &ours, theirs,
                "GET {path} through {via:?} (php -S {args:?})"
            );
        }
    }
    theirs
}

#[test]
fn dev_server_runs_the_router_and_serves_what_it_declines() {
    let answers = dev_servers_agree(
        &["router.php"],
        &[],
        &[
            "/missing.txt?x=1",
            "/a/b",
            "/static.txt",
            "/page.php?q",
            "/",
            "/",
            "/",
        ],
    );
    // PHP_SAPI is "cli-server" under php -S (front controllers test for it to let static
    // files through). SCRIPT_FILENAME is the router when the path names no file, else the
    // file php -S resolved (a path without a dot falls back to the nearest index.php).
    assert_eq!(answers[0].1, "router /missing.txt cli-server router.php");
    assert_eq!(answers[1].1, "router /a/b cli-server index.php");
    assert_eq!(answers[2].1, "static file\n");
    assert_eq!(answers[3].1, "page /page.php?q");
}

// The usual `php -S` front-controller idiom (`PHP_SAPI === 'cli-server' && is_file(...)`
// → `return false`) only lets static files through under PHP's own SAPI name.
#[test]
fn dev_server_front_controllers_see_the_cli_server_sapi() {
    let answers = dev_servers_agree(&["front.php"], &[], &["/static.txt", "/blog/42?x"]);
    assert_eq!(answers[0].1, "static file\n");
    assert_eq!(answers[1].1, "app /blog/42?x");
}

#[test]
fn dev_server_without_router_falls_back_to_the_nearest_index() {
    let paths = [
        "/static.txt",
        "/page.php",
        "/no/such/file",
        "/sub/missing",
        "/no/such/file.txt",
    ];
    let answers = dev_servers_agree(&[], &[("PHP_CLI_SERVER_WORKERS", "2")], &paths);
    assert_eq!(answers[2].1, "index /no/such/file");
    assert!(answers[4].0.contains(" 404 "), "{:?}", answers[4]);
    // Nothing on stdout: PHP's harnesses pass their own stdout to the server.
    let mut server = DevServer::start(Via::PhpCli, &[], &[]);
    assert_eq!(server.get("/page.php").1, "page /page.php");
    let _ = server.child.kill();
    let mut out = Vec::new();
    use std::io::Read;
    server.stdout.read_to_end(&mut out).unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}

/// Header names as the script wrote them (hyper writes lower case unless told otherwise):
/// scripts read them back case-sensitively, as PHP's own get_headers() test does.
#[test]
fn dev_server_writes_header_names_as_php_does() {
    for via in [Via::BuildPhp, Via::PhpCli] {
        let server = DevServer::start(via, &["router.php"], &[]);
        assert_eq!(
            server.header("/", "X-Powered-By").as_deref(),
            Some(format!("PHP/{}", worker::PHP_VERSION).as_str()),
            "{via:?}"
        );
    }
}
