//! The package file, byte for byte: what the writer produces and the only shapes the
//! reader accepts.
//!
//! ```text
//! [launcher]   the static launcher executable (the file runs as it)
//! [blobs]      each file's bytes, zstd-compressed or stored, one after another
//! [index]      the manifest, then one entry per file, directory, symlink, writable path
//! [trailer]    TRAILER_LEN bytes at the very end:
//!                magic "FERROPKG", format version (u32), reserved (u32),
//!                blobs' offset, index offset, index length (u64 each),
//!                release id (32 bytes, ASCII, NUL-padded),
//!                BLAKE3 of every byte before the hash (32 bytes)
//! ```
//!
//! Integers are little-endian. The hash covers the launcher, the blobs, the index and
//! the trailer's own fields, so any changed byte anywhere is found before anything is
//! used. Paths are stored as raw bytes (Linux file names need not be UTF-8) and are
//! always relative; [`check_path`] and [`check_symlink`] are the rules every entry must
//! pass, at packing and again at extraction.

use std::fmt;

/// The first eight bytes of the trailer.
pub const MAGIC: &[u8; 8] = b"FERROPKG";
/// The layout this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the trailer.
pub const TRAILER_LEN: usize = 8 + 4 + 4 + 8 + 8 + 8 + RELEASE_ID_LEN + HASH_LEN;
/// Bytes of a release id in the trailer.
pub const RELEASE_ID_LEN: usize = 32;
/// Bytes of the BLAKE3 hash.
pub const HASH_LEN: usize = 32;
/// The index's first bytes.
const INDEX_MAGIC: &[u8; 4] = b"FPIX";
/// Longest path or symlink target accepted (PATH_MAX).
const MAX_PATH: usize = 4096;

