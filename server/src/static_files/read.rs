//! Reading a static file's body, off the runtime.
//!
//! One hop to tokio's blocking pool opens the file, stats it through the open handle,
//! decides the response (304, 206, 416...) and reads the first [`CHUNK_SIZE`] bytes of
//! the body with one `pread` straight into the buffer that becomes the body frame (no
//! zeroing, no second copy in user space). A body up to [`CHUNK_SIZE`] (nearly every
//! asset) is therefore one hop and one frame. A longer body streams in further
//! [`CHUNK_SIZE`] frames, each one `pread` on the blocking pool, the next one read while
//! hyper writes the previous one (at most two chunks per response in memory).
//!
//! 256 KiB rather than 1 MiB: with the 1 MB file read whole into one frame, reading and
//! writing no longer overlap within a response, and on the (shared, loaded) benchmark
//! machine `static-1mb` fell to about half the req/s of 256 KiB chunks with read-ahead,
//! which ran level with or above the former `tokio::fs` stream at 10-30% less server CPU
//! per request (fewer page faults from fresh 1 MiB buffers, too).
//!
//! # Why not mmap
//!
//! A mapping handed to hyper as `Bytes` would save the copy into the buffer, but a file
//! truncated while it is mapped (an in-place `cp` over a deployed asset does exactly
//! that) turns every later access to the lost pages into SIGBUS, which kills the process.
//! Plain-TCP HTTP/1 would be mostly safe (the kernel copies from the mapping in
//! `writev` and reports EFAULT), but rustls encrypts from it in user space, and h2
//! copies the start of each DATA frame into its own buffer, so TLS and HTTP/2 would crash
//! the server. Making that safe needs a process-wide SIGBUS handler that patches zero
//! pages over the hole, which turns a truncated file into a complete response with wrong
//! bytes (worse than a cut connection), and MAP_PRIVATE does not help (truncation
//! discards private copies too). Reading cannot crash: a file that shrinks under a
//! response ends the body with an error, so hyper cuts the connection instead of sending
//! fewer bytes than Content-Length announced, and a file that grows is cut at that length.
//! `server/tests/static_files.rs` truncates a file while it is being served.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::task::JoinHandle;

use super::open::Source;
use crate::body::{self, ResponseBody};
use crate::static_cache::{self, Identity};

/// The largest body frame and the largest single read: a body up to this size is read
/// whole in the hop that opens the file. Larger chunks mean fewer hops per file but more
/// memory per response in flight (two chunks at most) and less overlap of reading and
/// writing (see the module doc for the measurement).
pub(super) const CHUNK_SIZE: usize = 256 * 1024;

/// The body of bytes `start..start + len` of the chosen representation: a slice of its
/// cached bytes, or read from its file, whole into the cache if the cache admits it,
/// else streamed. Blocking: the first chunk is read now.
pub(super) fn body_of(
    source: Source,
    meta: &Metadata,
    start: u64,
    len: u64,
) -> io::Result<ResponseBody> {
    match source {
        Source::Cached(bytes) => Ok(cached_body(&bytes, start, len)),
        Source::File {
            file,
            cache_as,
            now,
        } => match static_cache::cache().filter(|c| c.admit(meta, now)) {
            Some(cache) => {
                let bytes = read_whole(&file, meta)?;
                // Cached only if the file did not change while it was read.
                if Identity::of(&file.metadata()?) == Identity::of(meta) {
                    cache.insert(&cache_as, Identity::of(meta), bytes.clone());
                }
                Ok(cached_body(&bytes, start, len))
            }
            None => file_body(file, start, len),
        },
    }
}

/// The body for bytes `start..start + len` of `file`, its first chunk read now (so on the
/// blocking pool). Exactly `len` bytes or an error: if the file grows meanwhile, the body
/// still matches the Content-Length already decided; if it shrinks, the body fails.
fn file_body(file: File, start: u64, len: u64) -> io::Result<ResponseBody> {
    let first_len = len.min(CHUNK_SIZE as u64);
    let first = read_chunk(&file, start, first_len as usize)?;
    if first_len == len {
        return Ok(body::full(first));
    }
    let mut rest = Chunks {
        file: Arc::new(file),
        offset: start + first_len,
        remaining: len - first_len,
    };
    // Read-ahead: the second chunk is read while hyper writes the first.
    let next = rest.spawn_next();
    let state = (Some(first), next, rest);
    let stream = futures_util::stream::unfold(state, |(ready, next, mut rest)| async move {
        if let Some(chunk) = ready {
            // The read of the chunk after it is already under way.
            return Some((Ok(Frame::data(chunk)), (None, next, rest)));
        }
        let chunk = match next?.await {
            Ok(read) => read,
            Err(join) => Err(io::Error::other(join)),
        };
        let next = match chunk {
            Ok(_) => rest.spawn_next(),
            // Nothing after an error: hyper cuts the response there.
            Err(_) => None,
        };
        Some((chunk.map(Frame::data), (None, next, rest)))
    });
    Ok(BodyExt::boxed(StreamBody::new(stream)))
}

/// Bytes `start..start + len` of a cached body (no copy), as one frame.
fn cached_body(bytes: &Bytes, start: u64, len: u64) -> ResponseBody {
    body::full(bytes.slice(start as usize..(start + len) as usize))
}

