//! The PHP settings every PHP system runs with, and the run-time check that they really
//! do. Both sides load the same php.ini file (Debian's php-fpm one by default: ferrophp
//! through `--php-ini`, php-fpm through `-c`) and get the same OPcache and realpath-cache
//! settings as `-d`. A probe page in every document root prints `ini_get()` of each
//! setting below, whether OPcache and its JIT are on, and which php.ini was loaded; the
//! harness asks it on every run, before any load, and stops the whole run at the first
//! system whose answer differs from the first system's.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Passed as `-d` to ferrophp and php-fpm alike. OPcache as a production site tunes it:
/// on, enough memory and interned strings for WordPress + MediaWiki + Symfony, no
/// timestamp checks, no JIT (its effect is a separate question from the server's);
/// a realpath cache that lives long enough not to expire during a run.
pub(crate) const SHARED: &[(&str, &str)] = &[
    ("opcache.enable", "1"),
    ("opcache.memory_consumption", "256"),
    ("opcache.interned_strings_buffer", "16"),
    ("opcache.max_accelerated_files", "20000"),
    ("opcache.validate_timestamps", "0"),
    ("opcache.save_comments", "1"),
    ("opcache.jit", "disable"),
    ("opcache.jit_buffer_size", "0"),
    ("realpath_cache_size", "4096K"),
    ("realpath_cache_ttl", "600"),
];

/// Settings the probe reads besides [`SHARED`]: the ones of the shared php.ini that
/// change what a request costs.
const FROM_PHP_INI: &[&str] = &[
    "memory_limit",
    "output_buffering",
    "zend.assertions",
    "zend.enable_gc",
    "display_errors",
    "error_reporting",
    "log_errors",
    "max_execution_time",
    "short_open_tag",
    "variables_order",
    "request_order",
    "default_charset",
    "date.timezone",
    "pcre.jit",
    "session.save_handler",
    "session.gc_probability",
    "session.use_strict_mode",
    "mysqlnd.collect_statistics",
    "mysqlnd.collect_memory_statistics",
    "opcache.revalidate_freq",
    "opcache.enable_file_override",
    "opcache.optimization_level",
    "opcache.file_cache",
    "opcache.preload",
    "opcache.huge_code_pages",
];

pub(crate) const PROBE_PATH: &str = "/ferrophp-bench-probe.php";

/// The `-d` arguments of [`SHARED`].
pub(crate) fn shared_args() -> Vec<String> {
    SHARED.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Puts the probe page into a document root.
pub(crate) fn install_probe(root: &Path) -> Result<(), String> {
    let keys: Vec<&str> = SHARED
        .iter()
        .map(|(k, _)| *k)
        .chain(FROM_PHP_INI.iter().copied())
        .collect();
    let keys = serde_json::to_string(&keys).map_err(|e| e.to_string())?;
    let php = format!(
        r#"<?php
// Written by the comparison harness (benches/src/compare/ini.rs): the PHP settings this
// server runs with, so the harness can check that every system runs the same ones.
$ini = [];
foreach (json_decode('{keys}', true) as $key) {{
    $value = ini_get($key);
    $ini[$key] = $value === false ? null : $value;
}}
$status = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
$extensions = get_loaded_extensions();
sort($extensions);
header('Content-Type: application/json');
echo json_encode([
    'php_version' => PHP_VERSION,
    'sapi' => PHP_SAPI,
    'zts' => (bool) PHP_ZTS,
    'php_ini' => php_ini_loaded_file(),
    'ini' => $ini,
    'opcache_enabled' => is_array($status) && !empty($status['opcache_enabled']),
    'jit_enabled' => is_array($status) && !empty($status['jit']['enabled']),
    'extensions' => $extensions,
]);
"#
    );
    let file = root.join(PROBE_PATH.trim_start_matches('/'));
    std::fs::write(&file, php).map_err(|e| format!("{}: {e}", file.display()))
}

/// What the probe page answered.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Probe {
    pub(crate) php_version: String,
    pub(crate) sapi: String,
    pub(crate) zts: bool,
    pub(crate) php_ini: Option<String>,
    pub(crate) ini: BTreeMap<String, Option<String>>,
    pub(crate) opcache_enabled: bool,
    pub(crate) jit_enabled: bool,
    pub(crate) extensions: Vec<String>,
}

