//! Per-kind rules of the generic registry, as kube-apiserver's REST
//! strategies give them: generation tracking, status handling on create and
//! update, what a delete answers, and which kinds are created on update.

use serde_json::{Value, json};

use crate::object;
use crate::resources::ResourceType;

/// Whether a kind keeps `metadata.generation`.
pub fn tracks_generation(rt: &ResourceType) -> bool {
    is_custom(rt)
        || matches!(
            (rt.group.as_str(), rt.plural.as_str()),
            ("apps", _)
                | ("batch", _)
                | ("admissionregistration.k8s.io", _)
                | ("apiextensions.k8s.io", _)
        )
}

/// Whether a resource comes from a CustomResourceDefinition.
pub fn is_custom(rt: &ResourceType) -> bool {
    !crate::builtin::is_builtin_group(&rt.group)
}

/// Whether DELETE answers with the deleted object rather than a Status.
pub fn returns_deleted_object(rt: &ResourceType) -> bool {
    is_custom(rt)
        || matches!(
            (rt.group.as_str(), rt.plural.as_str()),
            ("", "pods" | "services" | "namespaces")
        )
}

/// Whether PUT of a missing object creates it.
pub fn allows_create_on_update(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("", "events")
            | ("events.k8s.io", "events")
            | ("coordination.k8s.io", "leases")
            | ("rbac.authorization.k8s.io", _)
    )
}

/// Resets what a create may not set: status for kinds with a status
/// subresource (with the initial status some kinds start with).
pub fn prepare_for_create(rt: &ResourceType, obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        if rt.status_subresource {
            map.remove("status");
        }
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "pods") => {
                if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                    admit_pod_spec(spec);
                }
                let qos = pod_qos_class(map.get("spec"));
                map.insert(
                    "status".into(),
                    json!({"phase": "Pending", "qosClass": qos}),
                );
            }
            ("", "namespaces") => {
                map.insert("status".into(), json!({"phase": "Active"}));
            }
            _ => {}
        }
    }
    if tracks_generation(rt)
        && let Some(m) = object::meta_mut(obj)
    {
        m.insert("generation".into(), json!(1));
    }
}

/// What kube-apiserver's admission plugins add to a new pod: the
/// ServiceAccount plugin's `default` account, and the DefaultTolerationSeconds
/// plugin's tolerations for not-ready and unreachable nodes.
fn admit_pod_spec(spec: &mut serde_json::Map<String, Value>) {
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(list) = tolerations.as_array_mut() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = list.iter().any(|t| {
                let k = t.get("key").and_then(Value::as_str);
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                let exists = t.get("operator").and_then(Value::as_str) == Some("Exists");
                (k == Some(key) || (k.is_none() && exists))
                    && (effect.is_empty() || effect == "NoExecute")
            });
            if !tolerated {
                list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// A pod's QoS class from its containers' requests and limits.
pub fn pod_qos_class(spec: Option<&Value>) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.and_then(|s| s.get(*k)).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let res = c.get("resources");
        let req = res
            .and_then(|r| r.get("requests"))
            .and_then(Value::as_object);
        let lim = res.and_then(|r| r.get("limits")).and_then(Value::as_object);
        let has = |m: Option<&serde_json::Map<String, Value>>, k: &str| {
            m.is_some_and(|m| m.contains_key(k))
        };
        if req.is_some_and(|m| !m.is_empty()) || lim.is_some_and(|m| !m.is_empty()) {
            any = true;
        }
        for r in ["cpu", "memory"] {
            let limited = has(lim, r);
            let request_differs =
                has(req, r) && req.and_then(|m| m.get(r)) != lim.and_then(|m| m.get(r));
            if !limited || request_differs {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Whether two objects differ outside `metadata` and `status` (and type
/// fields): the changes that bump `generation`.
pub fn spec_changed(new: &Value, old: &Value, ignore_status: bool) -> bool {
    let (Some(n), Some(o)) = (new.as_object(), old.as_object()) else {
        return new != old;
    };
    let skip = |k: &str| {
        k == "metadata" || k == "kind" || k == "apiVersion" || (ignore_status && k == "status")
    };
    let differs = n.iter().any(|(k, v)| !skip(k) && o.get(k) != Some(v));
    differs || o.keys().any(|k| !skip(k) && !n.contains_key(k))
}

/// Carries over what an update of the main resource may not change (status,
/// when the kind has a status subresource) and bumps generation on spec
/// changes. For `/status` updates, keeps everything but status from `old`.
pub fn prepare_for_update(
    rt: &ResourceType,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
    if is_namespace && subresource == Some("finalize") {
        let finalizers = new.pointer("/spec/finalizers").cloned();
        let mut merged = old.clone();
        if let (Some(f), Some(map)) = (finalizers, merged.as_object_mut()) {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.insert("finalizers".into(), f);
            }
        }
        *new = merged;
        return;
    }
    if is_namespace
        && subresource.is_none()
        && let (Some(f), Some(map)) = (
            old.pointer("/spec/finalizers").cloned(),
            new.as_object_mut(),
        )
    {
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(s) = spec.as_object_mut() {
            s.insert("finalizers".into(), f);
        }
    }
    if subresource == Some("status") {
        let status = new.get("status").cloned();
        let managed = object::meta(new)
            .and_then(|m| m.get("managedFields"))
            .cloned();
        let mut merged = old.clone();
        if let Some(map) = merged.as_object_mut() {
            match status {
                Some(s) => {
                    map.insert("status".into(), s);
                }
                None => {
                    map.remove("status");
                }
            }
        }
        if let (Some(mf), Some(m)) = (managed, object::meta_mut(&mut merged)) {
            m.insert("managedFields".into(), mf);
        }
        *new = merged;
        return;
    }
    if rt.status_subresource
        && let Some(map) = new.as_object_mut()
    {
        match old.get("status") {
            Some(s) => {
                map.insert("status".into(), s.clone());
            }
            None => {
                map.remove("status");
            }
        }
    }
    if tracks_generation(rt) {
        let gen_old = object::generation(old).max(1);
        let bumped = spec_changed(new, old, rt.status_subresource)
            || (object::is_deleting(new) && !object::is_deleting(old));
        if let Some(m) = object::meta_mut(new) {
            m.insert(
                "generation".into(),
                json!(if bumped { gen_old + 1 } else { gen_old }),
            );
        }
    }
}
