//! Property tests: merging is commutative and associative and gives exactly the sketch of
//! the union; merged quantiles are within the relative accuracy of the union's exact
//! quantiles; sketches whose range exceeds the bin limit collapse the same way whatever
//! the merge order; the protobuf encoding round-trips.

use ferrophp_metrics::proto::{decode_sketch, encode_sketch};
use ferrophp_metrics::{DDSketch, Mapping};
use proptest::prelude::*;

fn sketch_of(values: &[f64]) -> DDSketch {
    let mut s = DDSketch::new(Mapping::new(0.01).unwrap());
    for v in values {
        s.add(*v);
    }
    s
}

fn merged(a: &DDSketch, b: &DDSketch) -> DDSketch {
    let mut m = a.clone();
    assert!(m.merge(b));
    m
}

/// Values as applications record them: latencies, sizes, signed deltas, zeros.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1e-6f64..1e6,
        1 => -1e4f64..-1e-4,
        1 => Just(0.0),
        1 => (0u32..1000).prop_map(|i| i as f64),
    ]
}

fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(value(), 0..300)
}

/// Values spanning 600 decades: their sketches collapse their lowest keys.
fn wide_values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        (-300i32..300, 1.0f64..10.0, any::<bool>()).prop_map(|(e, m, neg)| {
            if neg {
                -m * 10f64.powi(e)
            } else {
                m * 10f64.powi(e)
            }
        }),
        0..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merge_is_commutative(a in values(), b in values()) {
        let (sa, sb) = (sketch_of(&a), sketch_of(&b));
        let (ab, ba) = (merged(&sa, &sb), merged(&sb, &sa));
        prop_assert_eq!(ab.bins(), ba.bins());
        prop_assert_eq!(ab.count(), ba.count());
        prop_assert_eq!(ab.min(), ba.min());
        prop_assert_eq!(ab.max(), ba.max());
    }

    #[test]
    fn merge_is_associative(a in values(), b in values(), c in values()) {
        let (sa, sb, sc) = (sketch_of(&a), sketch_of(&b), sketch_of(&c));
        let left = merged(&merged(&sa, &sb), &sc);
        let right = merged(&sa, &merged(&sb, &sc));
        prop_assert_eq!(left.bins(), right.bins());
        prop_assert_eq!(left.count(), right.count());
    }

    #[test]
    fn merge_equals_sketch_of_union(a in values(), b in values()) {
        let m = merged(&sketch_of(&a), &sketch_of(&b));
        let union: Vec<f64> = a.iter().chain(&b).copied().collect();
        let u = sketch_of(&union);
        prop_assert_eq!(m.bins(), u.bins());
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 1.0] {
            prop_assert_eq!(m.quantile(q), u.quantile(q));
        }
    }

    #[test]
    fn merged_quantiles_within_accuracy(a in values(), b in values()) {
        let m = merged(&sketch_of(&a), &sketch_of(&b));
        let mut union: Vec<f64> = a.iter().chain(&b).copied().collect();
        union.sort_by(|x, y| x.partial_cmp(y).unwrap());
        if union.is_empty() {
            prop_assert_eq!(m.quantile(0.5), None);
            return Ok(());
        }
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
            let exact = union[(q * (union.len() - 1) as f64).floor() as usize];
            let got = m.quantile(q).unwrap();
            prop_assert!((got - exact).abs() <= 0.01 * exact.abs() * (1.0 + 1e-9),
                "q={} got {} exact {}", q, got, exact);
        }
    }

    #[test]
    fn collapsed_merges_are_exact_and_order_independent(
        a in wide_values(), b in wide_values(), c in wide_values()
    ) {
        let (sa, sb, sc) = (sketch_of(&a), sketch_of(&b), sketch_of(&c));
        let left = merged(&merged(&sa, &sb), &sc);
        let right = merged(&sc, &merged(&sb, &sa));
        prop_assert_eq!(left.bins(), right.bins());
        let union: Vec<f64> = a.iter().chain(&b).chain(&c).copied().collect();
        prop_assert_eq!(left.bins(), sketch_of(&union).bins());
        let (pos, neg, _) = left.bins();
        for bins in [pos, neg] {
            if let (Some(f), Some(l)) = (bins.first(), bins.last()) {
                prop_assert!((l.0 - f.0 + 1) as usize <= ferrophp_metrics::sketch::MAX_BINS);
            }
        }
    }

    #[test]
    fn encoding_round_trips(a in values()) {
        let s = sketch_of(&a);
        let d = decode_sketch(&encode_sketch(&s)).unwrap();
        prop_assert_eq!(d.bins(), s.bins());
        prop_assert_eq!(d.count(), s.count());
    }
}
