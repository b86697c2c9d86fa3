//! `ferrophp` as the `php` command: `ferrophp php-cli ARGS`, ferrophp called through a link
//! whose name starts with `php` (so it can sit on PATH as `php`), and ferrophp called with
//! arguments that are not one of its own subcommands, or with none while its stdin is not
//! a terminal (what `PHP_BINARY` points at, a link resolved: tools such as Composer run
//! `PHP_BINARY -d ... script` as a child, PHPUnit pipes a test to a bare `PHP_BINARY`).
//! ferrophp's own `-h`/`--help`/`-V`/`--version` stay its own unless called as `php`.
//! Every such call is PHP's
//! own CLI SAPI ([`worker::cli`]), flag for flag, except `-S ADDR:PORT [-t DOCROOT]
//! [ROUTER]`, PHP's development web server, which ferrophp serves with its own
//! classic-mode server (see [`crate::serve::run_dev`]).

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// The `php-cli` subcommand as `ferrophp --help` lists it; its arguments are `php`'s.
#[derive(clap::Args)]
pub struct Args {
    /// The arguments of the `php` command (`ferrophp php-cli -h` lists them).
    #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
    _php_args: Vec<OsString>,
}

/// Whether `arg`, as the first argument, is one of ferrophp's own (anything else makes
/// ferrophp the `php` command): read from `cli`, ferrophp's own command line, so a
/// subcommand added there is never run as a PHP script. Its subcommands by name, alias
/// or flag form, and its own flags (`-h`/`--help`, `-V`/`--version`), including what clap
/// adds when it builds the command (the `help` subcommand, the help and version flags).
pub fn is_own_first_argument(mut cli: clap::Command, arg: &str) -> bool {
    cli.build();
    let short = |c: Option<char>| {
        c.is_some_and(|c| arg.strip_prefix('-') == Some(c.encode_utf8(&mut [0; 4])))
    };
    let long = |l: Option<&str>| l.is_some_and(|l| arg.strip_prefix("--") == Some(l));
    let subcommand = cli.get_subcommands().any(|sub| {
        sub.get_name() == arg
            || sub.get_all_aliases().any(|alias| alias == arg)
            || short(sub.get_short_flag())
            || sub.get_all_short_flag_aliases().any(|c| short(Some(c)))
            || long(sub.get_long_flag())
            || sub.get_all_long_flag_aliases().any(|l| long(Some(l)))
    });
    let flag = cli.get_arguments().filter(|a| !a.is_positional()).any(|a| {
        short(a.get_short())
            || a.get_all_short_aliases()
                .unwrap_or_default()
                .into_iter()
                .any(|c| short(Some(c)))
            || long(a.get_long())
            || a.get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .any(|l| long(Some(l)))
    });
    subcommand || flag
}

/// If this invocation of the binary is the `php` command, runs it and returns its exit
/// status; `None` leaves the command line to ferrophp's own parser, `cli` (built only
/// when the first argument has to be told apart from php's).
pub fn run_if_php(argv: &[OsString], cli: impl FnOnce() -> clap::Command) -> Option<i32> {
    let program = argv.first()?;
    let called_php = Path::new(program)
        .file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|name| name.starts_with("php"));
    let php_args = if called_php {
        &argv[1..]
    } else {
        match argv.get(1).and_then(|a| a.to_str()) {
            Some("php-cli") => &argv[2..],
            Some(first) if is_own_first_argument(cli(), first) => return None,
            // `ferrophp` alone at a terminal prints ferrophp's help; with a pipe or a file
            // on stdin it is `php` reading its script there, as PHPUnit runs
            // `PHP_BINARY` for a test in a separate process.
            None if std::io::stdin().is_terminal() => return None,
            _ => &argv[1..],
        }
    };
    if let Some(server) = dev_server_args(php_args) {
        return Some(dev_server(server));
    }
    // PHP derives PHP_BINARY from argv[0]: a `php` link keeps the name it was called by;
    // otherwise the binary's own path, which runs as `php` when called with php's
    // arguments (see the module doc), so child processes of PHP tools work.
    let argv0 = if called_php {
        program.clone()
    } else {
        worker::layout::executable().map_or_else(|_| program.clone(), PathBuf::into_os_string)
    };
    let mut cli_argv = Vec::with_capacity(php_args.len() + 1);
    cli_argv.push(argv0);
    cli_argv.extend_from_slice(php_args);
    // Held while the script runs: mercure_publish()'s hub and the runtime it talks on.
    let _mercure = cli_mercure_hub();
    Some(worker::cli::run(cli_argv))
}

/// The `php` CLI's Mercure hub: with `FERROPHP_MERCURE_TRANSPORT=redis://...` (what
/// `--mercure-transport` reads), a publish-only hub on that Redis stream, so a console
/// command's `mercure_publish()` reaches the subscribers of every server on it. None
/// otherwise (the function then throws): a CLI process has no subscribers of its own.
fn cli_mercure_hub() -> Option<(tokio::runtime::Runtime, mercure::Hub)> {
    let url = std::env::var("FERROPHP_MERCURE_TRANSPORT").ok()?;
    if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
        return None;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("ferrophp-mercure")
        .enable_all()
        .build()
        .ok()?;
    let config = mercure::Config {
        // Nobody subscribes here; the hub only needs a way to start.
        anonymous: true,
        transport: mercure::TransportConfig::redis(url),
        ..mercure::Config::default()
    };
    match runtime.block_on(async { mercure::Hub::start(config) }) {
        Ok(hub) => {
            worker::set_mercure_hub(Some(hub.clone()));
            Some((runtime, hub))
        }
        Err(e) => {
            eprintln!("ferrophp: FERROPHP_MERCURE_TRANSPORT: {e}");
            None
        }
    }
}

