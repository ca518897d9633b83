//! The ClusterRole aggregation controller: a ClusterRole with an
//! `aggregationRule` holds the rules of every ClusterRole its selectors
//! match (admin, edit and view gather the `aggregate-to-*` roles), as
//! kube-controller-manager's `clusterrole-aggregation` controller keeps
//! them: selectors in order, matching roles by name, each rule once.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::{Api, Target, WriteOptions};
use crate::selectors::LabelSelector;
use crate::storage::WatchEvent;

const PREFIX: &str = "/rbac.authorization.k8s.io/clusterroles/";
/// The field manager of the rules it writes.
pub const MANAGER: &str = "clusterrole-aggregation-controller";

/// Re-aggregates when a ClusterRole changes.
pub async fn observe(api: &Api, ev: &WatchEvent) {
    if ev.key.starts_with(PREFIX) {
        sync_all(api).await;
    }
}

/// The rules an aggregated role should hold, from the current roles.
fn aggregated_rules(role: &Value, roles: &[Arc<Value>]) -> Vec<Value> {
    let name = role["metadata"]["name"].as_str().unwrap_or_default();
    let mut rules: Vec<Value> = Vec::new();
    let selectors = role["aggregationRule"]["clusterRoleSelectors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for selector in &selectors {
        let Ok(selector) = LabelSelector::from_label_selector_value(selector) else {
            continue;
        };
        let mut matching: Vec<&Arc<Value>> = roles
            .iter()
            .filter(|r| r["metadata"]["name"].as_str() != Some(name))
            .filter(|r| selector.matches(r["metadata"]["labels"].as_object()))
            .collect();
        matching.sort_by(|a, b| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        });
        for r in matching {
            for rule in r["rules"].as_array().map(Vec::as_slice).unwrap_or_default() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

/// Brings every aggregated ClusterRole's rules up to date, until none
/// changes (an aggregated role may gather another: admin gathers edit,
/// which gathers view).
pub async fn sync_all(api: &Api) {
    // Each pass settles at least one more level of nesting.
    for _ in 0..8 {
        if !sync_once(api).await {
            return;
        }
    }
}

/// One pass over the aggregated roles; whether any changed.
async fn sync_once(api: &Api) -> bool {
    let mut changed = false;
    let Some(rt) = api
        .catalog
        .get("rbac.authorization.k8s.io", "v1", "clusterroles")
    else {
        return false;
    };
    let roles = api.store.current_objects(PREFIX);
    for role in &roles {
        let selectors = &role["aggregationRule"]["clusterRoleSelectors"];
        if selectors.as_array().is_none_or(Vec::is_empty) {
            continue;
        }
        let rules = aggregated_rules(role, &roles);
        let current = role["rules"].as_array().cloned().unwrap_or_default();
        if rules == current {
            continue;
        }
        let mut updated = (**role).clone();
        updated["rules"] = json!(rules);
        let name = role["metadata"]["name"].as_str().unwrap_or_default();
        let target = Target {
            rt: rt.clone(),
            namespace: None,
            name: Some(name.to_string()),
        };
        let opts = WriteOptions {
            field_manager: MANAGER.to_string(),
            ..WriteOptions::default()
        };
        // A conflict means the role changed since it was read: its event
        // brings another sync.
        match api.update(&target, None, updated, &opts).await {
            Ok(_) => changed = true,
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(role = name, error = %e, "could not aggregate the cluster role");
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_gather_from_matching_roles_in_name_order_once_each() {
        let role = |name: &str, label: &str, rules: Value| {
            Arc::new(json!({
                "metadata": {"name": name, "labels": {label: "true"}},
                "rules": rules,
            }))
        };
        let get = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let list = json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]});
        let roles = vec![
            role("z-view", "agg", json!([list.clone()])),
            role("a-view", "agg", json!([get.clone(), list.clone()])),
            role("other", "no", json!([{"verbs": ["*"]}])),
        ];
        let view = json!({
            "metadata": {"name": "view"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
        });
        assert_eq!(aggregated_rules(&view, &roles), vec![get, list]);
    }
}
