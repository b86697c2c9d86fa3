//! Serving one static file with HTTP semantics: GET/HEAD, content type, validators
//! (strong ETag, Last-Modified), conditional requests (304), single byte ranges (206/416)
//! and precompressed `.br`/`.gz` siblings. Which file to serve, and whether it may be
//! served at all, is decided earlier by [`crate::routing`].
//!
//! # How the bytes leave
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
//! # The content cache
//!
//! A file up to the cache's per-file limit that has settled (unchanged for 2 s) is read
//! whole on its first GET and kept as shared `Bytes` in [`crate::static_cache`]; later
//! requests find it there through the stats the hop makes anyway (identical device,
//! inode, size, mtime and ctime, or it is a miss) and answer with a slice of it as one
//! frame: no open, no pread, no further hops. HEAD, 304 and 416 responses never fill
//! the cache; a file too large, too fresh, or written while it was read streams as
//! described above. A cached body is a snapshot in our own memory, so truncating the
//! file cannot hurt a response in flight: it completes with the bytes of the version it
//! started with, and the next request sees the change. In `compare --only static-1mb`
//! (wrk, 32 connections) the server's CPU per request went from 310-450 us (cache off)
//! to 190-230 us, level with nginx's sendfile (210-240 us), at 1.03-1.96x its req/s
//! (medians of four 3-round runs on the shared machine) and a lower p99.
//!
//! The revalidating stats stay in the hop. Taking them on the async thread instead (and
//! hopping only on a miss) saved about 10% of server CPU per request for the 1 MB file,
//! but gave fewer req/s in 8 of 9 alternating wrk runs on the shared 2-core machine
//! (the blocking pool's threads get their share of a contended CPU; the runtime's alone
//! get less) and a stat on a slow filesystem would stall every connection of that
//! runtime thread.
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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::task::JoinHandle;

use crate::body::{self, ResponseBody};
use crate::static_cache::{self, Identity, Lookup};

/// The largest body frame and the largest single read: a body up to this size is read
/// whole in the hop that opens the file. Larger chunks mean fewer hops per file but more
/// memory per response in flight (two chunks at most) and less overlap of reading and
/// writing (see the module doc for the measurement).
const CHUNK_SIZE: usize = 256 * 1024;

/// Request headers the response depends on besides Accept-Encoding (consumed before the
/// hop): copied into the blocking task (an empty map allocates nothing).
const CONDITIONAL_HEADERS: [header::HeaderName; 4] = [
    header::RANGE,
    header::IF_RANGE,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    /// Server preference when the client's q-values tie.
    const ALL: [Encoding; 2] = [Encoding::Brotli, Encoding::Gzip];

    fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gz",
        }
    }

    fn sibling(self, path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".");
        name.push(self.extension());
        name.into()
    }
}

/// The representation chosen for this request: its bytes in the cache, or open.
struct Opened {
    source: Source,
    meta: Metadata,
    encoding: Option<Encoding>,
    /// Some precompressed sibling exists, so responses depend on Accept-Encoding.
    has_variants: bool,
}

