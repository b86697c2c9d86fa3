//! `putenv()` and `getenv()` sandboxed per PHP thread.
//!
//! PHP's own `putenv()` writes the C environment, which is one per process: with many PHP
//! threads, one request's `putenv('DB_HOST=x')` would be seen by every other request
//! running at the same time, and `setenv` racing with `getenv` on another thread is
//! undefined behaviour in glibc. Here `putenv()` writes a per-thread overlay instead and
//! `getenv()` reads the overlay first, then PHP's own lookup (the request's configured
//! env through the SAPI, then the process environment).
//!
//! The overlay lives as long as the engine request: a classic request drops it at its
//! end (PHP itself restores the environment at request end), and a worker script keeps it
//! for its whole run across the HTTP requests it serves, as FrankenPHP does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::OnceLock;

use crate::ffi as sys;

type Handler = unsafe extern "C" fn(*mut sys::zend_execute_data, *mut sys::zval);

/// PHP's own `getenv` handler, called for names the overlay does not know.
static PHP_GETENV: OnceLock<Handler> = OnceLock::new();

thread_local! {
    /// Name → value set by `putenv("NAME=value")`, or None for `putenv("NAME")` (unset).
    static OVERLAY: RefCell<HashMap<Vec<u8>, Option<Vec<u8>>>> = RefCell::new(HashMap::new());
}

/// Points PHP's `putenv` and `getenv` at ours. Module start-up, before any PHP thread
/// copies the function table.
pub(crate) fn install() {
    // SAFETY: start-up, on the thread that owns the global function table; both names are
    // functions of ext/standard, always present.
    unsafe {
        let old =
            sys::ferrophp_replace_function_handler(c"getenv".as_ptr(), 6, Some(ferrophp_fn_getenv));
        if let Some(old) = old {
            let _ = PHP_GETENV.set(old);
        }
        sys::ferrophp_replace_function_handler(c"putenv".as_ptr(), 6, Some(ferrophp_fn_putenv));
    }
}

/// Forgets this thread's `putenv()` changes (engine request end).
pub(crate) fn reset() {
    OVERLAY.with(|o| {
        if let Ok(mut o) = o.try_borrow_mut() {
            o.clear();
        }
    });
}

/// Sets `entries` in this thread's overlay before an engine request starts, so its
/// `getenv()` sees them (a background script's configured env: it has no HTTP request
/// whose env the SAPI would read); the request's end clears them with the rest.
pub(crate) fn preset(entries: &[(String, String)]) {
    OVERLAY.with(|o| {
        let mut o = o.borrow_mut();
        for (name, value) in entries {
            o.insert(name.as_bytes().to_vec(), Some(value.as_bytes().to_vec()));
        }
    });
}

/// `putenv(string $assignment): bool`
unsafe extern "C" fn ferrophp_fn_putenv(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let mut ptr: *mut c_char = std::ptr::null_mut();
    let mut len: usize = 0;
    // SAFETY: "s" fills one char pointer and one size_t; PHP passes this call's frame.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"s".as_ptr(),
            &mut ptr as *mut *mut c_char,
            &mut len as *mut usize,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    // SAFETY: ZPP gave `len` readable bytes of the argument string.
    let setting = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    // PHP hands the assignment to the C library, which stops at a NUL byte.
    let setting = until_nul(setting);
    if setting.is_empty() || setting[0] == b'=' {
        // PHP's own message for the same input.
        // SAFETY: inside an internal function call; the format has no conversions.
        unsafe { sys::zend_argument_value_error(1, c"must have a valid syntax".as_ptr()) };
        return;
    }
    let (name, value) = match setting.iter().position(|&b| b == b'=') {
        Some(eq) => (&setting[..eq], Some(setting[eq + 1..].to_vec())),
        None => (setting, None),
    };
    OVERLAY.with(|o| o.borrow_mut().insert(name.to_vec(), value));
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(return_value, true) };
}

/// `getenv(?string $name = null, bool $local_only = false): string|array|false`
unsafe extern "C" fn ferrophp_fn_getenv(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let Some(&php_getenv) = PHP_GETENV.get() else {
        return;
    };
    let mut ptr: *mut c_char = std::ptr::null_mut();
    let mut len: usize = 0;
    let mut local_only = false;
    // SAFETY: "|s!b" fills a nullable char pointer + size_t and a bool; on failure PHP has
    // thrown and we return.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"|s!b".as_ptr(),
            &mut ptr as *mut *mut c_char,
            &mut len as *mut usize,
            &mut local_only as *mut bool,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    if ptr.is_null() {
        // The whole environment: PHP's, with this thread's changes applied.
        // SAFETY: PHP's handler with the same frame and return slot.
        unsafe { php_getenv(execute_data, return_value) };
        OVERLAY.with(|o| {
            for (name, value) in o.borrow().iter() {
                // SAFETY: PHP's getenv() returned an array in return_value.
                unsafe { apply_to_array(return_value, name, value.as_deref()) };
            }
        });
        return;
    }
    // SAFETY: ZPP gave `len` readable bytes.
    let name = until_nul(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) });
    let found = OVERLAY.with(|o| o.borrow().get(name).cloned());
    // SAFETY: return_value is this call's return slot; PHP's handler takes the same frame.
    unsafe {
        match found {
            Some(Some(value)) => {
                sys::ferrophp_zval_stringl(return_value, value.as_ptr().cast(), value.len())
            }
            Some(None) => sys::ferrophp_zval_bool(return_value, false),
            None => php_getenv(execute_data, return_value),
        }
    }
}

/// The bytes before the first NUL: what the C environment functions PHP calls see.
fn until_nul(bytes: &[u8]) -> &[u8] {
    bytes.split(|&b| b == 0).next().unwrap_or_default()
}

/// Sets or removes `name` in the array `getenv()` returned.
///
/// # Safety
/// `array` is an array zval owned by the caller.
unsafe fn apply_to_array(array: *mut sys::zval, name: &[u8], value: Option<&[u8]>) {
    match value {
        Some(v) => crate::php::add_assoc_bytes(array, name, v),
        // SAFETY: guaranteed by the caller.
        None => unsafe {
            sys::zend_hash_str_del((*array).value.arr, name.as_ptr().cast(), name.len());
        },
    }
}
