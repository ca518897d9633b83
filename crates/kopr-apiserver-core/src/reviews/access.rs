//! Access reviews (`authorization.k8s.io/v1`): whether a user may do
//! something (SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview), and every rule a user holds in a namespace
//! (SelfSubjectRulesReview), answered by the server's authorizers.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Review, created};
use crate::authz::{Attributes, Decision, ResourceAttributes};
use crate::identity::UserInfo;
use crate::status::ApiError;
use crate::validation::FieldError;

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The attributes an access review's spec asks about.
fn attributes(review: &Review<'_>, spec: &Value) -> Result<Attributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(r), None) => {
            let namespace = text(&r["namespace"]);
            let name = text(&r["name"]);
            let subresource = text(&r["subresource"]);
            Ok(Attributes {
                verb: text(&r["verb"]),
                resource: Some(ResourceAttributes {
                    group: text(&r["group"]),
                    version: text(&r["version"]),
                    resource: text(&r["resource"]),
                    subresource: (!subresource.is_empty()).then_some(subresource),
                    namespace: (!namespace.is_empty()).then_some(namespace),
                    name: (!name.is_empty()).then_some(name),
                }),
                path: String::new(),
            })
        }
        (None, Some(n)) => Ok(Attributes {
            verb: text(&n["verb"]),
            resource: None,
            path: text(&n["path"]),
        }),
        (resource, _) => Err(review.invalid(vec![FieldError::invalid(
            "spec.resourceAttributes",
            resource.cloned().unwrap_or(Value::Null),
            if resource.is_some() {
                "cannot be specified in combination with nonResourceAttributes"
            } else {
                "exactly one of nonResourceAttributes or resourceAttributes must be specified"
            },
        )])),
    }
}

/// The status of an access review: allowed, denied and the reason.
fn decision_status(decision: Decision) -> Value {
    let (allowed, denied, reason) = match decision {
        Decision::Allow(r) => (true, false, r),
        Decision::Deny(r) => (false, true, r),
        Decision::NoOpinion(r) => (false, false, r),
    };
    let mut status = json!({"allowed": allowed});
    if denied {
        status["denied"] = json!(true);
    }
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}

/// SelfSubjectAccessReview: may the requesting user do this?
pub(super) fn self_subject(review: &Review<'_>, mut body: Value) -> Result<Value, ApiError> {
    let attributes = attributes(review, &body["spec"])?;
    body["status"] = decision_status(review.authorizer.decide(review.user, &attributes));
    Ok(created(body))
}

/// The user a SubjectAccessReview's spec names.
fn spec_user(spec: &Value) -> UserInfo {
    let groups = spec["groups"]
        .as_array()
        .map(|g| g.iter().map(text).collect())
        .unwrap_or_default();
    let extra: BTreeMap<String, Vec<String>> = spec["extra"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .map(|a| a.iter().map(text).collect())
                        .unwrap_or_default();
                    (k.clone(), values)
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: text(&spec["user"]),
        uid: text(&spec["uid"]),
        groups,
        extra,
    }
}

/// SubjectAccessReview (cluster-wide) and LocalSubjectAccessReview (in the
/// namespace of the request): may the named user do this?
pub(super) fn subject(review: &Review<'_>, mut body: Value) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let mut errors = Vec::new();
    let user = spec_user(spec);
    if user.name.is_empty() && user.groups.is_empty() {
        errors.push(FieldError::invalid(
            "spec.user,spec.groups",
            Value::Null,
            "at least one of user or group must be specified",
        ));
    }
    let attributes = attributes(review, spec)?;
    if let Some(ns) = review.namespace {
        let asked = attributes
            .resource
            .as_ref()
            .and_then(|r| r.namespace.as_deref())
            .unwrap_or("");
        if attributes.resource.is_none() {
            errors.push(FieldError::invalid(
                "spec.nonResourceAttributes",
                spec["nonResourceAttributes"].clone(),
                "disallowed on this kind of request",
            ));
        } else if asked != ns {
            errors.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                json!(asked),
                "must match metadata.namespace",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(review.invalid(errors));
    }
    body["status"] = decision_status(review.authorizer.decide(&user, &attributes));
    Ok(created(body))
}

/// SelfSubjectRulesReview: every rule the requesting user holds in
/// `spec.namespace`.
pub(super) fn self_subject_rules(review: &Review<'_>, mut body: Value) -> Result<Value, ApiError> {
    let namespace = text(&body["spec"]["namespace"]);
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let resolved = review.authorizer.rules_for(review.user, Some(&namespace));
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in &resolved.rules {
        if !rule.resources.is_empty() {
            let mut r = Map::new();
            r.insert("verbs".into(), json!(rule.verbs));
            if !rule.api_groups.is_empty() {
                r.insert("apiGroups".into(), json!(rule.api_groups));
            }
            r.insert("resources".into(), json!(rule.resources));
            if !rule.resource_names.is_empty() {
                r.insert("resourceNames".into(), json!(rule.resource_names));
            }
            resource_rules.push(Value::Object(r));
        }
        if !rule.non_resource_urls.is_empty() {
            non_resource_rules.push(json!({
                "verbs": rule.verbs,
                "nonResourceURLs": rule.non_resource_urls,
            }));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !resolved.errors.is_empty(),
    });
    if !resolved.errors.is_empty() {
        status["evaluationError"] = json!(resolved.errors.join(", "));
    }
    body["spec"] = json!({});
    body["status"] = status;
    Ok(created(body))
}
