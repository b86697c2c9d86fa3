//! The world's PHP tools with ferrophp as their `php`: Debian's Composer and PHPUnit give
//! the same output and exit codes through `ferrophp php-cli`, bare `ferrophp` (what
//! `PHP_BINARY` runs) and a link named `php` as through the PHP build's own `bin/php`.
//!
//! - Composer: `install` of a project whose packages come from a path and an artifact
//!   repository (`test-data/cli/composer`, no network), `dump-autoload -o`, `show`,
//!   `diagnose` (network disabled), the project's own script and a package binary; the
//!   files Composer writes (lock, installed.json, class map) are compared too.
//! - PHPUnit: the test suites of Debian's league/commonmark and Twig packages, from their
//!   source packages (`scripts/install-test-deps.sh` downloads them), run against the
//!   installed libraries as Debian's autopkgtests do; some tests run in a separate process,
//!   which PHPUnit starts as a bare `PHP_BINARY` with the test on stdin.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::php::{build_php, ferrophp, Outcome, Via};

/// The only thing that differs by design: `PHP_BINARY` (the binary's own real path).
fn normalize_php_binary(outcome: Outcome, via: Via) -> Outcome {
    let binary = match via {
        Via::BuildPhp => build_php(),
        _ => ferrophp().canonicalize().unwrap(),
    };
    outcome.replace(binary.to_str().unwrap(), "PHP_BINARY")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// One Composer session: every command's outcome, then the files Composer wrote.
fn composer_session(
    via: Via,
    fixture: &Path,
    zip: &Path,
    run_dir: &Path,
) -> Vec<(String, Outcome)> {
    // The same path each time (paths end up in Composer's output and lock file), fresh
    // each time (home and cache included: a warm cache changes what install prints).
    let _ = std::fs::remove_dir_all(run_dir);
    copy_tree(fixture, run_dir);
    std::fs::create_dir_all(run_dir.join("artifacts")).unwrap();
    std::fs::copy(zip, run_dir.join("artifacts/util-2.0.1.zip")).unwrap();
    let project = run_dir.join("project");
    let composer = |args: &[&str]| {
        let mut cmd = via.command();
        cmd.arg("/usr/bin/composer")
            .args(args)
            .current_dir(&project)
            .env("COMPOSER_HOME", run_dir.join("home"))
            .env("COMPOSER_CACHE_DIR", run_dir.join("cache"))
            .env("COMPOSER_NO_INTERACTION", "1")
            .env("COMPOSER_DISABLE_NETWORK", "1")
            .env("COMPOSER_ALLOW_SUPERUSER", "1")
            .env_remove("COMPOSER")
            .env_remove("PHPRC")
            .env_remove("PHP_INI_SCAN_DIR");
        normalize_php_binary(Outcome::of(cmd, b""), via)
    };
    let mut results = Vec::new();
    for args in [
        &["--version"][..],
        &["install", "--no-progress"],
        &["dump-autoload", "-o"],
        &["show"],
        &["show", "--tree"],
        &["validate"],
        &["diagnose"],
    ] {
        results.push((format!("composer {}", args.join(" ")), composer(args)));
    }
    // The installed project runs, and so does its package's binary (a Composer proxy
    // with a `#!/usr/bin/env php` line that php skips).
    for script in ["main.php", "vendor/bin/greet"] {
        let mut cmd = via.command();
        cmd.arg(script).arg("ferrophp").current_dir(&project);
        results.push((format!("php {script}"), Outcome::of(cmd, b"")));
    }
    for file in [
        "composer.lock",
        "vendor/composer/installed.json",
        "vendor/composer/autoload_classmap.php",
        "vendor/composer/autoload_static.php",
        "vendor/composer/autoload_files.php",
    ] {
        let text = std::fs::read_to_string(project.join(file))
            .unwrap_or_else(|e| format!("(unreadable: {e})"));
        results.push((
            file.to_owned(),
            Outcome {
                code: None,
                stdout: text,
                stderr: String::new(),
            },
        ));
    }
    results
}

#[test]
fn composer_install_autoload_show_diagnose_same_as_build_php() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/cli/composer");
    let dir = tempfile::tempdir().unwrap();
    // The artifact repository's zip, made once so every session sees the same bytes (its
    // sha1 is in the lock file), with fixed dates.
    let zip = dir.path().join("util-2.0.1.zip");
    let made = Outcome::of(
        {
            let mut cmd = Command::new(build_php());
            cmd.arg("-r")
                .arg(
                    r#"$z = new ZipArchive;
                    $z->open($argv[1], ZipArchive::CREATE) or exit(1);
                    foreach (["composer.json", "src/Text.php", "src/functions.php"] as $f) {
                        $z->addFile("$argv[2]/$f", $f);
                        $z->setMtimeName($f, 0);
                    }
                    $z->close() or exit(1);"#,
                )
                .arg(&zip)
                .arg(fixture.join("packages/util-src"));
            cmd
        },
        b"",
    );
    assert_eq!(made.code, Some(0), "{made:?}");
    let run_dir = dir.path().join("run");
    let reference = composer_session(Via::BuildPhp, &fixture, &zip, &run_dir);
    // The reference did what the fixture is for (so a comparison of two failures cannot pass).
    let get = |name: &str| &reference.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(
        get("composer install --no-progress").code,
        Some(0),
        "{reference:#?}"
    );
    assert!(get("composer install --no-progress")
        .stderr
        .contains("Installing ferrophp-test/util (2.0.1): Extracting archive"));
    assert!(get("composer dump-autoload -o").stdout.contains(&format!(
        "post-autoload-dump under cli {}",
        worker::PHP_VERSION
    )));
    assert!(get("composer show")
        .stdout
        .contains("ferrophp-test/greeter 1.2.3"));
    assert!(get("composer diagnose")
        .stdout
        .contains("PHP binary path: PHP_BINARY"));
    assert_eq!(get("php main.php").stdout, "HELLO, COMPOSER!\n");
    assert_eq!(
        get("php vendor/bin/greet").stdout,
        "hello, ferrophp from cli\n"
    );
    assert!(!get("composer --version").stdout.starts_with("#!"));
    for via in Via::FERROPHP {
        let ours = composer_session(via, &fixture, &zip, &run_dir);
        for ((name, theirs), (_, ours)) in reference.iter().zip(&ours) {
            assert_eq!(ours, theirs, "{name} through {via:?} differs from bin/php");
        }
    }
}

