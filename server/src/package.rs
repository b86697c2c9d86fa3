//! `ferrophp package --app DIR [-o FILE]`: one executable file holding the app and the
//! release this ferrophp runs from (the file format, the launcher and extraction are the
//! `ferrophp-package` crate's). Nothing is compiled: the release tree's static launcher,
//! binary, libraries and extensions are copied and compressed with the app, so a package
//! takes seconds.
//!
//! What goes in (the extracted tree):
//!
//! ```text
//! ferrophp, php.ini, conf.d/    the release's, plus conf.d/90-package.ini (the app's
//!                               [ini] and [package] extensions) and 95-app.ini (the
//!                               app's own php.ini, if it has one)
//! lib/                          the release's libraries and extensions, and the ones it
//!                               takes from the system (C library and loader included:
//!                               libexec/ferrophp-package/lib/ of the release tree)
//! ferrophp.toml                 the app's settings (`serve`'s defaults)
//! app/                          the app directory, minus [package] exclude and writable
//! ```

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use ferrophp_package::read::hex;
use ferrophp_package::write::DEFAULT_LEVEL;
use ferrophp_package::{Builder, Manifest, ReleaseId, TreeRules};

use crate::config::FileConfig;

/// In a release tree: what `scripts/release.sh` puts there for packages.
const RELEASE_PACKAGE_DIR: &str = "libexec/ferrophp-package";

/// `ferrophp package`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The app's directory, its dependencies (vendor/) included; it becomes the working
    /// directory of every command the package runs.
    #[arg(long, value_name = "DIR")]
    pub app: PathBuf,
    /// The package to write (replaced atomically if it exists) [default: the app
    /// directory's name, in the current directory]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The app's settings, `serve`'s defaults when the package runs [default:
    /// DIR/ferrophp.toml if it exists]. Its `[package]` table: `writable`, `exclude`,
    /// `extensions`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The release tree that goes in [default: the tree this ferrophp runs from]
    #[arg(long, value_name = "DIR")]
    pub release: Option<PathBuf>,
    /// zstd level, 1 (fastest) to 19 (smallest)
    #[arg(long, default_value_t = DEFAULT_LEVEL, value_parser = clap::value_parser!(i32).range(1..=19))]
    pub level: i32,
}

/// Runs `ferrophp package`: 0, or 2 with the reason on stderr.
pub fn run(args: Args) -> i32 {
    match pack(args) {
        Ok(report) => {
            println!("{report}");
            0
        }
        Err(e) => {
            eprintln!("ferrophp package: {e}");
            2
        }
    }
}

/// The release tree's pieces a package needs.
struct Release {
    dir: PathBuf,
    launcher: Vec<u8>,
    id: ReleaseId,
}

fn release_tree(dir: Option<PathBuf>) -> Result<Release, String> {
    let dir = match dir {
        Some(d) => d,
        None => worker::layout::binary_dir()
            .ok_or("cannot tell which release tree this ferrophp runs from; use --release")?,
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("release tree {}: {e}", dir.display()))?;
    let own = dir.join(RELEASE_PACKAGE_DIR);
    let launcher = std::fs::read(own.join("launcher")).map_err(|e| {
        format!(
            "{} is not a release tree with a package launcher ({}/launcher: {e}); run \
             ferrophp from the tree scripts/release.sh makes, or pass --release",
            dir.display(),
            own.display()
        )
    })?;
    let id = std::fs::read_to_string(own.join("release-id"))
        .map_err(|e| format!("{}/release-id: {e}", own.display()))?;
    let id = ReleaseId::new(&id).map_err(|e| e.to_string())?;
    for needed in ["ferrophp", "php.ini", "lib/php/extensions"] {
        if !dir.join(needed).exists() {
            return Err(format!("{}: no {needed}", dir.display()));
        }
    }
    if !own.join("lib/ld-linux-x86-64.so.2").is_file() {
        return Err(format!(
            "{}/lib has no ld-linux-x86-64.so.2: the release was made without the system \
             libraries packages need",
            own.display()
        ));
    }
    Ok(Release { dir, launcher, id })
}

/// A relative path from the app's settings, checked: no `..`, not absolute.
fn app_relative(what: &str, path: &str) -> Result<PathBuf, String> {
    let p = Path::new(path.trim_end_matches('/'));
    let ok = !p.as_os_str().is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !ok {
        return Err(format!(
            "[package] {what} {path:?}: paths are relative to the app directory, without `..`"
        ));
    }
    Ok(p.components().collect())
}

