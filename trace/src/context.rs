//! W3C Trace Context (level 1): the `traceparent` and `tracestate` headers, and the ids a
//! span is named by. Parsing follows the specification's rules for receivers: lower-case
//! hex only, all-zero ids and version `ff` refused, a later version read by its version-00
//! prefix; anything invalid is as if no header had come (a new trace starts).

use std::fmt;

/// A trace's id: 16 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SpanId(pub [u8; 8]);

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_hex(bytes: &[u8], out: &mut [u8]) {
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
}

/// Each byte's value as a lower-case hex digit, 0xff for anything else (the
/// specification refuses upper case): one table load per digit on the request path.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

fn read_hex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    let mut bad = 0u8;
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        // 0xff has the top bit set; a valid digit never does.
        bad |= hi | lo;
        out[i] = (hi << 4) | (lo & 0x0f);
    }
    (bad & 0x80 == 0).then_some(out)
}

impl TraceId {
    /// Whether it is not all zeros (W3C: an all-zero id is invalid).
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 16]
    }

    /// 32 lower-case hex digits.
    pub fn hex(&self) -> [u8; 32] {
        let mut out = [0; 32];
        write_hex(&self.0, &mut out);
        out
    }
}

impl SpanId {
    /// Whether it is not all zeros (W3C: an all-zero id is invalid).
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 8]
    }

    /// 16 lower-case hex digits.
    pub fn hex(&self) -> [u8; 16] {
        let mut out = [0; 16];
        write_hex(&self.0, &mut out);
        out
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.hex()).unwrap_or("?"))
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.hex()).unwrap_or("?"))
    }
}

/// The sampled bit of the trace flags.
pub const SAMPLED: u8 = 0x01;

/// Where a span sits: its trace, its own id, and the trace flags it propagates.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SpanContext {
    /// The trace the span belongs to.
    pub trace_id: TraceId,
    /// The span's own id.
    pub span_id: SpanId,
    /// W3C trace flags (the [`SAMPLED`] bit).
    pub flags: u8,
}

/// Length of a version-00 `traceparent` value.
pub const TRACEPARENT_LEN: usize = 55;

impl SpanContext {
    /// Whether the sampled flag is set.
    pub fn is_sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The `traceparent` value naming this span as the parent of an outgoing call:
    /// `00-<trace id>-<span id>-<flags>`.
    pub fn traceparent(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = [b'-'; TRACEPARENT_LEN];
        out[0] = b'0';
        out[1] = b'0';
        write_hex(&self.trace_id.0, &mut out[3..35]);
        write_hex(&self.span_id.0, &mut out[36..52]);
        write_hex(&[self.flags], &mut out[53..55]);
        out
    }
}

/// Parses one `traceparent` value (W3C Trace Context §3.2). None when it is invalid:
/// the caller then starts a new trace. Only the sampled bit of the flags is kept (the
/// other bits are undefined in version 00 and must not be propagated as set).
pub fn parse_traceparent(value: &[u8]) -> Option<SpanContext> {
    let v = value.trim_ascii();
    if v.len() < TRACEPARENT_LEN {
        return None;
    }
    let version = read_hex::<1>(&v[0..2])?[0];
    if version == 0xff || (version == 0 && v.len() != TRACEPARENT_LEN) {
        return None;
    }
    // A later version is read as version 00 when its first 55 bytes have that shape and
    // what follows starts with '-' (§3.2.4, "Versioning of traceparent").
    if v.len() > TRACEPARENT_LEN && v[TRACEPARENT_LEN] != b'-' {
        return None;
    }
    if v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
        return None;
    }
    let trace_id = TraceId(read_hex::<16>(&v[3..35])?);
    let span_id = SpanId(read_hex::<8>(&v[36..52])?);
    let flags = read_hex::<1>(&v[53..55])?[0];
    if !trace_id.is_valid() || !span_id.is_valid() {
        return None;
    }
    Some(SpanContext {
        trace_id,
        span_id,
        flags: flags & SAMPLED,
    })
}

