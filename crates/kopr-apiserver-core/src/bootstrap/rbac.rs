//! The bootstrap RBAC policy (`policy.yaml`: cluster-admin, admin, edit,
//! view, the `system:` roles and their bindings, as kube-apiserver 1.32
//! ships them), reconciled at every start as kube's `rbac/bootstrap-roles`
//! post-start hook does: missing objects are created; objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"` get back missing
//! rules, aggregation selectors, subjects, labels and annotations (nothing
//! a user added is removed); objects annotated `"false"` are left alone.

use serde_json::{Map, Value};

use super::system_options;
use crate::registry::{Api, Target};
use crate::status::ApiError;

const POLICY: &str = include_str!("policy.yaml");
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The bootstrap policy's objects, in order (roles before bindings).
pub fn policy() -> Vec<Value> {
    match serde_saphyr::from_multiple::<Value>(POLICY) {
        Ok(objects) => objects.into_iter().filter(Value::is_object).collect(),
        Err(e) => {
            tracing::error!(error = %e, "the built-in RBAC policy does not parse");
            Vec::new()
        }
    }
}

/// Creates or reconciles every object of the bootstrap policy.
///
/// # Errors
/// The first write the registry refuses.
pub async fn ensure_policy(api: &Api) -> Result<(), ApiError> {
    for expected in policy() {
        let kind = expected["kind"].as_str().unwrap_or_default();
        let plural = match kind {
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            _ => continue,
        };
        let Some(rt) = api.catalog.get("rbac.authorization.k8s.io", "v1", plural) else {
            continue;
        };
        let name = expected["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let target = Target {
            rt: rt.clone(),
            namespace: None,
            name: Some(name.clone()),
        };
        let existing = match api.get(&target).await {
            Ok(stored) => (*stored).clone(),
            Err(e) if e.code == 404 => {
                match api.create(&rt, None, expected, &system_options()).await {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        if existing["metadata"]["annotations"][AUTOUPDATE] == "false" {
            continue;
        }
        let Some(reconciled) = reconcile(&existing, &expected) else {
            continue;
        };
        if reconciled["roleRef"] != existing["roleRef"] && kind == "ClusterRoleBinding" {
            // A binding's role cannot change: replace the binding.
            match api.delete(&target, &Default::default()).await {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
            api.create(&rt, None, expected, &system_options()).await?;
            continue;
        }
        api.update(&target, None, reconciled, &system_options())
            .await?;
    }
    Ok(())
}

/// Adds the entries of `expected.metadata[field]` missing from `out`'s.
fn merge_map(out: &mut Value, expected: &Value, field: &str) -> bool {
    let Some(wanted) = expected["metadata"][field].as_object() else {
        return false;
    };
    let mut map = match out["metadata"][field].take() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut changed = false;
    for (k, v) in wanted {
        if !map.contains_key(k) {
            map.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    out["metadata"][field] = Value::Object(map);
    changed
}

/// Appends the items of `expected[field]` missing from `out[field]`.
fn merge_list(out: &mut Value, expected: &Value, field: &str) -> bool {
    let Some(wanted) = expected[field].as_array() else {
        return false;
    };
    if !out[field].is_array() {
        out[field] = Value::Array(Vec::new());
    }
    let mut changed = false;
    if let Some(have) = out[field].as_array_mut() {
        for item in wanted {
            if !have.contains(item) {
                have.push(item.clone());
                changed = true;
            }
        }
    }
    changed
}

/// The existing object with what `expected` adds, or `None` if nothing.
pub fn reconcile(existing: &Value, expected: &Value) -> Option<Value> {
    let mut out = existing.clone();
    let mut changed = merge_map(&mut out, expected, "labels");
    changed |= merge_map(&mut out, expected, "annotations");
    match expected["kind"].as_str() {
        Some("ClusterRole") => {
            if expected["aggregationRule"].is_object() {
                let mut selectors = out["aggregationRule"].clone();
                if !selectors.is_object() {
                    selectors = Value::Object(Map::new());
                }
                changed |= merge_list(
                    &mut selectors,
                    &expected["aggregationRule"],
                    "clusterRoleSelectors",
                );
                out["aggregationRule"] = selectors;
            } else {
                changed |= merge_list(&mut out, expected, "rules");
            }
        }
        Some("ClusterRoleBinding") => {
            changed |= merge_list(&mut out, expected, "subjects");
            if out["roleRef"] != expected["roleRef"] {
                out["roleRef"] = expected["roleRef"].clone();
                changed = true;
            }
        }
        _ => {}
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_parses_and_reconciling_adds_without_removing() {
        let objects = policy();
        let names: Vec<&str> = objects
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        for wanted in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
            assert!(names.contains(&wanted), "{wanted} in {names:?}");
        }
        let expected = json!({
            "kind": "ClusterRole",
            "metadata": {"name": "r", "labels": {"a": "1"}, "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        });
        let edited = json!({
            "kind": "ClusterRole",
            "metadata": {"name": "r", "labels": {"a": "changed", "mine": "x"}},
            "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]}],
        });
        let fixed = reconcile(&edited, &expected).expect("changed");
        assert_eq!(
            fixed["metadata"]["labels"],
            json!({"a": "changed", "mine": "x"})
        );
        assert_eq!(fixed["metadata"]["annotations"][AUTOUPDATE], "true");
        assert_eq!(
            fixed["rules"].as_array().map(Vec::len),
            Some(2),
            "the user's rule stays"
        );
        assert_eq!(reconcile(&fixed, &expected), None, "nothing more to do");
    }
}
