//! Request path → what serves it: a static file, a PHP script (with `PATH_INFO` split off),
//! a redirect to the slash-terminated directory URL, or an error. Owns the path security
//! rules: strict percent-decoding, no dot segments, no encoded separators, no dotfiles or
//! dot-directories among the segments that name files (PATH_INFO is no file), no
//! PHP source or include files served as static content, no file reached through a
//! symlink that leaves the document root or lands on a dotfile, only files whose real name
//! ends in `.php` executed, and never a script inside a no-PHP directory (uploads). The
//! resolution order follows Caddy's `php_server` (as used by FrankenPHP).
//!
//! The `.php` extension is matched per path segment, ignoring ASCII case only: a segment
//! is a script name or not on its own bytes, so no case folding can shift where the
//! script name ends (FrankenPHP once lowercased the whole path with Unicode rules and
//! split the original at an index found in the lowercased copy). A file really named
//! `x.PHP` runs, as under Caddy/FrankenPHP; on a case-sensitive filesystem a request for
//! `x.PHP` never reaches `x.php`.
//!
//! Routing touches the filesystem with blocking `std::fs` calls (a few `stat`s and one
//! `canonicalize`, which is a `readlink` per path component). With a route cache
//! ([`Router::with_cache`]) a decision is reused for a short time, like PHP's own
//! realpath cache, so a hot path costs no system call; without one, every call resolves
//! afresh. Callers on the async runtime accept that cost knowingly: it is a few
//! microseconds, less than a hop to the blocking pool.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Maps request paths onto one canonical document root.
#[derive(Debug, Clone)]
pub struct Router {
    root: PathBuf,
    cache: Option<Arc<RouteCache>>,
    /// Canonical directories (inside the root) where PHP never runs.
    no_php_dirs: Vec<PathBuf>,
    /// A path naming nothing goes to the root's index.php (off for `php-cli -S`, which
    /// has php -S's own fallback).
    front_controller: bool,
}

/// Recent routing decisions by raw request path.
#[derive(Debug)]
struct RouteCache {
    ttl: Duration,
    entries: DashMap<Box<str>, (Route, Instant)>,
}

/// Beyond this many cached paths (a scan of random URLs), start over rather than grow.
const ROUTE_CACHE_MAX_ENTRIES: usize = 16 * 1024;

/// What serves a request path; see [`Router::route`]. Its paths and names are shared:
/// a cached decision is handed to each request for the same path without a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// An existing regular file inside the root that is not PHP: serve it statically.
    /// The path is canonical (symlinks resolved).
    Static(Arc<Path>),
    /// Run a PHP script. `script_filename` is the absolute canonical path of the .php file,
    /// `script_name` its URL path ("/blog/index.php"), `path_info` the decoded remainder
    /// after the script ("/foo/bar" or ""). `document_uri` is what nginx + php-fpm give
    /// as DOCUMENT_URI in the usual setup (`try_files $fastcgi_script_name` rewrites
    /// `$uri`): the script's URL path.
    Php {
        /// SCRIPT_FILENAME.
        script_filename: Arc<Path>,
        /// SCRIPT_NAME.
        script_name: Arc<str>,
        /// PATH_INFO.
        path_info: Arc<str>,
        /// DOCUMENT_URI.
        document_uri: Arc<str>,
    },
    /// A directory requested without trailing slash that has an index: redirect to
    /// path + "/" (keeping the query string is the caller's job).
    RedirectToSlash,
    /// Nothing serves the path.
    NotFound,
    /// A PHP script inside a no-PHP directory: neither run nor served.
    Forbidden,
    /// Malformed or dangerous path; the reason is for logs, clients only see "Bad Request".
    BadRequest(&'static str),
}

/// Extensions that are never served as static content, whatever else is configured: PHP
/// sources and the files they include would leak code and credentials. Only `.php` is
/// ever executed; the legacy `.php3`-`.php8`/`.pht` spellings are hidden as well because
/// some hosts used to execute them, so old trees may contain them.
const NEVER_STATIC: &[&str] = &[
    "php", "phtml", "phps", "phar", "inc", "pht", "php3", "php4", "php5", "php7", "php8",
];

