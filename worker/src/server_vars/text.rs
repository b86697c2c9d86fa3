//! The byte work behind `$_SERVER`, free of PHP calls (and fuzzed, `crate::fuzzing`):
//! the common request headers and their lookup table, `HTTP_*` names, which names PHP
//! keeps verbatim, numbers and IPv4 addresses as text, repeated headers joined, and the
//! protocol's name.

use bumpalo::Bump;

/// Request headers whose `HTTP_*` keys are made once at start-up, found through
/// [`HeaderTable`]. Sorted (kept so for review). `proxy` is absent on purpose (see httpoxy
/// below).
pub(crate) const COMMON_HEADERS: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-datetime",
    "accept-encoding",
    "accept-language",
    "access-control-request-headers",
    "access-control-request-method",
    "authorization",
    "baggage",
    "cache-control",
    "cdn-loop",
    "cf-connecting-ip",
    "cf-ipcountry",
    "cf-ray",
    "cf-visitor",
    "connection",
    "content-encoding",
    "content-length",
    "content-md5",
    "content-type",
    "cookie",
    "date",
    "dnt",
    "early-data",
    "expect",
    "forwarded",
    "from",
    "host",
    "http2-settings",
    "hx-current-url",
    "hx-request",
    "hx-target",
    "hx-trigger",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "keep-alive",
    "max-forwards",
    "origin",
    "pragma",
    "prefer",
    "priority",
    "proxy-authorization",
    "purpose",
    "range",
    "referer",
    "sec-ch-ua",
    "sec-ch-ua-arch",
    "sec-ch-ua-bitness",
    "sec-ch-ua-full-version-list",
    "sec-ch-ua-mobile",
    "sec-ch-ua-model",
    "sec-ch-ua-platform",
    "sec-ch-ua-platform-version",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "sec-gpc",
    "sec-purpose",
    "sec-websocket-extensions",
    "sec-websocket-key",
    "sec-websocket-protocol",
    "sec-websocket-version",
    "te",
    "traceparent",
    "tracestate",
    "trailer",
    "transfer-encoding",
    "true-client-ip",
    "upgrade",
    "upgrade-insecure-requests",
    "user-agent",
    "via",
    "warning",
    "x-amz-content-sha256",
    "x-amz-date",
    "x-amz-security-token",
    "x-api-key",
    "x-b3-parentspanid",
    "x-b3-sampled",
    "x-b3-spanid",
    "x-b3-traceid",
    "x-client-ip",
    "x-cluster-client-ip",
    "x-correlation-id",
    "x-csrf-token",
    "x-do-not-track",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-forwarded-proto",
    "x-forwarded-server",
    "x-github-delivery",
    "x-github-event",
    "x-http-method-override",
    "x-hub-signature",
    "x-hub-signature-256",
    "x-inertia",
    "x-inertia-version",
    "x-livewire",
    "x-original-host",
    "x-original-uri",
    "x-original-url",
    "x-pjax",
    "x-purpose",
    "x-real-ip",
    "x-request-id",
    "x-requested-with",
    "x-rewrite-url",
    "x-scheme",
    "x-turbo-request-id",
    "x-ua-compatible",
    "x-wap-profile",
    "x-xsrf-token",
];

pub(crate) const SERVER_SOFTWARE: &[u8] =
    concat!("ferrophp/", env!("CARGO_PKG_VERSION")).as_bytes();

/// An open-addressing table of [`COMMON_HEADERS`] positions keyed by FNV-1a of the name:
/// a lookup hashes the name once and usually compares one string, where a binary search
/// compared seven.
pub(crate) struct HeaderTable {
    /// Position + 1 in COMMON_HEADERS; 0 is an empty slot.
    slots: Vec<u16>,
}

impl HeaderTable {
    pub(crate) fn new() -> HeaderTable {
        let size = (COMMON_HEADERS.len() * 4).next_power_of_two();
        let mut slots = vec![0u16; size];
        for (i, name) in COMMON_HEADERS.iter().enumerate() {
            let mut at = fnv1a(name.as_bytes()) & (size - 1);
            while slots[at] != 0 {
                at = (at + 1) & (size - 1);
            }
            slots[at] = (i + 1) as u16;
        }
        HeaderTable { slots }
    }

    pub(crate) fn find(&self, name: &[u8]) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut at = fnv1a(name) & mask;
        loop {
            let slot = self.slots[at] as usize;
            if slot == 0 {
                return None;
            }
            if COMMON_HEADERS[slot - 1].as_bytes() == name {
                return Some(slot - 1);
            }
            at = (at + 1) & mask;
        }
    }
}

