//! `--confine`: the `open_basedir` value that keeps PHP's file functions inside what the
//! application needs (document root, worker scripts, uploads, sessions, temporary files).
//!
//! PHP checks `open_basedir` on every path a script opens (fopen, include, file_get_contents,
//! scandir...), so a script tricked into reading `/etc/passwd` or `../config` gets false
//! and a warning. The list is computed from the settings the server knows at start-up:
//! values set only in php.ini are not seen, so a confined server should get its
//! `upload_tmp_dir` and `session.save_path` from `-d` or the TOML `[ini]` table.

use std::path::{Path, PathBuf};

/// The `open_basedir` value, `:`-separated canonical directories (PHP reads each as a
/// directory, not a prefix: `/srv/app` does not admit `/srv/app-secrets`, which
/// `server/tests/security_defaults.rs` checks).
///
/// - `layout`: the document root and each worker script's directory (a worker may live
///   outside the root), as configured: a symlink in them is left for PHP to resolve at
///   each check, so when a deploy switches `current` the confinement moves to the new
///   release with the rest (each thread resolves it again after a reload, `site.rs`);
/// - `ini`: the user's `-d`/TOML settings followed by the server's defaults, first wins.
pub(crate) fn open_basedir(
    layout: &crate::site::Layout,
    ini: &[(String, String)],
) -> Result<String, String> {
    let scripts: Vec<PathBuf> = layout.workers.iter().map(|w| w.script.clone()).collect();
    directories(&layout.root, &scripts, ini)
}

fn directories(
    root: &Path,
    worker_scripts: &[PathBuf],
    ini: &[(String, String)],
) -> Result<String, String> {
    let get = |key: &str| {
        ini.iter()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_owned())
    };
    if get("open_basedir").is_some() {
        return Err("--confine sets open_basedir itself: drop -d open_basedir or --confine".into());
    }
    // As configured (absolute): PHP resolves them itself at each check.
    let mut dirs: Vec<(PathBuf, bool)> = vec![(root.to_path_buf(), false)];
    dirs.extend(
        worker_scripts
            .iter()
            .filter_map(|s| s.parent().map(|p| (p.to_path_buf(), false))),
    );
    // Where PHP puts uploads and temporary files: php_get_temporary_directory() looks at
    // sys_temp_dir, then TMPDIR, then /tmp. The server's own start-up probe lives there too.
    let temp = get("sys_temp_dir")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("TMPDIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    dirs.push((temp, true));
    if let Some(upload) = get("upload_tmp_dir") {
        dirs.push((upload.into(), true));
    }
    if let Some(save_path) = get("session.save_path") {
        // "N;/path" and "N;MODE;/path": the directory is the last field.
        let dir = save_path.rsplit(';').next().unwrap_or(&save_path);
        dirs.push((dir.into(), true));
    }
    let mut entries: Vec<String> = Vec::new();
    for (dir, resolve) in dirs {
        // PHP compares resolved paths; a directory that does not exist yet is kept as given.
        let dir = match resolve {
            true => std::fs::canonicalize(&dir).unwrap_or(dir),
            false => dir,
        };
        let entry = dir.to_string_lossy().into_owned();
        if entry.contains(':') {
            return Err(format!(
                "--confine: {entry} contains ':', which open_basedir uses as a separator"
            ));
        }
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    Ok(entries.join(":"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.into(), v.into())
    }

    #[test]
    fn worker_upload_and_session_directories_are_listed_without_save_path_levels() {
        let root = std::env::temp_dir().canonicalize().unwrap();
        let value = directories(
            &root,
            &[PathBuf::from("/nonexistent-app/worker.php")],
            &[
                kv("session.save_path", "2;0600;/nonexistent-sessions"),
                kv("upload_tmp_dir", "/nonexistent-uploads"),
            ],
        )
        .unwrap();
        let entries: Vec<&str> = value.split(':').collect();
        assert_eq!(entries[0], root.to_str().unwrap(), "{value}");
        assert!(entries.contains(&"/nonexistent-app"), "{value}");
        assert!(entries.contains(&"/nonexistent-sessions"), "{value}");
        assert!(entries.contains(&"/nonexistent-uploads"), "{value}");
    }

    #[test]
    fn an_explicit_open_basedir_conflicts() {
        let err = directories(Path::new("/"), &[], &[kv("open_basedir", "/srv")]);
        assert!(err.is_err());
    }
}