impl Router {
    /// Canonicalizes `document_root`; fails if it does not exist or is not a directory.
    pub fn new(document_root: &Path) -> io::Result<Router> {
        let root = fs::canonicalize(document_root)?;
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("document root {} is not a directory", root.display()),
            ));
        }
        Ok(Router {
            root,
            cache: None,
            no_php_dirs: Vec::new(),
            front_controller: true,
        })
    }

    /// Without the front controller: a path naming no file is [`Route::NotFound`]
    /// instead of the root's index.php.
    pub fn without_front_controller(mut self) -> Router {
        self.front_controller = false;
        self
    }

    /// Directories where PHP never executes (upload folders): a script in one, or below
    /// one, is answered with [`Route::Forbidden`]. Relative paths are taken from the
    /// document root. Each must exist; symlinks are resolved, so a script reached through
    /// a link elsewhere is refused too.
    pub fn with_no_php_dirs(mut self, dirs: &[PathBuf]) -> io::Result<Router> {
        for dir in dirs {
            let canonical = fs::canonicalize(self.root.join(dir)).map_err(|e| {
                io::Error::new(e.kind(), format!("no-PHP directory {}: {e}", dir.display()))
            })?;
            if !fs::metadata(&canonical)?.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("no-PHP directory {} is not a directory", dir.display()),
                ));
            }
            self.no_php_dirs.push(canonical);
        }
        Ok(self)
    }

    /// Reuses each routing decision for `ttl` (zero: no cache). A file created, removed or
    /// re-linked is seen after at most `ttl`.
    pub fn with_cache(mut self, ttl: Duration) -> Router {
        self.cache = (!ttl.is_zero()).then(|| {
            Arc::new(RouteCache {
                ttl,
                entries: DashMap::new(),
            })
        });
        self
    }

    /// The canonical document root.
    pub fn document_root(&self) -> &Path {
        &self.root
    }

    /// Routes `raw_path`, the path component of the request target exactly as received
    /// (percent-encoded, without the query string). Blocking: see the module docs.
    pub fn route(&self, raw_path: &str) -> Route {
        let Some(cache) = &self.cache else {
            return self.resolve(raw_path);
        };
        if let Some(entry) = cache.entries.get(raw_path) {
            if entry.1.elapsed() < cache.ttl {
                return entry.0.clone();
            }
        }
        let route = self.resolve(raw_path);
        if cache.entries.len() >= ROUTE_CACHE_MAX_ENTRIES {
            cache.entries.clear();
        }
        cache
            .entries
            .insert(raw_path.into(), (route.clone(), Instant::now()));
        route
    }

    fn resolve(&self, raw_path: &str) -> Route {
        let uri = match normalize(raw_path) {
            Ok(uri) => uri,
            Err(why) => return Route::BadRequest(why),
        };
        // Normalization guarantees exactly one '/' before each segment, which lets script
        // names and PATH_INFO be taken as slices of `uri` below.
        let segments: Vec<&str> = uri.split('/').filter(|s| !s.is_empty()).collect();

        // The dotfile rule applies to the segments that name files: those up to the
        // script, or all of them when no script takes the path. What follows a script is
        // PATH_INFO, the script's to interpret (`/caldav.php/.well-known/caldav`), as
        // nginx's `fastcgi_split_path_info` hands it over.
        let named_files = segments
            .iter()
            .enumerate()
            .position(|(i, s)| s.starts_with('.') && !(i == 0 && *s == ".well-known"))
            .unwrap_or(segments.len());

        // 1. The first existing `.php` file along the path is the script, the rest is
        //    PATH_INFO.
        let mut fs_path = self.root.clone();
        let mut end = 0;
        for seg in &segments[..named_files] {
            fs_path.push(seg);
            end += 1 + seg.len();
            if !has_extension(seg, "php") {
                continue;
            }
            match fs::metadata(&fs_path) {
                Ok(meta) if meta.is_file() => {
                    return self.php(&fs_path, &uri[..end], &uri[end..]);
                }
                Ok(meta) if meta.is_dir() => {}
                // Nothing below a missing or special file can exist.
                _ => break,
            }
        }
        if named_files < segments.len() {
            return Route::NotFound;
        }

        // 2./3. The full path. `uri` keeps its trailing slash, so a regular file requested
        //    as "file/" fails with ENOTDIR here and falls through, as in nginx and Caddy.
        let full = self.root.join(&uri[1..]);
        match fs::metadata(&full) {
            Ok(meta) if meta.is_file() => return self.static_file(&full),
            Ok(meta) if meta.is_dir() => {
                let index_php = full.join("index.php");
                let index_html = full.join("index.html");
                if !uri.ends_with('/') {
                    if is_file(&index_php) || is_file(&index_html) {
                        return Route::RedirectToSlash;
                    }
                } else if is_file(&index_php) {
                    let script_name = format!("{uri}index.php");
                    return self.php(&index_php, &script_name, "");
                } else if is_file(&index_html) {
                    return self.static_file(&index_html);
                }
            }
            _ => {}
        }

        // 4. Front controller.
        let front = self.root.join("index.php");
        if self.front_controller && is_file(&front) {
            return self.php(&front, "/index.php", "");
        }
        Route::NotFound
    }

    fn php(&self, file: &Path, script_name: &str, path_info: &str) -> Route {
        let Some(script_filename) = self.contained(file) else {
            return Route::NotFound;
        };
        // What runs is the link's target: `x.php` linking to an uploaded `photo.jpg`
        // must not make the photo executable.
        let is_php = script_filename
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| has_extension(n, "php"));
        if !is_php {
            return Route::NotFound;
        }
        if self
            .no_php_dirs
            .iter()
            .any(|dir| script_filename.starts_with(dir))
        {
            return Route::Forbidden;
        }
        let script_name: Arc<str> = script_name.into();
        Route::Php {
            script_filename: script_filename.into(),
            document_uri: script_name.clone(),
            script_name,
            path_info: path_info.into(),
        }
    }

    fn static_file(&self, file: &Path) -> Route {
        if never_static(file) {
            return Route::NotFound;
        }
        match self.contained(file) {
            // The target name matters too: a harmless-looking symlink to a .php file would
            // otherwise publish its source.
            Some(canonical) if !never_static(&canonical) => Route::Static(canonical.into()),
            _ => Route::NotFound,
        }
    }

    /// The canonical path of `file` if it lies inside the document root and, below the
    /// root, names no dotfile or dot-directory (a symlink to `.env` or into `.git` must
    /// not publish it; `.well-known` at the top is allowed, as for request paths). A
    /// no-PHP directory that links out of the root (an upload folder on a data volume, a
    /// one-file package's writable path) counts as inside: its files are data, never run.
    fn contained(&self, file: &Path) -> Option<PathBuf> {
        let canonical = fs::canonicalize(file).ok()?;
        let inside = canonical.strip_prefix(&self.root).ok().or_else(|| {
            self.no_php_dirs
                .iter()
                .find_map(|dir| canonical.strip_prefix(dir).ok())
        })?;
        let hidden = inside.components().enumerate().any(|(i, c)| {
            let name = c.as_os_str().as_encoded_bytes();
            name.starts_with(b".") && !(i == 0 && name == b".well-known")
        });
        (!hidden).then_some(canonical)
    }
}

