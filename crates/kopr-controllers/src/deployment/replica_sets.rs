//! The Deployment's ReplicaSets: the new one's annotations and replicas,
//! finding or creating it, scaling one.

#[allow(unused_imports)]
use super::*;

impl DeploymentController {
    /// `SetNewReplicaSetAnnotations`: the annotations a new ReplicaSet
    /// should carry, and whether they differ from `existing`.
    pub(super) fn new_rs_annotations(
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
    pub(super) async fn all_replica_sets(
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
            let rs = self.sync_new_rs(d, rs, new_revision).await?;
            return Ok((Some(rs), old));
        }
        if !create {
            return Ok((None, old));
        }
        let created = self.create_new_rs(d, &template, &old, new_revision).await?;
        Ok((created, old))
    }

    /// The existing new ReplicaSet brought up to date: its annotations and
    /// minReadySeconds, or else the Deployment's revision and Progressing
    /// condition.
    async fn sync_new_rs(
        &self,
        d: &mut Dep,
        rs: Arc<Value>,
        new_revision: i64,
    ) -> Result<Arc<Value>, ApiError> {
        let existing = object::meta(&rs)
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let (ann, changed) = self.new_rs_annotations(d, &existing, new_revision, true);
        let min_ready_changed = int_at(&rs, "/spec/minReadySeconds").unwrap_or(0) != d.min_ready;
        if changed || min_ready_changed {
            let Some(t) = self.target(Kind::ReplicaSet, &d.ns, object::name(&rs)) else {
                return Ok(rs);
            };
            let min_ready = d.min_ready;
            return self
                .update(&t, object::uid(&rs), |cur| {
                    let mut new = cur.clone();
                    if let Some(m) = object::meta_mut(&mut new) {
                        m.insert("annotations".into(), Value::Object(ann.clone()));
                    }
                    new["spec"]["minReadySeconds"] = json!(min_ready);
                    Ok(new)
                })
                .await;
        }
        let rs_revision = annotation(&rs, REVISION).unwrap_or("").to_string();
        self.set_revision(d, &rs_revision).await?;
        if d.has_progress_deadline() && condition(&d.status, "Progressing").is_none() {
            let message = format!("Found new replica set \"{}\"", object::name(&rs));
            let cond = new_condition("Progressing", "True", "FoundNewReplicaSet", &message);
            self.write_condition(d, cond).await?;
        }
        Ok(rs)
    }

    /// Creates the new ReplicaSet (or adopts the one of its name already
    /// made from the same template), then records the revision, the event
    /// and the Progressing condition. `None` if ReplicaSets are not served.
    async fn create_new_rs(
        &self,
        d: &mut Dep,
        template: &Value,
        old: &[Arc<Value>],
        new_revision: i64,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let collision = d.status.get("collisionCount").and_then(Value::as_i64);
        let hash = podutil::template_hash(template, collision);
        let name = format!("{}-{hash}", d.name);
        let mut all = old.to_vec();
        let placeholder = Arc::new(json!({"spec": {"replicas": 0}}));
        all.push(placeholder.clone());
        let new_replicas = self.new_rs_new_replicas(d, &all, &placeholder);
        let body = self.new_rs_body(d, template, &hash, &name, new_replicas, new_revision);
        let Some(rt) = self.api.catalog.get("apps", "v1", "replicasets") else {
            return Ok(None);
        };
        let created = self
            .api
            .create(&rt, Some(&d.ns), body, &podutil::writer(CONTROLLER_MANAGER))
            .await;
        let (created, already_existed) = match created {
            Ok(w) => (w.object, false),
            Err(e) => {
                let existing = self
                    .on_create_error(d, e, template, &name, collision)
                    .await?;
                (existing, true)
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
        Ok(Some(created))
    }

    /// The new ReplicaSet to create: the template and selector labelled
    /// with the template hash, the new-ReplicaSet annotations, owned by the
    /// Deployment.
    fn new_rs_body(
        &self,
        d: &Dep,
        template: &Value,
        hash: &str,
        name: &str,
        new_replicas: i64,
        new_revision: i64,
    ) -> Value {
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
        let (ann, _) = self.new_rs_annotations(d, &Map::new(), new_revision, false);
        json!({
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
        })
    }

    /// A failed create of the new ReplicaSet: the existing one of that name
    /// if it is the Deployment's with the same template; otherwise the
    /// error, after bumping collisionCount on a hash collision or recording
    /// the failure.
    async fn on_create_error(
        &self,
        d: &mut Dep,
        e: ApiError,
        template: &Value,
        name: &str,
        collision: Option<i64>,
    ) -> Result<Arc<Value>, ApiError> {
        if e.reason == "AlreadyExists" {
            let existing = match self.target(Kind::ReplicaSet, &d.ns, name) {
                Some(t) => self.api.get(&t).await?,
                None => return Err(e),
            };
            if podutil::controller_uid(&existing) == Some(d.uid.as_str())
                && equal_ignore_hash(
                    existing.pointer("/spec/template").unwrap_or(&Value::Null),
                    template,
                )
            {
                return Ok(existing);
            }
            // A hash collision: bump collisionCount and try again.
            let mut s = d.status.clone();
            s["collisionCount"] = json!(collision.unwrap_or(0) + 1);
            self.write_status(d, s).await?;
            return Err(e);
        }
        if e.causes.iter().any(|c| c.reason == "NamespaceTerminating") {
            return Err(e);
        }
        let msg = format!("Failed to create new replica set \"{name}\": {}", e.message);
        if d.has_progress_deadline() {
            let cond = new_condition("Progressing", "False", "ReplicaSetCreateError", &msg);
            let _ = self.write_condition(d, cond).await;
        }
        self.recorder
            .warning(&d.obj, "ReplicaSetCreateError", msg, &self.source);
        Err(e)
    }

    /// `NewRSNewReplicas`: how many replicas the new ReplicaSet may have now.
    pub(super) fn new_rs_new_replicas(&self, d: &Dep, all: &[Arc<Value>], new_rs: &Value) -> i64 {
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
    pub(super) async fn scale(
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

    pub(super) fn replace(list: &mut [Arc<Value>], updated: &Arc<Value>) {
        for r in list.iter_mut() {
            if object::uid(r) == object::uid(updated) {
                *r = updated.clone();
            }
        }
    }
}
