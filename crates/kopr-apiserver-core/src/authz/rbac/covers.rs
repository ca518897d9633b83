//! Whether one set of rules covers another, as kube's RBAC escalation check
//! decides it: the granted rules are broken down into single permissions
//! (one group, resource and verb; one URL and verb), and each must be
//! covered by some single rule the granting user holds. The permissions not
//! covered are reported compacted, as kube prints them.

use super::rules::{ALL, PolicyRule};

fn one(s: &str) -> Vec<String> {
    vec![s.to_string()]
}

/// `rule` as single permissions, in kube's breakdown order.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            let names: Vec<Option<&String>> = if rule.resource_names.is_empty() {
                vec![None]
            } else {
                rule.resource_names.iter().map(Some).collect()
            };
            for name in names {
                for verb in &rule.verbs {
                    out.push(PolicyRule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        resource_names: name.map(|n| one(n)).unwrap_or_default(),
                        non_resource_urls: Vec::new(),
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

fn resources_cover(set: &[String], wanted: &[String]) -> bool {
    if has(set, ALL) || has_all(set, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

fn urls_cover(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|path| {
        set.iter().any(|owner| {
            owner == path
                || owner == ALL
                || owner
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    })
}

/// Whether the single rule `owner` covers `wanted`.
pub fn rule_covers(owner: &PolicyRule, wanted: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &wanted.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &wanted.api_groups);
    let names = if wanted.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &wanted.resource_names)
    };
    verbs
        && groups
        && resources_cover(&owner.resources, &wanted.resources)
        && urls_cover(&owner.non_resource_urls, &wanted.non_resource_urls)
        && names
}

/// The single permissions of `wanted` that no rule of `owner` covers.
pub fn uncovered(owner: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    wanted
        .iter()
        .flat_map(breakdown)
        .filter(|w| !owner.iter().any(|o| rule_covers(o, w)))
        .collect()
}

/// Permissions compacted as kube prints missing ones: rules naming one
/// group and one resource, with no names or URLs, merged per group and
/// resource (verbs appended in order); then each in its compact form,
/// without duplicates, sorted.
pub fn compact_lines(rules: &[PolicyRule]) -> Vec<String> {
    let mut merged: Vec<PolicyRule> = Vec::new();
    for r in rules {
        let simple = r.api_groups.len() == 1
            && r.resources.len() == 1
            && r.resource_names.is_empty()
            && r.non_resource_urls.is_empty();
        let existing = merged.iter_mut().find(|m| {
            simple
                && m.resource_names.is_empty()
                && m.non_resource_urls.is_empty()
                && m.api_groups == r.api_groups
                && m.resources == r.resources
        });
        match existing {
            Some(m) => m.verbs.extend(r.verbs.iter().cloned()),
            None => merged.push(r.clone()),
        }
    }
    let mut lines: Vec<String> = merged.iter().map(PolicyRule::compact).collect();
    lines.sort();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            ..PolicyRule::default()
        }
    }

    #[test]
    fn missing_permissions_are_found_and_compacted() {
        let owner = vec![
            rule(&["get", "list"], &[""], &["pods", "configmaps"]),
            rule(&["*"], &["apps"], &["*/scale"]),
        ];
        let wanted = vec![
            rule(&["get", "list", "delete"], &[""], &["pods", "secrets"]),
            rule(&["update"], &["apps"], &["deployments/scale"]),
        ];
        let missing = uncovered(&owner, &wanted);
        assert_eq!(
            compact_lines(&missing),
            [
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}"#,
            ]
        );
        let admin = vec![rule(&["*"], &["*"], &["*"])];
        assert!(uncovered(&admin, &wanted).is_empty());
        let named = PolicyRule {
            resource_names: vec!["cfg".into()],
            ..rule(&["get"], &[""], &["configmaps"])
        };
        assert!(uncovered(&owner, std::slice::from_ref(&named)).is_empty());
        assert_eq!(
            uncovered(std::slice::from_ref(&named), &owner[..1]).len(),
            4
        );
    }
}