/// Asks the probe page, waiting up to 15 s for a 200 (php-fpm may still be starting).
pub(crate) fn probe(port: u16) -> Result<Probe, String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let last = match super::http::request(port, PROBE_PATH, None, Duration::from_secs(10)) {
            Ok(r) if r.status == 200 => {
                return serde_json::from_slice(&r.body)
                    .map_err(|e| format!("probe page answered {:?}: {e}", r.text()));
            }
            Ok(r) => format!("status {}: {}", r.status, r.text()),
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(format!("probe page {PROBE_PATH}: {last}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The settings seen on each system, checked against the first.
#[derive(Default)]
pub(crate) struct Settings {
    reference: Option<String>,
    pub(crate) seen: BTreeMap<String, Probe>,
}

impl Settings {
    /// Records `probe` for `system`; an error names every difference from the first
    /// system's settings (and a system without OPcache, or with its JIT on).
    pub(crate) fn check(&mut self, system: &str, probe: Probe) -> Result<(), String> {
        let mut problems = Vec::new();
        if !probe.opcache_enabled {
            problems.push("OPcache is off".to_string());
        }
        if probe.jit_enabled {
            problems.push("the JIT is on".to_string());
        }
        if let Some(reference) = self
            .reference
            .as_ref()
            .and_then(|r| self.seen.get(r).map(|p| (r, p)))
        {
            let (ref_system, ref_probe) = reference;
            if ref_probe.php_ini != probe.php_ini {
                problems.push(format!(
                    "php.ini {:?}, {ref_system} loaded {:?}",
                    probe.php_ini, ref_probe.php_ini
                ));
            }
            for (key, value) in &probe.ini {
                let theirs = ref_probe.ini.get(key).cloned().flatten();
                // A setting of an extension one side does not load (null) is reported in
                // the extension lists, not here.
                if let (Some(mine), Some(theirs)) = (value, &theirs) {
                    if mine != theirs {
                        problems.push(format!("{key} = {mine:?}, {ref_system} has {theirs:?}"));
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(format!(
                "PHP settings differ on {system}:\n  {}",
                problems.join("\n  ")
            ));
        }
        if self.reference.is_none() {
            self.reference = Some(system.to_string());
        }
        self.seen.entry(system.to_string()).or_insert(probe);
        Ok(())
    }

    /// The common settings, for the report: key → value (of the first system).
    pub(crate) fn common(&self) -> Vec<(String, String)> {
        let Some(first) = self.reference.as_ref().and_then(|r| self.seen.get(r)) else {
            return Vec::new();
        };
        first
            .ini
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.clone().unwrap_or_else(|| "(not loaded)".into()),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(pairs: &[(&str, Option<&str>)]) -> Probe {
        Probe {
            php_version: "8.2.32".into(),
            sapi: "x".into(),
            zts: true,
            php_ini: Some("/etc/php/8.2/fpm/php.ini".into()),
            ini: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(String::from)))
                .collect(),
            opcache_enabled: true,
            jit_enabled: false,
            extensions: Vec::new(),
        }
    }

    #[test]
    fn the_same_settings_pass_and_a_difference_names_the_key_and_both_systems() {
        let mut settings = Settings::default();
        let base = [
            ("opcache.validate_timestamps", Some("0")),
            ("zend.assertions", Some("-1")),
        ];
        settings.check("a", probe(&base)).unwrap();
        settings.check("b", probe(&base)).unwrap();
        let err = settings
            .check(
                "c",
                probe(&[
                    ("opcache.validate_timestamps", Some("1")),
                    ("zend.assertions", Some("-1")),
                ]),
            )
            .unwrap_err();
        assert!(err.contains("on c"), "{err}");
        assert!(
            err.contains("opcache.validate_timestamps = \"1\", a has \"0\""),
            "{err}"
        );
        assert_eq!(
            settings.common(),
            vec![
                ("opcache.validate_timestamps".to_string(), "0".to_string()),
                ("zend.assertions".to_string(), "-1".to_string()),
            ]
        );
    }

    #[test]
    fn opcache_off_jit_on_or_another_php_ini_fail_an_unloaded_extension_does_not() {
        let mut settings = Settings::default();
        settings
            .check("a", probe(&[("mysqlnd.collect_statistics", Some(""))]))
            .unwrap();
        // mysqlnd not loaded on b: its setting is absent, which is not a difference.
        settings
            .check("b", probe(&[("mysqlnd.collect_statistics", None)]))
            .unwrap();
        let mut off = probe(&[]);
        off.opcache_enabled = false;
        assert!(settings
            .check("c", off)
            .unwrap_err()
            .contains("OPcache is off"));
        let mut jit = probe(&[]);
        jit.jit_enabled = true;
        assert!(settings.check("d", jit).unwrap_err().contains("JIT is on"));
        let mut other = probe(&[]);
        other.php_ini = None;
        assert!(settings
            .check("e", other)
            .unwrap_err()
            .contains("php.ini None"));
    }

    #[test]
    fn the_probe_page_asks_for_every_shared_setting() {
        let dir = std::env::temp_dir().join(format!("compare-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        install_probe(&dir).unwrap();
        let php = std::fs::read_to_string(dir.join(PROBE_PATH.trim_start_matches('/'))).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for (key, _) in SHARED {
            assert!(
                php.contains(&format!("\"{key}\"")),
                "{key} missing from the probe"
            );
        }
    }
}
