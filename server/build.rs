//! Gives the `ferrophp` binary and its tests an rpath to libphp, so they run without
//! LD_LIBRARY_PATH (the libdir comes from php-sys through the worker crate), and, when
//! libphp is linked in statically, exports the engine's symbols for the extensions PHP
//! loads with dlopen (OPcache, APCu...), as PHP's own CLI binary does. Either way it
//! exports `php_cli_get_shell_callbacks` (from libphp-cli.a): the readline extension
//! looks it up with `dlsym(RTLD_DEFAULT, ...)` to install `php -a`'s interactive shell,
//! and without it `ferrophp php-cli -a` says the shell "requires the readline extension".
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=php_cli_get_shell_callbacks");
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    if std::env::var("DEP_FERROPHP_WORKER_LINK").as_deref() == Ok("static") {
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
    }
}
