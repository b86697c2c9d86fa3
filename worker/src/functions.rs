//! PHP functions the SAPI adds for scripts: `fastcgi_finish_request()` (and its
//! `ferrophp_`/`frankenphp_` names), `getallheaders()`/`apache_request_headers()`, and
//! `headers_send()`. Their arginfo tables live in the C shim (`ferrophp_sapi_functions`).

use std::ffi::c_int;

use php_sys as sys;

use crate::php;
use crate::sapi::{current_request, response_head};

/// `fastcgi_finish_request(): bool`: send everything so far and end the response; the
/// script goes on without a client.
#[no_mangle]
pub unsafe extern "C" fn ferrophp_fn_finish_request(
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
        // SAFETY: as above.
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
    // SAFETY: as above.
    unsafe { sys::ferrophp_zval_bool(return_value, true) };
}

/// `getallheaders(): array`: the request headers, names in canonical Title-Case (HTTP/2
/// and our parser lower-case them), duplicates joined with ", ".
#[no_mangle]
pub unsafe extern "C" fn ferrophp_fn_request_headers(
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
pub unsafe extern "C" fn ferrophp_fn_response_headers(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    // SAFETY: PHP passes this call's frame.
    if !unsafe { no_arguments(execute_data) } {
        return;
    }
    // SAFETY: SG(sapi_headers) is this thread's live header list.
    let head = unsafe { response_head(&(*php::sapi_globals().as_ptr()).sapi_headers) };
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_array(return_value, head.headers.len() as u32) };
    let mut merged: Vec<(String, Vec<u8>)> = Vec::with_capacity(head.headers.len());
    for (name, value) in head.headers {
        match merged
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(&name))
        {
            Some((_, v)) => {
                v.extend_from_slice(b", ");
                v.extend_from_slice(&value);
            }
            None => merged.push((name, value)),
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
pub unsafe extern "C" fn ferrophp_fn_headers_send(
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
                let sent = ctx.sink.borrow_mut().send_informational(head);
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
