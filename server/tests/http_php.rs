//! The PHP contract over HTTP: status and headers exactly as the script set them,
//! redirects, request headers, superglobals ($_GET, $_POST, $_COOKIE, $_REQUEST, $_FILES
//! with move_uploaded_file), php://input, the full CGI set in $_SERVER, and the reflection
//! of the functions and classes ferrophp adds.

mod common;

use std::io::{BufReader, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{client, connect, encode, http_root, read_response, RawResponse, Server};
use serde_json::Value;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

fn server() -> Server {
    Server::start(&http_root(), &[])
}

#[test]
fn status_and_headers_exactly_as_set() {
    let s = server();
    let r = s.get("/headers.php");
    assert_eq!(r.status, 201);
    assert_eq!(r.headers_all("x-single"), ["two"], "replace=true replaces");
    assert_eq!(
        r.headers_all("x-multi"),
        ["a", "b"],
        "replace=false appends"
    );
    assert!(r.header("x-removed").is_none(), "header_remove()");
    assert!(
        r.header("x-late").is_none(),
        "header() after output must not apply"
    );
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let cookies = r.headers_all("set-cookie");
    assert_eq!(cookies.len(), 3, "{cookies:?}");
    assert_eq!(cookies[0], "first=1");
    assert!(
        cookies[1].starts_with("second=two%20words"),
        "{}",
        cookies[1]
    );
    assert!(cookies[1].contains("path=/sub"), "{}", cookies[1]);
    assert!(cookies[1].contains("HttpOnly"), "{}", cookies[1]);
    assert_eq!(cookies[2], "third=3; Path=/");
    assert_eq!(r.text(), "before=false\nafter=true\ndone\n");
}

#[test]
fn header_lines_that_are_not_http_and_a_scripts_content_length() {
    let s = server();
    let ours = |r: &RawResponse| -> Vec<(String, String)> {
        r.headers
            .iter()
            .filter(|(n, _)| n.starts_with("x-") || n == "set-cookie" || n == "content-type")
            .cloned()
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    // Invalid lines are dropped, the others keep their order (a repeated name lists its
    // values together, at its first place); the body is complete, so its real length
    // replaces the script's.
    let r = s.get("/header_edges.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "complete");
    assert_eq!(
        ours(&r),
        pairs(&[
            ("x-first", "1"),
            ("set-cookie", "a=1"),
            ("set-cookie", "b=2"),
            ("x-middle", "m"),
            ("x-last", "z"),
            ("content-type", "text/plain;charset=UTF-8"),
        ]),
        "{:?}",
        r.headers
    );
    assert_eq!(r.headers_all("content-length"), ["8"], "{:?}", r.headers);
    assert!(r.header("bad name").is_none() && r.header("x-bad-value").is_none());
    // Streamed: the script's own Content-Length frames the body.
    let r = s.get("/header_edges.php?stream=1");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "streamed");
    assert_eq!(r.headers_all("content-length"), ["8"], "{:?}", r.headers);
    assert!(r.header("transfer-encoding").is_none(), "{:?}", r.headers);
    // More lines than a response takes (16384): the rest are dropped, the response still
    // goes out (hyper can add its own headers, `connection: close` here), the server
    // lives on.
    let r = s.get("/header_edges.php?many=40000");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "many");
    assert_eq!(r.header("x-n0"), Some("v"));
    assert_eq!(r.header("x-n16383"), Some("v"));
    assert!(r.header("x-n16384").is_none());
    assert_eq!(r.header("connection"), Some("close"));
    s.assert_alive();
}

#[test]
fn content_types_as_set_request_after_request() {
    // Each PHP thread reuses the Content-Type values it sent last (a few of them): more
    // types than it keeps, in turns, each response still has its own.
    let s = Server::start(&http_root(), &["--threads", "1"]);
    let types = [
        "text/plain",
        "application/json",
        "text/css",
        "image/png",
        "text/csv",
        "application/xml",
    ];
    for round in 0..3 {
        for t in types.iter().chain(types.iter().rev()) {
            let r = s.get(&format!("/content_type.php?t={}", encode(t)));
            assert_eq!(r.text(), "ok");
            let sent = r.header("content-type").unwrap_or_default();
            assert!(
                sent == *t || sent.starts_with(&format!("{t};")),
                "round {round}: asked for {t}, got {sent}"
            );
        }
        let r = s.get("/content_type.php");
        assert_eq!(r.header("content-type"), Some("text/html; charset=UTF-8"));
    }
}

#[test]
fn redirects_carry_location_and_status() {
    let s = server();
    let r = s.get("/redirect.php");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/hello.php?from=redirect"));
    for code in [301, 303, 307, 308] {
        let r = s.get(&format!("/redirect.php?code={code}"));
        assert_eq!(r.status, code);
        assert_eq!(r.header("location"), Some("/hello.php?from=redirect"));
    }
    // Followed by a real client.
    let c = common::client_builder()
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap();
    let r = c.get(s.url("/redirect.php")).send().unwrap();
    assert_eq!(r.url().path(), "/hello.php");
    assert_eq!(r.text().unwrap(), "Hello, World!");
}

#[test]
fn getallheaders_and_apache_request_headers() {
    let s = server();
    let r = s.raw(
        b"GET /request_headers.php HTTP/1.1\r\nHost: localhost\r\nX-Custom-Thing: custom value\r\n\
          x-dup: a\r\nX-Dup: b\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let v = json(&r.body);
    for key in ["getallheaders", "apache_request_headers"] {
        let h = &v[key];
        assert_eq!(h["X-Custom-Thing"], "custom value", "{key}: {h}");
        assert_eq!(h["X-Dup"], "a, b", "{key}: {h}");
        assert_eq!(h["Host"], "localhost", "{key}: {h}");
        assert_eq!(h["Accept"], "text/plain", "{key}: {h}");
    }
}

#[test]
fn get_post_cookie_and_request_superglobals() {
    let s = server();
    let body = "p=2&a=post&list%5B%5D=1&list%5B%5D=2";
    let r = s.raw(
        format!(
            "POST /vars.php?a=1&arr[]=x&arr[]=y&enc=h%C3%A9llo+w HTTP/1.1\r\nHost: localhost\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Cookie: c1=v1; c2=v%20two\r\nCookie: c3=three\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200);
    let v = json(&r.body);
    assert_eq!(v["method"], "POST");
    assert_eq!(v["get"]["a"], "1");
    assert_eq!(v["get"]["arr"], serde_json::json!(["x", "y"]));
    assert_eq!(v["get"]["enc"], "héllo w");
    assert_eq!(v["post"]["p"], "2");
    assert_eq!(v["post"]["a"], "post");
    assert_eq!(v["post"]["list"], serde_json::json!(["1", "2"]));
    assert_eq!(v["cookie"]["c1"], "v1");
    assert_eq!(v["cookie"]["c2"], "v two");
    assert_eq!(
        v["cookie"]["c3"], "three",
        "several Cookie headers are all parsed"
    );
    // $_REQUEST merges GET then POST: POST wins.
    assert_eq!(v["request"]["a"], "post");
    assert_eq!(v["request"]["p"], "2");
    assert_eq!(v["request"]["enc"], "héllo w");
}

#[test]
fn multipart_upload_fills_files_and_move_uploaded_file_works() {
    let s = server();
    let dest = tempfile::tempdir().unwrap();
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let form = reqwest::blocking::multipart::Form::new()
        .text("title", "my upload")
        .part(
            "doc",
            reqwest::blocking::multipart::Part::bytes(payload.clone())
                .file_name("payload.bin")
                .mime_str("application/octet-stream")
                .unwrap(),
        )
        .part(
            "notes",
            reqwest::blocking::multipart::Part::text("just text\n")
                .file_name("notes.txt")
                .mime_str("text/plain")
                .unwrap(),
        );
    let url = s.url(&format!(
        "/upload.php?dir={}",
        encode(dest.path().to_str().unwrap())
    ));
    let r = client().post(url).multipart(form).send().unwrap();
    assert_eq!(r.status(), 200);
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["post"]["title"], "my upload");
    let doc = &v["files"]["doc"];
    assert_eq!(doc["name"], "payload.bin");
    assert_eq!(doc["type"], "application/octet-stream");
    assert_eq!(doc["size"], payload.len());
    assert_eq!(doc["error"], 0);
    for field in ["doc", "notes"] {
        let m = &v["moved"][field];
        assert_eq!(m["is_uploaded_file"], true, "{field}: {m}");
        assert_eq!(m["moved"], true, "{field}: {m}");
        assert_eq!(m["tmp_gone"], true, "{field}: {m}");
    }
    assert_eq!(
        std::fs::read(dest.path().join("payload.bin")).unwrap(),
        payload
    );
    assert_eq!(
        std::fs::read(dest.path().join("notes.txt")).unwrap(),
        b"just text\n"
    );
}

#[test]
fn php_input_holds_a_json_body() {
    let s = server();
    let body = r#"{"k":"v","n":[1,2,3],"u":"é"}"#;
    let r = client()
        .post(s.url("/input.php"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let v = json(&r.bytes().unwrap());
    assert_eq!(v["length"], body.len());
    assert_eq!(
        v["decoded"],
        serde_json::json!({"k":"v","n":[1,2,3],"u":"é"})
    );
    assert_eq!(v["again_equal"], true, "php://input can be read twice");
    assert_eq!(v["content_type"], "application/json");
    assert_eq!(v["post"], serde_json::json!([]));

    // Chunked (no Content-Length) bodies reach php://input as well.
    let r = s.raw(
        b"POST /input.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{\"a\":\r\n3\r\n42}\r\n0\r\n\r\n",
    );
    let v = json(&r.body);
    assert_eq!(v["decoded"], serde_json::json!({"a": 42}));
}

fn request_server_vars(s: &Server, raw: &str) -> (Value, u16) {
    let stream = connect(s.addr);
    let client_port = stream.local_addr().unwrap().port();
    let mut writer = stream.try_clone().unwrap();
    writer.write_all(raw.as_bytes()).unwrap();
    let r: RawResponse = read_response(&mut BufReader::new(stream), false).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    (json(&r.body), client_port)
}

#[test]
fn server_superglobal_has_the_full_cgi_set() {
    let s = Server::start(
        &http_root(),
        &[
            "--env",
            "FERRO_TEST_ENV=from-flag",
            "--env",
            "FERRO_OTHER=a=b",
        ],
    );
    let body = "q=1";
    // "user:p@ss:word" in base64.
    let raw = format!(
        "POST /server.php/extra/path?x=1&y=%20z HTTP/1.1\r\nHost: example.test:8443\r\n\
         User-Agent: ferro-test/1.0\r\nX-Dup: a\r\nX-Dup: b\r\n\
         Authorization: Basic dXNlcjpwQHNzOndvcmQ=\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Cookie: a=1\r\nProxy: http://evil.example/\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (v, client_port) = request_server_vars(&s, &raw);
    let after = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let sv = &v["server"];
    let root = http_root().to_str().unwrap().to_owned();
    let expected = [
        ("REQUEST_METHOD", "POST".to_owned()),
        (
            "REQUEST_URI",
            "/server.php/extra/path?x=1&y=%20z".to_owned(),
        ),
        ("QUERY_STRING", "x=1&y=%20z".to_owned()),
        ("SCRIPT_NAME", "/server.php".to_owned()),
        ("SCRIPT_FILENAME", format!("{root}/server.php")),
        ("PHP_SELF", "/server.php/extra/path".to_owned()),
        ("PATH_INFO", "/extra/path".to_owned()),
        ("PATH_TRANSLATED", format!("{root}/extra/path")),
        ("DOCUMENT_ROOT", root.clone()),
        // As nginx + php-fpm give it (try_files rewrites $uri to the script).
        ("DOCUMENT_URI", "/server.php".to_owned()),
        ("SERVER_NAME", "example.test".to_owned()),
        ("SERVER_PORT", s.port().to_string()),
        ("SERVER_ADDR", "127.0.0.1".to_owned()),
        ("SERVER_PROTOCOL", "HTTP/1.1".to_owned()),
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
        ("REMOTE_ADDR", "127.0.0.1".to_owned()),
        ("REMOTE_PORT", client_port.to_string()),
        ("REQUEST_SCHEME", "http".to_owned()),
        (
            "CONTENT_TYPE",
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("CONTENT_LENGTH", "3".to_owned()),
        ("HTTP_HOST", "example.test:8443".to_owned()),
        ("HTTP_USER_AGENT", "ferro-test/1.0".to_owned()),
        ("HTTP_X_DUP", "a, b".to_owned()),
        ("HTTP_COOKIE", "a=1".to_owned()),
        ("PHP_AUTH_USER", "user".to_owned()),
        ("PHP_AUTH_PW", "p@ss:word".to_owned()),
        ("FERRO_TEST_ENV", "from-flag".to_owned()),
        ("FERRO_OTHER", "a=b".to_owned()),
    ];
    let mut wrong = Vec::new();
    for (key, want) in &expected {
        if sv[key] != Value::String(want.clone()) {
            wrong.push(format!("{key}: want {want:?}, got {}", sv[key]));
        }
    }
    assert!(wrong.is_empty(), "{}\n$_SERVER = {sv:#}", wrong.join("\n"));
    assert!(
        sv["SERVER_SOFTWARE"]
            .as_str()
            .is_some_and(|v| v.starts_with("ferrophp")),
        "{}",
        sv["SERVER_SOFTWARE"]
    );
    // Defined and empty on plain HTTP, as FrankenPHP defines it.
    assert_eq!(sv["HTTPS"], "", "HTTPS on plain HTTP");
    assert_eq!(
        sv["REMOTE_HOST"], sv["REMOTE_ADDR"],
        "REMOTE_HOST is the address"
    );
    assert!(
        sv.get("HTTP_PROXY").is_none(),
        "httpoxy: Proxy header must not become HTTP_PROXY"
    );
    let t = sv["REQUEST_TIME"].as_i64().expect("REQUEST_TIME is an int");
    assert!(
        (before.floor() as i64..=after.ceil() as i64).contains(&t),
        "{t}"
    );
    let tf = sv["REQUEST_TIME_FLOAT"]
        .as_f64()
        .expect("REQUEST_TIME_FLOAT is a float");
    assert!(tf >= before - 1.0 && tf <= after + 1.0, "{tf}");
    assert_eq!(v["getenv"], "from-flag", "getenv() sees --env");
}

/// As FrankenPHP's classic mode: with `E` in variables_order, `$_ENV` holds the process
/// environment and the configured `--env` entries (which win), so it agrees with
/// getenv(); `--clear-env` keeps only `$_SERVER` to the configured env.
#[test]
fn env_superglobal_has_the_configured_env_when_variables_order_has_e() {
    let env_of = |s: &Server, name: &str| {
        let (v, _) = request_server_vars(
            s,
            &format!(
                "GET /server.php?env={name} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            ),
        );
        (v["env_superglobal"].clone(), v["getenv"].clone())
    };
    let flags = [
        "--env",
        "FERRO_TEST_ENV=from-flag",
        "--env",
        "FERRO_SHADOWED=from-flag",
        "-d",
        "variables_order=EGPCS",
    ];
    let process = [
        ("FERRO_PROCESS_ONLY", "from-process"),
        ("FERRO_SHADOWED", "from-process"),
    ];
    for clear in [false, true] {
        let mut args = flags.to_vec();
        if clear {
            args.push("--clear-env");
        }
        let s = Server::start_with_env(&http_root(), &args, &process);
        for (name, want) in [
            ("FERRO_TEST_ENV", "from-flag"),
            ("FERRO_SHADOWED", "from-flag"),
            ("FERRO_PROCESS_ONLY", "from-process"),
        ] {
            let (env, getenv) = env_of(&s, name);
            assert_eq!(env, want, "$_ENV[{name}] (clear-env {clear})");
            assert_eq!(getenv, want, "getenv({name}) (clear-env {clear})");
        }
    }
    // The production default GPCS leaves $_ENV empty, as PHP does.
    let s = Server::start(&http_root(), &flags[..4]);
    assert_eq!(env_of(&s, "FERRO_TEST_ENV").0, Value::Null);
}

#[test]
fn server_vars_without_optional_parts() {
    let s = server();
    let (v, _) = request_server_vars(
        &s,
        "GET /server.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    let sv = &v["server"];
    assert_eq!(sv["REQUEST_METHOD"], "GET");
    assert_eq!(sv["REQUEST_URI"], "/server.php");
    assert_eq!(sv["QUERY_STRING"], "");
    assert_eq!(sv["PATH_INFO"].as_str().unwrap_or(""), "");
    assert!(sv.get("PATH_TRANSLATED").is_none() || sv["PATH_TRANSLATED"] == sv["SCRIPT_FILENAME"]);
    assert_eq!(sv["PHP_SELF"], "/server.php");
    assert_eq!(sv["SERVER_NAME"], "localhost");
    assert!(sv.get("PHP_AUTH_USER").is_none());
    assert_eq!(v["getenv"], Value::Null, "unset variable");
}

#[test]
fn status_lines_fatal_errors_and_exit() {
    let s = server();
    let r = s.get("/status.php?code=404&line=1");
    assert_eq!(r.status, 404);
    assert_eq!(r.text(), "status 404");
    let r = s.get("/status.php?code=418");
    assert_eq!(r.status, 418);
    let r = s.get("/status.php?code=204");
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    // An uncaught exception: 500, nothing displayed, the error in the log.
    let r = s.get("/status.php?throw=1");
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        !r.text().contains("ferrophp-uncaught-marker"),
        "error displayed: {}",
        r.text()
    );
    assert!(s.wait_for_stderr(
        "Uncaught RuntimeException: ferrophp-uncaught-marker",
        std::time::Duration::from_secs(3)
    ));
    // exit() ends the script normally, output kept.
    let r = s.get("/status.php?exit=3");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "before exit");
    s.assert_alive();
}

#[test]
fn sessions_persist_through_the_cookie() {
    let s = server();
    let c = common::client_builder().cookie_store(true).build().unwrap();
    for expected in 1..=3 {
        let r = c.get(s.url("/session.php")).send().unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().unwrap(), expected.to_string());
    }
    // A client without the cookie starts over.
    let r = client().get(s.url("/session.php")).send().unwrap();
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .starts_with("PHPSESSID="));
    assert_eq!(r.text().unwrap(), "1");
}

/// The declarations of every PHP function, class, constant and ini entry ferrophp adds,
/// as PHP's own reflection prints them (`ReflectionFunction`, `ReflectionExtension`: what
/// `php --rf` and `--re` show): names, parameters, defaults, nullability, by-reference
/// parameters, return types, flags. They come from arginfo that PHP's gen_stub.php
/// generates out of `worker/stubs` and `cache/stubs`; `test-data/reflection/expected.txt`
/// holds what the hand-written tables they replaced showed (but for `apcu_store()` and
/// `apcu_add()`, whose `$value` default now reads `<default>`, as APCu's own). A change
/// to a stub shows here; `FERROPHP_BLESS=1` rewrites the file after a deliberate one.
#[test]
fn reflection_of_the_functions_and_classes_we_add_is_as_recorded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/reflection");
    let s = Server::start(&root, &[]);
    let r = s.get("/index.php");
    assert_eq!(r.status, 200, "{}", s.stderr());
    let actual = r.text();
    let expected_path = root.join("expected.txt");
    if std::env::var_os("FERROPHP_BLESS").is_some() {
        std::fs::write(&expected_path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "reflection differs from {} from line {}:\n  now:      {:?}\n  recorded: {:?}\n\
             full output:\n{actual}",
            expected_path.display(),
            first + 1,
            actual.lines().nth(first),
            expected.lines().nth(first),
        );
    }
}
