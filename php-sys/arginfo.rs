//! For the build scripts of the crates that add PHP functions and classes (worker, cache;
//! each includes this file with `#[path]`): their arginfo headers are generated from PHP
//! stubs by PHP's own `build/gen_stub.php` (`scripts/gen-arginfo.sh`) and committed, as
//! php-src does. Each header names the SHA-1 of the stub it came from; a stub edited
//! without regenerating its header fails the build here, with the command that fixes it.

use std::fs;
use std::path::Path;

/// Checks every `<name>.stub.php` in `dir` against its `<name>_arginfo.h` (and asks cargo
/// to rerun when either changes). Panics with the regeneration command when one is
/// missing or stale.
pub fn check_stubs(dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut stale = Vec::new();
    for entry in entries {
        let stub = entry
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        let Some(name) = stub
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".stub.php"))
        else {
            continue;
        };
        let header = dir.join(format!("{name}_arginfo.h"));
        println!("cargo:rerun-if-changed={}", stub.display());
        println!("cargo:rerun-if-changed={}", header.display());
        let code =
            fs::read(&stub).unwrap_or_else(|e| panic!("cannot read {}: {e}", stub.display()));
        if header_hash(&header).as_deref() != Some(stub_hash(&code).as_str()) {
            stale.push(format!("{} (stub {})", header.display(), stub.display()));
        }
    }
    if !stale.is_empty() {
        panic!(
            "arginfo headers out of date with their PHP stubs:\n  {}\nrun scripts/gen-arginfo.sh \
             (PHP's build/gen_stub.php regenerates them) and commit the headers",
            stale.join("\n  ")
        );
    }
}

/// gen_stub.php's `computeStubHash`: SHA-1 of the stub with CRLF line ends made LF.
fn stub_hash(code: &[u8]) -> String {
    let mut normalized = Vec::with_capacity(code.len());
    let mut i = 0;
    while i < code.len() {
        if code[i] == b'\r' && code.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        normalized.push(code[i]);
        i += 1;
    }
    sha1_smol::Sha1::from(&normalized).digest().to_string()
}

/// The hash in the header's `* Stub hash: <hex> */` line, as gen_stub.php's
/// `extractStubHash` reads it.
fn header_hash(header: &Path) -> Option<String> {
    let text = fs::read_to_string(header).ok()?;
    let rest = &text[text.find("* Stub hash: ")? + "* Stub hash: ".len()..];
    let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    (!hex.is_empty()).then_some(hex)
}
