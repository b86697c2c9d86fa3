//! Gives the benchmark binaries an rpath to libphp (see php-sys/build.rs), and with
//! libphp linked in statically the exported engine symbols dlopen'd extensions need.
fn main() {
    if let Ok(libdir) = std::env::var("DEP_FERROPHP_WORKER_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    if std::env::var("DEP_FERROPHP_WORKER_LINK").as_deref() == Ok("static") {
        println!("cargo:rustc-link-arg=-Wl,--export-dynamic");
    }
}
