//! Gives the benchmark binaries an rpath to libphp (see php-sys/build.rs).
fn main() {
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
}
