//! What the launcher does when a package runs: check it (release, hash), extract it once
//! into its content-addressed directory, prepare the writable paths in the data
//! directory, and start the packed `ferrophp` through the packed dynamic loader (the
//! machine's own loader and libraries are never used) with the app's directory as the
//! working directory and the packed settings as defaults the command line overrides.
//!
//! ```text
//! myapp                       -> ferrophp serve        (the packed ferrophp.toml; run
//!                                by the app itself, PHP_BINARY, it is `ferrophp` alone)
//! myapp serve --listen ...    -> ferrophp serve --listen ...
//! myapp php-cli bin/console   -> ferrophp php-cli bin/console   (PHP's CLI)
//! myapp php ...               -> ferrophp php-cli ...
//! myapp -r 'echo 1;'          -> ferrophp -r ...       (php's arguments: PHP_BINARY)
//! myapp --help                -> this package's settings, then ferrophp --help
//! myapp --package-info        -> the package's hash, release, directories; exits
//! myapp --data-dir DIR ...    -> the data directory for this run (before the command)
//! ```

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::extract::extract_once;
use crate::format::{io, show, Error, Index, ReleaseId, Result};
use crate::read::{hex, Package};

/// The release directory of the extracted tree, where `ferrophp` finds php.ini,
/// conf.d and its extensions (`/proc/self/exe` names the loader under it).
pub const RELEASE_DIR_ENV: &str = "FERROPHP_RELEASE_DIR";
/// The path that runs this package again (`PHP_BINARY`, `--supervise`'s child).
pub const EXECUTABLE_ENV: &str = "FERROPHP_EXECUTABLE";
/// The packed ferrophp.toml: `serve`'s settings unless `--config`/`FERROPHP_CONFIG`.
pub const PACKAGE_CONFIG_ENV: &str = "FERROPHP_PACKAGE_CONFIG";
/// The extracted app directory (also tells a nested run it is the app's own child).
pub const PACKAGE_ROOT_ENV: &str = "FERROPHP_PACKAGE_ROOT";
/// Where the writable paths live.
pub const DATA_DIR_ENV: &str = "FERROPHP_DATA_DIR";
/// Where packages are extracted.
pub const CACHE_DIR_ENV: &str = "FERROPHP_PACKAGE_CACHE";
/// The dynamic loader inside the tree.
pub const LOADER: &str = "lib/ld-linux-x86-64.so.2";

/// The process environment and arguments the launcher decides from.
pub struct Invocation {
    /// `/proc/self/exe`: the package file itself.
    pub exe: PathBuf,
    /// `argv[0]`.
    pub argv0: OsString,
    /// `argv[1..]`.
    pub args: Vec<OsString>,
    /// The working directory at start.
    pub cwd: PathBuf,
    /// Environment lookups.
    pub env: fn(&str) -> Option<OsString>,
}

/// What to do.
pub enum Outcome {
    /// Replace the launcher with this process.
    Exec(Exec),
    /// Print this and exit 0.
    Print(String),
}

