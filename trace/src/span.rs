//! One span's data and its OTLP encoding (`opentelemetry/proto/trace/v1/trace.proto`),
//! written on the thread that ends the span straight into protobuf bytes: attributes and
//! events are encoded as they are set, so a span in progress holds a few reusable byte
//! buffers and no per-attribute allocation. The limits (attributes and events per span,
//! value length) are applied here and what they drop is counted, in the span (its
//! `dropped_*_count` fields, as the schema has them) and process-wide ([`crate::stats`]).
//!
//! ```text
//! message Span { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3;
//!   bytes parent_span_id = 4; fixed32 flags = 16; string name = 5; SpanKind kind = 6;
//!   fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
//!   repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
//!   repeated Event events = 11; uint32 dropped_events_count = 12; Status status = 15; }
//! message Event { fixed64 time_unix_nano = 1; string name = 2;
//!   repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
//! message Status { string message = 2; StatusCode code = 3; }
//! message KeyValue { string key = 1; AnyValue value = 2; }
//! message AnyValue { oneof value { string string_value = 1; bool bool_value = 2;
//!   int64 int_value = 3; double double_value = 4; ArrayValue array_value = 5; } }
//! message ArrayValue { repeated AnyValue values = 1; }
//! ```

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use ferrophp_metrics::wire::{put_nested, put_tag, put_varint, I32, I64, LEN, VARINT};

use crate::context::{SpanId, TraceId};

/// The span's role (`Span.SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Work inside the process (PHP's own spans, by default).
    #[default]
    Internal = 1,
    /// The handling of an incoming request.
    Server = 2,
    /// An outgoing call.
    Client = 3,
    /// Sending a message to be handled later.
    Producer = 4,
    /// Handling a message a producer sent.
    Consumer = 5,
}

impl Kind {
    /// The kind of OTLP number `v` (as PHP passes it); None for an unknown number.
    pub fn from_i64(v: i64) -> Option<Kind> {
        Some(match v {
            1 => Kind::Internal,
            2 => Kind::Server,
            3 => Kind::Client,
            4 => Kind::Producer,
            5 => Kind::Consumer,
            _ => return None,
        })
    }
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusCode {
    /// No status set.
    #[default]
    Unset = 0,
    /// The operation succeeded (set explicitly).
    Ok = 1,
    /// The operation failed.
    Error = 2,
}

/// Per-span limits (`OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`, `OTEL_SPAN_EVENT_COUNT_LIMIT`,
/// `OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT`, `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most attributes per span.
    pub attributes: u32,
    /// Most events per span.
    pub events: u32,
    /// Most attributes per event.
    pub event_attributes: u32,
    /// Longest string value (bytes, cut at a character boundary); `usize::MAX`: none.
    pub value_length: usize,
}

impl Default for Limits {
    /// The specification's defaults: 128 attributes, 128 events, no length limit.
    fn default() -> Self {
        Limits {
            attributes: 128,
            events: 128,
            event_attributes: 128,
            value_length: usize::MAX,
        }
    }
}

