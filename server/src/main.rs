//! The `ferrophp` binary: the command line. Each subcommand lives in the library
//! (`lib.rs`), which also prepares the process before anything else runs.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

use clap::{CommandFactory, Parser, Subcommand};
use ferrophp_server::{config, package, php_cli, serve, supervise};

#[derive(Parser)]
#[command(
    name = "ferrophp",
    version = version_text(),
    about = "A PHP application server embedding ZTS PHP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// PHP's command-line interpreter (`php`), with its every option: `ferrophp php-cli
    /// -h` lists them. ferrophp called through a link named `php`, or with arguments that
    /// are none of its subcommands (`ferrophp -r 'echo 1;'`), is the same.
    #[command(name = "php-cli", disable_help_flag = true)]
    PhpCli(php_cli::Args),
    /// Serve a PHP application over HTTP (classic mode: each request runs a script).
    Serve(Box<config::ServeArgs>),
    /// Make one executable file of an app and this release: `ferrophp package --app DIR
    /// -o myapp`, then `./myapp` serves it anywhere a Linux kernel runs.
    Package(package::Args),
}

/// `ferrophp --version`: ferrophp's version and the PHP it embeds (`php -v` gives PHP's
/// own banner).
fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (PHP {})",
            env!("CARGO_PKG_VERSION"),
            worker::PHP_VERSION
        )
    })
}

fn main() {
    // Before any thread exists (see `prepare_process`), so before clap too.
    let inherited = match ferrophp_server::prepare_process() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ferrophp: {e}");
            std::process::exit(2);
        }
    };
    // `php` through a link, `ferrophp php-cli ...`, or php's arguments: PHP's own CLI.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = php_cli::run_if_php(&argv, Cli::command) {
        std::process::exit(code);
    }
    let cli = Cli::parse_from(argv);
    let code = match cli.command {
        Command::PhpCli(_) => unreachable!("php_cli::run_if_php runs php-cli"),
        // A supervised child (it holds the inherited socket) never supervises again.
        Command::Serve(args) if args.supervise && inherited.is_empty() => supervise::run(*args),
        Command::Serve(args) => serve::run(*args, inherited),
        Command::Package(args) => package::run(args),
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand clap knows (names, aliases, flag forms) and ferrophp's own flags
    /// are ferrophp's first arguments, never a PHP script for `php_cli` to run.
    #[test]
    fn every_subcommand_stays_ferrophps_own() {
        let mut cli = Cli::command();
        cli.build();
        let mut own: Vec<String> = vec![
            "-h".into(),
            "--help".into(),
            "-V".into(),
            "--version".into(),
        ];
        for sub in cli.get_subcommands() {
            own.push(sub.get_name().into());
            own.extend(sub.get_all_aliases().map(String::from));
            own.extend(sub.get_short_flag().map(|c| format!("-{c}")));
            own.extend(sub.get_long_flag().map(|l| format!("--{l}")));
        }
        assert!(own.iter().any(|a| a == "serve") && own.iter().any(|a| a == "help"));
        for arg in &own {
            assert!(
                php_cli::is_own_first_argument(Cli::command(), arg),
                "{arg} would run as a PHP script"
            );
        }
        for php in ["-r", "-v", "-d", "script.php", "-S"] {
            assert!(
                !php_cli::is_own_first_argument(Cli::command(), php),
                "{php}"
            );
        }
    }
}
