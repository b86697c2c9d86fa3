//! Protobuf encoding, by hand, of the canonical `ddsketch.proto` schema (DataDog's
//! sketches-* repositories) and of our push envelope. Hand-written because the schema is
//! three small messages and a build-time `protoc` is not available everywhere we build.
//!
//! ```text
//! message DDSketch     { IndexMapping mapping = 1; Store positiveValues = 2;
//!                        Store negativeValues = 3; double zeroCount = 4; }
//! message IndexMapping { double gamma = 1; double indexOffset = 2;
//!                        Interpolation interpolation = 3; }   // NONE = 0
//! message Store        { map<sint32, double> binCounts = 1;
//!                        repeated double contiguousBinCounts = 2 [packed = true];
//!                        sint32 contiguousBinIndexOffset = 3; }
//! ```
//!
//! We write stores in the contiguous form (first to last non-zero key), which is the form
//! every reference decoder reads (the Python one reads only that form), and read both.
//!
//! The push envelope (`ferrophp.metrics.v1.Payload`, documented in docs/metrics.md):
//!
//! ```text
//! message Payload { repeated Series series = 1; uint64 timestamp_unix_ms = 2;
//!                   uint64 interval_ms = 3; uint64 dropped_series = 4;
//!                   uint64 dropped_payloads = 5; }
//! message Series  { string name = 1; repeated string tags = 2;   // "key:value"
//!                   Kind kind = 3;          // DISTRIBUTION = 0, COUNTER = 1, GAUGE = 2
//!                   DDSketch sketch = 4;    // distributions
//!                   double value = 5;       // counter increase / gauge value
//!                   double sum = 6; double count = 7; }           // distributions
//! ```

use crate::sketch::{DDSketch, DenseStore, Mapping, MAX_BINS};

// The reader and its error live in `wire` (shared with the trace exporter); their
// names stay importable from here.
use crate::wire::{put_double, put_nested, put_tag, put_varint, LEN, VARINT};
pub use crate::wire::{DecodeError, Field, Reader};

fn zigzag32(v: i32) -> u64 {
    ((v << 1) ^ (v >> 31)) as u32 as u64
}

fn unzigzag32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

fn put_store(out: &mut Vec<u8>, store: &DenseStore) {
    if let Some((offset, counts)) = store.contiguous() {
        put_tag(out, 2, LEN);
        put_varint(out, (counts.len() * 8) as u64);
        for c in counts {
            out.extend_from_slice(&c.to_le_bytes());
        }
        if offset != 0 {
            put_tag(out, 3, VARINT);
            put_varint(out, zigzag32(offset));
        }
    }
}

/// Appends the `DDSketch` message for `s` to `out`.
pub fn encode_sketch_into(out: &mut Vec<u8>, s: &DDSketch) {
    put_nested(out, 1, |o| {
        put_double(o, 1, s.mapping().gamma());
        // indexOffset 0 and interpolation NONE are the proto3 defaults: not written.
    });
    put_nested(out, 2, |o| put_store(o, s.positive()));
    put_nested(out, 3, |o| put_store(o, s.negative()));
    if s.zero_count() != 0.0 {
        put_double(out, 4, s.zero_count());
    }
}

/// The `DDSketch` message for `s`.
pub fn encode_sketch(s: &DDSketch) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        64 + 8 * s
            .positive()
            .key_range()
            .map_or(0, |r| 1 + (r.1 - r.0) as usize),
    );
    encode_sketch_into(&mut out, s);
    out
}

fn as_double(f: Field<'_>) -> Result<f64, DecodeError> {
    match f {
        Field::I64(b) => Ok(f64::from_bits(b)),
        _ => Err(DecodeError("expected a double")),
    }
}