/// `php`'s options that take a value (the next argument, or the rest of the same one).
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-c", "-d", "-f", "-r", "-B", "-R", "-F", "-E", "-S", "-t", "-z", "--rf", "--rc", "--re",
    "--rz", "--ri",
];

/// The development server's settings when `php_args` ask for it (`-S` among the options,
/// which end at the first argument that is not one, as php's getopt reads them).
fn dev_server_args(php_args: &[OsString]) -> Option<DevServerArgs> {
    let mut server = DevServerArgs::default();
    let mut wants_server = false;
    let mut args = php_args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        if arg == "--" || !arg.starts_with('-') || arg == "-" {
            // The router script (or nothing) follows; php ignores anything after it.
            let router = if arg == "--" { args.next() } else { Some(arg) };
            server.router = router.filter(|r| r != "-").map(PathBuf::from);
            break;
        }
        let (flag, inline) = split_option(&arg);
        let value = if OPTIONS_WITH_VALUE.contains(&flag) {
            match inline {
                Some(v) => Some(v),
                None => args.next(),
            }
        } else {
            None
        };
        match (flag, value) {
            ("-S", Some(addr)) => {
                wants_server = true;
                server.listen = addr;
            }
            ("-t", Some(dir)) => server.docroot = Some(PathBuf::from(dir)),
            ("-d", Some(kv)) => server.define.push(kv),
            ("-c", Some(path)) => server.php_ini = Some(PathBuf::from(path)),
            ("-n", _) => server.no_php_ini = true,
            _ => {}
        }
    }
    wants_server.then_some(server)
}

/// `-dkey=value` → ("-d", Some("key=value")); `--ri=x` → ("--ri", Some("x")).
fn split_option(arg: &str) -> (&str, Option<String>) {
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((name, value)) => (&arg[..name.len() + 2], Some(value.to_owned())),
            None => (arg, None),
        };
    }
    if arg.len() > 2 && arg.is_char_boundary(2) {
        (&arg[..2], Some(arg[2..].to_owned()))
    } else {
        (arg, None)
    }
}

#[derive(Default)]
struct DevServerArgs {
    listen: String,
    docroot: Option<PathBuf>,
    router: Option<PathBuf>,
    define: Vec<String>,
    php_ini: Option<PathBuf>,
    no_php_ini: bool,
}

/// `-S ADDR:PORT [-t DOCROOT] [ROUTER]`: PHP's development server, as one ferrophp
/// classic-mode server process. `PHP_CLI_SERVER_WORKERS` sets its PHP threads, as it
/// sets php -S's worker processes.
fn dev_server(args: DevServerArgs) -> i32 {
    use std::net::ToSocketAddrs;
    let Some(listen) = args
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        eprintln!("Invalid address: {}", args.listen);
        return 1;
    };
    let root = match &args.docroot {
        Some(dir) if !dir.is_dir() => {
            eprintln!("Directory {} does not exist.", dir.display());
            return 1;
        }
        Some(dir) => dir.clone(),
        None => PathBuf::from("."),
    };
    if let Some(router) = &args.router {
        if !router.is_file() {
            eprintln!("Cannot open router script: {}", router.display());
            return 1;
        }
    }
    let threads = std::env::var("PHP_CLI_SERVER_WORKERS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    let ini = args
        .define
        .iter()
        .map(|d| match d.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.to_owned()),
            None => (d.trim().to_owned(), "1".to_owned()),
        })
        .collect();
    crate::serve::run_dev(crate::serve::DevServer {
        listen,
        root,
        router: args.router,
        threads,
        ini,
        php_ini: args.php_ini,
        no_php_ini: args.no_php_ini,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn own_first_arguments_come_from_the_command_line_definition() {
        let cli = || {
            clap::Command::new("ferrophp")
                .version("1")
                .subcommand(clap::Command::new("serve"))
                .subcommand(
                    clap::Command::new("deploy")
                        .alias("ship")
                        .long_flag("deploy"),
                )
        };
        for own in [
            "serve",
            "deploy",
            "ship",
            "--deploy",
            "help",
            "-h",
            "--help",
            "-V",
            "--version",
        ] {
            assert!(is_own_first_argument(cli(), own), "{own}");
        }
        for php in ["-r", "-v", "script.php", "--ship", "-", "--", "-d", "Serve"] {
            assert!(!is_own_first_argument(cli(), php), "{php}");
        }
        // Without subcommands or a version, clap adds neither `help` nor `-V`.
        let bare = || clap::Command::new("x").disable_help_flag(true);
        for php in ["help", "-V", "-h"] {
            assert!(!is_own_first_argument(bare(), php), "{php}");
        }
    }

    #[test]
    fn dev_server_only_when_s_is_an_option() {
        let s = dev_server_args(&os(&["-S", "127.0.0.1:0", "-t", "pub", "router.php"])).unwrap();
        assert_eq!(s.listen, "127.0.0.1:0");
        assert_eq!(s.docroot, Some(PathBuf::from("pub")));
        assert_eq!(s.router, Some(PathBuf::from("router.php")));
        let s = dev_server_args(&os(&["-dfoo=1", "-S127.0.0.1:80", "-n"])).unwrap();
        assert_eq!(
            (s.listen.as_str(), s.define, s.no_php_ini),
            ("127.0.0.1:80", vec!["foo=1".to_owned()], true)
        );
        // After the script name, -S is the script's argument; a -d value is not an option.
        assert!(dev_server_args(&os(&["script.php", "-S", "x:1"])).is_none());
        assert!(dev_server_args(&os(&["-d", "-S", "script.php"])).is_none());
        assert!(dev_server_args(&os(&["-r", "echo 1;", "--", "-S"])).is_none());
    }
}
