//! PHP's own command-line interpreter, inside ferrophp: `ferrophp php-cli ARGS`, and
//! ferrophp called through a link named `php`. It is PHP's CLI SAPI itself (`sapi/cli`
//! from the same source as the engine, archived by `scripts/build-php.sh` as
//! `libphp-cli.a` with its `main` renamed `php_cli_main`), so every flag, output and
//! exit code is `php`'s. ferrophp adds two things before handing over:
//!
//! - its own extension (`UserCache\Cache`, the built-in `apcu_*` layer, `Ferrophp\Metrics`),
//!   so a CLI script (a console command, a cache warmer) sees the functions the same
//!   app sees when served; minus what only a threaded server needs (the per-thread
//!   `putenv()` sandbox and `setlocale()`): the CLI is one thread, as `php` is;
//! - the release tree's `extension_dir` as a default (php.ini and `-d` still win), as the
//!   server has it ([`crate::layout`]).
//!
//! The CLI runs the whole engine life (start-up, one request, shut-down) on the calling
//! thread and returns the process exit code; it must not share a process with a running
//! [`crate::Engine`].

use std::ffi::{c_char, c_int, CString, OsString};
use std::os::unix::ffi::OsStringExt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ffi as sys;

/// Whether the engine in this process is PHP's CLI: ferrophp's module then leaves out
/// what only a threaded server needs.
static RUNNING_CLI: AtomicBool = AtomicBool::new(false);

/// Whether the engine in this process is PHP's CLI ([`run`] started it).
pub(crate) fn running_cli() -> bool {
    RUNNING_CLI.load(Ordering::Relaxed)
}

/// Whether this binary carries PHP's CLI SAPI (a PHP build without `libphp-cli.a`, such
/// as a `PHP_CONFIG` build, has none).
pub const AVAILABLE: bool = cfg!(php_cli_sapi);

/// Runs PHP's CLI with `args` as its `argv` (`args[0]` is the program name `php` reports
/// and derives `PHP_BINARY` from) and returns the exit status `php` would.
pub fn run(args: Vec<OsString>) -> i32 {
    #[cfg(php_cli_sapi)]
    {
        run_sapi(args)
    }
    #[cfg(not(php_cli_sapi))]
    {
        let _ = args;
        eprintln!(
            "ferrophp: this build has no PHP CLI (its PHP build lacks libphp-cli.a: build PHP \
             with scripts/build-php.sh)"
        );
        1
    }
}

#[cfg(php_cli_sapi)]
fn run_sapi(args: Vec<OsString>) -> i32 {
    // argv as C strings; an argument with a NUL byte cannot reach a C program at all.
    let mut owned = Vec::with_capacity(args.len());
    for arg in args {
        match CString::new(arg.into_vec()) {
            Ok(c) => owned.push(c),
            Err(_) => {
                eprintln!("ferrophp: an argument contains a NUL byte");
                return 1;
            }
        }
    }
    // PHP's getopt and ps_title may rewrite argv in place: hand it a mutable array, kept
    // alive (with its strings) until the CLI returns.
    let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let argc = c_int::try_from(owned.len()).unwrap_or(c_int::MAX);
    RUNNING_CLI.store(true, Ordering::Relaxed);
    // SAFETY: nothing else has started the engine in this process (see the module doc);
    // the hook is read once, by php_module_startup on this thread.
    unsafe { sys::php_register_internal_extensions_func = Some(register_extensions) };
    // SAFETY: argv holds argc valid NUL-terminated strings and a terminating NULL, all
    // outliving the call; php_cli_main is PHP's CLI main() and runs the engine's whole life
    // on this thread.
    unsafe { sys::php_cli_main(argc, argv.as_mut_ptr()) }
}

/// php_module_startup's hook for the modules compiled in: PHP's own list, then ferrophp's
/// extension. It runs after php.ini was read, before `extension=` lines load, which is
/// also the moment to point `extension_dir` at a release tree when php.ini did not.
#[cfg(php_cli_sapi)]
unsafe extern "C" fn register_extensions() -> c_int {
    // SAFETY: called by php_module_startup on the thread running the CLI.
    let registered = unsafe { sys::php_register_internal_extensions() };
    if registered != sys::ZEND_RESULT_CODE_SUCCESS {
        return registered;
    }
    // SAFETY: module start-up on the engine's only thread; PHP keeps the pointer to our
    // static module entry for the life of the process.
    if unsafe { sys::zend_register_internal_module(sys::ferrophp_module_entry()) }.is_null() {
        return sys::ZEND_RESULT_CODE_FAILURE;
    }
    for (key, value) in crate::layout::ini_defaults() {
        crate::php::set_startup_ini_default(&key, &value);
    }
    sys::ZEND_RESULT_CODE_SUCCESS
}
