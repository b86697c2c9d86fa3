//! Entry points for the fuzz targets in `fuzz/` and their stable replay tests
//! (`worker/tests/fuzz_replay.rs`): each takes raw fuzzer bytes, drives one pure-Rust part
//! of the runtime and panics when a property does not hold. Nothing here needs a running
//! PHP engine; not part of the supported API.
//!
//! - [`string_arena`], [`cache_table`]: the shared cache's arena and index, defined in
//!   `ferrophp_cache::fuzzing` and re-exported here so the fuzz targets keep one path.
//! - [`header_names`]: `$_SERVER` naming of request headers (`server_vars/text.rs`):
//!   `HTTP_*` names, the common-header table, PHP's verbatim-name rule, and the number
//!   writers.

use ferrophp_cache::fuzzing::Bytes;
pub use ferrophp_cache::fuzzing::{cache_table, string_arena};

use crate::server_vars;

/// `$_SERVER` naming of one lowercase header name (as hyper hands them over): the name
/// the fast and the PHP registration paths use, whether PHP keeps it verbatim, and the
/// common-header table's answer against a linear search.
pub fn header_variable(name: &str) -> HeaderVariable {
    let arena = bumpalo::Bump::new();
    let var = server_vars::header_variable_name(&arena, name).to_owned();
    let table = server_vars::HeaderTable::new();
    let common = table.find(name.as_bytes());
    assert_eq!(
        common,
        server_vars::COMMON_HEADERS.iter().position(|h| *h == name),
        "common-header table disagrees with a linear search for {name:?}"
    );
    HeaderVariable {
        verbatim: server_vars::verbatim_variable_name(var.as_bytes()),
        common: common.is_some(),
        var,
    }
}

/// What [`header_variable`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderVariable {
    /// `HTTP_…`
    pub var: String,
    /// PHP registers `var` unchanged (no mangling of ` `, `.`, `[`, not numeric).
    pub verbatim: bool,
    /// One of the headers with a permanent key made at start-up.
    pub common: bool,
}

/// Header names read from `data` (split at `\n`), each through [`header_variable`], plus
/// the decimal and IPv4 writers against `Display`.
pub fn header_names(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        if let Ok(name) = std::str::from_utf8(line) {
            let lower = name.to_ascii_lowercase();
            let hv = header_variable(&lower);
            assert!(hv.var.starts_with("HTTP_"), "{hv:?}");
            assert_eq!(hv.var.len(), 5 + lower.len(), "{hv:?}");
            assert!(!hv.var.contains('-'), "{hv:?}");
        }
    }
    let mut input = Bytes(data);
    let n = u32::from(input.u16()) | u32::from(input.u16()) << 16;
    let mut buf = [0u8; 10];
    let len = server_vars::decimal(n, &mut buf);
    assert_eq!(&buf[..len], n.to_string().as_bytes());
    let ip = std::net::Ipv4Addr::from(n);
    let mut buf = [0u8; 15];
    let len = server_vars::ipv4_text(ip, &mut buf);
    assert_eq!(&buf[..len], ip.to_string().as_bytes());
}

/// `join_values` (repeated headers in `$_SERVER` and the cookie string) against a plain
/// join, for every name in `map`.
pub fn join_values(map: &http::HeaderMap) {
    let arena = bumpalo::Bump::new();
    for name in map.keys() {
        for (sep, nul) in [(&b", "[..], false), (&b"; "[..], true)] {
            let got = server_vars::join_values(&arena, &map.get_all(name), sep, nul);
            let mut want = map
                .get_all(name)
                .iter()
                .map(|v| v.as_bytes().to_vec())
                .collect::<Vec<_>>()
                .join(sep);
            if nul {
                want.push(0);
            }
            assert_eq!(got, &want[..], "joined values of {name}");
        }
    }
}
