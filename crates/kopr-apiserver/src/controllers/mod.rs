//! In-process controllers that a real cluster's kube-controller-manager
//! runs: the garbage collector, namespace deletion, and default service
//! accounts, and the end of graceful pod deletion. They watch the store's event stream and act through the
//! registry, as a client would.

mod garbage_collector;
mod namespace;
mod pod_termination;
mod service_account;

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::registry::{Api, Target};
use crate::resources::ResourceType;
use crate::storage::WatchEvent;

pub use garbage_collector::GarbageCollector;

/// Starts every controller; they stop when `stop` is cancelled.
pub fn spawn_all(api: Api, stop: CancellationToken) {
    let events = api.store.subscribe();
    tokio::spawn(run(api, events, stop));
}

async fn run(api: Api, mut events: broadcast::Receiver<Arc<WatchEvent>>, stop: CancellationToken) {
    let mut gc = GarbageCollector::new(api.clone());
    crate::crd::controller::resync(&api).await;
    gc.resync().await;
    namespace::resync(&api).await;
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => {
                crate::crd::controller::observe(&api, &ev);
                gc.observe(&ev).await;
                namespace::observe(&api, &ev);
                service_account::observe(&api, &ev);
                pod_termination::observe(&api, &ev);
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "controllers fell behind; resyncing");
                gc.resync().await;
                namespace::resync(&api).await;
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
