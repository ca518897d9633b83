//! What runs beside the request chain, given to the server when it starts: kube-apiserver's
//! post-start hooks (the controllers, which kopr runs in process) and its kubelet connection
//! getter (the [`NodeRuntime`]). The server defines these seams and names no controller;
//! the `kopr-apiserver` crate wires the controllers and the simulated kubelet in.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::authn::service_account::ServiceAccountTokens;
use crate::node_runtime::NodeRuntime;
use crate::registry::Api;

/// What the server has ready when its hooks run: storage and bootstrap objects, before the
/// first request is served.
#[derive(Clone)]
pub struct Started {
    /// The registry.
    pub api: Api,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// The cluster CA certificate (PEM).
    pub ca_pem: Arc<str>,
    /// The cluster CA key (PEM), when the server holds it (it signs approved CSRs).
    pub ca_key_pem: Option<Arc<str>>,
    /// Whether the controllers are to run (`Config::controllers`).
    pub controllers: bool,
    /// How many simulated nodes to create (`Config::nodes`).
    pub nodes: usize,
    /// The service-account token issuer.
    pub tokens: ServiceAccountTokens,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("addr", &self.addr)
            .field("controllers", &self.controllers)
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

/// The pieces a server runs beside its request chain.
///
/// # Guarantees
/// [`Hooks::post_start`] runs once, before the listener serves its first request; the
/// runtime [`Hooks::node_runtime`] returns is asked for every request that reaches a
/// kubelet.
pub trait Hooks: Send + Sync {
    /// Starts what runs beside the server (kube-apiserver's post-start hooks); tasks it
    /// spawns end when `started.shutdown` is cancelled.
    fn post_start<'a>(&'a self, started: &'a Started) -> BoxFuture<'a, ()>;

    /// The kubelets the server reaches (None: none, so every request to one gets "error
    /// dialing backend").
    fn node_runtime(&self, started: &Started) -> Option<Arc<dyn NodeRuntime>>;
}

/// No hooks: the request chain alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn post_start<'a>(&'a self, _started: &'a Started) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn node_runtime(&self, _started: &Started) -> Option<Arc<dyn NodeRuntime>> {
        None
    }
}
