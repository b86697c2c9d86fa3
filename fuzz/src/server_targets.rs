//! Fuzz targets over the server's own parsers and transforms, written against
//! `ferrophp_server::fuzzing` (the server library's entry points for fuzzing), so the
//! same file compiles in the fuzz crate and in `server/tests/fuzz_replay.rs`.
//!
//! - [`routing`]: request path → [`Route`] over a fixture tree full of traps (dotfiles,
//!   PHP sources, symlinks out of the root and onto non-PHP files, a no-PHP directory,
//!   odd names), with and without a front controller and with the route cache. Every
//!   file's first bytes say what it may become: `PUBLIC` static, `<?php` script, `SECRET`
//!   never served.
//! - [`headers`]: request header lines → the header-name filter → `$_SERVER` names: no two
//!   kept names share a CGI variable, PHP keeps every name verbatim, repeated values join
//!   as a plain join; and `strip_port` on the Host value.
//! - [`config`]: TOML text → the config file struct → resolved settings, plus the
//!   `--worker` and `KEY=VALUE` flag parsers.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ferrophp_server::fuzzing::{
    drop_ambiguous_headers, normalize, split_key_value, strip_port, FileConfig, Route, Router,
    ServeArgs, ServeConfig, WorkerSpec,
};

struct Fixture {
    _dirs: Vec<tempfile::TempDir>,
    /// (router, canonical root, canonical no-PHP dir, has a front controller)
    routers: Vec<(Router, PathBuf, Option<PathBuf>, bool)>,
}

const PUBLIC: &str = "PUBLIC";
const SECRET: &str = "SECRET";
const SCRIPT: &str = "<?php // script";

/// The tree under every fixture root: (path, contents). Directories are implied.
const FILES: &[(&str, &str)] = &[
    ("a.php", SCRIPT),
    ("A.txt", PUBLIC),
    ("static.txt", PUBLIC),
    ("sp ace.txt", PUBLIC),
    ("caf\u{e9}.php", SCRIPT),
    ("caf\u{e9}.txt", PUBLIC),
    ("x.php.txt", PUBLIC),
    ("y.txt.php", SCRIPT),
    ("t.php.", SECRET),
    ("t2.php ", SECRET),
    ("src.phps", SECRET),
    ("lib.inc", SECRET),
    ("old.php5", SECRET),
    ("tpl.phtml", SECRET),
    ("app.phar", SECRET),
    ("semi;.php", SCRIPT),
    ("pct%2e.php", SCRIPT),
    (".env", SECRET),
    (".git/config", SECRET),
    (".hidden/x.php", SECRET),
    (".hidden/x.txt", SECRET),
    (".well-known/acme.txt", PUBLIC),
    (".well-known/.secret", SECRET),
    ("dir/index.php", SCRIPT),
    ("dir/b.PHP", SCRIPT),
    ("dir/page.html", PUBLIC),
    ("dir/sub/c.php", SCRIPT),
    ("dir/sub/.d.php", SECRET),
    ("html/index.html", PUBLIC),
    ("dirphp.php/inner.php", SCRIPT),
    ("dirphp.php/note.txt", PUBLIC),
    ("up/shell.php", SCRIPT),
    ("up/img.png", PUBLIC),
    ("up/deep/s.php", SCRIPT),
];

/// (link, target relative to the link's directory, or absolute with `{out}`).
const LINKS: &[(&str, &str)] = &[
    ("link.php", "static.txt"),
    ("img.png", "a.php"),
    ("env.txt", ".env"),
    ("gitcfg", ".git/config"),
    ("out", "{out}"),
    ("out.php", "{out}/o.php"),
    ("out.txt", "{out}/secret.txt"),
    ("dir/up.php", "../up/shell.php"),
    ("uplink", "up"),
    ("loop", "loop"),
];

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let outside = tempfile::tempdir().expect("tempdir");
        fs::write(outside.path().join("secret.txt"), SECRET).unwrap();
        fs::write(outside.path().join("o.php"), SECRET).unwrap();
        let mut dirs = vec![];
        let mut routers = vec![];
        for (front, no_php, cache) in [
            (false, true, false),
            (true, false, false),
            (true, true, true),
        ] {
            let root = tempfile::tempdir().expect("tempdir");
            let r = root.path();
            for (path, contents) in FILES {
                let p = r.join(path);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, contents).unwrap();
            }
            for (link, target) in LINKS {
                let target = target.replace("{out}", &outside.path().to_string_lossy());
                symlink(target, r.join(link)).unwrap();
            }
            if front {
                fs::write(r.join("index.php"), SCRIPT).unwrap();
            }
            let mut router = Router::new(r).unwrap();
            let canonical = router.document_root().to_path_buf();
            let mut no_php_dir = None;
            if no_php {
                router = router.with_no_php_dirs(&[PathBuf::from("up")]).unwrap();
                no_php_dir = Some(canonical.join("up"));
            }
            if cache {
                router = router.with_cache(Duration::from_secs(3600));
            }
            routers.push((router, canonical, no_php_dir, front));
            dirs.push(root);
        }
        dirs.push(outside);
        Fixture {
            _dirs: dirs,
            routers,
        }
    })
}