fn fnv1a(bytes: &[u8]) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as usize
}

/// The values of a repeated header joined by `separator` in the arena (one exact
/// allocation, whole-slice copies), NUL-terminated when `nul`: the one way both
/// `$_SERVER['HTTP_*']` and `SG(request_info).cookie_data` join repeated headers.
pub(crate) fn join_values<'a>(
    arena: &'a Bump,
    values: &http::header::GetAll<'_, http::HeaderValue>,
    separator: &[u8],
    nul: bool,
) -> &'a [u8] {
    let count = values.iter().count();
    let len = values.iter().map(|v| v.len()).sum::<usize>()
        + separator.len() * count.saturating_sub(1)
        + usize::from(nul);
    let buf = arena.alloc_slice_fill_copy(len, 0u8);
    let mut at = 0;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            buf[at..at + separator.len()].copy_from_slice(separator);
            at += separator.len();
        }
        buf[at..at + v.len()].copy_from_slice(v.as_bytes());
        at += v.len();
    }
    buf
}

/// `php_register_variable_ex` stores `name` as this very string key: it has nothing PHP
/// would mangle or treat specially (spaces, dots, `[`), and cannot be a numeric key (which
/// starts with a digit or `-`). Conservative: anything else takes PHP's own path.
pub(crate) fn verbatim_variable_name(name: &[u8]) -> bool {
    !name.is_empty()
        && !matches!(name[0], b'0'..=b'9' | b'-')
        && !name.iter().any(|&b| matches!(b, b' ' | b'.' | b'['))
}

/// Writes `n` in decimal at the start of `out` (large enough), returning the length.
pub(crate) fn decimal(mut n: u32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
}

/// `a.b.c.d` as `Ipv4Addr`'s `Display` writes it, returning the length.
pub(crate) fn ipv4_text(ip: std::net::Ipv4Addr, buf: &mut [u8; 15]) -> usize {
    let mut len = 0;
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            buf[len] = b'.';
            len += 1;
        }
        len += decimal(u32::from(octet), &mut buf[len..]);
    }
    len
}

/// `user-agent` → `HTTP_USER_AGENT`, in the arena. Header names are lowercase tokens.
pub(crate) fn header_variable_name<'a>(arena: &'a Bump, name: &str) -> &'a str {
    let mut var = bumpalo::collections::String::with_capacity_in(5 + name.len(), arena);
    var.push_str("HTTP_");
    var.extend(name.chars().map(|c| {
        if c == '-' {
            '_'
        } else {
            c.to_ascii_uppercase()
        }
    }));
    var.into_bump_str()
}

/// `SERVER_PROTOCOL` text for an HTTP version.
pub(crate) fn protocol(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_addresses_read_as_display_writes_them() {
        for n in [0u32, 7, 10, 99, 100, 255, 8080, 51234, 65535, u32::MAX] {
            let mut buf = [0u8; 10];
            let len = decimal(n, &mut buf);
            assert_eq!(&buf[..len], n.to_string().as_bytes());
        }
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.30.40",
            "255.255.255.255",
            "1.0.10.100",
        ] {
            let ip: std::net::Ipv4Addr = ip.parse().unwrap();
            let mut buf = [0u8; 15];
            let len = ipv4_text(ip, &mut buf);
            assert_eq!(&buf[..len], ip.to_string().as_bytes());
        }
    }

    #[test]
    fn header_table_finds_exactly_the_common_headers() {
        let table = HeaderTable::new();
        for (i, name) in COMMON_HEADERS.iter().enumerate() {
            assert_eq!(table.find(name.as_bytes()), Some(i), "{name}");
        }
        for name in ["proxy", "x-custom", "", "accept ", "Accept", "cookies"] {
            assert_eq!(table.find(name.as_bytes()), None, "{name}");
        }
    }

    #[test]
    fn only_names_php_keeps_as_they_are_are_verbatim() {
        for name in ["APP_ENV", "HOME", "a", "_x", "Z9", "__Host-x", "x-y"] {
            assert!(verbatim_variable_name(name.as_bytes()), "{name}");
        }
        for name in ["", "1", "12", "-1", "0x", "a.b", "a b", " a", "a[b]", "a["] {
            assert!(!verbatim_variable_name(name.as_bytes()), "{name}");
        }
    }
}
