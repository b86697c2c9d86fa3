//! Extraction into a content-addressed directory, all or nothing: the tree is written
//! into a temporary directory beside its final name, flushed to disk, made read-only and
//! renamed in one step. Concurrent first starts each write their own temporary tree and
//! the first rename wins (the others remove theirs and use the winner's); a crash leaves
//! only a temporary directory, removed by the next start. No entry can write outside the
//! tree: every path was checked by [`crate::Index::decode`], directories are made by us
//! (never followed through a link: links are made last), and files are created with
//! `O_EXCL | O_NOFOLLOW`.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::format::{io, Entry, Error, Index, Result};
use crate::read::Package;

/// Makes `dest` hold the package's tree unless it already exists; a writable entry
/// becomes a link to the same path (relative to the app directory) under `data_dir`.
/// Returns whether this call extracted it.
pub fn extract_once(pkg: &Package, index: &Index, dest: &Path, data_dir: &Path) -> Result<bool> {
    if dest.is_dir() {
        return Ok(false);
    }
    let parent = dest
        .parent()
        .ok_or_else(|| Error::Invalid(format!("{}: no parent directory", dest.display())))?;
    fs::create_dir_all(parent).map_err(io(format!("cache directory {}", parent.display())))?;
    let name = dest
        .file_name()
        .ok_or_else(|| Error::Invalid(format!("{}: no name", dest.display())))?;
    remove_abandoned(parent, name);
    let tmp = parent.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        nanos()
    ));
    let written = write_tree(pkg, index, &tmp, data_dir).and_then(|()| {
        sync_filesystem(&tmp);
        seal(&tmp)
    });
    if let Err(e) = written {
        remove_tree(&tmp);
        return Err(e);
    }
    match fs::rename(&tmp, dest) {
        Ok(()) => Ok(true),
        // Another start renamed its copy first: the same bytes, keep theirs.
        Err(_) if dest.is_dir() => {
            remove_tree(&tmp);
            Ok(false)
        }
        Err(e) => {
            remove_tree(&tmp);
            Err(Error::Io(format!("renaming into {}", dest.display()), e))
        }
    }
}

/// How long before now an extracted file's modification time must lie for OPcache to
/// cache it: PHP's `opcache.file_update_protection` (default 2 s) refuses files younger
/// than that, so files stamped with the extraction's own time would all be compiled
/// anew on every request for the first seconds of a new container.
const OPCACHE_UPDATE_PROTECTION: Duration = Duration::from_secs(60);

/// The modification time every extracted file gets: the package's own (so a new package
/// gives its assets new times, for apps that version URLs by `filemtime`), never later
/// than [`OPCACHE_UPDATE_PROTECTION`] before now (a package copied a moment ago, or a
/// clock behind the build machine's).
fn files_mtime(pkg: &Package) -> SystemTime {
    let newest = SystemTime::now()
        .checked_sub(OPCACHE_UPDATE_PROTECTION)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    fs::metadata(pkg.path())
        .and_then(|m| m.modified())
        .map_or(newest, |built| built.min(newest))
}

fn write_tree(pkg: &Package, index: &Index, root: &Path, data_dir: &Path) -> Result<()> {
    fs::create_dir(root).map_err(io(root.display()))?;
    let mtime = files_mtime(pkg);
    let app = &index.manifest.app_dir;
    for entry in &index.entries {
        let path = root.join(OsStr::from_bytes(entry.path()));
        match entry {
            Entry::Dir { .. } => make_dirs(root, entry.path())?,
            Entry::File { executable, .. } => {
                make_parent(root, entry.path())?;
                let bytes = pkg.content(entry)?;
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(if *executable { 0o555 } else { 0o444 })
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&path)
                    .map_err(io(path.display()))?;
                file.write_all(&bytes).map_err(io(path.display()))?;
                file.set_modified(mtime).map_err(io(path.display()))?;
            }
            Entry::Symlink { .. } | Entry::Writable { .. } => {}
        }
    }
    // Links last, so nothing above is ever written through one.
    for entry in &index.entries {
        let path = root.join(OsStr::from_bytes(entry.path()));
        let target = match entry {
            Entry::Symlink { target, .. } => PathBuf::from(OsStr::from_bytes(target)),
            Entry::Writable { path: p } => {
                let rel = p
                    .strip_prefix(app.as_slice())
                    .and_then(|r| r.strip_prefix(b"/"))
                    .ok_or_else(|| {
                        Error::Unsafe(format!(
                            "writable path {} is outside the app directory",
                            String::from_utf8_lossy(p)
                        ))
                    })?;
                data_dir.join(OsStr::from_bytes(rel))
            }
            _ => continue,
        };
        make_parent(root, entry.path())?;
        std::os::unix::fs::symlink(&target, &path).map_err(io(path.display()))?;
    }
    Ok(())
}

/// Creates every directory of `rel` below `root` that does not exist; an existing
/// component must be a real directory.
fn make_dirs(root: &Path, rel: &[u8]) -> Result<()> {
    let mut dir = root.to_path_buf();
    for component in rel.split(|&b| b == b'/') {
        dir.push(OsStr::from_bytes(component));
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::Unsafe(format!(
                    "{} is both a file and a directory in the package",
                    dir.display()
                )))
            }
            Err(_) => fs::create_dir(&dir).map_err(io(dir.display()))?,
        }
    }
    Ok(())
}

fn make_parent(root: &Path, rel: &[u8]) -> Result<()> {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(slash) => make_dirs(root, &rel[..slash]),
        None => Ok(()),
    }
}

/// Makes every directory of the tree read-only (files are created so).
fn seal(root: &Path) -> Result<()> {
    for entry in fs::read_dir(root).map_err(io(root.display()))? {
        let entry = entry.map_err(io(root.display()))?;
        if entry
            .file_type()
            .map_err(io(entry.path().display()))?
            .is_dir()
        {
            seal(&entry.path())?;
        }
    }
    fs::set_permissions(root, fs::Permissions::from_mode(0o555)).map_err(io(root.display()))
}

/// Removes a tree this module made (read-only directories included).
pub fn remove_tree(root: &Path) {
    fn writable(dir: &Path) {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o755));
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    writable(&e.path());
                }
            }
        }
    }
    writable(root);
    let _ = fs::remove_dir_all(root);
}

/// Temporary trees of `name` left by a start that died (its process is gone).
fn remove_abandoned(parent: &Path, name: &OsStr) {
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            remove_tree(&e.path());
        }
    }
}

/// Flushes the filesystem holding `path`, so the rename never publishes a tree whose
/// files are not on disk yet (one `syncfs` rather than an fsync per file).
fn sync_filesystem(path: &Path) {
    if let Ok(dir) = fs::File::open(path) {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs takes a descriptor this function owns for the call's duration.
        unsafe { libc::syncfs(dir.as_raw_fd()) };
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
