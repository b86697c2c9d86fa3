//! The `ferrophp` binary: the command line. Each subcommand lives in the library
//! (`lib.rs`), which also prepares the process before anything else runs.

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
    /// Run a PHP script like the `php` command-line interpreter.
    #[command(name = "php-cli")]
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
    let cli = Cli::parse();
    let code = match cli.command {
        Command::PhpCli(args) => php_cli::run(args),
        // A supervised child (it holds the inherited socket) never supervises again.
        Command::Serve(args) if args.supervise && inherited.is_none() => supervise::run(*args),
        Command::Serve(args) => serve::run(*args, inherited),
    };
    std::process::exit(code);
}
