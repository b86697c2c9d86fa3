//! `ferrophp php-cli`: runs one script the way the `php` CLI does ($argv/$argc, STDIN,
//! STDOUT and STDERR, exit codes, errors on stderr, `-d` ini overrides), on the same
//! embedded engine the server uses. It accepts what PHP's `run-tests.php` passes to a
//! CLI (`-f FILE`, `-r CODE`, `-q`, `-n`, `-c`, `-d`), so .phpt suites can run on it.

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
    let mut ini: Vec<(String, String)> = CLI_INI
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for d in &args.define {
        match d.split_once('=') {
            Some((k, v)) => ini.push((k.trim().to_owned(), v.to_owned())),
            None => ini.push((d.trim().to_owned(), "1".to_owned())),
        }
    }
    let engine = match Engine::start(EngineConfig {
        threads: 1,
        ini,
        php_ini: args.php_ini,
        no_php_ini: args.no_php_ini,
        ini_defaults: Vec::new(),
        workers: Vec::new(),
        log_target: LogTarget::Stderr,
        cli: true,
        ..EngineConfig::default()
    }) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ferrophp: {e}");
            return 1;
        }
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