fn decode_store(buf: &[u8], collapse_high: bool) -> Result<DenseStore, DecodeError> {
    let mut store = DenseStore::bounded(MAX_BINS, collapse_high);
    let mut contiguous: Vec<f64> = Vec::new();
    let mut offset = 0i32;
    let mut r = Reader::new(buf);
    while let Some((field, value)) = r.next_field()? {
        match (field, value) {
            (1, Field::Len(entry)) => {
                let (mut key, mut count) = (0i32, 0.0f64);
                let mut e = Reader::new(entry);
                while let Some((f, v)) = e.next_field()? {
                    match (f, v) {
                        (1, Field::Varint(k)) => key = unzigzag32(k),
                        (2, v) => count = as_double(v)?,
                        _ => {}
                    }
                }
                if count != 0.0 {
                    store.add(key, count);
                }
            }
            (2, Field::Len(packed)) => {
                if packed.len() % 8 != 0 {
                    return Err(DecodeError("packed doubles not a multiple of 8 bytes"));
                }
                contiguous.extend(
                    packed
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap())),
                );
            }
            // An unpacked repeated double (allowed by the wire format).
            (2, Field::I64(b)) => contiguous.push(f64::from_bits(b)),
            (3, Field::Varint(v)) => offset = unzigzag32(v),
            _ => {}
        }
    }
    for (i, c) in contiguous.into_iter().enumerate() {
        if c != 0.0 {
            store.add(offset + i as i32, c);
        }
    }
    Ok(store)
}

/// Decodes a `DDSketch` message. Only the logarithmic mapping (interpolation NONE) with
/// offset 0 is accepted: other mappings put values in other bins.
pub fn decode_sketch(buf: &[u8]) -> Result<DDSketch, DecodeError> {
    let mut gamma = None;
    let mut index_offset = 0.0;
    let mut interpolation = 0;
    let mut positive = DenseStore::bounded(MAX_BINS, false);
    let mut negative = DenseStore::bounded(MAX_BINS, true);
    let mut zero = 0.0;
    let mut r = Reader::new(buf);
    while let Some((field, value)) = r.next_field()? {
        match (field, value) {
            (1, Field::Len(m)) => {
                let mut mr = Reader::new(m);
                while let Some((f, v)) = mr.next_field()? {
                    match (f, v) {
                        (1, v) => gamma = Some(as_double(v)?),
                        (2, v) => index_offset = as_double(v)?,
                        (3, Field::Varint(i)) => interpolation = i,
                        _ => {}
                    }
                }
            }
            (2, Field::Len(s)) => positive = decode_store(s, false)?,
            (3, Field::Len(s)) => negative = decode_store(s, true)?,
            (4, v) => zero = as_double(v)?,
            _ => {}
        }
    }
    if interpolation != 0 || index_offset != 0.0 {
        return Err(DecodeError(
            "only the logarithmic mapping with offset 0 is supported",
        ));
    }
    let mapping = gamma
        .and_then(Mapping::from_gamma)
        .ok_or(DecodeError("missing or invalid gamma"))?;
    Ok(DDSketch::from_parts(mapping, positive, negative, zero))
}

/// The kind of a series in the push envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A DDSketch of observed values (`observe`).
    Distribution = 0,
    /// A sum that only goes up (`increment`).
    Counter = 1,
    /// The latest value set (`gauge`).
    Gauge = 2,
}

/// One series in a push payload.
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadSeries {
    /// The metric name.
    pub name: String,
    /// `key:value`, sorted by key.
    pub tags: Vec<String>,
    /// Which of `sketch` and `value` carries the data.
    pub kind: Kind,
    /// A distribution's observations over the interval (None for counters and gauges).
    pub sketch: Option<DDSketch>,
    /// Counter increase over the interval, or the gauge's value.
    pub value: f64,
    /// A distribution's sum of observations over the interval (0 otherwise).
    pub sum: f64,
    /// A distribution's number of observations over the interval (0 otherwise).
    pub count: f64,
}

/// One push payload: every series that changed in an interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Payload {
    /// The series that changed in the interval.
    pub series: Vec<PayloadSeries>,
    /// When the interval ended.
    pub timestamp_unix_ms: u64,
    /// The interval's length.
    pub interval_ms: u64,
    /// Records the series cap has dropped since the process started.
    pub dropped_series: u64,
    /// Payloads the full push queue has dropped since the process started.
    pub dropped_payloads: u64,
}

fn put_bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_u64(out: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        put_tag(out, field, VARINT);
        put_varint(out, v);
    }
}