/// Why a package cannot be used (or made).
#[derive(Debug)]
pub enum Error {
    /// A file could not be read or written.
    Io(String, std::io::Error),
    /// Not a package, or a cut or extended one: no valid trailer.
    NotAPackage(String),
    /// The hash does not match the bytes: the file was changed after it was made.
    Tampered(String),
    /// Made by another release of ferrophp than the launcher inside it.
    OtherRelease {
        /// The release the payload was made from.
        package: String,
        /// The launcher's own release.
        launcher: String,
    },
    /// A path, link or file kind that could escape or damage the destination.
    Unsafe(String),
    /// Anything else malformed or refused.
    Invalid(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(what, e) => write!(f, "{what}: {e}"),
            Error::NotAPackage(why) => write!(f, "not a ferrophp package: {why}"),
            Error::Tampered(why) => write!(
                f,
                "the package was modified after it was made ({why}); refusing to run it"
            ),
            Error::OtherRelease { package, launcher } => write!(
                f,
                "the payload comes from ferrophp release {package}, this launcher is release \
                 {launcher}; refusing to run it (package the app again with one release)"
            ),
            Error::Unsafe(why) => write!(f, "unsafe package content: {why}"),
            Error::Invalid(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand for this crate's results.
pub type Result<T> = std::result::Result<T, Error>;

/// An [`Error::Io`] naming what was being done.
pub(crate) fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.to_string();
    move |e| Error::Io(what, e)
}

/// The release a package's payload and a launcher were built from: `scripts/release.sh`
/// derives it from the release binary's digest, so two builds never share one.
#[derive(Clone, PartialEq, Eq)]
pub struct ReleaseId([u8; RELEASE_ID_LEN]);

impl ReleaseId {
    /// A release id from its text: 1 to 32 printable ASCII characters.
    pub fn new(text: &str) -> Result<ReleaseId> {
        let bytes = text.trim().as_bytes();
        if bytes.is_empty()
            || bytes.len() > RELEASE_ID_LEN
            || !bytes.iter().all(|b| b.is_ascii_graphic())
        {
            return Err(Error::Invalid(format!(
                "release id {text:?}: expected 1 to {RELEASE_ID_LEN} printable ASCII characters"
            )));
        }
        let mut id = [0; RELEASE_ID_LEN];
        id[..bytes.len()].copy_from_slice(bytes);
        Ok(ReleaseId(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        let end = self
            .0
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(RELEASE_ID_LEN);
        std::str::from_utf8(&self.0[..end]).unwrap_or("?")
    }
}

impl fmt::Display for ReleaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ReleaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReleaseId({})", self.as_str())
    }
}

/// The fixed-size end of the file.
#[derive(Debug, Clone)]
pub struct Trailer {
    /// Where the blobs start (the launcher's length).
    pub payload_offset: u64,
    /// Where the index starts.
    pub index_offset: u64,
    /// The index's length.
    pub index_len: u64,
    /// The release the payload comes from.
    pub release: ReleaseId,
    /// BLAKE3 of every byte of the file before this field.
    pub hash: [u8; HASH_LEN],
}

impl Trailer {
    /// The trailer's bytes without the hash (the hash covers them).
    pub(crate) fn encode_fields(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(TRAILER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.payload_offset.to_le_bytes());
        out.extend_from_slice(&self.index_offset.to_le_bytes());
        out.extend_from_slice(&self.index_len.to_le_bytes());
        out.extend_from_slice(&self.release.0);
        out
    }

    /// The trailer's bytes, hash included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.encode_fields();
        out.extend_from_slice(&self.hash);
        out
    }

    /// Reads the trailer at the end of a file of `file_len` bytes and checks that its
    /// offsets describe exactly that file.
    pub fn parse(tail: &[u8], file_len: u64) -> Result<Trailer> {
        if tail.len() != TRAILER_LEN {
            return Err(Error::NotAPackage(format!(
                "{file_len} bytes is too short for a package"
            )));
        }
        if &tail[..8] != MAGIC {
            return Err(Error::NotAPackage(
                "no package trailer at the end of the file (truncated, extended, or not made \
                 by `ferrophp package`)"
                    .into(),
            ));
        }
        let u32_at = |at: usize| u32::from_le_bytes(tail[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(tail[at..at + 8].try_into().unwrap());
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(Error::NotAPackage(format!(
                "package format {version}, this launcher reads format {FORMAT_VERSION}"
            )));
        }
        let trailer = Trailer {
            payload_offset: u64_at(16),
            index_offset: u64_at(24),
            index_len: u64_at(32),
            release: ReleaseId(tail[40..40 + RELEASE_ID_LEN].try_into().unwrap()),
            hash: tail[40 + RELEASE_ID_LEN..].try_into().unwrap(),
        };
        let end = trailer.index_offset.checked_add(trailer.index_len);
        if trailer.payload_offset > trailer.index_offset
            || end != Some(file_len - TRAILER_LEN as u64)
        {
            return Err(Error::NotAPackage(format!(
                "the trailer's offsets do not match the file's {file_len} bytes (truncated or \
                 extended)"
            )));
        }
        Ok(trailer)
    }
}

/// How a file's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// As they are.
    Stored,
    /// One zstd frame.
    Zstd,
}

/// One thing the package holds, at a relative path of the extracted tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory (parents of other entries are made anyway; this keeps empty ones).
    Dir {
        /// Its path.
        path: Vec<u8>,
    },
    /// A regular file.
    File {
        /// Its path.
        path: Vec<u8>,
        /// Whether it is executable (mode 0555 rather than 0444).
        executable: bool,
        /// How its bytes are stored.
        codec: Codec,
        /// Where its stored bytes start, from the blobs' offset.
        offset: u64,
        /// How many bytes are stored.
        stored_len: u64,
        /// Its length once extracted.
        size: u64,
    },
    /// A symbolic link whose target stays inside the tree.
    Symlink {
        /// Its path.
        path: Vec<u8>,
        /// Its relative target.
        target: Vec<u8>,
    },
    /// A path the app writes to: a link to the same path under the data directory,
    /// outside the read-only tree.
    Writable {
        /// Its path.
        path: Vec<u8>,
    },
}

impl Entry {
    /// The entry's path in the tree.
    pub fn path(&self) -> &[u8] {
        match self {
            Entry::Dir { path }
            | Entry::File { path, .. }
            | Entry::Symlink { path, .. }
            | Entry::Writable { path } => path,
        }
    }
}

