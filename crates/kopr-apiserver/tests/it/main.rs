//! kopr-apiserver's tests through kube-rs and raw HTTP against an in-process server.
//!
//! The crate's integration tests, built as one binary: one link instead of one per file,
//! which keeps a clean build's disk and time down. Each module is one former test file.

mod common;

mod audit;
mod autoscaling;
mod certificates;
mod conversion;
mod crd;
mod crd_cel;
mod create_status;
mod cronjobs;
mod crud;
mod disruption;
mod encryption;
mod endpoints;
mod exec;
mod go_values;
mod http2;
mod identity;
mod kinds;
mod lifecycle;
mod no_kubelet;
mod node_proxy;
mod partial_metadata;
mod policies;
mod policy_params;
mod quotas;
mod watch;
mod webhooks;
mod wire;
mod workload_history;
mod workloads;
