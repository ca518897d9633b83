//! Evicting a pod (kube's `EvictionREST`, `POST .../pods/<name>/eviction`):
//! the pod is deleted only when the one PodDisruptionBudget selecting it
//! allows another disruption, which the eviction takes (decrementing
//! `status.disruptionsAllowed` and recording the pod in
//! `status.disruptedPods`). Finished, pending and terminating pods are
//! deleted without looking at budgets, unready ones as the budget's
//! `unhealthyPodEvictionPolicy` says. A pod being evicted first gets a
//! `DisruptionTarget` condition. Also the budget's `DisruptionAllowed`
//! condition, which the disruption controller shares.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Api, DeleteOptions, ListOptions, Target, WriteOptions};
use crate::object;
use crate::resources::ResourceType;
use crate::resources::kind::Known;
use crate::selectors::LabelSelector;
use crate::status::{ApiError, ResourceRef, StatusCause};

/// The message of an eviction refused by a budget.
pub const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// The message of an eviction of a pod several budgets select.
pub const MULTIPLE_BUDGETS: &str = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// Most entries of `status.disruptedPods` before evictions are refused
/// (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// Attempts at deleting a pod whose budget does not matter when the pod
/// keeps changing underneath, and the pause between them (`EvictionsRetry`).
const ATTEMPTS: usize = 20;
const PAUSE: Duration = Duration::from_millis(500);

/// The field manager of the writes an eviction makes (kube-apiserver's own
/// client).
const MANAGER: &str = "kube-apiserver";

/// The `DisruptionAllowed` condition of a budget's status.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";

/// One eviction.
#[derive(Debug, Clone)]
pub struct Evict<'a> {
    /// The pods resource the eviction was posted to.
    pub pods: &'a Arc<ResourceType>,
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The pod's name.
    pub name: &'a str,
    /// How the pod is deleted (the Eviction's `deleteOptions`, with the
    /// request's dry run).
    pub options: DeleteOptions,
}

/// The 429 of an eviction a budget refuses, with its `DisruptionBudget` cause.
fn too_many_requests(cause: String, retry_after: Option<u64>) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", VIOLATION);
    e.causes.push(StatusCause {
        reason: "DisruptionBudget".into(),
        message: cause,
        field: String::new(),
    });
    e.retry_after_seconds = retry_after;
    e
}

/// The 429 while the disruption controller has not caught up with a budget.
fn still_processing(budget: &str) -> ApiError {
    too_many_requests(
        format!("The disruption budget {budget} is still being processed by the server."),
        Some(10),
    )
}

fn budget_forbidden(budget: &str, why: &str) -> ApiError {
    ApiError::forbidden(
        ResourceRef {
            group: "policy",
            resource: "poddisruptionbudget",
        },
        budget,
        why,
    )
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn resource_version(obj: &Value) -> String {
    object::meta_str(obj, "resourceVersion")
        .unwrap_or("")
        .to_string()
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True"))
            })
        })
}

/// Pods whose eviction needs no budget: finished, pending or terminating.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || object::is_deleting(pod)
}

/// Whether the delete of a pod whose budget does not matter must still
/// not race with a change of the pod (it could have become ready).
fn enforces_resource_version(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !object::is_deleting(pod)
}

/// The label selector of a budget (`None` for an invalid one, which selects
/// nothing; a missing one selects nothing, an empty one everything).
pub fn budget_selector(pdb: &Value) -> Option<LabelSelector> {
    let v = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
    LabelSelector::from_label_selector_value(v).ok()
}

