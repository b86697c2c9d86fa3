//! How the cache reports a problem to the PHP script: exceptions, argument errors and
//! warnings. Every front end (`UserCache\Cache`, the `apcu_*` layer, `APCUIterator`) and
//! the value rebuild use these, so each kind of report is raised one way.

use std::ffi::CString;

use php_sys as sys;

use super::ffi;

/// The class of an exception the cache throws.
#[derive(Clone, Copy)]
pub(crate) enum Exception {
    /// `UserCache\Exception` (registered at MINIT): the cache's own failures.
    Cache,
    /// PHP's `Error`: misuse APCu reports with it (an uninitialised APCUIterator, ...).
    Error,
}

/// `msg` as a C string; a NUL inside it is shown as `\0` rather than cutting it short.
fn c_message(msg: &str) -> CString {
    CString::new(msg.replace('\0', "\\0")).unwrap_or_default()
}

/// Throws an exception of class `class` with message `msg`.
pub(crate) fn throw(class: Exception, msg: &str) {
    let msg = c_message(msg);
    match class {
        // SAFETY: on a PHP thread in a request; the exception class was registered at
        // MINIT; PHP copies the message.
        Exception::Cache => unsafe {
            sys::zend_throw_exception(ffi::ferrophp_uc_exception_ce, msg.as_ptr(), 0);
        },
        // SAFETY: on a PHP thread in a request; "%s" consumes the one C string passed,
        // which PHP copies.
        Exception::Error => unsafe {
            sys::zend_throw_error(std::ptr::null_mut(), c"%s".as_ptr(), msg.as_ptr());
        },
    }
}

/// Throws the `ValueError` of argument `arg` (1-based) of the running call: "...($name)
/// `msg`".
pub(crate) fn argument_value_error(arg: u32, msg: &str) {
    let msg = c_message(msg);
    // SAFETY: inside an internal function call (PHP names the function and argument from
    // its frame); "%s" consumes the one C string passed.
    unsafe { sys::zend_argument_value_error(arg, c"%s".as_ptr(), msg.as_ptr()) };
}

/// Throws the `TypeError` of argument `arg` (1-based) of the running call.
pub(crate) fn argument_type_error(arg: u32, msg: &str) {
    let msg = c_message(msg);
    // SAFETY: inside an internal function call; "%s" consumes the one C string passed.
    unsafe { sys::zend_argument_type_error(arg, c"%s".as_ptr(), msg.as_ptr()) };
}

/// Emits an `E_WARNING` naming the running function (`php_error_docref`), as APCu warns.
pub(crate) fn warn(msg: &str) {
    let msg = c_message(msg);
    // SAFETY: inside an internal function call; PHP copies the message.
    unsafe { ffi::ferrophp_uc_warning(msg.as_ptr()) };
}
