//! The `ferrophp` binary: the command line. Each subcommand lives in the library
//! (`lib.rs`), which also prepares the process before anything else runs.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

use clap::{Parser, Subcommand};
use ferrophp_server::{config, php_cli, serve, supervise};

#[derive(Parser)]
#[command(
    name = "ferrophp",
    version,
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
    if let Some(code) = php_cli::run_if_php(&argv) {
        std::process::exit(code);
    }
    let cli = Cli::parse_from(argv);
    let code = match cli.command {
        Command::PhpCli(_) => unreachable!("php_cli::run_if_php runs php-cli"),
        // A supervised child (it holds the inherited socket) never supervises again.
        Command::Serve(args) if args.supervise && inherited.is_empty() => supervise::run(*args),
        Command::Serve(args) => serve::run(*args, inherited),
    };
    std::process::exit(code);
}
