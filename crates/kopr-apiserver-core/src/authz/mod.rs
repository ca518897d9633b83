//! Authorization: whether the authenticated user may do what a request
//! asks, from the request's attributes (kube's `authorizer.Attributes`:
//! verb, API group, resource, subresource, namespace, name, or a
//! non-resource path), asked of kube-apiserver's chain: members of
//! `system:masters` may do everything ([`Masters`]), then the RBAC
//! authorizer ([`rbac`]) allows what the user's roles grant.

pub mod rbac;

use crate::identity::{MASTERS_GROUP, UserInfo};
use crate::status::ApiError;
pub use rbac::{PolicyRule, Rbac, ResolvedRules};

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`; for non-resource requests the lowercased method.
    pub verb: String,
    /// For resource requests: what is addressed.
    pub resource: Option<ResourceAttributes>,
    /// For non-resource requests: the path.
    pub path: String,
}

impl Attributes {
    /// The attributes of a request for a resource (version `*`).
    pub fn for_resource(
        verb: &str,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Attributes {
        let text = |v: Option<&str>| v.filter(|v| !v.is_empty()).map(str::to_string);
        Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: group.into(),
                version: "*".into(),
                resource: resource.into(),
                subresource: text(subresource),
                namespace: text(namespace),
                name: text(name),
            }),
            path: String::new(),
        }
    }
}

/// The resource a request addresses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceAttributes {
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, if any.
    pub subresource: Option<String>,
    /// Namespace, if any.
    pub namespace: Option<String>,
    /// Object name, if any.
    pub name: Option<String>,
}

/// The verb of a resource request, as kube's request info derives it.
pub fn resource_verb(method: &http::Method, named: bool, watch: bool) -> &'static str {
    use http::Method;
    match (method, named) {
        (&Method::GET | &Method::HEAD, _) if watch => "watch",
        (&Method::GET | &Method::HEAD, true) => "get",
        (&Method::GET | &Method::HEAD, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "",
    }
}

/// An authorizer's answer, each with its reason (kube's decision and
/// reason string; empty when there is nothing to say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed.
    Allow(String),
    /// Refused outright.
    Deny(String),
    /// This authorizer has no opinion; the next one decides.
    NoOpinion(String),
}

/// Decides whether a user may do what a request asks.
pub trait Authorizer: Send + Sync {
    /// The decision for `user` doing `attributes`.
    fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision;

    /// Every rule `user` holds in `namespace` (cluster-wide ones included).
    fn rules_for(&self, _user: &UserInfo, _namespace: Option<&str>) -> ResolvedRules {
        ResolvedRules::default()
    }
}

/// Allows members of `system:masters` everything; no opinion otherwise.
#[derive(Debug, Default, Clone, Copy)]
pub struct Masters;

impl Authorizer for Masters {
    fn authorize(&self, user: &UserInfo, _attributes: &Attributes) -> Decision {
        if user.in_group(MASTERS_GROUP) {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    fn rules_for(&self, user: &UserInfo, _namespace: Option<&str>) -> ResolvedRules {
        if !user.in_group(MASTERS_GROUP) {
            return ResolvedRules::default();
        }
        ResolvedRules {
            rules: PolicyRule::full_authority(),
            errors: Vec::new(),
        }
    }
}

/// Authorizers asked in order; the first opinion decides, and a request
/// nobody allows is refused.
pub struct Union(pub Vec<Box<dyn Authorizer>>);

impl Union {
    /// `system:masters` only: every other user is refused.
    pub fn masters_only() -> Union {
        Union(vec![Box::new(Masters)])
    }

    /// kube-apiserver's chain: `system:masters`, then RBAC over `store`.
    pub fn with_rbac(store: crate::storage::Store) -> Union {
        Union(vec![Box::new(Masters), Box::new(Rbac::new(store))])
    }

    /// The chain's decision: the first Allow or Deny, else no opinion with
    /// the non-empty reasons joined by newlines.
    pub fn decide(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let mut reasons = Vec::new();
        for authorizer in &self.0 {
            match authorizer.authorize(user, attributes) {
                Decision::NoOpinion(why) => {
                    if !why.is_empty() {
                        reasons.push(why);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    /// Every rule `user` holds in `namespace`, from every authorizer.
    pub fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> ResolvedRules {
        let mut out = ResolvedRules::default();
        for authorizer in &self.0 {
            let r = authorizer.rules_for(user, namespace);
            out.rules.extend(r.rules);
            out.errors.extend(r.errors);
        }
        out
    }

    /// Authorizes a request: `Ok` or kube-apiserver's 403.
    ///
    /// # Errors
    /// A Forbidden Status naming the user, verb and resource (or path).
    pub fn check(&self, user: &UserInfo, attributes: &Attributes) -> Result<(), ApiError> {
        match self.decide(user, attributes) {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(why) | Decision::NoOpinion(why) => {
                Err(forbidden(user, attributes, &why))
            }
        }
    }
}

/// kube-apiserver's 403 for a refused request: the user, verb and
/// resource (or path), then `: reason` when there is one.
pub fn forbidden(user: &UserInfo, a: &Attributes, reason: &str) -> ApiError {
    let suffix = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    let Some(r) = &a.resource else {
        let mut e = ApiError::new(
            403,
            "Forbidden",
            format!(
                "forbidden: User \"{}\" cannot {} path \"{}\"{suffix}",
                user.name, a.verb, a.path
            ),
        );
        e.details_always = true;
        return e;
    };
    let resource = match &r.subresource {
        Some(s) => format!("{}/{s}", r.resource),
        None => r.resource.clone(),
    };
    let scope = match &r.namespace {
        Some(ns) => format!(" in the namespace \"{ns}\""),
        None => " at the cluster scope".to_string(),
    };
    let why = format!(
        "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\"{scope}{suffix}",
        user.name, a.verb, r.group
    );
    let reference = crate::status::ResourceRef {
        group: &r.group,
        resource: &r.resource,
    };
    match r.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => ApiError::forbidden(reference, name, &why),
        None => ApiError::new(
            403,
            "Forbidden",
            format!("{} is forbidden: {why}", reference.qualified()),
        )
        .with_resource(reference, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "jane".into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    #[test]
    fn masters_may_everything_others_get_kubes_403() {
        let attributes = Attributes {
            verb: "list".into(),
            resource: Some(ResourceAttributes {
                resource: "secrets".into(),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            path: "/api/v1/namespaces/default/secrets".into(),
        };
        let chain = Union::masters_only();
        assert!(chain.check(&user(&[MASTERS_GROUP]), &attributes).is_ok());
        let denied = chain
            .check(&user(&["system:authenticated"]), &attributes)
            .expect_err("denied");
        assert_eq!(denied.code, 403);
        assert_eq!(
            denied.message,
            "secrets is forbidden: User \"jane\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(resource_verb(&http::Method::GET, false, true), "watch");
        assert_eq!(
            resource_verb(&http::Method::DELETE, false, false),
            "deletecollection"
        );
    }
}
