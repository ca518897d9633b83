//! One RBAC policy rule and whether it covers a request, with the wildcard
//! rules of kube's RBAC authorizer: `*` for verbs, groups and resources,
//! `*/sub` for a subresource of any resource, resource names when listed,
//! and non-resource URLs with a trailing `*` as a prefix.

use serde::{Deserialize, Serialize};

use crate::authz::Attributes;

/// The wildcard in every list of a rule.
pub const ALL: &str = "*";

/// A rule of a Role or ClusterRole (`rbac.authorization.k8s.io/v1`
/// PolicyRule).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Verbs, or `*`.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// API groups ("" for core), or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/log`, `*/scale`), or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names; empty means any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource paths (`/healthz`, `/apis/*`).
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == ALL || v == value)
}

impl PolicyRule {
    /// Every permission: all verbs on all resources of all groups, and on
    /// all non-resource URLs (what `system:masters` and cluster-admin hold).
    pub fn full_authority() -> Vec<PolicyRule> {
        let all = || vec![ALL.to_string()];
        vec![
            PolicyRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                ..PolicyRule::default()
            },
            PolicyRule {
                verbs: all(),
                non_resource_urls: all(),
                ..PolicyRule::default()
            },
        ]
    }

    /// Whether the rule allows what `a` asks.
    pub fn allows(&self, a: &Attributes) -> bool {
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        match &a.resource {
            Some(r) => {
                has(&self.api_groups, &r.group)
                    && self.covers_resource(&r.resource, r.subresource.as_deref())
                    && self.covers_name(r.name.as_deref().unwrap_or(""))
            }
            None => self.covers_path(&a.path),
        }
    }

    /// Whether the rule names `resource` (with `subresource`).
    pub fn covers_resource(&self, resource: &str, subresource: Option<&str>) -> bool {
        let combined;
        let wanted = match subresource {
            Some(sub) if !sub.is_empty() => {
                combined = format!("{resource}/{sub}");
                combined.as_str()
            }
            _ => resource,
        };
        self.resources.iter().any(|r| {
            r == ALL
                || r == wanted
                || subresource.is_some_and(|sub| r.strip_prefix("*/") == Some(sub))
        })
    }

    /// Whether the rule's resource names (none: any) include `name`.
    pub fn covers_name(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// Whether the rule's non-resource URLs cover `path`.
    pub fn covers_path(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL
                || u == path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }

    /// kube's compact form of a rule, as escalation errors print it:
    /// `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.
    pub fn compact(&self) -> String {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut parts = Vec::new();
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:[{}]", list(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:[{}]", list(&self.resources)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!(
                "NonResourceURLs:[{}]",
                list(&self.non_resource_urls)
            ));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:[{}]", list(&self.resource_names)));
        }
        parts.push(format!("Verbs:[{}]", list(&self.verbs)));
        format!("{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn request(
        verb: &str,
        group: &str,
        resource: &str,
        sub: Option<&str>,
        name: &str,
    ) -> Attributes {
        Attributes::for_resource(verb, group, resource, sub, Some("team"), Some(name))
    }

    #[test]
    fn wildcards_subresources_and_names_match_as_kube_does() {
        let pods = rule(&["get", "list"], &[""], &["pods"], &[]);
        assert!(pods.allows(&request("get", "", "pods", None, "p")));
        assert!(!pods.allows(&request("delete", "", "pods", None, "p")));
        assert!(!pods.allows(&request("get", "apps", "pods", None, "p")));
        // A subresource must be named: `pods` does not give `pods/log`.
        assert!(!pods.allows(&request("get", "", "pods", Some("log"), "p")));
        let logs = rule(&["get"], &[""], &["pods/log"], &[]);
        assert!(logs.allows(&request("get", "", "pods", Some("log"), "p")));
        assert!(!logs.allows(&request("get", "", "pods", None, "p")));
        let any_scale = rule(&["*"], &["*"], &["*/scale"], &[]);
        assert!(any_scale.allows(&request(
            "update",
            "apps",
            "deployments",
            Some("scale"),
            "d"
        )));
        assert!(!any_scale.allows(&request("update", "apps", "deployments", None, "d")));
        let named = rule(&["get"], &[""], &["configmaps"], &["cfg"]);
        assert!(named.allows(&request("get", "", "configmaps", None, "cfg")));
        assert!(!named.allows(&request("get", "", "configmaps", None, "other")));
        assert!(!named.allows(&request("list", "", "configmaps", None, "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..PolicyRule::default()
        };
        let get = |path: &str| Attributes {
            verb: "get".into(),
            resource: None,
            path: path.into(),
        };
        assert!(r.allows(&get("/healthz")));
        assert!(r.allows(&get("/apis/apps/v1")));
        assert!(!r.allows(&get("/healthz/ping")));
        assert!(!r.allows(&get("/api")));
        let resource_rule = rule(&["get"], &["*"], &["*"], &[]);
        assert!(!resource_rule.allows(&get("/healthz")));
    }

    #[test]
    fn compact_form_is_kubes() {
        let r = rule(&["get", "list"], &[""], &["secrets"], &[]);
        assert_eq!(
            r.compact(),
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#
        );
    }
}
