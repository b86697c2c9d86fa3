//! Security defaults, against the real server: TLS 1.2+ with forward-secret AEAD suites
//! only (checked with Debian's `openssl s_client`), the admin listener on loopback unless
//! another interface is named, and `--confine` (open_basedir) in classic and worker mode:
//! files outside are refused with a warning while includes, sessions, uploads and
//! temporary files keep working.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{client, self_signed, Server};

/// `openssl s_client` against `server` with `args`; (handshake completed, all output).
fn s_client(server: &Server, args: &[&str]) -> (bool, String) {
    let out = Command::new("openssl")
        .arg("s_client")
        .arg("-connect")
        .arg(server.addr.to_string())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("openssl is installed (Debian package openssl)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // s_client prints the negotiated suite only after a completed handshake.
    let done = text.contains("Cipher is ") && !text.contains("Cipher is (NONE)");
    (done, text)
}

fn negotiated_cipher(text: &str) -> &str {
    text.lines()
        .find_map(|l| l.split_once("Cipher is ").map(|(_, c)| c.trim()))
        .unwrap_or("")
}

#[test]
fn tls_speaks_only_1_2_and_1_3_with_forward_secret_aead_suites() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(tmp.path());
    let server = Server::start(
        &common::http_root(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );

    // SECLEVEL=0 lets this client offer the old versions and suites at all, so a refusal
    // comes from the server, as an alert (rustls answers handshake_failure).
    for old in ["-tls1", "-tls1_1"] {
        let (done, text) = s_client(&server, &[old, "-cipher", "DEFAULT@SECLEVEL=0"]);
        assert!(!done, "{old} was accepted:\n{text}");
        assert!(
            text.contains("alert handshake failure") || text.contains("alert protocol version"),
            "{old}: not refused by an alert from the server:\n{text}"
        );
    }
    // TLS 1.2 with only CBC or static-RSA suites: no common suite.
    let (done, text) = s_client(
        &server,
        &[
            "-tls1_2",
            "-cipher",
            "AES128-SHA:AES256-SHA256:ECDHE-ECDSA-AES128-SHA@SECLEVEL=0",
        ],
    );
    assert!(!done, "a CBC suite was accepted:\n{text}");
    assert!(text.contains("alert handshake failure"), "{text}");

    let (done, text) = s_client(&server, &["-tls1_2"]);
    assert!(done, "TLS 1.2 refused:\n{text}");
    let cipher = negotiated_cipher(&text);
    assert!(
        cipher.starts_with("ECDHE-") && (cipher.contains("GCM") || cipher.contains("CHACHA20")),
        "TLS 1.2 suite {cipher:?} is not ECDHE + AEAD"
    );
    let (done, text) = s_client(&server, &["-tls1_3"]);
    assert!(done, "TLS 1.3 refused:\n{text}");
    assert!(text.contains("TLSv1.3"), "{text}");
}

/// `--admin VALUE` given as `how` (flag or environment), the address it bound.
fn admin_bound(how: &str, value: &str) -> (std::net::SocketAddr, String) {
    let server = if how == "env" {
        Server::start_with_env(&common::http_root(), &[], &[("FERROPHP_ADMIN", value)])
    } else {
        Server::start(&common::http_root(), &["--admin", value])
    };
    let addr = server.admin_addr().expect("admin line");
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()));
    let r = client()
        .get(format!("http://{local}/healthz"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    (addr, server.stderr())
}

#[test]
fn admin_with_a_bare_port_binds_loopback_only_and_a_public_address_must_be_named() {
    for (how, value) in [("flag", "0"), ("flag", ":0"), ("env", "0")] {
        let (addr, _) = admin_bound(how, value);
        assert!(
            addr.ip().is_loopback(),
            "--admin {value} ({how}) bound {addr}"
        );
    }
    let (addr, stderr) = admin_bound("flag", "0.0.0.0:0");
    assert!(addr.ip().is_unspecified(), "{addr}");
    assert!(stderr.contains("beyond loopback"), "{stderr}");
    let bad = common::serve_until_exit(
        &common::http_root(),
        &["--admin", "localhost"],
        Duration::from_secs(10),
    );
    assert_eq!(bad.status.and_then(|s| s.code()), Some(2), "{bad:?}");
}

fn confine_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/confine")
        .canonicalize()
        .unwrap()
}

/// A confined server whose temporary directory and session save path are two separate
/// directories outside the document root (so each must be in open_basedir on its own).
struct Confined {
    server: Server,
    _tmp: tempfile::TempDir,
    elsewhere: PathBuf,
}

