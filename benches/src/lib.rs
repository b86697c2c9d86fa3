//! Shared pieces of ferrophp's benchmarks: the comparison harness (`compare`, whose binary
//! is `src/bin/compare.rs`) and the load generator it uses where wrk cannot measure. The
//! criterion benchmarks live in `benches/`, the other binaries in `src/bin/`.

pub mod compare;
pub mod load;
