//! The strategy of certificates.k8s.io/v1 CertificateSigningRequests: the
//! requester recorded on create, a spec that never changes, status written
//! through `status` and the approval conditions through `approval`, and
//! condition timestamps filled in, as kube's CSR strategies do.

use serde_json::{Map, Value, json};

use super::Strategy;
use crate::object;

/// CertificateSigningRequests.
#[derive(Debug, Default, Clone, Copy)]
pub struct SigningRequestStrategy;

const APPROVAL_TYPES: &[&str] = &["Approved", "Denied"];

impl Strategy for SigningRequestStrategy {
    builtin_admission!();

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        map.remove("status");
        if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
            for k in ["username", "uid", "groups", "extra"] {
                spec.remove(k);
            }
        }
    }

    fn record_requester(&self, map: &mut Map<String, Value>, user: &crate::identity::UserInfo) {
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        let Some(spec) = spec.as_object_mut() else {
            return;
        };
        if !user.name.is_empty() {
            spec.insert("username".into(), json!(user.name));
        }
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            spec.insert("extra".into(), json!(user.extra));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) -> bool {
        let new_conditions = conditions(new);
        let mut merged = new.clone();
        merged["spec"] = old.get("spec").cloned().unwrap_or(Value::Null);
        match subresource {
            Some("approval") => {
                // Only the conditions change.
                let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
                if !status.is_object() {
                    status = json!({});
                }
                status["conditions"] = Value::Array(new_conditions);
                merged["status"] = status;
            }
            Some("status") => {
                // The approval conditions stay as they were: in place when
                // the update has as many of them (kube's
                // `preserveConditionInstances`), else the old ones after the rest.
                let old_conditions = conditions(old);
                let kept = if APPROVAL_TYPES
                    .iter()
                    .all(|t| indices(&new_conditions, t).len() == indices(&old_conditions, t).len())
                {
                    let mut list = new_conditions;
                    for t in APPROVAL_TYPES {
                        for (n, o) in indices(&list, t)
                            .into_iter()
                            .zip(indices(&old_conditions, t))
                        {
                            list[n] = old_conditions[o].clone();
                        }
                    }
                    list
                } else {
                    let mut kept: Vec<Value> = new_conditions
                        .into_iter()
                        .filter(|c| !is_approval(c))
                        .collect();
                    kept.extend(old_conditions.into_iter().filter(is_approval));
                    kept
                };
                if !merged["status"].is_object() {
                    merged["status"] = json!({});
                }
                merged["status"]["conditions"] = Value::Array(kept);
            }
            _ => {
                merged["status"] = old.get("status").cloned().unwrap_or(Value::Null);
            }
        }
        strip_nulls(&mut merged);
        stamp_conditions(&mut merged, old);
        *new = merged;
        true
    }
}

fn conditions(obj: &Value) -> Vec<Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The positions of the conditions of type `ty`.
fn indices(list: &[Value], ty: &str) -> Vec<usize> {
    list.iter()
        .enumerate()
        .filter(|(_, c)| c.get("type").and_then(Value::as_str) == Some(ty))
        .map(|(i, _)| i)
        .collect()
}

fn is_approval(c: &Value) -> bool {
    c.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| APPROVAL_TYPES.contains(&t))
}

fn strip_nulls(obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        map.retain(|_, v| !v.is_null());
        if let Some(Value::Object(status)) = map.get_mut("status") {
            status.retain(|_, v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
        }
    }
}

/// kube's `populateConditionTimestamps`: `lastUpdateTime` now when unset;
/// `lastTransitionTime` kept from the old condition of the same type and
/// status, else now.
fn stamp_conditions(new: &mut Value, old: &Value) {
    let old_conditions = conditions(old);
    let now = object::now_rfc3339();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut() {
        let Some(m) = c.as_object_mut() else {
            continue;
        };
        let unset = |m: &Map<String, Value>, k: &str| {
            m.get(k)
                .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
        };
        if unset(m, "lastUpdateTime") {
            m.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(m, "lastTransitionTime") {
            let previous = old_conditions
                .iter()
                .find(|o| o.get("type") == m.get("type") && o.get("status") == m.get("status"));
            let at = previous
                .and_then(|o| o.get("lastTransitionTime"))
                .filter(|t| !t.is_null())
                .cloned()
                .unwrap_or_else(|| json!(now));
            m.insert("lastTransitionTime".into(), at);
        }
    }
}
