//! Shared pieces of ferrophp's benchmarks: the comparison harness (`compare`, whose binary
//! is `src/bin/compare.rs`), the load generator it uses where wrk cannot measure, and the
//! one-file app benchmark (`package`, binary `src/bin/package.rs`). The
//! criterion benchmarks live in `benches/`, the other binaries in `src/bin/`.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

pub mod compare;
pub mod load;
pub mod package;
