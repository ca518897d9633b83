//! kopr-apiserver: an embedded, single-process, Kubernetes-compatible API server with
//! SQLite storage, behaving as kube-apiserver 1.32, with the controllers a cluster runs and
//! a simulated kubelet. Real clients (kubectl, kube-rs, the Python client) talk to it over
//! HTTPS as to a real cluster.
//!
//! # Design
//! 1. `kopr-apiserver-core`: the request chain (http → authn → authz → admission → registry
//!    → storage → watch), each stage importing only downward (checked by
//!    `cargo run -p xtask -- layering`), and the kinds it serves.
//! 2. A kind is one value (`KindDef`) in its API group's module under the core's `kinds/`:
//!    names, scope, subresources, strategy, decoding, validation, defaults, printer, field
//!    labels. The stages look kinds up and never name one; a new kind goes there.
//! 3. `kopr-controllers`: the controllers of kube-controller-manager and the scheduler,
//!    acting through the registry as clients do; `kopr-kubelet`: the simulated kubelet.
//! 4. This crate wires them: the controllers run as the server's post-start hooks with the
//!    kubelet as their node agent, and the kubelet is the server's `NodeRuntime` (logs,
//!    exec, attach, port-forward, node proxy).
//!
//! ```no_run
//! # async fn run() -> Result<(), kopr_apiserver::ServerError> {
//! let server = kopr_apiserver::ApiServer::start(kopr_apiserver::Config::ephemeral()).await?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use futures::future::BoxFuture;
use kopr_apiserver_core::hooks::{Hooks, Started};
use kopr_apiserver_core::node_runtime::NodeRuntime;

/// The request chain and its kinds, for in-process use of [`ApiServer::api`].
pub use kopr_apiserver_core as core;
pub use kopr_apiserver_core::server::{
    DEFAULT_HISTORY_RETENTION, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_NODES,
    DEFAULT_READ_HEADER_TIMEOUT,
};
pub use kopr_apiserver_core::{Config, ServerError};

/// A running API server with its controllers and simulated nodes. It dereferences to the
/// core server ([`core::ApiServer`]) for its address, credentials and registry.
#[derive(Debug)]
pub struct ApiServer(kopr_apiserver_core::ApiServer);

impl ApiServer {
    /// Opens storage, prepares credentials, binds the listener, bootstraps, starts the
    /// controllers (when `config.controllers`) and serves. When this returns, the server
    /// answers requests and the kubeconfig is written.
    ///
    /// # Errors
    /// As [`core::ApiServer::start`]: storage, credentials, the listener, the data
    /// directory's lock, bootstrap objects, the token, audit or encryption files.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), kopr_apiserver::ServerError> {
    /// let server = kopr_apiserver::ApiServer::start(kopr_apiserver::Config::ephemeral()).await?;
    /// assert!(server.url().starts_with("https://127.0.0.1:"));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start(config: Config) -> Result<ApiServer, ServerError> {
        let hooks = Arc::new(InProcess);
        kopr_apiserver_core::ApiServer::start_with(config, hooks)
            .await
            .map(ApiServer)
    }

    /// Stops serving (and the controllers) and waits for the accept loop to end.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), kopr_apiserver::ServerError> {
    /// let server = kopr_apiserver::ApiServer::start(kopr_apiserver::Config::ephemeral()).await?;
    /// server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(self) {
        self.0.shutdown().await;
    }
}

/// The controllers and the simulated kubelet, as the server's hooks.
struct InProcess;

impl Hooks for InProcess {
    fn post_start<'a>(&'a self, started: &'a Started) -> BoxFuture<'a, ()> {
        Box::pin(kopr_controllers::post_start(
            started,
            Some(kopr_kubelet::agent()),
        ))
    }

    fn node_runtime(&self, started: &Started) -> Option<Arc<dyn NodeRuntime>> {
        Some(kopr_kubelet::runtime::SimulatedNodes::new(
            started.api.clone(),
            Some(started.tokens.clone()),
        ))
    }
}

impl std::ops::Deref for ApiServer {
    type Target = kopr_apiserver_core::ApiServer;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}
