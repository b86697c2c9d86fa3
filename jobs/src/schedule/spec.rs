//! What a `[[schedule]]` entry is ([`ScheduleEntry`]) and when it fires ([`Trigger`]).
//!
//! Cron expressions are the five Vixie fields (plus `@hourly`-style nicknames), parsed and
//! evaluated by `croner`, which follows Vixie cron where it matters: a day matches when
//! day-of-month OR day-of-week matches if both are restricted, and across DST changes a
//! job at a fixed time (minute and hour fields without `*`) runs once on the day the clock
//! skips it (at the first instant after the gap) and once on the day the clock repeats it,
//! while a wildcard job runs by the real clock. One rule is ours, to agree with croniter
//! where croner differs: a day field that lists every day (`*/1`, `0-6`) counts as `*`
//! when the other day field is written with a `*` (so `0 0 */4 * 0-6` means every fourth
//! day, as croniter and Vixie cron read it; croner would OR it into every day).
//! `jobs/tests/cron.rs` checks next fire times against Python's `croniter` and DST days
//! against Vixie's rules. Intervals (`every = "30s"`) fire on multiples of the interval
//! since the Unix epoch, so every instance computes the same fire times.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;

use crate::error::{JobsError, Result};

/// When an entry fires.
#[derive(Clone)]
pub enum Trigger {
    /// A cron expression evaluated in a time zone.
    Cron {
        /// The parsed expression.
        cron: Box<croner::Cron>,
        /// Its text.
        expression: String,
        /// The zone its fields are read in.
        zone: Tz,
    },
    /// Every so often, aligned on the Unix epoch.
    Every(Duration),
}

impl fmt::Debug for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cron {
                expression, zone, ..
            } => write!(f, "cron {expression:?} in {zone}"),
            Self::Every(d) => write!(f, "every {}", humantime::format_duration(*d)),
        }
    }
}

impl Trigger {
    /// A cron trigger; `zone` is an IANA name (`Europe/Paris`, `UTC`).
    pub fn cron(expression: &str, zone: &str) -> Result<Self> {
        let zone = Tz::from_str(zone)
            .map_err(|_| JobsError::InvalidArgument(format!("unknown time zone {zone:?}")))?;
        let fields = expression.split_whitespace().count();
        if !expression.trim_start().starts_with('@') && fields != 5 {
            return Err(JobsError::InvalidArgument(format!(
                "cron expression {expression:?} must have 5 fields (minute hour day month weekday), has {fields}"
            )));
        }
        let cron = croner::Cron::from_str(&normalize_day_fields(expression)).map_err(|e| {
            JobsError::InvalidArgument(format!("cron expression {expression:?}: {e}"))
        })?;
        Ok(Self::Cron {
            cron: Box::new(cron),
            expression: expression.to_owned(),
            zone,
        })
    }

    /// An interval trigger from text like `30s`, `5m`, `1h 30m` (at least one second).
    pub fn every(text: &str) -> Result<Self> {
        let period = humantime::parse_duration(text)
            .map_err(|e| JobsError::InvalidArgument(format!("interval {text:?}: {e}")))?;
        if period < Duration::from_secs(1) || period.subsec_nanos() != 0 {
            return Err(JobsError::InvalidArgument(format!(
                "interval {text:?} must be a whole number of seconds, at least 1s"
            )));
        }
        Ok(Self::Every(period))
    }

