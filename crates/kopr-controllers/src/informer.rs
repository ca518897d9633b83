//! A shared in-memory view of the objects the workload controllers, the
//! scheduler and the simulated kubelet read, kept current from the store's
//! event stream like a client-go informer cache. It records the last
//! revision it has applied, so a controller can wait until its own writes
//! are visible before it reads again (which is what kube-controller-manager's
//! "expectations" achieve).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::object;
use crate::registry::{Api, ListOptions};
use crate::storage::{EventType, WatchEvent};

/// The kinds the cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// core/v1 Pods.
    Pod,
    /// apps/v1 ReplicaSets.
    ReplicaSet,
    /// apps/v1 Deployments.
    Deployment,
    /// apps/v1 StatefulSets.
    StatefulSet,
    /// batch/v1 Jobs.
    Job,
    /// apps/v1 DaemonSets.
    DaemonSet,
    /// apps/v1 ControllerRevisions.
    ControllerRevision,
    /// batch/v1 CronJobs.
    CronJob,
    /// core/v1 Nodes.
    Node,
    /// policy/v1 PodDisruptionBudgets.
    PodDisruptionBudget,
    /// core/v1 ReplicationControllers.
    ReplicationController,
    /// core/v1 Services.
    Service,
    /// core/v1 Endpoints.
    Endpoints,
    /// discovery.k8s.io/v1 EndpointSlices.
    EndpointSlice,
}

impl Kind {
    /// Every kind, in listing order.
    pub const ALL: [Kind; 14] = [
        Kind::Node,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::DaemonSet,
        Kind::ControllerRevision,
        Kind::Job,
        Kind::CronJob,
        Kind::Pod,
        Kind::PodDisruptionBudget,
        Kind::ReplicationController,
        Kind::Service,
        Kind::Endpoints,
        Kind::EndpointSlice,
    ];

    /// The storage key prefix of the kind.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Pod => "/core/pods/",
            Kind::ReplicaSet => "/apps/replicasets/",
            Kind::Deployment => "/apps/deployments/",
            Kind::StatefulSet => "/apps/statefulsets/",
            Kind::Job => "/batch/jobs/",
            Kind::DaemonSet => "/apps/daemonsets/",
            Kind::ControllerRevision => "/apps/controllerrevisions/",
            Kind::CronJob => "/batch/cronjobs/",
            Kind::Node => "/core/nodes/",
            Kind::PodDisruptionBudget => "/policy/poddisruptionbudgets/",
            Kind::ReplicationController => "/core/replicationcontrollers/",
            Kind::Service => "/core/services/",
            Kind::Endpoints => "/core/endpoints/",
            Kind::EndpointSlice => "/discovery.k8s.io/endpointslices/",
        }
    }

    /// The API group and plural of the kind.
    pub fn resource(self) -> (&'static str, &'static str) {
        match self {
            Kind::Pod => ("", "pods"),
            Kind::ReplicaSet => ("apps", "replicasets"),
            Kind::Deployment => ("apps", "deployments"),
            Kind::StatefulSet => ("apps", "statefulsets"),
            Kind::Job => ("batch", "jobs"),
            Kind::DaemonSet => ("apps", "daemonsets"),
            Kind::ControllerRevision => ("apps", "controllerrevisions"),
            Kind::CronJob => ("batch", "cronjobs"),
            Kind::Node => ("", "nodes"),
            Kind::PodDisruptionBudget => ("policy", "poddisruptionbudgets"),
            Kind::ReplicationController => ("", "replicationcontrollers"),
            Kind::Service => ("", "services"),
            Kind::Endpoints => ("", "endpoints"),
            Kind::EndpointSlice => ("discovery.k8s.io", "endpointslices"),
        }
    }

    /// The kind a storage key belongs to.
    pub fn of_key(key: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| key.starts_with(k.prefix()))
    }

    /// The storage key of an object of this kind.
    pub fn key(self, namespace: &str, name: &str) -> String {
        match self {
            Kind::Node => format!("{}{name}", self.prefix()),
            _ => format!("{}{namespace}/{name}", self.prefix()),
        }
    }
}

