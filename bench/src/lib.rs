//! Shared pieces of the kopr benchmarks: the workload of `kopr-bench compare-operators`, used
//! by the harness and by the Rust operators it compares.

pub mod workload;
