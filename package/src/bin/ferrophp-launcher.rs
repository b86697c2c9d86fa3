//! The front of every package: a static executable (no dynamic loader, no C library
//! needed from the machine) that checks the file it is part of, extracts it once and
//! execs the packed `ferrophp` through the packed loader ([`ferrophp_package::launch`]).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

use std::io::Write;
use std::os::unix::process::CommandExt;

use ferrophp_package::launch::{plan, Invocation, Outcome};
use ferrophp_package::ReleaseId;

/// The release this launcher was built for (`scripts/release.sh` sets it); a package
/// whose payload names another is refused.
const RELEASE: &str = match option_env!("FERROPHP_RELEASE_ID") {
    Some(id) => id,
    None => "unreleased",
};

fn main() {
    let mut argv = std::env::args_os();
    let argv0 = argv.next().unwrap_or_default();
    let name = std::path::Path::new(&argv0)
        .file_name()
        .map_or_else(|| "package".into(), |n| n.to_string_lossy().into_owned());
    let fail = |message: String| -> ! {
        eprintln!("{name}: {message}");
        std::process::exit(2);
    };
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| fail(format!("cannot find its own file (/proc/self/exe): {e}")));
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let release = ReleaseId::new(RELEASE).unwrap_or_else(|e| fail(e.to_string()));
    let invocation = Invocation {
        exe,
        argv0,
        args: argv.collect(),
        cwd,
        env: |key| std::env::var_os(key),
    };
    match plan(&invocation, &release) {
        Ok(Outcome::Print(text)) => {
            print!("{text}");
        }
        Ok(Outcome::Exec(exec)) => {
            if let Some(text) = &exec.preface {
                println!("{text}");
                let _ = std::io::stdout().flush();
            }
            let err = std::process::Command::new(&exec.program)
                .arg0(&exec.arg0)
                .args(&exec.args)
                .envs(exec.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&exec.cwd)
                .exec();
            let hint = if err.kind() == std::io::ErrorKind::PermissionDenied {
                " (is the cache directory on a noexec mount? Docker's --tmpfs is noexec \
                 unless given `:exec`; set FERROPHP_PACKAGE_CACHE elsewhere)"
            } else {
                ""
            };
            fail(format!(
                "cannot start {}: {err}{hint}",
                exec.program.display()
            ));
        }
        Err(e) => fail(e.to_string()),
    }
}
