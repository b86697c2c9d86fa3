//! `$_COOKIE` and `$_GET` from c/input.c's fast path (plain names registered directly) are
//! exactly what PHP's own `treat_data` makes: superglobals, the filter extension's raw
//! copies (`filter_input`), `$_REQUEST` and warnings, over awkward cookie sets and query
//! strings, under several ini configurations. PHP starts once per process, so each
//! configuration runs in a child process of this test binary.

mod common;

use std::process::Command;

use worker::{diagnostics, Engine, EngineConfig, LogTarget};

/// Set in the child: the ini settings to start PHP with ("k=v|k=v").
const CHILD_ENV: &str = "FERROPHP_INPUT_PARSING_INI";

const CONFIGS: &[&str] = &[
    "",
    "max_input_vars=3",
    "max_input_vars=0",
    "filter.default=special_chars",
    "mbstring.encoding_translation=1",
    "arg_separator.input=&;",
    "arg_separator.input=;",
    "max_input_nesting_level=1",
];

fn cookie_sets() -> Vec<Vec<String>> {
    let mut sets: Vec<Vec<String>> = [
        &["a=1; b=2; a=3"][..],
        &["  sp=1;;; ;=x; =y; novalue; empty=; x=%41%20b+c%00d%zz"],
        &["a.b=1; a b=2; a[x]=3; a[y][z]=4; a[]=5; c[=6; d]=7; 0=zero; 12=twelve; -3=neg; 012=oct; 1.5=f"],
        &["__Host-x=1; __Secure-y=2; __Host.z=3; __Host z=4; _Host-a=5"],
        &["GLOBALS=1; this=2; _COOKIE=3"],
        &["k1=v1", "k2=v2; k1=other"],
        &["\tt=tab; \t n=nl; x=a=b=c; %41=enc"],
        &["caf\u{e9}=1; \u{e9}t\u{e9}=2"],
        &[";;;"],
        &["dup=1; dup[a]=2; arr[a]=1; arr=2"],
        &["y=1; y[]=2"],
        &["9223372036854775807=max; 9223372036854775808=over; -0=mz"],
    ]
    .iter()
    .map(|set| set.iter().map(|c| c.to_string()).collect())
    .collect();
    sets.push(vec![]);
    sets.push(vec![(0..1200).map(|i| format!("c{i}=v{i}; ")).collect()]);
    sets
}

fn queries() -> Vec<String> {
    let mut q: Vec<String> = [
        "",
        "foo=bar&baz=qux",
        "a=1&a=2&b[]=3&b[]=4&c[x][y]=5",
        "x+y=1&x%20z=2&p.q=3&%41=4&e=%zz%4&plus=a+b&enc=%E2%82%AC",
        "&&=v&novalue&empty=&0=zero&12=twelve&-1=neg&01=oct",
        "__Host-a=1&__Host.b=2&__Secure-c=3&%5F%5FHost-d=4",
        "n%00ul=1&v=a%00b&GLOBALS=1&this=2",
        "a=1;b=2&c=3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    q.push(
        (0..1200)
            .map(|i| format!("q{i}={i}"))
            .collect::<Vec<_>>()
            .join("&"),
    );
    q
}

#[test]
fn fast_input_parsing_matches_php_under_every_configuration() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // inside a child: compare_in_child does the work
    }
    let exe = std::env::current_exe().expect("test binary path");
    for config in CONFIGS {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "compare_in_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, config)
            .output()
            .expect("child test runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("compared: "),
            "configuration {config:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn compare_in_child() {
    let Ok(config) = std::env::var(CHILD_ENV) else {
        return; // run by the test above, once per configuration
    };
    let mut ini: Vec<(String, String)> = vec![
        ("display_errors".into(), "1".into()),
        ("log_errors".into(), "0".into()),
        ("html_errors".into(), "0".into()),
    ];
    ini.extend(
        config
            .split('|')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let engine = Engine::start(EngineConfig {
        threads: 1,
        ini,
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .expect("engine starts");
    assert!(
        diagnostics::fast_input_parser_installed(),
        "the fast path is in place (else this compares PHP with itself)"
    );
    let run = |cookies: &[String], query: &str, php_parser: bool| {
        common::dump_input(&engine, cookies, query, php_parser)
    };
    // The first request also reports start-up diagnostics (e.g. "filter.default is
    // deprecated") through error_get_last(): keep them out of the comparison.
    run(&[], "", true);
    let mut compared = 0;
    for cookies in cookie_sets() {
        for query in queries() {
            let php = run(&cookies, &query, true);
            let fast = run(&cookies, &query, false);
            assert!(php.contains("REQUEST:"), "the dump script ran: {php}");
            assert_eq!(
                php, fast,
                "config {config:?}, cookies {cookies:?}, query {query:?}"
            );
            compared += 1;
        }
    }
    diagnostics::use_php_input_parser(false);
    println!("compared: {compared}");
}