/// An attribute value. `Str` is bytes (from PHP, from headers): what is not UTF-8 is sent
/// with U+FFFD in place of the invalid sequences (the schema's strings must be UTF-8);
/// `Text` is already UTF-8 and is not checked again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// A string as bytes, made UTF-8 when encoded.
    Str(&'a [u8]),
    /// A string known to be UTF-8.
    Text(&'a str),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Double(f64),
    /// A boolean.
    Bool(bool),
}

/// `bytes` as UTF-8, with invalid sequences replaced; borrowed when already valid (the
/// plain check first: `from_utf8_lossy` walks chunk by chunk, several times slower).
#[inline]
fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Bytes of `v` as a varint.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 byte per started 7 bits; 0 takes one.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bytes of a length-delimited field `field` holding `len` bytes.
#[inline]
fn len_field(field: u32, len: usize) -> usize {
    varint_len((field as u64) << 3) + varint_len(len as u64) + len
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character boundary.
#[inline]
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[inline]
fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[inline]
fn put_fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(out, field, I64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// An attribute key: text as it is, bytes made UTF-8 (U+FFFD for invalid sequences).
pub trait Key {
    /// The key as UTF-8 text.
    fn text(&self) -> Cow<'_, str>;
}

impl Key for str {
    #[inline]
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl Key for [u8] {
    #[inline]
    fn text(&self) -> Cow<'_, str> {
        utf8(self)
    }
}

impl<const N: usize> Key for [u8; N] {
    #[inline]
    fn text(&self) -> Cow<'_, str> {
        utf8(self)
    }
}

/// A single value as it will be written: strings converted and cut once.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl<'a> Scalar<'a> {
    #[inline]
    fn new(value: &Value<'a>, limits: &Limits) -> Scalar<'a> {
        match *value {
            Value::Str(s) => Scalar::Str(match utf8(s) {
                Cow::Borrowed(b) => Cow::Borrowed(cut(b, limits.value_length)),
                Cow::Owned(o) => Cow::Owned(cut(&o, limits.value_length).to_owned()),
            }),
            Value::Text(t) => Scalar::Str(Cow::Borrowed(cut(t, limits.value_length))),
            Value::Bool(b) => Scalar::Bool(b),
            Value::Int(i) => Scalar::Int(i),
            Value::Double(d) => Scalar::Double(d),
        }
    }

    /// Bytes of the `AnyValue` body.
    #[inline]
    fn len(&self) -> usize {
        match self {
            Scalar::Str(s) => len_field(1, s.len()),
            Scalar::Bool(_) => 2,
            Scalar::Int(i) => 1 + varint_len(*i as u64),
            Scalar::Double(_) => 9,
        }
    }

    /// Writes the `AnyValue` body.
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Scalar::Str(s) => put_bytes(out, 1, s.as_bytes()),
            Scalar::Bool(b) => {
                put_tag(out, 2, VARINT);
                put_varint(out, *b as u64);
            }
            Scalar::Int(i) => {
                put_tag(out, 3, VARINT);
                put_varint(out, *i as u64);
            }
            Scalar::Double(d) => put_fixed64(out, 4, d.to_bits()),
        }
    }
}

/// Encodes `value` as an `AnyValue` body.
fn put_any_value(out: &mut Vec<u8>, value: &Value<'_>, limits: &Limits) {
    Scalar::new(value, limits).put(out);
}

/// Appends one `KeyValue` as field `field` of the enclosing message. A single value is
/// written with its lengths computed first (one reservation, nothing moved); an array
/// through nested placeholders.
#[inline]
fn put_key_value(out: &mut Vec<u8>, field: u32, key: &str, values: AttrValue<'_>, limits: &Limits) {
    match values {
        AttrValue::One(v) => {
            let v = Scalar::new(&v, limits);
            let any = v.len();
            let body = len_field(1, key.len()) + len_field(2, any);
            out.reserve(len_field(field, body));
            put_tag(out, field, LEN);
            put_varint(out, body as u64);
            put_bytes(out, 1, key.as_bytes());
            put_tag(out, 2, LEN);
            put_varint(out, any as u64);
            v.put(out);
        }
        AttrValue::Array(items) => put_nested(out, field, |o| {
            put_bytes(o, 1, key.as_bytes());
            put_nested(o, 2, |o| {
                put_nested(o, 5, |o| {
                    for item in items {
                        put_nested(o, 1, |o| put_any_value(o, item, limits));
                    }
                })
            });
        }),
    }
}

/// One value or a homogeneous array of them (what an attribute may hold).
#[derive(Debug, Clone, Copy)]
pub enum AttrValue<'a> {
    /// A single value.
    One(Value<'a>),
    /// An array of values of one type.
    Array(&'a [Value<'a>]),
}

impl<'a> From<Value<'a>> for AttrValue<'a> {
    fn from(v: Value<'a>) -> Self {
        AttrValue::One(v)
    }
}

/// A varint at the start of `b`: (value, bytes it took).
#[inline]
fn read_varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut v = 0usize;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as usize) << (7 * i);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Where the attribute `key` sits in `attributes` (start, end of its field). The buffer
/// holds only what `put_key_value` wrote there: `attributes` fields (a one-byte tag, a
/// length, then the key as the `KeyValue`'s first field), so this walks it directly.
fn find_attribute(attributes: &[u8], key: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < attributes.len() {
        let start = i;
        let (len, n) = read_varint(attributes.get(i + 1..)?)?;
        let body = attributes.get(i + 1 + n..i + 1 + n + len)?;
        i += 1 + n + len;
        if body.first() == Some(&0x0a) {
            let (key_len, m) = read_varint(&body[1..])?;
            if body.get(1 + m..1 + m + key_len) == Some(key) {
                return Some((start, i));
            }
        }
    }
    None
}

/// The largest attribute or event buffer a reused span keeps.
const KEPT_CAPACITY: usize = 64 << 10;

