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
//!
//! A one-file package (`ferrophp package`) runs the binary through the packed dynamic
//! loader, so `/proc/self/exe` names the loader: its launcher says where the tree is
//! (`FERROPHP_RELEASE_DIR`) and which file runs the app again (`FERROPHP_EXECUTABLE`,
//! for `PHP_BINARY` and `--supervise`'s child). Both are taken out of the environment
//! at start-up, so a process the app starts does not inherit them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Set by a package's launcher: the tree the binary runs from.
pub const RELEASE_DIR_ENV: &str = "FERROPHP_RELEASE_DIR";
/// Set by a package's launcher: the file that runs this binary again.
pub const EXECUTABLE_ENV: &str = "FERROPHP_EXECUTABLE";

/// The launcher's two variables, read once.
struct Overrides {
    release_dir: Option<OsString>,
    executable: Option<OsString>,
}

fn overrides() -> &'static Overrides {
    static OVERRIDES: OnceLock<Overrides> = OnceLock::new();
    OVERRIDES.get_or_init(|| Overrides {
        release_dir: std::env::var_os(RELEASE_DIR_ENV).filter(|v| !v.is_empty()),
        executable: std::env::var_os(EXECUTABLE_ENV).filter(|v| !v.is_empty()),
    })
}

/// The directory of the running binary (symlinks resolved), if it can be known.
pub fn binary_dir() -> Option<PathBuf> {
    if let Some(dir) = &overrides().release_dir {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    exe.parent().map(Path::to_path_buf)
}

/// The file that runs this binary again with other arguments: the package when running
/// from one, else the binary itself.
pub fn executable() -> std::io::Result<PathBuf> {
    match &overrides().executable {
        Some(exe) => Ok(PathBuf::from(exe)),
        None => std::env::current_exe(),
    }
}

/// Points `PHP_INI_SCAN_DIR` at the release tree's `conf.d` (and, in a package, `PHPRC`
/// at the tree) when the operator has not set it. PHP reads these with `getenv()` during
/// start-up, so this must run in `main` before any other thread exists (setting the
/// environment races with readers).
pub fn prepare_process_env() {
    let package_tree = overrides().release_dir.clone();
    std::env::remove_var(RELEASE_DIR_ENV);
    std::env::remove_var(EXECUTABLE_ENV);
    // PHP looks for php.ini beside PHP_BINARY, which in a package is the package file:
    // point it at the tree's instead (PHPRC is searched first), unless the operator did.
    if let Some(tree) = package_tree {
        if std::env::var_os("PHPRC").is_none() {
            std::env::set_var("PHPRC", tree);
        }
    }
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
/// from there wherever the tree was moved; and where there is no `/tmp` (an empty
/// container running a one-file package), OPcache's lock file in the temporary directory
/// the environment names (`TMPDIR`, which the package's launcher then sets) instead of
/// PHP's fixed `/tmp`, where OPcache cannot start.
pub fn ini_defaults() -> Vec<(String, String)> {
    let mut defaults = Vec::new();
    if !Path::new("/tmp").is_dir() {
        defaults.push((
            "opcache.lockfile_path".to_owned(),
            std::env::temp_dir().to_string_lossy().into_owned(),
        ));
    }
    let Some(dir) = binary_dir() else {
        return defaults;
    };
    let Ok(entries) = std::fs::read_dir(dir.join("lib/php/extensions")) else {
        return defaults;
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
    if let [one] = api_dirs.as_slice() {
        defaults.push((
            "extension_dir".to_owned(),
            one.to_string_lossy().into_owned(),
        ));
    }
    defaults
}
