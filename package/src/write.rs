//! Making a package: the entries collected from directories and generated files, each
//! file compressed on its own (on every core), written after the launcher with the index
//! and the trailer, hashed as it is written, and renamed into place in one step, so a
//! running copy of the previous package is never touched and a reader never sees half a
//! file.

use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::format::{
    check_path, check_symlink, io, show, Codec, Entry, Error, Index, Manifest, ReleaseId, Result,
    Trailer, HASH_LEN,
};

/// zstd level when none is given. On the Symfony package of the tests (CPU seconds,
/// size): level 1 0.3 s, 50.8 MB; 3 0.6 s, 46.1 MB; 6 1.4 s, 44.0 MB; 12 4.9 s, 42.8 MB;
/// 19 41.6 s, 38.8 MB. Past 6 the size falls slowly and the time fast.
pub const DEFAULT_LEVEL: i32 = 6;

/// Where a file's bytes come from.
enum Content {
    Path(PathBuf),
    Bytes(Vec<u8>),
}

enum Pending {
    Dir,
    File { executable: bool, content: Content },
    Symlink { target: Vec<u8> },
    Writable,
}

/// The rules for one directory copied into the package.
#[derive(Debug, Default, Clone)]
pub struct TreeRules {
    /// Paths (relative to the directory) left out, with everything below them.
    pub exclude: Vec<PathBuf>,
    /// Paths (relative to the directory) that become writable links to the data
    /// directory; their contents are not packed.
    pub writable: Vec<PathBuf>,
}

/// What [`Builder::add_tree`] took and left.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TreeReport {
    /// Regular files packed.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files left out because they are under a writable path.
    pub under_writable: usize,
    /// Files and directories left out by `exclude`.
    pub excluded: usize,
}

/// What [`Builder::write`] made.
#[derive(Debug, Clone)]
pub struct Written {
    /// The package's BLAKE3 (its content address).
    pub hash: [u8; HASH_LEN],
    /// The file's size.
    pub size: u64,
    /// Regular files inside.
    pub files: usize,
    /// Their bytes before compression.
    pub content_bytes: u64,
}

/// Collects a package's entries, then writes it.
pub struct Builder {
    entries: std::collections::BTreeMap<Vec<u8>, Pending>,
    manifest: Manifest,
    level: i32,
}

impl Builder {
    /// An empty package with this manifest; files are compressed at zstd `level`.
    pub fn new(manifest: Manifest, level: i32) -> Builder {
        Builder {
            entries: Default::default(),
            manifest,
            level,
        }
    }

    fn insert(&mut self, path: Vec<u8>, pending: Pending) -> Result<()> {
        check_path(&path)?;
        if self.entries.contains_key(&path) {
            return Err(Error::Invalid(format!(
                "{} is in the package twice",
                show(&path)
            )));
        }
        self.entries.insert(path, pending);
        Ok(())
    }

    /// A file copied from `source` to `path`.
    pub fn add_file(&mut self, path: &[u8], source: &Path, executable: bool) -> Result<()> {
        self.insert(
            path.to_vec(),
            Pending::File {
                executable,
                content: Content::Path(source.to_path_buf()),
            },
        )
    }

    /// A file with these bytes at `path`.
    pub fn add_bytes(&mut self, path: &[u8], bytes: Vec<u8>, executable: bool) -> Result<()> {
        self.insert(
            path.to_vec(),
            Pending::File {
                executable,
                content: Content::Bytes(bytes),
            },
        )
    }

    /// A directory at `path` (kept even when empty).
    pub fn add_dir(&mut self, path: &[u8]) -> Result<()> {
        self.insert(path.to_vec(), Pending::Dir)
    }

    /// A link at `path` to a relative `target` inside the package.
    pub fn add_symlink(&mut self, path: &[u8], target: &[u8]) -> Result<()> {
        check_symlink(path, target)?;
        self.insert(
            path.to_vec(),
            Pending::Symlink {
                target: target.to_vec(),
            },
        )
    }

    /// A writable path: a link to the same path under the data directory.
    pub fn add_writable(&mut self, path: &[u8]) -> Result<()> {
        self.insert(path.to_vec(), Pending::Writable)
    }

