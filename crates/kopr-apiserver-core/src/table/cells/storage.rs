//! Row cells of the storage.k8s.io printers: storage classes (with the
//! " (default)" name suffix), volume attachments, CSI drivers, CSI nodes and
//! CSI storage capacities.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::quantity::quantity;
use super::{age, arr, get, name, text};

const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// `IsDefaultAnnotation`: either annotation set to "true".
fn is_default_class(obj: &Value) -> bool {
    [DEFAULT_CLASS, BETA_DEFAULT_CLASS]
        .iter()
        .any(|a| get(obj, &["metadata", "annotations", a]).and_then(Value::as_str) == Some("true"))
}

fn string_or(obj: &Value, path: &[&str], default: &str) -> String {
    get(obj, path)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_string()
}

fn bool_or(obj: &Value, path: &[&str], default: bool) -> bool {
    get(obj, path).and_then(Value::as_bool).unwrap_or(default)
}

pub(super) fn storage_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut class = name(obj);
    if is_default_class(obj) {
        class.push_str(" (default)");
    }
    vec![
        json!(class),
        json!(text(obj, &["provisioner"])),
        json!(string_or(obj, &["reclaimPolicy"], "Delete")),
        json!(string_or(obj, &["volumeBindingMode"], "Immediate")),
        json!(bool_or(obj, &["allowVolumeExpansion"], false)),
        age(obj, now),
    ]
}

pub(super) fn volume_attachment(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(text(obj, &["spec", "attacher"])),
        json!(text(obj, &["spec", "source", "persistentVolumeName"])),
        json!(text(obj, &["spec", "nodeName"])),
        json!(bool_or(obj, &["status", "attached"], false)),
        age(obj, now),
    ]
}

pub(super) fn csi_driver(obj: &Value, now: Timestamp) -> Vec<Value> {
    // A set list (even empty) prints its audiences; an unset one `<unset>`.
    let token_requests = match get(obj, &["spec", "tokenRequests"]).and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .map(|t| text(t, &["audience"]))
            .collect::<Vec<_>>()
            .join(","),
        None => "<unset>".to_string(),
    };
    let modes: Vec<&str> = arr(obj, &["spec", "volumeLifecycleModes"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_string()
    } else {
        modes.join(",")
    };
    vec![
        json!(name(obj)),
        json!(bool_or(obj, &["spec", "attachRequired"], true)),
        json!(bool_or(obj, &["spec", "podInfoOnMount"], false)),
        json!(bool_or(obj, &["spec", "storageCapacity"], false)),
        json!(token_requests),
        json!(bool_or(obj, &["spec", "requiresRepublish"], false)),
        json!(modes),
        age(obj, now),
    ]
}

pub(super) fn csi_node(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(arr(obj, &["spec", "drivers"]).len()),
        age(obj, now),
    ]
}

pub(super) fn csi_storage_capacity(obj: &Value) -> Vec<Value> {
    let capacity = match get(obj, &["capacity"]) {
        None | Some(Value::Null) => "<unset>".to_string(),
        some => quantity(some),
    };
    vec![
        json!(name(obj)),
        json!(text(obj, &["storageClassName"])),
        json!(capacity),
    ]
}
