//! What the engine is started with: the SAPI name scripts see, where PHP's log lines go,
//! and the process-wide settings PHP reads at module start-up.

use std::ffi::CStr;

/// Which SAPI the engine presents to scripts (`PHP_SAPI`, `php_sapi_name()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SapiName {
    /// "ferrophp", the application server. OPcache only runs under SAPI names on its
    /// allow-list; scripts/build-php.sh adds this one.
    #[default]
    Server,
    /// "cli", as `php` (`ferrophp php-cli`): tools that insist on the CLI run (Symfony
    /// Console, artisan, MediaWiki maintenance), `opcache.enable_cli` and `apc.enable_cli`
    /// apply as with `php`, and phpinfo() prints text.
    Cli,
    /// "cli-server", as `php -S` (`ferrophp php-cli -S`): front controllers commonly let
    /// static files through with `if (PHP_SAPI === 'cli-server' && is_file(...)) return
    /// false;`, which only works under this name. On OPcache's own allow-list.
    DevServer,
}

impl SapiName {
    /// The name as PHP reads it (`sapi_module.name`).
    pub fn as_cstr(self) -> &'static CStr {
        match self {
            SapiName::Server => c"ferrophp",
            SapiName::Cli => c"cli",
            SapiName::DevServer => c"cli-server",
        }
    }
}

/// Where PHP's log lines (errors with `log_errors=1`, `error_log()`) go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTarget {
    /// Raw lines on stderr, like the `php` CLI.
    Stderr,
    /// `tracing` events at a level matching the PHP error type.
    Tracing,
}

/// Process-wide settings PHP reads at module start-up.
pub(crate) struct ModuleSettings {
    /// `key=value` lines, applied after php.ini (like `php -d`).
    pub(crate) ini_entries: String,
    /// Use this php.ini (file or directory) instead of the build's default search.
    pub(crate) php_ini: Option<std::path::PathBuf>,
    /// Skip php.ini entirely (`php -n`).
    pub(crate) no_php_ini: bool,
    /// Defaults php.ini may override.
    pub(crate) ini_defaults: Vec<(String, String)>,
    /// Where PHP's log lines go.
    pub(crate) log_target: LogTarget,
    /// The SAPI name scripts see.
    pub(crate) sapi_name: SapiName,
}
