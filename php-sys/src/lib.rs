//! Raw FFI to libphp (ZTS + embed) and to the C shim of thin wrappers for what bindgen
//! cannot express. Nothing else lives here: no policy, no safe wrappers, and no C that
//! calls up into another crate (the worker's own C is `worker/c/`). The worker crate
//! (`ferrophp-worker`) and the cache crate own every call into these bindings.
//!
//! See `build.rs` for how PHP is found and `shim.h` for the C side.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

/// bindgen's output (C names, no docs, its own unsafe code): the lints that hold for
/// this crate's own items do not apply to it.
#[allow(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    unreachable_pub,
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}
pub use bindings::*;

// main/php_ini.c's record of the ini files it read, PHPAPI but declared in no header
// bindgen reads (sapi/cli's `php --ini` prints them).
extern "C" {
    /// The php.ini file PHP loaded, or null.
    pub static mut php_ini_opened_path: *mut std::ffi::c_char;
    /// Where PHP looked for additional .ini files (`PHP_INI_SCAN_DIR` or the build's
    /// default).
    pub static mut php_ini_scanned_path: *mut std::ffi::c_char;
    /// The additional .ini files PHP loaded, separated by `,\n`, or null.
    pub static mut php_ini_scanned_files: *mut std::ffi::c_char;
}

// PHP's CLI SAPI (sapi/cli/php_cli.c's main(), renamed by scripts/build-php.sh when it
// archives the CLI as libphp-cli.a). No header declares it.
#[cfg(php_cli_sapi)]
extern "C" {
    /// PHP's CLI `main()`: runs `php` with these arguments and returns its exit status.
    pub fn php_cli_main(argc: std::ffi::c_int, argv: *mut *mut std::ffi::c_char)
        -> std::ffi::c_int;
}

/// Installation prefix of the PHP build these bindings were generated from.
pub const INSTALL_PREFIX: &str = env!("FERROPHP_PHP_PREFIX");
/// `PHP_VERSION` of that build.
pub const PHP_VERSION_STRING: &str = env!("FERROPHP_PHP_VERSION");
