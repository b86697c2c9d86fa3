//! `ferrophp php-cli` behaves like the `php` CLI: argv, std streams, exit codes, errors on
//! stderr, `-d` overrides. Runs the real binary.

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

#[test]
fn fatal_error_goes_to_stderr_with_status_255() {
    let out = php_cli(&[&script("fatal.php")], b"");
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(out.stdout, b"before\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PHP Fatal error:") && err.contains("undefined_function_call"),
        "{err}"
    );
}

#[test]
fn uncaught_exception_goes_to_stderr_with_status_255() {
    let out = php_cli(&[&script("exception.php")], b"");
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Uncaught RuntimeException: boom from exception.php"),
        "{err}"
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
fn missing_script_is_an_error() {
    let out = php_cli(&["/nonexistent/script.php"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Could not open input file"));
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
