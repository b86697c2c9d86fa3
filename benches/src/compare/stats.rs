//! Statistics over the samples and rounds of the harness (the median), shared by the
//! measurements (`memory`) and the tables that summarise them (`tables`).

/// The median; of an even count, the mean of the middle two (with 2 rounds, their mean
/// rather than the better one).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
