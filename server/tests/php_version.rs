//! The PHP inside is the newest the archive hands out. `scripts/build-php.sh --resolve`
//! asks the machine's apt sources which php8.2 source versions they list (bookworm and
//! bookworm-security) and tries to download each, newest first, until one comes; the PHP
//! this binary embeds (`ferrophp --version`, `php -v` through it) must be no older than
//! that one. A newer version the sources list but whose source is refused is reported on a
//! line of its own (written past the test harness's capture, so it shows when the test
//! passes too), as build-php.sh warns on every build.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// A line on the terminal whatever the harness captures.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "php_version: {line}");
}

/// `8.2.36-1~deb12u1` -> [8, 2, 36]: upstream PHP's version, for ordering.
fn upstream(debian: &str) -> Vec<u64> {
    let v = debian.split_once(':').map_or(debian, |(_, v)| v);
    let v = v.rsplit_once('-').map_or(v, |(v, _)| v);
    v.split('.').map(|n| n.parse().unwrap_or(0)).collect()
}

#[test]
fn upstream_versions_order_as_php_releases() {
    assert_eq!(upstream("8.2.36-1~deb12u1"), [8, 2, 36]);
    assert_eq!(upstream("1:8.2.9-2"), [8, 2, 9]);
    assert!(upstream("8.2.36-1~deb12u1") > upstream("8.2.32-1~deb12u1"));
    assert!(upstream("8.2.100-1") > upstream("8.2.36-1"));
}

#[test]
fn the_built_php_is_the_newest_the_archive_hands_out() {
    let built = worker::PHP_VERSION;
    let banner = Command::new(env!("CARGO_BIN_EXE_ferrophp"))
        .arg("--version")
        .output()
        .expect("ferrophp runs");
    assert_eq!(
        String::from_utf8_lossy(&banner.stdout),
        format!("ferrophp {} (PHP {built})\n", env!("CARGO_PKG_VERSION")),
        "ferrophp --version names the PHP it embeds"
    );
    if let Ok(config) = std::env::var("PHP_CONFIG") {
        say(&format!(
            "built with PHP_CONFIG={config} (PHP {built}): not scripts/build-php.sh's, not compared with the archive"
        ));
        return;
    }
    let out = Command::new("bash")
        .arg(repo().join("scripts/build-php.sh"))
        .arg("--resolve")
        .output()
        .expect("build-php.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "build-php.sh --resolve failed (the apt sources list no php8.2 source that downloads, \
         or no deb-src entry: a broken set-up):\n{stdout}{stderr}"
    );
    let mut newest = None;
    let mut pinned = None;
    for line in stdout.lines() {
        match line.split_once(' ') {
            Some(("refused", rest)) => {
                let (version, why) = rest.split_once(' ').unwrap_or((rest, ""));
                say(&format!(
                    "the apt sources list php8.2 {version}, but its source is refused here \
                     ({why}): PHP {built} stays until it downloads"
                ));
            }
            Some(("downloadable", version)) => newest = Some(version.to_owned()),
            Some(("pinned", version)) => pinned = Some(version.to_owned()),
            _ => {}
        }
    }
    let newest = newest.unwrap_or_else(|| panic!("no downloadable version in:\n{stdout}{stderr}"));
    let ours = upstream(built);
    if let Some(pin) = pinned {
        // Pinned on purpose: the build follows the pin, whatever is newer.
        say(&format!(
            "FERROPHP_PHP_VERSION pins php8.2 {pin}; the newest that downloads is {newest}"
        ));
        assert_eq!(
            ours,
            upstream(&pin),
            "PHP {built} is built, the pin says {pin}"
        );
        return;
    }
    assert!(
        ours >= upstream(&newest),
        "PHP {built} is built, but the archive hands out php8.2 {newest}: \
         scripts/build-php.sh builds it (then cargo build)"
    );
    say(&format!(
        "PHP {built} built; the newest php8.2 source that downloads is {newest}"
    ));
}
