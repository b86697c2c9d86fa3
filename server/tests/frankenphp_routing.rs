//! FrankenPHP's Caddy module tests that exercise `php_server` routing and workers
//! (`caddy/caddy_test.go`), translated to ferrophp's configuration: the document root
//! with `index.php` as front controller is `php_server`; a `[[worker]]` table with `match`
//! is a worker's `match` directive; `-e`/`[env]` is the `env` subdirective. Scripts:
//! `test-data/frankenphp/routing/`. Over TCP against the real binary.

mod common;

use std::path::{Path, PathBuf};

use common::{KeepAlive, Server};
use serde_json::Value;

fn routing() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/routing")
        .canonicalize()
        .expect("test-data/frankenphp/routing exists")
}

fn public() -> PathBuf {
    routing().join("public")
}

fn with_config(root: &Path, toml: &str, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferrophp.toml");
    std::fs::write(&path, toml).unwrap();
    let mut args = vec!["--config", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    (Server::start(root, &args), dir)
}

/// The `NAME: value` lines the front controller prints.
fn vars(text: &str) -> std::collections::HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

// TestPHP and Caddy's TestWorker (100 parallel requests to index.php, classic then with a
// worker), TestPHPServerDirective (/, a static file, an unknown path),
// TestPHPServerDirectiveDisableFileServer (the front controller for what is not a file).
#[test]
fn php_server_front_controller_static_files_and_fallback() {
    let index = public().join("index.php");
    let spec = format!("{},2", index.display());
    for args in [vec![], vec!["--worker", spec.as_str()]] {
        let server = Server::start(&public(), &args);
        let mode = if args.is_empty() { "classic" } else { "worker" };
        std::thread::scope(|s| {
            for t in 0..8 {
                let server = &server;
                s.spawn(move || {
                    let mut conn = KeepAlive::connect(server.addr).unwrap();
                    for i in (t..40).step_by(8) {
                        let r = conn.get(&format!("/index.php?i={i}")).unwrap();
                        assert!(
                            r.text().starts_with(&format!("Front controller ({i})\n")),
                            "{mode}: {}",
                            r.text()
                        );
                    }
                });
            }
        });
        let r = server.get("/");
        assert!(
            r.text().starts_with("Front controller (i not set)"),
            "{mode}"
        );
        let r = server.get("/hello.txt");
        assert_eq!((r.status, r.text().as_str()), (200, "Hello\n"), "{mode}");
        let r = server.get("/not-found.txt");
        assert_eq!(r.status, 200, "{mode}");
        assert!(
            r.text().starts_with("Front controller (i not set)"),
            "{mode}"
        );
    }
}

// TestPHPServerGlobals and TestWorkerPHPServerGlobals (sites 1 and 2): a path that names
// no file goes to the front controller without PATH_INFO; an explicit script keeps its
// path info.
#[test]
fn php_server_globals_for_the_front_controller_and_path_info() {
    let index = public().join("index.php");
    let spec = format!("{},1", index.display());
    let root = public().display().to_string();
    let file = index.display().to_string();
    for args in [vec![], vec!["--worker", spec.as_str()]] {
        let server = Server::start(&public(), &args);
        let v = vars(&server.get("/en").text());
        for (k, want) in [
            ("SCRIPT_NAME", "/index.php"),
            ("SCRIPT_FILENAME", file.as_str()),
            ("PHP_SELF", "/index.php"),
            ("DOCUMENT_ROOT", root.as_str()),
            ("DOCUMENT_URI", "/index.php"),
            ("REQUEST_URI", "/en"),
        ] {
            assert_eq!(v.get(k).map(String::as_str), Some(want), "{args:?} /en {k}");
        }
        assert_eq!(
            v.get("PATH_INFO").map(String::as_str),
            Some(""),
            "{args:?}: empty PATH_INFO"
        );
        let v = vars(&server.get("/index.php/en").text());
        for (k, want) in [
            ("SCRIPT_NAME", "/index.php"),
            ("PHP_SELF", "/index.php/en"),
            ("PATH_INFO", "/en"),
            ("DOCUMENT_URI", "/index.php"),
            ("REQUEST_URI", "/index.php/en"),
        ] {
            assert_eq!(
                v.get(k).map(String::as_str),
                Some(want),
                "{args:?} /index.php/en {k}"
            );
        }
    }
}

// TestWorkerMatchDirective: a worker outside the root, reached through `match`; static
// files are still served; other paths are 404 (no front controller in that root).
// TestWorkerMatchDirectiveWithMultipleWorkers: two matched workers side by side.
#[test]
fn matched_workers_outside_the_root_and_side_by_side() {
    let toml = format!(
        "[[worker]]\nscript = \"{}\"\nthreads = 1\nmatch = \"/matched-path*\"\n\n\
         [[worker]]\nscript = \"{}\"\nthreads = 1\nmatch = \"/index/*\"\n",
        routing().join("counter.php").display(),
        public().join("index.php").display()
    );
    let (server, _dir) = with_config(&routing().join("files"), &toml, &[]);
    assert_eq!(server.get("/matched-path").text(), "requests:1");
    assert_eq!(server.get("/matched-path/anywhere").text(), "requests:2");
    assert!(server
        .get("/index/sub-path")
        .text()
        .starts_with("Front controller (i not set)"));
    assert_eq!(server.get("/elsewhere").status, 404);
    let r = server.get("/static.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "A static file\n"));
}

// Caddy's TestEnv / TestJsonEnv: the server's env (FrankenPHP's request `env`) in each
// request's $_SERVER, the worker's own env in its boot $_SERVER. FOO=baz for requests,
// FOO=bar at boot: "bazbar" upstream.
#[test]
fn server_env_for_requests_and_worker_env_for_the_boot() {
    let dual = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/dual")
        .canonicalize()
        .unwrap();
    let toml = format!(
        "[env]\nFOO = \"baz\"\n\n[[worker]]\nscript = \"{}\"\nthreads = 1\nenv = {{ FOO = \"bar\" }}\n",
        dual.join("worker-env.php").display()
    );
    let (server, _dir) = with_config(&dual, &toml, &[]);
    let v: Value = serde_json::from_slice(&server.get("/worker-env.php").body).unwrap();
    assert_eq!(v["boot"], "bar", "{v}");
    // FrankenPHP: "baz" (the request env wins in requests). ferrophp: the worker's own
    // env wins over the server's, in its requests too; see docs/frankenphp-compat.md.
    assert_eq!(v["request"], "bar", "{v}");
}

// TestAllDefinedServerVars, minus what only Caddy's rewrite and Go's lenient request-target
// parsing give: the CGI set for a POST with path info, Basic auth for a user with an empty
// password, an empty header and odd characters in a header value.
#[test]
fn all_defined_server_vars() {
    let server = Server::start(&public(), &[]);
    let port = server.port();
    let req = format!(
        "POST /all-vars.php/path?specialChars=%3E%00 HTTP/1.1\r\nHost: localhost:{port}\r\n\
         Authorization: Basic dXNlcjo=\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 7\r\nSpecial-Chars: <%00>\r\nX-Empty-Header:\r\nConnection: close\r\n\r\nfoo=bar"
    );
    let v: Value = serde_json::from_slice(&server.raw(req.as_bytes()).body).unwrap();
    let root = public().display().to_string();
    let want = serde_json::json!({
        "CONTENT_LENGTH": "7", "HTTP_CONTENT_LENGTH": "7",
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "HTTP_CONTENT_TYPE": "application/x-www-form-urlencoded",
        "HTTP_SPECIAL_CHARS": "<%00>", "DOCUMENT_ROOT": root, "DOCUMENT_URI": "/all-vars.php",
        "GATEWAY_INTERFACE": "CGI/1.1", "HTTP_HOST": format!("localhost:{port}"), "HTTPS": "",
        "PATH_INFO": "/path", "REMOTE_ADDR": "127.0.0.1", "PHP_SELF": "/all-vars.php/path",
        "REMOTE_HOST": "127.0.0.1", "REQUEST_SCHEME": "http",
        "SCRIPT_FILENAME": public().join("all-vars.php").display().to_string(),
        "SCRIPT_NAME": "/all-vars.php", "SERVER_NAME": "localhost",
        "SERVER_PORT": port.to_string(), "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_SOFTWARE": format!("ferrophp/{}", env!("CARGO_PKG_VERSION")),
        // FrankenPHP: "" for these three; unset here as with nginx + php-fpm.
        "SSL_PROTOCOL": null, "AUTH_TYPE": null, "REMOTE_IDENT": null,
        "PATH_TRANSLATED": format!("{root}/path"),
        "QUERY_STRING": "specialChars=%3E%00", "REMOTE_USER": "user", "REQUEST_METHOD": "POST",
        "REQUEST_URI": "/all-vars.php/path?specialChars=%3E%00", "HTTP_X_EMPTY_HEADER": "",
        "body": "foo=bar",
    });
    assert_eq!(v, want);
    // Upstream's raw `\`, `<` and `>` in the request target: refused before PHP (RFC 3986
    // does not allow them there; clients percent-encode them).
    let r = server.raw(
        b"GET /all-vars.php?specialChars=%3E\\x00%00</> HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);
}

// TestPHPIniConfiguration / TestPHPIniBlockConfiguration: ini settings from the command
// line and from the config file, seen by a worker and by classic pages.
#[test]
fn ini_settings_from_flags_and_the_config_file() {
    let dual = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/frankenphp/dual")
        .canonicalize()
        .unwrap();
    let toml = format!(
        "[ini]\nupload_max_filesize = \"100M\"\n\n[[worker]]\nscript = \"{}\"\nthreads = 1\n",
        dual.join("ini.php").display()
    );
    let (server, _dir) = with_config(&dual, &toml, &["-d", "memory_limit=10000000"]);
    for path in [
        "/ini.php?key=upload_max_filesize",
        "/ini.php?key=memory_limit",
    ] {
        let want = if path.ends_with("filesize") {
            "upload_max_filesize:100M"
        } else {
            "memory_limit:10000000"
        };
        assert_eq!(server.get(path).text(), want, "worker");
    }
    let classic = Server::start(&dual, &["-d", "upload_max_filesize=100M"]);
    assert_eq!(
        classic.get("/ini.php?key=upload_max_filesize").text(),
        "upload_max_filesize:100M"
    );
}

// TestWorkerRestart: a worker script that ends itself every 3 requests is booted again and
// every request is answered.
#[test]
fn a_worker_that_ends_every_few_requests_serves_them_all() {
    let toml_match = format!(
        "[[worker]]\nscript = \"{}\"\nthreads = 1\nmatch = \"/restart*\"\nenv = {{ EVERY = \"3\" }}\n",
        routing().join("restart-every.php").display()
    );
    let (server, _dir) = with_config(&public(), &toml_match, &[]);
    let mut conn = KeepAlive::connect(server.addr).unwrap();
    for i in 0..10 {
        let r = conn.get(&format!("/restart?i={i}")).unwrap();
        assert_eq!((r.status, r.text()), (200, format!("Counter ({i})")));
    }
    // The log is read from the server's stderr by another thread: give it a moment.
    common::wait_until(std::time::Duration::from_secs(5), || {
        server.stderr().matches("booting it again").count() >= 3
    });
    let log = server.stderr();
    let boots: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("booting it again"))
        .collect();
    assert!(boots.len() >= 3, "{} restarts:\n{log}", boots.len());
    // Ending with status 0 after the loop is a planned restart: INFO, not a warning (a
    // crash is WARN: frankenphp_worker.rs a_worker_crash_is_logged_as_a_warning_...).
    assert!(boots.iter().all(|l| l.contains(" INFO ")), "{log}");
}

// TestSymlinkWorkerPaths and TestSymlinkResolveRoot (resolve_root_symlink true, FrankenPHP's
// default and ferrophp's only behaviour): a document root that is a symlink, with the worker
// named through it (neighbouring and nested scripts); DOCUMENT_ROOT is the resolved path.
// TestSymlinkWorkerBehavior/MultipleRequests: the worker counts on.
#[test]
fn a_symlinked_root_and_workers_named_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("nested")).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("public")).unwrap();
    let counter = "<?php\n$n = 0;\nwhile (frankenphp_handle_request(static function () use (&$n): void {\n    echo 'Request: ', $n++, ' ', $_SERVER['DOCUMENT_ROOT'];\n})) {\n}\n";
    std::fs::write(real.join("index.php"), counter).unwrap();
    std::fs::write(real.join("nested/index.php"), counter).unwrap();
    let public = dir.path().join("public");
    let top = format!("{},1", public.join("index.php").display());
    let nested = format!("{},1", public.join("nested/index.php").display());
    let server = Server::start(&public, &["--worker", &top, "--worker", &nested]);
    let resolved = real.canonicalize().unwrap().display().to_string();
    for n in 0..3 {
        assert_eq!(
            server.get("/index.php").text(),
            format!("Request: {n} {resolved}")
        );
        assert_eq!(
            server.get("/nested/index.php").text(),
            format!("Request: {n} {resolved}")
        );
    }
}

