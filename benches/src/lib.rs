//! Shared pieces of ferrophp's benchmarks (the load generator the comparison harness uses
//! where wrk cannot measure). The benchmarks themselves live in `benches/` and `src/bin/`.

pub mod load;
