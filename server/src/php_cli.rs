//! `ferrophp php-cli`: runs one script the way the `php` CLI does ($argv/$argc, STDIN,
//! STDOUT and STDERR, exit codes, errors on stderr, `-d` ini overrides), on the same
//! embedded engine the server uses. It accepts what PHP's `run-tests.php` passes to a
//! CLI (`-f FILE`, `-r CODE`, `-q`, `-n`, `-c`, `-d`), so .phpt suites can run on it, plus
//! `-i`, `--ini`, and `-S ADDR:PORT [-t DOCROOT] [ROUTER]`, PHP's development web server
//! (served by ferrophp's own classic-mode server, see [`crate::serve::run_dev`]).

use std::io::Write;
use std::path::PathBuf;

use worker::{
    Disconnected, Engine, EngineConfig, LogTarget, ResponseHead, ResponseSink, ScriptRequest,
};

#[derive(clap::Args)]
#[command(trailing_var_arg = true)]
pub struct Args {
    /// Set an ini entry: `-d key=value` (or `-d key` for `key=1`). Repeatable.
    #[arg(short = 'd', value_name = "KEY=VALUE")]
    define: Vec<String>,
    /// Use this php.ini file or directory.
    #[arg(short = 'c', value_name = "PATH")]
    php_ini: Option<PathBuf>,
    /// Read no php.ini.
    #[arg(short = 'n')]
    no_php_ini: bool,
    /// Parse and execute this file (like `php -f FILE`); the arguments after it are the
    /// script's.
    #[arg(short = 'f', value_name = "FILE", conflicts_with = "code")]
    file: Option<PathBuf>,
    /// Run PHP code without `<?php` tags (like `php -r CODE`).
    #[arg(short = 'r', value_name = "CODE")]
    code: Option<String>,
    /// Accepted for compatibility (the CLI never prints CGI headers anyway).
    #[arg(short = 'q')]
    _quiet: bool,
    /// PHP information (`phpinfo()` as text), like `php -i`.
    #[arg(short = 'i', conflicts_with_all = ["code", "file", "server"])]
    info: bool,
    /// Show the configuration file names, like `php --ini`.
    #[arg(long = "ini", conflicts_with_all = ["code", "file", "server", "info"])]
    show_ini: bool,
    /// Run PHP's development web server on ADDR:PORT (like `php -S`; port 0 picks one).
    /// The script argument, if any, is the router: it runs for every request, and when it
    /// returns false the request is served as if there were no router.
    #[arg(short = 'S', value_name = "ADDR:PORT", conflicts_with_all = ["code", "file"])]
    server: Option<String>,
    /// Document root of the development server [default: the current directory].
    #[arg(short = 't', value_name = "DIR", requires = "server")]
    docroot: Option<PathBuf>,
    /// The script to run (unless `-f` or `-r` named it), then the arguments passed to it
    /// as $argv[1..].
    #[arg(allow_hyphen_values = true)]
    args: Vec<String>,
}

/// A `-r` snippet written to a file for the engine (which runs files), removed on drop.
struct CodeFile(PathBuf);

