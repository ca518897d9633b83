//! The Deployment controller, following kube-controller-manager's: one
//! ReplicaSet per pod template (`<deployment>-<pod-template-hash>`, the hash
//! also added to the template's labels and the selector), revisions in the
//! `deployment.kubernetes.io/revision` annotation, rolling updates within
//! `maxSurge`/`maxUnavailable` (25%/25% by default), `Recreate`,
//! proportional scaling during a rollout, pausing, history clean-up and the
//! status `kubectl rollout status` reads, with kube's conditions:
//!
//! - `Available`: `MinimumReplicasAvailable` ("Deployment has minimum
//!   availability.") or `MinimumReplicasUnavailable` ("Deployment does not
//!   have minimum availability.");
//! - `Progressing`: `NewReplicaSetCreated` ("Created new replica set "X""),
//!   `FoundNewReplicaSet` ("Found new replica set "X""), `ReplicaSetUpdated`
//!   ("ReplicaSet "X" is progressing."), `NewReplicaSetAvailable`
//!   ("ReplicaSet "X" has successfully progressed."),
//!   `ProgressDeadlineExceeded` ("ReplicaSet "X" has timed out
//!   progressing."), `DeploymentPaused` / `DeploymentResumed`.
//!
//! Events: `ScalingReplicaSet` ("Scaled up replica set X from 1 to 3").

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::informer::{Informer, Kind};
use super::podutil::{
    self, CONTROLLER_MANAGER, POD_TEMPLATE_HASH, int_at, int_or_percent, rfc3339,
};
use super::recorder::{Recorder, Source};
use super::replicaset::adopt;
use super::writes::{self, Part};
use crate::object;
use crate::registry::{Api, Target};
use crate::status::ApiError;

const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Annotations not copied from a Deployment to its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// Longest `revision-history` annotation.
const REVISION_HISTORY_LIMIT_CHARS: usize = 2000;

/// A Deployment as the controller reads it.
struct Dep {
    obj: Arc<Value>,
    ns: String,
    name: String,
    uid: String,
    generation: i64,
    replicas: i64,
    recreate: bool,
    min_ready: i64,
    history_limit: Option<i64>,
    progress_deadline: Option<i64>,
    paused: bool,
    status: Value,
}

impl Dep {
    fn parse(obj: Arc<Value>) -> Dep {
        let s = |p: &str| podutil::str_at(&obj, p).to_string();
        Dep {
            ns: object::namespace(&obj).to_string(),
            name: object::name(&obj).to_string(),
            uid: object::uid(&obj).to_string(),
            generation: object::generation(&obj),
            replicas: int_at(&obj, "/spec/replicas").unwrap_or(1),
            recreate: s("/spec/strategy/type") == "Recreate",
            min_ready: int_at(&obj, "/spec/minReadySeconds").unwrap_or(0),
            history_limit: int_at(&obj, "/spec/revisionHistoryLimit"),
            progress_deadline: int_at(&obj, "/spec/progressDeadlineSeconds"),
            paused: obj.pointer("/spec/paused").and_then(Value::as_bool) == Some(true),
            status: obj.get("status").cloned().unwrap_or_else(|| json!({})),
            obj,
        }
    }

    fn template(&self) -> Value {
        self.obj
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// `ResolveFenceposts`: (maxSurge, maxUnavailable) for a rolling update.
    fn fenceposts(&self) -> (i64, i64) {
        let ru = self.obj.pointer("/spec/strategy/rollingUpdate");
        let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), self.replicas, true);
        let mut unavailable = int_or_percent(
            ru.and_then(|r| r.get("maxUnavailable")),
            self.replicas,
            false,
        );
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        (surge, unavailable)
    }

    fn max_surge(&self) -> i64 {
        if self.recreate {
            0
        } else {
            self.fenceposts().0
        }
    }

    fn max_unavailable(&self) -> i64 {
        if self.recreate || self.replicas == 0 {
            0
        } else {
            self.fenceposts().1.min(self.replicas)
        }
    }

    fn has_progress_deadline(&self) -> bool {
        self.progress_deadline
            .is_some_and(|p| p != i64::from(i32::MAX))
    }

    fn status_int(&self, field: &str) -> i64 {
        self.status.get(field).and_then(Value::as_i64).unwrap_or(0)
    }
}

fn replicas(rs: &Value) -> i64 {
    int_at(rs, "/spec/replicas").unwrap_or(1)
}

fn status_int(rs: &Value, field: &str) -> i64 {
    rs.get("status")
        .and_then(|s| s.get(field))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    object::meta(obj)?.get("annotations")?.get(key)?.as_str()
}

fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// Templates equal but for the pod-template-hash label (`EqualIgnoreHash`).
fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove(POD_TEMPLATE_HASH);
                if labels.is_empty() {
                    meta.remove("labels");
                }
            }
            if meta.is_empty()
                && let Some(o) = t.as_object_mut()
            {
                o.remove("metadata");
            }
        }
        t
    };
    strip(a) == strip(b)
}