/// Sets the `DisruptionAllowed` condition of a budget's `status` from its
/// `disruptionsAllowed` (`UpdateDisruptionAllowedCondition`).
pub fn set_disruption_allowed_condition(status: &mut Value) {
    let allowed = int(status, "/disruptionsAllowed") > 0;
    let (state, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let generation = int(status, "/observedGeneration");
    set_condition(status, state, reason, "", generation);
}

/// `meta.SetStatusCondition` of the `DisruptionAllowed` type on a budget's
/// `status`: the transition time changes only with the condition's status.
pub fn set_condition(
    status: &mut Value,
    state: &str,
    reason: &str,
    message: &str,
    generation: i64,
) {
    if !status.is_object() {
        *status = json!({});
    }
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return;
    };
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(DISRUPTION_ALLOWED));
    let mut new = Map::new();
    new.insert("type".into(), json!(DISRUPTION_ALLOWED));
    new.insert("status".into(), json!(state));
    if generation != 0 {
        new.insert("observedGeneration".into(), json!(generation));
    }
    match existing {
        Some(c) => {
            let since = match c.get("status").and_then(Value::as_str) == Some(state) {
                true => c.get("lastTransitionTime").cloned(),
                false => None,
            };
            new.insert(
                "lastTransitionTime".into(),
                since.unwrap_or_else(|| json!(object::now_rfc3339())),
            );
            new.insert("reason".into(), json!(reason));
            new.insert("message".into(), json!(message));
            *c = Value::Object(new);
        }
        None => {
            new.insert("lastTransitionTime".into(), json!(object::now_rfc3339()));
            new.insert("reason".into(), json!(reason));
            new.insert("message".into(), json!(message));
            conditions.push(Value::Object(new));
        }
    }
}

/// Takes one disruption from a budget for `pod` (`checkAndDecrement`):
/// refuses when the budget has not been processed, allows none, or has too
/// many evictions its controller has not seen yet.
fn take_disruption(pdb: &mut Value, pod: &str, dry_run: bool) -> Result<(), ApiError> {
    let name = object::name(pdb).to_string();
    if int(pdb, "/status/observedGeneration") < object::generation(pdb) {
        return Err(still_processing(&name));
    }
    let allowed = int(pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(budget_forbidden(
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(budget_forbidden(
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int(pdb, "/status/desiredHealthy"),
                int(pdb, "/status/currentHealthy"),
            ),
            None,
        ));
    }
    let status = &mut pdb["status"];
    status["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        set_disruption_allowed_condition(status);
    }
    if dry_run {
        return Ok(());
    }
    if !status["disruptedPods"].is_object() {
        status["disruptedPods"] = json!({});
    }
    status["disruptedPods"][pod] = json!(object::now_rfc3339());
    Ok(())
}

/// Sets a pod's `DisruptionTarget` condition as the eviction API does
/// (`UpdatePodCondition`: the transition time kept while the status holds).
fn mark_disruption_target(pod: &mut Value) {
    let mut new = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": object::now_rfc3339(),
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = pod["status"]["conditions"].as_array_mut() else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == Some(&json!("DisruptionTarget")))
    {
        Some(old) => {
            if old.get("status") == new.get("status")
                && let Some(t) = old.get("lastTransitionTime")
            {
                new["lastTransitionTime"] = t.clone();
            }
            *old = new;
        }
        None => conditions.push(new),
    }
}

/// A 409 about a pod whose preconditions do not hold (kube names the
/// resource `Pod` here).
fn precondition_conflict(name: &str, why: String) -> ApiError {
    ApiError::conflict(
        ResourceRef {
            group: "",
            resource: "Pod",
        },
        name,
        &why,
    )
}

fn check_preconditions(pod: &Value, opts: &DeleteOptions) -> Result<(), ApiError> {
    let name = object::name(pod);
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty())
        && uid != object::uid(pod)
    {
        return Err(precondition_conflict(
            name,
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                object::uid(pod)
            ),
        ));
    }
    if let Some(rv) = opts.precondition_rv.as_deref().filter(|r| !r.is_empty()) {
        let current = resource_version(pod);
        if rv != current {
            return Err(precondition_conflict(
                name,
                format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({current}). The object might have been modified"
                ),
            ));
        }
    }
    Ok(())
}