/// A span being recorded. Reusable: [`SpanData::reset`] keeps the buffers.
#[derive(Debug, Default)]
pub struct SpanData {
    /// The trace the span belongs to.
    pub trace_id: TraceId,
    /// The span's own id.
    pub span_id: SpanId,
    /// The parent span's id; None for a trace's root.
    pub parent: Option<SpanId>,
    /// The parent came from another process (the `traceparent` header).
    pub parent_remote: bool,
    /// W3C trace flags (the sampled bit).
    pub flags: u8,
    /// The W3C `tracestate` the span carries.
    pub trace_state: String,
    /// The span's name.
    pub name: String,
    /// The span's role.
    pub kind: Kind,
    /// When the span started (ns since the Unix epoch).
    pub start_unix_nano: u64,
    /// When the span ended (ns since the Unix epoch); 0 while it runs.
    pub end_unix_nano: u64,
    attributes: Vec<u8>,
    attribute_count: u32,
    dropped_attributes: u32,
    events: Vec<u8>,
    event_count: u32,
    dropped_events: u32,
    /// Whether the operation succeeded, if said.
    pub status: StatusCode,
    /// The status' description (sent when a status is set).
    pub status_message: String,
}

impl SpanData {
    /// An empty span whose attributes may take `attribute_bytes` without reallocating.
    pub fn with_capacity(attribute_bytes: usize) -> SpanData {
        SpanData {
            attributes: Vec::with_capacity(attribute_bytes),
            ..SpanData::default()
        }
    }

    /// Empties the span for reuse, keeping its buffers (unless one grew past
    /// [`KEPT_CAPACITY`]: a request with huge attributes must not leave that much held
    /// by its thread for good).
    pub fn reset(&mut self) {
        for buf in [&mut self.attributes, &mut self.events] {
            if buf.capacity() > KEPT_CAPACITY {
                *buf = Vec::new();
            }
        }
        self.parent = None;
        self.parent_remote = false;
        self.flags = 0;
        self.trace_state.clear();
        self.name.clear();
        self.kind = Kind::Internal;
        self.start_unix_nano = 0;
        self.end_unix_nano = 0;
        self.attributes.clear();
        self.attribute_count = 0;
        self.dropped_attributes = 0;
        self.events.clear();
        self.event_count = 0;
        self.dropped_events = 0;
        self.status = StatusCode::Unset;
        self.status_message.clear();
    }

    /// Sets the name (invalid UTF-8 replaced).
    pub fn set_name(&mut self, name: &[u8]) {
        self.name.clear();
        self.name.push_str(&utf8(name));
    }

    /// Bytes of the `Span` body `encode_into` writes.
    fn encoded_len(&self) -> usize {
        let mut n = len_field(1, 16) + len_field(2, 8);
        if !self.trace_state.is_empty() {
            n += len_field(3, self.trace_state.len());
        }
        if self.parent.is_some() {
            n += len_field(4, 8);
        }
        n += len_field(5, self.name.len());
        n += 1 + varint_len(self.kind as u64);
        n += 2 * 9;
        n += self.attributes.len();
        if self.dropped_attributes > 0 {
            n += 1 + varint_len(self.dropped_attributes as u64);
        }
        n += self.events.len();
        if self.dropped_events > 0 {
            n += 1 + varint_len(self.dropped_events as u64);
        }
        if self.status != StatusCode::Unset {
            n += len_field(15, self.status_len());
        }
        // flags: a two-byte tag (field 16) and a fixed32.
        n + 2 + 4
    }

    fn status_len(&self) -> usize {
        let message = if self.status_message.is_empty() {
            0
        } else {
            len_field(2, self.status_message.len())
        };
        message + 1 + varint_len(self.status as u64)
    }

