//! The operator's runtime around the reactor: its API client ([`client`]), resolving resources through
//! discovery ([`discovery`]), the namespaces it serves ([`namespaces`]),
//! Kubernetes Events ([`events`]) and logging ([`logging`]). Leader
//! election and the health and metrics server belong here.

pub mod client;
pub mod discovery;
pub mod events;
pub mod logging;
pub mod namespaces;
pub mod webhooks;
