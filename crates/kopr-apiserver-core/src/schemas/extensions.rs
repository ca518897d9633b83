//! The list-type, patch-strategy and map-type extensions kube-apiserver
//! publishes on the built-in kinds' fields. k8s-openapi's schemas do not
//! carry them; they come from the same rules the strategic merge patch and
//! apply engines merge by (`crate::merge`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::merge;

/// Adds the list-type, patch-strategy and map-type extensions of the merge
/// rules to the schemas of `defs`, by definition name.
pub(super) fn apply_extensions(defs: &mut BTreeMap<String, Value>) {
    for (schema, property, rule) in merge::property_rules() {
        let Some(Value::Object(p)) = defs
            .get_mut(schema)
            .and_then(|s| s.pointer_mut(&format!("/properties/{property}")))
        else {
            continue;
        };
        let mut set = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                p.insert(k.into(), json!(v));
            }
        };
        set("x-kubernetes-list-type", rule.list_type);
        set("x-kubernetes-map-type", rule.map_type);
        set("x-kubernetes-patch-merge-key", rule.patch_merge_key);
        set("x-kubernetes-patch-strategy", rule.patch_strategy);
        if !rule.list_map_keys.is_empty() {
            p.insert(
                "x-kubernetes-list-map-keys".into(),
                json!(rule.list_map_keys),
            );
        }
    }
    for schema in merge::atomic_structs() {
        if let Some(Value::Object(m)) = defs.get_mut(*schema) {
            m.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}
