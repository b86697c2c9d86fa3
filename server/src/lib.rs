//! The ferrophp server as a library: every module of the `ferrophp` binary, which is only
//! its command line (`main.rs`). Public are the subcommands' entry points the binary calls
//! (`serve`, `php_cli`, `supervise`, `package`, with `config` for their arguments and `sockets` for
//! the listening sockets a supervisor passes down), [`tls`] (the automatic HTTPS core,
//! which `config` names and `server/tests/acme.rs` drives against a real ACME CA) and,
//! hidden from the docs, [`fuzzing`]: what the fuzz targets (`fuzz/`) and their stable
//! replay (`server/tests/fuzz_replay.rs`) exercise. Everything else stays crate-private.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

mod admin;
mod background;
mod body;
pub mod config;
mod confine;
#[doc(hidden)]
pub mod fuzzing;
mod interim;
mod logging;
mod mercure_mount;
mod metrics;
mod mode;
pub mod package;
mod peer;
mod php_bridge;
pub mod php_cli;
mod routes;
mod routing;
mod sendfile;
pub mod serve;
mod sessions;
mod site;
pub mod sockets;
mod static_cache;
mod static_files;
mod status;
pub mod supervise;
pub mod tls;
mod traces;
mod workers;

/// What the process does before any thread exists and before the command line is read:
/// caps malloc arenas, prepares the environment of a release tree, and takes the
/// listening sockets (and readiness pipe) a `--supervise` parent passed down (they are
/// removed from the environment). Must run first in `main`, while the process has one
/// thread.
pub fn prepare_process() -> Result<sockets::InheritedSockets, String> {
    cap_malloc_arenas();
    // It may set PHP_INI_SCAN_DIR for a release tree.
    worker::layout::prepare_process_env();
    supervise::take_ready_pipe()?;
    sockets::take_inherited()
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
    // SAFETY: mallopt only changes glibc's allocator settings; `prepare_process` runs
    // before any other thread exists, and M_ARENA_MAX takes effect for arenas created
    // afterwards.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
}

/// Other C libraries have their own allocators and no arenas to cap.
#[cfg(not(target_env = "gnu"))]
fn cap_malloc_arenas() {}
