//! Routing and path security over real TCP: static files served by Rust (types,
//! validators, 304, ranges, HEAD, precompressed siblings), PHP execution, directory
//! indexes, the front controller, PATH_INFO, and every way of asking for something that
//! must not be served (PHP source, dotfiles, traversal in all encodings, symlinks out).

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::time::Duration;

use common::{exchange, http_root, parse_response, RawResponse, Server};
use serde_json::Value;

const CSS: &str = "body { color: #333; }\n/* routing fixture */\n";
const SECRETS: &[&str] = &[
    "SECRET-OUTSIDE",
    "SECRET-ENV",
    "SECRET-GIT",
    "SECRET-INC",
    "EVIL-RAN",
    "root:x:0:0",
    "<?php",
];

/// A document root in a temp dir with a sibling `outside` dir the server must never reach.
struct Site {
    _tmp: tempfile::TempDir,
    server: Server,
}

fn site_with(front_controller: bool) -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    for script in ["hello.php", "server.php"] {
        fs::copy(http_root().join(script), root.join(script)).unwrap();
    }
    if front_controller {
        fs::copy(http_root().join("index.php"), root.join("index.php")).unwrap();
    }
    fs::write(root.join("sub/index.php"), "<?php echo 'sub index';").unwrap();
    fs::write(root.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    fs::write(root.join("style.css"), CSS).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(root.join("data.bin"), &data).unwrap();
    fs::write(root.join("app.js"), "console.log('identity');").unwrap();
    fs::write(root.join("app.js.gz"), "GZIP-BYTES").unwrap();
    fs::write(root.join(".env"), "SECRET-ENV=1").unwrap();
    fs::write(root.join(".git/config"), "SECRET-GIT").unwrap();
    fs::write(root.join("config.inc"), "<?php // SECRET-INC").unwrap();
    fs::write(outside.join("secret.txt"), "SECRET-OUTSIDE").unwrap();
    fs::write(outside.join("evil.php"), "<?php echo 'EVIL-RAN';").unwrap();
    symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
    symlink(&outside, root.join("outdir")).unwrap();
    symlink(outside.join("evil.php"), root.join("evil.php")).unwrap();
    symlink("/etc/passwd", root.join("passwd.txt")).unwrap();
    symlink(root.join("hello.php"), root.join("source.txt")).unwrap();
    let server = Server::start(&root, &[]);
    Site { _tmp: tmp, server }
}

fn site() -> Site {
    site_with(true)
}

fn get_with(server: &Server, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    server.raw(req.as_bytes())
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text()))
}

fn assert_no_secret(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for s in SECRETS {
        assert!(!text.contains(s), "{what}: response leaks {s:?}: {text}");
    }
}

// ---------------------------------------------------------------------------------------
// Static files
// ---------------------------------------------------------------------------------------

#[test]
fn static_file_with_type_length_and_validators() {
    let s = site();
    let r = s.server.get("/style.css");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, CSS.as_bytes());
    assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
    assert_eq!(
        r.header("content-length"),
        Some(CSS.len().to_string().as_str())
    );
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let etag = r.header("etag").expect("etag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(r.header("last-modified").is_some());
    // Not PHP: no X-Powered-By.
    assert!(r.header("x-powered-by").is_none());

    let r = s.server.get("/data.bin");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.body.len(), 300_000);
    assert!(r
        .body
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i % 251) as u8));
}

#[test]
fn static_conditional_get_gives_304() {
    let s = site();
    let first = s.server.get("/style.css");
    let etag = first.header("etag").unwrap().to_owned();
    let r = get_with(&s.server, "/style.css", &[("If-None-Match", &etag)]);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    let r = get_with(&s.server, "/style.css", &[("If-None-Match", "\"other\"")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, CSS.as_bytes());
    let lm = first.header("last-modified").unwrap().to_owned();
    let r = get_with(&s.server, "/style.css", &[("If-Modified-Since", &lm)]);
    assert_eq!(r.status, 304);
}

#[test]
fn static_range_gives_206() {
    let s = site();
    let r = get_with(&s.server, "/style.css", &[("Range", "bytes=5-9")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &CSS.as_bytes()[5..=9]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 5-9/{}", CSS.len()).as_str())
    );
    assert_eq!(r.header("content-length"), Some("5"));
    let r = get_with(&s.server, "/data.bin", &[("Range", "bytes=-10")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body.len(), 10);
    assert_eq!(r.body[0], (299_990 % 251) as u8);
    let r = get_with(&s.server, "/style.css", &[("Range", "bytes=9999-")]);
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes */{}", CSS.len()).as_str())
    );
}

#[test]
fn static_head_has_headers_and_no_body() {
    let s = site();
    let bytes = exchange(
        s.server.addr,
        b"HEAD /style.css HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let (head, rest) = text.split_once("\r\n\r\n").expect("complete head");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {}", CSS.len())),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains("etag:"), "{head}");
    assert!(rest.is_empty(), "HEAD response has a body: {rest:?}");
}

