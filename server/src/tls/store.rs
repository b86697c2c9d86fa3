//! The data directory's certificate files (`<data-dir>/certs/`): where each thing lives,
//! writes that are atomic and private, and the lock files that keep processes sharing
//! the directory from ordering the same certificate twice.
//!
//! ```text
//! certs/
//!   challenges/http-01/<token>          key authorizations, while an order is open
//!   challenges/tls-alpn-01/<name>
//!   <issuer>/account.json               ACME account key and URL (instant-acme's credentials)
//!   <issuer>/account.lock
//!   <issuer>/<name>/chain.pem key.pem meta.json lock
//! ```
//!
//! `<issuer>` is the directory URL made into a file name, so moving to another CA (or
//! from a staging to a production directory) starts a fresh account and fresh
//! certificates beside the old ones. Every file is written to a temporary name, synced,
//! renamed over the old one and the directory synced: a crash leaves the old file or the
//! new one, never half of either. Files are 0600 and directories 0700.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The `certs/` directory of one data directory, for one ACME directory URL.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    /// `<data-dir>/certs/<issuer>`.
    issuer: PathBuf,
}

impl Store {
    /// The store under `data_dir` for the CA at `directory_url`; creates its directories.
    pub(crate) fn open(data_dir: &Path, directory_url: &str) -> Result<Store, String> {
        let root = data_dir.join("certs");
        let issuer = root.join(issuer_dir_name(directory_url));
        for dir in [
            &issuer,
            &root.join("challenges/http-01"),
            &root.join("challenges/tls-alpn-01"),
        ] {
            create_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        Ok(Store { issuer })
    }

    pub(crate) fn account_file(&self) -> PathBuf {
        self.issuer.join("account.json")
    }

    pub(crate) fn account_lock(&self) -> PathBuf {
        self.issuer.join("account.lock")
    }

    /// The directory of one name's certificate (created on demand by the writers and
    /// [`FileLock::acquire`]).
    pub(crate) fn name_dir(&self, name: &str) -> PathBuf {
        self.issuer.join(name)
    }

    /// The files of `name`'s certificate as stored: chain, key and metadata, or `None`
    /// when any is missing.
    pub(crate) fn read_certificate(&self, name: &str) -> io::Result<Option<StoredCertificate>> {
        let dir = self.name_dir(name);
        let read = |file: &str| match fs::read(dir.join(file)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        };
        let (Some(chain_pem), Some(key_pem), Some(meta_json)) =
            (read("chain.pem")?, read("key.pem")?, read("meta.json")?)
        else {
            return Ok(None);
        };
        Ok(Some(StoredCertificate {
            chain_pem,
            key_pem,
            meta_json,
        }))
    }

    /// Replaces `name`'s certificate. The key goes first and the chain second: a crash
    /// between the two leaves a key that does not match the chain, which the loader
    /// refuses (as if nothing were stored) rather than serving a broken pair.
    pub(crate) fn write_certificate(
        &self,
        name: &str,
        chain_pem: &[u8],
        key_pem: &[u8],
        meta_json: &[u8],
    ) -> io::Result<()> {
        let dir = self.name_dir(name);
        create_private_dir(&dir)?;
        write_atomic(&dir.join("key.pem"), key_pem)?;
        write_atomic(&dir.join("chain.pem"), chain_pem)?;
        write_atomic(&dir.join("meta.json"), meta_json)
    }

    /// Replaces only the metadata (a new ARI window or next check).
    pub(crate) fn write_meta(&self, name: &str, meta_json: &[u8]) -> io::Result<()> {
        write_atomic(&self.name_dir(name).join("meta.json"), meta_json)
    }
}

/// The three files of a stored certificate, unparsed.
pub(crate) struct StoredCertificate {
    pub(crate) chain_pem: Vec<u8>,
    pub(crate) key_pem: Vec<u8>,
    pub(crate) meta_json: Vec<u8>,
}

/// An exclusive `flock` on a lock file, released when dropped (or when the process dies,
/// which is why it is a lock and not a marker file). Processes sharing the data directory
/// over a local or network file system that supports `flock` take turns on it.
pub(crate) struct FileLock {
    _file: File,
}

impl FileLock {
    /// The lock if it is free now, `None` if another holder has it. Creates the file and
    /// its directory if needed. Never blocks, so waiting for it stays on the async
    /// runtime ([`FileLock::wait`]) and a server shutting down never waits on a thread
    /// stuck in `flock`.
    pub(crate) fn try_acquire(path: &Path) -> io::Result<Option<FileLock>> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(FileLock { _file: file })),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits for the lock, looking again every 200 ms (a holder keeps it for one order:
    /// seconds), and holds it.
    pub(crate) async fn wait(path: &Path) -> io::Result<FileLock> {
        loop {
            if let Some(lock) = FileLock::try_acquire(path)? {
                return Ok(lock);
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}

/// `https://acme-v02.api.letsencrypt.org/directory` → `acme-v02.api.letsencrypt.org-directory`:
/// the URL without its scheme, every character other than a letter, digit, `.` or `-`
/// replaced by `-`.
pub(crate) fn issuer_dir_name(directory_url: &str) -> String {
    let rest = directory_url
        .split_once("://")
        .map_or(directory_url, |(_, rest)| rest);
    let name: String = rest
        .trim_end_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    // A name of dots only would climb out of certs/.
    if name.trim_matches('.').is_empty() {
        "issuer".into()
    } else {
        name
    }
}

/// Creates `dir` and its parents, 0700 for the ones it creates.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes `bytes` to `path` so that readers see the old content or the new, never a mix,
/// and so that it survives a crash once this returns: a 0600 temporary file beside it,
/// fsync, rename, fsync of the directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    // Unique per process and call, so two processes (or tasks) never share a temporary.
    let tmp = dir.join(format!(
        ".{file_name}.{}.{}.tmp",
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes `path`, ignoring a file already gone.
pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn issuer_names_are_single_path_components() {
        assert_eq!(
            issuer_dir_name("https://acme-v02.api.letsencrypt.org/directory"),
            "acme-v02.api.letsencrypt.org-directory"
        );
        assert_eq!(
            issuer_dir_name("https://127.0.0.1:14000/dir"),
            "127.0.0.1-14000-dir"
        );
        assert_eq!(issuer_dir_name("https://../"), "issuer");
        assert!(!issuer_dir_name("https://a/../../etc").contains('/'));
    }

    #[test]
    fn atomic_writes_are_private_and_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temporary left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_lock_is_free_again_once_its_holder_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("name/lock");
        let first = FileLock::try_acquire(&path).unwrap().expect("free");
        // A second open of the file is another holder, as another process would be.
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(first);
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }
}
