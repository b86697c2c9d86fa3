//! The `ferrophp` binary: command-line entry point. Each subcommand lives in its own module.

mod admin;
mod body;
mod config;
mod interim;
mod logging;
mod metrics;
mod php_bridge;
mod php_cli;
mod routing;
mod sendfile;
mod serve;
mod sessions;
mod static_files;
mod tls;
mod workers;

use clap::{Parser, Subcommand};

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
    // Before any thread exists: it may set PHP_INI_SCAN_DIR for a release tree.
    worker::layout::prepare_process_env();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::PhpCli(args) => php_cli::run(args),
        Command::Serve(args) => serve::run(*args),
    };
    std::process::exit(code);
}
