//! The response head PHP built: its status and header lines, read from
//! `SG(sapi_headers)` when PHP sends headers (and by `headers_send()` and
//! `frankenphp_response_headers()`).

use std::cell::RefCell;

use crate::ffi as sys;

use crate::request::ResponseHead;

/// The most header lines a response takes from PHP: far more than any real response
/// has, and well under the most a `HeaderMap` holds, so hyper can still add its own
/// (`date`, `connection`: at the limit its insert would panic and drop the connection).
const MAX_HEADER_LINES: usize = 16 * 1024;

/// Reads PHP's header list into a [`ResponseHead`]: one `HeaderValue` per line, no
/// other copy (standard names are constants; other names are lower-cased once). Lines
/// that are not valid HTTP fields are dropped with a warning, as are lines past
/// [`MAX_HEADER_LINES`] (a panic here would abort the process: PHP called us).
///
/// # Safety
/// `headers` must be the live `SG(sapi_headers)` of this thread.
pub(crate) unsafe fn response_head(headers: &sys::sapi_headers_struct) -> ResponseHead {
    let status = match headers.http_response_code {
        code @ 100..=999 => code as u16,
        _ => 200,
    };
    // No line, no allocation; else the map is made once at its final size.
    let mut map = http::HeaderMap::try_with_capacity(headers.headers.count.min(MAX_HEADER_LINES))
        .unwrap_or_default();
    // SAFETY: guaranteed by the caller; the list is not changed while we read it.
    for (name, value) in unsafe { header_lines(headers) } {
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name),
            header_value(name, value),
        ) else {
            tracing::warn!(
                header = %String::from_utf8_lossy(name),
                "dropping a response header PHP set that is not valid HTTP"
            );
            continue;
        };
        if map.len() >= MAX_HEADER_LINES || map.try_append(name, value).is_err() {
            tracing::warn!("dropping response headers PHP set past the first {MAX_HEADER_LINES}");
            break;
        }
    }
    ResponseHead {
        status,
        headers: map,
    }
}

/// How many `Content-Type` values a PHP thread keeps for reuse.
const KNOWN_CONTENT_TYPES: usize = 4;

thread_local! {
    /// The last few `Content-Type` values this thread sent. Nearly every response has
    /// one (PHP adds its default) and an application sends few different ones: a clone
    /// of a known value shares its bytes (a reference count) where a new value would be
    /// an allocation. A new value costs one more allocation, once (sharing it).
    static CONTENT_TYPES: RefCell<([Option<http::HeaderValue>; KNOWN_CONTENT_TYPES], usize)> =
        const { RefCell::new(([None, None, None, None], 0)) };
}

/// The field value of a header line; a `Content-Type` this thread sent recently is
/// reused.
fn header_value(
    name: &[u8],
    value: &[u8],
) -> Result<http::HeaderValue, http::header::InvalidHeaderValue> {
    if !name.eq_ignore_ascii_case(b"content-type") {
        return http::HeaderValue::from_bytes(value);
    }
    CONTENT_TYPES.with(|known| {
        let (slots, next) = &mut *known.borrow_mut();
        if let Some(found) = slots.iter().flatten().find(|v| v.as_bytes() == value) {
            return Ok(found.clone());
        }
        let made = http::HeaderValue::from_bytes(value)?;
        slots[*next] = Some(made.clone());
        *next = (*next + 1) % KNOWN_CONTENT_TYPES;
        Ok(made)
    })
}

/// PHP's header lines as `(name, value)`, split at the first colon and trimmed, in the
/// order PHP keeps them; lines without a colon are skipped. A name is trimmed of Unicode
/// whitespace when it is UTF-8 (of ASCII whitespace otherwise), as `str::trim` would.
///
/// # Safety
/// `headers` must be the live `SG(sapi_headers)` of this thread, unchanged while the
/// iterator is in use.
pub(crate) unsafe fn header_lines<'a>(
    headers: &'a sys::sapi_headers_struct,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    let mut element = headers.headers.head;
    std::iter::from_fn(move || {
        while !element.is_null() {
            // SAFETY: zend_llist elements store a sapi_header_struct inline in `data`.
            let header = unsafe { &*((*element).data.as_ptr() as *const sys::sapi_header_struct) };
            // SAFETY: walking the list PHP owns; `next` is NULL at the end.
            element = unsafe { (*element).next };
            if header.header.is_null() {
                continue;
            }
            // SAFETY: header points at `header_len` bytes owned by PHP, which outlive the
            // borrow of `headers`.
            let line = unsafe {
                std::slice::from_raw_parts(header.header.cast::<u8>(), header.header_len)
            };
            if let Some(colon) = line.iter().position(|&b| b == b':') {
                let name = &line[..colon];
                let name = match std::str::from_utf8(name) {
                    Ok(text) => text.trim().as_bytes(),
                    Err(_) => name.trim_ascii(),
                };
                return Some((name, line[colon + 1..].trim_ascii()));
            }
        }
        None
    })
}
