//! The `ferrophp` binary: command-line entry point. Each subcommand lives in its own module.

mod admin;
mod body;
mod config;
mod confine;
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
mod supervise;
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

/// Caps glibc's malloc arenas at one per CPU, unless the operator set `MALLOC_ARENA_MAX`.
///
/// glibc gives each new thread that meets a locked arena a new one, up to 8 per CPU.
/// Our threads (PHP threads plus tokio's) far outnumber the CPUs, and freed memory in
/// one arena cannot serve another: under a long mixed load the worker-mode soak grew
/// 5-7% after warm-up with 13 arenas and 1.4% with 2, with the memory in use unchanged
/// (docs/soak.md). PHP's request memory comes from its own allocator (ZendMM), so the
/// arenas carry only persistent and Rust-side allocations, where contention is low.
#[cfg(target_env = "gnu")]
fn cap_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let arenas = i32::try_from(cpus.max(2)).unwrap_or(i32::MAX);
    // SAFETY: mallopt only changes glibc's allocator settings; it is called before any
    // other thread exists, and M_ARENA_MAX takes effect for arenas created afterwards.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
}

/// Other C libraries have their own allocators and no arenas to cap.
#[cfg(not(target_env = "gnu"))]
fn cap_malloc_arenas() {}

fn main() {
    cap_malloc_arenas();
    // Before any thread exists: it may set PHP_INI_SCAN_DIR for a release tree.
    worker::layout::prepare_process_env();
    // Also before any thread: it takes a variable out of the environment.
    let inherited = match supervise::take_inherited_listener() {
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