/// A program to exec.
#[derive(Debug)]
pub struct Exec {
    /// The loader's path.
    pub program: PathBuf,
    /// `argv[0]` of the new process.
    pub arg0: OsString,
    /// `argv[1..]`.
    pub args: Vec<OsString>,
    /// Variables set (over the inherited environment).
    pub env: Vec<(String, OsString)>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Text to print before exec (`--help`'s package part).
    pub preface: Option<String>,
}

/// Checks, extracts and plans the run of the package `inv.exe` for a launcher of
/// release `launcher`.
pub fn plan(inv: &Invocation, launcher: &ReleaseId) -> Result<Outcome> {
    let pkg = Package::open(&inv.exe)?;
    pkg.check_release(launcher)?;
    pkg.verify()?;
    let index = pkg.index()?;
    let invoked = invoked_path(inv);

    let mut args: &[OsString] = &inv.args;
    let mut data_dir_arg = None;
    let mut info = false;
    loop {
        match args.first().and_then(|a| a.to_str()) {
            Some("--data-dir") => {
                let dir = args
                    .get(1)
                    .ok_or_else(|| Error::Invalid("--data-dir needs a directory".to_string()))?;
                data_dir_arg = Some(PathBuf::from(dir));
                args = &args[2..];
            }
            Some(a) if a.starts_with("--data-dir=") => {
                data_dir_arg = Some(PathBuf::from(&a["--data-dir=".len()..]));
                args = &args[1..];
            }
            Some("--package-info") => {
                info = true;
                args = &args[1..];
            }
            _ => break,
        }
    }

    let data_dir = data_dir_arg
        .or_else(|| (inv.env)(DATA_DIR_ENV).map(PathBuf::from))
        .map(|d| inv.cwd.join(d))
        .unwrap_or_else(|| {
            let mut name = invoked.file_name().unwrap_or_default().to_os_string();
            name.push(".data");
            invoked.with_file_name(name)
        });
    std::fs::create_dir_all(&data_dir).map_err(io(format!(
        "data directory {} (set {DATA_DIR_ENV} or --data-dir)",
        data_dir.display()
    )))?;
    let data_dir = data_dir.canonicalize().map_err(io(data_dir.display()))?;
    let cache = cache_root(inv, &data_dir);
    // One extraction per package and data directory: the writable links point into it.
    let key = format!(
        "{}-{}",
        pkg.hash_hex(16),
        &hex(blake3::hash(data_dir.as_os_str().as_bytes()).as_bytes())[..12]
    );
    let tree = cache.join(key);
    let extracted = extract_once(&pkg, &index, &tree, &data_dir)?;
    let app = tree.join(OsStr::from_bytes(&index.manifest.app_dir));
    for w in &index.manifest.writable {
        let dir = data_dir.join(OsStr::from_bytes(w));
        std::fs::create_dir_all(&dir).map_err(io(format!("writable path {}", dir.display())))?;
    }

    if info {
        return Ok(Outcome::Print(describe(
            &pkg, &index, &invoked, &tree, &data_dir, extracted,
        )));
    }

    let mut env: Vec<(String, OsString)> = vec![
        (RELEASE_DIR_ENV.into(), tree.clone().into()),
        (EXECUTABLE_ENV.into(), invoked.clone().into()),
        (PACKAGE_ROOT_ENV.into(), app.clone().into()),
        (DATA_DIR_ENV.into(), data_dir.clone().into()),
    ];
    if let Some(config) = &index.manifest.config {
        env.push((
            PACKAGE_CONFIG_ENV.into(),
            tree.join(OsStr::from_bytes(config)).into(),
        ));
    }
    // iconv's converters belong to the packed C library, not the machine's.
    let gconv = tree.join("lib/gconv");
    if gconv.is_dir() {
        env.push(("GCONV_PATH".into(), gconv.into()));
    }
    // PHP's temporary files (uploads, sessions, tempnam) need a directory; an empty
    // container has no /tmp.
    if (inv.env)("TMPDIR").is_none() && !Path::new("/tmp").is_dir() {
        let tmp = data_dir.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(io(tmp.display()))?;
        env.push(("TMPDIR".into(), tmp.into()));
    }
    // A run started by the app itself (PHP_BINARY: Composer's scripts, PHPUnit's
    // separate processes) keeps the directory it was given, and is PHP's CLI when it
    // has no arguments, as `ferrophp` is.
    let started_by_app = (inv.env)(PACKAGE_ROOT_ENV).is_some_and(|root| Path::new(&root) == app);
    let cwd = if started_by_app {
        inv.cwd.clone()
    } else {
        app.clone()
    };

    let mut preface = None;
    let command: Vec<OsString> = match args.first().and_then(|a| a.to_str()) {
        None if started_by_app => Vec::new(),
        None => vec!["serve".into()],
        Some("php") => std::iter::once("php-cli".into())
            .chain(args[1..].iter().cloned())
            .collect(),
        Some("-h" | "--help") => {
            preface = Some(describe(
                &pkg, &index, &invoked, &tree, &data_dir, extracted,
            ));
            args.to_vec()
        }
        Some(_) => args.to_vec(),
    };

    let loader = tree.join(LOADER);
    if !loader.is_file() {
        return Err(Error::Invalid(format!(
            "the package has no dynamic loader ({LOADER})"
        )));
    }
    let mut loader_args: Vec<OsString> = vec![
        "--inhibit-cache".into(),
        "--library-path".into(),
        tree.join("lib").into(),
        "--argv0".into(),
        invoked.clone().into(),
        tree.join("ferrophp").into(),
    ];
    loader_args.extend(command);
    Ok(Outcome::Exec(Exec {
        program: loader,
        arg0: invoked.into(),
        args: loader_args,
        env,
        cwd,
        preface,
    }))
}

/// The path the package was started by, absolute but with its last link not resolved
/// (so `current -> myapp-2` keeps `current`'s data directory): `argv[0]` made absolute,
/// or found on PATH; `/proc/self/exe` when that is not the same file.
fn invoked_path(inv: &Invocation) -> PathBuf {
    let argv0 = Path::new(&inv.argv0);
    let candidate = if inv.argv0.as_bytes().contains(&b'/') {
        Some(clean(&inv.cwd.join(argv0)))
    } else {
        (inv.env)("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| clean(&inv.cwd.join(dir).join(argv0)))
                .find(|p| p.is_file())
        })
    };
    let same_file = |p: &Path| match (std::fs::metadata(p), std::fs::metadata(&inv.exe)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    candidate
        .filter(|p| same_file(p))
        .unwrap_or_else(|| inv.exe.clone())
}

/// `path` without `.` components.
fn clean(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// `$FERROPHP_PACKAGE_CACHE`, else `$XDG_CACHE_HOME/ferrophp/packages`, else
/// `$HOME/.cache/ferrophp/packages`, else `.packages` in the data directory.
fn cache_root(inv: &Invocation, data_dir: &Path) -> PathBuf {
    let non_empty = |k: &str| (inv.env)(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty(CACHE_DIR_ENV) {
        return inv.cwd.join(dir);
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return dir.join("ferrophp/packages");
    }
    if let Some(home) = non_empty("HOME") {
        return home.join(".cache/ferrophp/packages");
    }
    data_dir.join(".packages")
}

fn describe(
    pkg: &Package,
    index: &Index,
    invoked: &Path,
    tree: &Path,
    data_dir: &Path,
    extracted: bool,
) -> String {
    let writable: Vec<String> = index.manifest.writable.iter().map(|w| show(w)).collect();
    format!(
        "package: {}\n\
         app: {}\n\
         release: {}\n\
         hash: {}\n\
         files: {}\n\
         extracted: {}{}\n\
         data: {}\n\
         writable: {}\n\
         config: {}\n",
        invoked.display(),
        index.manifest.summary,
        pkg.release(),
        pkg.hash_hex(32),
        index.entries.len(),
        tree.display(),
        if extracted { " (now)" } else { "" },
        data_dir.display(),
        if writable.is_empty() {
            "(none)".to_string()
        } else {
            writable.join(", ")
        },
        index
            .manifest
            .config
            .as_ref()
            .map_or("(none)".to_string(), |c| tree
                .join(OsStr::from_bytes(c))
                .display()
                .to_string()),
    )
}
