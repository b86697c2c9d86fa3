//! The PHP side of a call into `Ferrophp\Trace` or `Ferrophp\Span`: its frame and return
//! slot, checking that no argument was passed, returning a value, and throwing
//! `Ferrophp\TraceException`.

use std::ffi::{c_char, CString};

use crate::ffi as sys;
use ferrophp_cache::zv;

pub(super) type Ed = *mut sys::zend_execute_data;
pub(super) type Rv = *mut sys::zval;

/// Throws `Ferrophp\TraceException` with `msg`.
pub(super) fn throw(msg: &str) {
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: on a PHP thread inside a call; the class was registered at MINIT; PHP
    // copies the message.
    unsafe { sys::zend_throw_exception(sys::ferrophp_trace_exception_ce, msg.as_ptr(), 0) };
}

/// Returns `bytes` (ASCII) as a PHP string.
pub(super) fn return_str(rv: Rv, bytes: &[u8]) {
    // SAFETY: rv is this call's return slot; PHP copies the bytes.
    unsafe { sys::ferrophp_zval_stringl(rv, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
}

pub(super) fn return_null(rv: Rv) {
    // SAFETY: rv is this call's return slot.
    unsafe { zv::copy_plain(rv, &zv::null()) };
}

pub(super) fn return_bool(rv: Rv, b: bool) {
    // SAFETY: rv is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(rv, b) };
}

/// `zend_parse_parameters_none()`.
pub(super) fn no_args(ed: Ed) -> bool {
    // SAFETY: ed is the running call's frame.
    if unsafe { zv::num_args(ed) } == 0 {
        return true;
    }
    // SAFETY: inside an internal function call on a PHP thread.
    unsafe { sys::zend_wrong_parameters_none_error() };
    false
}