/// Where a representation's bytes come from.
enum Source {
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

/// Serves `path` (a regular file the router approved) for `method` with request `headers`.
pub async fn serve(path: &Path, method: &Method, headers: &HeaderMap) -> Response<ResponseBody> {
    let head = *method == Method::HEAD;
    if !head && *method != Method::GET {
        let mut response =
            body::text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    // Range is only defined for GET (RFC 9110 §14.2), so HEAD ignores it.
    let has_range = !head && headers.contains_key(header::RANGE);
    // Range requests get the identity file: byte offsets into a compressed stream are
    // useless to clients that resume or seek in the decoded content.
    let preferred = match has_range {
        true => [None; 2],
        false => preferred_encodings(headers),
    };
    let mut conditions = HeaderMap::new();
    for name in CONDITIONAL_HEADERS {
        if head && name == header::RANGE {
            continue;
        }
        for value in headers.get_all(&name) {
            conditions.append(name.clone(), value.clone());
        }
    }

    // All blocking filesystem work, and the first chunk of the body, in a single hop.
    let owned = path.to_owned();
    let respond = move || respond(&owned, head, preferred, &conditions);
    match tokio::task::spawn_blocking(respond).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => error_response(path, &err),
        Err(join) => {
            tracing::error!(path = %path.display(), "static file task failed: {join}");
            body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

/// The whole response for `path`, with the first chunk of its body read. Blocking.
fn respond(
    path: &Path,
    head: bool,
    preferred: [Option<Encoding>; 2],
    headers: &HeaderMap,
) -> io::Result<Response<ResponseBody>> {
    let opened = open(path, preferred)?;
    let size = opened.meta.len();
    let modified = opened.meta.modified().ok();
    let etag = modified.map(|m| etag(m, size, opened.encoding));
    let last_modified = modified.map(httpdate::fmt_http_date);

    let mut builder = Response::builder();
    if let Some(etag) = &etag {
        builder = builder.header(header::ETAG, etag);
    }
    if let Some(last_modified) = &last_modified {
        builder = builder.header(header::LAST_MODIFIED, last_modified);
    }
    if opened.has_variants {
        builder = builder.header(header::VARY, "Accept-Encoding");
    }

    if not_modified(headers, etag.as_deref(), modified) {
        return Ok(builder
            .status(StatusCode::NOT_MODIFIED)
            .body(body::empty())
            .expect("valid 304 response"));
    }

    builder = builder
        .header(header::CONTENT_TYPE, content_type(path))
        .header(header::ACCEPT_RANGES, "bytes");
    if let Some(encoding) = opened.encoding {
        builder = builder.header(header::CONTENT_ENCODING, encoding.token());
    }

    let range = match headers.get(header::RANGE) {
        Some(value) if if_range_holds(headers, etag.as_deref(), modified) => value
            .to_str()
            .map_or(ByteRange::Ignore, |v| parse_range(v, size)),
        _ => ByteRange::Ignore,
    };
    let (start, len) = match range {
        ByteRange::Ignore => {
            builder = builder.status(StatusCode::OK);
            (0, size)
        }
        ByteRange::Satisfiable { start, end } => {
            builder = builder
                .status(StatusCode::PARTIAL_CONTENT)
                .header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}"));
            (start, end - start + 1)
        }
        ByteRange::Unsatisfiable => {
            let mut response =
                body::text_response(StatusCode::RANGE_NOT_SATISFIABLE, "Range Not Satisfiable");
            let content_range = HeaderValue::from_str(&format!("bytes */{size}"))
                .expect("digits are a valid header value");
            response
                .headers_mut()
                .insert(header::CONTENT_RANGE, content_range);
            return Ok(response);
        }
    };

    let body = match opened.source {
        _ if head => body::empty(),
        Source::Cached(bytes) => cached_body(&bytes, start, len),
        Source::File {
            file,
            cache_as,
            now,
        } => match static_cache::cache().filter(|c| c.admit(&opened.meta, now)) {
            Some(cache) => {
                let bytes = read_whole(&file, &opened.meta)?;
                // Cached only if the file did not change while it was read.
                if Identity::of(&file.metadata()?) == Identity::of(&opened.meta) {
                    cache.insert(&cache_as, Identity::of(&opened.meta), bytes.clone());
                }
                cached_body(&bytes, start, len)
            }
            None => file_body(file, start, len)?,
        },
    };
    Ok(builder
        .header(header::CONTENT_LENGTH, len)
        .body(body)
        .expect("valid static file response"))
}

/// The best acceptable representation of `path`: the first sibling in `preferred` that
/// exists, else the file itself; from the content cache when it holds the bytes of the
/// file exactly as stat'ed here, otherwise opened. Blocking.
fn open(path: &Path, preferred: [Option<Encoding>; 2]) -> io::Result<Opened> {
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

fn error_response(path: &Path, err: &io::Error) -> Response<ResponseBody> {
    match err.kind() {
        io::ErrorKind::NotFound => body::text_response(StatusCode::NOT_FOUND, "Not Found"),
        io::ErrorKind::PermissionDenied => body::text_response(StatusCode::FORBIDDEN, "Forbidden"),
        _ => {
            tracing::error!(path = %path.display(), "serving static file failed: {err}");
            body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

fn content_type(path: &Path) -> HeaderValue {
    let value = match mime_guess::from_path(path).first() {
        Some(mime)
            if mime.type_() == mime_guess::mime::TEXT
                || mime.essence_str() == "application/javascript" =>
        {
            format!("{}; charset=utf-8", mime.essence_str())
        }
        Some(mime) => mime.essence_str().to_owned(),
        None => return HeaderValue::from_static("application/octet-stream"),
    };
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

/// A strong ETag from mtime (nanoseconds) and size. Each encoding gets its own tag: strong
/// validators must differ between representations whose bytes differ.
fn etag(modified: SystemTime, size: u64, encoding: Option<Encoding>) -> String {
    let nanos = modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match encoding {
        Some(encoding) => format!("\"{nanos:x}-{size:x}-{}\"", encoding.extension()),
        None => format!("\"{nanos:x}-{size:x}\""),
    }
}

fn unix_seconds(time: SystemTime) -> Option<u64> {
    time.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// RFC 9110 §13.2.2: If-None-Match (weak comparison) wins; If-Modified-Since only counts
/// when If-None-Match is absent.
fn not_modified(headers: &HeaderMap, etag: Option<&str>, modified: Option<SystemTime>) -> bool {
    let mut none_match = headers.get_all(header::IF_NONE_MATCH).iter().peekable();
    if none_match.peek().is_some() {
        return none_match
            .filter_map(|v| v.to_str().ok())
            .any(|list| list.trim() == "*" || etag.is_some_and(|e| etag_list_contains(list, e)));
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    match (
        since.and_then(unix_seconds),
        modified.and_then(unix_seconds),
    ) {
        (Some(since), Some(modified)) => modified <= since,
        _ => false,
    }
}

/// Whether the comma-separated entity-tag `list` contains `etag` by weak comparison
/// (`W/` prefixes ignored). Parsed tag by tag because tags may contain commas.
fn etag_list_contains(list: &str, etag: &str) -> bool {
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        rest = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(close) = rest.strip_prefix('"').and_then(|r| r.find('"')) else {
            return false;
        };
        let (tag, tail) = rest.split_at(close + 2);
        if tag == etag {
            return true;
        }
        rest = tail;
    }
}

/// If-Range (RFC 9110 §13.1.5): the range applies only if the representation is unchanged,
/// judged by a strong ETag match or an exact Last-Modified date match.
fn if_range_holds(headers: &HeaderMap, etag: Option<&str>, modified: Option<SystemTime>) -> bool {
    let Some(value) = headers.get(header::IF_RANGE) else {
        return true;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let value = value.trim();
    if value.starts_with('"') {
        return etag == Some(value);
    }
    if value.starts_with("W/") {
        return false;
    }
    match (httpdate::parse_http_date(value), modified) {
        (Ok(date), Some(modified)) => unix_seconds(date) == unix_seconds(modified),
        _ => false,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum ByteRange {
    /// No usable Range: serve the whole file.
    Ignore,
    /// Inclusive byte offsets.
    Satisfiable {
        start: u64,
        end: u64,
    },
    Unsatisfiable,
}

fn parse_range(value: &str, size: u64) -> ByteRange {
    let value = value.trim();
    let spec = match value.get(..6) {
        Some(unit) if unit.eq_ignore_ascii_case("bytes=") => value[6..].trim(),
        _ => return ByteRange::Ignore,
    };
    // Several ranges would need a multipart/byteranges body; RFC 9110 lets a server ignore
    // Range, so they get the full 200 response instead.
    if spec.contains(',') {
        return ByteRange::Ignore;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return ByteRange::Ignore;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // Suffix range: the last `n` bytes.
        return match number(last) {
            None => ByteRange::Ignore,
            Some(0) => ByteRange::Unsatisfiable,
            Some(_) if size == 0 => ByteRange::Unsatisfiable,
            Some(n) => ByteRange::Satisfiable {
                start: size.saturating_sub(n),
                end: size - 1,
            },
        };
    }
    let Some(start) = number(first) else {
        return ByteRange::Ignore;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match number(last) {
            Some(end) if end >= start => end,
            _ => return ByteRange::Ignore,
        }
    };
    if start >= size {
        return ByteRange::Unsatisfiable;
    }
    ByteRange::Satisfiable {
        start,
        end: end.min(size - 1),
    }
}

/// A non-empty run of ASCII digits (`str::parse` alone would also accept a leading '+').
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Encodings the client accepts (q > 0), best first; ties go to [`Encoding::ALL`] order.
fn preferred_encodings(headers: &HeaderMap) -> [Option<Encoding>; 2] {
    let mut explicit = [None::<f32>; 2];
    let mut wildcard = None::<f32>;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            if coding.is_empty() {
                continue;
            }
            let q = parts
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                // An unparsable q-value is treated as refusal rather than guessed at.
                .map_or(1.0, |(_, v)| v.trim().parse::<f32>().unwrap_or(0.0));
            if coding == "*" {
                wildcard = Some(q);
            } else if coding.eq_ignore_ascii_case("br") {
                explicit[0] = Some(q);
            } else if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                explicit[1] = Some(q);
            }
        }
    }
    let q = |i: usize| explicit[i].or(wildcard).unwrap_or(0.0);
    let (br, gzip) = (q(0), q(1));
    let ordered = if gzip > br {
        [Encoding::Gzip, Encoding::Brotli]
    } else {
        Encoding::ALL
    };
    let acceptable = |e: Encoding| {
        let q = if e == Encoding::Brotli { br } else { gzip };
        (q > 0.0).then_some(e)
    };
    [acceptable(ordered[0]), acceptable(ordered[1])]
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSS: &str = "body { color: #333; }\n";
    const JS: &str = "console.log('identity');\n";

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

    fn dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("style.css"), CSS).unwrap();
        std::fs::write(dir.path().join("app.js"), JS).unwrap();
        std::fs::write(dir.path().join("app.js.br"), "BROTLI BYTES").unwrap();
        std::fs::write(dir.path().join("app.js.gz"), "GZIP BYTES").unwrap();
        std::fs::write(dir.path().join("only.js"), JS).unwrap();
        std::fs::write(dir.path().join("only.js.gz"), "GZ").unwrap();
        dir
    }

    async fn get(path: &Path, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
        request(path, Method::GET, headers).await
    }

    async fn request(
        path: &Path,
        method: Method,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        let response = serve(path, &method, &map).await;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (parts.status, parts.headers, bytes)
    }

    fn h(headers: &HeaderMap, name: header::HeaderName) -> &str {
        headers
            .get(&name)
            .unwrap_or_else(|| panic!("missing {name}"))
            .to_str()
            .unwrap()
    }

    #[tokio::test]
    async fn get_serves_file_with_validators() {
        let d = dir();
        let path = d.path().join("style.css");
        let (status, headers, body) = get(&path, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, CSS.as_bytes());
        assert_eq!(h(&headers, header::CONTENT_TYPE), "text/css; charset=utf-8");
        assert_eq!(h(&headers, header::CONTENT_LENGTH), CSS.len().to_string());
        assert_eq!(h(&headers, header::ACCEPT_RANGES), "bytes");
        let meta = std::fs::metadata(&path).unwrap();
        let nanos = meta
            .modified()
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        assert_eq!(
            h(&headers, header::ETAG),
            format!("\"{nanos:x}-{:x}\"", CSS.len())
        );
        assert_eq!(
            h(&headers, header::LAST_MODIFIED),
            httpdate::fmt_http_date(meta.modified().unwrap())
        );
        assert!(headers.get(header::VARY).is_none());
        assert!(headers.get(header::CONTENT_ENCODING).is_none());
    }

    #[tokio::test]
    async fn content_type_fallbacks() {
        let d = dir();
        std::fs::write(d.path().join("blob.unknownext"), "x").unwrap();
        std::fs::write(d.path().join("pic.png"), "x").unwrap();
        let (_, headers, _) = get(&d.path().join("blob.unknownext"), &[]).await;
        assert_eq!(
            h(&headers, header::CONTENT_TYPE),
            "application/octet-stream"
        );
        let (_, headers, _) = get(&d.path().join("pic.png"), &[]).await;
        assert_eq!(h(&headers, header::CONTENT_TYPE), "image/png");
        let (_, headers, _) = get(&d.path().join("app.js"), &[]).await;
        assert!(h(&headers, header::CONTENT_TYPE).ends_with("javascript; charset=utf-8"));
    }

    #[tokio::test]
    async fn head_has_get_headers_and_no_body() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, get_headers, _) = get(&path, &[]).await;
        let (status, headers, body) = request(&path, Method::HEAD, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.is_empty());
        assert_eq!(headers, get_headers);
        // Range is not defined for HEAD and is ignored.
        let (status, headers, _) = request(&path, Method::HEAD, &[("range", "bytes=0-1")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h(&headers, header::CONTENT_LENGTH), CSS.len().to_string());
    }

    #[tokio::test]
    async fn other_methods_are_not_allowed() {
        let d = dir();
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
            let (status, headers, _) = request(&d.path().join("style.css"), method, &[]).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
            assert_eq!(h(&headers, header::ALLOW), "GET, HEAD");
        }
    }

    #[tokio::test]
    async fn missing_and_non_regular_files_are_404() {
        let d = dir();
        let (status, _, _) = get(&d.path().join("nope.css"), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _, _) = get(d.path(), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn if_none_match() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let etag = h(&headers, header::ETAG).to_owned();
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        for inm in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"a,b\", \"other\",{etag}"),
            "*".to_owned(),
        ] {
            let (status, headers, body) = get(&path, &[("if-none-match", &inm)]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{inm}");
            assert!(body.is_empty());
            assert_eq!(h(&headers, header::ETAG), etag);
            assert_eq!(h(&headers, header::LAST_MODIFIED), lm);
            assert!(headers.get(header::CONTENT_LENGTH).is_none());
        }
        let (status, _, body) = get(&path, &[("if-none-match", "\"stale\"")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, CSS.as_bytes());
        // A non-matching If-None-Match overrides a matching If-Modified-Since.
        let (status, _, _) = get(
            &path,
            &[("if-none-match", "\"stale\""), ("if-modified-since", &lm)],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn if_modified_since() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        let (status, headers, body) = get(&path, &[("if-modified-since", &lm)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
        assert!(headers.get(header::ETAG).is_some());
        let old = "Sun, 06 Nov 1994 08:49:37 GMT";
        let (status, _, _) = get(&path, &[("if-modified-since", old)]).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, _) = get(&path, &[("if-modified-since", "garbage")]).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn single_ranges() {
        let d = dir();
        let path = d.path().join("style.css");
        let len = CSS.len();
        for (range, start, end) in [
            ("bytes=0-3", 0, 3),
            ("bytes=5-", 5, len - 1),
            ("bytes=-4", len - 4, len - 1),
            ("bytes=2-9999", 2, len - 1),
            ("bytes=-9999", 0, len - 1),
            ("Bytes= 1-1", 1, 1),
        ] {
            let (status, headers, body) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(body, &CSS.as_bytes()[start..=end], "{range}");
            assert_eq!(
                h(&headers, header::CONTENT_RANGE),
                format!("bytes {start}-{end}/{len}")
            );
            assert_eq!(
                h(&headers, header::CONTENT_LENGTH),
                (end - start + 1).to_string()
            );
        }
    }

    #[tokio::test]
    async fn unsatisfiable_range_is_416() {
        let d = dir();
        let path = d.path().join("style.css");
        for range in ["bytes=1000-", "bytes=1000-2000", "bytes=-0"] {
            let (status, headers, _) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
            assert_eq!(
                h(&headers, header::CONTENT_RANGE),
                format!("bytes */{}", CSS.len())
            );
        }
        std::fs::write(d.path().join("empty.txt"), "").unwrap();
        let (status, _, _) = get(&d.path().join("empty.txt"), &[("range", "bytes=0-")]).await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    }

    #[tokio::test]
    async fn malformed_or_multiple_ranges_get_full_response() {
        let d = dir();
        let path = d.path().join("style.css");
        for range in [
            "bytes=0-1,4-5",
            "bytes=5-2",
            "bytes=abc",
            "bytes=+1-2",
            "bytes=-",
            "items=0-1",
            "bytes=99999999999999999999999-",
        ] {
            let (status, _, body) = get(&path, &[("range", range)]).await;
            assert_eq!(status, StatusCode::OK, "{range}");
            assert_eq!(body, CSS.as_bytes());
        }
    }

    #[tokio::test]
    async fn if_range() {
        let d = dir();
        let path = d.path().join("style.css");
        let (_, headers, _) = get(&path, &[]).await;
        let etag = h(&headers, header::ETAG).to_owned();
        let lm = h(&headers, header::LAST_MODIFIED).to_owned();
        for (if_range, expected) in [
            (etag.as_str(), StatusCode::PARTIAL_CONTENT),
            (lm.as_str(), StatusCode::PARTIAL_CONTENT),
            ("\"stale\"", StatusCode::OK),
            (&format!("W/{etag}"), StatusCode::OK),
            ("Sun, 06 Nov 1994 08:49:37 GMT", StatusCode::OK),
        ] {
            let (status, _, _) =
                get(&path, &[("range", "bytes=0-1"), ("if-range", if_range)]).await;
            assert_eq!(status, expected, "{if_range}");
        }
    }

    #[tokio::test]
    async fn precompressed_siblings() {
        let d = dir();
        let path = d.path().join("app.js");
        for (accept, encoding, body) in [
            ("gzip, deflate, br", Some("br"), "BROTLI BYTES"),
            ("br", Some("br"), "BROTLI BYTES"),
            ("gzip", Some("gzip"), "GZIP BYTES"),
            ("x-gzip", Some("gzip"), "GZIP BYTES"),
            ("br;q=0, gzip", Some("gzip"), "GZIP BYTES"),
            ("br;q=0.2, gzip;q=0.8", Some("gzip"), "GZIP BYTES"),
            ("*", Some("br"), "BROTLI BYTES"),
            ("*, br;q=0", Some("gzip"), "GZIP BYTES"),
            ("br;q=0, gzip;q=0", None, JS),
            ("identity", None, JS),
            ("", None, JS),
        ] {
            let (status, headers, got) = get(&path, &[("accept-encoding", accept)]).await;
            assert_eq!(status, StatusCode::OK, "{accept}");
            assert_eq!(got, body.as_bytes(), "{accept}");
            assert_eq!(
                headers
                    .get(header::CONTENT_ENCODING)
                    .map(|v| v.to_str().unwrap()),
                encoding,
                "{accept}"
            );
            assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
            assert!(h(&headers, header::CONTENT_TYPE).ends_with("javascript; charset=utf-8"));
            assert_eq!(h(&headers, header::CONTENT_LENGTH), body.len().to_string());
        }
        // No header at all: identity, still varying.
        let (_, headers, got) = get(&path, &[]).await;
        assert_eq!(got, JS.as_bytes());
        assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
        // Only a .gz sibling: br is wanted but missing.
        let (_, headers, got) = get(
            &d.path().join("only.js"),
            &[("accept-encoding", "br, gzip")],
        )
        .await;
        assert_eq!(got, b"GZ");
        assert_eq!(h(&headers, header::CONTENT_ENCODING), "gzip");
    }

    #[tokio::test]
    async fn precompressed_etags_and_ranges() {
        let d = dir();
        let path = d.path().join("app.js");
        let (_, identity, _) = get(&path, &[]).await;
        let (_, br, _) = get(&path, &[("accept-encoding", "br")]).await;
        let br_etag = h(&br, header::ETAG).to_owned();
        assert_ne!(h(&identity, header::ETAG), br_etag);
        assert!(br_etag.ends_with("-br\""));
        let (status, headers, _) = get(
            &path,
            &[("accept-encoding", "br"), ("if-none-match", &br_etag)],
        )
        .await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert_eq!(h(&headers, header::VARY), "Accept-Encoding");
        // Ranges always address the identity bytes.
        let (status, headers, body) = get(
            &path,
            &[("accept-encoding", "br, gzip"), ("range", "bytes=0-6")],
        )
        .await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(body, &JS.as_bytes()[..7]);
        assert!(headers.get(header::CONTENT_ENCODING).is_none());
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
