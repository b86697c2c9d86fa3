//! Gives this crate's test binaries an rpath to libphp, and passes the libdir on to
//! dependents (as DEP_FERROPHP_WORKER_LIBDIR) so the `ferrophp` binary gets one too.
fn main() {
    if let Ok(libdir) = std::env::var("DEP_PHP_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
        println!("cargo:libdir={libdir}");
    }
}