    /// The first fire time strictly after `after_ms` (ms since the epoch).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        match self {
            Self::Every(period) => {
                let p = u64::try_from(period.as_millis()).ok()?;
                (after_ms / p).checked_add(1)?.checked_mul(p)
            }
            Self::Cron { cron, zone, .. } => {
                // Fire times are whole seconds: search from the second after_ms lies in.
                let secs = i64::try_from(after_ms / 1000).ok()?;
                let start = Utc.timestamp_opt(secs, 0).single()?.with_timezone(zone);
                let next = cron.find_next_occurrence(&start, false).ok()?;
                u64::try_from(next.timestamp_millis()).ok()
            }
        }
    }

    /// The last fire time at or before `at_ms`.
    pub fn last_at_or_before(&self, at_ms: u64) -> Option<u64> {
        match self {
            Self::Every(period) => {
                let p = u64::try_from(period.as_millis()).ok()?;
                Some(at_ms / p * p)
            }
            Self::Cron { cron, zone, .. } => {
                let secs = i64::try_from(at_ms / 1000).ok()?;
                let at = Utc.timestamp_opt(secs, 0).single()?.with_timezone(zone);
                let prev = cron.find_previous_occurrence(&at, true).ok()?;
                u64::try_from(prev.timestamp_millis()).ok()
            }
        }
    }

    /// The longest gap between two fires, roughly (used to size leases).
    pub(crate) fn period_hint(&self) -> Duration {
        match self {
            Self::Every(period) => *period,
            Self::Cron { .. } => Duration::from_secs(60),
        }
    }
}

/// Rewrites a day-of-month or day-of-week field that covers every day as `*` when the
/// other day field contains a `*`, croniter's rule for when the two are ANDed rather than
/// ORed. Fields this does not understand (names, `L`, `W`, `#`) are left alone.
fn normalize_day_fields(expression: &str) -> String {
    let mut fields: Vec<&str> = expression.split_whitespace().collect();
    if fields.len() != 5 {
        return expression.to_owned();
    }
    let (dom, dow) = (fields[2], fields[4]);
    if dow.contains('*') && covers(dom, 1, 31).is_some_and(|all| all) {
        fields[2] = "*";
    }
    if dom.contains('*') && covers(dow, 0, 7).is_some_and(|all| all) {
        fields[4] = "*";
    }
    fields.join(" ")
}

/// Whether a numeric cron field matches every value of `lo..=hi` (day-of-week: 7 is
/// Sunday, like 0); `None` when the field is not plain numbers, ranges, steps and lists.
fn covers(field: &str, lo: u32, hi: u32) -> Option<bool> {
    let mut seen = vec![false; usize::try_from(hi + 1).ok()?];
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" => (lo, hi),
            r => match r.split_once('-') {
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                None => {
                    let a: u32 = r.parse().ok()?;
                    (a, if part.contains('/') { hi } else { a })
                }
            },
        };
        if from < lo || to > hi || from > to {
            return None;
        }
        for v in (from..=to).step_by(usize::try_from(step).ok()?) {
            seen[usize::try_from(v).ok()?] = true;
        }
    }
    if hi == 7 && seen[7] {
        seen[0] = true;
    }
    let last = if hi == 7 { 6 } else { hi };
    Some((lo..=last).all(|v| seen[v as usize]))
}

/// What to do about fire times that passed while no instance ran (a restart, a deploy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedRuns {
    /// Forget them; wait for the next fire time.
    #[default]
    Skip,
    /// Run once at start (for the latest missed fire time), however many were missed.
    RunOnce,
}

impl FromStr for MissedRuns {
    type Err = JobsError;

    /// `skip` or `run-once` (`run_once` too).
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "skip" => Ok(Self::Skip),
            "run-once" | "run_once" => Ok(Self::RunOnce),
            other => Err(JobsError::InvalidArgument(format!(
                "missed-run policy {other:?}: expected skip or run-once"
            ))),
        }
    }
}

/// The thing an entry runs. Opaque to this crate; the worker runs it on a PHP thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// A PHP script, run like `php path.php`.
    Script(String),
    /// A command line, run like `php bin/console app:report`.
    Command(String),
    /// A PHP callable by name (`App\Reports::daily`).
    Callable(String),
}

/// One `[[schedule]]` entry.
#[derive(Debug, Clone)]
pub struct ScheduleEntry {
    /// Unique among the entries; names its state in the store and its metrics.
    pub name: String,
    /// When it fires.
    pub trigger: Trigger,
    /// Each fire is delayed by up to this much, by an amount fixed per (entry, fire time)
    /// so every instance waits the same.
    pub jitter: Duration,
    /// Whether a fire may start while the previous run goes on (else it is skipped).
    pub allow_overlap: bool,
    /// Fire times missed while no instance ran.
    pub missed: MissedRuns,
    /// What runs.
    pub task: Task,
    /// The longest a run counts as going on if its instance dies without finishing it (on
    /// Redis, this bounds how long a dead instance blocks the next run).
    pub max_run: Duration,
}

