//! The greeting operator's tests: its command line, a run against the embedded server, end to end.
//!
//! The crate's integration tests, built as one binary: one link instead of one per file,
//! which keeps a clean build's disk and time down. Each module is one former test file.

mod cli;
mod e2e;
mod run;
