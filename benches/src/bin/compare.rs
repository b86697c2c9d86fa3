//! The comparison harness's binary; everything lives in `ferrophp_benches::compare`
//! (benches/src/compare/), whose module doc says what it measures and how.

fn main() -> std::process::ExitCode {
    ferrophp_benches::compare::main()
}
