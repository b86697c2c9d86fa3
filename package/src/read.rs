//! Reading a package: the file mapped once, its trailer checked against its length, its
//! hash checked against every byte, its index parsed and checked entry by entry, and a
//! file's bytes handed out (decompressed, length checked).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::format::{
    io, show, Codec, Entry, Error, Index, ReleaseId, Result, Trailer, HASH_LEN, TRAILER_LEN,
};

/// An opened package file.
pub struct Package {
    path: PathBuf,
    map: memmap2::Mmap,
    trailer: Trailer,
}

impl Package {
    /// Maps the file and reads its trailer (the hash is checked by [`Package::verify`]).
    pub fn open(path: &Path) -> Result<Package> {
        let file = File::open(path).map_err(io(path.display()))?;
        // SAFETY: the mapping is read-only and private. Packages are replaced by rename
        // (a new inode), never rewritten in place: the kernel refuses writes to a running
        // executable (ETXTBSY), and `ferrophp package` writes a new file.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io(path.display()))?;
        let len = map.len() as u64;
        if map.len() < TRAILER_LEN {
            return Err(Error::NotAPackage(format!(
                "{}: {len} bytes is too short for a package",
                path.display()
            )));
        }
        let trailer = Trailer::parse(&map[map.len() - TRAILER_LEN..], len)?;
        Ok(Package {
            path: path.to_path_buf(),
            map,
            trailer,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The trailer.
    pub fn trailer(&self) -> &Trailer {
        &self.trailer
    }

    /// The release the payload comes from.
    pub fn release(&self) -> &ReleaseId {
        &self.trailer.release
    }

    /// Refuses a package whose payload comes from another release than `launcher`.
    pub fn check_release(&self, launcher: &ReleaseId) -> Result<()> {
        if &self.trailer.release != launcher {
            return Err(Error::OtherRelease {
                package: self.trailer.release.to_string(),
                launcher: launcher.to_string(),
            });
        }
        Ok(())
    }

    /// Hashes every byte before the trailer's hash and compares.
    pub fn verify(&self) -> Result<()> {
        let covered = &self.map[..self.map.len() - HASH_LEN];
        let mut hasher = blake3::Hasher::new();
        hasher.update(covered);
        let actual: [u8; HASH_LEN] = hasher.finalize().into();
        if actual != self.trailer.hash {
            return Err(Error::Tampered(format!(
                "{}: BLAKE3 {} where the package says {}",
                self.path.display(),
                hex(&actual[..8]),
                hex(&self.trailer.hash[..8])
            )));
        }
        Ok(())
    }

    /// The hash as lowercase hex (its first `bytes` bytes).
    pub fn hash_hex(&self, bytes: usize) -> String {
        hex(&self.trailer.hash[..bytes.min(HASH_LEN)])
    }

    fn blobs(&self) -> &[u8] {
        &self.map[self.trailer.payload_offset as usize..self.trailer.index_offset as usize]
    }

    /// The index, every entry checked ([`Index::decode`]).
    pub fn index(&self) -> Result<Index> {
        let start = self.trailer.index_offset as usize;
        let bytes = &self.map[start..start + self.trailer.index_len as usize];
        Index::decode(bytes, self.blobs().len() as u64)
    }

    /// The launcher's bytes (everything before the payload).
    pub fn launcher(&self) -> &[u8] {
        &self.map[..self.trailer.payload_offset as usize]
    }

    /// A file entry's content, decompressed; its length must be the size the index says.
    pub fn content(&self, entry: &Entry) -> Result<Vec<u8>> {
        let Entry::File {
            path,
            codec,
            offset,
            stored_len,
            size,
            ..
        } = entry
        else {
            return Err(Error::Invalid(format!(
                "{} is not a file",
                show(entry.path())
            )));
        };
        // Index::decode checked that these lie inside the blobs.
        let stored = &self.blobs()[*offset as usize..(*offset + *stored_len) as usize];
        let bytes = match codec {
            Codec::Stored => stored.to_vec(),
            Codec::Zstd => {
                let capacity = usize::try_from(*size)
                    .map_err(|_| Error::Invalid(format!("{}: too large", show(path))))?;
                zstd::bulk::decompress(stored, capacity).map_err(|e| {
                    Error::Invalid(format!("{}: cannot decompress: {e}", show(path)))
                })?
            }
        };
        if bytes.len() as u64 != *size {
            return Err(Error::Invalid(format!(
                "{}: {} bytes where the index says {size}",
                show(path),
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
