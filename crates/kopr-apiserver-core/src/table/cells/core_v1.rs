//! Row cells of the core/v1 printers added for issue 17: pod templates,
//! replication controllers, endpoints, persistent volumes and claims,
//! resource quotas and component statuses.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::quantity::quantity;
use super::{age, arr, containers, desired_replicas, get, int, name, present, text};
use crate::selectors::format_labels;

/// The annotation that, when present, names a volume's or claim's class.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

fn labels(obj: &Value, path: &[&str]) -> String {
    format_labels(get(obj, path).and_then(Value::as_object))
}

pub(super) fn pod_template(obj: &Value) -> Vec<Value> {
    let (names, images) = containers(obj, &["template", "spec"]);
    vec![
        json!(name(obj)),
        json!(names),
        json!(images),
        json!(labels(obj, &["template", "metadata", "labels"])),
    ]
}

pub(super) fn replication_controller(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(obj, &["spec", "template", "spec"]);
    vec![
        json!(name(obj)),
        json!(desired_replicas(obj)),
        json!(int(obj, &["status", "replicas"])),
        json!(int(obj, &["status", "readyReplicas"])),
        age(obj, now),
        json!(names),
        json!(images),
        json!(labels(obj, &["spec", "selector"])),
    ]
}

/// `net.JoinHostPort`: IPv6 hosts are bracketed.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints` with all ports: at most three `ip:port` entries, then
/// "+ N more...".
pub(super) fn endpoints_text(obj: &Value) -> String {
    const MAX: usize = 3;
    let subsets = arr(obj, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(ss, &["addresses"]);
        let ports = arr(ss, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports.
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(text(a, &["ip"]));
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(&text(a, &["ip"]), int(port, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else {
        joined
    }
}

pub(super) fn endpoints(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![json!(name(obj)), json!(endpoints_text(obj)), age(obj, now)]
}

/// `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, once each.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn beta_class(obj: &Value) -> Option<String> {
    get(obj, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The phase, or "Terminating" once deletion has started.
fn phase(obj: &Value) -> String {
    if present(obj, &["metadata", "deletionTimestamp"]) {
        "Terminating".to_string()
    } else {
        text(obj, &["status", "phase"])
    }
}

/// A `*string` field, or `<unset>`.
fn or_unset(obj: &Value, path: &[&str]) -> String {
    get(obj, path)
        .and_then(Value::as_str)
        .map_or_else(|| "<unset>".to_string(), str::to_string)
}

pub(super) fn persistent_volume(obj: &Value, now: Timestamp) -> Vec<Value> {
    let claim = match get(obj, &["spec", "claimRef"]) {
        Some(c) if !c.is_null() => format!("{}/{}", text(c, &["namespace"]), text(c, &["name"])),
        _ => String::new(),
    };
    let class = beta_class(obj).unwrap_or_else(|| text(obj, &["spec", "storageClassName"]));
    vec![
        json!(name(obj)),
        json!(quantity(get(obj, &["spec", "capacity", "storage"]))),
        json!(access_modes(arr(obj, &["spec", "accessModes"]))),
        json!(text(obj, &["spec", "persistentVolumeReclaimPolicy"])),
        json!(phase(obj)),
        json!(claim),
        json!(class),
        json!(or_unset(obj, &["spec", "volumeAttributesClassName"])),
        json!(text(obj, &["status", "reason"])),
        age(obj, now),
        json!(or_unset(obj, &["spec", "volumeMode"])),
    ]
}

pub(super) fn persistent_volume_claim(obj: &Value, now: Timestamp) -> Vec<Value> {
    let volume = text(obj, &["spec", "volumeName"]);
    // Capacity and modes are shown only once the claim names its volume.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(get(obj, &["status", "capacity", "storage"])),
            access_modes(arr(obj, &["status", "accessModes"])),
        )
    };
    let class = beta_class(obj).unwrap_or_else(|| text(obj, &["spec", "storageClassName"]));
    vec![
        json!(name(obj)),
        json!(phase(obj)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(or_unset(obj, &["spec", "volumeAttributesClassName"])),
        age(obj, now),
        json!(or_unset(obj, &["spec", "volumeMode"])),
    ]
}

/// "resource: used/hard" pairs of `status.hard`, sorted by resource name,
/// split into requests and `limits.*` resources.
fn quota_usage(obj: &Value) -> (String, String) {
    let Some(hard) = get(obj, &["status", "hard"]).and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let used = get(obj, &["status", "used"]).and_then(Value::as_object);
    let mut resources: Vec<&String> = hard.keys().collect();
    resources.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for r in resources {
        let entry = format!(
            "{r}: {}/{}",
            quantity(used.and_then(|u| u.get(r.as_str()))),
            quantity(hard.get(r.as_str()))
        );
        match r.split_once('.') {
            Some(("limits", _)) => limits.push(entry),
            _ => requests.push(entry),
        }
    }
    (requests.join(", "), limits.join(", "))
}

pub(super) fn resource_quota(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (requests, limits) = quota_usage(obj);
    vec![
        json!(name(obj)),
        json!(requests),
        json!(limits),
        age(obj, now),
    ]
}

pub(super) fn component_status(obj: &Value) -> Vec<Value> {
    let (status, message, error) = match arr(obj, &["conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Healthy")
    {
        Some(c) => (
            if text(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            text(c, &["message"]),
            text(c, &["error"]),
        ),
        None => ("Unknown", String::new(), String::new()),
    };
    vec![
        json!(name(obj)),
        json!(status),
        json!(message),
        json!(error),
    ]
}
