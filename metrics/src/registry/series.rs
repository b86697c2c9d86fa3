//! What names a series and what a name or tag may be: the tags of one call ([`TagBuf`]),
//! the canonical key they make, the naming rules and the errors they report, and a
//! series' name and sorted tags ([`SeriesMeta`]).

use crate::proto::Kind;

/// What a caller asked for that cannot be recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The metric name breaks Prometheus' name rules (or is too long).
    InvalidName(String),
    /// A tag key breaks the label-name rules (or is reserved, or too long).
    InvalidTagKey(String),
    /// The same tag key given twice in one call.
    DuplicateTag(String),
    /// The value of this tag key is too long.
    TagValueTooLong(String),
    /// A NaN or infinite value.
    NotFinite(f64),
    /// A counter increment below zero.
    NegativeIncrement(f64),
    /// The name is already a series of another kind.
    KindMismatch {
        /// The metric name.
        name: String,
        /// The kind the name was first used as.
        existing: Kind,
        /// The kind this call asked for.
        wanted: Kind,
    },
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Distribution => "a distribution (observe)",
        Kind::Counter => "a counter (increment)",
        Kind::Gauge => "a gauge (gauge)",
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidName(n) => write!(
                f,
                "invalid metric name {n:?}: use [a-zA-Z_:][a-zA-Z0-9_:]*, at most {MAX_NAME} bytes"
            ),
            Error::InvalidTagKey(k) => write!(
                f,
                "invalid tag key {k:?}: tags are string => scalar with keys [a-zA-Z_][a-zA-Z0-9_]* \
                 (not starting with __, not \"quantile\"), at most {MAX_NAME} bytes"
            ),
            Error::DuplicateTag(k) => write!(f, "tag {k:?} given twice"),
            Error::TagValueTooLong(k) => {
                write!(
                    f,
                    "the value of tag {k:?} is longer than {MAX_TAG_VALUE} bytes"
                )
            }
            Error::NotFinite(v) => write!(f, "metric values must be finite numbers, got {v}"),
            Error::NegativeIncrement(v) => {
                write!(f, "counters only go up: increment by {v} is negative")
            }
            Error::KindMismatch {
                name,
                existing,
                wanted,
            } => write!(
                f,
                "metric {name:?} is {}, it cannot be used as {}",
                kind_name(*existing),
                kind_name(*wanted)
            ),
        }
    }
}

impl std::error::Error for Error {}

const MAX_NAME: usize = 200;
pub(super) const MAX_TAG_VALUE: usize = 1024;

/// Prometheus metric-name rules.
pub fn valid_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME
        && !n[0].is_ascii_digit()
        && n.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

/// Prometheus label-name rules, minus the reserved `__` prefix and `quantile` (the
/// label summaries use for their quantiles).
pub fn valid_tag_key(k: &[u8]) -> bool {
    !k.is_empty()
        && k.len() <= MAX_NAME
        && !k[0].is_ascii_digit()
        && !k.starts_with(b"__")
        && k != b"quantile"
        && k.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The tags of one call, built into a reusable buffer (no allocation per call once warm).
#[derive(Default, Debug)]
pub struct TagBuf {
    bytes: Vec<u8>,
    /// (key start, key end, value start, value end) into `bytes`.
    spans: Vec<[u32; 4]>,
}

impl TagBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every tag, keeping the allocation for the next call.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Adds a tag (validated when a series is first registered, not here).
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        let ks = self.bytes.len() as u32;
        self.bytes.extend_from_slice(key);
        let vs = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.spans.push([ks, vs, vs, self.bytes.len() as u32]);
    }

    /// Adds a tag whose value `write` formats straight into the buffer.
    pub fn push_with(&mut self, key: &[u8], write: impl FnOnce(&mut Vec<u8>)) {
        let ks = self.bytes.len() as u32;
        self.bytes.extend_from_slice(key);
        let vs = self.bytes.len() as u32;
        write(&mut self.bytes);
        self.spans.push([ks, vs, vs, self.bytes.len() as u32]);
    }

    /// The number of tags.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// A copy (the buffer is not `Clone` so hot paths do not copy it by accident).
    pub fn clone_buf(&self) -> TagBuf {
        TagBuf {
            bytes: self.bytes.clone(),
            spans: self.spans.clone(),
        }
    }

    /// Whether there is no tag.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        &self.bytes[s[0] as usize..s[1] as usize]
    }

    pub(super) fn value(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        &self.bytes[s[2] as usize..s[3] as usize]
    }
}

/// Name and sorted tags of a series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesMeta {
    /// The metric name.
    pub name: String,
    /// (key, value), sorted by key.
    pub tags: Vec<(String, String)>,
    /// The series' kind (see [`SeriesMeta::kind`]).
    pub kind: KindOrd,
}

/// `Kind` with an order, so series sort by (name, tags, kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KindOrd(pub u8);

impl SeriesMeta {
    /// The series' kind as a [`Kind`].
    pub fn kind(&self) -> Kind {
        match self.kind.0 {
            0 => Kind::Distribution,
            1 => Kind::Counter,
            _ => Kind::Gauge,
        }
    }
}

/// `name`, then each tag sorted by key, every part length-prefixed so no two different
/// (name, tags) give the same bytes. `order` gets the tags' sorted positions.
pub(super) fn canonical_key(key: &mut Vec<u8>, order: &mut Vec<u32>, name: &[u8], tags: &TagBuf) {
    key.clear();
    order.clear();
    order.extend(0..tags.len() as u32);
    if order.len() > 1 {
        order.sort_unstable_by(|&a, &b| tags.key(a as usize).cmp(tags.key(b as usize)));
    }
    key.extend_from_slice(&(name.len() as u32).to_le_bytes());
    key.extend_from_slice(name);
    for &i in order.iter() {
        let k = tags.key(i as usize);
        let v = tags.value(i as usize);
        key.extend_from_slice(&(k.len() as u32).to_le_bytes());
        key.extend_from_slice(k);
        key.extend_from_slice(&(v.len() as u32).to_le_bytes());
        key.extend_from_slice(v);
    }
}
