//! What an HPA's status is built from: its condition types, kube's
//! `setCondition` (kept in place, a new `lastTransitionTime` only when the
//! status changes), and the target's scale as the controller read it.

use serde_json::{Map, Value, json};

use crate::podutil;
use crate::registry::Target;

/// `AbleToScale`.
pub(super) const ABLE_TO_SCALE: &str = "AbleToScale";
/// `ScalingActive`.
pub(super) const SCALING_ACTIVE: &str = "ScalingActive";

/// A target's scale, as its `scale` subresource shows it.
pub(super) struct Scale {
    pub(super) target: Target,
    pub(super) resource_version: String,
    /// `spec.replicas`.
    pub(super) replicas: i64,
    /// `status.selector`.
    pub(super) selector: String,
}

/// Sets a condition of the status, kept in place, with a new
/// `lastTransitionTime` only when its status changes (`setCondition`).
pub(super) fn set_condition(
    status: &mut Map<String, Value>,
    ty: &str,
    value: &str,
    reason: &str,
    message: impl Into<String>,
) {
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let i = match conditions.iter().position(|c| c["type"] == ty) {
        Some(i) => i,
        None => {
            conditions.push(json!({"type": ty}));
            conditions.len() - 1
        }
    };
    let c = &mut conditions[i];
    if c.get("status").and_then(Value::as_str) != Some(value) {
        c["lastTransitionTime"] = json!(podutil::rfc3339(podutil::now()));
    }
    c["status"] = json!(value);
    c["reason"] = json!(reason);
    c["message"] = json!(message.into());
    status.insert("conditions".into(), Value::Array(conditions));
}