fn pack(args: Args) -> Result<String, String> {
    let started = Instant::now();
    let release = release_tree(args.release)?;
    let app = args
        .app
        .canonicalize()
        .map_err(|e| format!("app directory {}: {e}", args.app.display()))?;
    if !app.is_dir() {
        return Err(format!("{} is not a directory", app.display()));
    }
    let app_name = app
        .file_name()
        .map_or_else(|| "app".into(), |n| n.to_string_lossy().into_owned());

    let config_path = args
        .config
        .clone()
        .or_else(|| Some(app.join("ferrophp.toml")).filter(|p| p.is_file()));
    let (config_text, file) = match &config_path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let file = FileConfig::parse(&text)
                .map_err(|e| format!("invalid config {}: {e}", path.display()))?;
            (Some(text), file)
        }
        None => (None, FileConfig::default()),
    };
    let settings = file.package_settings();
    let writable = settings
        .writable
        .iter()
        .map(|w| app_relative("writable", w))
        .collect::<Result<Vec<_>, _>>()?;
    let mut exclude = settings
        .exclude
        .iter()
        .map(|x| app_relative("exclude", x))
        .collect::<Result<Vec<_>, _>>()?;

    // What the settings name must be in the package, as `serve` will look for it.
    for (setting, path) in file.app_paths() {
        if path.is_absolute() {
            return Err(format!(
                "{setting} = {}: paths in a packed config are relative to the app directory",
                path.display()
            ));
        }
        let packed = |p: &Path| !writable.iter().chain(&exclude).any(|w| p.starts_with(w));
        let path: PathBuf = path.components().collect();
        let exists = if setting == "root" {
            app.join(&path).is_dir()
        } else {
            app.join(&path).is_file()
        };
        if !exists || !packed(&path) {
            return Err(format!(
                "{setting} = {}: not in the app directory {} (or excluded, or writable)",
                path.display(),
                app.display()
            ));
        }
    }

    let output = match args.output {
        Some(o) => o,
        None => std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(&app_name),
    };
    let output = absolute(&output)?;
    if output.is_dir() {
        return Err(format!("{} is a directory", output.display()));
    }
    // A package written into the app it packs leaves itself out.
    if let Ok(inside) = output.strip_prefix(&app) {
        exclude.push(inside.to_path_buf());
    }

    let manifest = Manifest {
        app_dir: b"app".to_vec(),
        config: config_text.as_ref().map(|_| b"ferrophp.toml".to_vec()),
        writable: writable
            .iter()
            .map(|w| w.as_os_str().as_bytes().to_vec())
            .collect(),
        summary: summary(&app_name, &file),
    };
    let mut builder = Builder::new(manifest, args.level);
    let fail = |e: ferrophp_package::Error| e.to_string();

    // The runtime: the release's binary, configuration, libraries and extensions.
    let r = &release.dir;
    builder
        .add_file(b"ferrophp", &r.join("ferrophp"), true)
        .map_err(fail)?;
    builder
        .add_file(b"php.ini", &r.join("php.ini"), false)
        .map_err(fail)?;
    builder
        .add_tree(b"conf.d", &r.join("conf.d"), &TreeRules::default())
        .map_err(fail)?;
    let package_ini = package_ini(&release, &file, &settings.extensions)?;
    if !package_ini.is_empty() {
        builder
            .add_bytes(b"conf.d/90-package.ini", package_ini.into_bytes(), false)
            .map_err(fail)?;
    }
    if app.join("php.ini").is_file() {
        builder
            .add_file(b"conf.d/95-app.ini", &app.join("php.ini"), false)
            .map_err(fail)?;
    }
    let mut runtime_libs = 0;
    for entry in
        std::fs::read_dir(r.join("lib")).map_err(|e| format!("{}/lib: {e}", r.display()))?
    {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let path = entry.path();
        if path.is_file() && name.as_bytes().windows(3).any(|w| w == b".so") {
            let mut in_pkg = b"lib/".to_vec();
            in_pkg.extend_from_slice(name.as_bytes());
            builder.add_file(&in_pkg, &path, false).map_err(fail)?;
            runtime_libs += 1;
        }
    }
    builder
        .add_tree(
            b"lib/php/extensions",
            &r.join("lib/php/extensions"),
            &TreeRules::default(),
        )
        .map_err(fail)?;
    let system = builder
        .add_tree(
            b"lib",
            &r.join(RELEASE_PACKAGE_DIR).join("lib"),
            &TreeRules::default(),
        )
        .map_err(fail)?;
    if let Some(text) = config_text {
        builder
            .add_bytes(b"ferrophp.toml", text.into_bytes(), false)
            .map_err(fail)?;
    }
    // The app.
    let rules = TreeRules {
        exclude,
        writable: writable.clone(),
    };
    let app_report = builder.add_tree(b"app", &app, &rules).map_err(fail)?;

    let written = builder
        .write(&release.launcher, &release.id, &output)
        .map_err(fail)?;
    let mut report = format!(
        "packed {} into {} ({:.1} MB, BLAKE3 {}) in {:.1} s: app {} files ({:.1} MB)",
        app.display(),
        output.display(),
        mb(written.size),
        hex(&written.hash[..8]),
        started.elapsed().as_secs_f64(),
        app_report.files,
        mb(app_report.bytes),
    );
    if app_report.under_writable > 0 || app_report.excluded > 0 {
        let _ = write!(
            report,
            " ({} under writable paths and {} excluded entries left out)",
            app_report.under_writable, app_report.excluded
        );
    }
    let _ = write!(
        report,
        "; runtime: release {} ({} libraries, {} files of the system's: C library, loader, \
         iconv modules); {} files in all, {:.1} MB before compression",
        release.id,
        runtime_libs,
        system.files,
        written.files,
        mb(written.content_bytes)
    );
    if !writable.is_empty() {
        let names: Vec<_> = writable.iter().map(|w| w.display().to_string()).collect();
        let _ = write!(report, "; writable: {}", names.join(", "));
    }
    Ok(report)
}

