//! MediaWiki (Debian's `mediawiki` 1.39) on SQLite: the instance made by
//! `test-data/mediawiki/make-instance.sh` (installed by MediaWiki's own installer, code
//! used in place from /usr/share/mediawiki), with
//! `test-data/compare-apps/mediawiki/no-object-cache.php` as its overrides: no object
//! cache on either side (see that file).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;

pub(crate) fn prepare(repo: &Path, dir: &Path, php_cli: &Path) -> Result<PathBuf, String> {
    run(
        Command::new("bash")
            .arg(repo.join("test-data/mediawiki/make-instance.sh"))
            .arg(dir)
            .env("FERROPHP", php_cli),
        "make-instance.sh",
    )?;
    let overrides = repo.join("test-data/compare-apps/mediawiki/no-object-cache.php");
    std::fs::copy(&overrides, dir.join("test-overrides.php"))
        .map_err(|e| format!("{}: {e}", overrides.display()))?;
    let root = dir
        .join("docroot")
        .canonicalize()
        .map_err(|e| e.to_string())?;
    super::super::ini::install_probe(&root)?;
    Ok(root)
}
