//! The strategy of autoscaling/v1 HorizontalPodAutoscalers, stored as
//! autoscaling/v2: v1's `targetCPUUtilizationPercentage` and
//! `currentCPUUtilizationPercentage` are the v2 CPU utilization metric,
//! defaulted, decoded and validated as kube does for v1 requests (the
//! validation runs on the v2 form, as kube's runs on the internal one);
//! the rest of v2 travels in kube's round-trip annotations (see
//! [`super::autoscaling_annotations`]).

use serde_json::{Map, Value, json};

use super::autoscaling_annotations as annotations;
use super::{Strategy, builtin_validate};
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::validation::FieldError;

/// autoscaling/v1 HorizontalPodAutoscalers.
#[derive(Debug, Default, Clone, Copy)]
pub struct HpaV1Strategy;

/// The CPU utilization v2 targets when none is given (kube's default).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

impl Strategy for HpaV1Strategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn normalize(&self, rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
        crate::typed::normalize(rt, obj)
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
            && spec.get("minReplicas").is_none_or(Value::is_null)
        {
            spec.insert("minReplicas".into(), json!(1));
        }
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let as_v2 = |v: &Value| {
            let mut v = v.clone();
            if let Some(map) = v.as_object_mut() {
                v1_to_v2(map);
            }
            v
        };
        let old = old.map(as_v2);
        builtin_validate(rt, &as_v2(obj), old.as_ref())
    }

    fn stored_of_view(&self, obj: &mut Map<String, Value>) {
        v1_to_v2(obj);
    }

    fn view_of_stored(&self, obj: &mut Map<String, Value>) {
        v2_to_v1(obj);
    }
}

fn is_cpu(metric: &Value) -> bool {
    metric["type"] == "Resource" && metric["resource"]["name"] == "cpu"
}

/// v1 → v2: the metrics kept in the round-trip annotations, then the CPU
/// target (kube's 80% when there is no metric at all); the observed CPU,
/// the current metrics, behavior and conditions from the annotations.
fn v1_to_v2(obj: &mut Map<String, Value>) {
    let kept = annotations::take_from_v1(obj);
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = kept.metrics;
        if let Some(target) = spec
            .remove("targetCPUUtilizationPercentage")
            .filter(|v| !v.is_null())
        {
            metrics.push(cpu_utilization_target(target));
        }
        if metrics.is_empty() {
            metrics.push(cpu_utilization_target(json!(DEFAULT_CPU_UTILIZATION)));
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        if let Some(b) = kept.behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        if let Some(current) = status
            .remove("currentCPUUtilizationPercentage")
            .filter(|v| !v.is_null())
        {
            status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": current}}}]),
            );
        }
        // The annotation holds more than the CPU utilization.
        if let Some(current) = kept.current_metrics {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = kept.conditions {
            status.insert("conditions".into(), Value::Array(conditions));
        }
        if !status.contains_key("desiredReplicas") {
            status.insert("desiredReplicas".into(), json!(0));
        }
    }
}

fn cpu_utilization_target(percent: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": percent}}})
}

/// v2 → v1: the first CPU metric's utilization becomes the CPU target and
/// the observed CPU utilization `currentCPUUtilizationPercentage`; what v1
/// has no field for goes into the round-trip annotations.
fn v2_to_v1(obj: &mut Map<String, Value>) {
    annotations::to_v1(obj);
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = spec.remove("metrics");
        spec.remove("behavior");
        let target = metrics
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|ms| ms.iter().find(|m| is_cpu(m)))
            .map(|m| m["resource"]["target"]["averageUtilization"].clone())
            .filter(|v| !v.is_null());
        if let Some(t) = target {
            spec.insert("targetCPUUtilizationPercentage".into(), t);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("conditions");
        let current = status
            .remove("currentMetrics")
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|ms| {
                ms.iter()
                    .filter(|m| is_cpu(m))
                    .filter_map(|m| m.pointer("/resource/current/averageUtilization"))
                    .rfind(|v| !v.is_null())
                    .cloned()
            });
        if let Some(c) = current {
            status.insert("currentCPUUtilizationPercentage".into(), c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_target_round_trips_through_v2() {
        let mut v1 = json!({"spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 55},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
                "currentCPUUtilizationPercentage": 40}});
        let map = v1.as_object_mut().unwrap();
        v1_to_v2(map);
        assert_eq!(
            map["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            55
        );
        assert_eq!(
            map["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
            40
        );
        v2_to_v1(map);
        assert_eq!(map["spec"]["targetCPUUtilizationPercentage"], 55);
        assert_eq!(map["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(map["spec"].get("metrics").is_none());
    }

    #[test]
    fn no_target_means_kube_s_default() {
        let mut v1 = json!({"spec": {"maxReplicas": 3}});
        let map = v1.as_object_mut().unwrap();
        v1_to_v2(map);
        v2_to_v1(map);
        assert_eq!(map["spec"]["targetCPUUtilizationPercentage"], 80);
    }

    #[test]
    fn other_metrics_round_trip_through_v1_before_the_cpu_target() {
        let mut v2 = json!({"metadata": {"name": "x"}, "spec": {"maxReplicas": 3, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
        ]}, "status": {"desiredReplicas": 1, "conditions": [
            {"type": "ScalingActive", "status": "False", "lastTransitionTime": "2025-01-01T00:00:00Z",
             "reason": "FailedGetResourceMetric", "message": "m"}]}});
        let map = v2.as_object_mut().unwrap();
        v2_to_v1(map);
        assert_eq!(map["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(map["status"].get("conditions").is_none());
        let annotations = map["metadata"]["annotations"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(annotations.contains_key(annotations::CONDITIONS));
        assert!(annotations.contains_key(annotations::METRIC_SPECS));
        v1_to_v2(map);
        let names: Vec<&Value> = map["spec"]["metrics"]
            .as_array()
            .map(|ms| ms.iter().map(|m| &m["resource"]["name"]).collect())
            .unwrap_or_default();
        assert_eq!(names, [&json!("memory"), &json!("cpu")]);
        assert_eq!(
            map["status"]["conditions"][0]["reason"],
            "FailedGetResourceMetric"
        );
        assert!(map["metadata"].get("annotations").is_none());
    }
}
