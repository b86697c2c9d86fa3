//! Background work settings: `--background-worker` (and `[[background]]`,
//! `FERROPHP_BACKGROUND_WORKERS`), `--background-stop-timeout`, `--jobs-backend`,
//! `--jobs-durability` and the `[[schedule]]` tables, checked into [`JobsSettings`]
//! (`background.rs` mounts them: docs/jobs.md).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::sources::parse_duration;
use super::FileConfig;

/// The background work flags (flattened into `ferrophp serve`'s).
#[derive(clap::Args, Debug, Default)]
pub struct JobsArgs {
    /// Background worker: `script.php` or `script.php,THREADS` [default: 1 thread], run
    /// in a loop outside any request (a queue consumer). Repeatable;
    /// FERROPHP_BACKGROUND_WORKERS takes a `;`-separated list.
    #[arg(
        long = "background-worker",
        env = "FERROPHP_BACKGROUND_WORKERS",
        value_name = "SCRIPT[,THREADS]",
        value_delimiter = ';'
    )]
    pub background_workers: Vec<String>,
    /// How long a background script may take to end once told to stop (shutdown):
    /// `30s`, `500ms` [default: 30s]
    #[arg(long, env = "FERROPHP_BACKGROUND_STOP_TIMEOUT", value_name = "DURATION", value_parser = parse_duration)]
    pub background_stop_timeout: Option<Duration>,
    /// Where Ferrophp\Jobs keeps jobs: `local` (under --data-dir/jobs) or
    /// `redis://host:port[/db]`, shared by several instances [default: local]
    #[arg(long, env = "FERROPHP_JOBS_BACKEND", value_name = "local|URL")]
    pub jobs_backend: Option<String>,
    /// The local store's fsync policy: `buffered`, `always`, or an interval (`200ms`)
    /// [default: 200ms]; docs/jobs.md
    #[arg(long, env = "FERROPHP_JOBS_DURABILITY", value_name = "POLICY")]
    pub jobs_durability: Option<String>,
}

/// One background worker as configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSpec {
    /// The script, relative to the current directory.
    pub script: PathBuf,
    /// PHP threads running it [default: 1].
    pub threads: Option<usize>,
    /// Extra environment of its runs.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// How long it may take to end once told to stop (`10s`).
    pub stop_timeout: Option<String>,
}

impl BackgroundSpec {
    /// `script.php` or `script.php,N`.
    pub fn parse_flag(spec: &str) -> Result<BackgroundSpec, String> {
        let (script, threads) = match spec.rsplit_once(',') {
            Some((path, n)) if n.trim().parse::<usize>().is_ok() => {
                (path, Some(n.trim().parse::<usize>().unwrap_or(1)))
            }
            _ => (spec, None),
        };
        if script.trim().is_empty() {
            return Err(format!("--background-worker {spec:?}: no script"));
        }
        if threads == Some(0) {
            return Err(format!(
                "--background-worker {spec}: threads must be at least 1"
            ));
        }
        Ok(BackgroundSpec {
            script: PathBuf::from(script),
            threads,
            env: Default::default(),
            stop_timeout: None,
        })
    }
}

/// One `[[schedule]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// The entry's name (logs, metrics, the store's last run) [default: its script or
    /// command, made a name].
    pub name: Option<String>,
    /// A cron expression (five fields or `@hourly`), or ...
    pub cron: Option<String>,
    /// ... an interval (`30s`, `5m`).
    pub every: Option<String>,
    /// The time zone of `cron` [default: UTC].
    pub timezone: Option<String>,
    /// A PHP script run on a PHP thread, or ...
    pub script: Option<PathBuf>,
    /// ... a command run as `ferrophp php-cli <command>` (`bin/console app:report`).
    pub command: Option<String>,
    /// Let a run start while the previous one still runs [default: false].
    #[serde(default)]
    pub allow_overlap: bool,
    /// Delay each run by up to this much (`10s`), the same on every instance.
    pub jitter: Option<String>,
    /// Fires missed while stopped: `skip` or `run-once` [default: skip].
    pub missed: Option<String>,
}

/// Background work, resolved.
#[derive(Debug, Clone, Default)]
pub struct JobsSettings {
    /// The background workers, file first, then flags.
    pub background: Vec<BackgroundSpec>,
    /// Default stop timeout of background scripts.
    pub stop_timeout: Duration,
    /// `None`: the local store; else a Redis URL.
    pub redis: Option<String>,
    /// The local store's fsync policy.
    pub durability: jobs::Durability,
    /// The scheduled tasks.
    pub schedules: Vec<jobs::ScheduleEntry>,
}

