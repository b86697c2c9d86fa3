//! What automatic HTTPS reports, as plain data for the server's metrics: each name's
//! certificate (expiry, next renewal, last error), orders placed, and renewals and
//! failures counted by name and reason. Events are rare (a few per name and day), so one
//! mutex is all the synchronisation needed.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Gauge: seconds until each name's certificate expires (negative once expired).
pub const EXPIRY_METRIC: &str = "ferrophp_certificate_expiry_seconds";
/// Counter: certificates obtained, by `name` and `reason` (`initial`, `expiring`, `ari`).
pub const RENEWALS_METRIC: &str = "ferrophp_certificate_renewals_total";
/// Counter: orders placed with the CA by this process (failed ones too).
pub const ORDERS_METRIC: &str = "ferrophp_certificate_orders_total";
/// Counter: failed attempts, by `name` and `reason` (`ca_unreachable`, `timeout`,
/// `challenge_failed`, `storage`, an ACME error type such as `rateLimited`, ...).
pub const FAILURES_METRIC: &str = "ferrophp_certificate_renewal_failures_total";

/// One name's certificate as served now.
#[derive(Debug, Clone, PartialEq)]
pub struct CertificateStatus {
    /// The DNS name (SNI) it serves.
    pub name: String,
    /// Obtained through ACME (false: a `--tls-cert` file).
    pub managed: bool,
    /// `None` while a managed name has no certificate yet.
    pub not_after: Option<SystemTime>,
    /// Hex serial of the certificate served.
    pub serial: Option<String>,
    /// When renewal is next attempted (managed names only).
    pub next_renewal: Option<SystemTime>,
    /// The last failure since the last success.
    pub last_error: Option<String>,
}

impl CertificateStatus {
    /// The value of [`EXPIRY_METRIC`] at `now`.
    pub fn expiry_seconds(&self, now: SystemTime) -> Option<f64> {
        let not_after = self.not_after?;
        Some(match not_after.duration_since(now) {
            Ok(left) => left.as_secs_f64(),
            Err(past) => -past.duration().as_secs_f64(),
        })
    }
}

/// Everything at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AcmeSnapshot {
    /// By name.
    pub certificates: Vec<CertificateStatus>,
    /// Orders placed with the CA by this process.
    pub orders: u64,
    /// [`RENEWALS_METRIC`]: ((name, reason), count).
    pub renewals: Vec<((String, String), u64)>,
    /// [`FAILURES_METRIC`]: ((name, reason), count).
    pub failures: Vec<((String, String), u64)>,
}

impl AcmeSnapshot {
    /// The status of `name`, if it is served.
    pub fn certificate(&self, name: &str) -> Option<&CertificateStatus> {
        self.certificates.iter().find(|c| c.name == name)
    }

    /// Failures of `name` counted so far, all reasons.
    pub fn failures_of(&self, name: &str) -> u64 {
        self.failures
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|(_, count)| count)
            .sum()
    }

    /// Renewals of `name` counted so far, all reasons.
    pub fn renewals_of(&self, name: &str) -> u64 {
        self.renewals
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|(_, count)| count)
            .sum()
    }
}

/// The live counters behind [`AcmeSnapshot`].
#[derive(Debug, Default)]
pub(crate) struct Stats {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    certificates: BTreeMap<String, CertificateStatus>,
    orders: u64,
    renewals: BTreeMap<(String, String), u64>,
    failures: BTreeMap<(String, String), u64>,
}

impl Stats {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records what `name` serves now (replacing what was known).
    pub(crate) fn set_certificate(&self, status: CertificateStatus) {
        self.with(|s| s.certificates.insert(status.name.clone(), status));
    }

    pub(crate) fn set_next_renewal(&self, name: &str, at: SystemTime) {
        self.with(|s| {
            if let Some(c) = s.certificates.get_mut(name) {
                c.next_renewal = Some(at);
            }
        });
    }

    pub(crate) fn order_placed(&self) {
        self.with(|s| s.orders += 1);
    }

    pub(crate) fn renewed(&self, name: &str, reason: &str) {
        self.with(|s| {
            *s.renewals.entry((name.into(), reason.into())).or_default() += 1;
            if let Some(c) = s.certificates.get_mut(name) {
                c.last_error = None;
            }
        });
    }

    pub(crate) fn failed(&self, name: &str, reason: &str, error: &str) {
        self.with(|s| {
            *s.failures.entry((name.into(), reason.into())).or_default() += 1;
            if let Some(c) = s.certificates.get_mut(name) {
                c.last_error = Some(error.into());
            }
        });
    }

    pub(crate) fn snapshot(&self) -> AcmeSnapshot {
        self.with(|s| AcmeSnapshot {
            certificates: s.certificates.values().cloned().collect(),
            orders: s.orders,
            renewals: s.renewals.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            failures: s.failures.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        })
    }
}
