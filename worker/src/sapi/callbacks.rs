//! The `sapi_module_struct` PHP calls back into, and its callbacks: output and flushing,
//! sending headers, the request body and cookies, `$_SERVER` and `$_ENV`, `getenv()`, the
//! protocol version, the log, the request time. PHP calls them on PHP threads only; each
//! finds its request through [`current_request`].

use std::ffi::{c_char, c_int, c_short, c_void, CStr};
use std::io::Read;
use std::sync::OnceLock;

use crate::ffi as sys;

use super::headers::response_head;
use super::settings::LogTarget;
use crate::php;
use crate::request_context::current_request;

/// What `phpinfo()` calls this SAPI.
const SAPI_PRETTY_NAME: &CStr = c"ferrophp PHP application server";

/// Where [`on_log_message`] sends PHP's log lines; set once, at engine start-up.
pub(super) static LOG_TARGET: OnceLock<LogTarget> = OnceLock::new();
/// The ini defaults [`on_ini_defaults`] gives PHP (php.ini may override them); set once,
/// at engine start-up.
pub(super) static INI_DEFAULTS: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// The module PHP is started with, presenting itself as `name`. PHP calls these
/// callbacks on PHP threads only.
pub(super) fn sapi_module(name: &'static CStr) -> sys::sapi_module_struct {
    sys::sapi_module_struct {
        name: name.as_ptr() as *mut c_char,
        pretty_name: SAPI_PRETTY_NAME.as_ptr() as *mut c_char,
        startup: Some(on_startup),
        activate: Some(on_activate),
        getenv: Some(on_getenv),
        ub_write: Some(on_ub_write),
        flush: Some(on_flush),
        sapi_error: Some(sys::zend_error),
        send_headers: Some(on_send_headers),
        read_post: Some(on_read_post),
        read_cookies: Some(on_read_cookies),
        register_server_variables: Some(on_register_server_variables),
        log_message: Some(on_log_message),
        get_request_time: Some(on_get_request_time),
        ini_defaults: Some(on_ini_defaults),
        // Forgets the realpath cache entries of the request's uploaded files (see c/thread.c).
        deactivate: Some(sys::ferrophp_sapi_deactivate),
        // SAFETY: returns the address of a static table (c/module.c, generated from
        // worker/stubs/sapi.stub.php).
        additional_functions: unsafe { sys::ferrophp_sapi_functions() },
        ..Default::default()
    }
}