pub(super) fn settings(args: &mut JobsArgs, file: &mut FileConfig) -> Result<JobsSettings, String> {
    let mut background = file.background.take().unwrap_or_default();
    for spec in &args.background_workers {
        if spec.trim().is_empty() {
            continue;
        }
        background.push(BackgroundSpec::parse_flag(spec)?);
    }
    let stop_timeout = match (args.background_stop_timeout, &file.background_stop_timeout) {
        (Some(d), _) => d,
        (None, Some(text)) => parse_duration(text)?,
        (None, None) => worker::DEFAULT_BACKGROUND_STOP_TIMEOUT,
    };
    for spec in &background {
        if let Some(t) = &spec.stop_timeout {
            parse_duration(t).map_err(|e| format!("background {}: {e}", spec.script.display()))?;
        }
    }
    let backend = args.jobs_backend.take().or(file.jobs_backend.take());
    let redis = match backend.as_deref() {
        None | Some("local") => None,
        Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
            Some(url.to_string())
        }
        Some(other) => {
            return Err(format!(
                "jobs backend {other:?}: expected local or redis://host:port"
            ))
        }
    };
    let durability = match args.jobs_durability.take().or(file.jobs_durability.take()) {
        Some(text) => text
            .parse::<jobs::Durability>()
            .map_err(|e| format!("jobs durability: {e}"))?,
        None => jobs::Durability::default(),
    };
    let schedules = file
        .schedule
        .take()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, s)| schedule_entry(i, s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(JobsSettings {
        background,
        stop_timeout,
        redis,
        durability,
        schedules,
    })
}

fn schedule_entry(index: usize, spec: &ScheduleSpec) -> Result<jobs::ScheduleEntry, String> {
    let label = spec
        .name
        .clone()
        .unwrap_or_else(|| format!("[[schedule]] #{}", index + 1));
    let err = |e: &dyn std::fmt::Display| format!("schedule {label}: {e}");
    let trigger = match (&spec.cron, &spec.every) {
        (Some(cron), None) => jobs::Trigger::cron(cron, spec.timezone.as_deref().unwrap_or("UTC"))
            .map_err(|e| err(&e))?,
        (None, Some(every)) => jobs::Trigger::every(every).map_err(|e| err(&e))?,
        _ => return Err(err(&"give one of cron or every")),
    };
    let task = match (&spec.script, &spec.command) {
        (Some(script), None) => {
            let path = std::fs::canonicalize(script)
                .map_err(|e| err(&format!("script {}: {e}", script.display())))?;
            jobs::Task::Script(path.to_string_lossy().into_owned())
        }
        (None, Some(command)) if !command.trim().is_empty() => jobs::Task::Command(command.clone()),
        _ => return Err(err(&"give one of script or command")),
    };
    let name = spec.name.clone().unwrap_or_else(|| {
        let source = match &task {
            jobs::Task::Script(s) => Path::new(s)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            jobs::Task::Command(c) | jobs::Task::Callable(c) => c.clone(),
        };
        let cleaned: String = source
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_-.:".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .take(100)
            .collect();
        format!("{cleaned}-{}", index + 1)
    });
    let mut entry = jobs::ScheduleEntry::new(name, trigger, task);
    entry.allow_overlap = spec.allow_overlap;
    if let Some(j) = &spec.jitter {
        entry.jitter = parse_duration(j).map_err(|e| err(&e))?;
    }
    if let Some(m) = &spec.missed {
        entry.missed = m.parse().map_err(|e| err(&e))?;
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_flags_parse() {
        let s = BackgroundSpec::parse_flag("bin/consume.php,3").unwrap();
        assert_eq!(
            (s.script, s.threads),
            (PathBuf::from("bin/consume.php"), Some(3))
        );
        let s = BackgroundSpec::parse_flag("a,b.php").unwrap();
        assert_eq!((s.script, s.threads), (PathBuf::from("a,b.php"), None));
        assert!(BackgroundSpec::parse_flag("x.php,0").is_err());
        assert!(BackgroundSpec::parse_flag(",2").is_err());
    }

    #[test]
    fn file_and_flags_merge_and_bad_values_are_refused() {
        let mut file = FileConfig::parse(
            "jobs_backend = \"redis://127.0.0.1:6379/2\"\nbackground_stop_timeout = \"5s\"\n\
             [[background]]\nscript = \"a.php\"\nthreads = 2\n\
             [[schedule]]\nname = \"r\"\ncron = \"*/5 * * * *\"\ntimezone = \"Europe/Paris\"\n\
             command = \"bin/console app:report\"\njitter = \"10s\"\nmissed = \"run-once\"\n",
        )
        .unwrap();
        let mut args = JobsArgs {
            background_workers: vec!["b.php,4".into()],
            ..Default::default()
        };
        let s = settings(&mut args, &mut file).unwrap();
        assert_eq!(s.background.len(), 2);
        assert_eq!(s.background[1].threads, Some(4));
        assert_eq!(s.stop_timeout, Duration::from_secs(5));
        assert_eq!(s.redis.as_deref(), Some("redis://127.0.0.1:6379/2"));
        assert_eq!(s.schedules[0].name, "r");
        assert_eq!(s.schedules[0].jitter, Duration::from_secs(10));
        assert_eq!(s.schedules[0].missed, jobs::MissedRuns::RunOnce);

        for bad in [
            "[[schedule]]\ncron = \"* * *\"\ncommand = \"x\"\n",
            "[[schedule]]\nevery = \"30s\"\n",
            "[[schedule]]\nevery = \"30s\"\ncron = \"* * * * *\"\ncommand = \"x\"\n",
            "[[schedule]]\ncron = \"* * * * *\"\ntimezone = \"Mars/Base\"\ncommand = \"x\"\n",
            "jobs_durability = \"sometimes\"\n",
            "jobs_backend = \"mysql://x\"\n",
        ] {
            let mut file = FileConfig::parse(bad).unwrap();
            assert!(
                settings(&mut JobsArgs::default(), &mut file).is_err(),
                "{bad:?} accepted"
            );
        }
    }
}
