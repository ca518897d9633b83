//! The ReplicaSet controller, as kube-controller-manager's: keeps
//! `spec.replicas` active pods (named `<rs>-<5 random>`, controller owner
//! reference with `blockOwnerDeletion`), creating them in slow-start batches
//! and deleting the least valuable ones first (unscheduled, pending, not
//! ready, …); adopts matching orphans; reports `replicas`,
//! `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas`,
//! `observedGeneration` and a `ReplicaFailure` condition when pods cannot
//! be created. Events: `SuccessfulCreate` (`Created pod: P`),
//! `SuccessfulDelete` (`Deleted pod: P`), `FailedCreate`.
//!
//! The same controller runs ReplicationControllers (see [`Flavour`] and
//! `super::replication`), as kube's replication manager runs this code.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::informer::{Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER, int_at, rfc3339};
use super::recorder::{Recorder, Source};
use super::writes::{self, Part};
use crate::object;
use crate::registry::Api;
use crate::status::ApiError;

/// Most pods created or deleted in one sync (`BurstReplicas`).
const BURST: i64 = 500;

/// Annotation lowering a pod's rank for deletion.
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// What the ReplicaSet controller's two uses differ in: the kind it
/// manages, the owner references it writes and its event source.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    /// The cached kind managed.
    pub kind: Kind,
    /// Its apiVersion, in owner references.
    pub api_version: &'static str,
    /// Its kind, in owner references.
    pub kind_name: &'static str,
    /// The event source component.
    pub component: &'static str,
}

impl Flavour {
    /// apps/v1 ReplicaSets.
    pub const REPLICA_SETS: Flavour = Flavour {
        kind: Kind::ReplicaSet,
        api_version: "apps/v1",
        kind_name: "ReplicaSet",
        component: "replicaset-controller",
    };

    /// The parsed selector of a managed object (None when invalid).
    pub fn selector(&self, obj: &Value) -> Option<crate::selectors::LabelSelector> {
        match self.kind {
            Kind::ReplicationController => podutil::map_selector_of(obj),
            _ => podutil::selector_of(obj),
        }
    }
}

/// The controller.
pub struct ReplicaSetController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    flavour: Flavour,
}

