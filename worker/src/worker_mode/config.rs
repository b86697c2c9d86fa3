//! What the server configures for a worker script: [`WorkerConfig`], and the memory
//! guard's [`MemoryGrowth`].

use std::path::PathBuf;
use std::sync::Arc;

/// One worker script and how to run it.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker script each thread boots.
    pub script: PathBuf,
    /// PHP threads running this script (the floor when it autoscales).
    pub threads: usize,
    /// The most threads autoscaling may give it (`threads` or less: no autoscaling).
    pub max_threads: usize,
    /// Extra environment: `$_SERVER` entries of the boot request, and `$_SERVER` entries and
    /// `getenv()` values of every request it serves (over the server's env of the same name).
    pub env: Vec<(String, String)>,
    /// Requests one PHP thread serves before its PHP state is rebuilt (0: no limit).
    pub max_requests: u64,
    /// Consecutive failures to reach the request loop at start-up before giving up.
    pub max_startup_failures: u32,
    /// The memory guard: how far a thread's PHP memory may grow above its level right
    /// after boot before that thread's script is restarted (None: no guard).
    pub memory_growth: Option<MemoryGrowth>,
    /// The document root of the release the script belongs to. A request this worker
    /// serves reports it as `DOCUMENT_ROOT` (and the thread's own script as
    /// `SCRIPT_FILENAME`), whichever release routed the request: while a rolling restart
    /// moves the threads to a new release, a thread still running the old one answers
    /// with the old one's paths (None: the request's own).
    pub document_root: Option<Arc<str>>,
    /// What metrics, `/threads` and logs call this worker (None: its script's path). The
    /// server gives the script as configured: `/srv/app/current/public/worker.php` keeps
    /// naming it across deploys, while `script` follows the link to each release.
    pub name: Option<String>,
}

/// How much a worker thread's PHP memory (`memory_get_usage()`) may grow, between the
/// moment its script first asks for a request and the end of any later request, before
/// the script is restarted on that thread. `max_requests` bounds a leak by count; this
/// bounds it by what it costs, so a slow leak does not force frequent restarts and a fast
/// one is caught early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryGrowth {
    /// Bytes above the level after boot.
    Bytes(u64),
    /// Percent of the level after boot.
    Percent(f64),
}

impl MemoryGrowth {
    /// `50%`, or bytes with an optional K/M/G suffix (powers of 1024, as in php.ini):
    /// `67108864`, `64M`.
    pub fn parse(text: &str) -> Result<MemoryGrowth, String> {
        let t = text.trim();
        let invalid = || {
            format!("invalid memory growth {text:?}: expected bytes (64M) or a percentage (50%)")
        };
        if let Some(percent) = t.strip_suffix('%') {
            let p: f64 = percent.trim().parse().map_err(|_| invalid())?;
            if !(p.is_finite() && p > 0.0) {
                return Err(invalid());
            }
            return Ok(MemoryGrowth::Percent(p));
        }
        let (digits, unit) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
            _ => (t, 'B'),
        };
        let shift = match unit {
            'B' => 0,
            'K' => 10,
            'M' => 20,
            'G' => 30,
            _ => return Err(invalid()),
        };
        let n: u64 = digits.trim().parse().map_err(|_| invalid())?;
        match n.checked_mul(1 << shift) {
            Some(bytes) if bytes > 0 => Ok(MemoryGrowth::Bytes(bytes)),
            _ => Err(invalid()),
        }
    }

    /// The memory level that triggers a restart, for a thread that booted at `baseline`.
    pub(super) fn limit(self, baseline: usize) -> usize {
        let growth = match self {
            MemoryGrowth::Bytes(b) => usize::try_from(b).unwrap_or(usize::MAX),
            MemoryGrowth::Percent(p) => (baseline as f64 * p / 100.0) as usize,
        };
        baseline.saturating_add(growth.max(1))
    }
}

impl WorkerConfig {
    /// `script` on `threads` threads, without autoscaling, extra environment, request
    /// limit or memory guard; five failed boots in a row give up.
    pub fn new(script: impl Into<PathBuf>, threads: usize) -> Self {
        WorkerConfig {
            script: script.into(),
            threads,
            max_threads: threads,
            env: Vec::new(),
            max_requests: 0,
            max_startup_failures: 5,
            memory_growth: None,
            document_root: None,
            name: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryGrowth;

    #[test]
    fn memory_growth_parses_bytes_units_and_percentages() {
        assert_eq!(MemoryGrowth::parse("4096"), Ok(MemoryGrowth::Bytes(4096)));
        assert_eq!(
            MemoryGrowth::parse("64K"),
            Ok(MemoryGrowth::Bytes(64 << 10))
        );
        assert_eq!(
            MemoryGrowth::parse("64m"),
            Ok(MemoryGrowth::Bytes(64 << 20))
        );
        assert_eq!(
            MemoryGrowth::parse(" 2G "),
            Ok(MemoryGrowth::Bytes(2 << 30))
        );
        assert_eq!(MemoryGrowth::parse("50%"), Ok(MemoryGrowth::Percent(50.0)));
        assert_eq!(
            MemoryGrowth::parse("12.5%"),
            Ok(MemoryGrowth::Percent(12.5))
        );
        for bad in [
            "",
            "0",
            "0%",
            "-1",
            "-5%",
            "x",
            "12Q",
            "1.5M",
            "NaN%",
            "inf%",
            "99999999999G",
        ] {
            assert!(MemoryGrowth::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn memory_growth_limits_are_relative_to_the_boot_level() {
        assert_eq!(MemoryGrowth::Bytes(1000).limit(5000), 6000);
        assert_eq!(MemoryGrowth::Percent(50.0).limit(4000), 6000);
        // Never a limit at the baseline itself, and no overflow.
        assert_eq!(MemoryGrowth::Percent(0.0001).limit(10), 11);
        assert_eq!(MemoryGrowth::Bytes(u64::MAX).limit(10), usize::MAX);
    }
}