impl Api {
    /// Evicts a pod: deletes it when its disruption budget allows.
    ///
    /// # Errors
    /// 404 for a missing pod; 429 when the budget allows no disruption now
    /// (or has not been processed yet); 500 when several budgets select the
    /// pod; 403 for a budget in a bad state; 409 when the delete's
    /// preconditions fail; the delete's own errors.
    pub async fn evict_pod(&self, e: &Evict<'_>) -> Result<(), ApiError> {
        let pods = Target {
            rt: e.pods.clone(),
            namespace: Some(e.namespace.to_string()),
            name: Some(e.name.to_string()),
        };
        let original = &e.options;
        let rv_unset = original.precondition_rv.is_none();
        let mut attempt = 1;
        let pod = loop {
            let pod = self.get(&pods).await?;
            if !can_ignore_budget(&pod) {
                break pod;
            }
            let mut opts = original.clone();
            if enforces_resource_version(&pod) && rv_unset {
                opts.precondition_rv = Some(resource_version(&pod));
            }
            match self.mark_and_delete(&pods, opts).await {
                Ok(()) => return Ok(()),
                Err(err) if err.code == 409 && rv_unset && attempt < ATTEMPTS => {
                    attempt += 1;
                    tokio::time::sleep(PAUSE).await;
                }
                Err(err) => return Err(err),
            }
        };

        let budgets = self.budgets_of(&pod).await?;
        if budgets.len() > 1 {
            return Err(ApiError::new(500, "", MULTIPLE_BUDGETS));
        }
        let mut unguarded = false;
        let mut budget_name = String::new();
        if let Some(pdb) = budgets.first() {
            budget_name = object::name(pdb).to_string();
            if !is_ready(&pod) {
                let always = pdb
                    .pointer("/spec/unhealthyPodEvictionPolicy")
                    .and_then(Value::as_str)
                    == Some("AlwaysAllow");
                let desired = int(pdb, "/status/desiredHealthy");
                let current = int(pdb, "/status/currentHealthy");
                unguarded = always || (current >= desired && desired > 0);
            }
            if !unguarded {
                self.take_disruption_of(pdb, e.name, original.dry_run)
                    .await?;
            }
        }

        let mut opts = original.clone();
        if unguarded {
            // The pod must still be unready when it is deleted.
            opts.precondition_rv = Some(resource_version(&pod));
        }
        match self.mark_and_delete(&pods, opts).await {
            Err(err) if err.code == 409 && unguarded && rv_unset => {
                Err(still_processing(&budget_name))
            }
            other => other,
        }
    }

    /// The budgets in the pod's namespace whose selectors match it.
    async fn budgets_of(&self, pod: &Value) -> Result<Vec<Arc<Value>>, ApiError> {
        let Some(rt) = self.catalog.known(Known::DisruptionBudgets) else {
            return Ok(Vec::new());
        };
        let list = self
            .list(&rt, Some(object::namespace(pod)), &ListOptions::default())
            .await?;
        let labels = object::labels(pod);
        Ok(list
            .items
            .into_iter()
            .filter(|pdb| budget_selector(pdb).is_some_and(|s| s.matches(labels)))
            .collect())
    }

    /// Takes one disruption from the budget `listed` for the pod `pod`: in a
    /// dry run only checks the listed state, otherwise writes the budget's
    /// status, checking again on each attempt.
    async fn take_disruption_of(
        &self,
        listed: &Value,
        pod: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        if dry_run {
            let mut pdb = listed.clone();
            return take_disruption(&mut pdb, pod, true);
        }
        let Some(rt) = self.catalog.known(Known::DisruptionBudgets) else {
            return Ok(());
        };
        let t = Target {
            rt,
            namespace: Some(object::namespace(listed).to_string()),
            name: Some(object::name(listed).to_string()),
        };
        let opts = WriteOptions {
            field_manager: MANAGER.into(),
            ..WriteOptions::default()
        };
        self.mutate_status(&t, &opts, |cur| {
            let mut new = cur.clone();
            take_disruption(&mut new, pod, false)?;
            Ok(new)
        })
        .await?;
        Ok(())
    }

