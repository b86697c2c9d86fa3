//! The short, stable form of the server's fuzz targets (`fuzz/`, docs/fuzzing.md): each
//! target function runs over its whole corpus (`fuzz/corpus/<target>/`), its regression
//! cases (`fuzz/regressions/<target>/`) and a few thousand seeded mutations of them, so CI
//! exercises them without nightly. The target functions and the generator are the fuzz
//! crate's own files, included by path (the fuzz crate is outside the workspace); they
//! reach the server through `ferrophp_server::fuzzing`. `FERROPHP_FUZZ_SEED` changes the
//! generated inputs.

#[path = "../../fuzz/src/gen.rs"]
mod gen;
#[path = "../../fuzz/src/server_targets.rs"]
mod server_targets;

const ROUTING_DICT: &[&[u8]] = &[
    b"%2e",
    b"%2f",
    b"%2F",
    b"%00",
    b"%5c",
    b".php",
    b".PHP",
    b"/",
    b"//",
    b"..",
    b".",
    b"%c0%ae",
    b"%C3%A9",
    b"index.php",
    b"dir",
    b"up",
    b".env",
    b".well-known",
    b"out",
    b"link.php",
    b";",
    b"::$DATA",
    b"%20",
    b"%25",
    b"\xc4\xb0",
    b"\xe2\x84\xaa",
];

#[test]
fn routing_corpus_and_generated_paths() {
    let ran = gen::replay("routing", 3000, ROUTING_DICT, server_targets::routing);
    eprintln!("routing: {ran} inputs");
}

#[test]
fn header_naming_corpus_and_generated_headers() {
    let dict: &[&[u8]] = &[
        b"x-forwarded-for",
        b"_",
        b".",
        b"-",
        b":",
        b"\n",
        b"proxy",
        b"host",
        b"cookie",
        b"[::1]",
        b"content-type",
        b" ",
        b"\t",
    ];
    let ran = gen::replay("headers", 3000, dict, server_targets::headers);
    eprintln!("headers: {ran} inputs");
}

#[test]
fn config_corpus_and_generated_files() {
    let dict: &[&[u8]] = &[
        b"root",
        b"listen",
        b"threads",
        b"[[worker]]",
        b"script",
        b"match",
        b"env = {",
        b"metrics_relative_accuracy = ",
        b"metrics_push_url",
        b"max_header_size",
        b"=",
        b"\"",
        b"\n",
        b"[::1]:80",
        b"nan",
        b"inf",
        b"-1",
        b"0",
    ];
    let ran = gen::replay("config", 3000, dict, server_targets::config);
    eprintln!("config: {ran} inputs");
}

/// Cases found or worth pinning by name (the corpora hold them too).
#[test]
fn routing_regressions() {
    for path in [
        "/t.php.",
        "/t2.php%20",
        "/link.php/x",
        "/out.php",
        "/.well-known/.secret",
        "/uplink/shell.php",
        "/dir/up.php/x",
        "/dirphp.php/inner.php/p",
        "/%c0%ae%c0%ae/",
        "/a.php%00.txt",
        "/loop/a.php",
    ] {
        server_targets::routing(path.as_bytes());
    }
}