/// What the launcher needs to know besides the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The app's directory in the tree (`app`): the working directory of every command.
    pub app_dir: Vec<u8>,
    /// The packed ferrophp.toml, if the app has one: `serve`'s settings.
    pub config: Option<Vec<u8>>,
    /// Paths (relative to the app directory) that live in the data directory.
    pub writable: Vec<Vec<u8>>,
    /// One line for `--help`: the app and how it is served.
    pub summary: String,
}

/// The manifest and the entries, as stored between the blobs and the trailer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    /// The launcher's settings.
    pub manifest: Manifest,
    /// Every file, directory, link and writable path.
    pub entries: Vec<Entry>,
}

const KIND_DIR: u8 = 1;
const KIND_FILE: u8 = 2;
const KIND_SYMLINK: u8 = 3;
const KIND_WRITABLE: u8 = 4;

impl Index {
    /// The index's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(INDEX_MAGIC);
        let m = &self.manifest;
        let mut fields: Vec<(&[u8], &[u8])> = vec![(b"app", &m.app_dir)];
        if let Some(config) = &m.config {
            fields.push((b"config", config));
        }
        fields.extend(m.writable.iter().map(|w| (&b"writable"[..], w.as_slice())));
        fields.push((b"summary", m.summary.as_bytes()));
        put_u32(&mut out, fields.len());
        for (key, value) in fields {
            put_bytes(&mut out, key);
            put_bytes(&mut out, value);
        }
        put_u32(&mut out, self.entries.len());
        for entry in &self.entries {
            match entry {
                Entry::Dir { path } => {
                    out.push(KIND_DIR);
                    put_bytes(&mut out, path);
                }
                Entry::File {
                    path,
                    executable,
                    codec,
                    offset,
                    stored_len,
                    size,
                } => {
                    out.push(KIND_FILE);
                    put_bytes(&mut out, path);
                    out.push(u8::from(*executable));
                    out.push(match codec {
                        Codec::Stored => 0,
                        Codec::Zstd => 1,
                    });
                    for n in [offset, stored_len, size] {
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                }
                Entry::Symlink { path, target } => {
                    out.push(KIND_SYMLINK);
                    put_bytes(&mut out, path);
                    put_bytes(&mut out, target);
                }
                Entry::Writable { path } => {
                    out.push(KIND_WRITABLE);
                    put_bytes(&mut out, path);
                }
            }
        }
        out
    }

