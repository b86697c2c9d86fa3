//! Everything the selected workloads need from outside the harness, checked before any
//! server starts: the binaries of this workspace (built here when they are the default
//! ones and missing), the Debian packages of the baseline, the load generator, the
//! database and the apps. A missing piece ends the run with one message saying what is
//! missing and the one command that installs it, never with a panic halfway through.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::options::{Build, Options};
use super::workloads::{Site, Workload};

/// What a run needs, from the selected workloads.
#[derive(Default)]
pub(crate) struct Needs {
    pub(crate) baseline: bool,
    pub(crate) hyper: bool,
    pub(crate) mariadb: bool,
    pub(crate) sites: Vec<Site>,
}

impl Needs {
    pub(crate) fn of(workloads: &[&Workload], memory: bool) -> Needs {
        let mut needs = Needs {
            baseline: memory,
            mariadb: memory,
            ..Needs::default()
        };
        if memory {
            needs.sites.push(Site::WordPress);
        }
        for w in workloads {
            needs.baseline |= w.kinds.iter().any(|k| k.is_baseline());
            needs.hyper |= w.kinds.contains(&super::systems::Kind::HyperHello);
            needs.mariadb |= w.site == Site::WordPress;
            if !needs.sites.contains(&w.site) {
                needs.sites.push(w.site);
            }
        }
        needs
    }
}

/// The workspace binaries the run uses.
pub(crate) struct Tools {
    pub(crate) hyper: PathBuf,
    /// `ferrophp --version` of each build, in the order of `Options::builds`.
    pub(crate) build_versions: Vec<String>,
}

/// Programs run by name (found on PATH, as they are run), and their Debian package.
fn programs(needs: &Needs) -> Vec<(&'static str, &'static str)> {
    let mut programs = vec![("wrk", "wrk")];
    if needs.baseline {
        programs.push(("nginx", "nginx"));
        programs.push(("php-fpm8.2", "php8.2-fpm"));
    }
    if needs.mariadb {
        programs.push(("mariadbd", "mariadb-server"));
        programs.push(("mariadb-install-db", "mariadb-server"));
        programs.push(("mariadb", "mariadb-client"));
    }
    programs
}

/// The program's path on PATH, if it is there.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Files that show an app's Debian package is installed, and the package.
fn package_files(needs: &Needs) -> Vec<(&'static str, &'static str)> {
    let mut files = Vec::new();
    for site in &needs.sites {
        match site {
            Site::Synthetic => {}
            Site::WordPress => {
                files.push(("/usr/share/wordpress/wp-settings.php", "wordpress"));
                files.push((
                    "/usr/share/wordpress/wp-content/themes/twentytwentyone/style.css",
                    "wordpress-theme-twentytwentyone",
                ));
            }
            Site::MediaWiki => files.push(("/usr/share/mediawiki/index.php", "mediawiki")),
            Site::Symfony => {
                files.push((
                    "/usr/share/php/Symfony/Bundle/FrameworkBundle/autoload.php",
                    "php-symfony-framework-bundle",
                ));
                files.push((
                    "/usr/share/php/Symfony/Bundle/TwigBundle/autoload.php",
                    "php-symfony-twig-bundle",
                ));
                files.push(("/usr/share/php/Twig/autoload.php", "php-twig"));
            }
        }
    }
    files
}

/// PHP extensions php-fpm must load for a site (ferrophp compiles them in), and the
/// Debian package of each.
fn fpm_modules(needs: &Needs) -> Vec<(&'static str, &'static str)> {
    let mut modules = Vec::new();
    for site in &needs.sites {
        match site {
            Site::Synthetic => {}
            Site::WordPress => modules.push(("mysqli", "php8.2-mysql")),
            Site::MediaWiki => {
                modules.push(("pdo_sqlite", "php8.2-sqlite3"));
                modules.push(("mbstring", "php8.2-mbstring"));
                modules.push(("intl", "php8.2-intl"));
                modules.push(("dom", "php8.2-xml"));
            }
            Site::Symfony => modules.push(("dom", "php8.2-xml")),
        }
    }
    modules
}

/// Checks everything `needs` names; builds the default binaries if missing.
pub(crate) fn prepare(repo: &Path, options: &Options, needs: &Needs) -> Result<Tools, String> {
    let mut missing: Vec<&str> = programs(needs)
        .into_iter()
        .filter(|(program, _)| on_path(program).is_none())
        .chain(
            package_files(needs)
                .into_iter()
                .filter(|(file, _)| !Path::new(file).exists()),
        )
        .map(|(_, package)| package)
        .collect();
    if let Some(fpm) = on_path("php-fpm8.2").filter(|_| needs.baseline) {
        let out = Command::new(fpm)
            .arg("-m")
            .output()
            .map_err(|e| format!("php-fpm8.2 -m: {e}"))?;
        let loaded = String::from_utf8_lossy(&out.stdout).to_lowercase();
        for (module, package) in fpm_modules(needs) {
            if !loaded.lines().any(|l| l.trim() == module) && !missing.contains(&package) {
                missing.push(package);
            }
        }
    }
    if !missing.is_empty() {
        let mut seen = Vec::new();
        missing.retain(|p| {
            let new = !seen.contains(p);
            seen.push(*p);
            new
        });
        return Err(format!(
            "missing Debian packages: {}.\nInstall them with: scripts/install-test-deps.sh (as root; or apt-get install -y {})",
            missing.join(" "),
            missing.join(" ")
        ));
    }
    if needs.baseline && !options.php_ini.is_file() {
        return Err(format!(
            "php.ini {} not found (Debian's php8.2-fpm has it; --php-ini FILE names another)",
            options.php_ini.display()
        ));
    }

    let hyper = repo.join("target/release/hyper-hello");
    if needs.hyper && !hyper.exists() {
        cargo_build(repo, &["-p", "ferrophp-benches", "--bin", "hyper-hello"])?;
    }
    let mut build_versions = Vec::new();
    for build in &options.builds {
        if !build.path.exists() {
            if build.explicit {
                return Err(format!(
                    "--ferrophp-bin {}={}: no such file",
                    build.name,
                    build.path.display()
                ));
            }
            cargo_build(repo, &["-p", "ferrophp"])?;
        }
        build_versions.push(version_of(build)?);
    }
    Ok(Tools {
        hyper,
        build_versions,
    })
}

fn cargo_build(repo: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let shown = format!("cargo build --release {}", args.join(" "));
    eprintln!("compare: building what is missing: {shown}");
    let status = Command::new(&cargo)
        .current_dir(repo)
        .args(["build", "--release"])
        .args(args)
        .status()
        .map_err(|e| format!("{shown}: {e}"))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status}); run it to see why"));
    }
    Ok(())
}

/// `ferrophp --version`, which also proves the binary starts (its libphp found).
fn version_of(build: &Build) -> Result<String, String> {
    let out = Command::new(&build.path)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", build.path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            build.path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
