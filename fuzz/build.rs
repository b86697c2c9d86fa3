//! Gives the fuzz targets an rpath to libphp (linked through the worker crate, though
//! no target starts PHP), as server/build.rs does for the binary.
fn main() {
    // Without these, every corpus file written under fuzz/ would rebuild the crate.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_FERROPHP_WORKER_LIBDIR");
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
}
