//! The horizontal pod autoscaler controller, as kube-controller-manager's
//! podautoscaler controller: for each HorizontalPodAutoscaler (stored as
//! autoscaling/v2) it reads the target's scale, brings a replica count
//! outside `minReplicas`..`maxReplicas` back within them through the
//! target's scale, and otherwise reports what kube reports when no metrics
//! API is served (always the case here): that no replica count can be
//! computed from the metrics. Status (`AbleToScale` and `ScalingActive`
//! conditions, replicas, `lastScaleTime`, `currentMetrics`) is written
//! through the `status` subresource when it changed; events come from
//! `horizontal-pod-autoscaler`.
//!
//! Event-driven instead of kube's 15 s resync: an autoscaler is synced when
//! it is created or its spec changes, and when its target appears,
//! disappears or its scale (replicas, selector) changes.

mod metrics;
mod reconcile;
mod status;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::recorder::{Recorder, Source};
use super::workqueue::WorkQueue;
use crate::object;
use crate::registry::{Api, ListOptions, Target};
use crate::resources::ResourceType;
use crate::selectors::LabelSelector;
use crate::status::ApiError;
use crate::storage::{EventType, WatchEvent};

/// The storage key prefix of pods.
const PODS: &str = "/core/pods/";

/// What an autoscaler's `scaleTargetRef` names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TargetRef {
    namespace: String,
    api_version: String,
    kind: String,
    name: String,
}

