//! Gives this crate's test binaries an rpath to libphp (and, with libphp linked in
//! statically, the exported engine symbols dlopen'd extensions need), and passes the
//! libdir and link mode on to dependents (DEP_FERROPHP_WORKER_LIBDIR, _LINK) so the
//! `ferrophp` binary gets the same; and tells the crate whether PHP's CLI SAPI was built.
fn main() {
    if let Ok(libdir) = std::env::var("DEP_PHP_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
        println!("cargo:libdir={libdir}");
    }
    // PHP's CLI SAPI (libphp-cli.a) is in the PHP build: `cli::run` can call it.
    println!("cargo:rustc-check-cfg=cfg(php_cli_sapi)");
    if std::env::var_os("DEP_PHP_CLI_SAPI").is_some() {
        println!("cargo:rustc-cfg=php_cli_sapi");
    }
    if let Ok(link) = std::env::var("DEP_PHP_LINK") {
        if link == "static" {
            println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
        }
        println!("cargo:link={link}");
    }
}
