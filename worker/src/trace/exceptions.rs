//! Exceptions and fatal errors: the last exception thrown (from the throw hook), what
//! PHP's error observer reports of an uncaught one or another fatal error, and the
//! semantic conventions' `exception` event.

use std::ffi::{c_char, c_int, c_void};

use crate::ffi as sys;
use ferrophp_trace::{self as ft, Limits, SpanData, StatusCode, Value};

use super::state::{State, STATE};

/// A Throwable's class, message and trace, as `ferrophp_trace_describe_throwable` gives.
#[derive(Default)]
pub(super) struct Described {
    pub(super) class: String,
    pub(super) message: String,
    pub(super) trace: String,
}

pub(super) unsafe extern "C" fn describe_into(
    ctx: *mut c_void,
    cls: *const c_char,
    cls_len: usize,
    msg: *const c_char,
    msg_len: usize,
    trace: *const c_char,
    trace_len: usize,
) {
    // SAFETY: ctx is the Described the caller passed; the strings are live for this call.
    unsafe {
        let d = &mut *ctx.cast::<Described>();
        let text = |p: *const c_char, n: usize| {
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), n)).into_owned()
        };
        d.class = text(cls, cls_len);
        d.message = text(msg, msg_len);
        d.trace = text(trace, trace_len);
    }
}

/// Adds the semantic conventions' `exception` event.
pub(super) fn exception_event(
    data: &mut SpanData,
    limits: &Limits,
    e: &Described,
    extra: impl FnOnce(&mut ft::span::EventAttributes<'_>),
) {
    data.add_event(ft::now_unix_nano(), b"exception", limits, |a| {
        a.push("exception.type", Value::Text(&e.class));
        a.push("exception.message", Value::Text(&e.message));
        if !e.trace.is_empty() {
            a.push("exception.stacktrace", Value::Text(&e.trace));
        }
        extra(a);
    });
}

/// "Class: message" (the class alone without a message).
pub(super) fn describe(class: &str, message: &str) -> String {
    if message.is_empty() {
        class.to_owned()
    } else {
        format!("{class}: {message}")
    }
}

/// The throw hook asks whether to read the exception: only for a recorded request.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_trace_records() -> bool {
    STATE.with(|s| s.try_borrow().is_ok_and(|s| s.request.is_some()))
}

/// An exception was thrown in a recorded request: kept in case it ends uncaught.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_trace_on_throw(
    cls: *const c_char,
    cls_len: usize,
    msg: *const c_char,
    msg_len: usize,
) {
    // SAFETY: the hook passes strings live for this call.
    let (cls, msg) = unsafe {
        (
            std::slice::from_raw_parts(cls.cast::<u8>(), cls_len),
            std::slice::from_raw_parts(msg.cast::<u8>(), msg_len),
        )
    };
    STATE.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            let (c, m) = s.thrown.get_or_insert_with(Default::default);
            c.clear();
            c.push_str(&String::from_utf8_lossy(cls));
            m.clear();
            m.push_str(&String::from_utf8_lossy(msg));
        }
    });
}

/// Error types no handler can catch: the script ends.
const FATAL: c_int =
    (sys::E_ERROR | sys::E_CORE_ERROR | sys::E_COMPILE_ERROR | sys::E_PARSE) as c_int;

fn error_type_name(t: c_int) -> &'static str {
    match t as u32 {
        sys::E_ERROR => "E_ERROR",
        sys::E_CORE_ERROR => "E_CORE_ERROR",
        sys::E_COMPILE_ERROR => "E_COMPILE_ERROR",
        _ => "E_PARSE",
    }
}

/// PHP's error observer: an uncaught exception (reported as a fatal "Uncaught ..."
/// error) or another fatal error marks the server span (and the spans still open) as
/// failed; the exception also becomes an `exception` event on the server span.
#[no_mangle]
pub(crate) unsafe extern "C" fn ferrophp_trace_on_error(
    t: c_int,
    msg: *const c_char,
    msg_len: usize,
) {
    let t = t & !(sys::E_DONT_BAIL as c_int);
    if t & FATAL == 0 {
        return;
    }
    // SAFETY: the observer passes the message, live for this call.
    let message = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), msg_len) };
    let message = String::from_utf8_lossy(message);
    let Some(limits) = ft::get().map(|t| t.limits) else {
        return;
    };
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let Some(server) = s.request.as_ref().map(|r| r.server.clone()) else {
            return;
        };
        let (described, error_type, description) = match message.strip_prefix("Uncaught ") {
            Some(rest) => {
                // The class and message of the last exception thrown (the uncaught one);
                // failing that, what the message starts with ("Class: message in ...").
                let (class, text) = match s.thrown.take() {
                    Some(thrown) => thrown,
                    None => {
                        let head = rest.split(" in ").next().unwrap_or(rest);
                        match head.split_once(": ") {
                            Some((c, m)) => (c.to_owned(), m.to_owned()),
                            None => (head.to_owned(), String::new()),
                        }
                    }
                };
                let description = describe(&class, &text);
                let described = Described {
                    class: class.clone(),
                    message: text,
                    trace: rest.trim_end_matches("\n  thrown").to_owned(),
                };
                (Some(described), class, description)
            }
            None => (
                None,
                error_type_name(t).to_owned(),
                message.lines().next().unwrap_or("").to_owned(),
            ),
        };
        let State { stack, slots, .. } = &mut *s;
        for &i in stack.iter() {
            let d = &mut slots[i as usize].data;
            if d.status != StatusCode::Ok {
                d.status = StatusCode::Error;
                d.status_message.clear();
                d.status_message.push_str(&description);
            }
        }
        drop(s);
        server.with(|d, _| {
            if let Some(e) = &described {
                exception_event(d, &limits, e, |_| {});
            }
            d.set_attribute("error.type", Value::Text(&error_type), &limits);
            d.status = StatusCode::Error;
            d.status_message.clear();
            d.status_message.push_str(&description);
        });
    });
}
