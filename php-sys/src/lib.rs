//! Raw FFI to libphp (ZTS + embed) and to ferrophp's C shim. Nothing else lives here:
//! no policy, no safe wrappers. The `worker` crate owns every call into these bindings.
//!
//! See `build.rs` for how PHP is found and `shim.h` for the C side.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

// main/php_ini.c's record of the ini files it read, PHPAPI but declared in no header
// bindgen reads (sapi/cli's `php --ini` prints them).
extern "C" {
    pub static mut php_ini_opened_path: *mut std::ffi::c_char;
    pub static mut php_ini_scanned_path: *mut std::ffi::c_char;
    pub static mut php_ini_scanned_files: *mut std::ffi::c_char;
}

// PHP's CLI SAPI (sapi/cli/php_cli.c's main(), renamed by scripts/build-php.sh when it
// archives the CLI as libphp-cli.a). No header declares it.
#[cfg(php_cli_sapi)]
extern "C" {
    pub fn php_cli_main(argc: std::ffi::c_int, argv: *mut *mut std::ffi::c_char)
        -> std::ffi::c_int;
}

/// Installation prefix of the PHP build these bindings were generated from.
pub const INSTALL_PREFIX: &str = env!("FERROPHP_PHP_PREFIX");
/// `PHP_VERSION` of that build.
pub const PHP_VERSION_STRING: &str = env!("FERROPHP_PHP_VERSION");
