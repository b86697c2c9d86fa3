//! Protobuf wire-format primitives, written by hand (no build-time `protoc`): the writers
//! and the reader that the metrics push payload (`proto`) and the trace exporter
//! (crate `ferrophp-trace`, OTLP) encode and decode with. The small writers are
//! `#[inline]`: called across crates, byte by byte, on every span PHP ends.

/// Wire type of varints (integers, bools, enums).
pub const VARINT: u8 = 0;
/// Wire type of 8-byte fixed fields (double, fixed64).
pub const I64: u8 = 1;
/// Wire type of length-delimited fields (strings, bytes, nested messages).
pub const LEN: u8 = 2;
/// Wire type of 4-byte fixed fields (float, fixed32).
pub const I32: u8 = 5;

/// Writes `v` as a base-128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes a field's key: its number and wire type.
#[inline]
pub fn put_tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, ((field as u64) << 3) | wire as u64);
}

/// Writes a `double` field (written even when zero).
#[inline]
pub fn put_double(out: &mut Vec<u8>, field: u32, v: f64) {
    put_tag(out, field, I64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Writes a length-delimited field whose body `body` writes, without a scratch buffer:
/// the body is written after a reserved one-byte length and moved if it needed more.
pub fn put_nested(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    put_tag(out, field, LEN);
    let len_at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - len_at - 1;
    if len < 0x80 {
        out[len_at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(5);
        put_varint(&mut prefix, len as u64);
        out.splice(len_at..len_at + 1, prefix);
    }
}

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid protobuf: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// A protobuf wire reader over a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
}

/// One field's value as read from the wire.
pub enum Field<'a> {
    /// A varint field's value.
    Varint(u64),
    /// An 8-byte fixed field's bits.
    I64(u64),
    /// A length-delimited field's bytes.
    Len(&'a [u8]),
    /// A 4-byte fixed field's bits.
    I32(u32),
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or(DecodeError("truncated varint"))?;
            self.buf = rest;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DecodeError("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError("truncated field"));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The next (field number, value), or None at the end.
    pub fn next_field(&mut self) -> Result<Option<(u32, Field<'a>)>, DecodeError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let field = (tag >> 3) as u32;
        let value = match (tag & 7) as u8 {
            VARINT => Field::Varint(self.varint()?),
            I64 => Field::I64(u64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            LEN => {
                let n = self.varint()? as usize;
                Field::Len(self.take(n)?)
            }
            I32 => Field::I32(u32::from_le_bytes(self.take(4)?.try_into().unwrap())),
            _ => return Err(DecodeError("unsupported wire type")),
        };
        Ok(Some((field, value)))
    }
}
