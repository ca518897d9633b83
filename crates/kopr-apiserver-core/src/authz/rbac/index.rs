//! The compiled roles and bindings the RBAC authorizer walks: roles by
//! name, cluster role bindings, and role bindings by namespace, built from
//! the store's current objects and stamped with the revision of the last
//! change to any of them.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::rules::PolicyRule;
use crate::identity::UserInfo;
use crate::storage::Store;

const ROLES: &str = "/rbac.authorization.k8s.io/roles/";
const CLUSTER_ROLES: &str = "/rbac.authorization.k8s.io/clusterroles/";
const BINDINGS: &str = "/rbac.authorization.k8s.io/rolebindings/";
const CLUSTER_BINDINGS: &str = "/rbac.authorization.k8s.io/clusterrolebindings/";

/// The revision of the newest change to any role or binding.
pub(super) fn stamp(store: &Store) -> i64 {
    store.last_change_of(&[ROLES, CLUSTER_ROLES, BINDINGS, CLUSTER_BINDINGS])
}

/// Who a binding names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// The user, group or service account name.
    #[serde(default)]
    pub name: String,
    /// The service account's namespace (defaults to a role binding's own).
    #[serde(default)]
    pub namespace: String,
}

/// The role a binding grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Its namespace; empty for a ClusterRoleBinding.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The role granted.
    pub role_ref: RoleRef,
    /// Who it grants the role to.
    pub subjects: Vec<Subject>,
}

/// The prefix of service-account user names.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

impl Binding {
    fn from_object(obj: &Value) -> Binding {
        let meta = &obj["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Binding {
            namespace: text(&meta["namespace"]),
            name: text(&meta["name"]),
            role_ref: RoleRef::deserialize(&obj["roleRef"]).unwrap_or_default(),
            subjects: Vec::<Subject>::deserialize(&obj["subjects"]).unwrap_or_default(),
        }
    }

    /// The subject of this binding that names `user`, if any.
    pub fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| applies(s, user, &self.namespace))
    }

    /// How kube's RBAC names the grant in an allowing decision:
    /// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`, and for a
    /// role binding `RoleBinding "b/ns" of Role "r" to Group "g"`.
    pub fn describe_for(&self, user: &UserInfo) -> String {
        let binding = if self.namespace.is_empty() {
            format!("ClusterRoleBinding {:?}", self.name)
        } else {
            format!("RoleBinding \"{}/{}\"", self.name, self.namespace)
        };
        let subject = match self.subject_for(user) {
            Some(s) if s.kind == "ServiceAccount" => {
                let ns = if s.namespace.is_empty() {
                    &self.namespace
                } else {
                    &s.namespace
                };
                format!("ServiceAccount \"{}/{}\"", s.name, ns)
            }
            Some(s) => format!("{} {:?}", s.kind, s.name),
            None => String::new(),
        };
        format!(
            "{binding} of {} {:?} to {subject}",
            self.role_ref.kind, self.role_ref.name
        )
    }
}

/// Whether `subject` (of a binding in `namespace`, "" for cluster-wide)
/// names `user`.
fn applies(subject: &Subject, user: &UserInfo, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                namespace
            } else {
                &subject.namespace
            };
            !ns.is_empty()
                && user
                    .name
                    .strip_prefix(SERVICE_ACCOUNT_PREFIX)
                    .and_then(|rest| rest.split_once(':'))
                    .is_some_and(|(n, name)| n == ns && name == subject.name)
        }
        _ => false,
    }
}

/// The rules of a binding's role, or why they could not be found.
pub(super) type RoleRules = Result<Arc<[PolicyRule]>, String>;

/// The compiled roles and bindings.
#[derive(Debug, Default)]
pub(super) struct Index {
    /// The revision this index reflects.
    pub(super) stamp: i64,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    cluster_bindings: Vec<Binding>,
    bindings: HashMap<String, Vec<Binding>>,
}

fn rules_of(obj: &Value) -> Arc<[PolicyRule]> {
    Vec::<PolicyRule>::deserialize(&obj["rules"])
        .unwrap_or_default()
        .into()
}