/// Most list members a `tracestate` may carry (§3.3.1.1).
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// The `tracestate` to propagate, from the request's `tracestate` header values (HTTP
/// allows it split over several headers, joined with commas): the members as received,
/// joined with ','; None when absent or when any member is malformed (the specification:
/// a vendor that cannot parse it must not propagate it). Empty members are dropped.
pub fn parse_tracestate<'a>(values: impl Iterator<Item = &'a [u8]>) -> Option<String> {
    let mut out = String::new();
    let mut members = 0;
    for value in values {
        for member in value.split(|&b| b == b',') {
            let member = member.trim_ascii();
            if member.is_empty() {
                continue;
            }
            if !valid_member(member) {
                return None;
            }
            members += 1;
            if members > MAX_TRACESTATE_MEMBERS {
                return None;
            }
            if !out.is_empty() {
                out.push(',');
            }
            // valid_member admits printable ASCII only.
            out.push_str(std::str::from_utf8(member).ok()?);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `key=value` with the grammar of §3.3.1.3: key `lcalpha 0*255(lcalpha/DIGIT/"_"/"-"/
/// "*"/"/")` or `tenant@system` (the tenant may start with a digit), value 1 to 256
/// printable ASCII characters other than ',' and '=', not ending in a space.
fn valid_member(member: &[u8]) -> bool {
    let Some(eq) = member.iter().position(|&b| b == b'=') else {
        return false;
    };
    let (key, value) = (&member[..eq], &member[eq + 1..]);
    let key_char = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-*/".contains(&c);
    let key_ok = match key.iter().position(|&b| b == b'@') {
        None => {
            (1..=256).contains(&key.len())
                && key[0].is_ascii_lowercase()
                && key.iter().all(|&c| key_char(c))
        }
        Some(at) => {
            let (tenant, system) = (&key[..at], &key[at + 1..]);
            (1..=241).contains(&tenant.len())
                && (tenant[0].is_ascii_lowercase() || tenant[0].is_ascii_digit())
                && tenant.iter().all(|&c| key_char(c))
                && (1..=14).contains(&system.len())
                && system[0].is_ascii_lowercase()
                && system.iter().all(|&c| key_char(c))
        }
    };
    key_ok
        && (1..=256).contains(&value.len())
        && value
            .iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
        && value.last() != Some(&b' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn parses_the_specifications_example_and_writes_it_back() {
        let ctx = parse_traceparent(EXAMPLE.as_bytes()).unwrap();
        assert!(ctx.is_sampled());
        assert_eq!(
            format!("{:?}", ctx.trace_id),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(format!("{:?}", ctx.span_id), "b7ad6b7169203331");
        assert_eq!(&ctx.traceparent()[..], EXAMPLE.as_bytes());
        let unsampled = parse_traceparent(&EXAMPLE.replace("-01", "-00").into_bytes()).unwrap();
        assert!(!unsampled.is_sampled());
        // Surrounding whitespace (OWS) is not part of the value.
        assert!(parse_traceparent(format!(" {EXAMPLE}\t").as_bytes()).is_some());
    }

    #[test]
    fn refuses_what_the_specification_refuses() {
        for bad in [
            "",
            "00",
            // upper case
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01",
            // all-zero ids
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            // version ff, and version 00 with extra fields
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            // wrong separators and lengths
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
            "00-0af7651916cd43dd8448eb211c80319cb-7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
            // two headers folded into one
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01,00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            // a later version whose tail does not start with '-'
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
        ] {
            assert!(parse_traceparent(bad.as_bytes()).is_none(), "{bad:?} accepted");
        }
    }

    #[test]
    fn reads_later_versions_by_their_version_00_prefix() {
        let ctx = parse_traceparent(
            b"cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09-what-comes-later",
        )
        .unwrap();
        // Only the sampled bit survives.
        assert_eq!(ctx.flags, SAMPLED);
        assert!(
            parse_traceparent(b"cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").is_some()
        );
    }

    #[test]
    fn tracestate_is_kept_as_received_or_dropped_whole() {
        let headers: [&[u8]; 2] = [b"rojo=00f067aa0ba902b7, congo=t61rcWkgMzE", b"abc@vendor=x"];
        assert_eq!(
            parse_tracestate(headers.into_iter()).as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,abc@vendor=x")
        );
        assert_eq!(parse_tracestate([&b" , "[..]].into_iter()), None);
        for bad in [
            &b"Rojo=1"[..],
            b"rojo",
            b"rojo=a,b",
            b"rojo=a=b",
            b"rojo=ctl\x01",
            b"=x",
        ] {
            assert_eq!(parse_tracestate([bad].into_iter()), None, "{:?}", bad);
        }
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(parse_tracestate([many.as_bytes()].into_iter()), None);
    }
}