    /// Copies the directory `dir` to `prefix` in the package: regular files (their
    /// executable bit kept), directories, and links whose target stays inside `dir`
    /// (absolute ones made relative). A link leaving `dir`, a device, a FIFO or a socket
    /// is refused; `rules` leave paths out or make them writable.
    pub fn add_tree(&mut self, prefix: &[u8], dir: &Path, rules: &TreeRules) -> Result<TreeReport> {
        let root = dir
            .canonicalize()
            .map_err(io(format!("app directory {}", dir.display())))?;
        let mut report = TreeReport::default();
        for w in &rules.writable {
            let rel = relative_bytes(w)?;
            self.add_writable(&join(prefix, &rel))?;
        }
        self.walk(prefix, &root, &root, rules, &mut report)?;
        Ok(report)
    }

    fn walk(
        &mut self,
        prefix: &[u8],
        root: &Path,
        dir: &Path,
        rules: &TreeRules,
        report: &mut TreeReport,
    ) -> Result<()> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .map_err(io(dir.display()))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<_>>()
            .map_err(io(dir.display()))?;
        names.sort();
        for name in names {
            let path = dir.join(&name);
            let rel = path.strip_prefix(root).expect("walked from the root");
            if rules.exclude.iter().any(|x| rel == x) {
                report.excluded += 1;
                continue;
            }
            if rules.writable.iter().any(|w| rel == w) {
                report.under_writable += count_files(&path);
                continue;
            }
            let in_package = join(prefix, rel.as_os_str().as_bytes());
            let meta = fs::symlink_metadata(&path).map_err(io(path.display()))?;
            let kind = meta.file_type();
            if kind.is_dir() {
                self.add_dir(&in_package)?;
                self.walk(prefix, root, &path, rules, report)?;
            } else if kind.is_file() {
                self.add_file(&in_package, &path, meta.mode() & 0o111 != 0)?;
                report.files += 1;
                report.bytes += meta.len();
            } else if kind.is_symlink() {
                let target = link_inside(root, &path, rel)?;
                self.add_symlink(&in_package, &target)?;
            } else {
                return Err(Error::Unsafe(format!(
                    "{} is a device, FIFO or socket: only files, directories and links can be \
                     packed",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// Writes the package to `out` (through a temporary file beside it, renamed into
    /// place): `launcher`, then the files, the index and the trailer for `release`.
    pub fn write(self, launcher: &[u8], release: &ReleaseId, out: &Path) -> Result<Written> {
        let Builder {
            entries,
            manifest,
            level,
        } = self;
        let entries: Vec<(Vec<u8>, Pending)> = entries.into_iter().collect();
        let blobs = compress_all(&entries, level)?;

        let name = out
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{}: not a file name", out.display())))?;
        let tmp = out.with_file_name(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let result = write_file(&tmp, launcher, release, manifest, entries, blobs);
        let written = match result {
            Ok(w) => w,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        fs::rename(&tmp, out).map_err(io(format!("renaming {} into place", out.display())))?;
        Ok(written)
    }
}

/// A stored blob: its codec, the bytes as stored, the size once extracted.
type Blob = (Codec, Vec<u8>, u64);

/// Every file's blob, compressed on as many threads as there are CPUs.
fn compress_all(entries: &[(Vec<u8>, Pending)], level: i32) -> Result<Vec<Option<Blob>>> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<Blob>>>> =
        entries.iter().map(|_| Mutex::new(None)).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((path, pending)) = entries.get(i) else {
                    break;
                };
                if let Pending::File { content, .. } = pending {
                    let blob = compress_one(path, content, level);
                    *results[i].lock().unwrap() = Some(blob);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap().transpose())
        .collect()
}

fn compress_one(path: &[u8], content: &Content, level: i32) -> Result<Blob> {
    let bytes = match content {
        Content::Path(p) => fs::read(p).map_err(io(p.display()))?,
        Content::Bytes(b) => b.clone(),
    };
    let size = bytes.len() as u64;
    let compressed = zstd::bulk::compress(&bytes, level)
        .map_err(|e| Error::Invalid(format!("compressing {}: {e}", show(path))))?;
    Ok(if compressed.len() < bytes.len() {
        (Codec::Zstd, compressed, size)
    } else {
        (Codec::Stored, bytes, size)
    })
}

/// Writes and hashes `launcher || blobs || index || trailer` into `tmp`.
fn write_file(
    tmp: &Path,
    launcher: &[u8],
    release: &ReleaseId,
    manifest: Manifest,
    entries: Vec<(Vec<u8>, Pending)>,
    blobs: Vec<Option<Blob>>,
) -> Result<Written> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(io(tmp.display()))?;
    let mut out = HashingWriter {
        inner: BufWriter::with_capacity(1 << 20, file),
        hasher: blake3::Hasher::new(),
        written: 0,
    };
    let fail = io(tmp.display());
    out.write_all(launcher).map_err(fail)?;
    let payload_offset = out.written;
    let mut index = Index {
        manifest,
        entries: Vec::with_capacity(entries.len()),
    };
    let (mut files, mut content_bytes) = (0, 0);
    for ((path, pending), blob) in entries.into_iter().zip(blobs) {
        let entry = match (pending, blob) {
            (Pending::File { executable, .. }, Some((codec, bytes, size))) => {
                let offset = out.written - payload_offset;
                out.write_all(&bytes).map_err(io(tmp.display()))?;
                files += 1;
                content_bytes += size;
                Entry::File {
                    path,
                    executable,
                    codec,
                    offset,
                    stored_len: bytes.len() as u64,
                    size,
                }
            }
            (Pending::Dir, _) => Entry::Dir { path },
            (Pending::Symlink { target }, _) => Entry::Symlink { path, target },
            (Pending::Writable, _) => Entry::Writable { path },
            (Pending::File { .. }, None) => unreachable!("every file was compressed"),
        };
        index.entries.push(entry);
    }
    let index_offset = out.written;
    let index_bytes = index.encode();
    out.write_all(&index_bytes).map_err(io(tmp.display()))?;
    let trailer = Trailer {
        payload_offset,
        index_offset,
        index_len: index_bytes.len() as u64,
        release: release.clone(),
        hash: [0; HASH_LEN],
    };
    out.write_all(&trailer.encode_fields())
        .map_err(io(tmp.display()))?;
    let hash: [u8; HASH_LEN] = out.hasher.finalize().into();
    let mut file = out
        .inner
        .into_inner()
        .map_err(|e| e.into_error())
        .map_err(io(tmp.display()))?;
    file.write_all(&hash).map_err(io(tmp.display()))?;
    file.sync_all().map_err(io(tmp.display()))?;
    fs::set_permissions(tmp, fs::Permissions::from_mode(0o755)).map_err(io(tmp.display()))?;
    Ok(Written {
        hash,
        size: out.written + HASH_LEN as u64,
        files,
        content_bytes,
    })
}

/// A writer that hashes and counts what goes through it.
struct HashingWriter<W: Write> {
    inner: W,
    hasher: blake3::Hasher,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn join(prefix: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    out.push(b'/');
    out.extend_from_slice(rel);
    out
}

/// A relative path given in the app's settings, as bytes, checked.
fn relative_bytes(path: &Path) -> Result<Vec<u8>> {
    let bytes = path.as_os_str().as_bytes();
    let trimmed = bytes.strip_suffix(b"/").unwrap_or(bytes);
    check_path(trimmed)?;
    Ok(trimmed.to_vec())
}

fn count_files(path: &Path) -> usize {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::read_dir(path)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| count_files(&e.path()))
                    .sum()
            })
            .unwrap_or(0),
        Ok(_) => 1,
        Err(_) => 0,
    }
}

/// The target to store for the link at `path` (`rel` inside `root`): relative, and
/// leading to a place inside `root` both as written and as the filesystem resolves it.
fn link_inside(root: &Path, path: &Path, rel: &Path) -> Result<Vec<u8>> {
    let target = fs::read_link(path).map_err(io(path.display()))?;
    let leaves = || {
        Error::Unsafe(format!(
            "{} -> {} leaves the app directory {}: copy what it points to into the app, or \
             exclude it",
            path.display(),
            target.display(),
            root.display()
        ))
    };
    let parent = rel.parent().unwrap_or(Path::new(""));
    // As written: normalised from the link's directory, without touching the disk.
    let lexical = if target.is_absolute() {
        normalise(&target).ok_or_else(leaves)?
    } else {
        normalise(&root.join(parent).join(&target)).ok_or_else(leaves)?
    };
    let inside = lexical.strip_prefix(root).map_err(|_| leaves())?;
    // As resolved (through other links on the way), when it exists.
    if let Ok(real) = path.canonicalize() {
        if !real.starts_with(root) {
            return Err(leaves());
        }
    }
    // Stored relative to the link's directory.
    let mut relative = PathBuf::new();
    for _ in parent.components() {
        relative.push("..");
    }
    relative.push(inside);
    let bytes = relative.as_os_str().as_bytes().to_vec();
    if bytes.is_empty() {
        return Ok(b".".to_vec());
    }
    Ok(bytes)
}

/// `path` with `.` and `..` removed lexically (None if it climbs above `/`).
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}