fn condition<'a>(status: &'a Value, ty: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

fn condition_reason<'a>(status: &'a Value, ty: &str) -> Option<&'a str> {
    condition(status, ty)?.get("reason")?.as_str()
}

fn new_condition(ty: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = rfc3339(podutil::now());
    json!({
        "type": ty,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// `SetDeploymentCondition`: no change when status and reason are the same.
fn set_condition(status: &mut Value, mut cond: Value) {
    let ty = cond.get("type").cloned();
    let mut list: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cur) = list.iter().find(|c| c.get("type") == ty.as_ref()) {
        if cur.get("status") == cond.get("status") && cur.get("reason") == cond.get("reason") {
            return;
        }
        if cur.get("status") == cond.get("status")
            && let Some(t) = cur.get("lastTransitionTime")
        {
            cond["lastTransitionTime"] = t.clone();
        }
    }
    list.retain(|c| c.get("type") != ty.as_ref());
    list.push(cond);
    status["conditions"] = json!(list);
}

fn remove_condition(status: &mut Value, ty: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(ty));
        if list.is_empty()
            && let Some(o) = status.as_object_mut()
        {
            o.remove("conditions");
        }
    }
}

/// Sets annotations of an object, creating the map when missing.
fn set_annotations(obj: &mut Value, pairs: &[(&str, &str)]) {
    if let Some(m) = object::meta_mut(obj) {
        let ann = m.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        for (k, v) in pairs {
            ann[*k] = json!(v);
        }
    }
}

fn sum(rss: &[Arc<Value>], f: impl Fn(&Value) -> i64) -> i64 {
    rss.iter().map(|r| f(r)).sum()
}

fn active(rss: &[Arc<Value>]) -> Vec<Arc<Value>> {
    rss.iter().filter(|r| replicas(r) > 0).cloned().collect()
}

/// The controller.
pub struct DeploymentController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
}

