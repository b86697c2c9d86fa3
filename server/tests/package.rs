//! One-file apps (issue 39), for real: `ferrophp package` run from the release tree
//! (`dist/ferrophp-*.tar.gz`, which scripts/test.sh makes before the suite) on real apps,
//! and the one file run where nothing else exists.
//!
//! - The Symfony catalogue (`test-data/compare-apps/symfony` with its `vendor/` copied from
//!   Debian's packages and `test-data/package/symfony` laid over it: worker mode for the
//!   catalogue, `var/` writable) in a container built `FROM scratch` with only the file
//!   (`docker/package.Dockerfile`): pages over HTTP, worker mode seen on the admin
//!   listener, what PHP sees of the extracted files (`__DIR__`, `realpath`, OPcache, the
//!   writable link), the app's console (`php-cli bin/console`), then the same file in a
//!   Debian minbase container with nothing added and in one holding only the C library.
//! - WordPress on a private MariaDB (classic mode, `wp-content/uploads` writable in a
//!   volume), installed through the package's own CLI, pages and an upload over HTTP.
//! - Bad input on the host: a cut package, a byte changed in an app file, in the packed
//!   binary and in the index, another release's payload, a crafted traversal path (each
//!   refused before anything is extracted, with a clear message), and a link leaving the
//!   app refused when packing.
//! - A new package renamed over the old one while the old one serves: the running server
//!   keeps its files, the next start uses the new ones, never a mix.
//!
//! Containers, images and temporary directories are removed at the end.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::db::MariaDb;
use common::Server;
use ferrophp_package::format::{Trailer, TRAILER_LEN};
use ferrophp_package::{Entry, Index, Package};

/// A container's first start extracts the package onto the container's own (overlay)
/// filesystem and boots the app: slower than a plain start on a loaded machine.
const CONTAINER_START: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The release tree, unpacked from the tarball into `dir`.
fn release_tree(dir: &Path) -> PathBuf {
    let tarball = common::release_tarball();
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir));
    dir.join(common::release_name())
}

/// `ferrophp package --app APP -o OUT` from the tree: its report line.
fn package(tree: &Path, app: &Path, out: &Path) -> String {
    let started = Instant::now();
    let report = text(&run(Command::new(tree.join("ferrophp"))
        .arg("package")
        .arg("--app")
        .arg(app)
        .arg("-o")
        .arg(out)));
    eprintln!("packed in {:?}: {report}", started.elapsed());
    report
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    run(Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to));
}

/// The Symfony catalogue with its own vendor/ and the package overlay.
fn symfony_app(dir: &Path) -> PathBuf {
    let app = dir.join("symfony-app");
    copy_tree(&repo().join("test-data/compare-apps/symfony"), &app);
    for package in ["Symfony", "Psr", "Twig"] {
        let src = Path::new("/usr/share/php").join(package);
        assert!(
            src.is_dir(),
            "{} is missing: run scripts/install-test-deps.sh",
            src.display()
        );
        copy_tree(&src, &app.join("vendor").join(package));
    }
    copy_tree(&repo().join("test-data/package/symfony"), &app);
    app
}

/// A package run on this machine, with its data and cache directories in `dir`.
fn host_command(pkg: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(pkg);
    cmd.env("FERROPHP_DATA_DIR", dir.join("data"))
        .env("FERROPHP_PACKAGE_CACHE", dir.join("cache"))
        .env_remove("FERROPHP_CONFIG")
        .env_remove("PHPRC")
        .env_remove("PHP_INI_SCAN_DIR");
    cmd
}

// --- Docker -------------------------------------------------------------------------

fn docker(args: &[&str]) -> String {
    text(&run(Command::new("docker").args(args)))
}

/// Removes what a test made in Docker, whatever happened.
#[derive(Default)]
struct Cleanup {
    containers: Vec<String>,
    images: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", c]).output();
        }
        for i in &self.images {
            let _ = Command::new("docker").args(["rmi", "-f", i]).output();
        }
    }
}

