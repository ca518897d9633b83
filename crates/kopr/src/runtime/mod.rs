//! The operator's runtime around the reactor: its API client ([`client`]), resolving resources through
//! discovery ([`discovery`]), the namespaces it serves ([`namespaces`]),
//! Kubernetes Events ([`events`]), logging ([`logging`]), giving freed memory back ([`memory`]), leader election on a Lease
//! ([`leader`]), sharding over active replicas ([`shards`]), the admission webhook server ([`webhooks`]), and the health and metrics
//! endpoints ([`endpoints`], [`metrics`]).

pub mod client;
pub mod discovery;
pub mod endpoints;
pub mod events;
pub mod leader;
pub mod logging;
pub(crate) mod membership;
pub(crate) mod memory;
pub mod metrics;
pub mod namespaces;
pub mod shards;
pub mod webhooks;
