//! Strategies of core kinds with rules of their own: Pods (admitted spec,
//! initial status, graceful deletion), Namespaces (initial phase,
//! `spec.finalizers` and the `finalize` subresource, protected names),
//! Services (address allocation) and events.k8s.io Events (stored as core
//! Events).

use serde_json::{Map, Value, json};

use super::Strategy;

/// Nodes: unlike other kinds, a new node keeps the status its client sent
/// (a kubelet registers with its capacity and addresses), less the dynamic
/// kubelet configuration (`status.config`, `spec.configSource`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    builtin_admission!();

    fn status_sent_on_create(&self, mut sent: Value) -> Option<Value> {
        if let Some(status) = sent.as_object_mut() {
            status.remove("config");
        }
        Some(sent)
    }

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("configSource");
        }
    }
}

/// Pods: the ServiceAccount and DefaultTolerationSeconds admission plugins'
/// additions and a Pending status with its QoS class on create; a grace
/// period on delete; the deleted pod in DELETE's answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct PodStrategy;

impl Strategy for PodStrategy {
    builtin_admission!();

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
            admit_pod_spec(spec);
        }
        let qos = pod_qos_class(map.get("spec"));
        let mut status = json!({"phase": "Pending", "qosClass": qos});
        let gated = map
            .get("spec")
            .and_then(|s| s.get("schedulingGates"))
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            // kube's applySchedulingGatedCondition: a gated pod is not
            // scheduled until its gates are gone.
            status["conditions"] = json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": crate::object::now_rfc3339(),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]);
        }
        map.insert("status".into(), status);
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn graceful_deletion(&self) -> bool {
        true
    }

    fn validate_subresource_update(
        &self,
        rt: &crate::resources::ResourceType,
        subresource: &str,
        obj: &Value,
        old: &Value,
    ) -> Option<Vec<crate::validation::FieldError>> {
        (subresource == "ephemeralcontainers").then(|| ephemeral_update_errors(rt, obj, old))
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) -> bool {
        if subresource != Some("ephemeralcontainers") {
            return false;
        }
        // Only the ephemeral containers change (kube's
        // dropNonEphemeralContainerUpdates); the rest is the stored pod.
        let ephemeral = new.pointer("/spec/ephemeralContainers").cloned();
        let version = new.pointer("/metadata/resourceVersion").cloned();
        let mut merged = old.clone();
        if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut) {
            match ephemeral {
                Some(e) if !e.is_null() => {
                    spec.insert("ephemeralContainers".into(), e);
                }
                _ => {
                    spec.remove("ephemeralContainers");
                }
            }
        }
        if let (Some(v), Some(meta)) = (version, merged.get_mut("metadata")) {
            meta["resourceVersion"] = v;
        }
        *new = merged;
        true
    }
}

/// Namespaces that can never be deleted.
pub const UNDELETABLE_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Namespaces: phase Active on create; `spec.finalizers` kept by updates
/// of the main resource and written only through `finalize`; the system
/// namespaces never deleted.
#[derive(Debug, Default, Clone, Copy)]
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    builtin_admission!();

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        map.insert("status".into(), json!({"phase": "Active"}));
        // A new namespace always carries the `kubernetes` finalizer, after
        // any the client asked for; it may be removed later (`finalize`).
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
            if finalizers.is_null() {
                *finalizers = json!([]);
            }
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == "kubernetes")
            {
                list.push(json!("kubernetes"));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) -> bool {
        if subresource == Some("finalize") {
            // Only the finalizers change; none sent (`[]`, or left out as Go's zero) is none.
            let finalizers = new
                .pointer("/spec/finalizers")
                .filter(|f| !f.is_null())
                .cloned();
            let mut merged = old.clone();
            if let Some(map) = merged.as_object_mut() {
                let spec = map.entry("spec").or_insert_with(|| json!({}));
                if let Some(s) = spec.as_object_mut() {
                    match finalizers {
                        Some(f) => s.insert("finalizers".into(), f),
                        None => s.remove("finalizers"),
                    };
                }
            }
            *new = merged;
            return true;
        }
        if subresource.is_none()
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
        false
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn undeletable(&self, name: &str) -> bool {
        UNDELETABLE_NAMESPACES.contains(&name)
    }

    fn has_spec_finalizers(&self) -> bool {
        true
    }

    fn is_namespace(&self) -> bool {
        true
    }

    fn mark_deleting(&self, obj: &mut Value) {
        obj["status"]["phase"] = json!("Terminating");
        if let Some(m) = crate::object::meta_mut(obj) {
            m.remove("deletionGracePeriodSeconds");
        }
    }
}

/// Services: cluster IPs and node ports allocated on create; the deleted
/// Service in DELETE's answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    builtin_admission!();

    fn allocates_service_addresses(&self) -> bool {
        true
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// events.k8s.io/v1 Events, stored as core v1 Events with renamed fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct EventStrategy;

/// Field renames between events.k8s.io/v1 (left) and core v1 (right).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

impl Strategy for EventStrategy {
    builtin_admission!();

    fn allows_create_on_update(&self) -> bool {
        true
    }

    fn field_renames(&self) -> &'static [(&'static str, &'static str)] {
        EVENT_FIELDS
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

/// kube's `ValidatePodEphemeralContainersUpdate`: the pod as a whole (its
/// new ephemeral containers included) is valid, and the ephemeral
/// containers it had stay as they were.
fn ephemeral_update_errors(
    rt: &crate::resources::ResourceType,
    obj: &Value,
    old: &Value,
) -> Vec<crate::validation::FieldError> {
    use crate::validation::FieldError;
    if old
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return vec![FieldError::forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    let mut errors = super::builtin_validate(rt, obj, None);
    let list = |v: &Value| {
        v.pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let new = list(obj);
    for before in list(old) {
        let name = before["name"].as_str().unwrap_or("");
        match new.iter().find(|c| c["name"] == before["name"]) {
            None => errors.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(after) if *after != before => errors.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    errors
}
