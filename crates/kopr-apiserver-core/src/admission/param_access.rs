//! Who may point a ValidatingAdmissionPolicy at parameters: as kube's
//! admissionregistration storage does, a user writing a policy with a
//! `paramKind` must be allowed to `get` every object of that kind, and a user
//! writing a binding with a `paramRef` must be allowed to `get` the object it
//! references. Otherwise a policy would read, on the writer's behalf,
//! objects the writer cannot read.
//!
//! The check runs only on objects that passed validation (kube adds it to a
//! valid object's errors) and is a `Forbidden` field error of `spec.paramKind`
//! or `spec.paramRef` in a 422. Members of `system:masters` and the server's
//! own writes (no user) pass. A policy update is checked when its paramKind
//! changes; a binding update with a paramRef always is (kube compares the
//! paramRef's pointers, which are never equal).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::plugin::Validating;
use crate::authz::{Attributes, Decision, Union};
use crate::identity::{MASTERS_GROUP, UserInfo};
use crate::registry::AdmissionRequest;
use crate::resources::Catalog;
use crate::status::ApiError;
use crate::storage::Store;
use crate::validation::FieldError;

const GROUP: &str = "admissionregistration.k8s.io";
const POLICIES: &str = "/admissionregistration.k8s.io/validatingadmissionpolicies/";

/// The paramKind and paramRef access check, asking the server's authorizers.
pub struct ParamAccess {
    authorizer: Arc<Union>,
    store: Store,
    catalog: Catalog,
}

impl ParamAccess {
    /// The check over `authorizer`, the policies in `store` and the kinds
    /// `catalog` resolves.
    pub fn new(authorizer: Arc<Union>, store: Store, catalog: Catalog) -> ParamAccess {
        ParamAccess {
            authorizer,
            store,
            catalog,
        }
    }

    /// The group, version and resource a paramKind names: `*` for what does
    /// not parse or resolve, as kube falls back to requiring all of them.
    fn resource_of(&self, param_kind: &Value) -> (String, String, String) {
        let api_version = text(&param_kind["apiVersion"]);
        let kind = text(&param_kind["kind"]);
        let Some((group, version)) = parse_group_version(api_version) else {
            return ("*".into(), "*".into(), "*".into());
        };
        let resource = self
            .catalog
            .by_kind(group, version, kind)
            .map_or_else(|| "*".to_string(), |rt| rt.plural.clone());
        (group.to_string(), version.to_string(), resource)
    }

    fn allowed(
        &self,
        user: &UserInfo,
        (group, version, resource): &(String, String, String),
        namespace: &str,
        name: &str,
    ) -> bool {
        let mut attributes =
            Attributes::for_resource("get", group, resource, None, Some(namespace), Some(name));
        if let Some(r) = attributes.resource.as_mut() {
            r.version = version.clone();
        }
        matches!(
            self.authorizer.decide(user, &attributes),
            Decision::Allow(_)
        )
    }

    fn check_policy(&self, user: &UserInfo, obj: &Value, old: Option<&Value>) -> Option<String> {
        let param_kind = obj.pointer("/spec/paramKind").filter(|p| !p.is_null())?;
        if old.and_then(|o| o.pointer("/spec/paramKind")) == Some(param_kind) {
            return None;
        }
        let target = self.resource_of(param_kind);
        (!self.allowed(user, &target, "*", "*")).then(|| {
            format!(
                "user {} must have \"get\" permission on all objects of the referenced paramKind (kind={}, apiVersion={})",
                go_user(user),
                text(&param_kind["kind"]),
                text(&param_kind["apiVersion"]),
            )
        })
    }

    fn check_binding(&self, user: &UserInfo, obj: &Value) -> Option<String> {
        let param_ref = obj.pointer("/spec/paramRef").filter(|p| !p.is_null())?;
        let policy_name = text(&obj["spec"]["policyName"]);
        let policy = self
            .store
            .current(&format!("{POLICIES}{policy_name}"))
            .map(|s| s.object);
        let target = match policy
            .as_deref()
            .and_then(|p| p.pointer("/spec/paramKind"))
            .filter(|k| !k.is_null())
        {
            Some(kind) => self.resource_of(kind),
            None => ("*".into(), "*".into(), "*".into()),
        };
        let namespace = text(&param_ref["namespace"]);
        let name = text(&param_ref["name"]);
        (!self.allowed(user, &target, namespace, name)).then(|| {
            format!(
                "user {} does not have \"get\" permission on the object referenced by paramRef",
                go_user(user)
            )
        })
    }
}

impl Validating for ParamAccess {
    fn validate(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
        let rt = request.rt;
        let Some(user) = request.user else {
            return Ok(());
        };
        if rt.group != GROUP || request.subresource.is_some() || user.in_group(MASTERS_GROUP) {
            return Ok(());
        }
        let (field, refusal) = match rt.kind.as_str() {
            "ValidatingAdmissionPolicy" => {
                ("spec.paramKind", self.check_policy(user, obj, request.old))
            }
            "ValidatingAdmissionPolicyBinding" => ("spec.paramRef", self.check_binding(user, obj)),
            _ => return Ok(()),
        };
        match refusal {
            None => Ok(()),
            Some(why) => Err(crate::registry::invalid_object(
                rt,
                crate::object::name(obj),
                &[FieldError::forbidden(field, why)],
            )),
        }
    }
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// `group/version` or `version` (the core group), as schema.ParseGroupVersion
/// reads it; `None` for more than one slash.
fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() || api_version == "/" {
        return Some(("", ""));
    }
    match api_version.split_once('/') {
        None => Some(("", api_version)),
        Some((_, rest)) if rest.contains('/') => None,
        Some((group, version)) => Some((group, version)),
    }
}

/// A user as Go's `%v` prints kube's `*user.DefaultInfo`:
/// `&{name uid [groups] map[key:[values]]}`.
fn go_user(user: &UserInfo) -> String {
    format!(
        "&{{{} {} [{}] {}}}",
        user.name,
        user.uid,
        user.groups.join(" "),
        go_map(&user.extra)
    )
}

fn go_map(extra: &BTreeMap<String, Vec<String>>) -> String {
    let entries: Vec<String> = extra
        .iter()
        .map(|(k, v)| format!("{k}:[{}]", v.join(" ")))
        .collect();
    format!("map[{}]", entries.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_print_as_go_prints_default_info() {
        let mut user = UserInfo {
            name: "bob".into(),
            uid: String::new(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: BTreeMap::new(),
        };
        assert_eq!(go_user(&user), "&{bob  [dev system:authenticated] map[]}");
        user.extra.insert("b".into(), vec!["2".into(), "3".into()]);
        user.extra.insert("a".into(), vec!["1".into()]);
        assert_eq!(
            go_user(&user),
            "&{bob  [dev system:authenticated] map[a:[1] b:[2 3]]}"
        );
    }

    #[test]
    fn group_versions_parse_as_kube_parses_them() {
        assert_eq!(parse_group_version("v1"), Some(("", "v1")));
        assert_eq!(parse_group_version("apps/v1"), Some(("apps", "v1")));
        assert_eq!(parse_group_version("a/b/c"), None);
    }
}