    /// Sets attribute `key`, replacing an earlier value of the same key (the
    /// specification's rule); past the limit it is dropped and counted.
    pub fn set_attribute<'a, K: Key + ?Sized>(
        &mut self,
        key: &K,
        value: impl Into<AttrValue<'a>>,
        limits: &Limits,
    ) {
        let value = value.into();
        let key = key.text();
        // Replace: find the field whose key matches and cut it out.
        if let Some((start, end)) = find_attribute(&self.attributes, key.as_bytes()) {
            self.attributes.drain(start..end);
            self.attribute_count -= 1;
        } else if self.attribute_count >= limits.attributes {
            self.dropped_attributes += 1;
            crate::stats::ATTRIBUTES_DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        put_key_value(&mut self.attributes, 9, &key, value, limits);
        self.attribute_count += 1;
    }

    /// Appends attribute `key` without looking for an earlier one (the server's own
    /// attributes, each set once; the keys of one PHP array, which are distinct).
    pub fn push_attribute<'a, K: Key + ?Sized>(
        &mut self,
        key: &K,
        value: impl Into<AttrValue<'a>>,
        limits: &Limits,
    ) {
        if self.attribute_count >= limits.attributes {
            self.dropped_attributes += 1;
            crate::stats::ATTRIBUTES_DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        put_key_value(&mut self.attributes, 9, &key.text(), value.into(), limits);
        self.attribute_count += 1;
    }

    /// Attributes recorded (not counting those past the limit).
    pub fn attribute_count(&self) -> u32 {
        self.attribute_count
    }

    /// Adds an event at `time_unix_nano`; `attributes` writes its attributes through the
    /// [`EventAttributes`] it is given. Past the event limit the event is dropped and
    /// counted.
    pub fn add_event(
        &mut self,
        time_unix_nano: u64,
        name: &[u8],
        limits: &Limits,
        attributes: impl FnOnce(&mut EventAttributes<'_>),
    ) {
        if self.event_count >= limits.events {
            self.dropped_events += 1;
            crate::stats::EVENTS_DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.event_count += 1;
        put_nested(&mut self.events, 11, |o| {
            put_fixed64(o, 1, time_unix_nano);
            put_bytes(o, 2, utf8(name).as_bytes());
            let mut attrs = EventAttributes {
                out: o,
                count: 0,
                dropped: 0,
                limits,
            };
            attributes(&mut attrs);
            let dropped = attrs.dropped;
            if dropped > 0 {
                put_tag(o, 4, VARINT);
                put_varint(o, dropped as u64);
            }
        });
    }

    /// Events recorded (not counting those past the limit).
    pub fn event_count(&self) -> u32 {
        self.event_count
    }

    /// Appends this span as one `ScopeSpans.spans` field (number 2) to `out`: its length
    /// computed first, so the bytes are written once, in place.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let body = self.encoded_len();
        out.reserve(len_field(2, body));
        put_tag(out, 2, LEN);
        put_varint(out, body as u64);
        let start = out.len();
        put_bytes(out, 1, &self.trace_id.0);
        put_bytes(out, 2, &self.span_id.0);
        if !self.trace_state.is_empty() {
            put_bytes(out, 3, self.trace_state.as_bytes());
        }
        if let Some(parent) = self.parent {
            put_bytes(out, 4, &parent.0);
        }
        put_bytes(out, 5, self.name.as_bytes());
        put_tag(out, 6, VARINT);
        put_varint(out, self.kind as u64);
        put_fixed64(out, 7, self.start_unix_nano);
        put_fixed64(out, 8, self.end_unix_nano.max(self.start_unix_nano));
        out.extend_from_slice(&self.attributes);
        if self.dropped_attributes > 0 {
            put_tag(out, 10, VARINT);
            put_varint(out, self.dropped_attributes as u64);
        }
        out.extend_from_slice(&self.events);
        if self.dropped_events > 0 {
            put_tag(out, 12, VARINT);
            put_varint(out, self.dropped_events as u64);
        }
        if self.status != StatusCode::Unset {
            put_tag(out, 15, LEN);
            put_varint(out, self.status_len() as u64);
            if !self.status_message.is_empty() {
                put_bytes(out, 2, self.status_message.as_bytes());
            }
            put_tag(out, 3, VARINT);
            put_varint(out, self.status as u64);
        }
        // SpanFlags: the W3C flags, and whether the parent is remote (bits 8 and 9).
        let mut flags = self.flags as u32;
        if self.parent.is_some() {
            flags |= 0x100 | if self.parent_remote { 0x200 } else { 0 };
        }
        put_tag(out, 16, I32);
        out.extend_from_slice(&flags.to_le_bytes());
        debug_assert_eq!(
            out.len() - start,
            body,
            "encoded_len disagrees with encode_into"
        );
    }
}

/// Writes one event's attributes, within the per-event limit.
pub struct EventAttributes<'o> {
    out: &'o mut Vec<u8>,
    count: u32,
    dropped: u32,
    limits: &'o Limits,
}

