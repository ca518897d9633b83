//! The move from client-side to server-side apply. An object kubectl applied
//! client-side carries its last applied configuration in an annotation and
//! its fields belong to `kubectl-client-side-apply`. When `kubectl apply
//! --server-side` (field manager `kubectl`) then conflicts only on fields
//! that annotation sets to their live values, the apply takes them over
//! without a conflict, as kube-apiserver's last-applied manager lets it.

use std::collections::HashSet;

use serde_json::Value;

use super::apply::{Conflicts, fields_still_applied};
use super::schema::MergeSchema;

/// The annotation kubectl's client-side apply keeps the applied configuration in.
pub const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only field manager whose conflicts the annotation can lift.
pub const MANAGER: &str = "kubectl";

/// Whether every conflict of an apply by `manager` to `live` (served as
/// `api_version`) lies on a field the live object's last-applied
/// configuration sets to the value it still has.
pub fn lifts_conflicts(
    schema: &dyn MergeSchema,
    manager: &str,
    live: Option<&Value>,
    api_version: &str,
    conflicts: &Conflicts,
) -> bool {
    if manager != MANAGER || conflicts.0.is_empty() {
        return false;
    }
    let Some(live) = live else {
        return false;
    };
    let Some(text) = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return false;
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return false;
    }
    let Ok(kept) = fields_still_applied(schema, &last, live) else {
        return false;
    };
    let kept: HashSet<String> = kept.into_iter().collect();
    conflicts.0.iter().all(|c| kept.contains(&c.field))
}
