//! Resources computed per request rather than stored, as kube's
//! `pkg/registry/authorization` and `pkg/registry/authentication` serve
//! them: access and rules reviews, TokenReview, SelfSubjectReview, and the
//! `serviceaccounts/<name>/token` subresource (TokenRequest). Each is a
//! `create` whose answer is the request with its `status` filled in.

mod access;
mod identity;
mod token;

use std::sync::Arc;

use serde_json::Value;

use crate::authn::Authentication;
use crate::authz::Union;
use crate::identity::UserInfo;
use crate::registry::{Api, invalid_of};
use crate::resources::{Computed, ResourceType};
use crate::status::ApiError;
use crate::validation::FieldError;

pub use token::request_token;

/// One review request: who asks, where, and what answers it.
pub struct Review<'a> {
    /// The resource reviewed.
    pub rt: &'a Arc<ResourceType>,
    /// The requesting user.
    pub user: &'a UserInfo,
    /// The namespace of the request (LocalSubjectAccessReview).
    pub namespace: Option<&'a str>,
    /// The server's authorizers.
    pub authorizer: &'a Union,
    /// The server's authenticators.
    pub authentication: &'a Authentication,
    /// The registry.
    pub api: &'a Api,
}

impl Review<'_> {
    /// The 422 Invalid for a review with `errors`. kube validates the
    /// decoded internal object, whose kind is empty, so its message reads
    /// `.authorization.k8s.io "" is invalid: …`.
    fn invalid(&self, errors: Vec<FieldError>) -> ApiError {
        invalid_of(&self.rt.group, "", "", &errors)
    }
}

/// The answer to a review: the request with its status, as created.
fn created(mut body: Value) -> Value {
    if let Some(obj) = body.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(m) = meta.as_object_mut() {
            m.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
    body
}

/// Answers a create of a computed resource with the decoded `body`.
///
/// # Errors
/// A 400 when the body is of another API version, 422 when its spec is
/// invalid.
pub fn create(review: &Review<'_>, computed: Computed, body: Value) -> Result<Value, ApiError> {
    let rt = review.rt;
    let api_version = body["apiVersion"].as_str().unwrap_or_default();
    if !api_version.is_empty() && api_version != rt.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    match computed {
        Computed::SelfSubjectAccessReview => access::self_subject(review, body),
        Computed::SubjectAccessReview => access::subject(review, body),
        Computed::SelfSubjectRulesReview => access::self_subject_rules(review, body),
        Computed::SelfSubjectReview => Ok(identity::self_subject(review, body)),
        Computed::TokenReview => identity::token_review(review, body),
        // Served by their own routes, never as reviews.
        Computed::Binding | Computed::ComponentStatus => Err(ApiError::method_not_allowed()),
    }
}
