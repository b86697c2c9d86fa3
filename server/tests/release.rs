//! The standalone release (issue 14): `dist/ferrophp-<version>-linux-x86_64.tar.gz`, made
//! by `scripts/release.sh` (scripts/test.sh runs it before the suite), unpacked into a
//! fresh directory, moved once more, and run from there with no LD_LIBRARY_PATH, no PHP
//! environment and nothing loaded from the build cache: php.ini and conf.d next to the
//! binary, OPcache on, a classic page and a worker page served, every library resolved,
//! the tree running inside a bare Debian 12 base system (chroot into a debootstrap
//! minbase), and an extension (APCu) built with the tree's own phpize and loaded.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Server;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn tarball() -> PathBuf {
    let version = env!("CARGO_PKG_VERSION");
    let path = repo().join(format!("dist/ferrophp-{version}-linux-x86_64.tar.gz"));
    assert!(
        path.is_file(),
        "{} is missing: run scripts/release.sh (scripts/test.sh does)",
        path.display()
    );
    path
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
        .arg(tarball())
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
    let site = tree.root.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("page.php"), format!("<?php {page}")).unwrap();
    std::fs::write(
        site.join("worker.php"),
        format!("<?php while (frankenphp_handle_request(function () {{ {handler_body} }})) {{}}"),
    )
    .unwrap();
    let spec = format!("{},1", site.join("worker.php").display());
    Server::start_binary(
        &tree.root.join("ferrophp"),
        &site,
        &["--worker", &spec],
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
    let libphp = format!("{}/lib/libphp.so", tree.root.display());
    assert!(maps.contains(&libphp), "libphp.so is not the tree's");
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

#[test]
fn apcu_builds_with_the_trees_phpize_and_loads_in_classic_and_worker_mode() {
    let tree = unpack_and_move();
    let src = String::from_utf8(
        run(Command::new("bash")
            .arg(repo().join("scripts/apcu-suite.sh"))
            .arg("source"))
        .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let build = tempfile::tempdir().unwrap();
    run(Command::new("cp")
        .arg("-a")
        .arg(format!("{src}/."))
        .arg(build.path()));
    let bin = tree.root.join("bin");
    run(Command::new(bin.join("phpize")).current_dir(build.path()));
    run(Command::new("./configure")
        .arg(format!(
            "--with-php-config={}",
            bin.join("php-config").display()
        ))
        .current_dir(build.path()));
    run(Command::new("make")
        .arg(format!(
            "-j{}",
            std::thread::available_parallelism().map_or(2, |n| n.get())
        ))
        .current_dir(build.path()));
    let ext_dir =
        String::from_utf8(run(Command::new(bin.join("php-config")).arg("--extension-dir")).stdout)
            .unwrap()
            .trim()
            .to_owned();
    assert!(
        ext_dir.starts_with(&*tree.root.to_string_lossy()),
        "{ext_dir}"
    );
    std::fs::copy(
        build.path().join("modules/apcu.so"),
        Path::new(&ext_dir).join("apcu.so"),
    )
    .unwrap();
    std::fs::write(
        tree.root.join("conf.d/20-apcu.ini"),
        "extension=apcu\napc.enable_cli=1\n",
    )
    .unwrap();

    let v = probe(&tree.root, &[]);
    assert!(v["apcu"].is_string(), "the real APCu is loaded: {v}");
    assert_eq!(v["apcu_fetch"], serde_json::json!([1, 2]), "{v}");

    let count = "echo phpversion('apcu'), ' ', apcu_inc('hits');";
    let server = serve_site(&tree, count, count);
    let version = v["apcu"].as_str().unwrap().to_owned();
    assert_eq!(server.get("/page.php").text(), format!("{version} 1"));
    assert_eq!(server.get("/worker.php").text(), format!("{version} 2"));
    assert_eq!(server.get("/page.php").text(), format!("{version} 3"));
}
