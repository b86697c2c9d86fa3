//! The environment's `$_SERVER` template (`server_vars/environment.rs`): a persistent
//! array of permanent strings per distinct environment, copied as one block into each
//! request's `$_SERVER`. Randomised over environments of sizes around the template's
//! capacity steps (the copy's table size is a power of two), values of awkward bytes and
//! lengths, and requests with few to many headers (so some copies must grow past the room
//! left for them), plus more distinct environments than get a template: every `$_SERVER`
//! must equal the naive reference path's, the first time and when the template is reused.
//!
//! Hand-managed memory, so also run under valgrind with PHP's allocator off (every
//! emalloc its own checked block):
//! `USE_ZEND_ALLOC=0 valgrind --error-exitcode=99 --suppressions=test-data/valgrind/php.supp
//!  target/debug/deps/server_env_template-*`

mod common;

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use common::Rng;

use worker::diagnostics;
use worker::{BufferSink, CgiRequest, Engine, EngineConfig, LogTarget, ScriptRequest};

/// The shapes of input this test draws.
trait EnvInputs {
    fn name(&mut self, prefix: &str) -> String;
    fn value(&mut self) -> Vec<u8>;
}

impl EnvInputs for Rng {
    fn name(&mut self, prefix: &str) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
        let len = 1 + self.below(24);
        let tail: String = (0..len)
            .map(|_| CHARS[self.below(CHARS.len())] as char)
            .collect();
        format!("{prefix}{tail}")
    }
    /// Any bytes but NUL (a C string), including newlines, quotes, `<`, high bytes.
    fn value(&mut self) -> Vec<u8> {
        let len = match self.below(4) {
            0 => 0,
            1 => self.below(8),
            2 => self.below(200),
            _ => self.below(5000),
        };
        (0..len).map(|_| 1 + self.below(255) as u8).collect()
    }
}

fn root() -> String {
    format!("{}/../test-data/bench", env!("CARGO_MANIFEST_DIR"))
}

fn run(engine: &Engine, cgi: CgiRequest) -> Vec<u8> {
    let sink = Arc::new(Mutex::new(BufferSink::default()));
    let mut req = ScriptRequest::new(
        format!("{}/print_server.php", root()),
        Box::new(sink.clone()),
    );
    req.cgi = Some(cgi);
    let outcome = engine.run(req).expect("engine running");
    assert_eq!(outcome.exit_status, 0);
    let body = std::mem::take(&mut sink.lock().unwrap().body);
    body
}

/// The dump without the entries that differ between two requests of the same input.
fn stable(dump: &[u8]) -> Vec<Vec<u8>> {
    dump.split(|&b| b == b'\n')
        .filter(|l| !l.windows(13).any(|w| w == b"[REQUEST_TIME"))
        .map(<[u8]>::to_vec)
        .collect()
}

fn request(env: &Arc<[(CString, CString)]>, headers: usize, rng: &mut Rng) -> CgiRequest {
    let mut cgi = diagnostics::browser_request(&root(), "/print_server.php");
    cgi.env = env.clone();
    for i in 0..headers {
        let name = format!("x-t{i}-{}", rng.name("").to_ascii_lowercase());
        let value: Vec<u8> = (0..rng.below(300))
            .map(|_| b' ' + rng.below(94) as u8)
            .collect();
        cgi.headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_bytes(&value).unwrap(),
        );
    }
    cgi
}

fn environment(size: usize, rng: &mut Rng) -> Arc<[(CString, CString)]> {
    (0..size)
        .map(|i| {
            (
                CString::new(rng.name(&format!("E{size}_{i}_"))).unwrap(),
                CString::new(rng.value()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn server_vars_from_templates_equal_the_naive_path() {
    let seed: u64 = std::env::var("FERROPHP_TEMPLATE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_fe77_0f00_0001);
    let engine = Engine::start(EngineConfig {
        threads: 1,
        ini: vec![("register_argc_argv".into(), "0".into())],
        log_target: LogTarget::Stderr,
        ..EngineConfig::default()
    })
    .unwrap();
    let mut rng = Rng(seed);
    // Sizes around the template's table sizes (environment + room for the request's own).
    let sizes = [
        0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 300,
    ];
    let header_counts = [0, 1, 20, 33, 60, 120];
    let mut cases = 0;
    for &size in &sizes {
        let env = environment(size, &mut rng);
        for &headers in &header_counts {
            let cgi = request(&env, headers, &mut rng);
            diagnostics::use_naive_server_vars(true);
            let naive = stable(&run(&engine, cgi.clone()));
            diagnostics::use_naive_server_vars(false);
            for round in 0..2 {
                let fast = stable(&run(&engine, cgi.clone()));
                assert!(
                    fast == naive,
                    "seed {seed}: environment of {size}, {headers} extra headers, round {round}: \
                     the template path differs from the naive path"
                );
                cases += 1;
            }
        }
        // The same environment in a new Arc (a caller that builds it per request): the
        // same template, by content.
        let copy: Arc<[(CString, CString)]> = env.iter().cloned().collect();
        let cgi = request(&copy, 3, &mut rng);
        diagnostics::use_naive_server_vars(true);
        let naive = stable(&run(&engine, cgi.clone()));
        diagnostics::use_naive_server_vars(false);
        assert!(
            stable(&run(&engine, cgi)) == naive,
            "seed {seed}: copy of {size}"
        );
    }
    assert!(cases > 200);
    engine.shutdown();
}
