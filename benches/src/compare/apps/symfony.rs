//! The Symfony app (`test-data/compare-apps/symfony`: Debian's Symfony 5.4 FrameworkBundle
//! and TwigBundle with php-twig, a MicroKernelTrait kernel in the prod environment, a
//! controller rendering a Twig template): copied into the scratch directory, its
//! container compiled and templates warmed once (`bin/warmup.php`) before any server
//! starts. The document root is its `public/` (index.php for classic, worker.php for
//! worker mode).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;

pub(crate) fn prepare(repo: &Path, dir: &Path, php_cli: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    run(
        Command::new("cp")
            .arg("-r")
            .arg(repo.join("test-data/compare-apps/symfony/."))
            .arg(dir),
        "copying the Symfony app",
    )?;
    let dir = dir.canonicalize().map_err(|e| e.to_string())?;
    run(
        Command::new(php_cli)
            .arg("php-cli")
            .arg(dir.join("bin/warmup.php"))
            .current_dir(&dir),
        "Symfony bin/warmup.php",
    )?;
    let root = dir.join("public");
    super::super::ini::install_probe(&root)?;
    Ok(root)
}
