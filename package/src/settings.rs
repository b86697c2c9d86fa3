//! The `[package]` table of an app's ferrophp.toml: what `ferrophp package` leaves out,
//! which paths stay writable, which of the release's extensions the app turns on. `serve`
//! parses it too (and ignores it), so a typo fails everywhere the same way.

use serde::Deserialize;

/// `[package]` in ferrophp.toml.
#[derive(Debug, Default, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AppSettings {
    /// Paths (relative to the app directory) the app writes to: `var`,
    /// `public/wp-content/uploads`. Not packed; links to the data directory.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Paths (relative to the app directory) left out of the package: `.git`, `tests`.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Extensions of the release to load (`apcu`, `igbinary`, `redis`): written into the
    /// package's conf.d, so the server and the CLI both load them.
    #[serde(default)]
    pub extensions: Vec<String>,
}
