//! The DaemonSet controller, as kube-controller-manager's: one pod per
//! eligible node (see [`placement`]), created unbound with node affinity
//! pinning it to its node (the scheduler binds it), named `<ds>-<random>`,
//! with a controller owner reference; pods on nodes that should not run
//! one, surplus pods and finished pods are deleted (failed ones with a
//! growing back-off and a `FailedDaemonPod` event). Rolling updates follow
//! `maxUnavailable` or `maxSurge`; `OnDelete` replaces only deleted pods.
//! Template history is kept in ControllerRevisions `<ds>-<hash>` (see
//! [`revisions`]), so `kubectl rollout history|undo|status` work. Status:
//! `desiredNumberScheduled`, `currentNumberScheduled`,
//! `numberMisscheduled`, `numberReady`, `numberAvailable`,
//! `numberUnavailable`, `updatedNumberScheduled`, `observedGeneration`,
//! `collisionCount`. Events: `SuccessfulCreate` (`Created pod: P`),
//! `SuccessfulDelete` (`Deleted pod: P`), `FailedCreate`, `FailedDelete`,
//! `SelectingAll`, `FailedDaemonPod`, `SucceededDaemonPod`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::history;
use super::informer::{Change, Informer, Kind};
use super::podutil::{self, int_at};
use super::recorder::{Recorder, Source};
use super::replicaset::adopt;
use super::writes;
use crate::object;
use crate::registry::Api;
use crate::selectors::LabelSelector;
use crate::status::ApiError;

pub mod placement;
mod pods;
mod revisions;
mod rolling;

/// The controller.
pub struct DaemonSetController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    /// Back-off for deleting failed pods, by `<ds uid>/<node>`.
    failed_backoff: Mutex<HashMap<String, pods::Backoff>>,
}

/// The daemon pods of one DaemonSet by the node each is meant for.
type NodePods = BTreeMap<String, Vec<Arc<Value>>>;

/// Orders a node's daemon pods: bound ones first, then oldest first
/// (`podByCreationTimestampAndPhase`).
fn oldest_first(pods: &mut [Arc<Value>]) {
    pods.sort_by(|a, b| {
        let unbound = |p: &Value| podutil::str_at(p, "/spec/nodeName").is_empty();
        unbound(a)
            .cmp(&unbound(b))
            .then_with(|| podutil::creation_key(a).cmp(&podutil::creation_key(b)))
    });
}

/// Whether a pod carries the current revision's hash (`IsPodUpdated`).
fn is_updated(pod: &Value, hash: &str) -> bool {
    !hash.is_empty() && history::hash_label(pod) == hash
}

fn is_rolling(ds: &Value) -> bool {
    podutil::str_at(ds, "/spec/updateStrategy/type") == "RollingUpdate"
}

