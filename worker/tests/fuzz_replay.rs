//! The short, stable form of the worker's fuzz targets (`fuzz/`, docs/fuzzing.md): the
//! string arena, the cache table and `$_SERVER` header naming (`worker::fuzzing`) over
//! their corpora, regression cases and seeded mutations; and a seeded differential run of
//! the `$_COOKIE`/`$_GET` fast path against PHP's own parser, which needs the engine (so
//! it is not a libFuzzer target: see docs/fuzzing.md). `FERROPHP_FUZZ_SEED` changes the
//! generated inputs.

mod common;

use std::process::Command;

use worker::{diagnostics, Engine, EngineConfig, LogTarget};

#[allow(dead_code)]
#[path = "../../fuzz/src/gen.rs"]
mod gen;

#[test]
fn string_arena_corpus_and_generated_sizes() {
    let ran = gen::replay("string_arena", 300, &[], worker::fuzzing::string_arena);
    eprintln!("string_arena: {ran} inputs");
}

#[test]
fn cache_table_corpus_and_generated_operations() {
    let ran = gen::replay("cache_table", 2000, &[], worker::fuzzing::cache_table);
    eprintln!("cache_table: {ran} inputs");
}

#[test]
fn header_names_generated() {
    let dict: &[&[u8]] = &[
        b"-",
        b"_",
        b".",
        b"\n",
        b"accept",
        b"x-forwarded-for",
        b"proxy",
    ];
    let ran = gen::replay("headers", 1000, dict, worker::fuzzing::header_names);
    eprintln!("header names: {ran} inputs");
}

/// Set in the child: "CONFIG_INDEX:SEED".
const CHILD_ENV: &str = "FERROPHP_FUZZ_INPUT_CHILD";

/// The ini configurations of worker/tests/input_parsing.rs.
const CONFIGS: &[&str] = &[
    "",
    "max_input_vars=3",
    "filter.default=special_chars",
    "arg_separator.input=&;",
    "max_input_nesting_level=1",
];

/// Pairs of (cookie header values, query string) per configuration.
const GENERATED: usize = 300;

fn pick<'a>(rng: &mut gen::Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len())]
}

/// A name, `=`, a value: from pieces that trip parsers (brackets, dots, spaces, numeric
/// names, `__Host-` prefixes, encodings, NUL, UTF-8).
fn pair(rng: &mut gen::Rng) -> String {
    const NAMES: &[&str] = &[
        "a",
        "b",
        "x",
        "a.b",
        "a b",
        "a[",
        "a[x]",
        "a[]",
        "a[x][y]",
        "[",
        "]",
        "0",
        "12",
        "-1",
        "012",
        "1.5",
        "__Host-x",
        "__Secure-y",
        "__Host.z",
        "GLOBALS",
        "_COOKIE",
        "this",
        "caf\u{e9}",
        "%41",
        "%5F%5FHost-d",
        "n%00ul",
        "+",
        "x+y",
        "",
        " sp",
    ];
    const VALUES: &[&str] = &[
        "",
        "1",
        "v",
        "a=b",
        "%zz",
        "%4",
        "%E2%82%AC",
        "a+b",
        "%00",
        "caf\u{e9}",
        " x ",
        "\"q\"",
    ];
    let mut s = pick(rng, NAMES).to_string();
    if rng.below(4) == 0 {
        s.push_str(pick(rng, &["[", "]", "[]", ".", " "]));
    }
    if rng.below(6) != 0 {
        s.push('=');
        s.push_str(pick(rng, VALUES));
    }
    s
}

fn generated_input(rng: &mut gen::Rng) -> (Vec<String>, String) {
    let mut cookies = Vec::new();
    for _ in 0..rng.below(3) {
        let n = rng.below(6);
        let sep = ["; ", ";", ";;", "; ; "][rng.below(4)];
        cookies.push((0..n).map(|_| pair(rng)).collect::<Vec<_>>().join(sep));
    }
    let n = rng.below(8);
    let query = (0..n)
        .map(|_| pair(rng))
        .collect::<Vec<_>>()
        .join(["&", "&&", ";", "&amp;"][rng.below(4)]);
    (cookies, query)
}

#[test]
fn input_fast_path_matches_php_on_generated_input() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let seed: u64 = std::env::var("FERROPHP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_130);
    let exe = std::env::current_exe().expect("test binary path");
    for (i, config) in CONFIGS.iter().enumerate() {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "generated_input_in_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{i}:{seed}"))
            .output()
            .expect("child test runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("compared: "),
            "configuration {config:?}, seed {seed}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn generated_input_in_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // run by the test above, once per configuration
    };
    let (index, seed) = spec.split_once(':').expect("INDEX:SEED");
    let config = CONFIGS[index.parse::<usize>().unwrap()];
    let seed: u64 = seed.parse().unwrap();
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
    assert!(diagnostics::fast_input_parser_installed());
    let run = |cookies: &[String], query: &str, php_parser: bool| {
        common::dump_input(&engine, cookies, query, php_parser)
    };
    run(&[], "", true);
    let mut rng = gen::Rng(seed ^ (index.parse::<u64>().unwrap() << 32));
    for i in 0..GENERATED {
        let (cookies, query) = generated_input(&mut rng);
        let php = run(&cookies, &query, true);
        let fast = run(&cookies, &query, false);
        assert!(php.contains("REQUEST:"), "the dump script ran: {php}");
        assert_eq!(
            php, fast,
            "config {config:?}, seed {seed}, input {i}: cookies {cookies:?}, query {query:?}"
        );
    }
    diagnostics::use_php_input_parser(false);
    println!("compared: {GENERATED}");
}