impl EventAttributes<'_> {
    /// Adds an attribute to the event; past the per-event limit it is dropped and
    /// counted.
    pub fn push<'a, K: Key + ?Sized>(&mut self, key: &K, value: impl Into<AttrValue<'a>>) {
        if self.count >= self.limits.event_attributes {
            self.dropped += 1;
            crate::stats::ATTRIBUTES_DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.count += 1;
        put_key_value(self.out, 3, &key.text(), value.into(), self.limits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrophp_metrics::wire::{Field, Reader};

    /// Decodes the KeyValue fields of an encoded span (key → first AnyValue field).
    fn attributes(span: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut r = Reader::new(span);
        let Ok(Some((2, Field::Len(body)))) = r.next_field() else {
            panic!("not a spans field")
        };
        let mut r = Reader::new(body);
        while let Ok(Some((f, v))) = r.next_field() {
            if let (9, Field::Len(kv)) = (f, v) {
                let mut kr = Reader::new(kv);
                let (mut key, mut value) = (String::new(), Vec::new());
                while let Ok(Some((f, v))) = kr.next_field() {
                    match (f, v) {
                        (1, Field::Len(k)) => key = String::from_utf8(k.to_vec()).unwrap(),
                        (2, Field::Len(any)) => value = any.to_vec(),
                        _ => {}
                    }
                }
                out.push((key, value));
            }
        }
        out
    }

    #[test]
    fn attributes_replace_by_key_and_stop_at_the_limit() {
        let limits = Limits {
            attributes: 3,
            ..Limits::default()
        };
        let mut s = SpanData::default();
        s.set_attribute(b"a", Value::Int(1), &limits);
        s.set_attribute(b"b", Value::Str(b"x"), &limits);
        s.set_attribute(b"a", Value::Int(2), &limits);
        s.set_attribute(b"c", Value::Bool(true), &limits);
        s.set_attribute(b"d", Value::Double(1.5), &limits);
        s.set_attribute(b"c", Value::Bool(false), &limits);
        assert_eq!(s.attribute_count(), 3);
        assert_eq!(s.dropped_attributes, 1);
        let mut out = Vec::new();
        s.encode_into(&mut out);
        let attrs = attributes(&out);
        let keys: Vec<&str> = attrs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        // int_value = 3 (varint 2), bool_value = 2 (false)
        assert_eq!(attrs[1].1, [0x18, 2]);
        assert_eq!(attrs[2].1, [0x10, 0]);
    }

    #[test]
    fn computed_lengths_match_what_is_written() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(varint_len(v), b.len(), "{v}");
        }
        let limits = Limits::default();
        let mut s = SpanData::default();
        s.set_name(&[b'n'; 300]);
        s.trace_state.push_str("a=1");
        s.parent = Some(SpanId([1; 8]));
        s.status = StatusCode::Error;
        s.status_message.push_str("why");
        for i in 0..40 {
            s.set_attribute(format!("k{i}").as_bytes(), Value::Int(-i), &limits);
            s.add_event(i as u64, b"e", &limits, |a| {
                a.push(b"x", Value::Double(1.5))
            });
        }
        s.set_attribute(
            b"list",
            AttrValue::Array(&[Value::Bool(true), Value::Bool(false)]),
            &limits,
        );
        let mut out = Vec::new();
        s.encode_into(&mut out);
        // One field spanning it all (the debug assertion checked the body's length).
        let mut r = Reader::new(&out);
        let Ok(Some((2, Field::Len(body)))) = r.next_field() else {
            panic!()
        };
        assert_eq!(r.remaining(), 0);
        assert_eq!(body.len(), s.encoded_len());
    }

    #[test]
    fn replacing_finds_keys_past_long_values() {
        let limits = Limits::default();
        let long = "x".repeat(300);
        let mut s = SpanData::default();
        s.set_attribute("long", Value::Text(&long), &limits);
        s.set_attribute("k", Value::Int(1), &limits);
        s.set_attribute(b"k", Value::Int(2), &limits);
        s.set_attribute("long", Value::Text("short"), &limits);
        assert_eq!(s.attribute_count(), 2);
        let mut out = Vec::new();
        s.encode_into(&mut out);
        let attrs = attributes(&out);
        assert_eq!(attrs.len(), 2);
        assert_eq!(
            (attrs[0].0.as_str(), &attrs[0].1[..]),
            ("k", &[0x18, 2][..])
        );
        assert_eq!(attrs[1].0, "long");
        assert_eq!(&attrs[1].1[2..], b"short");
    }

    #[test]
    fn strings_are_cut_at_character_boundaries_and_made_utf8() {
        let limits = Limits {
            value_length: 4,
            ..Limits::default()
        };
        let mut s = SpanData::default();
        s.set_attribute(b"k", Value::Str("aé€".as_bytes()), &limits);
        s.set_attribute(b"bad", Value::Str(b"a\xffb"), &Limits::default());
        let mut out = Vec::new();
        s.encode_into(&mut out);
        let attrs = attributes(&out);
        // "aé" is 3 bytes; the euro sign would make 6.
        assert_eq!(&attrs[0].1[2..], "aé".as_bytes());
        assert_eq!(&attrs[1].1[2..], "a\u{fffd}b".as_bytes());
    }
}