    /// Marks the pod a disruption target (unless a dry run), then deletes
    /// it with `opts`.
    async fn mark_and_delete(
        &self,
        pods: &Target,
        mut opts: DeleteOptions,
    ) -> Result<(), ApiError> {
        if !opts.dry_run {
            let writer = WriteOptions {
                field_manager: MANAGER.into(),
                ..WriteOptions::default()
            };
            let preconditions = opts.clone();
            let written = self
                .mutate_status(pods, &writer, |cur| {
                    check_preconditions(cur, &preconditions)?;
                    let mut new = cur.clone();
                    mark_disruption_target(&mut new);
                    Ok(new)
                })
                .await?;
            if opts.precondition_rv.is_some() {
                // The condition is our own change.
                opts.precondition_rv = Some(resource_version(&written.object));
            }
        }
        self.delete(pods, &opts).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": 1}, "status": status})
    }

    #[test]
    fn a_budget_allowing_none_refuses_with_its_counts() {
        let mut pdb = budget(
            json!({"observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 2, "currentHealthy": 2}),
        );
        let e = take_disruption(&mut pdb, "p", false).unwrap_err();
        assert_eq!(e.code, 429);
        assert_eq!(e.message, VIOLATION);
        assert_eq!(
            e.causes[0].message,
            "The disruption budget web needs 2 healthy pods and has 2 currently"
        );
        assert_eq!(e.causes[0].reason, "DisruptionBudget");
        assert_eq!(e.retry_after_seconds, None);
    }

    #[test]
    fn an_unprocessed_budget_asks_to_retry() {
        let mut pdb = budget(json!({"disruptionsAllowed": 3}));
        let e = take_disruption(&mut pdb, "p", false).unwrap_err();
        assert_eq!(e.code, 429);
        assert_eq!(e.retry_after_seconds, Some(10));
        assert_eq!(
            e.causes[0].message,
            "The disruption budget web is still being processed by the server."
        );
        let mut pdb = budget(json!({"observedGeneration": 1, "disruptionsAllowed": -1}));
        let e = take_disruption(&mut pdb, "p", false).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"
        );
    }

    #[test]
    fn taking_the_last_disruption_flips_the_condition() {
        let mut pdb = budget(json!({
            "observedGeneration": 1,
            "disruptionsAllowed": 1,
            "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods", "message": "", "observedGeneration": 1, "lastTransitionTime": "2020-01-01T00:00:00Z"}],
        }));
        take_disruption(&mut pdb, "p", false).unwrap();
        let s = &pdb["status"];
        assert_eq!(s["disruptionsAllowed"], 0);
        assert!(s["disruptedPods"]["p"].is_string());
        let c = &s["conditions"][0];
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "InsufficientPods");
        assert_ne!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");

        let mut dry = budget(json!({"observedGeneration": 1, "disruptionsAllowed": 2}));
        take_disruption(&mut dry, "p", true).unwrap();
        assert!(dry["status"].get("disruptedPods").is_none());
    }

    #[test]
    fn the_disruption_target_condition_keeps_its_transition_time() {
        let mut pod = json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
        mark_disruption_target(&mut pod);
        let c = &pod["status"]["conditions"][0];
        assert_eq!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(c["reason"], "EvictionByEvictionAPI");
        assert_eq!(c["message"], "Eviction API: evicting");
    }

    #[test]
    fn budgets_without_a_selector_select_nothing() {
        let labels = json!({"app": "web"});
        let labels = labels.as_object();
        assert!(budget_selector(&json!({"spec": {}})).is_none_or(|s| !s.matches(labels)));
        assert!(
            budget_selector(&json!({"spec": {"selector": {}}})).is_some_and(|s| s.matches(labels))
        );
        assert!(
            budget_selector(&json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}}))
                .is_some_and(|s| s.matches(labels))
        );
    }
}
