//! Gives the `ferrophp` binary and its tests an rpath to libphp, so they run without
//! LD_LIBRARY_PATH (the libdir comes from php-sys through the worker crate), and, when
//! libphp is linked in statically, exports the engine's symbols for the extensions PHP
//! loads with dlopen (OPcache, APCu...), as PHP's own CLI binary does.
fn main() {
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    if std::env::var("DEP_FERROPHP_WORKER_LINK").as_deref() == Ok("static") {
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
    }
}
