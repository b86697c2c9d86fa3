//! Cron evaluation against a reference: random five-field expressions and random start
//! times, the next fire time from `Trigger::next_after` compared with Python's `croniter`
//! (PyPI; `scripts/test.sh` installs it). Then DST days in a named zone, where Vixie
//! cron's rules (which croniter does not model) are spelled out.

use std::io::Write;
use std::process::{Command, Stdio};

use jobs::Trigger;

const CRONITER: &str = r#"
import sys
from datetime import datetime, timezone
try:
    from croniter import croniter
except ImportError:
    sys.exit("croniter is missing: python3 -m pip install croniter")
for line in sys.stdin:
    expr, start = line.rstrip("\n").split("\t")
    base = datetime.fromtimestamp(int(start), tz=timezone.utc)
    print(int(croniter(expr, base).get_next(float)))
"#;

/// One random field. Ranges have distinct ends: croniter 7 reads `a-a` as `*`.
fn field(rng: &mut fastrand::Rng, lo: u32, hi: u32) -> String {
    let n = |rng: &mut fastrand::Rng| rng.u32(lo..=hi);
    let range = |rng: &mut fastrand::Rng| {
        let a = rng.u32(lo..hi);
        (a, rng.u32(a + 1..=hi))
    };
    match rng.u32(0..7) {
        0 => "*".into(),
        1 => n(rng).to_string(),
        2 => {
            let (a, b) = range(rng);
            format!("{a}-{b}")
        }
        3 => {
            let mut v: Vec<u32> = (0..rng.usize(2..=4)).map(|_| n(rng)).collect();
            v.sort_unstable();
            v.dedup();
            v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        }
        4 => format!("*/{}", rng.u32(1..=(hi - lo + 1).min(15))),
        5 => {
            let (a, b) = range(rng);
            format!("{a}-{b}/{}", rng.u32(1..=5))
        }
        _ => {
            let (a, b) = range(rng);
            format!("{},{a}-{b}", n(rng))
        }
    }
}

fn croniter_next(cases: &[(String, i64)]) -> Vec<i64> {
    let mut child = Command::new("python3")
        .args(["-c", CRONITER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut input = String::new();
    for (expr, start) in cases {
        input.push_str(&format!("{expr}\t{start}\n"));
    }
    // A python3 that dies at once (croniter missing) closes the pipe: its stderr, checked
    // below, says why better than the broken pipe would.
    let written = child.stdin.take().unwrap().write_all(input.as_bytes());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && written.is_ok(),
        "croniter failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn next_fire_matches_croniter() {
    let mut rng = fastrand::Rng::with_seed(38);
    let mut cases = Vec::new();
    // 2020-01-01 .. 2035-01-01, at any second.
    for _ in 0..3000 {
        let expr = [
            field(&mut rng, 0, 59),
            field(&mut rng, 0, 23),
            field(&mut rng, 1, 28),
            field(&mut rng, 1, 12),
            field(&mut rng, 0, 6),
        ]
        .join(" ");
        cases.push((expr, rng.i64(1_577_836_800..2_051_222_400)));
    }
    // Day-of-month and day-of-week both restricted: Vixie's OR, which croniter follows.
    for expr in [
        "0 0 1 * 1",
        "30 12 13 * 5",
        "0 0 1,15 * 0",
        "0 6 10-12 * 2-3",
        "0 0 31 * 0",
    ] {
        cases.push((expr.into(), 1_700_000_000));
    }
    let reference = croniter_next(&cases);
    let mut mismatches = Vec::new();
    for ((expr, start), want) in cases.iter().zip(&reference) {
        let got = Trigger::cron(expr, "UTC")
            .unwrap()
            .next_after(u64::try_from(*start).unwrap() * 1000);
        let got = got.map(|ms| i64::try_from(ms / 1000).unwrap());
        if got != Some(*want) {
            mismatches.push(format!(
                "{expr:?} after {start}: ours {got:?}, croniter {want}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches[..mismatches.len().min(15)].join("\n")
    );
}

fn fires(expr: &str, zone: &str, from_rfc3339: &str, n: usize) -> Vec<String> {
    let trigger = Trigger::cron(expr, zone).unwrap();
    let tz: chrono_tz::Tz = zone.parse().unwrap();
    let mut at = u64::try_from(
        chrono::DateTime::parse_from_rfc3339(from_rfc3339)
            .unwrap()
            .timestamp_millis(),
    )
    .unwrap();
    (0..n)
        .map(|_| {
            at = trigger.next_after(at).unwrap();
            let utc = chrono::DateTime::from_timestamp_millis(i64::try_from(at).unwrap()).unwrap();
            utc.with_timezone(&tz).to_rfc3339()
        })
        .collect()
}

#[test]
fn dst_follows_vixie_cron() {
    // Europe/Berlin springs forward 2025-03-30 02:00 -> 03:00 and falls back 2025-10-26
    // 03:00 -> 02:00.
    // A fixed-time job in the skipped hour runs once, right after the change.
    assert_eq!(
        fires(
            "30 2 * * *",
            "Europe/Berlin",
            "2025-03-29T12:00:00+01:00",
            3
        ),
        [
            "2025-03-30T03:00:00+02:00",
            "2025-03-31T02:30:00+02:00",
            "2025-04-01T02:30:00+02:00"
        ]
    );
    // A fixed-time job in the repeated hour runs once, not twice.
    assert_eq!(
        fires(
            "30 2 * * *",
            "Europe/Berlin",
            "2025-10-25T12:00:00+02:00",
            2
        ),
        ["2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"]
    );
    // Wildcard jobs follow the real clock: no 02:xx on the short day, both passes of the
    // repeated hour on the long one.
    assert_eq!(
        fires("0 * * * *", "Europe/Berlin", "2025-03-30T00:30:00+01:00", 3),
        [
            "2025-03-30T01:00:00+01:00",
            "2025-03-30T03:00:00+02:00",
            "2025-03-30T04:00:00+02:00"
        ]
    );
    assert_eq!(
        fires(
            "*/30 2 * * *",
            "Europe/Berlin",
            "2025-10-26T01:50:00+02:00",
            5
        ),
        [
            "2025-10-26T02:00:00+02:00",
            "2025-10-26T02:30:00+02:00",
            "2025-10-26T02:00:00+01:00",
            "2025-10-26T02:30:00+01:00",
            "2025-10-27T02:00:00+01:00"
        ]
    );
    // Local midnight, not UTC midnight.
    assert_eq!(
        fires("0 0 * * *", "America/New_York", "2025-07-01T12:00:00Z", 1),
        ["2025-07-02T00:00:00-04:00"]
    );
}

#[test]
fn bad_expressions_are_refused() {
    for (expr, zone) in [
        ("* * * *", "UTC"),
        ("61 * * * *", "UTC"),
        ("* * * * * *", "UTC"),
        ("nonsense", "UTC"),
        ("* * * * *", "Mars/Base"),
    ] {
        assert!(
            matches!(
                Trigger::cron(expr, zone),
                Err(jobs::JobsError::InvalidArgument(_))
            ),
            "{expr} {zone}"
        );
    }
    for text in ["0s", "500ms", "1.5s", "soon", ""] {
        assert!(Trigger::every(text).is_err(), "{text}");
    }
    assert!(Trigger::cron("@daily", "UTC").is_ok());
    assert_eq!(
        Trigger::every("1h 30m").unwrap().next_after(0),
        Some(5_400_000)
    );
}
