//! When to renew and when to try again: ACME Renewal Information (RFC 9773) when the CA
//! offers it, else once a third of the certificate's lifetime is left; after a failure,
//! exponential backoff with jitter. Pure functions of times, so they are tested without a
//! CA or a clock.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::certs::{from_unix_secs, unix_secs, Leaf};

/// Why a certificate is ordered (the `reason` label of the renewals counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Nothing usable stored for the name.
    Initial,
    /// A third of the lifetime left (no ARI).
    Expiring,
    /// Inside the CA's suggested renewal window.
    Ari,
}

impl Why {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Why::Initial => "initial",
            Why::Expiring => "expiring",
            Why::Ari => "ari",
        }
    }
}

/// The CA's suggested renewal window for one certificate, as stored in its metadata.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct AriWindow {
    /// Unix seconds.
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The point picked in the window (uniformly, once per window, RFC 9773 §4.2).
    pub(crate) renew_at: i64,
    /// When to ask the CA again (its Retry-After, clamped).
    pub(crate) next_check: i64,
}

/// How often renewal information is fetched at most and at least (RFC 9773 §4.3.2 asks
/// for reasonable limits around the CA's Retry-After).
const ARI_CHECK_MIN: Duration = Duration::from_secs(60);
const ARI_CHECK_MAX: Duration = Duration::from_secs(24 * 3600);

impl AriWindow {
    /// A window from the CA's answer, picking the renewal point in it. A window whose end
    /// has passed renews at once.
    pub(crate) fn new(
        start: SystemTime,
        end: SystemTime,
        retry_after: Duration,
        now: SystemTime,
    ) -> AriWindow {
        let (start, end) = (unix_secs(start), unix_secs(end).max(unix_secs(start)));
        let renew_at = if end <= start {
            start
        } else {
            fastrand::i64(start..=end)
        };
        AriWindow {
            start,
            end,
            renew_at,
            next_check: unix_secs(now + retry_after.clamp(ARI_CHECK_MIN, ARI_CHECK_MAX)),
        }
    }

    /// The same window as before keeps its picked point (a fresh pick on every check
    /// would drift toward the window's start).
    pub(crate) fn keep_pick_of(mut self, previous: Option<&AriWindow>) -> AriWindow {
        if let Some(p) = previous.filter(|p| p.start == self.start && p.end == self.end) {
            self.renew_at = p.renew_at;
        }
        self
    }
}

/// When `leaf` is to be renewed, and why: the ARI point if the CA gave a window, never
/// later than a tenth of the lifetime before expiry (a window past expiry would be the
/// CA's mistake, not a reason to let the certificate lapse); else at a third left.
pub(crate) fn renewal_time(leaf: &Leaf, ari: Option<&AriWindow>) -> (SystemTime, Why) {
    let lifetime = leaf.lifetime();
    let expiring = leaf
        .not_after
        .checked_sub(lifetime / 3)
        .unwrap_or(leaf.not_before);
    match ari {
        Some(window) => {
            let latest = leaf
                .not_after
                .checked_sub(lifetime / 10)
                .unwrap_or(leaf.not_before);
            (from_unix_secs(window.renew_at).min(latest), Why::Ari)
        }
        None => (expiring, Why::Expiring),
    }
}

/// How long to wait after the `failures`-th failure in a row (1 for the first): `base`
/// doubled per failure up to `max`, times a random factor in [0.75, 1.25) so processes
/// that failed together do not retry together.
pub(crate) fn backoff(failures: u32, base: Duration, max: Duration) -> Duration {
    let doublings = failures.saturating_sub(1).min(30);
    let delay = base.saturating_mul(1u32 << doublings).min(max);
    delay.mul_f64(0.75 + fastrand::f64() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;
    use std::time::UNIX_EPOCH;

    fn leaf(not_before: u64, not_after: u64) -> Leaf {
        Leaf {
            names: vec!["a.example.com".into()],
            not_before: UNIX_EPOCH + Duration::from_secs(not_before),
            not_after: UNIX_EPOCH + Duration::from_secs(not_after),
            serial: "01".into(),
            der: CertificateDer::from(Vec::new()),
        }
    }

    #[test]
    fn without_ari_renewal_comes_with_a_third_of_the_lifetime_left() {
        // 90 days: renew 30 days before expiry.
        let day = 86_400;
        let (at, why) = renewal_time(&leaf(0, 90 * day), None);
        assert_eq!(at, UNIX_EPOCH + Duration::from_secs(60 * day));
        assert_eq!(why, Why::Expiring);
    }

    #[test]
    fn an_ari_window_decides_but_never_past_a_tenth_before_expiry() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let l = leaf(0, 10_000);
        let window = AriWindow::new(
            UNIX_EPOCH + Duration::from_secs(2_000),
            UNIX_EPOCH + Duration::from_secs(3_000),
            Duration::from_secs(3_600),
            now,
        );
        assert!((2_000..=3_000).contains(&window.renew_at));
        assert_eq!(window.next_check, 1_000 + 3_600);
        let (at, why) = renewal_time(&l, Some(&window));
        assert_eq!((unix_secs(at), why), (window.renew_at, Why::Ari));
        let late = AriWindow {
            start: 9_500,
            end: 9_900,
            renew_at: 9_800,
            next_check: 0,
        };
        assert_eq!(unix_secs(renewal_time(&l, Some(&late)).0), 9_000);
        // The next check is clamped to a minute at least.
        let soon = AriWindow::new(now, now, Duration::ZERO, now);
        assert_eq!(soon.next_check, 1_060);
    }

    #[test]
    fn the_same_window_keeps_its_pick() {
        let now = UNIX_EPOCH;
        let (s, e) = (
            UNIX_EPOCH + Duration::from_secs(100),
            UNIX_EPOCH + Duration::from_secs(1_000_000),
        );
        let first = AriWindow::new(s, e, Duration::from_secs(60), now);
        let again = (0..20)
            .map(|_| AriWindow::new(s, e, Duration::from_secs(60), now).keep_pick_of(Some(&first)))
            .collect::<Vec<_>>();
        assert!(again.iter().all(|w| w.renew_at == first.renew_at));
        let moved = AriWindow::new(s, e + Duration::from_secs(1), Duration::from_secs(60), now);
        // A moved window is a new one: its own pick stands.
        assert_eq!(moved.keep_pick_of(Some(&first)), moved);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter() {
        let (base, max) = (Duration::from_secs(120), Duration::from_secs(3_600));
        for (failures, nominal) in [(1, 120), (2, 240), (3, 480), (6, 3_600), (40, 3_600)] {
            let d = backoff(failures, base, max).as_secs_f64();
            let nominal = f64::from(nominal);
            assert!(d >= nominal * 0.75 && d < nominal * 1.25, "{failures}: {d}");
        }
    }
}
