//! The Deployment's status: counts, the Available and Progressing conditions,
//! paused rollouts, progress deadlines and old revisions cleaned up.

#[allow(unused_imports)]
use super::*;

impl DeploymentController {
    pub(super) async fn check_paused_conditions(&self, d: &mut Dep) -> Result<(), ApiError> {
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
    pub(super) async fn cleanup(&self, d: &Dep, old: &[Arc<Value>]) -> Result<(), ApiError> {
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
    pub(super) fn calculate_status(
        &self,
        d: &Dep,
        all: &[Arc<Value>],
        new: Option<&Arc<Value>>,
    ) -> Value {
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

    pub(super) fn deployment_complete(&self, d: &Dep, s: &Value) -> bool {
        let g = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
        g("updatedReplicas") == d.replicas
            && g("replicas") == d.replicas
            && g("availableReplicas") == d.replicas
            && g("observedGeneration") >= d.generation
    }

    pub(super) fn deployment_progressing(&self, d: &Dep, new: &Value) -> bool {
        let n = |k: &str| new.get(k).and_then(Value::as_i64).unwrap_or(0);
        let o = |k: &str| d.status_int(k);
        n("updatedReplicas") > o("updatedReplicas")
            || n("replicas") - n("updatedReplicas") < o("replicas") - o("updatedReplicas")
            || n("readyReplicas") > o("readyReplicas")
            || n("availableReplicas") > o("availableReplicas")
    }

    pub(super) fn deadline_from(&self, d: &Dep, cond: &Value) -> Option<jiff::Timestamp> {
        let last = cond
            .get("lastUpdateTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time)?;
        let secs = d.progress_deadline?.max(0) as u64;
        Some(podutil::after(last, Duration::from_secs(secs)))
    }

    pub(super) fn timed_out(&self, d: &Dep, new: &Value) -> bool {
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
    pub(super) async fn sync_status(
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
    pub(super) async fn sync_rollout_status(
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
    pub(super) fn requeue_stuck(&self, d: &Dep, s: &Value) -> Option<Duration> {
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
