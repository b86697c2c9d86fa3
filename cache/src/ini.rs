//! The cache's ini entries as read at module start-up: `usercache.*`, and the `apc.*`
//! entries of the apcu_* layer (registered by apcu.c).

use std::ffi::CStr;

use php_sys as sys;

use super::ffi;

/// A registered ini entry's current value, or None when it has none.
pub(crate) fn string(name: &CStr) -> Option<String> {
    // SAFETY: reads a registered ini entry's current value (a NUL-terminated string PHP
    // owns) during module start-up.
    unsafe {
        let mut exists = false;
        let v = sys::zend_ini_string_ex(
            name.as_ptr() as *mut _,
            name.to_bytes().len(),
            0,
            &mut exists,
        );
        if v.is_null() || !exists {
            return None;
        }
        Some(CStr::from_ptr(v).to_string_lossy().into_owned())
    }
}

/// An ini switch: off for `0`, `off`, `false`, `no`, `none` and the empty string, on for
/// anything else; `default` when the entry has no value.
pub(crate) fn flag(name: &CStr, default: bool) -> bool {
    match string(name) {
        None => default,
        Some(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no" | "none" | ""
        ),
    }
}

/// An ini size in bytes (see [`parse_size`]), or None when unset or unreadable.
pub(crate) fn size(name: &CStr) -> Option<usize> {
    string(name).and_then(|s| parse_size(&s))
}

/// Whether php.ini (or `-d`) sets `name` (the configuration hash, not the registered
/// default).
pub(crate) fn configured(name: &CStr) -> bool {
    let name = name.to_bytes();
    // SAFETY: reads PHP's configuration hash (filled before any MINIT); the shim only
    // reads `len` bytes of the name.
    unsafe { ffi::ferrophp_uc_ini_configured(name.as_ptr().cast(), name.len()) }
}

/// Parses an ini size: `64M`, `512k`, `1G`, or bytes.
pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}