/// One change applied to the cache: the object before and after.
#[derive(Debug, Clone)]
pub struct Change {
    /// The kind of the object.
    pub kind: Kind,
    /// Its storage key.
    pub key: String,
    /// The object before the change (None when it was just created).
    pub old: Option<Arc<Value>>,
    /// The object after the change (None when it was deleted).
    pub new: Option<Arc<Value>>,
}

#[derive(Default)]
struct State {
    objects: HashMap<Kind, BTreeMap<String, Arc<Value>>>,
    /// Controller owner uid → keys of the objects it controls.
    controlled: HashMap<String, BTreeSet<String>>,
    /// Keys of the objects without a controller, by kind (for adoption).
    orphans: HashMap<Kind, BTreeSet<String>>,
}

impl State {
    fn unindex(&mut self, kind: Kind, key: &str, obj: &Value) {
        match super::podutil::controller_uid(obj) {
            Some(uid) => {
                if let Some(set) = self.controlled.get_mut(uid) {
                    set.remove(key);
                    if set.is_empty() {
                        self.controlled.remove(uid);
                    }
                }
            }
            None => {
                if let Some(set) = self.orphans.get_mut(&kind) {
                    set.remove(key);
                }
            }
        }
    }

    fn index(&mut self, kind: Kind, key: &str, obj: &Value) {
        let set = match super::podutil::controller_uid(obj) {
            Some(uid) => self.controlled.entry(uid.to_string()).or_default(),
            None => self.orphans.entry(kind).or_default(),
        };
        set.insert(key.to_string());
    }

    fn put(&mut self, kind: Kind, key: &str, obj: Option<Arc<Value>>) -> Option<Arc<Value>> {
        let old = match &obj {
            Some(o) => self
                .objects
                .entry(kind)
                .or_default()
                .insert(key.to_string(), o.clone()),
            None => self.objects.entry(kind).or_default().remove(key),
        };
        if let Some(o) = &old {
            self.unindex(kind, key, o);
        }
        if let Some(o) = &obj {
            self.index(kind, key, o);
        }
        old
    }
}

/// The cache.
pub struct Informer {
    api: Api,
    state: Mutex<State>,
    revision: watch::Sender<i64>,
}

