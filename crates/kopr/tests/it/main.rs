//! The framework's tests: operators against an in-process kopr-apiserver.
//!
//! The crate's integration tests, built as one binary: one link instead of one per file,
//! which keeps a clean build's disk and time down. Each module is one former test file.

#[path = "../common/mod.rs"]
mod common;

mod admission;
mod background;
mod bad_input;
mod delete_kills;
mod endpoints;
mod faults;
mod filters;
mod handlers;
mod identity;
mod indices;
mod lifecycle;
mod rbac;
mod reconcile;
mod resources;
mod restarts;
mod retries;
mod scale;
mod selection;
mod server_restart;
mod subhandlers;
