//! Row cells of the HorizontalPodAutoscaler printer, with its "Targets"
//! column (`formatHPAMetrics`: "cpu: 40%/80%", "<unknown>/80%", "+ N more...").
//! The printer reads the internal object, so autoscaling/v1 and v2 requests
//! print alike; the stored object is v2, and a v1-shaped object is read the
//! way kube converts it (its CPU target becomes a Resource metric).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::quantity::quantity_ptr;
use super::{age, arr, get, int, name, text};

const UNKNOWN: &str = "<unknown>";

fn set(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// The metric specs and statuses, as the internal (v2-shaped) object has them.
fn metric_lists(obj: &Value) -> (Vec<Value>, Vec<Value>) {
    if let Some(specs) = get(obj, &["spec", "metrics"]).and_then(Value::as_array) {
        return (
            specs.clone(),
            arr(obj, &["status", "currentMetrics"]).to_vec(),
        );
    }
    let mut specs = Vec::new();
    let mut statuses = Vec::new();
    if let Some(t) = get(obj, &["spec", "targetCPUUtilizationPercentage"]).and_then(Value::as_i64) {
        specs.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": t}}}));
    }
    if let Some(c) =
        get(obj, &["status", "currentCPUUtilizationPercentage"]).and_then(Value::as_i64)
    {
        statuses.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": c}}}));
    }
    (specs, statuses)
}

/// An Object or External metric: `current/target`, with " (avg)" for an
/// average-value target.
fn value_metric(spec: Option<&Value>, status: Option<&Value>) -> String {
    let spec = spec.unwrap_or(&Value::Null);
    match set(get(spec, &["target", "averageValue"])) {
        Some(target) => {
            let current = status
                .and_then(|s| set(get(s, &["current", "averageValue"])))
                .map_or_else(|| UNKNOWN.to_string(), |q| quantity_ptr(Some(q)));
            format!("{current}/{} (avg)", quantity_ptr(Some(target)))
        }
        None => {
            let current = status.map_or_else(
                || UNKNOWN.to_string(),
                |s| quantity_ptr(get(s, &["current", "value"])),
            );
            format!(
                "{current}/{}",
                quantity_ptr(get(spec, &["target", "value"]))
            )
        }
    }
}

/// A Resource or ContainerResource metric: `name: current/target`, as
/// quantities or utilization percentages (`<auto>` without a target).
fn resource_metric(spec: Option<&Value>, status: Option<&Value>) -> String {
    let spec = spec.unwrap_or(&Value::Null);
    let resource = text(spec, &["name"]);
    match set(get(spec, &["target", "averageValue"])) {
        Some(target) => {
            let current = status.map_or_else(
                || UNKNOWN.to_string(),
                |s| quantity_ptr(get(s, &["current", "averageValue"])),
            );
            format!("{resource}: {current}/{}", quantity_ptr(Some(target)))
        }
        None => {
            let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|u| format!("{u}%"));
            let current = status
                .and_then(|s| percent(get(s, &["current", "averageUtilization"])))
                .unwrap_or_else(|| UNKNOWN.to_string());
            let target = percent(get(spec, &["target", "averageUtilization"]))
                .unwrap_or_else(|| "<auto>".to_string());
            format!("{resource}: {current}/{target}")
        }
    }
}

/// `formatHPAMetrics`: the first two metrics, then "+ N more...".
pub(super) fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = |key: &str| statuses.get(i).and_then(|s| set(get(s, &[key])));
            match text(spec, &["type"]).as_str() {
                "External" => value_metric(get(spec, &["external"]), status("external")),
                "Object" => value_metric(get(spec, &["object"]), status("object")),
                "Pods" => {
                    let current = status("pods").map_or_else(
                        || UNKNOWN.to_string(),
                        |s| quantity_ptr(get(s, &["current", "averageValue"])),
                    );
                    let target = quantity_ptr(get(spec, &["pods", "target", "averageValue"]));
                    format!("{current}/{target}")
                }
                "Resource" => resource_metric(get(spec, &["resource"]), status("resource")),
                "ContainerResource" => resource_metric(
                    get(spec, &["containerResource"]),
                    status("containerResource"),
                ),
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        format!("{} + {} more...", list.join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

pub(super) fn horizontal_pod_autoscaler(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (specs, statuses) = metric_lists(obj);
    let reference = format!(
        "{}/{}",
        text(obj, &["spec", "scaleTargetRef", "kind"]),
        text(obj, &["spec", "scaleTargetRef", "name"])
    );
    let min_pods = get(obj, &["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |n| n.to_string());
    vec![
        json!(name(obj)),
        json!(reference),
        json!(format_metrics(&specs, &statuses)),
        json!(min_pods),
        json!(int(obj, &["spec", "maxReplicas"])),
        json!(int(obj, &["status", "currentReplicas"])),
        age(obj, now),
    ]
}
