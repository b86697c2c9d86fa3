//! Which file answers a request for a path the router approved: the path itself, or its
//! precompressed sibling the client prefers (never a symlink, which could lead outside
//! the document root), a regular file, with its bytes from the content cache when they
//! are still those of the file as it is now.

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;

use super::encoding::Encoding;
use crate::static_cache::{self, Lookup};

/// The representation chosen for this request: its bytes in the cache, or open.
pub(super) struct Opened {
    pub(super) source: Source,
    pub(super) meta: Metadata,
    pub(super) encoding: Option<Encoding>,
    /// Some precompressed sibling exists, so responses depend on Accept-Encoding.
    pub(super) has_variants: bool,
}

/// Where a representation's bytes come from.
pub(super) enum Source {
    /// The content cache holds exactly the bytes of the file as `meta` describes it.
    Cached(Bytes),
    /// Open; `cache_as` is the path to cache the bytes under when the cache admits them
    /// (`now` is the clock read before the handle was stat'ed, see [`static_cache`]).
    File {
        file: File,
        cache_as: PathBuf,
        now: SystemTime,
    },
}

/// The best acceptable representation of `path`: the first sibling in `preferred` that
/// exists, else the file itself; from the content cache when it holds the bytes of the
/// file exactly as stat'ed here, otherwise opened. Blocking.
pub(super) fn open(path: &Path, preferred: [Option<Encoding>; 2]) -> io::Result<Opened> {
    let cache = static_cache::cache();
    // Stat before opening: opening a FIFO would block until a writer appears. The same
    // stat revalidates a cached body.
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) => {
            if let Some(cache) = cache {
                cache.remove(path);
            }
            return Err(err);
        }
    };
    if !meta.is_file() {
        return Err(io::ErrorKind::NotFound.into());
    }
    let mut siblings: [Option<Metadata>; 2] = [None, None];
    for (i, encoding) in Encoding::ALL.into_iter().enumerate() {
        // The router vetted `path` but not its siblings; refusing symlinks keeps them from
        // reaching outside the document root.
        siblings[i] = std::fs::symlink_metadata(encoding.sibling(path))
            .ok()
            .filter(Metadata::is_file);
    }
    let has_variants = siblings.iter().any(Option::is_some);
    for encoding in preferred.into_iter().flatten() {
        let index = Encoding::ALL
            .iter()
            .position(|&e| e == encoding)
            .unwrap_or(0);
        let Some(sibling_meta) = siblings[index].take() else {
            continue;
        };
        let sibling = encoding.sibling(path);
        if let Some(bytes) = cached(cache, &sibling, &sibling_meta) {
            return Ok(Opened {
                source: Source::Cached(bytes),
                meta: sibling_meta,
                encoding: Some(encoding),
                has_variants,
            });
        }
        // A sibling that vanished or is unreadable is not an error: identity still works.
        let now = SystemTime::now();
        if let Some((file, meta)) = open_regular(&sibling).ok().flatten() {
            return Ok(Opened {
                source: Source::File {
                    file,
                    cache_as: sibling,
                    now,
                },
                meta,
                encoding: Some(encoding),
                has_variants,
            });
        }
    }
    if let Some(bytes) = cached(cache, path, &meta) {
        return Ok(Opened {
            source: Source::Cached(bytes),
            meta,
            encoding: None,
            has_variants,
        });
    }
    let now = SystemTime::now();
    let (file, meta) = open_regular(path)?.ok_or(io::ErrorKind::NotFound)?;
    Ok(Opened {
        source: Source::File {
            file,
            cache_as: path.to_owned(),
            now,
        },
        meta,
        encoding: None,
        has_variants,
    })
}

/// The cached body of `path` if it is the file `meta` describes. A stale entry the
/// cache will not take the new version of (too large now) is dropped here.
fn cached(
    cache: Option<&static_cache::StaticCache>,
    path: &Path,
    meta: &Metadata,
) -> Option<Bytes> {
    let cache = cache?;
    match cache.lookup(path, meta) {
        Lookup::Hit(bytes) => Some(bytes),
        Lookup::Stale if !cache.fits(meta) => {
            cache.remove(path);
            None
        }
        Lookup::Stale | Lookup::Absent => None,
    }
}

/// Opens `path` and returns it with its metadata if it is (still) a regular file; the
/// metadata comes from the open handle so size and mtime describe the bytes we send.
fn open_regular(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    Ok(meta.is_file().then_some((file, meta)))
}

#[cfg(test)]
mod tests {
    use crate::static_files::tests::{dir, get, JS};
    use http::header;
    use http::StatusCode;

    #[tokio::test]
    async fn missing_and_non_regular_files_are_404() {
        let d = dir();
        let (status, _, _) = get(&d.path().join("nope.css"), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _, _) = get(d.path(), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn sibling_symlinks_are_ignored() {
        let d = dir();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "SECRET").unwrap();
        std::fs::write(d.path().join("lib.js"), JS).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("lib.js.br"))
            .unwrap();
        let (_, headers, body) = get(&d.path().join("lib.js"), &[("accept-encoding", "br")]).await;
        assert_eq!(body, JS.as_bytes());
        assert!(headers.get(header::VARY).is_none());
    }
}
