//! Gives the `ferrophp` binary and its tests an rpath to libphp, so they run without
//! LD_LIBRARY_PATH (the libdir comes from php-sys through the worker crate).
fn main() {
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
}
