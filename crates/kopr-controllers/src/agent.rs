//! The seam between the workload controllers and the agent that runs pods on nodes: the
//! simulated kubelet (crate `kopr-kubelet`) implements [`NodeAgent`], and the workload
//! router hands it the pods it runs. Without an agent, nothing runs pods: they stay as the
//! scheduler left them, as on nodes whose kubelet is down.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::informer::Informer;
use crate::recorder::Recorder;
use crate::registry::Api;
use crate::status::ApiError;

/// What runs the pods bound to some nodes.
///
/// # Guarantees
/// [`NodeAgent::sync`] is called for a pod key after a change to a pod that
/// [`NodeAgent::runs`] claimed, and again after the delay a sync returns; never twice at
/// once for one key.
pub trait NodeAgent: Send + Sync + 'static {
    /// Whether the agent runs this pod (it is bound to one of its nodes).
    fn runs(&self, pod: &Value) -> bool;

    /// Brings the pod at `key` (its storage key) to the state its node would give it;
    /// returns when to look again, if the pod's state changes by itself (a container
    /// finishing, a back-off ending).
    fn sync(&self, key: String) -> BoxFuture<'_, Result<Option<Duration>, ApiError>>;
}

/// Makes the node agent once the controllers' informer and event recorder exist.
pub type AgentFactory =
    Arc<dyn Fn(Api, Arc<Informer>, Recorder) -> Arc<dyn NodeAgent> + Send + Sync>;
