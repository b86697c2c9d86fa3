//! `opcache_reset()` refused.
//!
//! OPcache's shared memory belongs to the process, and every PHP thread of ferrophp runs
//! code compiled into it: a worker script for its whole life, a classic request while it
//! runs. `opcache_reset()` schedules a restart that the next request start-up on any
//! thread carries out at once, freeing that memory under the others: OPcache's guard
//! (a `fcntl` lock per process) cannot see threads of the same process. Tried here, the
//! next worker request crashed the whole server (`frankenphp_worker.rs`,
//! `opcache_reset_under_concurrency`). Until start-ups can be drained around a restart (as
//! FrankenPHP does), the function warns and returns false; restarting the server resets
//! OPcache. Restarts OPcache schedules by itself (out of memory, too many wasted keys)
//! are not covered: see docs/frankenphp-compat.md.

use crate::ffi as sys;

/// Points `opcache_reset` at ours when OPcache is loaded. Called by PHP's post-start-up
/// hook: OPcache's functions exist, and no thread has copied the function table yet.
pub(crate) extern "C" fn install() {
    // SAFETY: start-up, on the thread that owns the global function table.
    unsafe {
        sys::ferrophp_replace_function_handler(
            c"opcache_reset".as_ptr(),
            13,
            Some(ferrophp_fn_opcache_reset),
        );
    }
}

/// `opcache_reset(): bool`
unsafe extern "C" fn ferrophp_fn_opcache_reset(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    // SAFETY: "" accepts no arguments (and throws on any); PHP passes this call's frame.
    let parsed =
        unsafe { sys::zend_parse_parameters(sys::ferrophp_num_args(execute_data), c"".as_ptr()) };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    // SAFETY: inside an internal function call; "%s" with a C literal.
    unsafe {
        sys::zend_error(
            sys::E_WARNING as std::ffi::c_int,
            c"%s".as_ptr(),
            c"opcache_reset(): refused by ferrophp: the reset would free code that other PHP threads of this process are running; restart the server to reset OPcache".as_ptr(),
        );
        sys::ferrophp_zval_bool(return_value, false);
    }
}
