//! The simulated kubelet of every node carrying the
//! [`nodes::SIMULATED`] annotation. It runs no processes: it keeps,
//! for each pod bound to such a node, the state a kubelet and its container
//! runtime would have (image pulls, container instances, restarts and their
//! back-off) and posts the pod status and Events a kubelet posts, with the
//! kubelet's reasons and messages:
//!
//! - image pulls: `Pulling` / `Pulled` (`Container image "…" already present
//!   on machine` once a node has the image); a `:missing` tag fails with
//!   `ErrImagePull`, then waits in `ImagePullBackOff` (`Back-off pulling
//!   image "…"`), retried after 10 s, 20 s, … up to 300 s;
//! - containers: `Created` / `Started`; a container that exits is restarted
//!   according to the restart policy, immediately the first time and then
//!   after the kubelet's crash-loop back-off (10 s doubling to 300 s), with
//!   `CrashLoopBackOff` and `back-off 10s restarting failed container=C
//!   pod=P_NS(UID)`;
//! - pod status: phase, `PodReadyToStartContainers`, `Initialized`,
//!   `ContainersReady`, `Ready`, container statuses (state, lastState,
//!   ready, started, restartCount, image, imageID, containerID), pod IPs
//!   from the node's pod CIDR, host IP, start time;
//! - deletion: `Killing` (`Stopping container C`), containers stop (at once,
//!   or when the grace period ends for containers that ignore SIGTERM), the
//!   pod reaches a terminal phase and is deleted with a zero grace period.
//!
//! Work is driven by pod changes and by timers for real delays only (pulls,
//! run times, back-offs); an idle running pod costs nothing.
//!
//! Its HTTP server ([`server`]) answers what kube-apiserver's node proxy
//! forwards: health, the node's pods, and resource usage that is synthesized
//! from what the simulation knows ([`stats`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};

// The server's modules and the controllers' toolkit this kubelet builds on, under the names
// they have in their own crates.
pub(crate) use kopr_apiserver_core::{
    authn, gojson, node_runtime, object, quantity, registry, reviews, status, storage,
};
pub(crate) use kopr_controllers::{informer, nodes, podutil, recorder, writes};

use crate::informer::{Informer, Kind};
use crate::podutil::{after, go_duration, rfc3339};
use crate::recorder::{Recorder, Source};
use crate::registry::Api;
use crate::simulation::Behavior;
use crate::status::ApiError;
use crate::writes::Part;

mod container;
pub mod exec;
pub mod files;
pub mod filters;
mod node;
mod pod;
pub mod ports;
pub mod resource_metrics;
pub mod runtime;
pub mod server;
pub mod shell;
pub mod simulation;
pub mod stats;
pub mod summary;
pub mod tar;
#[cfg(test)]
mod tests;
pub mod volumes;

#[allow(unused_imports)]
pub use self::container::*;
#[allow(unused_imports)]
pub use self::node::*;
#[allow(unused_imports)]
pub use self::pod::*;

#[derive(Default)]
struct State {
    pods: HashMap<String, PodRt>,
    nodes: HashMap<String, NodeRt>,
}

/// The simulated kubelet of all simulated nodes.
pub struct Kubelet {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    state: Mutex<State>,
}

/// What one sync decided, computed under the lock.
struct Plan {
    events: Vec<Ev>,
    wake: Option<jiff::Timestamp>,
    status: Option<Value>,
    delete: bool,
    uid: String,
    node: String,
}

impl kopr_controllers::NodeAgent for Kubelet {
    fn runs(&self, pod: &Value) -> bool {
        Kubelet::runs(self, pod)
    }

    fn sync(
        &self,
        key: String,
    ) -> futures::future::BoxFuture<'_, Result<Option<Duration>, ApiError>> {
        Box::pin(Kubelet::sync(self, key))
    }
}

/// The simulated kubelet as the controllers' node agent.
pub fn agent() -> kopr_controllers::AgentFactory {
    Arc::new(
        |api, informer, recorder| -> Arc<dyn kopr_controllers::NodeAgent> {
            Kubelet::new(api, informer, recorder)
        },
    )
}

