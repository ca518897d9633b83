//! RBAC escalation prevention: a user may write a Role or ClusterRole only
//! with rules it holds itself (or with the `escalate` verb on it), and a
//! RoleBinding or ClusterRoleBinding only to a role whose rules it holds
//! (or with the `bind` verb on the role), as kube's RBAC storage refuses
//! writes that would grant more than the writer has.
//!
//! Members of `system:masters` and the server's own writes (no user) pass.
//! An update that changes no rules, selectors, labels, role or subjects
//! passes too (kube lets garbage-collector-only changes through).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::plugin::Validating;
use crate::authz::rbac::covers::{compact_lines, uncovered};
use crate::authz::{Attributes, Decision, PolicyRule, Union};
use crate::identity::{MASTERS_GROUP, UserInfo};
use crate::registry::AdmissionRequest;
use crate::status::{ApiError, ResourceRef};
use crate::storage::Store;

const GROUP: &str = "rbac.authorization.k8s.io";

/// A write that would grant rules its writer does not hold; the message is kube's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "user {user:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}{}",
    quoted(groups),
    missing.join("\n"),
    resolution(resolution_errors)
)]
struct Escalation {
    /// The writer.
    user: String,
    /// The writer's groups.
    groups: Vec<String>,
    /// The rules not held, one line each.
    missing: Vec<String>,
    /// Why some of the writer's rules could not be resolved.
    resolution_errors: Vec<String>,
}

fn quoted(groups: &[String]) -> String {
    let groups: Vec<String> = groups.iter().map(|g| format!("{g:?}")).collect();
    groups.join(" ")
}

fn resolution(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!("; resolution errors: [{}]", errors.join(" "))
    }
}

/// The escalation check, asking the server's authorizers.
pub struct RbacEscalation {
    authorizer: Arc<Union>,
    store: Store,
}

impl RbacEscalation {
    /// The check over `authorizer` (for `escalate`, `bind` and the writer's
    /// rules) and the roles in `store`.
    pub fn new(authorizer: Arc<Union>, store: Store) -> RbacEscalation {
        RbacEscalation { authorizer, store }
    }

    fn allowed(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        let attributes =
            Attributes::for_resource(verb, GROUP, resource, None, Some(namespace), Some(name));
        matches!(
            self.authorizer.decide(user, &attributes),
            Decision::Allow(_)
        )
    }

    /// `Err` when `user` does not hold every rule of `rules` in `namespace`.
    fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), Escalation> {
        let ns = (!namespace.is_empty()).then_some(namespace);
        let owned = self.authorizer.rules_for(user, ns);
        let missing = uncovered(&owned.rules, rules);
        if missing.is_empty() {
            return Ok(());
        }
        Err(Escalation {
            user: user.name.clone(),
            groups: user.groups.clone(),
            missing: compact_lines(&missing),
            resolution_errors: owned.errors,
        })
    }

    /// The rules of the role a binding refers to.
    fn role_rules(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<PolicyRule>, ApiError> {
        let (plural, key) = match kind {
            "Role" => ("roles", format!("/{GROUP}/roles/{namespace}/{name}")),
            _ => ("clusterroles", format!("/{GROUP}/clusterroles/{name}")),
        };
        let stored = self.store.current(&key).ok_or_else(|| {
            ApiError::not_found(
                ResourceRef {
                    group: GROUP,
                    resource: plural,
                },
                name,
            )
        })?;
        Ok(rules_of(&stored.object))
    }
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    Vec::<PolicyRule>::deserialize(&obj["rules"]).unwrap_or_default()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn has_aggregation(obj: &Value) -> bool {
    obj["aggregationRule"]["clusterRoleSelectors"]
        .as_array()
        .is_some_and(|s| !s.is_empty())
}

/// Whether an update changes nothing that grants permissions.
fn grants_unchanged(obj: &Value, old: &Value) -> bool {
    ["rules", "aggregationRule", "roleRef", "subjects"]
        .iter()
        .all(|f| obj[f] == old[f])
        && obj["metadata"]["labels"] == old["metadata"]["labels"]
}

impl Validating for RbacEscalation {
    fn validate(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
        let rt = request.rt;
        let Some(user) = request.user else {
            return Ok(());
        };
        if rt.group != GROUP || request.subresource.is_some() || user.in_group(MASTERS_GROUP) {
            return Ok(());
        }
        if request.old.is_some_and(|old| grants_unchanged(obj, old)) {
            return Ok(());
        }
        let name = text(&obj["metadata"]["name"]);
        let namespace = text(&obj["metadata"]["namespace"]);
        let refuse = |why: &str| {
            ApiError::forbidden(
                ResourceRef {
                    group: GROUP,
                    resource: &rt.plural,
                },
                name,
                why,
            )
        };
        match rt.kind.as_str() {
            "Role" | "ClusterRole" => {
                let aggregates = has_aggregation(obj) || request.old.is_some_and(has_aggregation);
                if aggregates {
                    let full = PolicyRule::full_authority();
                    if self.confirm_no_escalation(user, "", &full).is_err() {
                        return Err(refuse(
                            "must have cluster-admin privileges to use the aggregationRule",
                        ));
                    }
                }
                // A create names no object, so only unrestricted rules give
                // `escalate` then.
                let asked_name = if request.old.is_some() { name } else { "" };
                if self.allowed(user, "escalate", &rt.plural, namespace, asked_name) {
                    return Ok(());
                }
                self.confirm_no_escalation(user, namespace, &rules_of(obj))
                    .map_err(|e| refuse(&e.to_string()))
            }
            "RoleBinding" | "ClusterRoleBinding" => {
                let kind = text(&obj["roleRef"]["kind"]);
                let role = text(&obj["roleRef"]["name"]);
                let role_plural = if kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                if self.allowed(user, "bind", role_plural, namespace, role) {
                    return Ok(());
                }
                let rules = self.role_rules(kind, namespace, role)?;
                self.confirm_no_escalation(user, namespace, &rules)
                    .map_err(|e| refuse(&e.to_string()))
            }
            _ => Ok(()),
        }
    }
}