/// Strictly percent-decodes `raw` and normalizes it: empty segments collapsed, a trailing
/// slash kept. Rejects anything that could change which file a path names once decoded.
pub fn normalize(raw: &str) -> Result<String, &'static str> {
    if !raw.starts_with('/') {
        return Err("path does not start with '/'");
    }
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = match bytes[i] {
            b'%' => {
                let hi = bytes.get(i + 1).and_then(|&c| hex_value(c));
                let lo = bytes.get(i + 2).and_then(|&c| hex_value(c));
                let (Some(hi), Some(lo)) = (hi, lo) else {
                    return Err("invalid percent-encoding");
                };
                i += 3;
                match hi << 4 | lo {
                    // A decoded '/' would be a separator the client hid from proxies and
                    // access rules in front of us.
                    b'/' => return Err("encoded slash"),
                    b => b,
                }
            }
            b => {
                i += 1;
                b
            }
        };
        match b {
            0 => return Err("NUL byte in path"),
            b'\\' => return Err("backslash in path"),
            _ => decoded.push(b),
        }
    }
    // Strict UTF-8 also rejects overlong encodings such as %c0%ae ('.').
    let decoded = String::from_utf8(decoded).map_err(|_| "path is not valid UTF-8")?;
    if decoded.split('/').any(|s| s == "." || s == "..") {
        return Err("dot segment in path");
    }
    if !decoded.contains("//") {
        return Ok(decoded);
    }
    let mut collapsed = String::with_capacity(decoded.len());
    for seg in decoded.split('/').filter(|s| !s.is_empty()) {
        collapsed.push('/');
        collapsed.push_str(seg);
    }
    if decoded.ends_with('/') {
        collapsed.push('/');
    }
    Ok(collapsed)
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn has_extension(name: &str, ext: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, e)| e.eq_ignore_ascii_case(ext))
}