    /// Parses and checks an index whose files' bytes lie within `blobs_len` bytes: every
    /// path relative and inside the tree, every link target inside it, every file's
    /// bytes inside the blobs. A crafted index (even one with a valid hash) is refused
    /// here, before anything is written.
    pub fn decode(bytes: &[u8], blobs_len: u64) -> Result<Index> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != INDEX_MAGIC {
            return Err(Error::Invalid("the package index has no magic".into()));
        }
        let mut manifest = Manifest::default();
        for _ in 0..r.u32()? {
            let key = r.bytes()?;
            let value = r.bytes()?.to_vec();
            match key {
                b"app" => manifest.app_dir = value,
                b"config" => manifest.config = Some(value),
                b"writable" => manifest.writable.push(value),
                b"summary" => manifest.summary = String::from_utf8_lossy(&value).into_owned(),
                // Later writers of this format version may add fields older launchers
                // do not need.
                _ => {}
            }
        }
        check_path(&manifest.app_dir)?;
        if let Some(config) = &manifest.config {
            check_path(config)?;
        }
        for w in &manifest.writable {
            check_path(w)?;
        }
        let count = r.u32()?;
        // Each entry takes at least 5 bytes: no allocation beyond the input's size.
        let mut entries = Vec::with_capacity(count.min(bytes.len() / 5));
        for _ in 0..count {
            let kind = r.u8()?;
            let path = r.bytes()?.to_vec();
            check_path(&path)?;
            let entry = match kind {
                KIND_DIR => Entry::Dir { path },
                KIND_FILE => {
                    let executable = r.u8()? != 0;
                    let codec = match r.u8()? {
                        0 => Codec::Stored,
                        1 => Codec::Zstd,
                        other => {
                            return Err(Error::Invalid(format!(
                                "{}: unknown codec {other}",
                                show(&path)
                            )))
                        }
                    };
                    let (offset, stored_len, size) = (r.u64()?, r.u64()?, r.u64()?);
                    let inside =
                        matches!(offset.checked_add(stored_len), Some(end) if end <= blobs_len);
                    if !inside {
                        return Err(Error::Invalid(format!(
                            "{}: its bytes lie outside the package",
                            show(&path)
                        )));
                    }
                    if codec == Codec::Stored && stored_len != size {
                        return Err(Error::Invalid(format!(
                            "{}: stored length {stored_len} is not its size {size}",
                            show(&path)
                        )));
                    }
                    Entry::File {
                        path,
                        executable,
                        codec,
                        offset,
                        stored_len,
                        size,
                    }
                }
                KIND_SYMLINK => {
                    let target = r.bytes()?.to_vec();
                    check_symlink(&path, &target)?;
                    Entry::Symlink { path, target }
                }
                KIND_WRITABLE => Entry::Writable { path },
                other => {
                    return Err(Error::Invalid(format!(
                        "{}: unknown entry kind {other}",
                        show(&path)
                    )))
                }
            };
            entries.push(entry);
        }
        if r.at != bytes.len() {
            return Err(Error::Invalid(
                "the package index has bytes after its last entry".into(),
            ));
        }
        Ok(Index { manifest, entries })
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("fewer than 2^32 items");
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// A bounds-checked cursor over the index.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| Error::Invalid("the package index ends early".into()))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()) as usize)
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()?;
        if n > MAX_PATH * 16 {
            return Err(Error::Invalid(
                "the package index holds an oversized field".into(),
            ));
        }
        self.take(n)
    }
}

/// A path for messages.
pub fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// The rule for every path in the tree: relative, `/`-separated, no empty, `.` or `..`
/// component, no NUL, at most PATH_MAX bytes.
pub fn check_path(path: &[u8]) -> Result<()> {
    let refuse = |why: &str| Err(Error::Unsafe(format!("path {:?} {why}", show(path))));
    if path.is_empty() {
        return refuse("is empty");
    }
    if path.len() > MAX_PATH {
        return refuse("is too long");
    }
    if path[0] == b'/' {
        return refuse("is absolute");
    }
    if path.contains(&0) {
        return refuse("contains a NUL byte");
    }
    for component in path.split(|&b| b == b'/') {
        match component {
            b"" => return refuse("has an empty component"),
            b"." | b".." => return refuse("has a `.` or `..` component"),
            _ => {}
        }
    }
    Ok(())
}

