//! ferrophp as the `php` command next to the PHP build's own `bin/php`, for the tests that
//! compare the two (php_cli.rs, php_tools.rs, phpt.rs): the ways to call ferrophp as
//! `php`, running one command each way, and the build's `bin/php` to compare with.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The PHP build's prefix (scripts/setup.sh prints it on its last line).
pub fn php_prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup.sh");
        let out = Command::new(setup).output().expect("scripts/setup.sh runs");
        assert!(
            out.status.success(),
            "scripts/setup.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let prefix = stdout
            .lines()
            .last()
            .expect("setup.sh prints the PHP prefix");
        PathBuf::from(prefix.trim())
    })
}

/// The PHP build's own CLI: the same engine, built by PHP's Makefile.
pub fn build_php() -> PathBuf {
    php_prefix().join("bin/php")
}

/// The ferrophp binary under test.
pub fn ferrophp() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ferrophp"))
}

/// A directory holding `php`, a symbolic link to the ferrophp under test (as a user puts
/// one on PATH).
pub fn php_link_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("php-link");
        std::fs::create_dir_all(&dir).unwrap();
        // Made under another name and renamed over: several test binaries may do this at once.
        let tmp = dir.join(format!("php.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(ferrophp(), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("php")).unwrap();
        dir
    })
}

/// One way to run `php`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The PHP build's `bin/php`: the reference.
    BuildPhp,
    /// `ferrophp php-cli ARGS`.
    PhpCli,
    /// `ferrophp ARGS`: what `PHP_BINARY` runs (PHP resolves a link to the real binary).
    Bare,
    /// A link named `php` to ferrophp.
    Link,
}

impl Via {
    /// ferrophp's three ways, each compared with [`Via::BuildPhp`].
    pub const FERROPHP: [Via; 3] = [Via::PhpCli, Via::Bare, Via::Link];

    /// A command running `php` this way; its arguments follow.
    pub fn command(self) -> Command {
        match self {
            Via::BuildPhp => Command::new(build_php()),
            Via::PhpCli => {
                let mut cmd = Command::new(ferrophp());
                cmd.arg("php-cli");
                cmd
            }
            Via::Bare => Command::new(ferrophp()),
            Via::Link => Command::new(php_link_dir().join("php")),
        }
    }
}

/// What one run printed and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Runs `cmd` with `stdin` as its standard input to the end.
    pub fn of(mut cmd: Command, stdin: &[u8]) -> Outcome {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?} starts: {e}"));
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_vec();
        // A writer thread: a child that prints a lot before reading must not block on us.
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&stdin);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        Outcome {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Both streams with `from` replaced by `to` (a path that must differ between ways).
    pub fn replace(mut self, from: &str, to: &str) -> Outcome {
        self.stdout = self.stdout.replace(from, to);
        self.stderr = self.stderr.replace(from, to);
        self
    }
}
