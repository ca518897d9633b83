//! The strategy of autoscaling/v1 HorizontalPodAutoscalers, stored as
//! autoscaling/v2: v1's `targetCPUUtilizationPercentage` and
//! `currentCPUUtilizationPercentage` are the v2 CPU utilization metric,
//! defaulted, decoded and validated as kube does for v1 requests (the
//! validation runs on the v2 form, as kube's runs on the internal one).

use serde_json::{Map, Value, json};

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

/// v1 → v2: the CPU target and the observed CPU become metrics.
fn v1_to_v2(obj: &mut Map<String, Value>) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let target = spec
            .remove("targetCPUUtilizationPercentage")
            .and_then(|v| v.as_i64())
            .unwrap_or(DEFAULT_CPU_UTILIZATION);
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": target}}}]),
        );
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
        if !status.contains_key("desiredReplicas") {
            status.insert("desiredReplicas".into(), json!(0));
        }
    }
}

/// v2 → v1: the CPU utilization metric becomes the CPU target; other
/// metrics, behavior and conditions have no v1 field.
fn v2_to_v1(obj: &mut Map<String, Value>) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = spec.remove("metrics");
        spec.remove("behavior");
        let target = metrics
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|ms| {
                ms.iter()
                    .find(|m| is_cpu(m) && m["resource"]["target"]["type"] == "Utilization")
            })
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
            .and_then(|ms| ms.iter().find(|m| is_cpu(m)).cloned())
            .map(|m| m["resource"]["current"]["averageUtilization"].clone())
            .filter(|v| !v.is_null());
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
}
