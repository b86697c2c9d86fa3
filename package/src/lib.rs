//! One-file apps (`ferrophp package`): a release's `ferrophp`, its libraries (the C
//! library and dynamic loader included), php.ini, extensions and an app directory in
//! one executable file, verified by a hash and extracted once into a read-only,
//! content-addressed directory. This crate knows neither HTTP nor PHP: it owns the file
//! format ([`format`]), making a package ([`write`]), reading and verifying one
//! ([`read`]), extracting it safely ([`extract`]) and the launcher's decisions
//! ([`launch`]); the `ferrophp-launcher` binary (static, built by
//! `scripts/release.sh`) is the front of every package, and `ferrophp package` (the
//! server's subcommand) writes them.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

pub mod extract;
pub mod format;
pub mod launch;
pub mod read;
pub mod settings;
pub mod write;

pub use format::{Entry, Error, Index, Manifest, ReleaseId, Result};
pub use read::Package;
pub use settings::AppSettings;
pub use write::{Builder, TreeRules};

#[cfg(test)]
mod tests;
