//! One autoscaler's sync (kube's `reconcileAutoscaler`): the target's scale
//! read through the scale subresource's semantics, the rescale to the
//! replica bounds, the conditions (`setCondition`) and the status
//! (`setStatus`, `updateStatusIfNeeded`).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::status::{ABLE_TO_SCALE, SCALING_ACTIVE, Scale, set_condition};
use super::{Autoscaler, TargetRef, metrics};
use crate::object;
use crate::podutil::{self, CONTROLLER_MANAGER};
use crate::registry::Target;
use crate::resources::ResourceType;
use crate::resources::kind::Sub;
use crate::status::ApiError;
use crate::writes;

type HpaStatus = k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;

pub(super) use crate::disruption::group_version;

/// What of an object its scale shows: uid, desired replicas and selector.
pub(super) fn scale_view(rt: &ResourceType, obj: &Value) -> (String, i64, String) {
    let scale = crate::registry::scale::scale_of(rt, obj);
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    let selector = scale["status"]["selector"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (object::uid(obj).to_string(), replicas, selector)
}

/// Why a target's scale could not be read: kube's error text, and whether
/// trying again soon could help (a store failure) or only a change of the
/// target will (a missing object or kind).
struct ScaleError {
    message: String,
    retry: Option<ApiError>,
}

impl ScaleError {
    fn final_(message: String) -> Self {
        ScaleError {
            message,
            retry: None,
        }
    }
}

/// Rebuilds the status from its replicas, metrics and rescale
/// (`setStatus`): only `lastScaleTime` and the conditions carry over.
fn set_status(
    status: &mut Map<String, Value>,
    current: i64,
    desired: i64,
    metrics: Option<Vec<Value>>,
    rescale: bool,
) {
    let mut new = Map::new();
    let mut last_scale = status.get("lastScaleTime").cloned();
    if rescale {
        last_scale = Some(json!(podutil::rfc3339(podutil::now())));
    }
    if let Some(t) = last_scale.filter(|t| !t.is_null()) {
        new.insert("lastScaleTime".into(), t);
    }
    // Go's omitempty: a zero currentReplicas and empty lists are left out.
    if current != 0 {
        new.insert("currentReplicas".into(), json!(current));
    }
    new.insert("desiredReplicas".into(), json!(desired));
    if let Some(m) = metrics.filter(|m| !m.is_empty()) {
        new.insert("currentMetrics".into(), Value::Array(m));
    }
    if let Some(c) = status.get("conditions").filter(|c| c.is_array()) {
        new.insert("conditions".into(), c.clone());
    }
    *status = new;
}

/// `setCurrentReplicasAndMetricsInStatus`: the desired replicas stay.
pub(super) fn set_current_replicas_and_metrics(
    status: &mut Map<String, Value>,
    current: i64,
    metrics: Option<Vec<Value>>,
) {
    let desired = status
        .get("desiredReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    set_status(status, current, desired, metrics, false);
}

impl Autoscaler {
    /// kube's `reconcileAutoscaler`.
    pub(super) async fn reconcile(
        &self,
        key: &str,
        hpa: &Value,
    ) -> Result<Option<Duration>, ApiError> {
        let mut status = hpa
            .get("status")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let target = TargetRef::of(hpa);
        let reference = format!("{}/{}/{}", target.kind, target.namespace, target.name);

        let scale = match self.get_scale(&target).await {
            Ok(s) => s,
            Err(e) => {
                self.recorder
                    .warning(hpa, "FailedGetScale", e.message.clone(), &self.source);
                set_condition(
                    &mut status,
                    ABLE_TO_SCALE,
                    "False",
                    "FailedGetScale",
                    format!(
                        "the HPA controller was unable to get the target's current scale: {}",
                        e.message
                    ),
                );
                self.update_status_if_needed(hpa, status).await?;
                tracing::debug!(
                    hpa = key,
                    error = e.message,
                    "failed to query scale subresource for {reference}"
                );
                return match e.retry {
                    Some(err) => Err(err),
                    None => Ok(None),
                };
            }
        };
        set_condition(
            &mut status,
            ABLE_TO_SCALE,
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        );
        let current = scale.replicas;
        let min = podutil::int_at(hpa, "/spec/minReplicas").unwrap_or(1);
        let max = podutil::int_at(hpa, "/spec/maxReplicas").unwrap_or(0);

        let (desired, reason) = if current == 0 && min != 0 {
            set_condition(
                &mut status,
                SCALING_ACTIVE,
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            );
            (None, "")
        } else if current > max {
            (
                Some(max),
                "Current number of replicas above Spec.MaxReplicas",
            )
        } else if current < min {
            (
                Some(min),
                "Current number of replicas below Spec.MinReplicas",
            )
        } else {
            // No metrics API is served, so no metric yields a replica count:
            // kube's path for "every metric is invalid".
            let failed = metrics::compute(self, key, hpa, &scale, &mut status).await;
            set_current_replicas_and_metrics(&mut status, current, failed.statuses);
            self.update_status_if_needed(hpa, status).await?;
            // (No metric at all cannot happen: defaulting adds the CPU one.)
            if !failed.error.is_empty() {
                self.recorder.warning(
                    hpa,
                    "FailedComputeMetricsReplicas",
                    failed.error.clone(),
                    &self.source,
                );
            }
            tracing::debug!(
                hpa = key,
                error = failed.error,
                "failed to compute desired number of replicas based on listed metrics for {reference}"
            );
            return Ok(None);
        };

        let Some(desired) = desired else {
            set_status(&mut status, current, current, None, false);
            self.update_status_if_needed(hpa, status).await?;
            return Ok(None);
        };
        if let Err(e) = self.set_scale(&scale, desired).await {
            self.recorder.warning(
                hpa,
                "FailedRescale",
                format!(
                    "New size: {desired}; reason: {reason}; error: {}",
                    e.message
                ),
                &self.source,
            );
            set_condition(
                &mut status,
                ABLE_TO_SCALE,
                "False",
                "FailedUpdateScale",
                format!(
                    "the HPA controller was unable to update the target scale: {}",
                    e.message
                ),
            );
            set_current_replicas_and_metrics(&mut status, current, None);
            self.update_status_if_needed(hpa, status).await?;
            return Err(e);
        }
        set_condition(
            &mut status,
            ABLE_TO_SCALE,
            "True",
            "SucceededRescale",
            format!("the HPA controller was able to update the target scale to {desired}"),
        );
        self.recorder.normal(
            hpa,
            "SuccessfulRescale",
            format!("New size: {desired}; reason: {reason}"),
            &self.source,
        );
        tracing::info!(
            hpa = key,
            current_replicas = current,
            desired_replicas = desired,
            reason,
            "Successfully rescaled"
        );
        set_status(&mut status, current, desired, None, true);
        self.update_status_if_needed(hpa, status).await?;
        Ok(None)
    }

    /// Reads the scale of the object a `scaleTargetRef` names: its group
    /// and kind mapped to a served resource, then the object's scale.
    async fn get_scale(&self, r: &TargetRef) -> Result<Scale, ScaleError> {
        let (group, _) =
            group_version(&r.api_version).map_err(|e| ScaleError::final_(e.to_string()))?;
        let Some(rt) = self
            .api
            .catalog
            .all()
            .into_iter()
            .find(|rt| rt.group == group && rt.kind == r.kind)
        else {
            return Err(ScaleError::final_(format!(
                "no matches for kind {:?} in group {:?}",
                r.kind, group
            )));
        };
        if !rt.serves(Sub::Scale) {
            return Err(ScaleError::final_(
                ApiError::path_not_found().message.clone(),
            ));
        }
        let target = Target {
            namespace: rt.namespaced.then(|| r.namespace.clone()),
            name: Some(r.name.clone()),
            rt: rt.clone(),
        };
        let obj = match self.api.get(&target).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Err(ScaleError::final_(e.message.clone())),
            Err(e) => {
                return Err(ScaleError {
                    message: e.message.clone(),
                    retry: Some(e),
                });
            }
        };
        let (_, replicas, selector) = scale_view(&rt, &obj);
        Ok(Scale {
            target,
            resource_version: object::meta_str(&obj, "resourceVersion")
                .unwrap_or("")
                .to_string(),
            replicas,
            selector,
        })
    }

    /// Writes the desired replicas through the target's scale, as of the
    /// version read (a 409 when it changed since).
    async fn set_scale(&self, scale: &Scale, replicas: i64) -> Result<(), ApiError> {
        self.api
            .set_replicas(
                &scale.target,
                json!(replicas),
                Some(scale.resource_version.as_str()),
                &podutil::writer(CONTROLLER_MANAGER),
            )
            .await
            .map(|_| ())
    }

    /// Writes the status through the `status` subresource when it differs
    /// from the one read (`updateStatusIfNeeded`), as of the version read.
    async fn update_status_if_needed(
        &self,
        hpa: &Value,
        status: Map<String, Value>,
    ) -> Result<(), ApiError> {
        let status = Value::Object(status);
        if !podutil::status_changed::<HpaStatus>(hpa, &status) {
            return Ok(());
        }
        let t = Target {
            rt: self.hpas.clone(),
            namespace: Some(object::namespace(hpa).to_string()),
            name: Some(object::name(hpa).to_string()),
        };
        let written = writes::replace_status_seen(&self.api, &t, hpa, &status).await;
        match written {
            Ok(_) => Ok(()),
            Err(e) => {
                self.recorder
                    .warning(hpa, "FailedUpdateStatus", e.message.clone(), &self.source);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_place_and_transition_time() {
        let mut status = Map::new();
        set_condition(&mut status, ABLE_TO_SCALE, "True", "SucceededGetScale", "a");
        set_condition(
            &mut status,
            SCALING_ACTIVE,
            "False",
            "FailedGetResourceMetric",
            "b",
        );
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        assert_eq!(conditions[0]["type"], ABLE_TO_SCALE);
        let mut old = conditions.clone();
        old[0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        status.insert("conditions".into(), json!(old));
        set_condition(&mut status, ABLE_TO_SCALE, "True", "SucceededRescale", "c");
        assert_eq!(
            status["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(status["conditions"][0]["reason"], "SucceededRescale");
        set_condition(&mut status, ABLE_TO_SCALE, "False", "FailedGetScale", "d");
        assert_ne!(
            status["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(status["conditions"][1]["type"], SCALING_ACTIVE);
    }

    #[test]
    fn status_is_rebuilt_with_go_s_empty_fields_left_out() {
        let mut status = Map::new();
        status.insert("observedGeneration".into(), json!(3));
        status.insert("desiredReplicas".into(), json!(4));
        set_current_replicas_and_metrics(&mut status, 0, Some(vec![json!({"type": ""})]));
        assert_eq!(
            Value::Object(status.clone()),
            json!({"desiredReplicas": 4, "currentMetrics": [{"type": ""}]})
        );
        set_status(&mut status, 2, 3, None, true);
        assert_eq!(status["currentReplicas"], 2);
        assert_eq!(status["desiredReplicas"], 3);
        assert!(status["lastScaleTime"].is_string());
        assert!(status.get("currentMetrics").is_none());
    }
}
