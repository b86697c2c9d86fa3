//! Where PHP's configuration and extensions are when ferrophp runs from a release tree
//! (`scripts/release.sh`) that may have been moved anywhere: found from the binary's own
//! path, never from the paths PHP was compiled with (those point into the build cache).
//!
//! ```text
//! ferrophp-<version>/ferrophp        the binary (rpath $ORIGIN/lib)
//!                   php.ini          found by PHP next to the binary
//!                   conf.d/*.ini     scanned unless PHP_INI_SCAN_DIR says otherwise
//!                   lib/php/extensions/<api>/*.so   the default extension_dir
//! ```
//!
//! php.ini is searched the way PHP itself searches: `-c`/`--php-ini`, then `PHPRC`, then
//! the binary's directory, then the directory PHP was configured with. A development
//! build (target/debug) has none of these files and keeps the compiled-in paths.

use std::path::{Path, PathBuf};

/// The directory of the running binary (symlinks resolved), if it can be known.
pub fn binary_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    exe.parent().map(Path::to_path_buf)
}

/// Points `PHP_INI_SCAN_DIR` at the release tree's `conf.d` when the operator has not set
/// it. PHP reads that variable with `getenv()` during start-up, so this must run in
/// `main` before any other thread exists (setting the environment races with readers).
pub fn prepare_process_env() {
    if std::env::var_os("PHP_INI_SCAN_DIR").is_some() {
        return;
    }
    if let Some(conf_d) = binary_dir().map(|d| d.join("conf.d")) {
        if conf_d.is_dir() {
            std::env::set_var("PHP_INI_SCAN_DIR", conf_d);
        }
    }
}

/// Ini defaults the release tree implies (php.ini and `-d` still override them):
/// `extension_dir` inside the tree, so `extension=apcu` and `zend_extension=opcache` load
/// from there wherever the tree was moved.
pub fn ini_defaults() -> Vec<(String, String)> {
    let Some(dir) = binary_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir.join("lib/php/extensions")) else {
        return Vec::new();
    };
    // PHP names the directory after its build: no-debug-zts-<module api>.
    let api_dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains("-zts-"))
        })
        .collect();
    match api_dirs.as_slice() {
        [one] => vec![(
            "extension_dir".to_owned(),
            one.to_string_lossy().into_owned(),
        )],
        _ => Vec::new(),
    }
}