/// The cache directory where install-test-deps.sh puts Debian source packages.
fn debian_sources() -> PathBuf {
    let cache = std::env::var_os("FERROPHP_CACHE").map_or_else(
        || {
            std::env::var_os("XDG_CACHE_HOME")
                .map_or_else(
                    || Path::new(&std::env::var_os("HOME").unwrap()).join(".cache"),
                    PathBuf::from,
                )
                .join("ferrophp")
        },
        PathBuf::from,
    );
    cache.join("src/debian-tests")
}

/// Unpacks the Debian source package `package` (version as installed) into `into` and
/// returns its tree.
fn unpack_source(package: &str, into: &Path) -> PathBuf {
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    assert!(
        !version.is_empty(),
        "{package} is not installed: run scripts/install-test-deps.sh"
    );
    let version = version.split_once(':').map_or(version.as_str(), |(_, v)| v);
    let dsc = debian_sources().join(format!("{package}_{version}.dsc"));
    assert!(
        dsc.is_file(),
        "{} missing: scripts/install-test-deps.sh downloads it",
        dsc.display()
    );
    let tree = into.join(package);
    let out = Command::new("dpkg-source")
        .args(["--no-check", "-x"])
        .arg(&dsc)
        .arg(&tree)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dpkg-source: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tree
}

