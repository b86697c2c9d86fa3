//! The document roots the workloads run against, each set up once per harness run in its
//! scratch directory and served by every system: the synthetic scripts of
//! `test-data/compare`, and real apps from Debian's packages (WordPress on a private
//! MariaDB, MediaWiki on SQLite, a Symfony app). Set-up runs PHP through the first
//! ferrophp build's `php-cli`, before any server starts; what it writes (database rows,
//! SQLite files, Symfony's compiled container) is then the same for all systems.

mod mariadb;
mod mediawiki;
mod symfony;
mod wordpress;

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) use mariadb::MariaDb;

use super::workloads::Site;

/// The prepared sites (only those the selected workloads need).
pub(crate) struct Sites {
    pub(crate) synthetic: Option<PathBuf>,
    pub(crate) wordpress: Option<PathBuf>,
    pub(crate) mediawiki: Option<PathBuf>,
    pub(crate) symfony: Option<PathBuf>,
    /// Kept running for the WordPress workloads; stopped when `Sites` is dropped.
    pub(crate) mariadb: Option<MariaDb>,
}

impl Sites {
    pub(crate) fn prepare(
        repo: &Path,
        scratch: &Path,
        sites: &[Site],
        php_cli: &Path,
    ) -> Result<Sites, String> {
        let mut prepared = Sites {
            synthetic: None,
            wordpress: None,
            mediawiki: None,
            symfony: None,
            mariadb: None,
        };
        for site in sites {
            let started = std::time::Instant::now();
            match site {
                Site::Synthetic => prepared.synthetic = Some(synthetic(repo, scratch)?),
                Site::WordPress => {
                    let db = MariaDb::start(&scratch.join("mariadb"))?;
                    prepared.wordpress = Some(wordpress::prepare(
                        repo,
                        &scratch.join("wordpress"),
                        &db,
                        php_cli,
                    )?);
                    prepared.mariadb = Some(db);
                }
                Site::MediaWiki => {
                    prepared.mediawiki = Some(mediawiki::prepare(
                        repo,
                        &scratch.join("mediawiki"),
                        php_cli,
                    )?)
                }
                Site::Symfony => {
                    prepared.symfony =
                        Some(symfony::prepare(repo, &scratch.join("symfony"), php_cli)?)
                }
            }
            eprintln!(
                "set up {site:?} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(prepared)
    }

    /// The document root of a site.
    pub(crate) fn root(&self, site: Site) -> Result<&Path, String> {
        match site {
            Site::Synthetic => self.synthetic.as_deref(),
            Site::WordPress => self.wordpress.as_deref(),
            Site::MediaWiki => self.mediawiki.as_deref(),
            Site::Symfony => self.symfony.as_deref(),
        }
        .ok_or_else(|| format!("{site:?} was not set up"))
    }
}

/// Runs a set-up command; its output goes into the error if it fails.
fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!("{what} failed ({}):\n{text}", out.status));
    }
    Ok(text)
}

/// A private copy of test-data/compare plus the generated 1 MB static file.
fn synthetic(repo: &Path, scratch: &Path) -> Result<PathBuf, String> {
    let root = scratch.join("root");
    std::fs::create_dir_all(root.join("static")).map_err(|e| e.to_string())?;
    run(
        Command::new("cp")
            .arg("-r")
            .arg(repo.join("test-data/compare/."))
            .arg(&root),
        "copying test-data/compare",
    )?;
    let megabyte: Vec<u8> = (0..1024 * 1024)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(root.join("static/1mb.bin"), megabyte).map_err(|e| e.to_string())?;
    let root = root.canonicalize().map_err(|e| e.to_string())?;
    super::ini::install_probe(&root)?;
    Ok(root)
}