#[test]
fn static_precompressed_sibling_and_method_not_allowed() {
    let s = site();
    let r = get_with(&s.server, "/app.js", &[("Accept-Encoding", "gzip")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(r.body, b"GZIP-BYTES");
    let r = s.server.get("/app.js");
    assert!(r.header("content-encoding").is_none());
    assert_eq!(r.body, b"console.log('identity');");
    // The .gz sibling itself is an ordinary static file.
    let r = s.server.raw(
        b"POST /style.css HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
}

// ---------------------------------------------------------------------------------------
// PHP routing
// ---------------------------------------------------------------------------------------

#[test]
fn php_file_executes() {
    let s = site();
    let r = s.server.get("/hello.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"Hello, World!");
    // expose_php is off by default (http_security.rs tests turning it back on).
    assert!(r.header("x-powered-by").is_none());
}

#[test]
fn directory_uses_index_php_and_redirects_without_slash() {
    let s = site();
    let r = s.server.get("/sub/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"sub index");
    let r = s.server.get("/sub");
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location"), Some("/sub/"));
    let r = s.server.get("/sub?x=1&y=2");
    assert_eq!(r.header("location"), Some("/sub/?x=1&y=2"));
    let r = s.server.get("/docs/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<h1>docs</h1>");
    // The root directory runs the root index.php.
    let r = s.server.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(json(&r)["SCRIPT_NAME"], "/index.php");
}

#[test]
fn unknown_paths_fall_back_to_the_front_controller() {
    let s = site();
    for (path, uri) in [
        ("/blog/2024/hello?page=2", "/blog/2024/hello?page=2"),
        ("/missing.php", "/missing.php"),
        ("/caf%C3%A9/x", "/caf%C3%A9/x"),
    ] {
        let r = s.server.get(path);
        assert_eq!(r.status, 200, "{path}");
        let v = json(&r);
        assert_eq!(v["script"], "index.php");
        assert_eq!(v["SCRIPT_NAME"], "/index.php");
        assert_eq!(v["REQUEST_URI"], uri);
    }
    let v = json(&s.server.get("/blog/post?page=2"));
    assert_eq!(v["QUERY_STRING"], "page=2");
}

#[test]
fn without_front_controller_unknown_paths_are_404() {
    let s = site_with(false);
    assert_eq!(s.server.get("/blog/2024/hello").status, 404);
    assert_eq!(s.server.get("/missing.php").status, 404);
    assert_eq!(s.server.get("/").status, 404);
    assert_eq!(s.server.get("/hello.php").status, 200);
}

#[test]
fn path_info_is_split_at_dot_php_slash() {
    let s = site();
    let v = json(&s.server.get("/server.php/foo/bar%20baz?q=1"));
    let sv = &v["server"];
    assert_eq!(sv["SCRIPT_NAME"], "/server.php");
    assert_eq!(sv["PATH_INFO"], "/foo/bar baz");
    assert_eq!(sv["PHP_SELF"], "/server.php/foo/bar baz");
    assert_eq!(sv["REQUEST_URI"], "/server.php/foo/bar%20baz?q=1");
    assert_eq!(sv["QUERY_STRING"], "q=1");
    let root = sv["DOCUMENT_ROOT"].as_str().unwrap();
    assert_eq!(sv["PATH_TRANSLATED"], format!("{root}/foo/bar baz"));
    assert_eq!(sv["SCRIPT_FILENAME"], format!("{root}/server.php"));
    // Trailing slash only.
    let v = json(&s.server.get("/server.php/"));
    assert_eq!(v["server"]["PATH_INFO"], "/");
    // The index also takes PATH_INFO.
    let v = json(&s.server.get("/index.php/a/b"));
    assert_eq!(v["PATH_INFO"], "/a/b");
}

// ---------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------

#[test]
fn php_source_is_never_served() {
    let s = site();
    for path in [
        "/hello.php",
        "/hello.php/",
        "/hello.php/x.txt",
        "/%68ello.php",
        "//hello.php",
    ] {
        let r = s.server.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body, b"Hello, World!", "{path}");
    }
    for path in [
        "/config.inc",
        "/source.txt",
        "/hello.php%00.txt",
        "/hello.php%00",
    ] {
        let r = s.server.get(path);
        assert!(matches!(r.status, 400 | 404), "{path}: {}", r.status);
        assert_no_secret(path, &r.body);
    }
}

#[test]
fn dotfiles_are_404() {
    let s = site();
    for path in [
        "/.env",
        "/.git/config",
        "/.git/",
        "/.git",
        "/%2eenv",
        "/%2Egit/config",
        "/sub/.env",
        "/.env/x.php",
    ] {
        let r = s.server.get(path);
        assert_eq!(r.status, 404, "{path}");
        assert_no_secret(path, &r.body);
    }
}

#[test]
fn traversal_in_every_encoding_is_refused() {
    let s = site();
    let paths = [
        "/../outside/secret.txt",
        "/sub/../../outside/secret.txt",
        "/%2e%2e/outside/secret.txt",
        "/%2E%2E/outside/secret.txt",
        "/.%2e/outside/secret.txt",
        "/%2E%2E%2Foutside%2Fsecret.txt",
        "/%2E%2E%2Fetc/passwd",
        "/..%2f..%2f..%2fetc%2fpasswd",
        "/..%5coutside%5csecret.txt",
        "/..\\outside\\secret.txt",
        "/sub\\..\\..\\outside\\secret.txt",
        "/%c0%ae%c0%ae/outside/secret.txt",
        "/%c0%ae%c0%ae%c0%afetc%c0%afpasswd",
        "/%e0%80%ae%e0%80%ae/outside/secret.txt",
        "/outside%00/secret.txt",
        "/secret.txt%00.css",
        "/%zz/../outside/secret.txt",
        "/%zz",
        "/abc%",
        "/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/../../../../../../etc/passwd",
        "/./style.css",
        "/..;/outside/secret.txt",
    ];
    for path in paths {
        let bytes = exchange(
            s.server.addr,
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_no_secret(path, &bytes);
        let r = parse_response(&bytes).unwrap_or_else(|| {
            panic!("{path}: no response: {:?}", String::from_utf8_lossy(&bytes))
        });
        assert!(matches!(r.status, 400 | 404), "{path}: status {}", r.status);
    }
    // Absolute-form targets go through the same checks.
    let r = s.server.raw(
        b"GET http://localhost/../outside/secret.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(matches!(r.status, 400 | 404), "absolute-form: {}", r.status);
    assert_no_secret("absolute-form", &r.body);
    // A raw NUL byte in the request line.
    let bytes = exchange(
        s.server.addr,
        b"GET /style.css\x00/../../outside/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .unwrap_or_default();
    assert_no_secret("raw NUL", &bytes);
    if let Some(r) = parse_response(&bytes) {
        assert_eq!(r.status, 400);
    }
    s.server.assert_alive();
}

#[test]
fn symlinks_leading_outside_the_root_are_404() {
    let s = site();
    for path in [
        "/link.txt",
        "/outdir/secret.txt",
        "/outdir/evil.php",
        "/evil.php",
        "/evil.php/x",
        "/passwd.txt",
        "/source.txt",
    ] {
        let r = s.server.get(path);
        assert_eq!(r.status, 404, "{path}");
        assert_no_secret(path, &r.body);
    }
}

#[test]
fn double_slashes_stay_inside_the_root() {
    let s = site();
    // "//etc/passwd" is "/etc/passwd" under the root: not a file there, so the front
    // controller answers, never the system file.
    let r = s.server.get("//etc/passwd");
    assert_no_secret("//etc/passwd", &r.body);
    assert_eq!(json(&r)["script"], "index.php");
    let r = s.server.get("//style.css");
    assert_eq!(r.body, CSS.as_bytes());
}
