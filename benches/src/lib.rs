//! Shared pieces of ferrophp's benchmarks. The benchmarks themselves live in `benches/`.
