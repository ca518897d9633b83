//! Quota scopes: the `spec.scopes` and `spec.scopeSelector` of a
//! ResourceQuota, and whether a pod is in them (Terminating,
//! NotTerminating, BestEffort, NotBestEffort, PriorityClass,
//! CrossNamespacePodAffinity), as kube's pod evaluator decides.

use serde_json::{Value, json};

use crate::quantity::Quantity;
use crate::selectors::LabelSelector;

/// One scope requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeSelector {
    /// The scope (`BestEffort`, `PriorityClass`, ...).
    pub scope: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In`/`NotIn`.
    pub values: Vec<String>,
}

/// A quota's scopes (each `Exists`) and its scope selector's expressions.
pub fn of_quota(quota: &Value) -> Vec<ScopeSelector> {
    let spec = &quota["spec"];
    let mut out: Vec<ScopeSelector> = spec["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeSelector {
            scope: s.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        })
        .collect();
    for e in spec["scopeSelector"]["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push(ScopeSelector {
            scope: e["scopeName"].as_str().unwrap_or("").to_string(),
            operator: e["operator"].as_str().unwrap_or("").to_string(),
            values: e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        });
    }
    out
}

/// Whether a pod is in the scope `s`.
pub fn pod_matches(s: &ScopeSelector, pod: &Value) -> bool {
    let spec = &pod["spec"];
    match s.scope.as_str() {
        "Terminating" => terminating(spec),
        "NotTerminating" => !terminating(spec),
        "BestEffort" => best_effort(spec),
        "NotBestEffort" => !best_effort(spec),
        "PriorityClass" => {
            let class = spec["priorityClassName"].as_str().unwrap_or("");
            if s.operator == "Exists" {
                return !class.is_empty();
            }
            let labels = if class.is_empty() {
                None
            } else {
                json!({"PriorityClass": class}).as_object().cloned()
            };
            let expression = json!({"matchExpressions": [{
                "key": "PriorityClass",
                "operator": s.operator,
                "values": s.values,
            }]});
            LabelSelector::from_label_selector_value(&expression)
                .is_ok_and(|sel| sel.matches(labels.as_ref()))
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
        _ => false,
    }
}

fn terminating(spec: &Value) -> bool {
    spec["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0)
}

/// `qos.GetPodQOS(pod) == BestEffort`: no container asks for or is limited
/// in cpu or memory.
fn best_effort(spec: &Value) -> bool {
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|f| spec[f].as_array().into_iter().flatten());
    !containers.into_iter().any(|c| {
        ["requests", "limits"].into_iter().any(|which| {
            ["cpu", "memory"].into_iter().any(|r| {
                Quantity::from_value(&c["resources"][which][r]).is_some_and(|q| q.sign() > 0)
            })
        })
    })
}

fn cross_namespace_affinity(spec: &Value) -> bool {
    let affinity = &spec["affinity"];
    let cross = |t: &Value| {
        t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].into_iter().any(|kind| {
        let a = &affinity[kind];
        a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .any(cross)
            || a["preferredDuringSchedulingIgnoredDuringExecution"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| cross(&w["podAffinityTerm"]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_scopes() {
        let quota = json!({"spec": {
            "scopes": ["BestEffort"],
            "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
            ]},
        }});
        let scopes = of_quota(&quota);
        assert_eq!(scopes.len(), 2);
        let plain = json!({"spec": {"containers": [{"name": "a"}], "priorityClassName": "high"}});
        assert!(scopes.iter().all(|s| pod_matches(s, &plain)));
        let sized = json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
            "activeDeadlineSeconds": 5,
        }});
        assert!(!pod_matches(&scopes[0], &sized));
        assert!(!pod_matches(&scopes[1], &sized));
        let term = ScopeSelector {
            scope: "Terminating".into(),
            operator: "Exists".into(),
            values: vec![],
        };
        assert!(pod_matches(&term, &sized));
        assert!(!pod_matches(&term, &plain));
    }
}