fn unique(name: &str) -> String {
    format!("ferrophp-pkg-{name}-{}", std::process::id())
}

/// An image of `docker/package.Dockerfile` over `base` (scratch, or another image),
/// with `extra` files (a directory laid over the root) beside the package.
fn package_image(
    cleanup: &mut Cleanup,
    name: &str,
    pkg: &Path,
    base: &str,
    extra: Option<&Path>,
) -> String {
    let ctx = tempfile::tempdir().unwrap();
    std::fs::copy(pkg, ctx.path().join("app")).unwrap();
    let mut dockerfile = std::fs::read_to_string(repo().join("docker/package.Dockerfile"))
        .unwrap()
        .replace("FROM scratch", &format!("FROM {base}"));
    if let Some(extra) = extra {
        copy_tree(extra, &ctx.path().join("extra"));
        dockerfile = dockerfile.replace(
            "COPY ${PACKAGE} /app",
            "COPY extra/ /\nCOPY ${PACKAGE} /app",
        );
    }
    std::fs::write(ctx.path().join("Dockerfile"), dockerfile).unwrap();
    let image = format!("{}:test", unique(name));
    cleanup.images.push(image.clone());
    docker(&["build", "-q", "-t", &image, &ctx.path().to_string_lossy()]);
    image
}

/// `docker run` of a package image on the host's network, serving on a free loopback
/// port with its admin listener: ferrophp's own start-up lines come through the attached
/// output as they do from the binary.
fn run_container(
    cleanup: &mut Cleanup,
    image: &str,
    name: &str,
    docker_args: &[&str],
) -> (String, Server) {
    let name = unique(name);
    cleanup.containers.push(name.clone());
    let mut cmd = Command::new("docker");
    cmd.args(["run", "--rm", "--name", &name, "--network", "host"])
        .args(docker_args)
        .arg(image)
        .args(["serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"]);
    let server = Server::from_command(cmd, Path::new("/"), &[], CONTAINER_START);
    (name, server)
}

fn admin_get(server: &Server, path: &str) -> String {
    let admin = server.admin_addr().expect("admin listener");
    let bytes = common::exchange(
        admin,
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(20),
    )
    .unwrap();
    common::parse_response(&bytes).unwrap().text()
}

fn json(server: &Server, path: &str) -> serde_json::Value {
    let r = server.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.text()))
}

/// The catalogue's first page, as every container must serve it.
fn catalogue(server: &Server) -> String {
    let r = server.get("/catalogue/1");
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.text();
    assert!(body.contains("<h1>Catalogue, page 1</h1>"), "{body}");
    assert!(body.contains("SKU-0001"), "{body}");
    body
}

