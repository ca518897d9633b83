//! kube 1.32 defaults of autoscaling/v2 HorizontalPodAutoscalers:
//! `minReplicas` 1, a CPU utilization metric (80%) when none is given, and
//! the missing parts of a given `behavior` from kube's scale-up and
//! scale-down rules.

use super::{Obj, obj_mut, set_val};
use serde_json::{Value, json};

/// `GenerateHPAScaleUpRules` / `GenerateHPAScaleDownRules`: the default rules
/// with the given rules' non-nil fields copied over.
fn scaling_rules(given: Option<&Value>, up: bool) -> Value {
    let mut rules = if up {
        json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        })
    } else {
        json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        })
    };
    if let (Some(Value::Object(from)), Some(to)) = (given, rules.as_object_mut()) {
        for k in ["selectPolicy", "stabilizationWindowSeconds", "policies"] {
            if let Some(v) = from.get(k).filter(|v| !v.is_null()) {
                to.insert(k.into(), v.clone());
            }
        }
    }
    rules
}

/// `SetDefaults_HorizontalPodAutoscaler` (v2).
pub(super) fn horizontal_pod_autoscaler(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_val(spec, "minReplicas", json!(1));
    let no_metrics = match spec.get("metrics") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(Value::Object(behavior)) = spec.get_mut("behavior") {
        let up = scaling_rules(behavior.get("scaleUp"), true);
        let down = scaling_rules(behavior.get("scaleDown"), false);
        behavior.insert("scaleUp".into(), up);
        behavior.insert("scaleDown".into(), down);
    }
}