impl Informer {
    /// An empty cache over the registry.
    pub fn new(api: Api) -> Arc<Informer> {
        let (revision, _) = watch::channel(0);
        Arc::new(Informer {
            api,
            state: Mutex::new(State::default()),
            revision,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Lists every kind from storage and replaces the cache's contents.
    /// Returns the changes made, and for each kind the revision its list was
    /// read at (events at or below it are already reflected).
    pub async fn resync(&self) -> (Vec<Change>, HashMap<Kind, i64>) {
        let mut lists = Vec::new();
        let mut revisions = HashMap::new();
        for kind in Kind::ALL {
            let (group, plural) = kind.resource();
            let Some(rt) = self.api.catalog.get(group, "v1", plural) else {
                continue;
            };
            match self.api.list(&rt, None, &ListOptions::default()).await {
                Ok(list) => {
                    revisions.insert(kind, list.resource_version);
                    lists.push((kind, list.items));
                }
                Err(e) => {
                    tracing::warn!(?kind, error = %e, "listing for the workload cache failed")
                }
            }
        }
        let mut changes = Vec::new();
        let mut st = self.lock();
        for (kind, items) in lists {
            let mut fresh = BTreeMap::new();
            for item in items {
                let key = kind.key(object::namespace(&item), object::name(&item));
                fresh.insert(key, item);
            }
            let stale: Vec<String> = st
                .objects
                .get(&kind)
                .map(|m| {
                    m.keys()
                        .filter(|k| !fresh.contains_key(*k))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            for key in stale {
                let old = st.put(kind, &key, None);
                changes.push(Change {
                    kind,
                    key,
                    old,
                    new: None,
                });
            }
            for (key, obj) in fresh {
                let old = st.put(kind, &key, Some(obj.clone()));
                changes.push(Change {
                    kind,
                    key,
                    old,
                    new: Some(obj),
                });
            }
        }
        drop(st);
        if let Some(min) = revisions.values().min() {
            self.revision.send_modify(|r| *r = (*r).max(*min));
        }
        (changes, revisions)
    }

    /// Applies one committed change; returns what changed for a cached kind.
    pub fn apply(&self, ev: &WatchEvent) -> Option<Change> {
        let kind = Kind::of_key(&ev.key)?;
        let new = match ev.event_type {
            EventType::Deleted => None,
            _ => Some(ev.object.clone()),
        };
        let old = self.lock().put(kind, &ev.key, new.clone());
        Some(Change {
            kind,
            key: ev.key.clone(),
            old,
            new,
        })
    }

    /// Records that every change up to `revision` has been applied.
    pub fn mark(&self, revision: i64) {
        self.revision.send_if_modified(|r| {
            if revision > *r {
                *r = revision;
                true
            } else {
                false
            }
        });
    }

    /// Waits (up to a few seconds) until changes up to `revision` are applied.
    pub async fn wait_for(&self, revision: i64) {
        let mut rx = self.revision.subscribe();
        let wait = rx.wait_for(|r| *r >= revision);
        let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
    }

    /// Waits until the cache reflects every write committed so far.
    pub async fn catch_up(&self) {
        self.wait_for(self.api.store.current_revision()).await;
    }

    /// An object by key.
    pub fn get_key(&self, key: &str) -> Option<Arc<Value>> {
        let kind = Kind::of_key(key)?;
        self.lock().objects.get(&kind)?.get(key).cloned()
    }

    /// An object by kind, namespace and name.
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.get_key(&kind.key(namespace, name))
    }

    /// The objects of a kind, in one namespace or all.
    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let st = self.lock();
        let Some(map) = st.objects.get(&kind) else {
            return Vec::new();
        };
        match namespace {
            Some(ns) if kind != Kind::Node => {
                let prefix = format!("{}{ns}/", kind.prefix());
                map.range(prefix.clone()..)
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .map(|(_, v)| v.clone())
                    .collect()
            }
            _ => map.values().cloned().collect(),
        }
    }

    /// The objects of a kind in a namespace that have no controller.
    pub fn orphans(&self, kind: Kind, namespace: &str) -> Vec<Arc<Value>> {
        let st = self.lock();
        let (Some(keys), Some(map)) = (st.orphans.get(&kind), st.objects.get(&kind)) else {
            return Vec::new();
        };
        let prefix = kind.key(namespace, "");
        keys.range(prefix.clone()..)
            .take_while(|k| k.starts_with(&prefix))
            .filter_map(|k| map.get(k).cloned())
            .collect()
    }

    /// The objects of a kind whose controller has the uid.
    pub fn controlled_by(&self, kind: Kind, uid: &str) -> Vec<Arc<Value>> {
        let st = self.lock();
        let Some(keys) = st.controlled.get(uid) else {
            return Vec::new();
        };
        let Some(map) = st.objects.get(&kind) else {
            return Vec::new();
        };
        keys.iter()
            .filter(|k| k.starts_with(kind.prefix()))
            .filter_map(|k| map.get(k).cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_are_indexed_by_controller_or_as_orphans() {
        let mut st = State::default();
        let pod = |owner: Option<&str>| {
            let refs: Vec<Value> = owner
                .map(|uid| json!({"kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}))
                .into_iter()
                .collect();
            Arc::new(json!({"metadata": {"ownerReferences": refs}}))
        };
        let key = Kind::Pod.key("ns", "p");
        st.put(Kind::Pod, &key, Some(pod(None)));
        assert!(st.orphans[&Kind::Pod].contains(&key));
        st.put(Kind::Pod, &key, Some(pod(Some("u1"))));
        assert!(!st.orphans[&Kind::Pod].contains(&key));
        assert!(st.controlled["u1"].contains(&key));
        st.put(Kind::Pod, &key, Some(pod(None)));
        assert!(st.orphans[&Kind::Pod].contains(&key));
        assert!(!st.controlled.contains_key("u1"));
        st.put(Kind::Pod, &key, None);
        assert!(st.orphans[&Kind::Pod].is_empty());
    }
}