impl CodeFile {
    fn new(code: &str) -> std::io::Result<CodeFile> {
        let path = std::env::temp_dir().join(format!(
            "ferrophp-r-{}-{}.php",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        std::fs::write(&path, format!("<?php {code}"))?;
        Ok(CodeFile(path))
    }
}

impl Drop for CodeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What the `php` CLI hard-codes, so scripts behave the same here. Errors are logged
/// to stderr (display_errors would write them into stdout under a non-"cli" SAPI name).
const CLI_INI: &[(&str, &str)] = &[
    ("display_errors", "0"),
    ("log_errors", "1"),
    ("html_errors", "0"),
    ("implicit_flush", "1"),
    ("output_buffering", "0"),
    ("max_execution_time", "0"),
    ("max_input_time", "-1"),
    ("register_argc_argv", "1"),
];

pub fn run(mut args: Args) -> i32 {
    if let Some(addr) = args.server.take() {
        return dev_server(args, &addr);
    }
    if args.show_ini {
        return show_ini(&args);
    }
    if args.info {
        args.code = Some("phpinfo();".to_owned());
    }
    // Which file runs, what `$argv[0]` says, and the arguments after it.
    let mut code_file = None;
    let (script, argv0) = if let Some(code) = &args.code {
        match CodeFile::new(code) {
            Ok(f) => {
                let p = f.0.clone();
                code_file = Some(f);
                (p, "Standard input code".to_owned())
            }
            Err(e) => {
                eprintln!("ferrophp: cannot write the -r code to a file: {e}");
                return 1;
            }
        }
    } else if let Some(f) = args.file.take() {
        let name = f.to_string_lossy().into_owned();
        (f, name)
    } else if !args.args.is_empty() {
        let name = args.args.remove(0);
        (PathBuf::from(&name), name)
    } else {
        eprintln!("ferrophp php-cli: no script given (a file, -f FILE or -r CODE)");
        return 1;
    };
    let engine = match start_engine(&args) {
        Some(e) => e,
        None => return 1,
    };

    if !script.is_file() {
        eprintln!("Could not open input file: {}", script.display());
        return 1;
    }
    let script_name = script.to_string_lossy().into_owned();
    let mut request = ScriptRequest::new(script.clone(), Box::new(StdoutSink));
    request.argv = std::iter::once(argv0).chain(args.args).collect();
    request.import_environment = true;
    request.keep_working_directory = true;
    request.define_std_streams = true;
    request.server_vars = [
        "PHP_SELF",
        "SCRIPT_NAME",
        "SCRIPT_FILENAME",
        "PATH_TRANSLATED",
    ]
    .iter()
    .map(|k| (k.to_string(), script_name.clone().into_bytes()))
    .chain(std::iter::once(("DOCUMENT_ROOT".to_string(), Vec::new())))
    .collect();
    request.body = Box::new(std::io::empty());

    let code = match engine.run(request) {
        Ok(outcome) => outcome.exit_status,
        Err(_) => 255,
    };
    engine.shutdown();
    drop(code_file);
    code
}

/// `-d` entries as (key, value), `-d key` meaning `key=1`.
fn defines(args: &Args) -> Vec<(String, String)> {
    args.define
        .iter()
        .map(|d| match d.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.to_owned()),
            None => (d.trim().to_owned(), "1".to_owned()),
        })
        .collect()
}

/// The engine as the `php` CLI configures it: one thread, SAPI "cli", CLI ini values.
fn start_engine(args: &Args) -> Option<Engine> {
    let ini = CLI_INI
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(defines(args))
        .collect();
    match Engine::start(EngineConfig {
        threads: 1,
        ini,
        php_ini: args.php_ini.clone(),
        no_php_ini: args.no_php_ini,
        ini_defaults: Vec::new(),
        workers: Vec::new(),
        log_target: LogTarget::Stderr,
        sapi_name: worker::SapiName::Cli,
        ..EngineConfig::default()
    }) {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!("ferrophp: {e}");
            None
        }
    }
}

/// `--ini`: the four lines `php --ini` prints, from what the engine's start-up read.
fn show_ini(args: &Args) -> i32 {
    let Some(engine) = start_engine(args) else {
        return 1;
    };
    let files = engine.ini_files();
    let none = || "(none)".to_owned();
    print!(
        "Configuration File (php.ini) Path: {}\n\
         Loaded Configuration File:         {}\n\
         Scan for additional .ini files in: {}\n\
         Additional .ini files parsed:      {}\n",
        files.config_file_path,
        files.loaded.unwrap_or_else(none),
        files.scan_dir.unwrap_or_else(none),
        files.scanned.unwrap_or_else(none),
    );
    engine.shutdown();
    0
}

/// `-S ADDR:PORT [-t DOCROOT] [ROUTER]`: PHP's development server, as one ferrophp
/// classic-mode server process. `PHP_CLI_SERVER_WORKERS` sets its PHP threads, as it
/// sets php -S's worker processes.
fn dev_server(args: Args, addr: &str) -> i32 {
    use std::net::ToSocketAddrs;
    let Some(listen) = addr.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        eprintln!("Invalid address: {addr}");
        return 1;
    };
    let root = match &args.docroot {
        Some(dir) if !dir.is_dir() => {
            eprintln!("Directory {} does not exist.", dir.display());
            return 1;
        }
        Some(dir) => dir.clone(),
        None => PathBuf::from("."),
    };
    let router = match args.args.first() {
        Some(r) => {
            let path = PathBuf::from(r);
            if !path.is_file() {
                eprintln!("Cannot open router script: {r}");
                return 1;
            }
            Some(path)
        }
        None => None,
    };
    let threads = std::env::var("PHP_CLI_SERVER_WORKERS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    crate::serve::run_dev(crate::serve::DevServer {
        listen,
        root,
        router,
        threads,
        ini: defines(&args),
        php_ini: args.php_ini,
        no_php_ini: args.no_php_ini,
    })
}

/// Output goes straight to fd 1, unbuffered, so it interleaves correctly with
/// `fwrite(STDOUT, ...)` from the script.
struct StdoutSink;

impl ResponseSink for StdoutSink {
    fn send_head(&mut self, _head: ResponseHead) -> Result<(), Disconnected> {
        Ok(())
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), Disconnected> {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(|_| Disconnected)
    }
}