impl ScheduleEntry {
    /// An entry with no jitter, no overlap, skipped missed runs and a one-hour run bound.
    pub fn new(name: impl Into<String>, trigger: Trigger, task: Task) -> Self {
        Self {
            name: name.into(),
            trigger,
            jitter: Duration::ZERO,
            allow_overlap: false,
            missed: MissedRuns::Skip,
            task,
            max_run: Duration::from_secs(3600),
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let ok = !self.name.is_empty()
            && self.name.len() <= 128
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if ok {
            Ok(())
        } else {
            Err(JobsError::InvalidArgument(format!(
                "schedule name {:?} must be 1 to 128 characters of letters, digits and _-.:",
                self.name
            )))
        }
    }

    /// This entry's delay for the fire at `fire_ms`: the same on every instance.
    pub(crate) fn jitter_for(&self, fire_ms: u64) -> u64 {
        let span = u64::try_from(self.jitter.as_millis()).unwrap_or(u64::MAX);
        if span == 0 {
            return 0;
        }
        // FNV-1a over the name and fire time: stable across processes and versions.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.name.bytes().chain(fire_ms.to_be_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h % (span + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_day_fields_become_stars_only_beside_a_star() {
        assert_eq!(normalize_day_fields("0 0 */4 * 0-6"), "0 0 */4 * *");
        assert_eq!(normalize_day_fields("0 0 */4 * */1"), "0 0 */4 * *");
        assert_eq!(normalize_day_fields("0 0 1-31 * */2"), "0 0 * * */2");
        assert_eq!(normalize_day_fields("0 0 6 * 0-6"), "0 0 6 * 0-6");
        assert_eq!(normalize_day_fields("0 0 */4 * 1-5"), "0 0 */4 * 1-5");
        assert_eq!(normalize_day_fields("0 0 */4 * 1-7"), "0 0 */4 * *");
        assert_eq!(
            normalize_day_fields("0 0 */4 * MON-SUN"),
            "0 0 */4 * MON-SUN"
        );
        assert_eq!(covers("1-10,11-31", 1, 31), Some(true));
        assert_eq!(covers("2/2", 1, 31), Some(false));
        assert_eq!(covers("L", 1, 31), None);
    }

    #[test]
    fn jitter_is_fixed_per_fire_and_bounded() {
        let mut e =
            ScheduleEntry::new("e", Trigger::every("1m").unwrap(), Task::Script("x".into()));
        assert_eq!(e.jitter_for(60_000), 0);
        e.jitter = Duration::from_secs(10);
        let j: Vec<u64> = (0..50).map(|k| e.jitter_for(k * 60_000)).collect();
        assert!(j.iter().all(|d| *d <= 10_000));
        assert!(
            j.iter().collect::<std::collections::HashSet<_>>().len() > 10,
            "{j:?}"
        );
        assert_eq!(e.jitter_for(120_000), e.jitter_for(120_000));
    }

    #[test]
    fn missed_run_policies_parse() {
        assert_eq!("skip".parse::<MissedRuns>(), Ok(MissedRuns::Skip));
        assert_eq!("run-once".parse::<MissedRuns>(), Ok(MissedRuns::RunOnce));
        assert!("later".parse::<MissedRuns>().is_err());
    }

    #[test]
    fn intervals_align_on_the_epoch() {
        let t = Trigger::every("30s").unwrap();
        assert_eq!(t.next_after(0), Some(30_000));
        assert_eq!(t.next_after(29_999), Some(30_000));
        assert_eq!(t.next_after(30_000), Some(60_000));
        assert_eq!(t.last_at_or_before(59_999), Some(30_000));
    }
}
