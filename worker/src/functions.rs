//! PHP functions the SAPI adds for scripts: `fastcgi_finish_request()` (and its
//! `ferrophp_`/`frankenphp_` names), `getallheaders()`/`apache_request_headers()`,
//! `frankenphp_response_headers()`, `headers_send()` and `frankenphp_log()`. They are
//! declared in `worker/stubs/sapi.stub.php`, whose generated table (`c/module.c`) names
//! each body `zif_<name>`: the functions below. An alias (`@alias`) shares its target's.

use std::ffi::c_int;

use crate::ffi as sys;

use crate::php;
use crate::request_context::current_request;
use crate::sapi::{header_lines, response_head};

/// `fastcgi_finish_request(): bool`: send everything so far and end the response; the
/// script goes on without a client.
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_ferrophp_finish_request(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    // SAFETY: PHP passes this call's frame.
    if !unsafe { no_arguments(execute_data) } {
        return;
    }
    let Some(ctx) = current_request() else {
        // SAFETY: return_value is this call's return slot.
        unsafe { sys::ferrophp_zval_bool(return_value, false) };
        return;
    };
    if ctx.finished.get() {
        // SAFETY: return_value is this call's return slot.
        unsafe { sys::ferrophp_zval_bool(return_value, false) };
        return;
    }
    // Same order as php-fpm: close all output buffers, send headers, then end the body.
    // SAFETY: on a PHP thread inside a request.
    unsafe {
        sys::php_output_end_all();
        sys::php_header();
    }
    ctx.finish_response();
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(return_value, true) };
}

/// `getallheaders(): array`: the request headers, names in canonical Title-Case (HTTP/2
/// and our parser lower-case them), duplicates joined with ", ".
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_frankenphp_request_headers(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    // SAFETY: PHP passes this call's frame.
    if !unsafe { no_arguments(execute_data) } {
        return;
    }
    let headers = current_request()
        .and_then(|ctx| ctx.cgi.as_ref())
        .map(|cgi| &cgi.headers);
    let count = headers.map_or(0, |h| h.keys_len());
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_array(return_value, count as u32) };
    let Some(headers) = headers else { return };
    let mut name_buf = Vec::new();
    let mut value_buf = Vec::new();
    for name in headers.keys() {
        name_buf.clear();
        let mut upper = true;
        for b in name.as_str().bytes() {
            name_buf.push(if upper { b.to_ascii_uppercase() } else { b });
            upper = b == b'-';
        }
        value_buf.clear();
        for (i, v) in headers.get_all(name).iter().enumerate() {
            if i > 0 {
                value_buf.extend_from_slice(b", ");
            }
            value_buf.extend_from_slice(v.as_bytes());
        }
        php::add_assoc_bytes(return_value, &name_buf, &value_buf);
    }
}

/// `frankenphp_response_headers(): array`: the response headers set so far, as
/// `name => value` (later duplicates joined with ", ").
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_frankenphp_response_headers(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    // SAFETY: PHP passes this call's frame.
    if !unsafe { no_arguments(execute_data) } {
        return;
    }
    // SAFETY: SG(sapi_headers) is this thread's live header list, unchanged meanwhile.
    let headers = unsafe { &(*php::sapi_globals().as_ptr()).sapi_headers };
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_array(return_value, headers.headers.count as u32) };
    // Names as the script spelled them (not lower-cased as in the HTTP response), and
    // every line PHP keeps, valid HTTP or not.
    let mut merged: Vec<(std::borrow::Cow<str>, Vec<u8>)> =
        Vec::with_capacity(headers.headers.count);
    // SAFETY: `headers` is this thread's live SG(sapi_headers), unchanged while we read
    // it (nothing below calls into PHP but to add to the returned array).
    for (name, value) in unsafe { header_lines(headers) } {
        let name = String::from_utf8_lossy(name);
        match merged
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(&name))
        {
            Some((_, v)) => {
                v.extend_from_slice(b", ");
                v.extend_from_slice(value);
            }
            None => merged.push((name, value.to_vec())),
        }
    }
    for (name, value) in merged {
        php::add_assoc_bytes(return_value, name.as_bytes(), &value);
    }
}

/// `headers_send(int $status = 200): int`: send the headers now. A 1xx status sends an
/// informational response (103 Early Hints with the current `Link` headers) and leaves
/// the final response's status and headers as they were.
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_headers_send(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let mut status: sys::zend_long = 200;
    // SAFETY: the spec "|l" matches one optional zend_long out-parameter.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"|l".as_ptr(),
            &mut status as *mut sys::zend_long,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    let sg = php::sapi_globals().as_ptr();
    let result: sys::zend_long = if (100..200).contains(&status) {
        match current_request() {
            Some(ctx) => {
                // SAFETY: SG(sapi_headers) is this thread's live header list.
                let mut head = unsafe { response_head(&(*sg).sapi_headers) };
                head.status = status as u16;
                let sent = ctx.sink.send(|sink| sink.send_informational(head));
                if sent.is_ok() {
                    status
                } else {
                    0
                }
            }
            None => 0,
        }
    } else {
        // SAFETY: plain field write, then PHP's own header sending on this thread.
        unsafe {
            (*sg).sapi_headers.http_response_code = status as c_int;
            sys::sapi_send_headers() as sys::zend_long
        }
    };
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_long(return_value, result) };
}

