//! The StatefulSet controller, as kube-controller-manager's: pods named
//! `<set>-<ordinal>` with stable hostnames (`spec.hostname`, and
//! `spec.subdomain` from `serviceName`) and the `controller-revision-hash`,
//! `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`
//! labels. With `OrderedReady` (the default) a pod is created only once the
//! previous one is Running and Ready, scale-down removes the highest
//! ordinal first and one at a time; `Parallel` creates and deletes all at
//! once. `RollingUpdate` replaces pods not at the update revision from the
//! highest ordinal down to the partition, one healthy pod at a time;
//! `OnDelete` waits for pods to be deleted. Finished pods are recreated.
//! Status: `replicas`, `readyReplicas`, `currentReplicas`,
//! `updatedReplicas`, `availableReplicas`, `currentRevision`,
//! `updateRevision`, `observedGeneration`, `collisionCount`. Events:
//! `SuccessfulCreate` (`create Pod web-0 in StatefulSet web successful`),
//! `SuccessfulDelete`, `FailedCreate`.
//!
//! Template history is kept in ControllerRevisions, as kube keeps it: the
//! update revision is the one holding the set's template (created as
//! `<set>-<hash>`, or an older one renumbered when its template comes back,
//! as after `kubectl rollout undo`), the current revision the one
//! `status.currentRevision` names; pods below a rolling-update partition are
//! created from the current revision's template, the others from the
//! update revision's; revisions beyond `revisionHistoryLimit` that no pod
//! uses are deleted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::history::{self, REVISION_HASH as REVISION_LABEL};
use super::informer::{Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER, int_at};
use super::recorder::{Recorder, Source};
use super::templates;
use super::writes;
use crate::object;
use crate::registry::Api;
use crate::status::ApiError;

const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The controller.
pub struct StatefulSetController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
}

fn ordinal_of(set_name: &str, pod: &Value) -> Option<i64> {
    object::name(pod)
        .strip_prefix(set_name)?
        .strip_prefix('-')?
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
}

