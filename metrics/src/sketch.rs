//! DDSketch (Masson, Rim, Lee, VLDB 2019): a quantile sketch with relative-error
//! guarantees and exact, order-independent merges.
//!
//! The mapping and store follow the semantics of DataDog's reference implementations
//! (logarithmic mapping `key = ceil(log_gamma(v))`, unbounded dense stores for positive
//! and negative values, a zero count for `|v| <= min_indexable`), so that a sketch built
//! here from some values has exactly the bins the reference builds from the same values,
//! and the two can be merged and compared bin for bin. This is checked against fixtures
//! produced by the Python package (`test-data/metrics/`).
//!
//! Bin counts are `f64`, like the protobuf schema: the counts we add are whole numbers,
//! and sums of whole numbers below 2^53 are exact in `f64`, so merges stay exact.

/// Default relative accuracy (1%).
pub const DEFAULT_RELATIVE_ACCURACY: f64 = 0.01;

/// The logarithmic index mapping: value `v > 0` goes to key `ceil(log_gamma(v))`, and key
/// `k` stands for `gamma^k * 2 / (1 + gamma)`, which is within `alpha` of every value
/// mapped to `k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mapping {
    relative_accuracy: f64,
    gamma: f64,
    /// `1 / log2(gamma)`, computed the way the reference does (`ln 2 / log1p(gamma - 1)`)
    /// so the key of a value lands on the same side of every bin boundary.
    multiplier: f64,
    min_indexable: f64,
    max_indexable: f64,
}

impl Mapping {
    /// A mapping with relative accuracy `alpha` (0 < alpha < 1).
    pub fn new(alpha: f64) -> Option<Mapping> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return None;
        }
        let gamma_mantissa = 2.0 * alpha / (1.0 - alpha);
        let gamma = 1.0 + gamma_mantissa;
        let multiplier = (1.0 / gamma_mantissa.ln_1p()) * std::f64::consts::LN_2;
        Some(Mapping {
            relative_accuracy: alpha,
            gamma,
            multiplier,
            min_indexable: f64::MIN_POSITIVE * gamma,
            max_indexable: f64::MAX / gamma,
        })
    }

    /// The mapping a serialized `gamma` describes (as the reference decodes it:
    /// `alpha = (gamma - 1) / (gamma + 1)`).
    pub fn from_gamma(gamma: f64) -> Option<Mapping> {
        Mapping::new((gamma - 1.0) / (gamma + 1.0))
    }

    /// The relative accuracy `alpha` it guarantees.
    pub fn relative_accuracy(&self) -> f64 {
        self.relative_accuracy
    }

    /// The logarithm's base, `(1 + alpha) / (1 - alpha)` (what the protobuf carries).
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// Smallest positive value that gets its own bin; smaller magnitudes count as zero.
    pub fn min_indexable(&self) -> f64 {
        self.min_indexable
    }

    /// Whether two mappings put every value in the same bin (a decoded gamma can differ
    /// from ours in the last bits after the reference's alpha round trip).
    pub fn compatible(&self, other: &Mapping) -> bool {
        (self.gamma - other.gamma).abs() <= 1e-12 * self.gamma
    }

    /// The key of a value `v > min_indexable`.
    #[inline]
    pub fn key(&self, v: f64) -> i32 {
        // ln(v)/ln(2) rather than log2(v): the reference computes `math.log(v, 2)`, and
        // the two differ in the last bit for some inputs, which moves boundary values.
        let lg = v.ln() / std::f64::consts::LN_2 * self.multiplier;
        lg.ceil() as i32
    }

    /// The representative value of a key.
    #[inline]
    pub fn value(&self, key: i32) -> f64 {
        (key as f64 / self.multiplier).exp2() * (2.0 / (1.0 + self.gamma))
    }
}