/// The whole of `file`, exactly the `meta.len()` bytes it had when stat'ed.
fn read_whole(file: &File, meta: &Metadata) -> io::Result<Bytes> {
    let len = usize::try_from(meta.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
    read_chunk(file, 0, len)
}

/// What is left of a streamed body after the chunks already handed out.
struct Chunks {
    file: Arc<File>,
    offset: u64,
    remaining: u64,
}

impl Chunks {
    /// Starts reading the next chunk on the blocking pool; None once the body is complete.
    fn spawn_next(&mut self) -> Option<JoinHandle<io::Result<Bytes>>> {
        if self.remaining == 0 {
            return None;
        }
        let len = self.remaining.min(CHUNK_SIZE as u64);
        let (file, offset) = (self.file.clone(), self.offset);
        self.offset += len;
        self.remaining -= len;
        Some(tokio::task::spawn_blocking(move || {
            read_chunk(&file, offset, len as usize)
        }))
    }
}

/// Exactly `len` bytes of `file` at `offset`, read into a buffer that becomes the frame;
/// a file that ends before them is an error (it was truncated after we sized the body).
fn read_chunk(file: &File, offset: u64, len: usize) -> io::Result<Bytes> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let (at, missing) = (offset + buf.len() as u64, len - buf.len());
        match pread_spare(file, &mut buf, at, missing) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank while being served",
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Bytes::from(buf))
}

/// One `pread` of up to `max` bytes at `offset` into `buf`'s spare capacity (which must
/// hold `max` bytes), appended to `buf`. Reading into uninitialised memory through the
/// syscall avoids zeroing a buffer the read overwrites anyway.
fn pread_spare(file: &File, buf: &mut Vec<u8>, offset: u64, max: usize) -> io::Result<usize> {
    let filled = buf.len();
    let spare = buf.spare_capacity_mut();
    assert!(spare.len() >= max, "caller reserves the capacity");
    let offset = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: the pointer and `max` describe writable memory owned by `buf` (checked
    // above); pread writes at most `max` bytes there and nothing else.
    let read = unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), max, offset) };
    let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
    // SAFETY: pread initialised the first `read` (<= max) spare bytes after `filled`.
    unsafe { buf.set_len(filled + read) };
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_files::serve;
    use crate::static_files::tests::{dir, get};
    use http::header::{self, HeaderMap};
    use http::{Method, StatusCode};

    /// `read_chunk` writes into uninitialised capacity through `pread`: random files,
    /// offsets and lengths around every boundary (0, 1, the chunk size and one past it,
    /// several chunks, past the end) must give exactly the file's bytes or, past the end,
    /// an error. `FERROPHP_READ_CHUNK_ROUNDS` raises the count (run under valgrind by
    /// hand: see the note on issue 15).
    #[test]
    fn read_chunk_randomised_sizes_and_offsets() {
        let rounds: usize = std::env::var("FERROPHP_READ_CHUNK_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let edges = [
            0,
            1,
            CHUNK_SIZE - 1,
            CHUNK_SIZE,
            CHUNK_SIZE + 1,
            3 * CHUNK_SIZE + 7,
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, &size) in edges.iter().chain([4 << 20].iter()).enumerate() {
            let content: Vec<u8> = (0..size).map(|_| next() as u8).collect();
            let path = dir.path().join(format!("f{i}"));
            std::fs::write(&path, &content).unwrap();
            let file = File::open(&path).unwrap();
            for round in 0..rounds {
                let pick = |r: u64| match r % 4 {
                    0 => edges[(r / 4) as usize % edges.len()],
                    1 => size,
                    _ => (r / 4) as usize % (size + 2),
                };
                let offset = pick(next()).min(size + 1);
                let len = match round % 3 {
                    0 => size.saturating_sub(offset),
                    1 => pick(next()),
                    _ => size.saturating_sub(offset) + 1,
                };
                match read_chunk(&file, offset as u64, len) {
                    // Nothing to read is never an error, wherever it starts.
                    Ok(bytes) if len == 0 => assert!(bytes.is_empty()),
                    Ok(bytes) => {
                        assert!(
                            offset + len <= size,
                            "read past the end: {offset}+{len} of {size}"
                        );
                        assert_eq!(&bytes[..], &content[offset..offset + len]);
                    }
                    Err(e) => {
                        assert!(offset + len > size, "{offset}+{len} of {size}: {e}");
                        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn large_files_stream_in_chunks() {
        let d = dir();
        let path = d.path().join("big.bin");
        let data: Vec<u8> = (0..(5 * CHUNK_SIZE as u32 - 7))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let response = serve(&path, &Method::GET, &HeaderMap::new()).await;
        assert_eq!(
            response.headers()[header::CONTENT_LENGTH],
            data.len().to_string()
        );
        let mut body = response.into_body();
        let mut got = Vec::new();
        let mut frames = 0;
        while let Some(frame) = body.frame().await {
            let chunk = frame.unwrap().into_data().unwrap();
            assert!(chunk.len() <= CHUNK_SIZE);
            got.extend_from_slice(&chunk);
            frames += 1;
        }
        assert!(frames >= 5, "{frames} frames");
        assert_eq!(got, data);
        // And a range deep inside it.
        let (status, _, body) = get(&path, &[("range", "bytes=200000-200009")]).await;
        // (offset 200000 lies well inside the file)
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(body, &data[200_000..200_010]);
    }
}
