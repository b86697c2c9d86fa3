//! The harness's command line.

use std::path::PathBuf;

pub(crate) const USAGE: &str = "\
usage: compare [OPTIONS]
  --rounds N              interleaved rounds per workload (default 3)
  --seconds S             measured seconds per run (default 5)
  --quick                 --rounds 1 --seconds 2
  --only NAME[,NAME...]   only these workloads (repeatable; `memory` is the PSS workload)
  --skip NAME[,NAME...]   all workloads but these (repeatable)
  --list                  print the workloads and exit
  --out DIR               where benchmarks.md and benchmarks.json go (default docs/)
  --threads N             PHP threads / php-fpm children / worker threads (default 2 x CPUs)
  --ferrophp-bin NAME=PATH
                          measure this ferrophp binary as its own systems (repeatable;
                          default: target/release/ferrophp, built if missing)
  --ferrophp-arg ARG      one more argument for every ferrophp server (repeatable)
  --php-ini FILE          the php.ini both ferrophp and php-fpm load
                          (default /etc/php/8.2/fpm/php.ini)
  --fpm-keepalive N       nginx's idle FastCGI connections per worker for the tuned
                          baseline (default: children / nginx workers)
  --keep-scratch          leave the scratch directory (sites, logs, configs) in place
  --memory-concurrency N[,N...]
                          concurrencies of the PSS workload (default 4,32)
";

/// One ferrophp binary under test.
#[derive(Clone, Debug)]
pub(crate) struct Build {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    /// Given by the user (`--ferrophp-bin`), rather than the default the harness may
    /// build itself.
    pub(crate) explicit: bool,
}

pub(crate) struct Options {
    pub(crate) rounds: usize,
    pub(crate) seconds: u64,
    pub(crate) warmup: u64,
    pub(crate) only: Vec<String>,
    pub(crate) skip: Vec<String>,
    pub(crate) list: bool,
    pub(crate) threads: usize,
    pub(crate) out: Option<PathBuf>,
    pub(crate) ferrophp_args: Vec<String>,
    pub(crate) builds: Vec<Build>,
    pub(crate) php_ini: PathBuf,
    pub(crate) fpm_keepalive: Option<usize>,
    pub(crate) memory_concurrency: Vec<usize>,
    pub(crate) keep_scratch: bool,
}

impl Options {
    /// `--threads` given through `--ferrophp-arg` replaces the harness's own count for
    /// ferrophp (the flag may be given once).
    pub(crate) fn ferrophp_sets_threads(&self) -> bool {
        self.ferrophp_args.iter().any(|a| a == "--threads")
    }

    /// A `--max-threads` given to ferrophp, which is also the worker pool's ceiling.
    pub(crate) fn ferrophp_max_threads(&self) -> Option<&str> {
        self.ferrophp_args
            .iter()
            .position(|a| a == "--max-threads")
            .and_then(|i| self.ferrophp_args.get(i + 1))
            .map(String::as_str)
    }
}

/// `Ok(None)`: `--help` was asked for.
pub(crate) fn parse(
    args: impl IntoIterator<Item = String>,
    repo: &std::path::Path,
) -> Result<Option<Options>, String> {
    let mut options = Options {
        rounds: 3,
        seconds: 5,
        warmup: 1,
        only: Vec::new(),
        skip: Vec::new(),
        list: false,
        threads: 2 * std::thread::available_parallelism().map_or(1, |n| n.get()),
        out: None,
        ferrophp_args: Vec::new(),
        builds: Vec::new(),
        php_ini: PathBuf::from("/etc/php/8.2/fpm/php.ini"),
        fpm_keepalive: None,
        memory_concurrency: vec![4, 32],
        keep_scratch: false,
    };
    let mut args = args.into_iter();
    fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
        value
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{flag} needs a number"))
    }
    fn value(flag: &str, value: Option<String>) -> Result<String, String> {
        value.ok_or_else(|| format!("{flag} needs a value"))
    }
    let list = |v: String| -> Vec<String> {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => options.rounds = number(&arg, args.next())?,
            "--seconds" => options.seconds = number(&arg, args.next())?,
            "--threads" => options.threads = number(&arg, args.next())?,
            "--fpm-keepalive" => options.fpm_keepalive = Some(number(&arg, args.next())?),
            "--only" => options.only.extend(list(value(&arg, args.next())?)),
            "--skip" => options.skip.extend(list(value(&arg, args.next())?)),
            "--list" => options.list = true,
            "--keep-scratch" => options.keep_scratch = true,
            "--out" => options.out = Some(PathBuf::from(value(&arg, args.next())?)),
            "--php-ini" => options.php_ini = PathBuf::from(value(&arg, args.next())?),
            "--ferrophp-arg" => options.ferrophp_args.push(value(&arg, args.next())?),
            "--ferrophp-bin" => {
                let spec = value(&arg, args.next())?;
                let (name, path) = spec
                    .split_once('=')
                    .filter(|(n, p)| !n.is_empty() && !p.is_empty())
                    .ok_or_else(|| format!("--ferrophp-bin NAME=PATH, got {spec:?}"))?;
                if options.builds.iter().any(|b| b.name == name) {
                    return Err(format!("--ferrophp-bin: the name {name:?} is given twice"));
                }
                // Absolute, since set-up scripts run it from other directories (a missing
                // file is reported by the tools check).
                let path = PathBuf::from(path);
                options.builds.push(Build {
                    name: name.to_string(),
                    path: path.canonicalize().unwrap_or(path),
                    explicit: true,
                });
            }
            "--memory-concurrency" => {
                options.memory_concurrency = list(value(&arg, args.next())?)
                    .iter()
                    .map(|n| {
                        n.parse()
                            .map_err(|_| format!("--memory-concurrency: {n:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--quick" => {
                options.rounds = 1;
                options.seconds = 2;
            }
            "-h" | "--help" => return Ok(None),
            // cargo bench passes this to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.rounds == 0 || options.seconds == 0 || options.threads == 0 {
        return Err("--rounds, --seconds and --threads must be at least 1".into());
    }
    if options.builds.is_empty() {
        options.builds.push(Build {
            name: "default".into(),
            path: repo.join("target/release/ferrophp"),
            explicit: false,
        });
    }
    Ok(Some(options))
}