/// `zend_parse_parameters_none()`: false (with PHP's ArgumentCountError thrown) when the
/// call passed arguments.
///
/// # Safety
/// `execute_data` must be the frame of the running internal function call.
unsafe fn no_arguments(execute_data: *mut sys::zend_execute_data) -> bool {
    // SAFETY: guaranteed by the caller.
    if unsafe { sys::ferrophp_num_args(execute_data) } == 0 {
        return true;
    }
    // SAFETY: inside an internal function call on a PHP thread.
    unsafe { sys::zend_wrong_parameters_none_error() };
    false
}

/// `frankenphp_log(string $message, int $level = 0, array $context = []): void`: the
/// message goes to the server log at the severity of its slog level
/// (`FRANKENPHP_LOG_LEVEL_DEBUG` -4, `_INFO` 0, `_WARN` 4, `_ERROR` 8), followed by the
/// context as `key=value` pairs (keys and values with spaces quoted, arrays as `[a b]`,
/// as Go's slog text handler prints them).
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_frankenphp_log(
    execute_data: *mut sys::zend_execute_data,
    _return_value: *mut sys::zval,
) {
    let mut message: *mut std::ffi::c_char = std::ptr::null_mut();
    let mut message_len: usize = 0;
    let mut level: sys::zend_long = 0;
    let mut context: *mut sys::HashTable = std::ptr::null_mut();
    // SAFETY: "s|lh" fills a char pointer + size_t, a zend_long and a HashTable pointer;
    // PHP passes this call's frame.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"s|lh".as_ptr(),
            &mut message as *mut *mut std::ffi::c_char,
            &mut message_len as *mut usize,
            &mut level as *mut sys::zend_long,
            &mut context as *mut *mut sys::HashTable,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    // SAFETY: ZPP gave `message_len` readable bytes.
    let message = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), message_len) };
    let mut line = String::from_utf8_lossy(message).into_owned();
    if !context.is_null() {
        // SAFETY: ZPP gave the argument's array, alive for this call.
        unsafe {
            sys::ferrophp_hash_foreach(context, Some(log_pair), (&mut line as *mut String).cast())
        };
    }
    match level {
        l if l >= 8 => tracing::error!(target: "php", "{line}"),
        l if l >= 4 => tracing::warn!(target: "php", "{line}"),
        l if l >= 0 => tracing::info!(target: "php", "{line}"),
        _ => tracing::debug!(target: "php", "{line}"),
    }
}

/// Appends ` key=value` to the `String` behind `ctx`.
unsafe extern "C" fn log_pair(
    ctx: *mut std::ffi::c_void,
    key: *mut sys::zend_string,
    h: sys::zend_ulong,
    val: *mut sys::zval,
) {
    // SAFETY: ctx is the String zif_frankenphp_log passed, alive for the iteration.
    let line = unsafe { &mut *ctx.cast::<String>() };
    line.push(' ');
    if key.is_null() {
        line.push_str(&h.to_string());
    } else {
        // SAFETY: a live key of the array being iterated.
        push_quoted(line, &String::from_utf8_lossy(unsafe { zstr_bytes(key) }));
    }
    line.push('=');
    let mut value = String::new();
    // SAFETY: a live value of the array being iterated.
    unsafe { log_value(&mut value, val) };
    push_quoted(line, &value);
}

/// A value as slog's text handler shows it: arrays as `[a b]`, the rest as PHP's string.
///
/// # Safety
/// `val` is a live zval.
unsafe fn log_value(out: &mut String, val: *mut sys::zval) {
    // SAFETY: val is live (caller).
    let array = unsafe { sys::ferrophp_zval_array_ptr(val) };
    if !array.is_null() {
        unsafe extern "C" fn item(
            ctx: *mut std::ffi::c_void,
            _key: *mut sys::zend_string,
            _h: sys::zend_ulong,
            val: *mut sys::zval,
        ) {
            // SAFETY: ctx is the (String, first) pair below, alive for the iteration.
            let (out, first) = unsafe { &mut *ctx.cast::<(String, bool)>() };
            if !*first {
                out.push(' ');
            }
            *first = false;
            // SAFETY: a live value of the array being iterated.
            unsafe { log_value(out, val) };
        }
        let mut acc = (String::new(), true);
        // SAFETY: array is live; item only touches `acc`.
        unsafe {
            sys::ferrophp_hash_foreach(array, Some(item), (&mut acc as *mut (String, bool)).cast())
        };
        out.push('[');
        out.push_str(&acc.0);
        out.push(']');
        return;
    }
    // SAFETY: zval_get_string_func returns a new reference we release right after.
    unsafe {
        let s = sys::zval_get_string_func(val);
        out.push_str(&String::from_utf8_lossy(zstr_bytes(s)));
        sys::ferrophp_string_release(s);
    }
}

/// # Safety
/// `s` is a live zend_string.
unsafe fn zstr_bytes<'a>(s: *const sys::zend_string) -> &'a [u8] {
    // SAFETY: a zend_string's `len` bytes follow its header (caller: live).
    unsafe { std::slice::from_raw_parts((*s).val.as_ptr().cast::<u8>(), (*s).len) }
}

fn push_quoted(out: &mut String, text: &str) {
    if text.is_empty() || text.contains([' ', '=', '"']) {
        out.push_str(&format!("{text:?}"));
    } else {
        out.push_str(text);
    }
}
