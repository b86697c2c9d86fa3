//! The response head read from PHP's header list (`sapi::response_head`, which walks
//! `SG(sapi_headers)` and slices each line PHP owns): randomised header lines of every
//! shape (empty and huge values, no colon, an empty or spaced name, control and high
//! bytes, repeated names) and counts around the 16,384-line cap, each compared with PHP's
//! own `headers_list()` under the same rules (split at the first colon, trimmed, invalid
//! HTTP dropped, at most the cap).
//!
//! Hand-managed memory, so also run under valgrind with PHP's allocator off:
//! `USE_ZEND_ALLOC=0 valgrind --error-exitcode=99 --suppressions=test-data/valgrind/php.supp
//!  target/debug/deps/response_headers-*`

mod common;

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use common::Rng;

use worker::{diagnostics, BufferSink, Engine, EngineConfig, LogTarget, ScriptRequest};

/// `sapi::response_head`'s cap on the lines taken from PHP.
const CAP: usize = 16 * 1024;

/// The shapes of input this test draws.
trait HeaderInputs {
    fn token(&mut self, len: usize) -> Vec<u8>;
    fn value(&mut self, len: usize) -> Vec<u8>;
    fn line(&mut self, i: usize, only_valid: bool) -> Vec<u8>;
}

impl HeaderInputs for Rng {
    fn token(&mut self, len: usize) -> Vec<u8> {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
        (0..len).map(|_| CHARS[self.below(CHARS.len())]).collect()
    }
    /// A field value: visible ASCII, spaces, tabs and high bytes; never CR, LF or NUL
    /// (PHP's header() refuses those).
    fn value(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| match self.below(20) {
                0 => b'\t',
                1 => 0x80 + self.below(128) as u8,
                _ => b' ' + self.below(95) as u8,
            })
            .collect()
    }
    /// One header line, valid or not.
    fn line(&mut self, i: usize, only_valid: bool) -> Vec<u8> {
        let len = match self.below(6) {
            0 => 0,
            1 => 1,
            2 => self.below(16),
            3 => self.below(300),
            4 => self.below(3000),
            _ => 2,
        };
        let name = |rng: &mut Rng| {
            let mut name = format!("x-{i}-").into_bytes();
            let extra = 1 + rng.below(20);
            name.extend(rng.token(extra));
            name
        };
        let kind = if only_valid { 0 } else { self.below(12) };
        let mut line = match kind {
            // Odd but valid: a name repeated, padding around the colon, an empty value.
            1 => b"x-repeated: ".to_vec(),
            2 => [b"  ".as_slice(), &name(self), b"  :  "].concat(),
            3 => [name(self), b":".to_vec()].concat(),
            // Not HTTP: dropped by ferrophp, still in PHP's list.
            4 => name(self),                                       // no colon
            5 => b": no name".to_vec(),                            // empty name
            6 => [b"bad name".as_slice(), b": v"].concat(),        // space in the name
            7 => [b"caf\xc3\xa9".as_slice(), b": v"].concat(),     // non-token bytes
            8 => [name(self), b": ctl\x01\x7f".to_vec()].concat(), // control bytes
            _ => [name(self), b": ".to_vec()].concat(),
        };
        if !matches!(kind, 4..=8) {
            line.extend(self.value(len));
        }
        line
    }
}

fn unhex(text: &[u8]) -> Vec<u8> {
    text.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// What ferrophp must hand over for PHP's list `lines`.
fn expected(lines: &[Vec<u8>]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (line[..colon].trim_ascii(), line[colon + 1..].trim_ascii());
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name),
            http::HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        if map.len() >= CAP {
            break;
        }
        map.append(name, value);
    }
    map
}

#[test]
fn response_heads_match_php_s_header_list() {
    let seed: u64 = std::env::var("FERROPHP_HEADERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x4ea0_e75e_ed00_0001);
    let engine = Engine::start(EngineConfig {
        threads: 1,
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .unwrap();
    let script = format!(
        "{}/../test-data/valgrind/response_headers.php",
        env!("CARGO_MANIFEST_DIR")
    );
    let file = std::env::temp_dir().join(format!("ferrophp-headers-{}", std::process::id()));
    let mut rng = Rng(seed);
    // (lines, only valid ones, status): empty, tiny, odd shapes, and around the cap
    // (PHP adds X-Powered-By and our Content-Type, so the list crosses it in this range).
    let mut cases: Vec<(usize, bool, u16)> = vec![
        (0, false, 200),
        (1, false, 404),
        (2, false, 299),
        (3, false, 100),
        (7, false, 999),
        (64, false, 200),
        (1000, false, 503),
    ];
    cases.extend((CAP - 4..=CAP + 2).map(|n| (n, true, 200)));
    cases.push((CAP + 3000, false, 200));
    for (count, only_valid, status) in cases {
        let mut input = format!("{status}\n").into_bytes();
        for i in 0..count {
            input.extend(rng.line(i, only_valid));
            input.push(b'\n');
        }
        if count == 7 {
            // One huge value.
            input.extend(b"x-huge: ");
            input.extend(rng.value(1 << 20));
            input.push(b'\n');
        }
        std::fs::write(&file, &input).unwrap();

        let sink = Arc::new(Mutex::new(BufferSink::default()));
        let mut req = ScriptRequest::new(&script, Box::new(sink.clone()));
        let mut cgi = diagnostics::browser_request("/", "/response_headers.php");
        cgi.env = Arc::from(vec![(
            CString::new("HEADERS_FILE").unwrap(),
            CString::new(file.to_str().unwrap()).unwrap(),
        )]);
        req.cgi = Some(cgi);
        let outcome = engine.run(req).expect("engine running");
        assert_eq!(outcome.exit_status, 0, "seed {seed}, {count} lines");
        let sink = sink.lock().unwrap();
        let php_list: Vec<Vec<u8>> = sink
            .body
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(unhex)
            .collect();
        assert!(
            php_list.len() >= count.min(1),
            "seed {seed}, {count} lines: PHP listed {}",
            php_list.len()
        );
        let head = sink.head.as_ref().expect("a head was sent");
        assert_eq!(head.status, status, "seed {seed}, {count} lines");
        let want = expected(&php_list);
        if only_valid && php_list.len() > CAP {
            assert_eq!(want.len(), CAP);
        }
        assert!(
            head.headers == want,
            "seed {seed}, {count} lines: {} headers read, {} expected",
            head.headers.len(),
            want.len()
        );
    }
    let _ = std::fs::remove_file(&file);
    engine.shutdown();
}
