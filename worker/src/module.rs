//! ferrophp's own PHP extension, registered at engine start-up: the place where classes
//! (such as `UserCache\Cache`) and ini entries join the engine. The module entry itself is
//! a C table in c/module.c; these are its lifecycle callbacks. The shared cache (crate
//! `ferrophp_cache`) hooks in here: MINIT registers `UserCache\Cache`, its ini entries and
//! the optional apcu_* functions; RINIT/RSHUTDOWN and a post-deactivate hook track when a
//! thread may hold cached values. MINIT also registers `Ferrophp\Metrics` (`crate::metrics`),
//! `Ferrophp\Trace` and `Ferrophp\Span` with their error observer and throw hook
//! (`crate::trace`), and sandboxes `putenv`/`getenv` per thread (`crate::env`), whose
//! changes RSHUTDOWN forgets.

use std::ffi::{c_int, CStr};

use crate::ffi as sys;

/// The extension's name in c/module.c's `zend_module_entry`: the cache finds the registered
/// entry by it to install its post-deactivate hook.
const MODULE_NAME: &CStr = c"ferrophp";

#[no_mangle]
pub(crate) extern "C" fn ferrophp_module_minit(
    _type: c_int,
    module_number: c_int,
) -> sys::zend_result {
    ferrophp_cache::module_startup(module_number, MODULE_NAME);
    // PHP's CLI is one thread, as `php` is: it keeps PHP's own putenv() and setlocale().
    if !crate::cli::running_cli() {
        crate::env::install();
        // SAFETY: MINIT, on the thread that owns the global function table; no PHP thread
        // has copied it yet.
        unsafe { sys::ferrophp_locale_install() };
    }
    crate::metrics::module_startup();
    crate::trace::module_startup();
    crate::php_jobs::module_startup();
    // frankenphp_log()'s levels, declared beside it in worker/stubs/sapi.stub.php.
    // SAFETY: MINIT; PHP copies the names into persistent constants of this module.
    unsafe { sys::ferrophp_sapi_register_constants(module_number) };
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub(crate) extern "C" fn ferrophp_module_mshutdown(
    _type: c_int,
    _module_number: c_int,
) -> sys::zend_result {
    ferrophp_cache::module_shutdown();
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub(crate) extern "C" fn ferrophp_module_rinit(
    _type: c_int,
    _module_number: c_int,
) -> sys::zend_result {
    ferrophp_cache::request_startup();
    crate::php_jobs::request_startup();
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub(crate) extern "C" fn ferrophp_module_rshutdown(
    _type: c_int,
    _module_number: c_int,
) -> sys::zend_result {
    ferrophp_cache::request_shutdown();
    // Leases still held by Job objects are failed (a script that ended without ack).
    crate::php_jobs::request_shutdown();
    // PHP's CLI keeps PHP's own putenv() and setlocale() and has no request deadlines.
    if !crate::cli::running_cli() {
        crate::env::reset();
        // Ours runs before the session module's request shutdown (modules end in reverse
        // order of registration, and this one is registered last), which writes the
        // session.
        // SAFETY: a PHP thread at the end of its engine request; reads its own state.
        unsafe { sys::ferrophp_deadline_session_check() };
        // SAFETY: a PHP thread at the end of its engine request; only its own locale
        // changes.
        unsafe { sys::ferrophp_locale_thread_reset() };
    }
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub(crate) extern "C" fn ferrophp_module_minfo(_module: *mut sys::zend_module_entry) {}
