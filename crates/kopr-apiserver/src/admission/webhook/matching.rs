//! Whether a webhook applies to a request, in kube's order: its
//! `namespaceSelector`, its `objectSelector`, its `rules` (operation,
//! group, version, resource with subresource, scope); `matchConditions`
//! come last (see [`super::conditions`]).

use serde_json::{Map, Value};

use super::config::{Hook, Rule};

/// The request as matching sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attributes<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The subresource, or empty.
    pub subresource: &'a str,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    pub name: &'a str,
    /// The object's namespace; a Namespace's own name; empty when
    /// cluster-scoped.
    pub namespace: &'a str,
    /// The objects are Namespaces.
    pub is_namespace: bool,
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

/// `res/sub` entries: `*` is every resource without subresource, `*/*`
/// everything, `pods/*` pods and all its subresources, `*/status` every
/// status subresource.
fn resource_listed(list: &[String], resource: &str, subresource: &str) -> bool {
    list.iter().any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
        (res == "*" || res == resource) && (sub == "*" || sub == subresource)
    })
}

fn scope_matches(scope: &str, attrs: &Attributes<'_>) -> bool {
    let cluster = attrs.is_namespace || attrs.namespace.is_empty();
    match scope {
        "Cluster" => cluster,
        "Namespaced" => !cluster,
        _ => true,
    }
}

fn rule_matches(rule: &Rule, attrs: &Attributes<'_>) -> bool {
    listed(&rule.operations, attrs.operation)
        && listed(&rule.groups, attrs.group)
        && listed(&rule.versions, attrs.version)
        && resource_listed(&rule.resources, attrs.resource, attrs.subresource)
        && scope_matches(&rule.scope, attrs)
}

/// Whether any rule of `hook` matches.
pub(crate) fn rules_match(hook: &Hook, attrs: &Attributes<'_>) -> bool {
    hook.rules.iter().any(|r| rule_matches(r, attrs))
}

fn labels(object: Option<&Value>) -> Option<&Map<String, Value>> {
    object?.pointer("/metadata/labels")?.as_object()
}

/// `objectSelector`: the new or the old object's labels match (an empty
/// selector matches everything).
pub(crate) fn object_selector_matches(hook: &Hook, attrs: &Attributes<'_>) -> Result<bool, String> {
    let selector = hook.object_selector.as_ref().map_err(Clone::clone)?;
    if selector.is_everything() {
        return Ok(true);
    }
    let matches = |o: Option<&Value>| {
        o.is_some_and(|o| o.get("metadata").is_some()) && selector.matches(labels(o))
    };
    Ok(matches(attrs.object) || matches(attrs.old))
}

/// Whose labels `namespaceSelector` is matched against.
pub(crate) enum NamespaceLabels<'a> {
    /// Cluster-scoped: every selector matches.
    Any,
    /// A Namespace written: its own new labels.
    Own(Option<&'a Map<String, Value>>),
    /// The stored Namespace of this name.
    Stored(&'a str),
}

/// Which labels the `namespaceSelector` of a request is matched against.
pub(crate) fn namespace_labels<'a>(attrs: &Attributes<'a>) -> NamespaceLabels<'a> {
    if attrs.is_namespace {
        if attrs.subresource.is_empty() && attrs.operation != "DELETE" {
            return NamespaceLabels::Own(labels(attrs.object));
        }
        return NamespaceLabels::Stored(attrs.namespace);
    }
    if attrs.namespace.is_empty() {
        return NamespaceLabels::Any;
    }
    NamespaceLabels::Stored(attrs.namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn resources_and_subresources_match_as_kube_splits_them() {
        assert!(resource_listed(&list(&["*"]), "pods", ""));
        assert!(!resource_listed(&list(&["*"]), "pods", "status"));
        assert!(resource_listed(&list(&["*/*"]), "pods", "status"));
        assert!(resource_listed(&list(&["pods/*"]), "pods", "exec"));
        assert!(resource_listed(&list(&["pods/*"]), "pods", ""));
        assert!(resource_listed(
            &list(&["*/status"]),
            "deployments",
            "status"
        ));
        assert!(!resource_listed(&list(&["*/status"]), "deployments", ""));
        assert!(!resource_listed(&list(&["pods"]), "pods", "status"));
    }

    #[test]
    fn namespaces_count_as_cluster_scoped() {
        let attrs = |namespace, is_namespace| Attributes {
            group: "",
            version: "v1",
            kind: "X",
            resource: "x",
            subresource: "",
            operation: "CREATE",
            name: "n",
            namespace,
            is_namespace,
            object: None,
            old: None,
        };
        assert!(scope_matches("Cluster", &attrs("team", true)));
        assert!(!scope_matches("Namespaced", &attrs("team", true)));
        assert!(scope_matches("Namespaced", &attrs("team", false)));
        assert!(scope_matches("Cluster", &attrs("", false)));
        assert!(scope_matches("*", &attrs("", false)));
    }
}