// TestWorkerPHPServerGlobals, site 3: a catch-all matched worker serves paths that name no
// script, so SCRIPT_NAME, PHP_SELF and PATH_INFO are empty, SCRIPT_FILENAME is the worker
// and DOCUMENT_ROOT the site's root. (Upstream also leaves DOCUMENT_URI empty; ours is the
// request path.)
#[test]
fn a_catch_all_matched_worker_has_no_script_name() {
    let toml = format!(
        "[[worker]]\nscript = \"{}\"\nthreads = 1\nmatch = \"*\"\n",
        public().join("index.php").display()
    );
    let root = routing().join("files");
    let (server, _dir) = with_config(&root, &toml, &[]);
    let file = public().join("index.php").display().to_string();
    let root_text = root.display().to_string();
    for path in ["/en", "/index.php/en"] {
        let v = vars(&server.get(path).text());
        for (k, want) in [
            ("SCRIPT_NAME", ""),
            ("PHP_SELF", ""),
            ("PATH_INFO", ""),
            ("SCRIPT_FILENAME", file.as_str()),
            ("DOCUMENT_ROOT", root_text.as_str()),
            ("DOCUMENT_URI", path),
            ("REQUEST_URI", path),
        ] {
            assert_eq!(v.get(k).map(String::as_str), Some(want), "{path} {k}");
        }
    }
}
