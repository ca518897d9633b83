//! The operator's runtime around the reactor: its API client ([`client`]), resolving resources through
//! discovery ([`discovery`]), the namespaces it serves ([`namespaces`]),
//! Kubernetes Events ([`events`]), logging ([`logging`]), leader election on a Lease
//! ([`leader`]) and the admission webhook server ([`webhooks`]). The health and metrics server
//! belongs here.

pub mod client;
pub mod discovery;
pub mod events;
pub mod leader;
pub mod logging;
pub mod namespaces;
pub mod webhooks;
