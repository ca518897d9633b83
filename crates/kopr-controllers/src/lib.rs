//! In-process controllers that a real cluster's kube-controller-manager
//! runs: the garbage collector, namespace deletion, default service
//! accounts, the root CA ConfigMap, ClusterRole aggregation, the end of graceful pod deletion,
//! ValidatingAdmissionPolicy status, the APIServices of custom resource
//! groups, and
//! the horizontal pod autoscaler and
//! the workload controllers
//! (Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet,
//! Job, CronJob), the endpoints and endpointslice controllers, the
//! disruption controller (PodDisruptionBudget status), the resource quota
//! controller (ResourceQuota usage), the CSR signer (`certificates`); plus a
//! scheduler. They watch the store's event stream and act through the registry, as a
//! client would. What runs pods on nodes plugs in as a [`NodeAgent`] (the simulated
//! kubelet of `kopr-kubelet`).

// The server's modules these controllers build on, under the names they have in the core
// crate, so `crate::registry::Api` reads the same on both sides of the crate boundary.
pub(crate) use kopr_apiserver_core::{
    admission, bootstrap, crd, cron, gofmt, gojson, hooks, object, quota, registry, resources,
    selectors, status, storage, validation, version, x509,
};

mod admission_policy_status;
pub mod agent;
mod autoscaler;
pub mod certificates;
pub mod clusterrole_aggregation;
pub mod crd_lifecycle;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
pub mod endpoints;
mod garbage_collector;
mod history;
pub mod informer;
mod job;

mod namespace;
pub mod nodes;
mod pod_termination;
pub mod podutil;
pub mod recorder;
mod replicaset;
mod replication;
mod resource_quota;
pub mod root_ca;
pub mod scheduler;
mod service_account;

mod statefulset;
pub mod templates;
pub mod workloads;
pub mod workqueue;
pub mod writes;

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use crate::agent::{AgentFactory, NodeAgent};
use crate::hooks::Started;
use crate::registry::{Api, Target};
use crate::resources::ResourceType;
use crate::storage::WatchEvent;

pub use garbage_collector::GarbageCollector;

/// What the controllers do as the server's post-start hook: their first passes (the
/// aggregated roles, the system namespaces' `kube-root-ca.crt`, the `kubernetes` Service's
/// endpoints) before the first request, then, when `started.controllers`, every controller,
/// with `agent` running the pods of the simulated nodes.
pub async fn post_start(started: &Started, agent: Option<AgentFactory>) {
    let api = &started.api;
    clusterrole_aggregation::sync_all(api).await;
    root_ca::resync(api, &started.ca_pem).await;
    endpoints::apiserver::start(api.clone(), started.addr, started.shutdown.clone()).await;
    if started.controllers {
        spawn_all(
            api.clone(),
            started.shutdown.clone(),
            started.nodes,
            &started.ca_pem,
            started.ca_key_pem.as_deref(),
            agent,
        );
    }
}

/// Starts every controller, with `nodes` simulated nodes, publishing
/// `ca_pem` as the cluster's CA (signing CSRs with `ca_key_pem` when known);
/// they stop when `stop` is cancelled.
pub fn spawn_all(
    api: Api,
    stop: CancellationToken,
    nodes: usize,
    ca_pem: &str,
    ca_key_pem: Option<&str>,
    agent: Option<AgentFactory>,
) {
    let events = api.store.subscribe();
    certificates::spawn(api.clone(), stop.clone(), ca_pem, ca_key_pem);
    workloads::spawn(api.clone(), stop.clone(), nodes, agent);
    resource_quota::spawn(api.clone(), stop.clone());
    autoscaler::spawn(api.clone(), stop.clone());
    tokio::spawn(run(api, events, stop, Arc::from(ca_pem)));
}

async fn run(
    api: Api,
    mut events: broadcast::Receiver<Arc<WatchEvent>>,
    stop: CancellationToken,
    ca: Arc<str>,
) {
    let mut gc = GarbageCollector::new(api.clone());
    crd_lifecycle::resync(&api).await;
    gc.resync().await;
    namespace::resync(&api).await;
    root_ca::resync(&api, &ca).await;
    admission_policy_status::resync(&api).await;
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => {
                crd_lifecycle::observe(&api, &ev);
                gc.observe(&ev).await;
                namespace::observe(&api, &ev);
                service_account::observe(&api, &ev);
                root_ca::observe(&api, &ev, &ca);
                clusterrole_aggregation::observe(&api, &ev).await;
                pod_termination::observe(&api, &ev);
                admission_policy_status::observe(&api, &ev);
                crate::bootstrap::api_services::observe(&api, &ev);
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "controllers fell behind; resyncing");
                gc.resync().await;
                namespace::resync(&api).await;
                root_ca::resync(&api, &ca).await;
                clusterrole_aggregation::sync_all(&api).await;
                admission_policy_status::resync(&api).await;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Splits a storage key into its resource and target.
pub(crate) fn target_of_key(api: &Api, key: &str) -> Option<Target> {
    let parts: Vec<&str> = key.trim_start_matches('/').split('/').collect();
    let (storage, namespace, name) = match parts.as_slice() {
        [g, p, ns, n] => (format!("{g}/{p}"), Some(ns.to_string()), n.to_string()),
        [g, p, n] => (format!("{g}/{p}"), None, n.to_string()),
        _ => return None,
    };
    let rt: Arc<ResourceType> = api.catalog.by_storage(&storage)?;
    Some(Target {
        rt,
        namespace,
        name: Some(name),
    })
}