impl DaemonSetController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(DaemonSetController {
            api,
            informer,
            recorder,
            source: Source::component("daemonset-controller"),
            failed_backoff: Mutex::new(HashMap::new()),
        })
    }

    fn owner_ref(ds: &Value) -> Value {
        podutil::new_controller_ref(ds, "apps/v1", "DaemonSet")
    }

    /// Reconciles one DaemonSet.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(ds) = self.informer.get_key(&key) else {
            self.gc_backoff();
            return Ok(None);
        };
        let Some(selector) = podutil::selector_of(&ds) else {
            return Ok(None);
        };
        if selector.is_everything() {
            self.recorder.warning(
                &ds,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
                &self.source,
            );
            return Ok(None);
        }
        if object::is_deleting(&ds) {
            return Ok(None);
        }
        let nodes = self.informer.list(Kind::Node, None);
        let (cur, old) = self.construct_history(&ds, &selector).await?;
        let hash = history::hash_label(&cur).to_string();
        self.claim_pods(&ds, &selector).await?;
        let again = self.manage(&ds, &nodes, &hash).await?;
        self.informer.catch_up().await;
        if is_rolling(&ds) {
            self.rolling_update(&ds, &nodes, &hash).await?;
            self.informer.catch_up().await;
        }
        self.cleanup_history(&ds, &old).await?;
        let status_again = self.update_status(&key, &nodes, &hash).await?;
        Ok(match (again, status_again) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Adopts the orphan pods the selector matches.
    async fn claim_pods(&self, ds: &Value, selector: &LabelSelector) -> Result<(), ApiError> {
        let owner = Self::owner_ref(ds);
        let mut adopted = false;
        for orphan in self.informer.orphans(Kind::Pod, object::namespace(ds)) {
            if !object::is_deleting(&orphan) && podutil::selects(selector, &orphan) {
                adopted |= adopt(&self.api, Kind::Pod, &orphan, owner.clone())
                    .await?
                    .is_some();
            }
        }
        if adopted {
            self.informer.catch_up().await;
        }
        Ok(())
    }

    /// The DaemonSet's pods by target node (`getNodesToDaemonPods`);
    /// finished pods being deleted are left out unless `all`.
    fn node_pods(&self, ds: &Value, all: bool) -> NodePods {
        let mut map = NodePods::new();
        for pod in self.informer.controlled_by(Kind::Pod, object::uid(ds)) {
            if !all && podutil::is_terminal(&pod) && object::is_deleting(&pod) {
                continue;
            }
            let Some(node) = placement::target_node(&pod).map(str::to_string) else {
                continue;
            };
            map.entry(node).or_default().push(pod);
        }
        map
    }

    /// Computes and writes the status (`updateDaemonSetStatus`); returns
    /// when a ready pod becomes available.
    async fn update_status(
        &self,
        key: &str,
        nodes: &[Arc<Value>],
        hash: &str,
    ) -> Result<Option<Duration>, ApiError> {
        let Some(ds) = self.informer.get_key(key) else {
            return Ok(None);
        };
        let now = podutil::now();
        let min_ready = int_at(&ds, "/spec/minReadySeconds").unwrap_or(0);
        let mut node_pods = self.node_pods(&ds, false);
        let (mut desired, mut current, mut misscheduled) = (0i64, 0i64, 0i64);
        let (mut ready, mut available, mut updated) = (0i64, 0i64, 0i64);
        let mut again: Option<Duration> = None;
        for node in nodes {
            let fit = placement::node_fit(&ds, node);
            let pods = node_pods
                .get_mut(object::name(node))
                .filter(|p| !p.is_empty());
            if !fit.should_run {
                if pods.is_some() {
                    misscheduled += 1;
                }
                continue;
            }
            desired += 1;
            let Some(pods) = pods else {
                continue;
            };
            current += 1;
            oldest_first(pods);
            let pod = &pods[0];
            if podutil::is_ready(pod) {
                ready += 1;
                match podutil::availability(pod, min_ready, now) {
                    (true, _) => available += 1,
                    (false, Some(wait)) => again = podutil::sooner(again, wait),
                    _ => {}
                }
            }
            if is_updated(pod, hash) {
                updated += 1;
            }
        }
        let mut status = ds.get("status").cloned().unwrap_or_else(|| json!({}));
        if !status.is_object() {
            status = json!({});
        }
        for (k, v) in [
            ("desiredNumberScheduled", desired),
            ("currentNumberScheduled", current),
            ("numberMisscheduled", misscheduled),
            ("numberReady", ready),
        ] {
            status[k] = json!(v);
        }
        for (k, v) in [
            ("numberAvailable", available),
            ("numberUnavailable", desired - available),
            ("updatedNumberScheduled", updated),
        ] {
            match (v, status.as_object_mut()) {
                (0, Some(m)) => {
                    m.remove(k);
                }
                _ => status[k] = json!(v),
            }
        }
        let generation = object::generation(&ds);
        if generation > 0 {
            status["observedGeneration"] = json!(generation);
        }
        type Status = k8s_openapi::api::apps::v1::DaemonSetStatus;
        if !writes::update_status::<Status>(&self.api, Kind::DaemonSet, &ds, &status).await? {
            return Ok(None);
        }
        Ok(again.map(|d| d + Duration::from_secs(1)))
    }
}

/// Queues the DaemonSets a cache change concerns (kube's DaemonSet
/// controller's event handlers): the DaemonSet itself; the controller of a
/// pod or revision, or for an orphan every DaemonSet selecting it; every
/// DaemonSet when a node comes, goes, or changes labels, taints or
/// conditions.
pub fn route(informer: &Informer, queue: &super::workqueue::WorkQueue, ch: &Change) {
    let key = |o: &Value| Kind::DaemonSet.key(object::namespace(o), object::name(o));
    match ch.kind {
        Kind::DaemonSet => queue.add(ch.key.clone()),
        Kind::Pod | Kind::ControllerRevision => {
            for o in ch.old.iter().chain(ch.new.iter()) {
                if let Some(("DaemonSet", name)) = podutil::controller_of(o) {
                    queue.add(Kind::DaemonSet.key(object::namespace(o), name));
                }
            }
            let Some(new) = ch.new.as_deref() else {
                return;
            };
            if podutil::controller_ref(new).is_some() || object::is_deleting(new) {
                return;
            }
            for ds in informer.list(Kind::DaemonSet, Some(object::namespace(new))) {
                if podutil::selector_of(&ds).is_some_and(|s| podutil::selects(&s, new)) {
                    queue.add(key(&ds));
                }
            }
        }
        Kind::Node => {
            let old = ch.old.as_deref().map(placement::placement_facts);
            let new = ch.new.as_deref().map(placement::placement_facts);
            if old != new {
                for ds in informer.list(Kind::DaemonSet, None) {
                    queue.add(key(&ds));
                }
            }
        }
        _ => {}
    }
}
