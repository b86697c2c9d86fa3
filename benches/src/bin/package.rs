//! The one-file app benchmark's binary; everything lives in `ferrophp_benches::package`
//! (benches/src/package.rs), whose module doc says what it measures and how.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

fn main() -> std::process::ExitCode {
    ferrophp_benches::package::main()
}
