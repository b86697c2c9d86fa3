//! The standalone release (issue 14): `dist/ferrophp-<version>-php<PHP>-linux-x86_64.tar.gz`, made
//! by `scripts/release.sh` (scripts/test.sh runs it before the suite), unpacked into a
//! fresh directory, moved once more, and run from there with no LD_LIBRARY_PATH, no PHP
//! environment and nothing loaded from the build cache: php.ini and conf.d next to the
//! binary, OPcache on, a classic page and a worker page served, every library resolved,
//! the tree running inside a bare Debian 12 base system (chroot into a debootstrap
//! minbase), and the PECL loadables the tree ships (APCu, igbinary, redis, built by
//! scripts/build-pecl.sh with the tree's own phpize): off by default, each loaded with
//! `-d extension=` in php-cli and in the server in classic and worker mode, doing one real
//! thing (redis against a real redis-server this test starts on a private unix socket,
//! one connection kept by a worker across its requests),
//! and the real APCu replacing the built-in `apcu_*` layer when a user enables it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::{wait_until, Server};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The tree, unpacked in one temporary directory and then moved to another.
struct Tree {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
}

fn unpack_and_move() -> Tree {
    let first = tempfile::tempdir().unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(common::release_tarball())
        .arg("-C")
        .arg(first.path())
        .status()
        .unwrap();
    assert!(st.success());
    let unpacked = std::fs::read_dir(first.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let second = tempfile::tempdir().unwrap();
    let root = second.path().join("moved-ferrophp");
    std::fs::rename(&unpacked, &root).unwrap();
    Tree {
        _dirs: (first, second),
        root,
    }
}

/// A command with the environment a fresh shell would have: none of PHP's or the
/// loader's variables, no FERROPHP_* settings.
fn clean(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("LD_") || k.starts_with("PHP") || k.starts_with("FERROPHP_") {
            cmd.env_remove(&key);
        }
    }
    cmd
}

fn run(cmd: &mut Command) -> Output {
    let out = clean(cmd).output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn build_cache_prefix() -> String {
    let out = Command::new(repo().join("scripts/setup.sh"))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

const PROBE: &str = r#"<?php
echo json_encode([
    'ini' => php_ini_loaded_file(),
    'scanned' => php_ini_scanned_files(),
    'extension_dir' => ini_get('extension_dir'),
    'opcache' => extension_loaded('Zend OPcache'),
    'expose_php' => ini_get('expose_php'),
    'apcu' => extension_loaded('apcu') ? phpversion('apcu') : false,
    'apcu_fetch' => function_exists('apcu_store') && apcu_store('k', [1, 2]) ? apcu_fetch('k') : null,
]);
"#;

fn probe(tree: &Path, extra: &[&str]) -> serde_json::Value {
    let script = tree.join("probe.php");
    std::fs::write(&script, PROBE).unwrap();
    let out = run(Command::new(tree.join("ferrophp"))
        .arg("php-cli")
        .args(extra)
        .arg(&script));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn moved_tree_finds_its_own_php_ini_conf_d_and_extensions() {
    let tree = unpack_and_move();
    let v = probe(&tree.root, &[]);
    let root = tree.root.to_string_lossy().into_owned();
    assert_eq!(v["ini"], format!("{root}/php.ini"), "{v}");
    assert!(
        v["scanned"]
            .as_str()
            .unwrap()
            .contains(&format!("{root}/conf.d/10-opcache.ini")),
        "{v}"
    );
    assert!(
        v["extension_dir"].as_str().unwrap().starts_with(&root),
        "{v}"
    );
    assert_eq!(v["opcache"], true, "{v}");
    assert_eq!(v["expose_php"], "", "production php.ini: {v}");

    // PHP's own search order still applies: -c, PHPRC, PHP_INI_SCAN_DIR.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("php.ini"), "memory_limit=77M\n").unwrap();
    let script = tree.root.join("mem.php");
    std::fs::write(
        &script,
        "<?php echo ini_get('memory_limit'), '|', php_ini_loaded_file();",
    )
    .unwrap();
    let exe = tree.root.join("ferrophp");
    let out = run(Command::new(&exe)
        .args(["php-cli", "-c"])
        .arg(other.path())
        .arg(&script));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("77M|{}/php.ini", other.path().display())
    );
    let out = run(clean(&mut Command::new(&exe))
        .env("PHPRC", other.path())
        .args(["php-cli"])
        .arg(&script));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("77M|"));
    let out = run(clean(&mut Command::new(&exe))
        .env("PHP_INI_SCAN_DIR", other.path())
        .args(["php-cli"])
        .arg(&script));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("77M|"),
        "scan dir honoured"
    );
}