/// `conf.d/90-package.ini`: the extensions the app turns on and its `[ini]` settings,
/// so `serve` and the CLI load the same.
fn package_ini(
    release: &Release,
    file: &FileConfig,
    extensions: &[String],
) -> Result<String, String> {
    let mut ini = String::new();
    if !extensions.is_empty() {
        let available = available_extensions(&release.dir);
        for name in extensions {
            if !available.contains(name) {
                return Err(format!(
                    "[package] extensions: {name} is not in the release (it has: {})",
                    available.join(", ")
                ));
            }
            let _ = writeln!(ini, "extension={name}");
        }
    }
    for (key, value) in file.ini_table() {
        let plain = |s: &str| !s.contains(['"', '\n', '\r', '\0']) && !s.contains("${");
        if !plain(&key) || !plain(&value) || key.contains(['=', ' ', '[', ']']) {
            return Err(format!(
                "[ini] {key:?} = {value:?}: quotes, newlines and ${{...}} cannot be packed into \
                 php.ini; set it with -d when serving"
            ));
        }
        let _ = writeln!(ini, "{key} = \"{value}\"");
    }
    if !ini.is_empty() {
        ini.insert_str(
            0,
            "; written by ferrophp package from the app's ferrophp.toml\n",
        );
    }
    Ok(ini)
}

/// The `.so` names (without extension) in the release's extension directory.
fn available_extensions(release: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(release.join("lib/php/extensions"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|api| {
            std::fs::read_dir(api.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".so"))
                .map(str::to_owned)
        })
        .filter(|n| n != "opcache")
        .collect();
    names.sort();
    names
}

/// One line for the package's `--help`: the app and how `serve` runs it.
fn summary(name: &str, file: &FileConfig) -> String {
    let mut parts = Vec::new();
    for (setting, path) in file.app_paths() {
        parts.push(format!("{setting} {}", path.display()));
    }
    if parts.is_empty() {
        format!("{name} (classic mode, document root public/ or .)")
    } else {
        format!("{name} ({})", parts.join(", "))
    }
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(path)
    };
    // The directory must exist; the file need not.
    let parent = abs.parent().ok_or("the output has no directory")?;
    let name = abs.file_name().ok_or("the output has no file name")?;
    let parent = parent
        .canonicalize()
        .map_err(|e| format!("output directory {}: {e}", parent.display()))?;
    Ok(parent.join(name))
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}