/// Whether a canonical path below `root` names a dotfile or dot-directory (other than a
/// top-level `.well-known`).
fn hidden_below(root: &Path, path: &Path) -> bool {
    let inside = path.strip_prefix(root).expect("inside the root");
    inside.components().enumerate().any(|(i, c)| {
        let name = c.as_os_str().as_encoded_bytes();
        name.starts_with(b".") && !(i == 0 && name == b".well-known")
    })
}

fn starts_with_file(path: &Path, prefix: &str) -> bool {
    fs::read(path).is_ok_and(|b| b.starts_with(prefix.as_bytes()))
}

/// Checks [`normalize`] on its own: what it returns is a clean absolute path that
/// normalizes to itself (when it holds no `%` left to decode).
fn check_normalize(raw: &str) -> Result<String, &'static str> {
    let norm = normalize(raw);
    if let Ok(n) = &norm {
        assert!(n.starts_with('/'), "{raw:?} -> {n:?}");
        assert!(!n.contains("//"), "{raw:?} -> {n:?}");
        assert!(!n.contains('\0') && !n.contains('\\'), "{raw:?} -> {n:?}");
        assert!(
            !n.split('/').any(|s| s == "." || s == ".."),
            "{raw:?} -> {n:?}"
        );
        assert_eq!(
            raw.ends_with('/') || raw.ends_with("%2f") || raw.ends_with("%2F"),
            n.ends_with('/'),
            "trailing slash of {raw:?} -> {n:?}"
        );
        if !n.contains('%') {
            assert_eq!(normalize(n).as_deref(), Ok(n.as_str()), "not idempotent");
        }
    }
    norm
}

/// The routing target: `data` as a request path (UTF-8 only: hyper hands over `&str`).
pub fn routing(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let norm = check_normalize(raw);
    let fx = fixture();
    for (router, root, no_php, front) in &fx.routers {
        let route = router.route(raw);
        // Twice: the cached router must give the same answer from its cache.
        assert_eq!(route, router.route(raw), "{raw:?}: second answer differs");
        check_route(raw, &norm, &route, root, no_php.as_deref(), *front);
    }
}

fn check_route(
    raw: &str,
    norm: &Result<String, &'static str>,
    route: &Route,
    root: &Path,
    no_php: Option<&Path>,
    front: bool,
) {
    let ctx = || format!("{raw:?} -> {route:?}");
    match route {
        Route::BadRequest(_) => assert!(norm.is_err(), "{}", ctx()),
        _ => assert!(norm.is_ok(), "{}: normalize failed but routed", ctx()),
    }
    let Ok(n) = norm else { return };
    match route {
        Route::Static(p) => {
            assert!(p.starts_with(root), "{}: outside the root", ctx());
            assert!(!hidden_below(root, p), "{}: hidden file served", ctx());
            assert!(p.is_file(), "{}", ctx());
            assert!(
                starts_with_file(p, PUBLIC),
                "{}: serves a file that is not public",
                ctx()
            );
        }
        Route::Php {
            script_filename,
            script_name,
            path_info,
            document_uri,
        } => {
            assert!(script_filename.starts_with(root), "{}: outside", ctx());
            assert!(!hidden_below(root, script_filename), "{}", ctx());
            assert!(
                starts_with_file(script_filename, SCRIPT),
                "{}: runs a file that is not a script",
                ctx()
            );
            let name = script_filename.file_name().unwrap().to_str().unwrap();
            assert!(
                name.rsplit_once('.')
                    .is_some_and(|(_, e)| e.eq_ignore_ascii_case("php")),
                "{}",
                ctx()
            );
            if let Some(dir) = no_php {
                assert!(!script_filename.starts_with(dir), "{}: no-PHP dir", ctx());
            }
            assert_eq!(document_uri, script_name, "{}", ctx());
            assert!(script_name.starts_with('/'), "{}", ctx());
            assert!(
                path_info.is_empty() || path_info.starts_with('/'),
                "{}",
                ctx()
            );
            let split = format!("{script_name}{path_info}") == *n;
            let index = path_info.is_empty() && **script_name == *format!("{n}index.php");
            let front_ctl = front && path_info.is_empty() && &**script_name == "/index.php";
            assert!(
                split || index || front_ctl,
                "{}: names do not add up",
                ctx()
            );
            // The script name names the file that runs.
            let named = fs::canonicalize(root.join(&script_name[1..])).ok();
            assert_eq!(named.as_deref(), Some(&**script_filename), "{}", ctx());
        }
        Route::Forbidden => assert!(no_php.is_some(), "{}", ctx()),
        Route::RedirectToSlash => assert!(!n.ends_with('/'), "{}", ctx()),
        // With a front controller, only a hidden path or a file that must not be served
        // or run (along the path) ends in NotFound.
        Route::NotFound => assert!(
            !front || hides(n) || names_a_file(root, n),
            "{}: front controller",
            ctx()
        ),
        Route::BadRequest(_) => {}
    }
    if hides(n) {
        // A dot segment only ever reaches a script as its PATH_INFO: the segments that
        // name files (up to the script) hide nothing.
        match route {
            Route::Php { script_name, .. } => {
                assert!(!hides(script_name), "{}: hidden script", ctx())
            }
            _ => assert_eq!(*route, Route::NotFound, "{}: hidden path", ctx()),
        }
    }
}

