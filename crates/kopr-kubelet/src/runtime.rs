//! The simulated kubelet as the API server reaches it: the server's
//! [`NodeRuntime`] for the nodes carrying the [`super::nodes::SIMULATED`] annotation. Logs
//! come from the simulation's rules, a command runs in the container's simulated file tree
//! ([`super::exec`]), a forwarded port reaches the pod's simulated listeners ([`ports`]),
//! and the node proxy reaches the kubelet's HTTP endpoints ([`server`]).

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::exec::Process;
use super::files::Containers;
use super::{nodes, ports, server, volumes};
use crate::authn::service_account::ServiceAccountTokens;
use crate::node_runtime::{
    Container, Instance, LogLine, NodeRuntime, NodeView, ProxyRequest, Stream,
};
use crate::registry::Api;
use crate::simulation;

/// The simulated nodes' kubelets.
#[derive(Clone)]
pub struct SimulatedNodes {
    api: Api,
    tokens: Option<ServiceAccountTokens>,
    containers: Arc<Containers>,
}

impl SimulatedNodes {
    /// The kubelets of the simulated nodes of `api`'s cluster; `tokens` issues the
    /// service-account tokens projected into containers.
    pub fn new(api: Api, tokens: Option<ServiceAccountTokens>) -> Arc<SimulatedNodes> {
        let containers = Containers::new(api.store.subscribe());
        Arc::new(SimulatedNodes {
            api,
            tokens,
            containers,
        })
    }

    /// A process of the container, in its file tree (made on first use).
    async fn process(
        &self,
        container: &Container,
        stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
        out: mpsc::Sender<(Stream, Bytes)>,
    ) -> Process {
        let fs = match self.containers.get(&container.id) {
            Some(fs) => fs,
            None => {
                let tree = volumes::initial_tree(
                    &self.api,
                    self.tokens.as_ref(),
                    &container.pod,
                    &container.spec,
                )
                .await;
                self.containers
                    .insert(&container.id, crate::object::uid(&container.pod), tree)
            }
        };
        let env = volumes::environment(&self.api, &container.pod, &container.spec).await;
        let cwd = container
            .spec
            .get("workingDir")
            .and_then(Value::as_str)
            .filter(|d| d.starts_with('/'))
            .unwrap_or("/")
            .to_string();
        Process::new(fs, env, cwd, volumes::hostname(&container.pod), stdin, out)
    }
}

impl NodeRuntime for SimulatedNodes {
    fn serves(&self, node: &Value) -> bool {
        nodes::is_simulated(node)
    }

    fn log(&self, pod: &Value, container: &Value, init: bool, instance: &Instance) -> Vec<LogLine> {
        simulation::instance_log(pod, container, init, instance)
    }

    fn exec(
        &self,
        container: Container,
        command: Vec<String>,
        stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
        out: mpsc::Sender<(Stream, Bytes)>,
    ) -> BoxFuture<'static, i32> {
        let this = self.clone();
        Box::pin(async move {
            let mut p = this.process(&container, stdin, out).await;
            p.run(&command).await
        })
    }

    fn port_refusal(&self, pod: &Value, port: u16) -> Option<String> {
        (!ports::declares(pod, port)).then(|| ports::refused(pod, port))
    }

    fn forward(
        &self,
        _pod: &Value,
        _port: u16,
        input: mpsc::UnboundedReceiver<Bytes>,
        output: mpsc::Sender<Bytes>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(ports::serve(input, output))
    }

    fn proxy(&self, request: &ProxyRequest<'_>, view: &NodeView<'_>) -> http::Response<Vec<u8>> {
        server::serve(request, view)
    }
}