/// Serves a site of two pages from the tree's own binary: `page.php` classic, and
/// `worker.php` as a one-thread worker whose handler runs `handler_body`.
fn serve_site(tree: &Tree, page: &str, handler_body: &str) -> Server {
    serve_site_with(tree, page, handler_body, &[])
}

/// [`serve_site`] with more `ferrophp serve` arguments (`-d extension=...`).
fn serve_site_with(tree: &Tree, page: &str, handler_body: &str, extra: &[&str]) -> Server {
    let site = tree.root.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("page.php"), format!("<?php {page}")).unwrap();
    std::fs::write(
        site.join("worker.php"),
        format!("<?php while (frankenphp_handle_request(function () {{ {handler_body} }})) {{}}"),
    )
    .unwrap();
    let spec = format!("{},1", site.join("worker.php").display());
    let mut args = vec!["--worker", spec.as_str()];
    args.extend_from_slice(extra);
    Server::start_binary(
        &tree.root.join("ferrophp"),
        &site,
        &args,
        &[("LD_LIBRARY_PATH", "")],
    )
}

#[test]
fn moved_tree_serves_classic_and_worker_pages_without_the_build_cache() {
    let tree = unpack_and_move();
    let server = serve_site(
        &tree,
        "echo 'Hello, World!';",
        "$GLOBALS['n'] = ($GLOBALS['n'] ?? 0) + 1; echo 'worker ', $GLOBALS['n'];",
    );
    let r = server.get("/page.php");
    assert_eq!((r.status, r.text().as_str()), (200, "Hello, World!"));
    assert_eq!(server.get("/worker.php").text(), "worker 1");
    assert_eq!(server.get("/worker.php").text(), "worker 2");

    // Every mapped library comes from the tree or the system, never the build cache.
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server.pid())).unwrap();
    let cache = build_cache_prefix();
    assert!(
        !maps.contains(&cache),
        "a file of the build cache is mapped"
    );
    // PHP is inside the binary: no libphp.so anywhere, and OPcache (a shared extension
    // that needs the engine's symbols) came from the tree's own extension dir.
    assert!(!maps.contains("libphp.so"), "a libphp.so is mapped");
    let opcache = format!("{}/lib/php/extensions/", tree.root.display());
    assert!(
        maps.lines()
            .any(|l| l.contains(&opcache) && l.ends_with("opcache.so")),
        "OPcache is not the tree's"
    );
}