/// Dense bins: `bins[i]` counts key `offset + i`. Bins cover every key seen, like the
/// reference's unbounded `DenseStore`, up to a limit on the span of keys ([`MAX_BINS`] for
/// the stores a [`DDSketch`] makes): beyond it the keys at the far end from the values that
/// matter most are collapsed into one bin (the reference's collapsing stores), so a
/// pathological series cannot take unbounded memory. At 1% accuracy 4,096 bins span a
/// factor of 10^35 between smallest and largest value: real data never collapses, and
/// bins match the reference exactly. Collapsing keeps merges exact and order-independent:
/// the collapse point only moves one way and depends only on the extreme key seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DenseStore {
    bins: Vec<f64>,
    offset: i32,
    count: f64,
    /// Most distinct keys held; 0 = unbounded.
    limit: usize,
    /// Collapse the highest keys (the negative store: the most negative values) instead
    /// of the lowest.
    collapse_high: bool,
    /// Keys beyond this (below for lowest-collapsing, above for highest) are counted in it.
    bound: Option<i32>,
}

/// Key span limit of the stores of a [`DDSketch`] (32 KiB of bins per store at most).
pub const MAX_BINS: usize = 4096;

/// Grow by at least this many bins, so a slowly widening range does not reallocate on
/// every new key.
const GROW_CHUNK: usize = 64;

impl DenseStore {
    /// A store holding at most `limit` keys, collapsing its lowest (or, with
    /// `collapse_high`, its highest) keys beyond that.
    pub fn bounded(limit: usize, collapse_high: bool) -> DenseStore {
        DenseStore {
            limit,
            collapse_high,
            ..DenseStore::default()
        }
    }

    #[inline]
    fn clamp(&self, key: i32) -> i32 {
        match self.bound {
            Some(b) if (key < b) != self.collapse_high && key != b => b,
            _ => key,
        }
    }

    #[inline]
    fn slot(&self, key: i32) -> Option<usize> {
        let rel = key as i64 - self.offset as i64;
        (rel >= 0 && (rel as usize) < self.bins.len()).then_some(rel as usize)
    }

    /// Adds `weight` to bin `key` (or to the collapsed bin when `key` is beyond the bound).
    #[inline]
    pub fn add(&mut self, key: i32, weight: f64) {
        let mut key = self.clamp(key);
        let i = match self.slot(key) {
            Some(i) => i,
            None => {
                self.make_room(key, key);
                key = self.clamp(key);
                self.slot(key).expect("make_room covers the key")
            }
        };
        self.bins[i] += weight;
        self.count += weight;
    }

    /// Grows (or collapses) so that keys `klo..=khi`, clamped, have slots.
    #[cold]
    fn make_room(&mut self, klo: i32, khi: i32) {
        if self.limit > 0 {
            let (lo, hi) = match self.key_range() {
                Some((l, h)) => (l.min(klo), h.max(khi)),
                None => (klo, khi),
            };
            if hi as i64 - lo as i64 + 1 > self.limit as i64 {
                let lim = self.limit as i32;
                if self.collapse_high {
                    let ceil = lo + lim - 1;
                    self.bound = Some(self.bound.map_or(ceil, |b| b.min(ceil)));
                    self.rebuild(lo, ceil);
                } else {
                    let floor = hi - lim + 1;
                    self.bound = Some(self.bound.map_or(floor, |b| b.max(floor)));
                    self.rebuild(floor, hi);
                }
                return;
            }
            // Never lay out more than `limit` slots: then any key outside the slots is
            // a key that may widen the span, and comes here to be checked.
            let slack = ((self.limit as i64 - (hi as i64 - lo as i64 + 1)) / 2)
                .min(GROW_CHUNK as i64) as i32;
            self.rebuild(lo - slack, hi + slack);
            return;
        }
        if self.bins.is_empty() {
            self.bins
                .resize(GROW_CHUNK.max((khi as i64 - klo as i64 + 1) as usize), 0.0);
            // Centre the first keys so growth in either direction is cheap at first.
            self.offset = klo.saturating_sub((GROW_CHUNK / 2) as i32);
            self.bins.resize(self.bins.len() + GROW_CHUNK / 2, 0.0);
            return;
        }
        if self.slot(klo).is_none() {
            self.grow_unbounded(klo);
        }
        if self.slot(khi).is_none() {
            self.grow_unbounded(khi);
        }
    }