impl DeploymentController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(DeploymentController {
            api,
            informer,
            recorder,
            source: Source::component("deployment-controller"),
        })
    }

    fn target(&self, kind: Kind, ns: &str, name: &str) -> Option<Target> {
        writes::target(&self.api, kind, ns, name)
    }

    /// Rewrites the object at `t` (not its status) while it has `uid`.
    async fn update(
        &self,
        t: &Target,
        uid: &str,
        change: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        writes::update_same_uid(&self.api, t, Part::Object, CONTROLLER_MANAGER, uid, change).await
    }

    /// Reconciles one Deployment.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(obj) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        let mut d = Dep::parse(obj);
        let Some(selector) = podutil::selector_of(&d.obj) else {
            return Ok(None);
        };
        if selector.is_everything() {
            self.recorder.warning(
                &d.obj,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
                &self.source,
            );
            if d.status_int("observedGeneration") < d.generation {
                let mut s = d.status.clone();
                s["observedGeneration"] = json!(d.generation);
                self.write_status(&mut d, s).await?;
            }
            return Ok(None);
        }
        let rs_list = self.replica_sets(&d, &selector).await?;
        if object::is_deleting(&d.obj) {
            let (new, old) = self.all_replica_sets(&mut d, rs_list, false).await?;
            self.sync_status(&mut d, &old, new.as_ref()).await?;
            return Ok(None);
        }
        self.check_paused_conditions(&mut d).await?;
        if d.paused {
            return self.sync_scale(&mut d, rs_list).await;
        }
        let scaling = self.is_scaling_event(&mut d, rs_list).await?;
        self.informer.catch_up().await;
        let rs_list = self.informer.controlled_by(Kind::ReplicaSet, &d.uid);
        if scaling {
            return self.sync_scale(&mut d, rs_list).await;
        }
        if d.recreate {
            self.rollout_recreate(&mut d, rs_list).await
        } else {
            self.rollout_rolling(&mut d, rs_list).await
        }
    }

    /// The ReplicaSets the Deployment controls, adopting matching orphans.
    async fn replica_sets(
        &self,
        d: &Dep,
        selector: &crate::selectors::LabelSelector,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        if !object::is_deleting(&d.obj) {
            let owner = podutil::new_controller_ref(&d.obj, "apps/v1", "Deployment");
            let mut adopted = false;
            for rs in self.informer.orphans(Kind::ReplicaSet, &d.ns) {
                if !object::is_deleting(&rs) && podutil::selects(selector, &rs) {
                    adopted |= adopt(&self.api, Kind::ReplicaSet, &rs, owner.clone())
                        .await?
                        .is_some();
                }
            }
            if adopted {
                self.informer.catch_up().await;
            }
        }
        Ok(self.informer.controlled_by(Kind::ReplicaSet, &d.uid))
    }

    async fn write_status(&self, d: &mut Dep, status: Value) -> Result<(), ApiError> {
        let Some(t) = self.target(Kind::Deployment, &d.ns, &d.name) else {
            return Ok(());
        };
        d.obj = writes::replace_status(&self.api, &t, &d.uid, &status).await?;
        d.status = status;
        Ok(())
    }

    /// Sets one condition of the Deployment's status and writes the status.
    async fn write_condition(&self, d: &mut Dep, cond: Value) -> Result<(), ApiError> {
        let mut s = d.status.clone();
        set_condition(&mut s, cond);
        self.write_status(d, s).await
    }

    /// Sets the Deployment's revision annotation (`SetDeploymentRevision`).
    async fn set_revision(&self, d: &mut Dep, rev: &str) -> Result<(), ApiError> {
        if annotation(&d.obj, REVISION) == Some(rev) {
            return Ok(());
        }
        let Some(t) = self.target(Kind::Deployment, &d.ns, &d.name) else {
            return Ok(());
        };
        d.obj = self
            .update(&t, &d.uid, |cur| {
                let mut new = cur.clone();
                set_annotations(&mut new, &[(REVISION, rev)]);
                Ok(new)
            })
            .await?;
        Ok(())
    }

    /// `SetNewReplicaSetAnnotations`: the annotations a new ReplicaSet
    /// should carry, and whether they differ from `existing`.
    fn new_rs_annotations(
        &self,
        d: &Dep,
        existing: &Map<String, Value>,
        new_revision: i64,
        exists: bool,
    ) -> (Map<String, Value>, bool) {
        let mut ann = existing.clone();
        let mut changed = false;
        if let Some(da) = object::meta(&d.obj)
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object)
        {
            for (k, v) in da {
                if NOT_COPIED.contains(&k.as_str()) || ann.get(k) == Some(v) {
                    continue;
                }
                ann.insert(k.clone(), v.clone());
                changed = true;
            }
        }
        let old = ann
            .get(REVISION)
            .and_then(Value::as_str)
            .map(str::to_string);
        let old_int = match old.as_deref() {
            None | Some("") => 0,
            Some(s) => match s.parse::<i64>() {
                Ok(n) => n,
                Err(_) => return (ann, false),
            },
        };
        if old_int < new_revision {
            ann.insert(REVISION.into(), json!(new_revision.to_string()));
            changed = true;
            if let Some(old) = old.filter(|o| !o.is_empty()) {
                let history = ann
                    .get(REVISION_HISTORY)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut revisions: Vec<String> = if history.is_empty() {
                    Vec::new()
                } else {
                    history.split(',').map(str::to_string).collect()
                };
                revisions.push(old);
                while revisions.join(",").len() > REVISION_HISTORY_LIMIT_CHARS
                    && revisions.len() > 1
                {
                    revisions.remove(0);
                }
                ann.insert(REVISION_HISTORY.into(), json!(revisions.join(",")));
            }
        }
        if !exists {
            ann.insert(DESIRED_REPLICAS.into(), json!(d.replicas.to_string()));
            ann.insert(
                MAX_REPLICAS.into(),
                json!((d.replicas + d.max_surge()).to_string()),
            );
            changed = true;
        }
        (ann, changed)
    }

    /// `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet (created when
    /// asked and missing) and the old ones.
    async fn all_replica_sets(
        &self,
        d: &mut Dep,
        mut rs_list: Vec<Arc<Value>>,
        create: bool,
    ) -> Result<(Option<Arc<Value>>, Vec<Arc<Value>>), ApiError> {
        rs_list.sort_by_key(|r| podutil::creation_key(r));
        let template = d.template();
        let new_rs = rs_list
            .iter()
            .find(|r| {
                equal_ignore_hash(
                    r.pointer("/spec/template").unwrap_or(&Value::Null),
                    &template,
                )
            })
            .cloned();
        let old: Vec<Arc<Value>> = rs_list
            .iter()
            .filter(|r| {
                new_rs
                    .as_ref()
                    .is_none_or(|n| object::uid(n) != object::uid(r))
            })
            .cloned()
            .collect();
        let new_revision = old.iter().map(|r| revision(r)).max().unwrap_or(0) + 1;
        if let Some(rs) = new_rs {
            let existing = object::meta(&rs)
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let (ann, changed) = self.new_rs_annotations(d, &existing, new_revision, true);
            let min_ready_changed =
                int_at(&rs, "/spec/minReadySeconds").unwrap_or(0) != d.min_ready;
            if changed || min_ready_changed {
                let Some(t) = self.target(Kind::ReplicaSet, &d.ns, object::name(&rs)) else {
                    return Ok((Some(rs), old));
                };
                let min_ready = d.min_ready;
                let w = self
                    .update(&t, object::uid(&rs), |cur| {
                        let mut new = cur.clone();
                        if let Some(m) = object::meta_mut(&mut new) {
                            m.insert("annotations".into(), Value::Object(ann.clone()));
                        }
                        new["spec"]["minReadySeconds"] = json!(min_ready);
                        Ok(new)
                    })
                    .await?;
                return Ok((Some(w), old));
            }
            let rs_revision = annotation(&rs, REVISION).unwrap_or("").to_string();
            self.set_revision(d, &rs_revision).await?;
            if d.has_progress_deadline() && condition(&d.status, "Progressing").is_none() {
                let message = format!("Found new replica set \"{}\"", object::name(&rs));
                let cond = new_condition("Progressing", "True", "FoundNewReplicaSet", &message);
                self.write_condition(d, cond).await?;
            }
            return Ok((Some(rs), old));
        }
        if !create {
            return Ok((None, old));
        }
        // Create the new ReplicaSet.
        let collision = d.status.get("collisionCount").and_then(Value::as_i64);
        let hash = podutil::template_hash(&template, collision);
        let mut rs_template = template.clone();
        if !rs_template.get("metadata").is_some_and(Value::is_object) {
            rs_template["metadata"] = json!({});
        }
        if !rs_template["metadata"]
            .get("labels")
            .is_some_and(Value::is_object)
        {
            rs_template["metadata"]["labels"] = json!({});
        }
        rs_template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut selector = d
            .obj
            .pointer("/spec/selector")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !selector.get("matchLabels").is_some_and(Value::is_object) {
            selector["matchLabels"] = json!({});
        }
        selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
        let name = format!("{}-{hash}", d.name);
        let mut all = old.clone();
        let placeholder = Arc::new(json!({"spec": {"replicas": 0}}));
        all.push(placeholder.clone());
        let new_replicas = self.new_rs_new_replicas(d, &all, &placeholder);
        let (ann, _) = self.new_rs_annotations(d, &Map::new(), new_revision, false);
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": d.ns,
                "labels": rs_template["metadata"]["labels"].clone(),
                "annotations": ann,
                "ownerReferences": [podutil::new_controller_ref(&d.obj, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": new_replicas,
                "minReadySeconds": d.min_ready,
                "selector": selector,
                "template": rs_template,
            },
        });
        let Some(rt) = self.api.catalog.get("apps", "v1", "replicasets") else {
            return Ok((None, old));
        };
        let created = self
            .api
            .create(&rt, Some(&d.ns), body, &podutil::writer(CONTROLLER_MANAGER))
            .await;
        let (created, already_existed) = match created {
            Ok(w) => (w.object, false),
            Err(e) if e.reason == "AlreadyExists" => {
                let existing = match self.target(Kind::ReplicaSet, &d.ns, &name) {
                    Some(t) => self.api.get(&t).await?,
                    None => return Err(e),
                };
                if podutil::controller_uid(&existing) == Some(d.uid.as_str())
                    && equal_ignore_hash(
                        existing.pointer("/spec/template").unwrap_or(&Value::Null),
                        &template,
                    )
                {
                    (existing, true)
                } else {
                    // A hash collision: bump collisionCount and try again.
                    let mut s = d.status.clone();
                    s["collisionCount"] = json!(collision.unwrap_or(0) + 1);
                    self.write_status(d, s).await?;
                    return Err(e);
                }
            }
            Err(e) if e.causes.iter().any(|c| c.reason == "NamespaceTerminating") => {
                return Err(e);
            }
            Err(e) => {
                let msg = format!("Failed to create new replica set \"{name}\": {}", e.message);
                if d.has_progress_deadline() {
                    let cond = new_condition("Progressing", "False", "ReplicaSetCreateError", &msg);
                    let _ = self.write_condition(d, cond).await;
                }
                self.recorder
                    .warning(&d.obj, "ReplicaSetCreateError", msg, &self.source);
                return Err(e);
            }
        };
        if !already_existed && new_replicas > 0 {
            self.recorder.normal(
                &d.obj,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {new_replicas}"),
                &self.source,
            );
        }
        self.set_revision(d, &new_revision.to_string()).await?;
        if !already_existed && d.has_progress_deadline() {
            let message = format!("Created new replica set \"{name}\"");
            let cond = new_condition("Progressing", "True", "NewReplicaSetCreated", &message);
            self.write_condition(d, cond).await?;
        }
        Ok((Some(created), old))
    }

    /// `NewRSNewReplicas`: how many replicas the new ReplicaSet may have now.
    fn new_rs_new_replicas(&self, d: &Dep, all: &[Arc<Value>], new_rs: &Value) -> i64 {
        if d.recreate {
            return d.replicas;
        }
        let surge = int_or_percent(
            d.obj.pointer("/spec/strategy/rollingUpdate/maxSurge"),
            d.replicas,
            true,
        );
        let current = sum(all, replicas);
        let max_total = d.replicas + surge;
        if current >= max_total {
            return replicas(new_rs);
        }
        let up = (max_total - current).min(d.replicas - replicas(new_rs));
        replicas(new_rs) + up
    }

    /// Scales a ReplicaSet and refreshes its replica annotations
    /// (`scaleReplicaSetAndRecordEvent`).
    async fn scale(
        &self,
        d: &Dep,
        rs: &Arc<Value>,
        to: i64,
    ) -> Result<(bool, Arc<Value>), ApiError> {
        let from = replicas(rs);
        let desired = d.replicas.to_string();
        let max = (d.replicas + d.max_surge()).to_string();
        let size = from != to;
        let annotations = annotation(rs, DESIRED_REPLICAS) != Some(desired.as_str())
            || annotation(rs, MAX_REPLICAS) != Some(max.as_str());
        if !size && !annotations {
            return Ok((false, rs.clone()));
        }
        let Some(t) = self.target(Kind::ReplicaSet, &d.ns, object::name(rs)) else {
            return Ok((false, rs.clone()));
        };
        let w = self
            .update(&t, object::uid(rs), |cur| {
                let mut new = cur.clone();
                new["spec"]["replicas"] = json!(to);
                set_annotations(
                    &mut new,
                    &[
                        (DESIRED_REPLICAS, desired.as_str()),
                        (MAX_REPLICAS, max.as_str()),
                    ],
                );
                Ok(new)
            })
            .await?;
        if size {
            let op = if from < to { "up" } else { "down" };
            self.recorder.normal(
                &d.obj,
                "ScalingReplicaSet",
                format!(
                    "Scaled {op} replica set {} from {from} to {to}",
                    object::name(rs)
                ),
                &self.source,
            );
        }
        Ok((size, w))
    }

    fn replace(list: &mut [Arc<Value>], updated: &Arc<Value>) {
        for r in list.iter_mut() {
            if object::uid(r) == object::uid(updated) {
                *r = updated.clone();
            }
        }
    }

    async fn rollout_rolling(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (new, mut old) = self.all_replica_sets(d, rs_list, true).await?;
        let Some(mut new_rs) = new else {
            return Ok(None);
        };
        let mut all: Vec<Arc<Value>> = old.clone();
        all.push(new_rs.clone());
        // Scale up, if we can.
        let scaled_up = if replicas(&new_rs) == d.replicas {
            false
        } else {
            let to = if replicas(&new_rs) > d.replicas {
                d.replicas
            } else {
                self.new_rs_new_replicas(d, &all, &new_rs)
            };
            let (scaled, updated) = self.scale(d, &new_rs, to).await?;
            new_rs = updated;
            Self::replace(&mut all, &new_rs);
            scaled
        };
        if scaled_up {
            return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
        }
        // Scale down, if we can.
        let scaled_down = self.reconcile_old(d, &mut all, &mut old, &new_rs).await?;
        if scaled_down {
            return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
        }
        if self.deployment_complete(d, &d.status) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new_rs)).await
    }

    /// `reconcileOldReplicaSets`.
    async fn reconcile_old(
        &self,
        d: &Dep,
        all: &mut [Arc<Value>],
        old: &mut [Arc<Value>],
        new_rs: &Arc<Value>,
    ) -> Result<bool, ApiError> {
        let old_count = sum(&active(old), replicas);
        if old_count == 0 {
            return Ok(false);
        }
        let all_count = sum(all, replicas);
        let min_available = d.replicas - d.max_unavailable();
        let new_unavailable = replicas(new_rs) - status_int(new_rs, "availableReplicas");
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Clean up unhealthy replicas first.
        let mut targets = active(old);
        targets.sort_by_key(|r| podutil::creation_key(r));
        let mut cleaned = 0;
        for rs in targets.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let r = replicas(rs);
            let available = status_int(rs, "availableReplicas");
            if r == 0 || r == available {
                continue;
            }
            let n = (max_scaled_down - cleaned).min(r - available);
            let (_, updated) = self.scale(d, rs, r - n).await?;
            *rs = updated.clone();
            Self::replace(all, &updated);
            Self::replace(old, &updated);
            cleaned += n;
        }
        // Then scale down within maxUnavailable.
        let available = sum(all, |r| status_int(r, "availableReplicas"));
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in targets.iter_mut() {
                if scaled >= total {
                    break;
                }
                let r = replicas(rs);
                if r == 0 {
                    continue;
                }
                let n = r.min(total - scaled);
                let (_, updated) = self.scale(d, rs, r - n).await?;
                Self::replace(all, &updated);
                Self::replace(old, &updated);
                scaled += n;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    async fn rollout_recreate(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (mut new, mut old) = self.all_replica_sets(d, rs_list.clone(), false).await?;
        let mut all: Vec<Arc<Value>> = old.iter().cloned().chain(new.clone()).collect();
        // Scale down old replica sets.
        let mut scaled_down = false;
        for rs in active(&old) {
            let (scaled, updated) = self.scale(d, &rs, 0).await?;
            scaled_down |= scaled;
            Self::replace(&mut all, &updated);
            Self::replace(&mut old, &updated);
        }
        if scaled_down {
            return self.sync_rollout_status(d, &all, new.as_ref()).await;
        }
        // Wait for the old pods to be gone.
        let old_running = old.iter().any(|rs| {
            status_int(rs, "replicas") > 0
                || self
                    .informer
                    .controlled_by(Kind::Pod, object::uid(rs))
                    .iter()
                    .any(|p| !podutil::is_terminal(p))
        });
        if old_running {
            return self.sync_rollout_status(d, &all, new.as_ref()).await;
        }
        if new.is_none() {
            let (n, o) = self.all_replica_sets(d, rs_list, true).await?;
            new = n;
            old = o;
            all = old.iter().cloned().chain(new.clone()).collect();
        }
        if let Some(rs) = new.clone() {
            let (_, updated) = self.scale(d, &rs, d.replicas).await?;
            Self::replace(&mut all, &updated);
            new = Some(updated);
        }
        if self.deployment_complete(d, &d.status) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, new.as_ref()).await
    }

    /// `sync`: scaling without a rollout (paused, or a scaling event).
    async fn sync_scale(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let (new, old) = self.all_replica_sets(d, rs_list, false).await?;
        let mut all: Vec<Arc<Value>> = old.iter().cloned().chain(new.clone()).collect();
        self.proportional_scale(d, &mut all, new.as_ref()).await?;
        let new = new.and_then(|n| {
            all.iter()
                .find(|r| object::uid(r) == object::uid(&n))
                .cloned()
        });
        if d.paused {
            let old: Vec<Arc<Value>> = all
                .iter()
                .filter(|r| {
                    new.as_ref()
                        .is_none_or(|n| object::uid(n) != object::uid(r))
                })
                .cloned()
                .collect();
            self.cleanup(d, &old).await?;
        }
        self.sync_status(d, &all, new.as_ref()).await?;
        Ok(None)
    }

    /// `scale`: scales the active ReplicaSets to the Deployment's size,
    /// proportionally while several are active.
    async fn proportional_scale(
        &self,
        d: &Dep,
        all: &mut [Arc<Value>],
        new: Option<&Arc<Value>>,
    ) -> Result<(), ApiError> {
        let mut actives = active(all);
        let single = match actives.len() {
            0 => new.cloned().or_else(|| {
                let mut sorted = all.to_vec();
                sorted.sort_by_key(|r| podutil::creation_key(r));
                sorted.last().cloned()
            }),
            1 => actives.first().cloned(),
            _ => None,
        };
        if let Some(rs) = single {
            if replicas(&rs) != d.replicas {
                let (_, updated) = self.scale(d, &rs, d.replicas).await?;
                Self::replace(all, &updated);
            }
            return Ok(());
        }
        // The new ReplicaSet is saturated: scale the old ones down.
        if let Some(n) = new
            && replicas(n) == d.replicas
            && annotation(n, DESIRED_REPLICAS) == Some(d.replicas.to_string().as_str())
            && status_int(n, "availableReplicas") == d.replicas
        {
            for rs in actives.iter().filter(|r| object::uid(r) != object::uid(n)) {
                let (_, updated) = self.scale(d, rs, 0).await?;
                Self::replace(all, &updated);
            }
            return Ok(());
        }
        if d.recreate {
            return Ok(());
        }
        let allowed = if d.replicas > 0 {
            d.replicas + d.max_surge()
        } else {
            0
        };
        let to_add = allowed - sum(&actives, replicas);
        if to_add > 0 {
            // Larger first, then newer first.
            actives.sort_by(|a, b| {
                replicas(b)
                    .cmp(&replicas(a))
                    .then_with(|| podutil::creation_key(b).cmp(&podutil::creation_key(a)))
            });
        } else {
            // Larger first, then older first.
            actives.sort_by(|a, b| {
                replicas(b)
                    .cmp(&replicas(a))
                    .then_with(|| podutil::creation_key(a).cmp(&podutil::creation_key(b)))
            });
        }
        let mut added = 0;
        let mut sizes: Vec<i64> = Vec::with_capacity(actives.len());
        for rs in &actives {
            if to_add == 0 {
                sizes.push(replicas(rs));
                continue;
            }
            let proportion = self.proportion(d, rs, to_add, added);
            sizes.push(replicas(rs) + proportion);
            added += proportion;
        }
        let leftover = to_add - added;
        if leftover != 0
            && let Some(first) = sizes.first_mut()
        {
            *first = (*first + leftover).max(0);
        }
        for (rs, size) in actives.iter().zip(sizes) {
            let (_, updated) = self.scale(d, rs, size).await?;
            Self::replace(all, &updated);
        }
        Ok(())
    }

    /// `GetProportion`.
    fn proportion(&self, d: &Dep, rs: &Value, to_add: i64, added: i64) -> i64 {
        if replicas(rs) == 0 || to_add == 0 || to_add == added {
            return 0;
        }
        let fraction = if d.replicas == 0 {
            -replicas(rs)
        } else {
            let deployment_replicas = d.replicas + d.max_surge();
            let annotated = annotation(rs, MAX_REPLICAS)
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or_else(|| d.status_int("replicas"));
            if annotated == 0 {
                0
            } else {
                let size = (replicas(rs) * deployment_replicas) as f64 / annotated as f64;
                size.round() as i64 - replicas(rs)
            }
        };
        let allowed = to_add - added;
        if to_add > 0 {
            fraction.min(allowed)
        } else {
            fraction.max(allowed)
        }
    }

    async fn is_scaling_event(
        &self,
        d: &mut Dep,
        rs_list: Vec<Arc<Value>>,
    ) -> Result<bool, ApiError> {
        let (new, old) = self.all_replica_sets(d, rs_list, false).await?;
        let all: Vec<Arc<Value>> = old.into_iter().chain(new).collect();
        Ok(active(&all).iter().any(|rs| {
            annotation(rs, DESIRED_REPLICAS)
                .and_then(|s| s.parse::<i64>().ok())
                .is_some_and(|desired| desired != d.replicas)
        }))
    }

    async fn check_paused_conditions(&self, d: &mut Dep) -> Result<(), ApiError> {
        if !d.has_progress_deadline() {
            return Ok(());
        }
        let reason = condition_reason(&d.status, "Progressing");
        if reason == Some("ProgressDeadlineExceeded") {
            return Ok(());
        }
        let paused_condition = reason == Some("DeploymentPaused");
        let cond = if d.paused && !paused_condition {
            new_condition(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
            )
        } else if !d.paused && paused_condition {
            new_condition(
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
            )
        } else {
            return Ok(());
        };
        self.write_condition(d, cond).await
    }

    /// Deletes old, scaled-down ReplicaSets beyond `revisionHistoryLimit`.
    async fn cleanup(&self, d: &Dep, old: &[Arc<Value>]) -> Result<(), ApiError> {
        let Some(limit) = d.history_limit.filter(|l| *l != i64::from(i32::MAX)) else {
            return Ok(());
        };
        let mut alive: Vec<&Arc<Value>> = old.iter().filter(|r| !object::is_deleting(r)).collect();
        let diff = alive.len() as i64 - limit;
        if diff <= 0 {
            return Ok(());
        }
        alive.sort_by(|a, b| {
            revision(a)
                .cmp(&revision(b))
                .then_with(|| podutil::creation_key(a).cmp(&podutil::creation_key(b)))
        });
        for rs in alive.into_iter().take(diff as usize) {
            if status_int(rs, "replicas") != 0
                || replicas(rs) != 0
                || object::generation(rs) > status_int(rs, "observedGeneration")
            {
                continue;
            }
            let Some(t) = self.target(Kind::ReplicaSet, &d.ns, object::name(rs)) else {
                continue;
            };
            writes::delete_same_uid(&self.api, &t, object::uid(rs), None).await?;
        }
        Ok(())
    }

    /// `calculateStatus`.
    fn calculate_status(&self, d: &Dep, all: &[Arc<Value>], new: Option<&Arc<Value>>) -> Value {
        let available = sum(all, |r| status_int(r, "availableReplicas"));
        let total = sum(all, replicas);
        let unavailable = (total - available).max(0);
        let mut s = json!({"observedGeneration": d.generation});
        podutil::set_counts(
            &mut s,
            &[
                ("replicas", sum(all, |r| status_int(r, "replicas"))),
                (
                    "updatedReplicas",
                    new.map(|n| status_int(n, "replicas")).unwrap_or(0),
                ),
                (
                    "readyReplicas",
                    sum(all, |r| status_int(r, "readyReplicas")),
                ),
                ("availableReplicas", available),
                ("unavailableReplicas", unavailable),
            ],
        );
        if let Some(c) = d.status.get("collisionCount") {
            s["collisionCount"] = c.clone();
        }
        if let Some(c) = d.status.get("conditions") {
            s["conditions"] = c.clone();
        }
        let cond = if available >= d.replicas - d.max_unavailable() {
            new_condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        } else {
            new_condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        };
        set_condition(&mut s, cond);
        s
    }

    fn deployment_complete(&self, d: &Dep, s: &Value) -> bool {
        let g = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
        g("updatedReplicas") == d.replicas
            && g("replicas") == d.replicas
            && g("availableReplicas") == d.replicas
            && g("observedGeneration") >= d.generation
    }

    fn deployment_progressing(&self, d: &Dep, new: &Value) -> bool {
        let n = |k: &str| new.get(k).and_then(Value::as_i64).unwrap_or(0);
        let o = |k: &str| d.status_int(k);
        n("updatedReplicas") > o("updatedReplicas")
            || n("replicas") - n("updatedReplicas") < o("replicas") - o("updatedReplicas")
            || n("readyReplicas") > o("readyReplicas")
            || n("availableReplicas") > o("availableReplicas")
    }

    fn deadline_from(&self, d: &Dep, cond: &Value) -> Option<jiff::Timestamp> {
        let last = cond
            .get("lastUpdateTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time)?;
        let secs = d.progress_deadline?.max(0) as u64;
        Some(podutil::after(last, Duration::from_secs(secs)))
    }

    fn timed_out(&self, d: &Dep, new: &Value) -> bool {
        if !d.has_progress_deadline() {
            return false;
        }
        let Some(cond) = condition(new, "Progressing") else {
            return false;
        };
        match cond.get("reason").and_then(Value::as_str) {
            Some("NewReplicaSetAvailable") => return false,
            Some("ProgressDeadlineExceeded") => return true,
            _ => {}
        }
        self.deadline_from(d, cond)
            .is_some_and(|t| t < podutil::now())
    }

    /// `syncDeploymentStatus`: the status without progress estimation.
    async fn sync_status(
        &self,
        d: &mut Dep,
        all: &[Arc<Value>],
        new: Option<&Arc<Value>>,
    ) -> Result<(), ApiError> {
        let s = self.calculate_status(d, all, new);
        type Status = k8s_openapi::api::apps::v1::DeploymentStatus;
        if podutil::normalized::<Status>(&s) != podutil::normalized::<Status>(&d.status) {
            self.write_status(d, s).await?;
        }
        Ok(())
    }

    /// `syncRolloutStatus`: the status with the Progressing condition.
    async fn sync_rollout_status(
        &self,
        d: &mut Dep,
        all: &[Arc<Value>],
        new: Option<&Arc<Value>>,
    ) -> Result<Option<Duration>, ApiError> {
        let mut s = self.calculate_status(d, all, new);
        if !d.has_progress_deadline() {
            remove_condition(&mut s, "Progressing");
        }
        let current = condition(&d.status, "Progressing").cloned();
        let g = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
        let complete_before = g("replicas") == g("updatedReplicas")
            && current
                .as_ref()
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                == Some("NewReplicaSetAvailable");
        let what = |suffix: &str| match new {
            Some(n) => format!("ReplicaSet \"{}\" {suffix}", object::name(n)),
            None => format!("Deployment \"{}\" {suffix}", d.name),
        };
        if d.has_progress_deadline() && !complete_before {
            if self.deployment_complete(d, &s) {
                set_condition(
                    &mut s,
                    new_condition(
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &what("has successfully progressed."),
                    ),
                );
            } else if self.deployment_progressing(d, &s) {
                let mut cond = new_condition(
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    &what("is progressing."),
                );
                if let Some(cur) = &current {
                    if cur.get("status").and_then(Value::as_str) == Some("True")
                        && let Some(t) = cur.get("lastTransitionTime")
                    {
                        cond["lastTransitionTime"] = t.clone();
                    }
                    remove_condition(&mut s, "Progressing");
                }
                set_condition(&mut s, cond);
            } else if self.timed_out(d, &s) {
                set_condition(
                    &mut s,
                    new_condition(
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        &what("has timed out progressing."),
                    ),
                );
            }
        }
        // Replica failures of the ReplicaSets become the Deployment's.
        let failure = new
            .into_iter()
            .chain(all.iter())
            .find_map(|rs| podutil::condition(rs, "ReplicaFailure").cloned());
        match failure {
            Some(f) => {
                let at = f.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
                set_condition(
                    &mut s,
                    json!({
                        "type": "ReplicaFailure",
                        "status": f.get("status").cloned().unwrap_or(json!("True")),
                        "lastUpdateTime": at,
                        "lastTransitionTime": at,
                        "reason": f.get("reason").cloned().unwrap_or(Value::Null),
                        "message": f.get("message").cloned().unwrap_or(Value::Null),
                    }),
                );
            }
            None => remove_condition(&mut s, "ReplicaFailure"),
        }
        type Status = k8s_openapi::api::apps::v1::DeploymentStatus;
        if podutil::normalized::<Status>(&s) == podutil::normalized::<Status>(&d.status) {
            return Ok(self.requeue_stuck(d, &s));
        }
        self.write_status(d, s).await?;
        Ok(None)
    }

    /// When to check a rollout that makes no progress for its deadline.
    fn requeue_stuck(&self, d: &Dep, s: &Value) -> Option<Duration> {
        if !d.has_progress_deadline() {
            return None;
        }
        let cond = condition(&d.status, "Progressing")?;
        if self.deployment_complete(d, s)
            || cond.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded")
        {
            return None;
        }
        let at = self.deadline_from(d, cond)?;
        let after = podutil::until(at, podutil::now());
        if after < Duration::from_secs(1) {
            Some(Duration::from_secs(1))
        } else {
            Some(after + Duration::from_secs(1))
        }
    }
}
