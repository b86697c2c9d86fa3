//! Compiles the cache's C side (`usercache.c`: `UserCache\Cache`'s registration, one small
//! function per zval macro; `apcu.c`: the `apcu_*` layer's registration) against the PHP
//! headers php-sys found, with the arginfo headers generated from `stubs/` (checked
//! against their stubs first), and generates Rust declarations for the functions
//! `usercache.h` declares. PHP's types are not regenerated here: the declarations name
//! php-sys's (`allowlist_recursively(false)`), so a `zval` is the same type on both sides
//! of the crate boundary.
//!
//! php-sys passes PHP's include directories as `DEP_PHP_INCLUDE` (its `links = "php"`
//! metadata) and its libdir as `DEP_PHP_LIBDIR`; php-config is not run again.

use std::env;
use std::path::{Path, PathBuf};

#[path = "../php-sys/arginfo.rs"]
mod arginfo;

fn main() {
    for f in [
        "usercache.h",
        "usercache.c",
        "apcu.c",
        "../php-sys/arginfo.rs",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    arginfo::check_stubs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("stubs"));
    // A different PHP (PHP_CONFIG) reaches this script only through php-sys's metadata.
    println!("cargo:rerun-if-env-changed=DEP_PHP_INCLUDE");
    println!("cargo:rerun-if-env-changed=DEP_PHP_LIBDIR");
    let include = env::var_os("DEP_PHP_INCLUDE")
        .expect("php-sys exports PHP's include directories as DEP_PHP_INCLUDE");
    let includes: Vec<PathBuf> = env::split_paths(&include).collect();

    let mut build = cc::Build::new();
    build
        .file("usercache.c")
        .file("apcu.c")
        .include(".")
        .include("stubs")
        .includes(&includes)
        // PHP's headers warn under -Wall (unused parameters in static inlines): the same
        // policy as php-sys's shim.
        .warnings(false)
        .flag_if_supported("-std=gnu11");
    build.compile("ferrophp_usercache");

    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("usercache.rs");
    bindgen::Builder::default()
        .header("usercache.h")
        .clang_args(includes.iter().map(|d| format!("-I{}", d.display())))
        .clang_arg("-I.")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_function("ferrophp_(uc|apcu)_.*")
        .allowlist_var("ferrophp_(uc|apcu)_.*")
        .allowlist_recursively(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("ferrophp-cache: bindgen over usercache.h failed: {e}"))
        .write_to_file(&out)
        .unwrap_or_else(|e| panic!("ferrophp-cache: cannot write {}: {e}", out.display()));

    // The unit tests' binaries link libphp (through php-sys): give them an rpath, as the
    // worker's build script does for its tests.
    if let Ok(libdir) = env::var("DEP_PHP_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    if env::var("DEP_PHP_LINK").as_deref() == Ok("static") {
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
    }
}