#[test]
fn every_library_resolves_and_the_tree_runs_on_a_bare_debian_12() {
    let tree = unpack_and_move();
    let out = run(Command::new("ldd").arg(tree.root.join("ferrophp")));
    let ldd = String::from_utf8_lossy(&out.stdout);
    assert!(!ldd.contains("not found"), "{ldd}");

    // Inside a debootstrap minbase of bookworm (nothing else installed), in a private
    // mount namespace so the /proc mount goes away with it.
    let rootfs =
        String::from_utf8(run(&mut Command::new(repo().join("scripts/debian-rootfs.sh"))).stdout)
            .unwrap()
            .trim()
            .to_owned();
    let guest = format!("opt/ferrophp-release-test-{}", std::process::id());
    let inside = Path::new(&rootfs).join(&guest);
    // Removed whatever happens, so the cached base system stays bare.
    struct RemoveOnDrop(PathBuf);
    impl Drop for RemoveOnDrop {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _remove = RemoveOnDrop(inside.clone());
    run(Command::new("cp").arg("-a").arg(&tree.root).arg(&inside));
    std::fs::write(inside.join("probe.php"), PROBE).unwrap();
    let out = clean(&mut Command::new("unshare"))
        .args(["--mount", "--fork", "sh", "-c"])
        .arg(format!(
            "mount -t proc proc '{rootfs}/proc' && chroot '{rootfs}' /{guest}/ferrophp php-cli /{guest}/probe.php"
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "in the minbase chroot: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ini"], format!("/{guest}/php.ini"), "{v}");
    assert_eq!(v["opcache"], true, "{v}");
}

/// The extension dir of a tree, from its own php-config.
fn extension_dir(tree: &Path) -> PathBuf {
    let out = run(Command::new(tree.join("bin/php-config")).arg("--extension-dir"));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Runs `code` with the tree's `ferrophp php-cli` and the given `-d` settings.
fn php_cli(tree: &Path, ini: &[&str], code: &str) -> String {
    let script = tree.join("cli-snippet.php");
    std::fs::write(&script, format!("<?php {code}")).unwrap();
    let mut cmd = Command::new(tree.join("ferrophp"));
    cmd.arg("php-cli");
    for kv in ini {
        cmd.args(["-d", kv]);
    }
    String::from_utf8(run(cmd.arg(&script)).stdout).unwrap()
}

const PECL: [&str; 3] = ["apcu", "igbinary", "redis"];

#[test]
fn pecl_extensions_ship_in_the_tree_and_are_off_by_default() {
    let tree = unpack_and_move();
    let ext_dir = extension_dir(&tree.root);
    assert!(ext_dir.starts_with(&tree.root), "{}", ext_dir.display());
    for name in PECL {
        assert!(
            ext_dir.join(format!("{name}.so")).is_file(),
            "{name}.so is not in {}",
            ext_dir.display()
        );
        // Each has a conf.d ini that documents it, with its extension= line commented out.
        let ini = std::fs::read_dir(tree.root.join("conf.d"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(&format!("-{name}.ini")))
            .unwrap_or_else(|| panic!("no conf.d ini for {name}"));
        let text = std::fs::read_to_string(&ini).unwrap();
        assert!(text.contains(&format!(";extension={name}")), "{text}");
        assert!(
            !text
                .lines()
                .any(|l| l.trim_start().starts_with("extension")),
            "{name} is enabled by {}",
            ini.display()
        );
    }
    let loaded = php_cli(
        &tree.root,
        &[],
        "echo json_encode(array_map('extension_loaded', ['apcu', 'igbinary', 'redis'])), \
         function_exists('apcu_fetch') ? ' layer' : ' none';",
    );
    assert_eq!(loaded, "[false,false,false] layer");
}

const IGBINARY_ROUND_TRIP: &str = r#"
$v = ['a' => 1, 'b' => [1.5, true, null, "x\0y"], 'o' => new ArrayObject([1, 2])];
$s = igbinary_serialize($v);
echo phpversion('igbinary'), ' ', bin2hex(substr($s, 0, 4)), ' ',
    igbinary_unserialize($s) == $v ? 'same' : 'different', ' ', strlen($s) < strlen(serialize($v)) ? 'smaller' : 'larger';
"#;

#[test]
fn igbinary_loads_in_php_cli_classic_and_worker_mode() {
    let tree = unpack_and_move();
    // igbinary's format starts with its version, 2, as a big-endian u32.
    let want = "3.2.13 00000002 same smaller";
    assert_eq!(
        php_cli(&tree.root, &["extension=igbinary"], IGBINARY_ROUND_TRIP),
        want
    );
    let server = serve_site_with(
        &tree,
        IGBINARY_ROUND_TRIP,
        IGBINARY_ROUND_TRIP,
        &["-d", "extension=igbinary"],
    );
    assert_eq!(server.get("/page.php").text(), want);
    assert_eq!(server.get("/worker.php").text(), want);
    assert_eq!(server.get("/worker.php").text(), want);
}

/// A redis-server (Debian's package) on a unix socket in a private directory, no TCP
/// port, no persistence; killed by its pid when dropped.
struct Redis {
    child: Child,
    _dir: tempfile::TempDir,
    socket: PathBuf,
}

impl Redis {
    fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("redis.sock");
        let child = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--save",
                "",
                "--appendonly",
                "no",
                "--unixsocketperm",
                "700",
            ])
            .arg("--unixsocket")
            .arg(&socket)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server) starts");
        let mut redis = Redis {
            child,
            _dir: dir,
            socket,
        };
        let up = wait_until(Duration::from_secs(10), || {
            std::os::unix::net::UnixStream::connect(&redis.socket).is_ok()
        });
        assert!(up, "redis-server never opened {}", redis.socket.display());
        assert!(redis.child.try_wait().unwrap().is_none());
        redis
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        // Child::kill signals this child's pid only.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn redis_talks_to_a_real_server_and_a_worker_keeps_its_connection_across_requests() {
    let tree = unpack_and_move();
    let redis = Redis::start();
    let sock = redis.socket.display().to_string();
    let ini = ["-d", "extension=igbinary", "-d", "extension=redis"];

    // php-cli: a value through the igbinary serializer, read back raw by a second
    // connection to see igbinary's header on the server.
    let cli = php_cli(
        &tree.root,
        &["extension=igbinary", "extension=redis"],
        &format!(
            r#"$r = new Redis(); $r->connect('{sock}');
            $r->setOption(Redis::OPT_SERIALIZER, Redis::SERIALIZER_IGBINARY);
            $r->set('k', ['x' => [1, 2]]);
            $raw = new Redis(); $raw->connect('{sock}');
            echo phpversion('redis'), ' ', json_encode($r->get('k')), ' ', bin2hex(substr($raw->get('k'), 0, 4));"#
        ),
    );
    assert_eq!(cli, r#"5.3.7 {"x":[1,2]} 00000002"#);

    // Classic: a connection per request. Worker: the connection is made on the first
    // request and kept in the worker's globals, so every request of the one worker thread
    // uses it (same CLIENT ID). pconnect() would not do it: phpredis 5.3.7 turns it into
    // a plain connect in any ZTS build (redis.c, `#ifdef ZTS persistent = 0`).
    let page = format!(
        "$r = new Redis(); $r->connect('{sock}'); echo $r->incr('classic'), ' ', $r->get('k') !== false ? 'seen' : 'unseen';"
    );
    let handler = format!(
        "$r = $GLOBALS['redis'] ??= (static function () {{ $c = new Redis(); $c->connect('{sock}'); return $c; }})();
        echo $r->client('id'), ' ', $r->incr('worker');"
    );
    let server = serve_site_with(&tree, &page, &handler, &ini);
    assert_eq!(server.get("/page.php").text(), "1 seen");
    assert_eq!(server.get("/page.php").text(), "2 seen");
    let replies: Vec<String> = (0..3).map(|_| server.get("/worker.php").text()).collect();
    let ids: Vec<&str> = replies
        .iter()
        .map(|r| r.split(' ').next().unwrap())
        .collect();
    assert!(
        ids.iter()
            .all(|id| *id == ids[0] && id.parse::<u64>().is_ok()),
        "one connection for the worker's requests: {replies:?}"
    );
    let counts: Vec<&str> = replies
        .iter()
        .map(|r| r.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(counts, ["1", "2", "3"], "{replies:?}");
    drop(server);
    drop(redis);
}

/// Stores through `apcu_store` and reports who answered: the real APCu module or the
/// built-in layer (whose entries `UserCache\Cache` sees, being the same cache).
const WHICH_APCU: &str = r#"
apcu_store('probe', 'stored via apcu_store');
\UserCache\Cache::store('own', 7);
echo json_encode([
    'apcu_module' => phpversion('apcu'),
    'usercache_sees_it' => \UserCache\Cache::fetch('probe'),
    'usercache_works' => \UserCache\Cache::fetch('own'),
    'hits' => apcu_inc('hits'),
]);
"#;

#[test]
fn enabling_the_real_apcu_replaces_the_builtin_apcu_layer() {
    let tree = unpack_and_move();
    let parse = |s: &str| -> serde_json::Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
    };

    // Default: the layer serves apcu_* from the shared cache (under the "cli" SAPI only
    // with apc.enable_cli=1, as APCu itself).
    let v = parse(&php_cli(&tree.root, &["apc.enable_cli=1"], WHICH_APCU));
    assert_eq!(v["apcu_module"], false, "{v}");
    assert_eq!(v["usercache_sees_it"], "stored via apcu_store", "{v}");

    // Real APCu enabled: it answers apcu_*, the layer is not registered (no clash of
    // function names at start-up), and UserCache\Cache keeps working on its own.
    let real = ["extension=apcu", "apc.enable_cli=1"];
    let v = parse(&php_cli(&tree.root, &real, WHICH_APCU));
    assert_eq!(v["apcu_module"], "5.1.22", "{v}");
    assert_eq!(v["usercache_sees_it"], serde_json::Value::Null, "{v}");
    assert_eq!(v["usercache_works"], 7, "{v}");
    assert_eq!(v["hits"], 1, "{v}");

    // The same in the server, classic and worker threads sharing APCu's one segment.
    let server = serve_site_with(&tree, WHICH_APCU, WHICH_APCU, &["-d", "extension=apcu"]);
    for (path, hits) in [("/page.php", 1), ("/worker.php", 2), ("/page.php", 3)] {
        let v = parse(&server.get(path).text());
        assert_eq!(v["apcu_module"], "5.1.22", "{path}: {v}");
        assert_eq!(
            v["usercache_sees_it"],
            serde_json::Value::Null,
            "{path}: {v}"
        );
        assert_eq!(v["usercache_works"], 7, "{path}: {v}");
        assert_eq!(v["hits"], hits, "{path}: {v}");
    }
    assert!(
        !server.stderr().contains("redeclare") && !server.stderr().contains("duplicate"),
        "{}",
        server.stderr()
    );
}

/// `bin/php` is a link to `../ferrophp`, so the moved tree's `php` is PHP's CLI: the build's
/// own `php -v`, `php-config --php-binary` naming it, the tree's php.ini, and Debian's
/// Composer running through it.
#[test]
fn bin_php_links_to_ferrophp_and_is_php() {
    let tree = unpack_and_move();
    let php = tree.root.join("bin/php");
    assert_eq!(
        std::fs::read_link(&php).unwrap(),
        Path::new("../ferrophp"),
        "a relative link, which moves with the tree"
    );
    // The release's name, its ferrophp and its php say the same PHP.
    let banner = run(clean(&mut Command::new(tree.root.join("ferrophp"))).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&banner.stdout),
        format!(
            "ferrophp {} (PHP {})\n",
            env!("CARGO_PKG_VERSION"),
            worker::PHP_VERSION
        )
    );
    let ours = run(Command::new(&php).arg("-v"));
    let theirs = run(Command::new(Path::new(&build_cache_prefix()).join("bin/php")).arg("-v"));
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
    let config = run(Command::new(tree.root.join("bin/php-config")).arg("--php-binary"));
    assert_eq!(
        String::from_utf8_lossy(&config.stdout).trim(),
        php.to_str().unwrap()
    );
    let out = run(Command::new(&php).args([
        "-r",
        "echo PHP_BINARY, '|', php_ini_loaded_file(), '|', PHP_SAPI;",
    ]));
    let root = tree.root.canonicalize().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{0}/ferrophp|{0}/php.ini|cli", root.display())
    );
    // Composer's launcher starts with `#!/usr/bin/php`, which php does not print.
    let out = run(Command::new(&php).args(["/usr/bin/composer", "--version"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Composer version 2."), "{text}");
}