/// Makes `vendor/autoload.php` as the package's autopkgtest does (pkg-php-tools' phpabtpl
/// for the installed libraries, phpab for the test classes), with bin/php.
fn debian_test_autoloader(tree: &Path, requires: &[&str], test_dirs: &[&str]) {
    let mut tpl = Command::new(build_php());
    tpl.arg("/usr/bin/phpabtpl").current_dir(tree);
    for r in requires {
        tpl.args(["--require", r]);
    }
    let out = tpl.output().unwrap();
    assert!(
        out.status.success(),
        "phpabtpl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(tree.join("debian/autoload.tests.php.tpl"), out.stdout).unwrap();
    std::fs::create_dir_all(tree.join("vendor")).unwrap();
    let out = Command::new(build_php())
        .args([
            "/usr/bin/phpab",
            "-o",
            "vendor/autoload.php",
            "-t",
            "debian/autoload.tests.php.tpl",
        ])
        .args(test_dirs)
        .current_dir(tree)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "phpab: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs Debian's PHPUnit in `tree` each way and compares with bin/php; returns bin/php's
/// summary line.
fn phpunit_same_as_build_php(tree: &Path, envs: &[(&str, &str)]) -> String {
    let run = |via: Via| {
        let mut cmd = via.command();
        cmd.args(["/usr/bin/phpunit", "--colors=never"])
            .current_dir(tree)
            .envs(envs.iter().copied());
        let mut outcome = Outcome::of(cmd, b"");
        // Timing and peak memory: "Time: 00:02.082, Memory: 30.00 MB".
        outcome.stdout = outcome
            .stdout
            .lines()
            .map(|l| {
                if l.starts_with("Time: ") {
                    "Time: (normalized)"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        outcome
    };
    let theirs = run(Via::BuildPhp);
    let summary = theirs
        .stdout
        .lines()
        .find(|l| l.starts_with("Tests: ") || l.starts_with("OK ("))
        .unwrap_or_else(|| panic!("no PHPUnit summary from bin/php:\n{theirs:?}"))
        .to_owned();
    for via in Via::FERROPHP {
        let ours = run(via);
        assert_eq!(
            ours,
            theirs,
            "PHPUnit in {} through {via:?} differs from bin/php",
            tree.display()
        );
    }
    summary
}

/// The number after `name: ` in a PHPUnit summary line ("Tests: 3308, Assertions: ...").
fn count(summary: &str, name: &str) -> usize {
    summary
        .split(", ")
        .find_map(|part| {
            part.trim_start_matches("OK (")
                .strip_prefix(&format!("{name}: "))
        })
        .map_or(0, |n| n.trim_end_matches(['.', ')']).parse().unwrap())
}

#[test]
fn phpunit_runs_league_commonmark_suite_same_as_build_php() {
    let dir = tempfile::tempdir().unwrap();
    let tree = unpack_source("php-league-commonmark", dir.path());
    debian_test_autoloader(
        &tree,
        &[
            "league/commonmark",
            "embed/embed",
            "mikehaertl/php-shellcommand",
            "nyholm/psr7",
            "symfony/finder",
        ],
        &["tests"],
    );
    let summary = phpunit_same_as_build_php(&tree, &[]);
    // Over 3,000 tests ran (some in a separate process), none failed.
    assert!(count(&summary, "Tests") > 3000, "{summary}");
    assert_eq!(
        count(&summary, "Failures") + count(&summary, "Errors"),
        0,
        "{summary}"
    );
}

#[test]
fn phpunit_runs_twig_suite_same_as_build_php() {
    let dir = tempfile::tempdir().unwrap();
    let tree = unpack_source("php-twig", dir.path());
    // Twig's own suite (its optional extras need packages Debian builds separately).
    debian_test_autoloader(
        &tree,
        &["psr/container", "symfony/phpunit-bridge", "twig/twig"],
        &["tests"],
    );
    let summary = phpunit_same_as_build_php(&tree, &[("SYMFONY_DEPRECATIONS_HELPER", "weak")]);
    assert!(count(&summary, "Tests") > 1500, "{summary}");
}
