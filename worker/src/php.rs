//! The FFI edge of the runtime: the calling thread's PHP globals and the handful of
//! conversions between Rust and PHP memory that the rest of the crate builds on.
//!
//! Every function here must only be called on a PHP thread, i.e. a thread that has
//! acquired its TSRM context with `ts_resource_ex` (pool threads and the engine's main
//! thread). SAPI callbacks qualify: PHP only invokes them on such threads.

use std::ffi::{c_char, CStr};
use std::ptr::NonNull;

use crate::ffi as sys;

/// The calling thread's `SG(...)`.
pub(crate) fn sapi_globals() -> NonNull<sys::sapi_globals_struct> {
    // SAFETY: on a PHP thread the shim returns the address of this thread's SAPI globals,
    // which live until the thread calls ts_free_thread.
    NonNull::new(unsafe { sys::ferrophp_sapi_globals() }).expect("SG() on a non-PHP thread")
}

/// `SG(server_context)`: the opaque pointer PHP hands back to our SAPI callbacks.
pub(crate) fn server_context() -> *mut std::ffi::c_void {
    // SAFETY: plain read of a field of this thread's SAPI globals.
    unsafe { (*sapi_globals().as_ptr()).server_context }
}

/// Borrow a NUL-terminated C string that PHP owns, as bytes.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_bytes<'a>(ptr: *const c_char) -> &'a [u8] {
    if ptr.is_null() {
        return b"";
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(ptr) }.to_bytes()
}

/// Registers `$_SERVER[name] = value` (or into any track-vars array) through PHP's safe
/// path: name mangling, `filter.default` and all.
pub(crate) fn register_variable(name: &CStr, value: &[u8], track_vars: *mut sys::zval) {
    // SAFETY: name is NUL-terminated; value is a valid slice (PHP copies it); track_vars
    // is the array PHP passed to register_server_variables for this request.
    unsafe {
        sys::php_register_variable_safe(
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            track_vars,
        )
    }
}

/// `$array[key] = value` with both as byte strings copied into request memory.
pub(crate) fn add_assoc_bytes(array: *mut sys::zval, key: &[u8], value: &[u8]) {
    // SAFETY: `array` is an initialised PHP array zval owned by the caller; PHP copies
    // both slices.
    unsafe {
        sys::add_assoc_stringl_ex(
            array,
            key.as_ptr().cast(),
            key.len(),
            value.as_ptr().cast(),
            value.len(),
        );
    }
}

/// Copies `bytes` into request memory (`emalloc`) with a NUL terminator; PHP may `efree` it.
pub(crate) fn estrndup(bytes: &[u8]) -> *mut c_char {
    // SAFETY: _estrndup copies exactly `len` bytes from a valid slice and NUL-terminates;
    // it bails out (never returns NULL) on allocation failure.
    unsafe { sys::_estrndup(bytes.as_ptr().cast(), bytes.len()) }
}

/// Throws a PHP `Error` with `message`.
pub(crate) fn throw_error(message: &CStr) {
    // SAFETY: on a PHP thread inside a request; zend_throw_error copies the message. The
    // format is "%s" so the message is never interpreted.
    unsafe { sys::zend_throw_error(std::ptr::null_mut(), c"%s".as_ptr(), message.as_ptr()) }
}

/// The ini file names PHP recorded during module start-up.
pub(crate) fn ini_files() -> crate::IniFiles {
    let text = |ptr: *const c_char| {
        // SAFETY: PHP's globals are NULL or NUL-terminated strings set once during module
        // start-up (before Engine::start returned) and freed only at shutdown.
        (!ptr.is_null()).then(|| String::from_utf8_lossy(unsafe { c_bytes(ptr) }).into_owned())
    };
    // SAFETY: plain reads of pointer globals written only during module start-up.
    let (loaded, scan_dir, scanned) = unsafe {
        (
            sys::php_ini_opened_path,
            sys::php_ini_scanned_path,
            sys::php_ini_scanned_files,
        )
    };
    crate::IniFiles {
        config_file_path: String::from_utf8_lossy(
            sys::PHP_CONFIG_FILE_PATH
                .strip_suffix(b"\0")
                .unwrap_or(sys::PHP_CONFIG_FILE_PATH),
        )
        .into_owned(),
        loaded: text(loaded),
        scan_dir: text(scan_dir),
        scanned: text(scanned),
    }
}

/// Sets ini `key` to `value` during module start-up, after the ini entries were
/// registered, unless php.ini or `-d` configured it.
pub(crate) fn set_startup_ini_default(key: &str, value: &str) {
    // SAFETY: called during module start-up on the engine's thread (the CLI's
    // register-extensions hook); the shim copies both strings.
    unsafe {
        sys::ferrophp_ini_startup_default(
            key.as_ptr().cast(),
            key.len(),
            value.as_ptr().cast(),
            value.len(),
        )
    };
}
