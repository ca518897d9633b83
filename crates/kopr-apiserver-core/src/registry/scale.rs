//! The `scale` subresource's view of an object (autoscaling/v1 Scale):
//! desired and current replicas and the selector as a string, from the
//! kind's scale paths (built-in workloads, or a custom resource's
//! `subresources.scale`). The HTTP handler serves it; controllers that
//! follow a target's scale (the autoscaler) read it.

use serde_json::{Value, json};

use crate::crd;
use crate::object;
use crate::resources::ResourceType;

/// The Scale view of a workload object.
pub fn scale_of(rt: &ResourceType, obj: &Value) -> Value {
    let meta = object::meta(obj).cloned().unwrap_or_default();
    let mut m = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    let paths = rt.scale_paths();
    let selector = match &paths.label_selector {
        // Custom resources name a path holding the selector string.
        Some(p) if rt.custom.is_some() => crd::value_at(obj, p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => obj
            .pointer("/spec/selector")
            .map(selector_string)
            .unwrap_or_default(),
    };
    let replicas = |p: &str| crd::value_at(obj, p).cloned().unwrap_or(json!(0));
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": m,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": {
            "replicas": replicas(&paths.status_replicas),
            "selector": selector,
        },
    })
}

/// A workload's selector as a string: a LabelSelector, or a plain label
/// map (ReplicationControllers).
fn selector_string(selector: &Value) -> String {
    let plain = selector.as_object().filter(|m| {
        !m.contains_key("matchLabels")
            && !m.contains_key("matchExpressions")
            && m.values().all(Value::is_string)
    });
    if let Some(map) = plain {
        return map
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(",");
    }
    crate::selectors::LabelSelector::from_label_selector_value(selector)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_controller_selectors_are_label_maps() {
        assert_eq!(selector_string(&json!({"b": "2", "a": "1"})), "a=1,b=2");
        assert_eq!(
            selector_string(&json!({"matchLabels": {"app": "web"}})),
            "app=web"
        );
    }
}