#[test]
fn symfony_worker_app_from_one_file_in_empty_containers() {
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    let app = symfony_app(work.path());
    let pkg = work.path().join("symfony-catalogue");
    let report = package(&tree, &app, &pkg);
    assert!(report.contains("writable: var"), "{report}");
    let size = std::fs::metadata(&pkg).unwrap().len();
    eprintln!("package size: {:.1} MB", size as f64 / 1e6);

    let mut cleanup = Cleanup::default();
    let image = package_image(&mut cleanup, "symfony", &pkg, "scratch", None);
    // Nothing but the file: one layer, of the package's size.
    assert_eq!(
        docker(&["image", "inspect", "-f", "{{len .RootFS.Layers}}", &image]).trim(),
        "1"
    );
    let (name, server) = run_container(&mut cleanup, &image, "symfony", &[]);

    let first = catalogue(&server);
    let product = server.get("/product/SKU-0007");
    assert_eq!(product.status, 200, "{}", product.text());
    assert!(product.text().contains("SKU-0007"));
    // The catalogue runs in worker mode, as the packed ferrophp.toml says.
    let threads: serde_json::Value = serde_json::from_str(&admin_get(&server, "/threads")).unwrap();
    let pools: Vec<String> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pool"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        pools.iter().any(|p| p.ends_with("/app/public/worker.php")),
        "{pools:?}"
    );
    for _ in 0..20 {
        assert_eq!(catalogue(&server), first);
    }

    // The files, as PHP sees them: on disk, read-only, cached by OPcache, `var/` a link
    // into the data directory.
    let probe = json(&server, "/probe.php");
    let dir = probe["dir"].as_str().unwrap();
    assert!(
        dir.starts_with("/cache/") && dir.ends_with("/app/public"),
        "{probe}"
    );
    let extracted = dir.strip_suffix("/app/public").unwrap();
    assert_eq!(
        probe["kernel_realpath"],
        format!("{extracted}/app/src/Kernel.php")
    );
    assert!(probe["template_bytes"].as_u64().unwrap() > 100, "{probe}");
    assert_eq!(probe["opcache"], true, "{probe}");
    assert_eq!(probe["var_realpath"], "/data/var", "{probe}");
    assert_eq!(probe["var_writable"], true, "{probe}");
    // Read-only by mode (root, as here, may still write: use a non-root user or a
    // read-only mount for more).
    assert_eq!(probe["app_mode"], "555", "{probe}");
    assert_eq!(probe["file_mode"], "444", "{probe}");
    assert_eq!(probe["php_binary"], "/app", "{probe}");
    assert_eq!(probe["php_ini"], format!("{extracted}/php.ini"), "{probe}");
    // PHP runs a script in its own directory, as php-fpm does.
    assert_eq!(probe["cwd"], format!("{extracted}/app/public"), "{probe}");
    let again = json(&server, "/probe.php");
    assert_eq!(
        again["probe_cached"], true,
        "OPcache never cached the probe: {again}"
    );

    // The app's console, from the same file in the same container.
    let exec = |args: &[&str]| {
        let mut all = vec!["exec", name.as_str(), "/app"];
        all.extend_from_slice(args);
        docker(&all)
    };
    let routes = exec(&["php-cli", "bin/console", "debug:router"]);
    assert!(
        routes.contains("catalogue") && routes.contains("/product/{sku}"),
        "{routes}"
    );
    let warmed = exec(&["php-cli", "bin/console", "cache:warmup"]);
    assert!(warmed.contains("successfully warmed"), "{warmed}");
    let php = exec(&[
        "php",
        "-r",
        "echo PHP_BINARY, ' ', getcwd(), ' ', PHP_VERSION;",
    ]);
    assert_eq!(php, format!("/app {extracted}/app 8.2.32"));
    let info = exec(&["--package-info"]);
    assert!(
        info.contains(&format!("extracted: {extracted}\n")),
        "{info}"
    );
    assert!(info.contains("writable: var"), "{info}");
    drop(server);
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();

    // The same file on a Debian minbase with nothing added, and on nothing but the C
    // library (the machine's; the package brings and uses its own).
    let minbase = text(&run(&mut Command::new(
        repo().join("scripts/docker-base-image.sh"),
    )));
    let libc_only = tempfile::tempdir().unwrap();
    for lib in [
        "lib/x86_64-linux-gnu/libc.so.6",
        "lib64/ld-linux-x86-64.so.2",
    ] {
        let to = libc_only.path().join(lib);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(Path::new("/").join(lib), to).unwrap();
    }
    for (label, base, extra) in [
        ("minbase", minbase.trim(), None),
        ("libc", "scratch", Some(libc_only.path())),
    ] {
        let image = package_image(&mut cleanup, label, &pkg, base, extra);
        let (name, server) = run_container(&mut cleanup, &image, label, &[]);
        assert_eq!(catalogue(&server), first, "{label}");
        drop(server);
        let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    }
}