fn confined(extra: &[&str], confine: bool) -> Confined {
    let tmp = tempfile::tempdir().unwrap();
    let temp_dir = tmp.path().join("tmp");
    let sessions = tmp.path().join("sessions");
    std::fs::create_dir(&temp_dir).unwrap();
    std::fs::create_dir(&sessions).unwrap();
    // Its name starts with an allowed directory's: open_basedir entries are directories,
    // not string prefixes (`.../tmp` must not admit `.../tmp-secret.txt`).
    let elsewhere = tmp.path().join("tmp-secret.txt");
    std::fs::write(&elsewhere, "next to the allowed directories").unwrap();
    let save_path = format!("session.save_path={}", sessions.display());
    let mut args = vec!["-d", &save_path];
    if confine {
        args.push("--confine");
    }
    args.extend_from_slice(extra);
    let server = Server::start_with_env(
        &confine_dir().join("public"),
        &args,
        &[("TMPDIR", temp_dir.to_str().unwrap())],
    );
    Confined {
        server,
        _tmp: tmp,
        elsewhere,
    }
}

fn probe(server: &Server, script: &str, query: &str) -> serde_json::Value {
    let r = client()
        .get(server.url(&format!("/{script}?{query}")))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{script}?{query}");
    serde_json::from_slice(&r.bytes().unwrap()).unwrap()
}

fn assert_refused(v: &serde_json::Value, what: &str) {
    assert_eq!(v["result"], false, "{what} was readable: {v}");
    let warning = v["warning"].as_str().unwrap_or("");
    assert!(
        warning.contains("open_basedir restriction in effect"),
        "{what}: no open_basedir warning: {v}"
    );
}

fn check_confined(c: &Confined, script: &str) {
    let server = &c.server;
    let elsewhere = c.elsewhere.to_str().unwrap();
    for (what, query) in [
        ("/etc/passwd", "case=read&path=/etc/passwd".to_string()),
        ("../outside.txt", "case=read&path=../../outside.txt".into()),
        (
            "a sibling of the allowed dirs",
            format!("case=read&path={elsewhere}"),
        ),
    ] {
        assert_refused(&probe(server, script, &query), what);
    }
    // What the application needs still works.
    let v = probe(server, script, "case=read&path=inc.php");
    assert!(v["result"].as_str().unwrap().contains("included"), "{v}");
    assert_eq!(probe(server, script, "case=include")["result"], "included");
    assert_eq!(probe(server, script, "case=tempfile")["result"], true);
    let jar = reqwest::blocking::Client::builder()
        .no_proxy()
        .cookie_store(true)
        .build()
        .unwrap();
    for n in 1..=2 {
        let v: serde_json::Value = jar
            .get(server.url(&format!("/{script}?case=session")))
            .send()
            .unwrap()
            .bytes()
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap();
        assert_eq!(v["result"], n, "session {v}");
        assert!(v["warning"].is_null(), "session {v}");
    }
    let form = reqwest::blocking::multipart::Form::new().part(
        "f",
        reqwest::blocking::multipart::Part::bytes(b"uploaded bytes".to_vec()).file_name("a.txt"),
    );
    let v: serde_json::Value = client()
        .post(server.url(&format!("/{script}?case=upload")))
        .multipart(form)
        .send()
        .unwrap()
        .bytes()
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap();
    assert_eq!(v["result"]["is_uploaded_file"], true, "{v}");
    assert_eq!(v["result"]["content"], "uploaded bytes", "{v}");
}

#[test]
fn confine_refuses_files_outside_and_keeps_the_app_working_in_classic_mode() {
    // Control: the same reads succeed without --confine, so the refusal below is its doing.
    let open = confined(&[], false);
    let v = probe(
        &open.server,
        "probe.php",
        "case=read&path=../../outside.txt",
    );
    assert_eq!(v["result"], "outside the document root\n", "{v}");
    drop(open);

    let c = confined(&[], true);
    check_confined(&c, "probe.php");
}

#[test]
fn confine_refuses_files_outside_and_keeps_the_app_working_in_worker_mode() {
    let worker = confine_dir().join("public/worker.php");
    let spec = format!("{},1", worker.display());
    let c = confined(&["--worker", &spec], true);
    check_confined(&c, "worker.php");
    // One long-lived worker script served them all (not the classic pool).
    let r = client().get(c.server.url("/worker.php")).send().unwrap();
    let served: u32 = r.headers()["x-worker-requests"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(served > 5, "worker served {served} requests");
}