fn meta_text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or_default()
}

impl Index {
    /// An empty index no store state matches.
    pub(super) fn stale() -> Index {
        Index {
            stamp: i64::MIN,
            ..Index::default()
        }
    }

    /// Compiles the store's current roles and bindings.
    pub(super) fn build(store: &Store, stamp: i64) -> Index {
        let mut index = Index {
            stamp,
            ..Index::default()
        };
        for obj in store.current_objects(CLUSTER_ROLES) {
            index
                .cluster_roles
                .insert(meta_text(&obj, "name").to_string(), rules_of(&obj));
        }
        for obj in store.current_objects(ROLES) {
            let key = (
                meta_text(&obj, "namespace").to_string(),
                meta_text(&obj, "name").to_string(),
            );
            index.roles.insert(key, rules_of(&obj));
        }
        for obj in store.current_objects(CLUSTER_BINDINGS) {
            let mut b = Binding::from_object(&obj);
            b.namespace.clear();
            index.cluster_bindings.push(b);
        }
        for obj in store.current_objects(BINDINGS) {
            let b = Binding::from_object(&obj);
            index
                .bindings
                .entry(b.namespace.clone())
                .or_default()
                .push(b);
        }
        index
    }

    /// The rules of the role a binding names, or kube's not-found error.
    fn role_rules(&self, b: &Binding) -> Result<Arc<[PolicyRule]>, String> {
        let name = &b.role_ref.name;
        let found = match b.role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(name),
            "Role" if !b.namespace.is_empty() => {
                self.roles.get(&(b.namespace.clone(), name.clone()))
            }
            _ => None,
        };
        found.cloned().ok_or_else(|| {
            format!(
                "{}.rbac.authorization.k8s.io {name:?} not found",
                b.role_ref.kind.to_ascii_lowercase()
            )
        })
    }

    /// Calls `f` with every binding naming `user` (cluster role bindings
    /// first, then the role bindings of `namespace`) and its role's rules,
    /// until `f` returns false.
    pub(super) fn visit(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
        f: &mut dyn FnMut(&Binding, RoleRules) -> bool,
    ) {
        let local = namespace
            .and_then(|ns| self.bindings.get(ns))
            .map(Vec::as_slice)
            .unwrap_or_default();
        for b in self.cluster_bindings.iter().chain(local) {
            if b.subject_for(user).is_some() && !f(b, self.role_rules(b)) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.into(),
        }
    }

    #[test]
    fn subjects_name_users_groups_and_service_accounts() {
        let robot = user(
            "system:serviceaccount:team:robot",
            &["system:serviceaccounts"],
        );
        assert!(applies(
            &subject("ServiceAccount", "robot", ""),
            &robot,
            "team"
        ));
        assert!(applies(
            &subject("ServiceAccount", "robot", "team"),
            &robot,
            ""
        ));
        assert!(!applies(
            &subject("ServiceAccount", "robot", ""),
            &robot,
            ""
        ));
        assert!(!applies(
            &subject("ServiceAccount", "robot", "other"),
            &robot,
            "team"
        ));
        assert!(applies(
            &subject("Group", "system:serviceaccounts", ""),
            &robot,
            ""
        ));
        assert!(!applies(&subject("User", "robot", ""), &robot, "team"));
        assert!(applies(
            &subject("User", "jane", ""),
            &user("jane", &[]),
            ""
        ));
    }

    #[test]
    fn allowing_bindings_are_described_as_kube_does() {
        let b = Binding {
            namespace: "team".into(),
            name: "read".into(),
            role_ref: RoleRef {
                kind: "Role".into(),
                name: "reader".into(),
            },
            subjects: vec![subject("ServiceAccount", "robot", "")],
        };
        let robot = user("system:serviceaccount:team:robot", &[]);
        assert_eq!(
            b.describe_for(&robot),
            r#"RoleBinding "read/team" of Role "reader" to ServiceAccount "robot/team""#
        );
    }
}