unsafe extern "C" fn on_ini_defaults(configuration: *mut sys::HashTable) {
    for (name, value) in INI_DEFAULTS.get().into_iter().flatten() {
        // SAFETY: PHP passes its configuration hash during start-up; the shim copies both
        // strings into persistent memory.
        unsafe {
            sys::ferrophp_ini_default(
                configuration,
                name.as_ptr().cast(),
                name.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
    }
}

unsafe extern "C" fn on_startup(module: *mut sys::sapi_module_struct) -> c_int {
    // SAFETY: PHP passes the module it was started with.
    unsafe { sys::php_module_startup(module, sys::ferrophp_module_entry()) as c_int }
}

unsafe extern "C" fn on_ub_write(str_: *const c_char, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    // SAFETY: PHP passes `len` readable bytes at `str_`.
    let bytes = unsafe { std::slice::from_raw_parts(str_.cast::<u8>(), len) };
    let Some(ctx) = current_request() else {
        // Output outside any request (module start-up warnings): stderr is all we have.
        eprint!("{}", String::from_utf8_lossy(bytes));
        return len;
    };
    if ctx.finished.get() {
        // After fastcgi_finish_request() output is discarded, as under php-fpm.
        return len;
    }
    if !ctx.disconnected.get() {
        let result = ctx.sink.send(|sink| sink.write(bytes));
        if result.is_ok() {
            ctx.written.set(ctx.written.get() + len as u64);
            return len;
        }
        ctx.disconnected.set(true);
    }
    client_gone();
    0
}

/// The client went away: PHP marks the connection aborted and, unless the script set
/// ignore_user_abort, ends it (a bailout). Callers must hold nothing that needs dropping.
fn client_gone() {
    // SAFETY: on a PHP thread inside a request; may longjmp to the request's zend_try.
    unsafe { sys::php_handle_aborted_connection() };
}

unsafe extern "C" fn on_flush(_server_context: *mut c_void) {
    let Some(ctx) = current_request() else {
        return;
    };
    if ctx.finished.get() {
        return;
    }
    if !ctx.disconnected.get() {
        let result = ctx.sink.send(|sink| sink.flush());
        if result.is_ok() {
            return;
        }
        ctx.disconnected.set(true);
    }
    client_gone();
}

unsafe extern "C" fn on_send_headers(headers: *mut sys::sapi_headers_struct) -> c_int {
    let Some(ctx) = current_request() else {
        return sys::SAPI_HEADER_SENT_SUCCESSFULLY as c_int;
    };
    // SAFETY: PHP passes SG(sapi_headers), valid for this call.
    let head = unsafe { response_head(&*headers) };
    if ctx.sink.send(|sink| sink.send_head(head)).is_err() {
        ctx.disconnected.set(true);
    }
    sys::SAPI_HEADER_SENT_SUCCESSFULLY as c_int
}

unsafe extern "C" fn on_read_post(buffer: *mut c_char, count: usize) -> usize {
    let Some(ctx) = current_request() else {
        return 0;
    };
    // SAFETY: PHP passes a writable buffer of `count` bytes.
    let buf = unsafe { std::slice::from_raw_parts_mut(buffer.cast::<u8>(), count) };
    let mut filled = 0;
    let mut failed = false;
    {
        let mut body = ctx.body.borrow_mut();
        while filled < count {
            match body.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
    }
    if failed {
        // The body broke off (malformed chunk, client gone, or over the size limit): a
        // truncated body must never look complete to the script. Returning the bytes read
        // so far would not do: PHP takes a short read as the end of the body.
        ctx.disconnected.set(true);
        if ctx.script_started.get() {
            client_gone();
        } else {
            // PHP's POST handlers are reading the body at request start-up: a bailout
            // now would skip their clean-up (rfc1867 registers an upload's temp file, to
            // be deleted at request end, only once the file is complete; the file and its
            // descriptor would be left behind). They see the end of the body instead, and
            // the script is not started (body_broke_off).
            // SAFETY: on a PHP thread inside a request; PG is this thread's.
            unsafe {
                (*sys::ferrophp_core_globals()).connection_status |=
                    sys::PHP_CONNECTION_ABORTED as c_short
            };
        }
        return 0;
    }
    filled
}

unsafe extern "C" fn on_read_cookies() -> *mut c_char {
    current_request()
        .and_then(|ctx| ctx.c_strings.cookie.as_ref())
        .map_or(std::ptr::null_mut(), |c| c.as_ptr() as *mut c_char)
}

/// Runs inside php_request_startup after sapi_activate reset the protocol to HTTP/1.0.
unsafe extern "C" fn on_activate() -> c_int {
    if let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) {
        let proto_num = match cgi.version {
            http::Version::HTTP_09 => 900,
            http::Version::HTTP_10 => 1000,
            http::Version::HTTP_11 => 1001,
            http::Version::HTTP_2 => 2000,
            _ => 3000,
        };
        // SAFETY: plain write of a field of this thread's SAPI globals.
        unsafe { (*php::sapi_globals().as_ptr()).request_info.proto_num = proto_num };
    }
    sys::ZEND_RESULT_CODE_SUCCESS as c_int
}

/// `getenv()` sees the configured environment first; PHP falls back to the process's.
unsafe extern "C" fn on_getenv(name: *const c_char, len: usize) -> *mut c_char {
    let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) else {
        return std::ptr::null_mut();
    };
    // SAFETY: PHP passes `len` readable bytes.
    let name = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    cgi.env
        .iter()
        .find(|(k, _)| k.as_bytes() == name)
        // PHP estrdup()s the value right away; ours lives as long as the request.
        .map_or(std::ptr::null_mut(), |(_, v)| v.as_ptr() as *mut c_char)
}

/// PHP's own `php_import_environment_variables` (the process environment).
pub(super) static PROCESS_ENV_IMPORT: OnceLock<Option<unsafe extern "C" fn(*mut sys::zval)>> =
    OnceLock::new();

/// Fills `$_ENV` (when `variables_order` has E) and the CLI's `$_SERVER`: the process
/// environment, then the server's configured environment (`-e`, `[env]`), as
/// FrankenPHP's classic mode does, so `$_ENV` agrees with `getenv()`.
pub(super) unsafe extern "C" fn import_environment(track_vars: *mut sys::zval) {
    if let Some(Some(import)) = PROCESS_ENV_IMPORT.get() {
        // SAFETY: PHP's function, called with the array PHP passed us.
        unsafe { import(track_vars) };
    }
    let Some(cgi) = current_request().and_then(|ctx| ctx.cgi.as_ref()) else {
        return;
    };
    for (name, value) in cgi.env.iter() {
        php::register_variable(name, value.to_bytes(), track_vars);
    }
}

unsafe extern "C" fn on_register_server_variables(track_vars: *mut sys::zval) {
    let Some(ctx) = current_request() else {
        return;
    };
    if ctx.import_environment {
        // SAFETY: php_import_environment_variables is a function pointer PHP sets at
        // start-up; track_vars is the array PHP is building.
        unsafe {
            if let Some(Some(import)) = PROCESS_ENV_IMPORT.get() {
                import(track_vars);
            }
        }
    }
    if let Some(cgi) = &ctx.cgi {
        let script = ctx.c_strings.script_filename.to_bytes();
        // Tests and benchmarks observe this build, or swap in the naive path (feature only).
        #[cfg(feature = "bench-fixtures")]
        crate::diagnostics::register_cgi_variables(cgi, script, track_vars, ctx.arena);
        #[cfg(not(feature = "bench-fixtures"))]
        crate::server_vars::register_with_arena(cgi, script, track_vars, ctx.arena);
        // REMOTE_USER: the Basic authentication user, as FrankenPHP and nginx's
        // fastcgi_params ($remote_user) give it.
        // SAFETY: on a PHP thread inside a request; auth_user is NULL or a NUL-terminated
        // string PHP owns until the request's deactivation.
        let user = unsafe { (*php::sapi_globals().as_ptr()).request_info.auth_user };
        if !user.is_null() {
            // SAFETY: non-null and NUL-terminated (above).
            let user = unsafe { php::c_bytes(user) };
            php::register_variable(c"REMOTE_USER", user, track_vars);
        }
    }
    for (name, value) in &ctx.server_vars {
        php::register_variable(name, value, track_vars);
    }
}

unsafe extern "C" fn on_log_message(message: *const c_char, syslog_type: c_int) {
    // SAFETY: PHP passes a NUL-terminated message.
    let text = String::from_utf8_lossy(unsafe { php::c_bytes(message) });
    match LOG_TARGET.get().copied().unwrap_or(LogTarget::Stderr) {
        LogTarget::Stderr => eprintln!("{text}"),
        // syslog levels: 0-3 error and worse, 4 warning, 5-6 notice/info, 7 debug.
        LogTarget::Tracing => match syslog_type {
            0..=3 => tracing::error!(target: "php", "{text}"),
            4 => tracing::warn!(target: "php", "{text}"),
            5 | 6 => tracing::info!(target: "php", "{text}"),
            _ => tracing::debug!(target: "php", "{text}"),
        },
    }
}

unsafe extern "C" fn on_get_request_time(time: *mut f64) -> sys::zend_result {
    let Some(ctx) = current_request() else {
        return sys::ZEND_RESULT_CODE_FAILURE;
    };
    // SAFETY: PHP passes a valid out pointer.
    unsafe { *time = ctx.started_at };
    sys::ZEND_RESULT_CODE_SUCCESS
}