fn never_static(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        // Not UTF-8: cannot be one of the listed names, but also cannot be checked; refuse.
        return true;
    };
    // `index.php.` and `index.php ` are other files on Linux, never executed, but they
    // name PHP source all the same (and are index.php itself on Windows filesystems).
    let name = name.trim_end_matches(['.', ' ']);
    NEVER_STATIC.iter().any(|ext| has_extension(name, ext))
}

fn is_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _root: tempfile::TempDir,
        _outside: tempfile::TempDir,
        router: Router,
    }

    fn fixture() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = root.path();
        let write = |rel: &str| {
            let p = r.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, rel).unwrap();
        };
        for f in [
            "index.php",
            "app.php",
            "Upper.PHP",
            "sub/index.php",
            "docs/index.html",
            "assets/style.css",
            ".env",
            ".git/config",
            ".well-known/acme.txt",
            ".hidden/x.php",
            "dir/.env",
            "README.inc",
            "SHOUT.INC",
            "page.phtml",
            "lib.phar",
            "dir.php/file.txt",
        ] {
            write(f);
        }
        fs::create_dir(r.join("empty")).unwrap();
        fs::write(outside.path().join("evil.php"), "<?php").unwrap();
        symlink("/etc/passwd", r.join("passwd")).unwrap();
        symlink(outside.path().join("evil.php"), r.join("evil.php")).unwrap();
        symlink(outside.path(), r.join("outdir")).unwrap();
        symlink(r.join("assets/style.css"), r.join("link.css")).unwrap();
        symlink("app.php", r.join("source.txt")).unwrap();
        let router = Router::new(r).unwrap();
        Fixture {
            _root: root,
            _outside: outside,
            router,
        }
    }

    impl Fixture {
        fn root(&self) -> &Path {
            self.router.document_root()
        }

        /// The expected route; `_uri` names the request for readability (DOCUMENT_URI is
        /// always the script's URL path).
        fn php(&self, script: &str, name: &str, info: &str, _uri: &str) -> Route {
            Route::Php {
                script_filename: self.root().join(script).into(),
                script_name: name.into(),
                path_info: info.into(),
                document_uri: name.into(),
            }
        }

        fn front(&self, uri: &str) -> Route {
            self.php("index.php", "/index.php", "", uri)
        }
    }

    fn is_bad(route: Route) -> bool {
        matches!(route, Route::BadRequest(_))
    }

    #[test]
    fn root_is_canonical_and_must_be_a_directory() {
        let f = fixture();
        assert_eq!(f.root(), fs::canonicalize(f.root()).unwrap());
        assert!(Router::new(&f.root().join("app.php")).is_err());
        assert!(Router::new(&f.root().join("missing")).is_err());
    }

    #[test]
    fn rejects_paths_not_starting_with_slash() {
        let f = fixture();
        for p in ["", "index.php", "*", "http://x/"] {
            assert!(is_bad(f.router.route(p)), "{p}");
        }
    }

    #[test]
    fn rejects_traversal_in_every_encoding() {
        let f = fixture();
        for p in [
            "/../etc/passwd",
            "/..",
            "/.",
            "/./index.php",
            "/assets/../index.php",
            "/%2e%2e/etc/passwd",
            "/%2E%2e%2fetc",
            "/a/%2E%2E/b",
            "/a/.%2e/b",
            "/..%5cetc",
            "/..\\etc",
            "/assets\\style.css",
            "/%c0%ae%c0%ae/etc/passwd",
            "/%ff",
            "/a%00b",
            "/a\0b",
            "/a%2fb",
            "/a%2Fb",
            "/%zz",
            "/abc%2",
            "/abc%",
            "/%g1",
        ] {
            assert!(is_bad(f.router.route(p)), "{p:?}");
        }
    }

    #[test]
    fn dot_dot_semicolon_is_not_traversal() {
        // Tomcat-style "..;" is an ordinary name here, not a parent reference. It starts
        // with a dot, so the dotfile rule answers 404; without the dot it is just a path.
        let f = fixture();
        assert_eq!(f.router.route("/..;/etc/passwd"), Route::NotFound);
        assert_eq!(
            f.router.route("/x..;/etc/passwd"),
            f.front("/x..;/etc/passwd")
        );
    }

    #[test]
    fn dotfiles_are_never_served() {
        let f = fixture();
        for p in [
            "/.env",
            "/.git/config",
            "/.git/",
            "/%2eenv",
            "/%2Egit/config",
            "/sub/.htaccess",
            "/.well-known/.hidden",
            "/sub/.well-known/acme.txt",
            "/.env/x.php",
        ] {
            assert_eq!(f.router.route(p), Route::NotFound, "{p}");
        }
        assert_eq!(
            f.router.route("/.well-known/acme.txt"),
            Route::Static(f.root().join(".well-known/acme.txt").into())
        );
    }

    #[test]
    fn path_info_after_a_script_may_start_with_a_dot() {
        // RFC 6764 discovery through the script (DAViCal's `caldav.php`), handed to it as
        // nginx's `fastcgi_split_path_info` does: the dot segments are PATH_INFO, no file.
        let f = fixture();
        assert_eq!(
            f.router.route("/app.php/.well-known/caldav"),
            f.php("app.php", "/app.php", "/.well-known/caldav", "")
        );
        assert_eq!(
            f.router.route("/sub/index.php/.git/config"),
            f.php("sub/index.php", "/sub/index.php", "/.git/config", "")
        );
        assert_eq!(
            f.router.route("/Upper.PHP/%2Ehidden/"),
            f.php("Upper.PHP", "/Upper.PHP", "/.hidden/", "")
        );
        // The segments that name files still may not: a dotfile, a dot-directory on the
        // way to a script (with or without PATH_INFO), a linked one, and a directory
        // named like a script is no script to take PATH_INFO.
        let r = f.root();
        symlink(r.join(".hidden/x.php"), r.join("linked.php")).unwrap();
        for p in [
            "/.git/config",
            "/dir/.env",
            "/.htaccess",
            "/sub/.htaccess",
            "/.hidden/x.php",
            "/.hidden/x.php/info",
            "/sub/.hidden/x.php",
            "/linked.php",
            "/linked.php/.well-known/caldav",
            "/dir.php/.env",
            "/missing.php/.well-known/caldav",
            "/.well-known/.hidden",
        ] {
            assert_eq!(f.router.route(p), Route::NotFound, "{p}");
        }
    }

    #[test]
    fn a_cached_decision_is_shared_with_each_request_not_copied() {
        let f = fixture();
        let router = Router::new(f.root())
            .unwrap()
            .with_cache(Duration::from_secs(60));
        let (
            Route::Php {
                script_filename: a_file,
                script_name: a_name,
                path_info: a_info,
                document_uri: a_uri,
            },
            Route::Php {
                script_filename: b_file,
                script_name: b_name,
                path_info: b_info,
                document_uri: b_uri,
            },
        ) = (router.route("/app.php/x"), router.route("/app.php/x"))
        else {
            panic!("not a script");
        };
        assert!(Arc::ptr_eq(&a_file, &b_file));
        assert!(Arc::ptr_eq(&a_name, &b_name));
        assert!(Arc::ptr_eq(&a_info, &b_info));
        assert!(Arc::ptr_eq(&a_uri, &b_uri) && Arc::ptr_eq(&a_uri, &a_name));
        let (Route::Static(a), Route::Static(b)) = (
            router.route("/assets/style.css"),
            router.route("/assets/style.css"),
        ) else {
            panic!("not a file");
        };
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn php_sources_and_includes_are_never_static() {
        let f = fixture();
        for p in ["/README.inc", "/SHOUT.INC", "/page.phtml", "/lib.phar"] {
            assert_eq!(f.router.route(p), Route::NotFound, "{p}");
        }
        // A symlink with an innocent name still exposes a .php target: refused.
        assert_eq!(f.router.route("/source.txt"), Route::NotFound);
    }

    #[test]
    fn static_files_and_percent_decoding() {
        let f = fixture();
        let css = Route::Static(f.root().join("assets/style.css").into());
        assert_eq!(f.router.route("/assets/style.css"), css);
        assert_eq!(f.router.route("/%61ssets/style%2Ecss"), css);
        assert_eq!(f.router.route("//assets///style.css"), css);
        // A file with a trailing slash is not the file (ENOTDIR): front controller.
        assert_eq!(
            f.router.route("/assets/style.css/"),
            f.front("/assets/style.css/")
        );
    }

    #[test]
    fn symlinks_must_stay_inside_the_root() {
        let f = fixture();
        assert_eq!(f.router.route("/passwd"), Route::NotFound);
        assert_eq!(f.router.route("/evil.php"), Route::NotFound);
        assert_eq!(f.router.route("/evil.php/x"), Route::NotFound);
        // Through a symlinked directory that points outside the root.
        assert_eq!(f.router.route("/outdir/evil.php"), Route::NotFound);
        assert_eq!(
            f.router.route("/link.css"),
            Route::Static(f.root().join("assets/style.css").into())
        );
    }

    #[test]
    fn php_scripts_and_path_info() {
        let f = fixture();
        assert_eq!(
            f.router.route("/app.php"),
            f.php("app.php", "/app.php", "", "/app.php")
        );
        assert_eq!(
            f.router.route("/index.php/foo/bar"),
            f.php("index.php", "/index.php", "/foo/bar", "/index.php/foo/bar")
        );
        assert_eq!(
            f.router.route("/app.php/"),
            f.php("app.php", "/app.php", "/", "/app.php/")
        );
        assert_eq!(
            f.router.route("/app.php//a%20b//c/"),
            f.php("app.php", "/app.php", "/a b/c/", "/app.php/a b/c/")
        );
        assert_eq!(
            f.router.route("/sub/index.php/x.php"),
            f.php(
                "sub/index.php",
                "/sub/index.php",
                "/x.php",
                "/sub/index.php/x.php"
            )
        );
        // A directory named like a script is walked through, not executed.
        assert_eq!(
            f.router.route("/dir.php/file.txt"),
            Route::Static(f.root().join("dir.php/file.txt").into())
        );
        // A .php segment that does not exist is not a script: front controller.
        assert_eq!(f.router.route("/missing.php/x"), f.front("/missing.php/x"));
    }

    #[test]
    fn only_real_php_files_run_and_links_never_reach_dotfiles() {
        let f = fixture();
        let r = f.root();
        fs::write(r.join("photo.jpg"), "<?php").unwrap();
        symlink(r.join("photo.jpg"), r.join("photo.php")).unwrap();
        symlink(r.join(".env"), r.join("env.txt")).unwrap();
        symlink(r.join(".git"), r.join("gitdir")).unwrap();
        fs::write(r.join("index.php."), "<?php").unwrap();
        fs::write(r.join("index.php "), "<?php").unwrap();
        for p in [
            "/photo.php",
            "/photo.php/x",
            "/env.txt",
            "/gitdir/config",
            "/index.php.",
            "/index.php%20",
        ] {
            assert_eq!(f.router.route(p), Route::NotFound, "{p}");
        }
    }

    #[test]
    fn no_php_dirs_refuse_scripts_but_serve_static_files() {
        let f = fixture();
        let r = f.root();
        fs::create_dir(r.join("uploads")).unwrap();
        fs::write(r.join("uploads/evil.php"), "<?php").unwrap();
        fs::write(r.join("uploads/a.txt"), "a").unwrap();
        symlink(r.join("uploads/evil.php"), r.join("linked.php")).unwrap();
        let router = Router::new(r)
            .unwrap()
            .with_no_php_dirs(&[PathBuf::from("uploads")])
            .unwrap();
        for p in ["/uploads/evil.php", "/uploads/evil.php/x", "/linked.php"] {
            assert_eq!(router.route(p), Route::Forbidden, "{p}");
        }
        assert_eq!(
            router.route("/uploads/a.txt"),
            Route::Static(r.join("uploads/a.txt").into())
        );
        assert_eq!(
            router.route("/app.php"),
            f.php("app.php", "/app.php", "", "")
        );
        assert!(Router::new(r)
            .unwrap()
            .with_no_php_dirs(&[PathBuf::from("missing")])
            .is_err());
    }

    #[test]
    fn a_no_php_dir_linking_out_of_the_root_serves_its_files_and_runs_nothing() {
        // A package's writable upload folder: a link from the root to the data directory.
        let f = fixture();
        let r = f.root();
        let data = tempfile::tempdir().unwrap();
        let uploads = data.path().canonicalize().unwrap();
        fs::write(uploads.join("photo.txt"), "p").unwrap();
        fs::write(uploads.join("evil.php"), "<?php").unwrap();
        fs::create_dir(uploads.join(".hidden")).unwrap();
        fs::write(uploads.join(".hidden/x.txt"), "x").unwrap();
        symlink(&uploads, r.join("uploads")).unwrap();
        // Without the declaration, outside is outside.
        assert_eq!(f.router.route("/uploads/photo.txt"), Route::NotFound);
        let router = Router::new(r)
            .unwrap()
            .with_no_php_dirs(&[PathBuf::from("uploads")])
            .unwrap();
        assert_eq!(
            router.route("/uploads/photo.txt"),
            Route::Static(uploads.join("photo.txt").into())
        );
        assert_eq!(router.route("/uploads/evil.php"), Route::Forbidden);
        assert_eq!(router.route("/uploads/.hidden/x.txt"), Route::NotFound);
        // Other links out of the root stay refused.
        assert_eq!(router.route("/outdir/evil.php"), Route::NotFound);
        assert_eq!(router.route("/passwd"), Route::NotFound);
    }

    #[test]
    fn php_extension_is_case_insensitive() {
        let f = fixture();
        assert_eq!(
            f.router.route("/Upper.PHP/info"),
            f.php("Upper.PHP", "/Upper.PHP", "/info", "/Upper.PHP/info")
        );
        assert_eq!(
            f.router.route("/Upper.PHP"),
            f.php("Upper.PHP", "/Upper.PHP", "", "/Upper.PHP")
        );
    }

    #[test]
    fn directories() {
        let f = fixture();
        assert_eq!(f.router.route("/sub"), Route::RedirectToSlash);
        assert_eq!(f.router.route("/docs"), Route::RedirectToSlash);
        assert_eq!(
            f.router.route("/sub/"),
            f.php("sub/index.php", "/sub/index.php", "", "/sub/index.php")
        );
        assert_eq!(
            f.router.route("/docs/"),
            Route::Static(f.root().join("docs/index.html").into())
        );
        assert_eq!(
            f.router.route("/"),
            f.php("index.php", "/index.php", "", "/index.php")
        );
        // No index: the front controller handles it, with or without slash.
        assert_eq!(f.router.route("/empty"), f.front("/empty"));
        assert_eq!(f.router.route("/empty/"), f.front("/empty/"));
    }

    #[test]
    fn front_controller_fallback() {
        let f = fixture();
        assert_eq!(
            f.router.route("/blog/2024/hello"),
            f.front("/blog/2024/hello")
        );
        assert_eq!(f.router.route("/caf%C3%A9"), f.front("/café"));
    }

    #[test]
    fn not_found_without_front_controller() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("a.txt"), "a").unwrap();
        fs::create_dir(root.path().join("d")).unwrap();
        let router = Router::new(root.path()).unwrap();
        assert_eq!(router.route("/missing"), Route::NotFound);
        assert_eq!(router.route("/"), Route::NotFound);
        assert_eq!(router.route("/d"), Route::NotFound);
        assert!(matches!(router.route("/a.txt"), Route::Static(_)));
    }
}
