//! WordPress (Debian's `wordpress` 6.1 and its twentytwentyone theme) on the harness's
//! private MariaDB: the site made by `test-data/databases/make-wordpress.sh` (a copy of
//! /usr/share/wordpress with its own wp-config.php), with debugging off as in production,
//! installed and filled by `test-data/compare-apps/wordpress/populate.php` through
//! WordPress's own PHP API.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run, MariaDb};

const DATABASE: &str = "wordpress";

pub(crate) fn prepare(
    repo: &Path,
    dir: &Path,
    db: &MariaDb,
    php_cli: &Path,
) -> Result<PathBuf, String> {
    db.sql(&format!("CREATE DATABASE {DATABASE}"))?;
    run(
        Command::new("bash")
            .arg(repo.join("test-data/databases/make-wordpress.sh"))
            .arg(dir)
            .arg(&db.socket)
            .arg(DATABASE),
        "make-wordpress.sh",
    )?;
    let root = dir.join("wp").canonicalize().map_err(|e| e.to_string())?;
    // make-wordpress.sh is for tests, which want every notice logged; a benchmark runs
    // the site as it is deployed.
    let config = root.join("wp-config.php");
    let text =
        std::fs::read_to_string(&config).map_err(|e| format!("{}: {e}", config.display()))?;
    let production = text.replace("define('WP_DEBUG', true);", "define('WP_DEBUG', false);");
    if production == text {
        return Err(format!(
            "{}: no WP_DEBUG line to turn off",
            config.display()
        ));
    }
    std::fs::write(&config, production).map_err(|e| e.to_string())?;
    run(
        Command::new(php_cli)
            .arg("php-cli")
            .arg(repo.join("test-data/compare-apps/wordpress/populate.php"))
            .arg(&root),
        "WordPress populate.php",
    )?;
    super::super::ini::install_probe(&root)?;
    Ok(root)
}