/// Whether some prefix of the normalized path `n` (segment-wise) is an existing file or
/// an unresolvable link.
fn names_a_file(root: &Path, n: &str) -> bool {
    let mut p = root.to_path_buf();
    n.split('/').filter(|s| !s.is_empty()).any(|seg| {
        p.push(seg);
        match fs::metadata(&p) {
            Ok(meta) => meta.is_file(),
            Err(_) => fs::symlink_metadata(&p).is_ok(),
        }
    })
}

/// A normalized path with a dot segment (other than a leading `.well-known`).
fn hides(n: &str) -> bool {
    n.split('/')
        .filter(|s| !s.is_empty())
        .enumerate()
        .any(|(i, s)| s.starts_with('.') && !(i == 0 && s == ".well-known"))
}

/// The headers target: `data` as header lines `name: value` (or `name` alone), then a
/// last line used as a Host value.
pub fn headers(data: &[u8]) {
    let mut map = http::HeaderMap::new();
    let mut last = &data[..0];
    for line in data.split(|&b| b == b'\n') {
        last = line;
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (&line[..i], line[i + 1..].trim_ascii_start()),
            None => (line, &b""[..]),
        };
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name),
            http::HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        if map.len() < 1000 {
            map.append(name, value);
        }
    }
    let before: Vec<http::HeaderName> = map.keys().cloned().collect();
    drop_ambiguous_headers(&mut map);
    let plain = |n: &http::HeaderName| {
        n.as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    for name in &before {
        assert_eq!(
            map.contains_key(name),
            plain(name),
            "filter kept/dropped {name}"
        );
    }
    let mut vars = std::collections::HashMap::new();
    for name in map.keys() {
        let hv = worker::fuzzing::header_variable(name.as_str());
        assert!(hv.verbatim, "PHP would mangle {hv:?}");
        assert!(
            hv.var[5..]
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "{hv:?}"
        );
        if let Some(other) = vars.insert(hv.var.clone(), name.clone()) {
            panic!("{other} and {name} both become {}", hv.var);
        }
    }
    worker::fuzzing::join_values(&map);
    worker::fuzzing::header_names(data);

    if let Ok(host) = std::str::from_utf8(last) {
        let stripped = strip_port(host);
        let rest = &host[stripped.len()..];
        assert!(host.starts_with(stripped), "{host:?}");
        assert!(
            rest.is_empty() || (rest.starts_with(':') && !rest.contains(']')),
            "strip_port({host:?}) = {stripped:?}"
        );
        if !host.contains(':') {
            assert_eq!(stripped, host);
        }
    }
}

/// The config target: `data` as the TOML text of a config file, then resolved over the
/// defaults; each line also through the `--worker` and `KEY=VALUE` flag parsers.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines() {
        if let Ok(spec) = WorkerSpec::parse_flag(line) {
            assert!(spec.max_requests.is_none() && spec.match_path.is_none());
            let script = spec.script.to_str().unwrap();
            assert!(line.starts_with(script), "{line:?} -> {spec:?}");
        }
        if let Ok((k, v)) = split_key_value(line, "--env") {
            assert!(!k.is_empty() && k == k.trim(), "{line:?}");
            assert!(line.ends_with(&format!("={v}")), "{line:?}");
        }
    }
    let Ok(file) = FileConfig::parse(text) else {
        return;
    };
    let Ok(cfg) = ServeConfig::resolve(ServeArgs::default(), file) else {
        return;
    };
    assert!(cfg.threads >= 1);
    assert!(cfg.max_header_size >= 8192);
    assert!(cfg.root.is_dir());
    let a = cfg.metrics.relative_accuracy;
    assert!(a > 0.0 && a < 1.0, "relative accuracy {a}");
    if let Some(push) = &cfg.metrics_push {
        assert!(push.url.starts_with("http://"));
        assert!(!push.interval.is_zero() && push.buffer >= 1);
    }
    let d = cfg.deadlines;
    assert!(!matches!(d.request_timeout, Some(t) if t.is_zero()));
    assert!(d.retire_grace >= std::time::Duration::from_millis(100));
    assert!(!matches!(d.slowlog, Some(s) if s.is_zero()));
}