#[test]
fn wordpress_with_mariadb_from_one_file_in_an_empty_container() {
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    // Private MariaDB on a unix socket; the container reaches it through a mount.
    let db_dir = work.path().join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let db = MariaDb::start(&db_dir);
    db.sql(
        "CREATE DATABASE wordpress; \
         CREATE USER 'app'@'localhost' IDENTIFIED BY 'app-pass'; \
         GRANT ALL ON wordpress.* TO 'app'@'localhost';",
    );
    let site = work.path().join("site");
    run(Command::new("bash")
        .arg(repo().join("test-data/databases/make-wordpress.sh"))
        .arg(&site)
        .arg(&db.socket)
        .arg("wordpress"));
    let app = site.join("wp");
    // The database's address from the environment, as a container is given it.
    let config = std::fs::read_to_string(app.join("wp-config.php")).unwrap();
    let config: String = config
        .lines()
        .map(|l| {
            if l.starts_with("define('DB_HOST'") {
                "define('DB_HOST', getenv('WORDPRESS_DB_HOST'));".to_owned()
            } else if l.starts_with("define('WP_DEBUG_LOG'") {
                "define('WP_DEBUG_LOG', false);".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(app.join("wp-config.php"), config).unwrap();
    copy_tree(&repo().join("test-data/package/wordpress"), &app);
    std::fs::copy(
        repo().join("test-data/compare-apps/wordpress/populate.php"),
        app.join("populate.php"),
    )
    .unwrap();
    let pkg = work.path().join("wordpress");
    let report = package(&tree, &app, &pkg);
    assert!(report.contains("writable: wp-content/uploads"), "{report}");

    let mut cleanup = Cleanup::default();
    let image = package_image(&mut cleanup, "wordpress", &pkg, "scratch", None);
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db_mount = format!("{}:/run/mysqld", db_dir.display());
    let data_mount = format!("{}:/data", data.display());
    let (name, server) = run_container(
        &mut cleanup,
        &image,
        "wordpress",
        &[
            "-v",
            &db_mount,
            "-v",
            &data_mount,
            "-e",
            "WORDPRESS_DB_HOST=localhost:/run/mysqld/mariadb.sock",
        ],
    );
    // Installed and filled through the package's own CLI, in the container.
    let populated = docker(&["exec", &name, "/app", "php-cli", "populate.php", "."]);
    eprintln!("populate.php: {populated}");

    let front = server.get("/");
    assert_eq!(front.status, 200, "{}", front.text());
    let body = front.text();
    assert!(body.contains("ferrophp bench"), "{body}");
    let post = server.get("/a-post-with-comments/");
    assert_eq!(post.status, 200, "{}", post.text());
    assert!(post.text().contains("comment"), "{}", post.text());

    // An upload through WordPress's own code lands in the data volume and is served.
    let content = "uploaded into a one-file app\n";
    let boundary = "ferrophpPackageBoundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"f\"; filename=\"hello.txt\"\r\n\
         Content-Type: text/plain\r\n\r\n{content}\r\n--{boundary}--\r\n"
    );
    let request = format!(
        "POST /upload.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let r = server.raw(request.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let upload: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(upload.get("error").is_none(), "{upload}");
    assert_eq!(upload["realpath"], "/data/wp-content/uploads", "{upload}");
    let file = upload["file_realpath"].as_str().unwrap();
    let relative = file
        .strip_prefix("/data/")
        .expect("under the data directory");
    assert_eq!(
        std::fs::read_to_string(data.join(relative)).unwrap(),
        content
    );
    let url = upload["url"].as_str().unwrap();
    let path = &url[url.find("/wp-content/").expect("an uploads URL")..];
    let served = server.get(path);
    assert_eq!(served.status, 200, "{path}");
    assert_eq!(served.text(), content);
    // PHP never runs from the writable path.
    std::fs::write(data.join("wp-content/uploads/run.php"), "<?php echo 'ran';").unwrap();
    let refused = server.get("/wp-content/uploads/run.php");
    assert_eq!(refused.status, 403, "{}", refused.text());
}

/// A small app for the host tests: one page that names its version.
fn hello_app(dir: &Path, version: &str) -> PathBuf {
    let app = dir.join(format!("hello-{version}"));
    std::fs::create_dir_all(app.join("public")).unwrap();
    std::fs::create_dir_all(app.join("lib")).unwrap();
    std::fs::write(
        app.join("public/index.php"),
        "<?php echo require __DIR__ . '/../lib/version.php', ' ', file_get_contents(__DIR__ . '/../lib/data.txt');",
    )
    .unwrap();
    std::fs::write(
        app.join("lib/version.php"),
        format!("<?php return '{version}';"),
    )
    .unwrap();
    std::fs::write(app.join("lib/data.txt"), format!("data-{version}")).unwrap();
    std::fs::write(
        app.join("ferrophp.toml"),
        "root = \"public\"\nthreads = 2\n",
    )
    .unwrap();
    app
}

/// `pkg php-cli -r 'echo 1;'` on the host: its output.
fn try_run(pkg: &Path, dir: &Path) -> Output {
    host_command(pkg, dir)
        .args(["php-cli", "-r", "echo 'ran';"])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `bytes` with its trailer's hash recomputed, as anyone can: the hash finds accidents
/// and edits of a package, the checks after it must stop crafted ones.
fn rehash(mut bytes: Vec<u8>) -> Vec<u8> {
    let len = bytes.len();
    let hash = blake3::hash(&bytes[..len - 32]);
    bytes[len - 32..].copy_from_slice(hash.as_bytes());
    bytes
}

#[test]
fn tampered_cut_and_foreign_packages_refuse_to_start() {
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    let pkg = work.path().join("hello");
    package(&tree, &hello_app(work.path(), "v1"), &pkg);
    let good = std::fs::read(&pkg).unwrap();
    let ok = try_run(&pkg, work.path());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(text(&ok), "ran");

    // Where the pieces are, from the package's own index.
    let opened = Package::open(&pkg).unwrap();
    let trailer = opened.trailer().clone();
    let index = opened.index().unwrap();
    let blob = |path: &[u8]| {
        index
            .entries
            .iter()
            .find_map(|e| match e {
                Entry::File {
                    path: p, offset, ..
                } if p == path => Some((trailer.payload_offset + offset) as usize),
                _ => None,
            })
            .unwrap()
    };
    drop(opened);
    let flip = |at: usize| {
        let mut b = good.clone();
        b[at] ^= 0x01;
        b
    };
    let mut foreign = good.clone();
    let release_at = good.len() - TRAILER_LEN + 40;
    foreign[release_at..release_at + 4].copy_from_slice(b"9.9.");
    let foreign = rehash(foreign);
    // A crafted index naming a path outside the tree, hashed and of the right release.
    let traversal = {
        let mut crafted = index.clone();
        crafted.entries.push(Entry::Dir {
            path: b"app/../../../escaped".to_vec(),
        });
        let index_bytes = crafted.encode();
        let mut bytes = good[..trailer.index_offset as usize].to_vec();
        bytes.extend_from_slice(&index_bytes);
        let t = Trailer {
            index_len: index_bytes.len() as u64,
            ..trailer.clone()
        };
        bytes.extend_from_slice(&t.encode());
        rehash(bytes)
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            good[..good.len() - 1000].to_vec(),
            "not a ferrophp package",
        ),
        (
            "one byte short",
            good[..good.len() - 1].to_vec(),
            "not a ferrophp package",
        ),
        (
            "app file",
            flip(blob(b"app/lib/version.php")),
            "modified after it was made",
        ),
        (
            "packed binary",
            flip(blob(b"ferrophp") + 4096),
            "modified after it was made",
        ),
        (
            "index",
            flip(trailer.index_offset as usize + 20),
            "modified after it was made",
        ),
        ("another release", foreign, "this launcher is release"),
        ("traversal", traversal, "unsafe package content"),
    ];
    for (what, bytes, expected) in cases {
        let dir = work.path().join(what.replace(' ', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("hello");
        std::fs::write(&bad, bytes).unwrap();
        std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let out = try_run(&bad, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(out.stdout.is_empty(), "{what}: it ran");
        // Nothing was extracted.
        let cache = dir.join("cache");
        let extracted = std::fs::read_dir(&cache).map_or(0, |d| d.count());
        assert_eq!(
            extracted,
            0,
            "{what}: something was extracted into {}",
            cache.display()
        );
        eprintln!("{what}: {}", stderr.trim());
    }
    assert!(!work.path().join("escaped").exists());
    // The index parser is what refused the traversal.
    assert!(Index::decode(b"FPIX", 0).is_err());
}

#[test]
fn links_leaving_the_app_are_refused_when_packing() {
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    let app = hello_app(work.path(), "v1");
    std::os::unix::fs::symlink("/etc/passwd", app.join("public/passwd")).unwrap();
    let out = work.path().join("hello");
    let result = Command::new(tree.join("ferrophp"))
        .arg("package")
        .arg("--app")
        .arg(&app)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("leaves the app directory"), "{stderr}");
    assert!(stderr.contains("public/passwd"), "{stderr}");
    assert!(!out.exists(), "a package was written");
}

#[test]
fn php_binary_of_a_package_is_php_for_the_app_s_own_children() {
    // What Composer and PHPUnit do with PHP_BINARY: run it with php's arguments from the
    // app's directory, or pipe a script into it with no arguments at all.
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    let pkg = work.path().join("hello");
    package(&tree, &hello_app(work.path(), "v1"), &pkg);
    let script = r#"
        echo PHP_BINARY, "\n";
        echo shell_exec(escapeshellarg(PHP_BINARY) . ' -r ' . escapeshellarg('echo "child ", getcwd(), "\n";'));
        echo shell_exec('echo ' . escapeshellarg('<?php echo "piped\n";') . ' | ' . escapeshellarg(PHP_BINARY));
        chdir('/');
        echo shell_exec(escapeshellarg(PHP_BINARY) . ' -r ' . escapeshellarg('echo "moved ", getcwd(), "\n";'));
    "#;
    let out = text(&run(
        host_command(&pkg, work.path()).args(["php", "-r", script])
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], pkg.to_str().unwrap(), "{out}");
    assert!(
        lines[1].starts_with(&format!("child {}", work.path().join("cache").display()))
            && lines[1].ends_with("/app"),
        "a child starts in the app's directory: {out}"
    );
    assert_eq!(lines[2], "piped", "{out}");
    assert_eq!(
        lines[3], "moved /",
        "a child keeps the directory it was given: {out}"
    );
}

#[test]
fn a_new_package_replaces_the_old_one_atomically() {
    let work = tempfile::tempdir().unwrap();
    let tree = release_tree(work.path());
    let pkg = work.path().join("hello");
    package(&tree, &hello_app(work.path(), "v1"), &pkg);
    let mut cmd = host_command(&pkg, work.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    let old = Server::from_command(cmd, Path::new("/"), &[], Duration::from_secs(60));
    assert_eq!(old.get("/").text(), "v1 data-v1");

    // The new package is written beside and renamed over the running one.
    package(&tree, &hello_app(work.path(), "v2"), &pkg);
    let mut cmd = host_command(&pkg, work.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    let new = Server::from_command(cmd, Path::new("/"), &[], Duration::from_secs(60));
    for _ in 0..20 {
        assert_eq!(
            old.get("/").text(),
            "v1 data-v1",
            "the running server changed"
        );
        assert_eq!(
            new.get("/").text(),
            "v2 data-v2",
            "the new start mixed versions"
        );
    }
    // Two trees side by side, each whole; one data directory.
    let trees: Vec<_> = std::fs::read_dir(work.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(trees.len(), 2, "{trees:?}");
    assert!(trees.iter().all(|t| !t.starts_with('.')), "{trees:?}");
}