impl Payload {
    /// The envelope's bytes: each sketch encoded once, straight into the output.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 * self.series.len() + 32);
        for s in &self.series {
            put_nested(&mut out, 1, |o| {
                put_bytes(o, 1, s.name.as_bytes());
                for t in &s.tags {
                    put_bytes(o, 2, t.as_bytes());
                }
                put_u64(o, 3, s.kind as u64);
                if let Some(sk) = &s.sketch {
                    put_nested(o, 4, |o| encode_sketch_into(o, sk));
                }
                put_double(o, 5, s.value);
                put_double(o, 6, s.sum);
                put_double(o, 7, s.count);
            });
        }
        put_u64(&mut out, 2, self.timestamp_unix_ms);
        put_u64(&mut out, 3, self.interval_ms);
        put_u64(&mut out, 4, self.dropped_series);
        put_u64(&mut out, 5, self.dropped_payloads);
        out
    }

    /// Reads an envelope [`Payload::encode`] wrote (collectors and tests).
    pub fn decode(buf: &[u8]) -> Result<Payload, DecodeError> {
        let mut p = Payload::default();
        let mut r = Reader::new(buf);
        while let Some((field, value)) = r.next_field()? {
            match (field, value) {
                (1, Field::Len(b)) => p.series.push(decode_series(b)?),
                (2, Field::Varint(v)) => p.timestamp_unix_ms = v,
                (3, Field::Varint(v)) => p.interval_ms = v,
                (4, Field::Varint(v)) => p.dropped_series = v,
                (5, Field::Varint(v)) => p.dropped_payloads = v,
                _ => {}
            }
        }
        Ok(p)
    }
}

fn utf8(b: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|_| DecodeError("string is not UTF-8"))
}

fn decode_series(buf: &[u8]) -> Result<PayloadSeries, DecodeError> {
    let mut s = PayloadSeries {
        name: String::new(),
        tags: Vec::new(),
        kind: Kind::Distribution,
        sketch: None,
        value: 0.0,
        sum: 0.0,
        count: 0.0,
    };
    let mut r = Reader::new(buf);
    while let Some((field, value)) = r.next_field()? {
        match (field, value) {
            (1, Field::Len(b)) => s.name = utf8(b)?,
            (2, Field::Len(b)) => s.tags.push(utf8(b)?),
            (3, Field::Varint(k)) => {
                s.kind = match k {
                    0 => Kind::Distribution,
                    1 => Kind::Counter,
                    2 => Kind::Gauge,
                    _ => return Err(DecodeError("unknown series kind")),
                }
            }
            (4, Field::Len(b)) => s.sketch = Some(decode_sketch(b)?),
            (5, v) => s.value = as_double(v)?,
            (6, v) => s.sum = as_double(v)?,
            (7, v) => s.count = as_double(v)?,
            _ => {}
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trip() {
        for v in [0, 1, -1, 63, -64, i32::MAX, i32::MIN, -1234] {
            assert_eq!(unzigzag32(zigzag32(v)), v);
        }
    }

    #[test]
    fn sketch_round_trip() {
        let mut s = DDSketch::new(Mapping::new(0.01).unwrap());
        for v in [-3.5, -0.001, 0.0, 1e-9, 1.0, 2.0, 2.0, 1e6, 1e9] {
            s.add(v);
        }
        let d = decode_sketch(&encode_sketch(&s)).unwrap();
        assert_eq!(d.bins(), s.bins());
        assert_eq!(d.count(), s.count());
    }

    #[test]
    fn long_nested_lengths() {
        // A store of more than 16 bins has a body longer than 127 bytes: two-byte length.
        let mut s = DDSketch::new(Mapping::new(0.01).unwrap());
        for i in 1..2000 {
            s.add(i as f64);
        }
        let p = Payload {
            series: vec![PayloadSeries {
                name: "x".into(),
                tags: vec!["a:b".into()],
                kind: Kind::Distribution,
                sketch: Some(s.clone()),
                value: 0.0,
                sum: s.sum(),
                count: s.count(),
            }],
            timestamp_unix_ms: 5,
            interval_ms: 10,
            dropped_series: 0,
            dropped_payloads: 2,
        };
        let back = Payload::decode(&p.encode()).unwrap();
        assert_eq!(back.series[0].sketch.as_ref().unwrap().bins(), s.bins());
        assert_eq!(back.dropped_payloads, 2);
        assert_eq!(back.series[0].tags, vec!["a:b".to_string()]);
    }
}
