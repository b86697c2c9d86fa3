//! `mercure_publish()`, FrankenPHP's signature: PHP's door into the Mercure hub
//! (crate `ferrophp-mercure`) without an HTTP round trip. The server starts the hub and
//! hands it over with [`set_mercure_hub`] before PHP starts; the `php` CLI hands over a
//! publish-only hub on the Redis transport when one is configured. Without a hub the
//! function throws a `RuntimeException` saying so.
//!
//! The function is declared in `worker/stubs/mercure.stub.php` and registered as the
//! module's own function (`c/mercure.c`), so every SAPI has it.

use std::ffi::{c_char, CString};
use std::sync::RwLock;

use ferrophp_cache::zv;

use crate::ffi as sys;

/// The hub `mercure_publish()` publishes to.
static HUB: RwLock<Option<mercure::Hub>> = RwLock::new(None);

/// Hands the Mercure hub to PHP (`None`: none, `mercure_publish()` throws). The server
/// calls it once before PHP starts; the CLI before its script runs.
pub fn set_mercure_hub(hub: Option<mercure::Hub>) {
    *HUB.write().unwrap_or_else(|e| e.into_inner()) = hub;
}

fn hub() -> Option<mercure::Hub> {
    HUB.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Throws `RuntimeException("mercure_publish() <what>")`.
fn throw_runtime(what: &str) {
    let what = CString::new(what.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: inside an internal function call on a PHP thread; PHP copies the message.
    unsafe { sys::ferrophp_throw_runtime_exception_for_call(what.as_ptr()) };
}

/// Bytes of a `(pointer, length)` pair from `zend_parse_parameters` as text (`s!`: None
/// when the argument was null).
///
/// # Safety
/// `ptr` is null or points at `len` readable bytes.
unsafe fn text(ptr: *const c_char, len: usize) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// The topics argument: a string, or an array of strings (canonical first). Err: a
/// message for PHP's TypeError.
///
/// # Safety
/// `topics` is the call's live argument.
unsafe fn topics(topics: *const sys::zval) -> Result<Vec<String>, &'static str> {
    // SAFETY: guaranteed by the caller; the array is only read.
    unsafe {
        let topics = zv::deref(topics);
        match zv::ztype(topics) {
            zv::IS_STRING => Ok(vec![String::from_utf8_lossy(zv::str_bytes(
                (*topics).value.str_,
            ))
            .into_owned()]),
            zv::IS_ARRAY => {
                let mut all = Vec::new();
                zv::for_each((*topics).value.arr, |_, v| {
                    let v = zv::deref(v);
                    if zv::ztype(v) != zv::IS_STRING {
                        return Err("must be a string or an array of strings");
                    }
                    all.push(String::from_utf8_lossy(zv::str_bytes((*v).value.str_)).into_owned());
                    Ok(())
                })?;
                Ok(all)
            }
            _ => Err("must be of type array|string"),
        }
    }
}

/// `mercure_publish(string|array $topics, string $data = '', bool $private = false,
/// ?string $id = null, ?string $type = null, ?int $retry = null): string`: publishes an
/// update and returns its id.
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_mercure_publish(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let mut topics_arg: *mut sys::zval = std::ptr::null_mut();
    let (mut data, mut data_len): (*mut c_char, usize) = (std::ptr::null_mut(), 0);
    let mut private = false;
    let (mut id, mut id_len): (*mut c_char, usize) = (std::ptr::null_mut(), 0);
    let (mut event_type, mut event_type_len): (*mut c_char, usize) = (std::ptr::null_mut(), 0);
    let mut retry: sys::zend_long = 0;
    let mut retry_null = true;
    // SAFETY: "z|sbs!s!l!" fills a zval pointer, a char pointer + size_t, a bool, two
    // (char pointer + size_t) pairs, and a zend_long + its is-null bool; PHP passes this
    // call's frame.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"z|sbs!s!l!".as_ptr(),
            &mut topics_arg as *mut *mut sys::zval,
            &mut data as *mut *mut c_char,
            &mut data_len as *mut usize,
            &mut private as *mut bool,
            &mut id as *mut *mut c_char,
            &mut id_len as *mut usize,
            &mut event_type as *mut *mut c_char,
            &mut event_type_len as *mut usize,
            &mut retry as *mut sys::zend_long,
            &mut retry_null as *mut bool,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    // SAFETY: ZPP gave the live argument.
    let topics = match unsafe { topics(topics_arg) } {
        Ok(t) => t,
        Err(why) => {
            let why = CString::new(why).unwrap_or_default();
            // SAFETY: inside this call; "%s" keeps the message uninterpreted.
            unsafe { sys::zend_argument_type_error(1, c"%s".as_ptr(), why.as_ptr()) };
            return;
        }
    };
    if !retry_null && retry < 0 {
        // SAFETY: inside this call.
        unsafe {
            sys::zend_argument_value_error(
                6,
                c"%s".as_ptr(),
                c"must be greater than or equal to 0".as_ptr(),
            )
        };
        return;
    }
    // SAFETY: ZPP gave each pointer with its length (or null for a null argument).
    let update = unsafe {
        mercure::Update {
            topics,
            data: text(data, data_len).unwrap_or_default(),
            private,
            id: text(id, id_len),
            event_type: text(event_type, event_type_len),
            retry: (!retry_null).then_some(retry as u64),
        }
    };
    let Some(hub) = hub() else {
        throw_runtime(
            "needs a Mercure hub, and none is configured (serve with --mercure-publisher-jwt, \
             or MERCURE_PUBLISHER_JWT_KEY; the php CLI publishes through \
             FERROPHP_MERCURE_TRANSPORT=redis://...)",
        );
        return;
    };
    // A sampled request records the publish as a child span of where PHP is now.
    match hub.publish_blocking(update, crate::trace::sampled_parent().as_ref()) {
        // SAFETY: return_value is this call's return slot; PHP copies the bytes.
        Ok(id) => unsafe { sys::ferrophp_zval_stringl(return_value, id.as_ptr().cast(), id.len()) },
        Err(e) => throw_runtime(&format!("could not publish the update: {e}")),
    }
}
