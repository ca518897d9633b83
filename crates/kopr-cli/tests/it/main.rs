//! End-to-end tests through the built `kopr` binary and real clients (kubectl, Python, Kopf).
//!
//! The crate's integration tests, built as one binary: one link instead of one per file,
//! which keeps a clean build's disk and time down. Each module is one former test file.

mod support;

mod durability;
mod kopf_admission;
mod kubectl;
mod kubectl_admission_policy;
mod kubectl_autoscale;
mod kubectl_certificates;
mod kubectl_crd;
mod kubectl_cronjobs;
mod kubectl_drain;
mod kubectl_endpoints;
mod kubectl_exec;
mod kubectl_kinds;
mod kubectl_node_proxy;
mod kubectl_quotas;
mod kubectl_rbac;
mod kubectl_workload_history;
mod kubectl_workloads;
mod python_client;