impl TargetRef {
    fn of(hpa: &Value) -> TargetRef {
        let field = |k: &str| {
            hpa.pointer(&format!("/spec/scaleTargetRef/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        TargetRef {
            namespace: object::namespace(hpa).to_string(),
            api_version: field("apiVersion"),
            kind: field("kind"),
            name: field("name"),
        }
    }

    /// Whether objects of `rt` are what this reference names (the version
    /// of `apiVersion` does not matter: kube maps the group and kind).
    fn names_kind(&self, rt: &ResourceType) -> bool {
        let group = reconcile::group_version(&self.api_version)
            .map(|(g, _)| g)
            .ok();
        rt.kind == self.kind && group == Some(rt.group.as_str())
    }
}

#[derive(Default)]
struct State {
    /// Autoscaler key (`namespace/name`) → its target.
    targets: HashMap<String, TargetRef>,
    /// Target (namespace, name) → the autoscalers naming it.
    by_name: HashMap<(String, String), BTreeSet<String>>,
    /// Autoscaler key → the selector of its target's scale, once known
    /// (kube's `hpaSelectors`, for `AmbiguousSelector`).
    selectors: HashMap<String, LabelSelector>,
    /// Autoscalers whose last sync found their pods selected by another
    /// autoscaler too.
    ambiguous: BTreeSet<String>,
}

impl State {
    fn forget(&mut self, key: &str) {
        if let Some(old) = self.targets.remove(key) {
            let at = (old.namespace, old.name);
            if let Some(set) = self.by_name.get_mut(&at) {
                set.remove(key);
                if set.is_empty() {
                    self.by_name.remove(&at);
                }
            }
        }
        self.selectors.remove(key);
        self.ambiguous.remove(key);
    }

    /// The other autoscalers of a namespace whose pods were ambiguous (to
    /// look at again once one of them is gone or its target changed).
    fn ambiguous_in(&self, namespace: &str, except: &str) -> Vec<String> {
        let prefix = format!("{namespace}/");
        self.ambiguous
            .iter()
            .filter(|k| k.starts_with(&prefix) && k.as_str() != except)
            .cloned()
            .collect()
    }

    /// The autoscalers whose targets' selectors pick a pod, when there are
    /// several and one of them does not know yet.
    fn contending_for(&self, namespace: &str, pod: &Value) -> Vec<String> {
        let prefix = format!("{namespace}/");
        let matching: Vec<String> = self
            .selectors
            .iter()
            .filter(|(k, s)| k.starts_with(&prefix) && s.matches(object::labels(pod)))
            .map(|(k, _)| k.clone())
            .collect();
        let unaware = matching.iter().any(|k| !self.ambiguous.contains(k));
        if matching.len() > 1 && unaware {
            matching
        } else {
            Vec::new()
        }
    }

    fn remember(&mut self, key: &str, target: TargetRef) {
        if self.targets.get(key) == Some(&target) {
            return;
        }
        let selector = self.selectors.remove(key);
        let ambiguous = self.ambiguous.contains(key);
        self.forget(key);
        if let Some(s) = selector {
            self.selectors.insert(key.to_string(), s);
        }
        if ambiguous {
            self.ambiguous.insert(key.to_string());
        }
        self.by_name
            .entry((target.namespace.clone(), target.name.clone()))
            .or_default()
            .insert(key.to_string());
        self.targets.insert(key.to_string(), target);
    }
}

/// The controller.
pub struct Autoscaler {
    api: Api,
    hpas: Arc<ResourceType>,
    prefix: String,
    recorder: Recorder,
    source: Source,
    queue: Arc<WorkQueue>,
    state: Mutex<State>,
}

/// Starts the controller; it stops when `stop` is cancelled.
pub fn spawn(api: Api, stop: CancellationToken) {
    let Some(hpas) = api
        .catalog
        .get("autoscaling", "v2", "horizontalpodautoscalers")
    else {
        return;
    };
    let events = api.store.subscribe();
    let controller = Arc::new(Autoscaler {
        prefix: hpas.list_prefix(None),
        recorder: Recorder::spawn(api.clone(), stop.clone()),
        source: Source::component("horizontal-pod-autoscaler"),
        queue: WorkQueue::new("horizontalpodautoscaler", stop.clone()),
        state: Mutex::new(State::default()),
        hpas,
        api,
    });
    tokio::spawn(run(controller, events, stop));
}

async fn run(
    c: Arc<Autoscaler>,
    mut events: broadcast::Receiver<Arc<WatchEvent>>,
    stop: CancellationToken,
) {
    c.resync().await;
    let worker = c.clone();
    c.queue.run(1, move |key| {
        let c = worker.clone();
        async move { c.sync(key).await }
    });
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => c.observe(&ev),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(
                    missed = n,
                    "the autoscaler controller fell behind; relisting"
                );
                c.resync().await;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The `(namespace, name)` of a namespaced object's storage key.
fn namespaced_name(key: &str) -> Option<(&str, &str)> {
    let mut parts = key.trim_start_matches('/').rsplitn(3, '/');
    let name = parts.next()?;
    let namespace = parts.next()?;
    let rest = parts.next()?;
    // `group/plural` before the namespace: four segments in all.
    (rest.split('/').count() == 2).then_some((namespace, name))
}

impl Autoscaler {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Lists every autoscaler, indexes its target and queues it.
    async fn resync(&self) {
        let list = match self
            .api
            .list(&self.hpas, None, &ListOptions::default())
            .await
        {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "listing HorizontalPodAutoscalers failed");
                return;
            }
        };
        let mut fresh = State::default();
        for hpa in &list.items {
            fresh.remember(&key_of(hpa), TargetRef::of(hpa));
        }
        {
            let mut st = self.lock();
            fresh.selectors = std::mem::take(&mut st.selectors);
            fresh.selectors.retain(|k, _| fresh.targets.contains_key(k));
            fresh.ambiguous = std::mem::take(&mut st.ambiguous);
            fresh.ambiguous.retain(|k| fresh.targets.contains_key(k));
            *st = fresh;
        }
        for hpa in &list.items {
            self.queue.add(key_of(hpa));
        }
    }

    /// Routes one committed change: autoscalers to themselves, scale
    /// changes of a target to the autoscalers naming it.
    fn observe(&self, ev: &WatchEvent) {
        if let Some(rest) = ev.key.strip_prefix(self.prefix.as_str()) {
            let key = rest.to_string();
            if ev.event_type == EventType::Deleted {
                let peers = {
                    let mut st = self.lock();
                    st.forget(&key);
                    st.ambiguous_in(object::namespace(&ev.object), &key)
                };
                for peer in peers {
                    self.queue.add(peer);
                }
                return;
            }
            self.lock().remember(&key, TargetRef::of(&ev.object));
            let spec_changed = ev
                .previous
                .as_ref()
                .is_none_or(|p| p.get("spec") != ev.object.get("spec"));
            if spec_changed {
                let peers = self
                    .lock()
                    .ambiguous_in(object::namespace(&ev.object), &key);
                self.queue.add(key);
                for peer in peers {
                    self.queue.add(peer);
                }
            }
            return;
        }
        let Some((namespace, name)) = namespaced_name(&ev.key) else {
            return;
        };
        if ev.key.starts_with(PODS) {
            self.observe_pod(ev, namespace);
            return;
        }
        let candidates: Vec<(String, TargetRef)> = {
            let st = self.lock();
            let Some(keys) = st.by_name.get(&(namespace.to_string(), name.to_string())) else {
                return;
            };
            keys.iter()
                .filter_map(|k| st.targets.get(k).map(|t| (k.clone(), t.clone())))
                .collect()
        };
        let Some(rt) = super::target_of_key(&self.api, &ev.key).map(|t| t.rt) else {
            return;
        };
        let changed = match (ev.event_type, ev.previous.as_deref()) {
            (EventType::Modified, Some(old)) => {
                reconcile::scale_view(&rt, old) != reconcile::scale_view(&rt, &ev.object)
            }
            _ => true,
        };
        if !changed {
            return;
        }
        for (key, target) in candidates {
            if target.names_kind(&rt) {
                self.queue.add(key);
            }
        }
    }

    /// Queues the autoscalers that select a new or relabelled pod when
    /// several do (kube finds them `AmbiguousSelector` on its resync).
    fn observe_pod(&self, ev: &WatchEvent, namespace: &str) {
        let relabelled = ev
            .previous
            .as_ref()
            .is_none_or(|p| object::labels(p) != object::labels(&ev.object));
        if ev.event_type == EventType::Deleted || !relabelled {
            return;
        }
        let contending = self.lock().contending_for(namespace, &ev.object);
        for key in contending {
            self.queue.add(key);
        }
    }

    /// Syncs one autoscaler (`namespace/name`).
    async fn sync(self: Arc<Self>, key: String) -> Result<Option<Duration>, ApiError> {
        let Some((namespace, name)) = key.split_once('/') else {
            return Ok(None);
        };
        let t = Target {
            rt: self.hpas.clone(),
            namespace: Some(namespace.to_string()),
            name: Some(name.to_string()),
        };
        let hpa = match self.api.get(&t).await {
            Ok(h) => h,
            Err(e) if e.code == 404 => {
                tracing::info!(hpa = key, "Horizontal Pod Autoscaler has been deleted");
                self.lock().forget(&key);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        self.reconcile(&key, &hpa).await
    }
}

/// The queue key of an autoscaler.
fn key_of(hpa: &Value) -> String {
    format!("{}/{}", object::namespace(hpa), object::name(hpa))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_keys_split_into_namespace_and_name() {
        assert_eq!(
            namespaced_name("/apps/deployments/ns/web"),
            Some(("ns", "web"))
        );
        assert_eq!(
            namespaced_name("/example.com/widgets/ns/w"),
            Some(("ns", "w"))
        );
        assert_eq!(namespaced_name("/core/nodes/n1"), None);
    }

    #[test]
    fn targets_are_indexed_by_namespace_and_name() {
        let mut st = State::default();
        let t = |name: &str| TargetRef {
            namespace: "ns".into(),
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.into(),
        };
        st.remember("ns/a", t("web"));
        st.remember("ns/b", t("web"));
        assert_eq!(st.by_name[&("ns".into(), "web".into())].len(), 2);
        st.remember("ns/a", t("api"));
        assert_eq!(st.by_name[&("ns".into(), "web".into())].len(), 1);
        st.forget("ns/b");
        assert!(!st.by_name.contains_key(&("ns".into(), "web".into())));
        assert!(st.by_name.contains_key(&("ns".into(), "api".into())));
    }
}
