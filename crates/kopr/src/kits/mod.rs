//! Kits built on the framework: children adopted into their owner's
//! lifecycle ([`adopt`](mod@adopt)), manifests applied like `kubectl apply`
//! ([`apply`]), status [`conditions`] with kube's semantics, the operator binary's command line ([`cli`]), deployment
//! manifests ([`manifests`]), running as the operator's own ServiceAccount
//! ([`service_account`]) and the testing kit ([`testing`], with the
//! `embedded` feature).

pub mod adopt;
pub mod apply;
pub mod cli;
pub mod conditions;
#[cfg(feature = "embedded")]
pub mod faults;
pub mod manifests;
pub mod service_account;
#[cfg(feature = "embedded")]
pub mod testing;
