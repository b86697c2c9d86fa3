//! Builds the worker crate's C (`c/`: the request lifecycle, worker requests, deadlines,
//! the SAPI's functions and hooks, ferrophp's module entry, the Metrics, Trace and Jobs
//! classes)
//! against the PHP headers and the shim php-sys found, with the arginfo headers generated
//! from `stubs/` (checked against their stubs first), and generates Rust declarations for
//! what `c/worker.h`, `c/metrics.h`, `c/trace.h` and `c/jobs.h` declare. PHP's types are not
//! regenerated here: the declarations name php-sys's (`allowlist_recursively(false)`), so
//! a `zval` is the same type on both sides of the crate boundary (as the cache crate does).
//!
//! Also gives this crate's test binaries an rpath to libphp (and, with libphp linked in
//! statically, the exported engine symbols dlopen'd extensions need), passes the libdir
//! and link mode on to dependents (DEP_FERROPHP_WORKER_LIBDIR, _LINK) so the `ferrophp`
//! binary gets the same, and tells the crate whether PHP's CLI SAPI was built.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../php-sys/arginfo.rs"]
mod arginfo;

/// The C files, each owning one role (c/worker.h says which).
const C_FILES: [&str; 15] = [
    "c/module.c",
    "c/server_vars.c",
    "c/input.c",
    "c/request_scope.c",
    "c/worker_request.c",
    "c/thread.c",
    "c/locale.c",
    "c/deadline_state.c",
    "c/deadline.c",
    "c/deadline_waits.c",
    "c/slow_capture.c",
    "c/metrics.c",
    "c/trace.c",
    "c/mercure.c",
    "c/jobs.c",
];

/// The headers bindgen reads (the declarations Rust calls or implements).
const HEADERS: [&str; 4] = ["c/worker.h", "c/metrics.h", "c/trace.h", "c/jobs.h"];

fn main() {
    println!("cargo:rerun-if-changed=c");
    println!("cargo:rerun-if-changed=../php-sys/arginfo.rs");
    // A different PHP (PHP_CONFIG) reaches this script only through php-sys's metadata.
    for var in [
        "DEP_PHP_INCLUDE",
        "DEP_PHP_SHIM_INCLUDE",
        "DEP_PHP_LIBDIR",
        "DEP_PHP_LINK",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    arginfo::check_stubs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("stubs"));

    let mut includes: Vec<PathBuf> = vec![PathBuf::from("c"), PathBuf::from("stubs")];
    includes.push(PathBuf::from(env::var_os("DEP_PHP_SHIM_INCLUDE").expect(
        "php-sys exports its own directory (shim.h) as DEP_PHP_SHIM_INCLUDE",
    )));
    let php_include = env::var_os("DEP_PHP_INCLUDE")
        .expect("php-sys exports PHP's include directories as DEP_PHP_INCLUDE");
    includes.extend(env::split_paths(&php_include));
    let static_php = env::var("DEP_PHP_LINK").as_deref() == Ok("static");
    let bench_fixtures = env::var_os("CARGO_FEATURE_BENCH_FIXTURES").is_some();

    compile_c(&includes, static_php, bench_fixtures);
    generate_bindings(&includes, bench_fixtures);

    if let Ok(libdir) = env::var("DEP_PHP_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
        println!("cargo:libdir={libdir}");
    }
    // PHP's CLI SAPI (libphp-cli.a) is in the PHP build: `cli::run` can call it.
    println!("cargo:rustc-check-cfg=cfg(php_cli_sapi)");
    if env::var_os("DEP_PHP_CLI_SAPI").is_some() {
        println!("cargo:rustc-cfg=php_cli_sapi");
    }
    if let Ok(link) = env::var("DEP_PHP_LINK") {
        if static_php {
            println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
        }
        println!("cargo:link={link}");
    }
}

/// The C files as one static library, bundled into this crate's rlib: the C and the Rust
/// that call each other sit in one archive, which the linker searches until neither has
/// an undefined symbol left. `deadline_waits.c`'s replacements of libc's waits come along
/// because Rust calls `ferrophp_deadline_reap`, defined beside them.
fn compile_c(includes: &[PathBuf], static_php: bool, bench_fixtures: bool) {
    let mut build = cc::Build::new();
    build
        .files(C_FILES)
        .includes(includes)
        // PHP's headers warn under -Wall (unused parameters in static inlines): the same
        // policy as php-sys's shim and the cache's C.
        .warnings(false)
        .flag_if_supported("-std=gnu11");
    // The fixtures' switch of input.c (ferrophp_set_fast_input), for tests and benchmarks.
    if bench_fixtures {
        build.define("FERROPHP_BENCH_FIXTURES", None);
    }
    // ext/libxml/php_libxml.h includes libxml2's headers, which live outside PHP's include
    // dirs; worker_request.c resets libxml state between worker requests with it (and
    // compiles without, minus one reset, when libxml2's headers cannot be found). It also
    // reads libxml2's per-thread state to skip a reset that would change nothing, so it
    // links libxml2 itself: libphp.a's link lists it already, libphp.so's does not reach
    // our objects (and --as-needed drops it again when PHP has no libxml).
    if let Ok(out) = Command::new("pkg-config")
        .args(["--cflags", "--libs", "libxml-2.0"])
        .output()
    {
        if out.status.success() {
            for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                match flag.strip_prefix("-l") {
                    Some(lib) if !static_php => println!("cargo:rustc-link-lib=dylib={lib}"),
                    Some(_) => {}
                    None => {
                        build.flag(flag);
                    }
                }
            }
        }
    }
    build.compile("ferrophp_worker_c");
}

/// Rust declarations of what the crate's headers declare, and only that: bindgen reads
/// them through PHP's and php-sys's headers, but emits the items of `c/` alone.
fn generate_bindings(includes: &[PathBuf], bench_fixtures: bool) {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("worker_c.rs");
    let mut builder = bindgen::Builder::default();
    for header in HEADERS {
        builder = builder.header(header);
    }
    builder
        .clang_args(includes.iter().map(|d| format!("-I{}", d.display())))
        .clang_args(bench_fixtures.then_some("-DFERROPHP_BENCH_FIXTURES"))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_file("(.*/)?c/(worker|metrics|trace|jobs)\\.h")
        .allowlist_recursively(false)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("ferrophp-worker: bindgen over c/ failed: {e}"))
        .write_to_file(&out)
        .unwrap_or_else(|e| panic!("ferrophp-worker: cannot write {}: {e}", out.display()));
}