/// Adds a controller reference to an orphan, unless it got one meanwhile.
pub(crate) async fn adopt(
    api: &Api,
    kind: Kind,
    obj: &Value,
    owner_ref: Value,
) -> Result<Option<Arc<Value>>, ApiError> {
    let Some(t) = writes::target_of(api, kind, obj) else {
        return Ok(None);
    };
    let written = writes::update_same_uid(
        api,
        &t,
        Part::Object,
        CONTROLLER_MANAGER,
        object::uid(obj),
        |cur| {
            if podutil::controller_ref(cur).is_some() {
                return Err(writes::conflict(&t, cur, "no longer an orphan"));
            }
            let mut new = cur.clone();
            let mut refs = object::owner_references(cur).to_vec();
            refs.push(owner_ref.clone());
            if let Some(m) = object::meta_mut(&mut new) {
                m.insert("ownerReferences".into(), json!(refs));
            }
            Ok(new)
        },
    )
    .await;
    match written {
        Ok(w) => Ok(Some(w)),
        Err(e) if e.code == 404 || e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

fn phase_rank(pod: &Value) -> u8 {
    match podutil::phase(pod) {
        "Pending" | "" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    }
}

fn deletion_cost(pod: &Value) -> i64 {
    object::meta(pod)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(DELETION_COST))
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(0)
}

/// Orders pods so that those to delete first come first
/// (`controller.ActivePodsWithRanks`).
fn deletion_order(a: &Value, b: &Value, ranks: &HashMap<String, usize>) -> Ordering {
    let assigned = |p: &Value| !podutil::str_at(p, "/spec/nodeName").is_empty();
    let rank = |p: &Value| {
        ranks
            .get(podutil::str_at(p, "/spec/nodeName"))
            .copied()
            .unwrap_or(0)
    };
    assigned(a)
        .cmp(&assigned(b))
        .then(phase_rank(a).cmp(&phase_rank(b)))
        .then(podutil::is_ready(a).cmp(&podutil::is_ready(b)))
        .then(deletion_cost(a).cmp(&deletion_cost(b)))
        .then(rank(b).cmp(&rank(a)))
        .then_with(
            || match (podutil::ready_since(a), podutil::ready_since(b)) {
                (Some(x), Some(y)) => y.cmp(&x),
                _ => Ordering::Equal,
            },
        )
        .then(podutil::restart_count(b).cmp(&podutil::restart_count(a)))
        .then_with(|| podutil::creation_key(b).cmp(&podutil::creation_key(a)))
}

impl ReplicaSetController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Self::with_flavour(Flavour::REPLICA_SETS, api, informer, recorder)
    }

    /// A controller of the given flavour working from the cache.
    pub fn with_flavour(
        flavour: Flavour,
        api: Api,
        informer: Arc<Informer>,
        recorder: Recorder,
    ) -> Arc<Self> {
        Arc::new(ReplicaSetController {
            api,
            informer,
            recorder,
            source: Source::component(flavour.component),
            flavour,
        })
    }

    fn owner_ref(&self, obj: &Value) -> Value {
        podutil::new_controller_ref(obj, self.flavour.api_version, self.flavour.kind_name)
    }

    fn owned_pods(&self, uid: &str) -> Vec<Arc<Value>> {
        self.informer.controlled_by(Kind::Pod, uid)
    }

    /// Reconciles one ReplicaSet.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(rs) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        let Some(selector) = self.flavour.selector(&rs) else {
            return Ok(None);
        };
        let ns = object::namespace(&rs).to_string();
        let uid = object::uid(&rs).to_string();
        let deleting = object::is_deleting(&rs);
        if !deleting {
            let owner = self.owner_ref(&rs);
            let mut adopted = false;
            for orphan in self.informer.orphans(Kind::Pod, &ns) {
                if !object::is_deleting(&orphan)
                    && podutil::is_active(&orphan)
                    && podutil::selects(&selector, &orphan)
                {
                    adopted |= adopt(&self.api, Kind::Pod, &orphan, owner.clone())
                        .await?
                        .is_some();
                }
            }
            if adopted {
                self.informer.catch_up().await;
            }
        }
        let active: Vec<Arc<Value>> = self
            .owned_pods(&uid)
            .into_iter()
            .filter(|p| podutil::is_active(p))
            .collect();
        let mut failure: Option<(&'static str, String)> = None;
        if !deleting {
            let replicas = int_at(&rs, "/spec/replicas").unwrap_or(1);
            let diff = active.len() as i64 - replicas;
            if diff < 0 {
                if let Err(e) = self.create_pods(&rs, (-diff).min(BURST)).await {
                    failure = Some(("FailedCreate", e.message.clone()));
                }
            } else if diff > 0
                && let Err(e) = self
                    .delete_pods(&rs, active, diff.min(BURST) as usize)
                    .await
            {
                failure = Some(("FailedDelete", e.message.clone()));
            }
            self.informer.catch_up().await;
        }
        self.update_status(&key, failure).await
    }

    async fn create_pods(&self, rs: &Value, count: i64) -> Result<(), ApiError> {
        let Some(rt) = self.api.catalog.get("", "v1", "pods") else {
            return Ok(());
        };
        let ns = object::namespace(rs);
        let template = rs.pointer("/spec/template").cloned().unwrap_or(Value::Null);
        let owner = self.owner_ref(rs);
        let mut pod = podutil::pod_from_template(&template, ns, owner);
        pod["metadata"]["generateName"] = json!(format!("{}-", object::name(rs)));
        let opts = podutil::writer(CONTROLLER_MANAGER);
        let mut remaining = count;
        let mut batch = 1i64;
        while remaining > 0 {
            let n = batch.min(remaining);
            let creates = (0..n).map(|_| self.api.create(&rt, Some(ns), pod.clone(), &opts));
            let results = futures::future::join_all(creates).await;
            let mut first_err = None;
            for r in results {
                match r {
                    Ok(w) => self.recorder.normal(
                        rs,
                        "SuccessfulCreate",
                        format!("Created pod: {}", object::name(&w.object)),
                        &self.source,
                    ),
                    Err(e) => {
                        self.recorder.warning(
                            rs,
                            "FailedCreate",
                            format!("Error creating: {}", e.message),
                            &self.source,
                        );
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
            remaining -= n;
            batch *= 2;
        }
        Ok(())
    }

    async fn delete_pods(
        &self,
        rs: &Value,
        mut active: Vec<Arc<Value>>,
        count: usize,
    ) -> Result<(), ApiError> {
        let mut ranks: HashMap<String, usize> = HashMap::new();
        for p in &active {
            *ranks
                .entry(podutil::str_at(p, "/spec/nodeName").to_string())
                .or_default() += 1;
        }
        active.sort_by(|a, b| deletion_order(a, b, &ranks));
        let mut first_err = None;
        for pod in active.into_iter().take(count) {
            let Some(t) = writes::target_of(&self.api, Kind::Pod, &pod) else {
                continue;
            };
            match writes::delete_same_uid(&self.api, &t, object::uid(&pod), None).await {
                Ok(true) => self.recorder.normal(
                    rs,
                    "SuccessfulDelete",
                    format!("Deleted pod: {}", object::name(&pod)),
                    &self.source,
                ),
                Ok(false) => {}
                Err(e) => {
                    self.recorder.warning(
                        rs,
                        "FailedDelete",
                        format!("Error deleting: {}", e.message),
                        &self.source,
                    );
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    async fn update_status(
        &self,
        key: &str,
        failure: Option<(&'static str, String)>,
    ) -> Result<Option<Duration>, ApiError> {
        let Some(rs) = self.informer.get_key(key) else {
            return Ok(None);
        };
        let now = podutil::now();
        let min_ready = int_at(&rs, "/spec/minReadySeconds").unwrap_or(0);
        let template_labels = rs
            .pointer("/spec/template/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let active: Vec<Arc<Value>> = self
            .owned_pods(object::uid(&rs))
            .into_iter()
            .filter(|p| podutil::is_active(p))
            .collect();
        let mut fully_labeled = 0;
        let mut ready = 0;
        let mut available = 0;
        let mut again: Option<Duration> = None;
        for p in &active {
            let labels = object::labels(p);
            if template_labels
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
            {
                fully_labeled += 1;
            }
            if podutil::is_ready(p) {
                ready += 1;
            }
            match podutil::availability(p, min_ready, now) {
                (true, _) => available += 1,
                (false, Some(wait)) => again = podutil::sooner(again, wait),
                _ => {}
            }
        }
        let mut status = json!({"replicas": active.len()});
        podutil::set_counts(
            &mut status,
            &[
                ("fullyLabeledReplicas", fully_labeled),
                ("readyReplicas", ready),
                ("availableReplicas", available),
            ],
        );
        let generation = object::generation(&rs);
        if generation > 0 {
            status["observedGeneration"] = json!(generation);
        }
        let mut conditions: Vec<Value> = podutil::conditions_of(&rs)
            .into_iter()
            .filter(|c| c.get("type").and_then(Value::as_str) != Some("ReplicaFailure"))
            .collect();
        if let Some((reason, message)) = failure {
            let existing = podutil::condition(&rs, "ReplicaFailure").cloned();
            let since = existing
                .as_ref()
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(rfc3339(now)));
            conditions.push(json!({
                "type": "ReplicaFailure",
                "status": "True",
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }));
        }
        if !conditions.is_empty() {
            status["conditions"] = json!(conditions);
        }
        let kind = self.flavour.kind;
        let written = match kind {
            Kind::ReplicationController => {
                type Status = k8s_openapi::api::core::v1::ReplicationControllerStatus;
                writes::update_status::<Status>(&self.api, kind, &rs, &status).await?
            }
            _ => {
                type Status = k8s_openapi::api::apps::v1::ReplicaSetStatus;
                writes::update_status::<Status>(&self.api, kind, &rs, &status).await?
            }
        };
        if !written {
            return Ok(None);
        }
        Ok(again.map(|d| d + Duration::from_secs(1)))
    }
}
