//! The ReplicationController controller. kube's replication manager is the
//! ReplicaSet controller run over ReplicationControllers through adapters;
//! here it is [`super::replicaset::ReplicaSetController`] with this
//! flavour: the plain label map selector of `spec.selector`, `v1`
//! `ReplicationController` owner references, and events from
//! `replication-controller`. Pods, status (`replicas`,
//! `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas`,
//! `observedGeneration`, the `ReplicaFailure` condition) and events are the
//! ReplicaSet controller's.

use super::informer::{Change, Informer, Kind};
use super::podutil;
use super::replicaset::Flavour;
use super::workqueue::WorkQueue;
use crate::object;

/// core/v1 ReplicationControllers.
pub const REPLICATION_CONTROLLERS: Flavour = Flavour {
    kind: Kind::ReplicationController,
    api_version: "v1",
    kind_name: "ReplicationController",
    component: "replication-controller",
};

/// Queues the ReplicationControllers a cache change concerns: the
/// controller itself, the controller of a pod, or for an active orphan pod
/// every ReplicationController selecting it.
pub fn route(informer: &Informer, queue: &WorkQueue, ch: &Change) {
    match ch.kind {
        Kind::ReplicationController => queue.add(ch.key.clone()),
        Kind::Pod => {
            for o in ch.old.iter().chain(ch.new.iter()) {
                if let Some(("ReplicationController", name)) = podutil::controller_of(o) {
                    queue.add(Kind::ReplicationController.key(object::namespace(o), name));
                }
            }
            let Some(pod) = ch.new.as_deref() else {
                return;
            };
            if podutil::controller_ref(pod).is_some() || !podutil::is_active(pod) {
                return;
            }
            let ns = object::namespace(pod);
            for rc in informer.list(Kind::ReplicationController, Some(ns)) {
                if podutil::map_selector_of(&rc).is_some_and(|s| podutil::selects(&s, pod)) {
                    queue.add(Kind::ReplicationController.key(ns, object::name(&rc)));
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn map_selectors_match_labels() {
        let rc = json!({"spec": {"selector": {"app": "web"}}});
        let Some(sel) = podutil::map_selector_of(&rc) else {
            panic!("selector parses");
        };
        assert!(podutil::selects(
            &sel,
            &json!({"metadata": {"labels": {"app": "web", "x": "y"}}})
        ));
        assert!(!podutil::selects(
            &sel,
            &json!({"metadata": {"labels": {"app": "db"}}})
        ));
        assert!(podutil::map_selector_of(&json!({"spec": {"selector": {"a": 1}}})).is_none());
        assert!(podutil::map_selector_of(&json!({"spec": {}})).is_some_and(|s| s.is_everything()));
    }
}