    fn grow_unbounded(&mut self, key: i32) {
        let len = self.bins.len() as i64;
        let off = self.offset as i64;
        let k = key as i64;
        if k < off {
            let extra = ((off - k) as usize).max(GROW_CHUNK);
            let mut bins = vec![0.0; extra + self.bins.len()];
            bins[extra..].copy_from_slice(&self.bins);
            self.bins = bins;
            self.offset = (off - extra as i64) as i32;
        } else {
            let need = (k - off + 1) as usize;
            let new_len = need.max(len as usize + GROW_CHUNK);
            self.bins.resize(new_len, 0.0);
        }
    }

    /// Re-lays the bins over exactly `lo..=hi`, every old key clamped to the bound.
    fn rebuild(&mut self, lo: i32, hi: i32) {
        let old = std::mem::take(&mut self.bins);
        let old_offset = self.offset;
        self.bins = vec![0.0; (hi as i64 - lo as i64 + 1) as usize];
        self.offset = lo;
        for (i, c) in old.into_iter().enumerate() {
            if c != 0.0 {
                let k = self.clamp(old_offset + i as i32);
                let slot = self.slot(k).expect("rebuilt range covers clamped keys");
                self.bins[slot] += c;
            }
        }
    }

    /// The total weight of every bin.
    pub fn count(&self) -> f64 {
        self.count
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0.0
    }

    /// Non-zero bins in key order.
    pub fn iter(&self) -> impl Iterator<Item = (i32, f64)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0.0)
            .map(|(i, c)| (self.offset + i as i32, *c))
    }

    /// The smallest and largest keys with a non-zero count.
    pub fn key_range(&self) -> Option<(i32, i32)> {
        let first = self.bins.iter().position(|c| *c != 0.0)?;
        let last = self.bins.iter().rposition(|c| *c != 0.0)?;
        Some((self.offset + first as i32, self.offset + last as i32))
    }

    /// The counts from the first to the last non-zero key (what the contiguous protobuf
    /// encoding carries).
    pub fn contiguous(&self) -> Option<(i32, &[f64])> {
        let first = self.bins.iter().position(|c| *c != 0.0)?;
        let last = self.bins.iter().rposition(|c| *c != 0.0)?;
        Some((self.offset + first as i32, &self.bins[first..=last]))
    }

    /// Adds every bin of `other` (one pass over its bins).
    pub fn merge(&mut self, other: &DenseStore) {
        let Some((lo, hi)) = other.key_range() else {
            return;
        };
        // Size once for the whole range instead of growing per key.
        if self.slot(self.clamp(lo)).is_none() || self.slot(self.clamp(hi)).is_none() {
            self.make_room(lo, hi);
        }
        if self.bound.is_none() && other.bound.is_none() {
            // Nothing collapsed: one vectorisable pass over the overlapping slice.
            let base = (lo - self.offset) as usize;
            let src = &other.bins[(lo - other.offset) as usize..=(hi - other.offset) as usize];
            for (d, s) in self.bins[base..base + src.len()].iter_mut().zip(src) {
                *d += *s;
            }
            self.count += other.count;
        } else {
            for (k, c) in other.iter() {
                self.add(k, c);
            }
        }
    }

    /// Subtracts `other`'s bins (the caller guarantees `other` is an earlier state of this
    /// store, so no bin goes negative): the delta between two cumulative snapshots.
    pub fn subtract(&mut self, other: &DenseStore) {
        for (k, c) in other.iter() {
            self.add(k, -c);
        }
    }

    /// The key holding the value of rank `rank` (0-based, fractional allowed), with the
    /// reference's two conventions: `lower` (first key whose running count exceeds rank)
    /// and upper (first key whose running count reaches rank + 1).
    pub fn key_at_rank(&self, rank: f64, lower: bool) -> Option<i32> {
        let mut running = 0.0;
        for (i, c) in self.bins.iter().enumerate() {
            running += *c;
            if (lower && running > rank) || (!lower && running >= rank + 1.0) {
                return Some(self.offset + i as i32);
            }
        }
        // Rank beyond the count (rounding): the last non-empty key.
        self.key_range().map(|(_, hi)| hi)
    }
}

/// Non-zero (key, count) bins of the positive and negative stores, and the zero count.
pub type Bins = (Vec<(i32, f64)>, Vec<(i32, f64)>, f64);