/// The rule for a link at `path` to `target`: the target is relative and, resolved
/// from the link's directory without following anything, stays inside the tree.
pub fn check_symlink(path: &[u8], target: &[u8]) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::Unsafe(format!(
            "link {:?} -> {:?} {why}",
            show(path),
            show(target)
        )))
    };
    if target.is_empty() || target.len() > MAX_PATH || target.contains(&0) {
        return refuse("has an invalid target");
    }
    if target[0] == b'/' {
        return refuse("points to an absolute path");
    }
    // The link's own directory, as a depth below the tree's root.
    let mut depth = path.split(|&b| b == b'/').count() - 1;
    for component in target.split(|&b| b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return refuse("leaves the package"),
            },
            _ => depth += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Index {
        Index {
            manifest: Manifest {
                app_dir: b"app".to_vec(),
                config: Some(b"ferrophp.toml".to_vec()),
                writable: vec![b"var".to_vec(), b"public/uploads".to_vec()],
                summary: "worker public/worker.php".into(),
            },
            entries: vec![
                Entry::Dir {
                    path: b"app/empty".to_vec(),
                },
                Entry::File {
                    path: b"app/public/index.php".to_vec(),
                    executable: false,
                    codec: Codec::Zstd,
                    offset: 0,
                    stored_len: 10,
                    size: 30,
                },
                Entry::File {
                    path: b"ferrophp".to_vec(),
                    executable: true,
                    codec: Codec::Stored,
                    offset: 10,
                    stored_len: 5,
                    size: 5,
                },
                Entry::Symlink {
                    path: b"app/public/assets".to_vec(),
                    target: b"../assets".to_vec(),
                },
                Entry::Writable {
                    path: b"app/var".to_vec(),
                },
            ],
        }
    }

    #[test]
    fn index_round_trips() {
        let index = sample();
        assert_eq!(Index::decode(&index.encode(), 15).unwrap(), index);
    }

    #[test]
    fn every_cut_of_the_index_is_refused() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Index::decode(&bytes[..len], 15).is_err(), "cut at {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Index::decode(&longer, 15).is_err());
    }

    #[test]
    fn file_bytes_outside_the_blobs_are_refused() {
        let err = Index::decode(&sample().encode(), 14).unwrap_err();
        assert!(
            err.to_string().contains("ferrophp: its bytes lie outside"),
            "{err}"
        );
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"../evil",
            b"app/../../evil",
            b"app/./x",
            b"app//x",
            b"app/x/",
            b"app/\0x",
        ] {
            assert!(check_path(bad).is_err(), "{:?}", show(bad));
        }
        for good in [&b"app"[..], b"app/public/index.php", b"a/..b/c.."] {
            check_path(good).unwrap();
        }
        // A traversal in an entry of an otherwise valid index.
        let mut index = sample();
        index.entries.push(Entry::Dir {
            path: b"app/../../../tmp/evil".to_vec(),
        });
        let err = Index::decode(&index.encode(), 15).unwrap_err();
        assert!(matches!(err, Error::Unsafe(_)), "{err}");
    }

    #[test]
    fn links_must_stay_inside_the_tree() {
        check_symlink(b"app/public/assets", b"../assets").unwrap();
        check_symlink(b"app/x", b"../ferrophp").unwrap();
        check_symlink(b"app/a/b/c", b"./../../d/../e").unwrap();
        for (path, target) in [
            (&b"app/x"[..], &b"../../etc"[..]),
            (b"app/x", b"/etc/passwd"),
            (b"x", b".."),
            (b"app/a/b", b"../../../x"),
            (b"app/x", b""),
        ] {
            let err = check_symlink(path, target).unwrap_err();
            assert!(matches!(err, Error::Unsafe(_)), "{err}");
        }
    }

    #[test]
    fn trailer_round_trips_and_checks_offsets() {
        let trailer = Trailer {
            payload_offset: 100,
            index_offset: 150,
            index_len: 20,
            release: ReleaseId::new("0.1.0-abcdef").unwrap(),
            hash: [7; HASH_LEN],
        };
        let mut bytes = trailer.encode();
        assert_eq!(bytes.len(), TRAILER_LEN);
        let file_len = 170 + TRAILER_LEN as u64;
        let back = Trailer::parse(&bytes, file_len).unwrap();
        assert_eq!(back.release.as_str(), "0.1.0-abcdef");
        assert_eq!(back.hash, [7; HASH_LEN]);
        assert_eq!(back.index_offset, 150);
        // The same trailer at the end of a longer or shorter file.
        for len in [file_len - 1, file_len + 1] {
            assert!(matches!(
                Trailer::parse(&bytes, len),
                Err(Error::NotAPackage(_))
            ));
        }
        bytes[0] = b'X';
        assert!(matches!(
            Trailer::parse(&bytes, file_len),
            Err(Error::NotAPackage(_))
        ));
    }

    #[test]
    fn release_ids_are_short_printable_text() {
        assert!(ReleaseId::new("").is_err());
        assert!(ReleaseId::new("a b").is_err());
        assert!(ReleaseId::new(&"x".repeat(33)).is_err());
        assert_eq!(ReleaseId::new(&"x".repeat(32)).unwrap().as_str().len(), 32);
    }
}