fn revision_of(pod: &Value) -> &str {
    object::labels(pod)
        .and_then(|l| l.get(REVISION_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn running_and_ready(pod: &Value) -> bool {
    podutil::phase(pod) == "Running" && podutil::is_ready(pod)
}

fn healthy(pod: &Value, min_ready: i64, now: jiff::Timestamp) -> bool {
    podutil::phase(pod) == "Running" && podutil::availability(pod, min_ready, now).0
}

enum Step {
    /// Keep going.
    Continue,
    /// Wait for the next change.
    Wait,
}

/// A revision the controller creates pods from.
struct Revision {
    /// The ControllerRevision's name (the pods' `controller-revision-hash`).
    name: String,
    /// Its pod template.
    template: Value,
}

impl Revision {
    /// The revision's name and template (the set's own template if the
    /// revision holds none).
    fn of(set: &Value, cr: &Value) -> Revision {
        Revision {
            name: object::name(cr).to_string(),
            template: templates::from_patch(history::data(cr))
                .unwrap_or_else(|| templates::of(set).clone()),
        }
    }
}

/// Whether a new pod at `ordinal` gets the current revision rather than the
/// update revision (`newVersionedStatefulSetPod`): below the partition of a
/// rolling update, or, without rolling update parameters, below the
/// current replicas.
fn below_partition(set: &Value, ordinal: i64, start: i64) -> bool {
    let rolling = podutil::str_at(set, "/spec/updateStrategy/type") == "RollingUpdate";
    match podutil::at(set, "/spec/updateStrategy/rollingUpdate").filter(|v| !v.is_null()) {
        None => rolling && ordinal < start + int_at(set, "/status/currentReplicas").unwrap_or(0),
        Some(ru) => ordinal < start + ru.get("partition").and_then(Value::as_i64).unwrap_or(0),
    }
}

impl StatefulSetController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(StatefulSetController {
            api,
            informer,
            recorder,
            source: Source::component("statefulset-controller"),
        })
    }

    async fn delete_pod(&self, set: &Value, pod: &Value) -> Result<(), ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::Pod, pod) else {
            return Ok(());
        };
        match writes::delete_same_uid(&self.api, &t, object::uid(pod), None).await {
            Ok(false) => Ok(()),
            Ok(true) => {
                self.recorder.normal(
                    set,
                    "SuccessfulDelete",
                    format!(
                        "delete Pod {} in StatefulSet {} successful",
                        object::name(pod),
                        object::name(set)
                    ),
                    &self.source,
                );
                Ok(())
            }
            Err(e) => {
                self.recorder.warning(
                    set,
                    "FailedDelete",
                    format!(
                        "delete Pod {} in StatefulSet {} failed error: {}",
                        object::name(pod),
                        object::name(set),
                        e.message
                    ),
                    &self.source,
                );
                Err(e)
            }
        }
    }

    async fn create_pod(
        &self,
        set: &Value,
        ordinal: i64,
        revision: &Revision,
    ) -> Result<(), ApiError> {
        let Some(rt) = self.api.catalog.get("", "v1", "pods") else {
            return Ok(());
        };
        let ns = object::namespace(set);
        let name = format!("{}-{ordinal}", object::name(set));
        let owner = podutil::new_controller_ref(set, "apps/v1", "StatefulSet");
        let mut pod = podutil::pod_from_template(&revision.template, ns, owner);
        pod["metadata"]["name"] = json!(name);
        if !pod["metadata"].get("labels").is_some_and(Value::is_object) {
            pod["metadata"]["labels"] = json!({});
        }
        pod["metadata"]["labels"][REVISION_LABEL] = json!(revision.name);
        pod["metadata"]["labels"][POD_NAME_LABEL] = json!(name);
        pod["metadata"]["labels"][POD_INDEX_LABEL] = json!(ordinal.to_string());
        pod["spec"]["hostname"] = json!(name);
        let service = podutil::str_at(set, "/spec/serviceName");
        if !service.is_empty() {
            pod["spec"]["subdomain"] = json!(service);
        }
        match self
            .api
            .create(&rt, Some(ns), pod, &podutil::writer(CONTROLLER_MANAGER))
            .await
        {
            Ok(_) => {
                self.recorder.normal(
                    set,
                    "SuccessfulCreate",
                    format!(
                        "create Pod {name} in StatefulSet {} successful",
                        object::name(set)
                    ),
                    &self.source,
                );
                Ok(())
            }
            Err(e) if e.reason == "AlreadyExists" => Ok(()),
            Err(e) => {
                self.recorder.warning(
                    set,
                    "FailedCreate",
                    format!(
                        "create Pod {name} in StatefulSet {} failed error: {}",
                        object::name(set),
                        e.message
                    ),
                    &self.source,
                );
                Err(e)
            }
        }
    }

    /// Reconciles one StatefulSet.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(set) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        if object::is_deleting(&set) {
            return Ok(None);
        }
        let Some(selector) = podutil::selector_of(&set) else {
            return Ok(None);
        };
        let owner = podutil::new_controller_ref(&set, "apps/v1", "StatefulSet");
        let revisions = history::claim(&self.api, &self.informer, &set, &selector, &owner).await?;
        let (current, update, collision) = self.revisions(&set, &owner, &revisions).await?;
        let current = Revision::of(&set, &current);
        let update = Revision::of(&set, &update);
        self.update(&set, &current, &update).await?;
        self.informer.catch_up().await;
        let again = self
            .update_status(&key, &current.name, &update.name, collision)
            .await?;
        self.truncate_history(&set, &revisions, &current.name, &update.name)
            .await?;
        Ok(again)
    }

    /// The current and update revisions and the collision count
    /// (`getStatefulSetRevisions`): the update revision holds the set's
    /// template (the newest revision if it does, an older one renumbered to
    /// the next number, or a new one); the current one is the revision
    /// `status.currentRevision` names, else the update revision.
    async fn revisions(
        &self,
        set: &Value,
        owner: &Value,
        revisions: &[Arc<Value>],
    ) -> Result<(Arc<Value>, Arc<Value>, i64), ApiError> {
        let mut collision = int_at(set, "/status/collisionCount").unwrap_or(0);
        let patch = templates::replace_patch(set);
        let next = revisions.last().map_or(0, |r| history::number(r)) + 1;
        let equal = revisions.iter().rev().find(|r| history::data(r) == &patch);
        let update = match (equal, revisions.last()) {
            (Some(eq), Some(last)) if history::data(last) == history::data(eq) => last.clone(),
            (Some(eq), _) => history::renumber(&self.api, eq, next).await?,
            (None, _) => {
                self.create_revision(set, owner, patch, next, &mut collision)
                    .await?
            }
        };
        let named = podutil::str_at(set, "/status/currentRevision");
        let current = revisions
            .iter()
            .find(|r| !named.is_empty() && object::name(r) == named)
            .cloned()
            .unwrap_or_else(|| update.clone());
        Ok((current, update, collision))
    }

    /// Creates a revision of the set's template, counting name collisions
    /// with revisions of other templates (`CreateControllerRevision`).
    async fn create_revision(
        &self,
        set: &Value,
        owner: &Value,
        patch: Value,
        revision: i64,
        collision: &mut i64,
    ) -> Result<Arc<Value>, ApiError> {
        let label = history::hash_data(&patch, Some(*collision));
        let ns = object::namespace(set);
        loop {
            let hash = history::hash_data(&patch, Some(*collision));
            let name = history::name_for(object::name(set), &hash);
            let body =
                history::new_revision(set, owner.clone(), &name, &label, patch.clone(), revision);
            match history::create(&self.api, body).await {
                Ok(cr) => return Ok(cr),
                Err(e) if e.reason == "AlreadyExists" && *collision < i64::from(i32::MAX) => {
                    if let Some(existing) = history::get(&self.api, ns, &name).await?
                        && history::data(&existing) == &patch
                    {
                        return Ok(existing);
                    }
                    *collision += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Deletes the oldest revisions beyond `revisionHistoryLimit` that are
    /// neither current, nor the update revision, nor used by a pod
    /// (`truncateHistory`).
    async fn truncate_history(
        &self,
        set: &Value,
        revisions: &[Arc<Value>],
        current: &str,
        update: &str,
    ) -> Result<(), ApiError> {
        let pods = self.informer.controlled_by(Kind::Pod, object::uid(set));
        let live = |name: &str| {
            name == current || name == update || pods.iter().any(|p| revision_of(p) == name)
        };
        let unused: Vec<&Arc<Value>> = revisions
            .iter()
            .filter(|r| !live(object::name(r)))
            .collect();
        let limit = int_at(set, "/spec/revisionHistoryLimit")
            .unwrap_or(10)
            .max(0);
        let excess = unused.len().saturating_sub(limit as usize);
        for cr in unused.into_iter().take(excess) {
            history::delete(&self.api, cr).await?;
        }
        Ok(())
    }

    async fn update(
        &self,
        set: &Value,
        current: &Revision,
        update: &Revision,
    ) -> Result<(), ApiError> {
        let name = object::name(set).to_string();
        let replicas = int_at(set, "/spec/replicas").unwrap_or(1).max(0);
        let start = int_at(set, "/spec/ordinals/start").unwrap_or(0).max(0);
        let monotonic = podutil::str_at(set, "/spec/podManagementPolicy") != "Parallel";
        let min_ready = int_at(set, "/spec/minReadySeconds").unwrap_or(0);
        let now = podutil::now();
        let mut slots: Vec<Option<Arc<Value>>> = vec![None; replicas as usize];
        let mut condemned: Vec<(i64, Arc<Value>)> = Vec::new();
        for pod in self.informer.controlled_by(Kind::Pod, object::uid(set)) {
            match ordinal_of(&name, &pod) {
                Some(o) if o >= start && o < start + replicas => {
                    slots[(o - start) as usize] = Some(pod);
                }
                Some(o) => condemned.push((o, pod)),
                None => condemned.push((i64::MAX, pod)),
            }
        }
        condemned.sort_by_key(|(o, _)| *o);
        // Create, recreate and wait for the replicas in order.
        for (i, slot) in slots.iter().enumerate() {
            let ordinal = start + i as i64;
            let step = match slot {
                Some(pod) if podutil::is_terminal(pod) => {
                    if !object::is_deleting(pod) {
                        self.delete_pod(set, pod).await?;
                    }
                    Step::Wait
                }
                None => {
                    let revision = if below_partition(set, ordinal, start) {
                        current
                    } else {
                        update
                    };
                    self.create_pod(set, ordinal, revision).await?;
                    if monotonic {
                        Step::Wait
                    } else {
                        Step::Continue
                    }
                }
                Some(pod) if monotonic && object::is_deleting(pod) => Step::Wait,
                Some(pod) if monotonic && !healthy(pod, min_ready, now) => Step::Wait,
                Some(_) => Step::Continue,
            };
            if matches!(step, Step::Wait) && monotonic {
                return Ok(());
            }
        }
        // Scale down from the highest ordinal.
        let first_unhealthy = condemned
            .iter()
            .find(|(_, p)| !running_and_ready(p))
            .map(|(_, p)| object::uid(p).to_string());
        for (_, pod) in condemned.iter().rev() {
            if object::is_deleting(pod) {
                if monotonic {
                    return Ok(());
                }
                continue;
            }
            if monotonic
                && !running_and_ready(pod)
                && first_unhealthy.as_deref() != Some(object::uid(pod))
            {
                return Ok(());
            }
            self.delete_pod(set, pod).await?;
            if monotonic {
                return Ok(());
            }
        }
        // Rolling update from the highest ordinal down to the partition.
        if podutil::str_at(set, "/spec/updateStrategy/type") == "OnDelete" {
            return Ok(());
        }
        let partition = int_at(set, "/spec/updateStrategy/rollingUpdate/partition")
            .unwrap_or(0)
            .clamp(0, replicas);
        for i in (partition..replicas).rev() {
            let Some(pod) = &slots[i as usize] else {
                continue;
            };
            if revision_of(pod) != update.name && !object::is_deleting(pod) {
                self.delete_pod(set, pod).await?;
                return Ok(());
            }
            if !healthy(pod, min_ready, now) {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn update_status(
        &self,
        key: &str,
        current_rev: &str,
        update_rev: &str,
        collision: i64,
    ) -> Result<Option<Duration>, ApiError> {
        let Some(set) = self.informer.get_key(key) else {
            return Ok(None);
        };
        let now = podutil::now();
        let min_ready = int_at(&set, "/spec/minReadySeconds").unwrap_or(0);
        let (mut created, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
        let mut again: Option<Duration> = None;
        for pod in self.informer.controlled_by(Kind::Pod, object::uid(&set)) {
            let is_created = !podutil::phase(&pod).is_empty();
            if is_created {
                created += 1;
            }
            if running_and_ready(&pod) {
                ready += 1;
                match podutil::availability(&pod, min_ready, now) {
                    (true, _) => available += 1,
                    (false, Some(wait)) => again = podutil::sooner(again, wait),
                    _ => {}
                }
            }
            if is_created && !object::is_deleting(&pod) {
                if revision_of(&pod) == current_rev {
                    current += 1;
                }
                if revision_of(&pod) == update_rev {
                    updated += 1;
                }
            }
        }
        let mut current_revision = current_rev.to_string();
        let rolling = podutil::str_at(&set, "/spec/updateStrategy/type") != "OnDelete";
        if rolling && updated == created && ready == created {
            current = updated;
            current_revision = update_rev.to_string();
        }
        let mut status = json!({
            "replicas": created,
            "availableReplicas": available,
            "currentRevision": current_revision,
            "updateRevision": update_rev,
            "collisionCount": collision,
        });
        podutil::set_counts(
            &mut status,
            &[
                ("readyReplicas", ready),
                ("currentReplicas", current),
                ("updatedReplicas", updated),
            ],
        );
        let generation = object::generation(&set);
        if generation > 0 {
            status["observedGeneration"] = json!(generation);
        }
        if let Some(c) = set.pointer("/status/conditions") {
            status["conditions"] = c.clone();
        }
        type Status = k8s_openapi::api::apps::v1::StatefulSetStatus;
        if !writes::update_status::<Status>(&self.api, Kind::StatefulSet, &set, &status).await? {
            return Ok(None);
        }
        Ok(again.map(|d| d + Duration::from_secs(1)))
    }
}