impl Kubelet {
    /// A kubelet working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Kubelet> {
        Arc::new(Kubelet {
            api,
            informer,
            recorder,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether a pod is bound to a node this kubelet runs.
    pub fn runs(&self, pod: &Value) -> bool {
        let node = podutil::str_at(pod, "/spec/nodeName");
        !node.is_empty()
            && self
                .informer
                .get(Kind::Node, "", node)
                .is_some_and(|n| nodes::is_simulated(&n))
    }

    fn forget(&self, key: &str) {
        let mut st = self.lock();
        let State { pods, nodes } = &mut *st;
        if let Some(rt) = pods.remove(key)
            && let Some(n) = nodes.get_mut(&rt.node)
            && !rt.terminal
        {
            n.release(rt.ip.as_deref(), rt.host_network);
        }
    }

    fn plan(&self, key: &str, pod: &Value, node: &Value) -> Plan {
        let node_name = object::name(node).to_string();
        let host_ip = nodes::internal_ip(node).unwrap_or("").to_string();
        let uid = object::uid(pod).to_string();
        let now = podutil::now();
        let mut st = self.lock();
        let State {
            pods,
            nodes: node_rts,
        } = &mut *st;
        if !node_rts.contains_key(&node_name) {
            let all = self.informer.list(Kind::Pod, None);
            node_rts.insert(node_name.clone(), NodeRt::new(node, &all));
        }
        let stale = pods.get(key).is_some_and(|rt| rt.uid != uid);
        if stale
            && let Some(old) = pods.remove(key)
            && let Some(n) = node_rts.get_mut(&old.node)
            && !old.terminal
        {
            n.release(old.ip.as_deref(), old.host_network);
        }
        let Some(nrt) = node_rts.get_mut(&node_name) else {
            return Plan {
                events: Vec::new(),
                wake: None,
                status: None,
                delete: false,
                uid,
                node: node_name,
            };
        };
        let rt = pods.entry(key.to_string()).or_insert_with(|| {
            let mut rt = PodRt::new(pod);
            rt.seed_conditions(pod);
            if let Some(ip) = &rt.ip {
                nrt.reserve(ip);
            }
            rt
        });
        let mut events = Vec::new();
        let wake = rt.advance(pod, nrt, now, &mut events);
        let fields = rt.status(pod, &host_ip, now);
        let status = if rt.last_written.as_ref() == Some(&fields) {
            None
        } else {
            let merged = merge_status(pod.get("status"), &fields);
            let current = pod.get("status").cloned().unwrap_or(Value::Null);
            let same = podutil::normalized::<k8s_openapi::api::core::v1::PodStatus>(&merged)
                == podutil::normalized::<k8s_openapi::api::core::v1::PodStatus>(&current);
            if same {
                rt.last_written = Some(fields);
                None
            } else {
                Some(fields)
            }
        };
        let delete = rt.terminal && object::is_deleting(pod);
        Plan {
            events,
            wake,
            status,
            delete,
            uid,
            node: node_name,
        }
    }

    /// Brings one pod's simulated state and its status up to date.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(pod) = self.informer.get_key(&key) else {
            self.forget(&key);
            return Ok(None);
        };
        let node_name = podutil::str_at(&pod, "/spec/nodeName");
        let Some(node) = self
            .informer
            .get(Kind::Node, "", node_name)
            .filter(|n| nodes::is_simulated(n))
        else {
            return Ok(None);
        };
        let plan = self.plan(&key, &pod, &node);
        let source = Source {
            component: "kubelet",
            host: Some(plan.node.clone()),
        };
        for e in plan.events {
            self.recorder
                .event(&pod, e.path, e.warning, e.reason, e.message, &source);
        }
        let Some(target) = writes::target_of(&self.api, Kind::Pod, &pod) else {
            return Ok(None);
        };
        if let Some(fields) = plan.status {
            let written = writes::update_same_uid(
                &self.api,
                &target,
                Part::Status,
                "kubelet",
                &plan.uid,
                |cur| {
                    let mut p = cur.clone();
                    p["status"] = merge_status(cur.get("status"), &fields);
                    Ok(p)
                },
            )
            .await;
            match written {
                Ok(_) => {
                    let mut st = self.lock();
                    if let Some(rt) = st.pods.get_mut(&key).filter(|rt| rt.uid == plan.uid) {
                        rt.last_written = Some(fields);
                    }
                }
                Err(e) if e.code == 404 => {
                    self.forget(&key);
                    return Ok(None);
                }
                Err(e) if e.code == 409 => return Ok(Some(Duration::from_millis(50))),
                Err(e) => return Err(e),
            }
        }
        if plan.delete {
            writes::delete_same_uid(&self.api, &target, &plan.uid, Some(0)).await?;
        }
        Ok(plan
            .wake
            .map(|t| podutil::until(t, podutil::now()) + Duration::from_millis(2)))
    }
}

/// The pod status with the kubelet's fields replaced and the conditions of
/// others (the scheduler's `PodScheduled`, …) kept.
fn merge_status(current: Option<&Value>, fields: &Value) -> Value {
    let mut out: Map<String, Value> = current
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut conds: Vec<Value> = fields
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in current
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if !KUBELET_CONDITIONS.contains(&ty) {
            conds.push(c.clone());
        }
    }
    if let Some(f) = fields.as_object() {
        for (k, v) in f {
            out.insert(k.clone(), v.clone());
        }
    }
    out.insert("conditions".into(), Value::Array(conds));
    Value::Object(out)
}