/// A DDSketch with exact count, sum, min and max alongside the bins.
#[derive(Debug, Clone, PartialEq)]
pub struct DDSketch {
    mapping: Mapping,
    positive: DenseStore,
    negative: DenseStore,
    zero_count: f64,
    count: f64,
    sum: f64,
    min: f64,
    max: f64,
}

impl DDSketch {
    /// An empty sketch with `mapping`'s accuracy.
    pub fn new(mapping: Mapping) -> DDSketch {
        DDSketch {
            mapping,
            positive: DenseStore::bounded(MAX_BINS, false),
            negative: DenseStore::bounded(MAX_BINS, true),
            zero_count: 0.0,
            count: 0.0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// A sketch from its parts (a decoded protobuf); count is derived, sum/min/max are
    /// unknown to the schema and estimated from the bins.
    pub fn from_parts(
        mapping: Mapping,
        positive: DenseStore,
        negative: DenseStore,
        zero_count: f64,
    ) -> DDSketch {
        let mut s = DDSketch::new(mapping);
        s.count = positive.count() + negative.count() + zero_count;
        s.zero_count = zero_count;
        let est = |store: &DenseStore, sign: f64| -> f64 {
            store.iter().map(|(k, c)| sign * c * mapping.value(k)).sum()
        };
        s.sum = est(&positive, 1.0) + est(&negative, -1.0);
        s.positive = positive;
        s.negative = negative;
        s.min = s.quantile(0.0).unwrap_or(f64::INFINITY);
        s.max = s.quantile(1.0).unwrap_or(f64::NEG_INFINITY);
        s
    }

    /// The mapping of its bins.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// Records `v` once. `v` must be finite (callers validate: NaN would poison sum).
    #[inline]
    pub fn add(&mut self, v: f64) {
        self.add_weighted(v, 1.0);
    }

    /// Records `v` with `weight` (`v` finite, as for [`DDSketch::add`]).
    #[inline]
    pub fn add_weighted(&mut self, v: f64, weight: f64) {
        let m = &self.mapping;
        if v > m.min_indexable {
            self.positive.add(m.key(v), weight);
        } else if v < -m.min_indexable {
            self.negative.add(m.key(-v), weight);
        } else {
            self.zero_count += weight;
        }
        self.count += weight;
        self.sum += v * weight;
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
    }

    /// The total weight recorded.
    pub fn count(&self) -> f64 {
        self.count
    }

    /// The sum of the values recorded (each times its weight).
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The smallest value recorded; None when empty.
    pub fn min(&self) -> Option<f64> {
        (self.count > 0.0).then_some(self.min)
    }

    /// The largest value recorded; None when empty.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0.0).then_some(self.max)
    }

    /// The weight of the values too close to zero for a bin of their own.
    pub fn zero_count(&self) -> f64 {
        self.zero_count
    }

    /// The bins of the positive values.
    pub fn positive(&self) -> &DenseStore {
        &self.positive
    }

    /// The bins of the negative values (keyed by magnitude).
    pub fn negative(&self) -> &DenseStore {
        &self.negative
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0.0
    }

    /// The value at quantile `q` (0..=1), within the relative accuracy of the exact
    /// (lower) quantile of the recorded values; None when empty or `q` out of range.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !(0.0..=1.0).contains(&q) || self.count == 0.0 {
            return None;
        }
        let rank = q * (self.count - 1.0);
        let neg = self.negative.count();
        if rank < neg {
            let reversed = neg - rank - 1.0;
            let key = self.negative.key_at_rank(reversed, false)?;
            Some(-self.mapping.value(key))
        } else if rank < self.zero_count + neg {
            Some(0.0)
        } else {
            let key = self
                .positive
                .key_at_rank(rank - self.zero_count - neg, true)?;
            Some(self.mapping.value(key))
        }
    }

    /// Adds `other` into this sketch: afterwards it is the sketch of both value sets.
    /// False (and nothing changed) when the mappings differ.
    pub fn merge(&mut self, other: &DDSketch) -> bool {
        if !self.mapping.compatible(&other.mapping) {
            return false;
        }
        if other.count == 0.0 {
            return true;
        }
        self.positive.merge(&other.positive);
        self.negative.merge(&other.negative);
        self.zero_count += other.zero_count;
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        true
    }

    /// This sketch minus an earlier state of itself: the values recorded in between.
    /// Min and max cannot be subtracted; the delta keeps the current ones.
    pub fn delta_since(&self, earlier: &DDSketch) -> DDSketch {
        let mut d = self.clone();
        d.positive.subtract(&earlier.positive);
        d.negative.subtract(&earlier.negative);
        d.zero_count -= earlier.zero_count;
        d.count -= earlier.count;
        d.sum -= earlier.sum;
        d
    }

    /// Non-zero bins as (key, count): positive, negative, then the zero count.
    pub fn bins(&self) -> Bins {
        (
            self.positive.iter().collect(),
            self.negative.iter().collect(),
            self.zero_count,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch() -> DDSketch {
        DDSketch::new(Mapping::new(0.01).unwrap())
    }

    #[test]
    fn quantiles_within_accuracy() {
        let mut s = sketch();
        let values: Vec<f64> = (1..=10_000).map(|i| i as f64 * 0.37).collect();
        for v in &values {
            s.add(*v);
        }
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
            let exact = values[(q * (values.len() - 1) as f64).floor() as usize];
            let got = s.quantile(q).unwrap();
            assert!(
                (got - exact).abs() <= 0.01 * exact,
                "q={q} {got} vs {exact}"
            );
        }
        assert_eq!(s.count(), 10_000.0);
        assert_eq!(s.min(), Some(0.37));
    }

    #[test]
    fn negative_and_zero() {
        let mut s = sketch();
        for v in [-5.0, -1.0, 0.0, 0.0, 2.0] {
            s.add(v);
        }
        assert!((s.quantile(0.0).unwrap() + 5.0).abs() <= 0.05);
        assert_eq!(s.quantile(0.5), Some(0.0));
        assert!((s.quantile(1.0).unwrap() - 2.0).abs() <= 0.02);
        assert_eq!(s.zero_count(), 2.0);
    }

    #[test]
    fn empty_and_out_of_range() {
        let s = sketch();
        assert_eq!(s.quantile(0.5), None);
        let mut s = sketch();
        s.add(1.0);
        assert_eq!(s.quantile(1.5), None);
        assert_eq!(s.quantile(-0.1), None);
    }

    #[test]
    fn bins_are_bounded_and_collapse_the_far_end() {
        let mut s = sketch();
        // 1e-300 .. 1e300 would need ~69,000 bins.
        for e in -300..=300 {
            s.add(10f64.powi(e));
            s.add(-(10f64.powi(e)));
        }
        let (lo, hi) = s.positive().key_range().unwrap();
        assert!((hi - lo + 1) as usize <= MAX_BINS);
        assert_eq!(s.count(), 2.0 * 601.0);
        // The highest values keep their accuracy (the lowest, here the most negative and
        // the tiniest positive, collapsed): the maximum, and -1e-300 (rank 600 of 1,202).
        let top = s.quantile(1.0).unwrap();
        assert!((top - 1e300).abs() <= 0.01 * 1e300);
        let near_zero = s.quantile(600.0 / 1201.0).unwrap();
        assert!((near_zero + 1e-300).abs() <= 0.01 * 1e-300, "{near_zero}");
        // Merging collapsed sketches in either order gives the same bins.
        let mut a = sketch();
        let mut b = sketch();
        for e in -300..0 {
            a.add(10f64.powi(e));
        }
        for e in 0..=300 {
            b.add(10f64.powi(e));
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab.bins(), ba.bins());
        let mut all = sketch();
        for e in -300..=300 {
            all.add(10f64.powi(e));
        }
        assert_eq!(ab.bins(), all.bins());
    }

    #[test]
    fn delta_is_the_values_in_between() {
        let mut s = sketch();
        for i in 1..100 {
            s.add(i as f64);
        }
        let before = s.clone();
        let mut fresh = sketch();
        for i in 500..600 {
            s.add(i as f64);
            fresh.add(i as f64);
        }
        let d = s.delta_since(&before);
        assert_eq!(d.bins(), fresh.bins());
        assert_eq!(d.count(), 100.0);
    }
}
