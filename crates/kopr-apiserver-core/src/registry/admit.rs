//! The registry's side of admission: what a create or update hands the
//! admission stage (kube's `admission.Attributes`), and the contract that
//! stage fulfils. The stage itself lives above the registry
//! ([`crate::admission`]), as in kube-apiserver, where the handler passes
//! admission into the store's create and update.

use serde_json::Value;

use super::FieldValidation;
use crate::resources::ResourceType;
use crate::status::{ApiError, StatusCause};
use crate::validation::FieldError;

/// The operation a new object state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// POST, or an apply or PUT that creates.
    Create,
    /// PUT or PATCH of an existing object, or a write of a subresource.
    Update,
    /// DELETE of an object (its stored state is `old`; there is no new one).
    Delete,
}

impl Operation {
    /// The name admission configurations use (`CREATE`, `UPDATE`, `DELETE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One object state to admit.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionRequest<'a> {
    /// The resource written.
    pub rt: &'a ResourceType,
    /// Create or update.
    pub operation: Operation,
    /// The subresource written, if any.
    pub subresource: Option<&'a str>,
    /// The stored state, on updates.
    pub old: Option<&'a Value>,
    /// How unknown fields are treated.
    pub field_validation: FieldValidation,
    /// Whether the write is a dry run.
    pub dry_run: bool,
    /// The user writing (`None`: the server itself).
    pub user: Option<&'a crate::identity::UserInfo>,
    /// The object's name (empty when the server generates it).
    pub name: &'a str,
    /// The object's namespace (for a Namespace itself, its own name).
    pub namespace: &'a str,
    /// On creation, what the registry fills in once mutation is done and before validation
    /// (kube's `BeforeCreate`): a generated name, `uid`, `creationTimestamp`, the kind's
    /// preparation. Mutating admission sees the object without them, validating with.
    pub before_validation: Option<BeforeValidation<'a>>,
}

/// The registry's step between mutating and validating admission.
#[derive(Clone, Copy)]
pub struct BeforeValidation<'a>(pub &'a (dyn Fn(&mut Value) + Send + Sync));

impl std::fmt::Debug for BeforeValidation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeValidation(..)")
    }
}

/// The admission stage: decodes, mutates and validates each new object
/// state a write produces, before it is stored, and admits deletions.
pub trait Admission: Send + Sync {
    /// Admits `obj`, changing it as mutating admission does; returns the
    /// warnings for the client.
    ///
    /// # Errors
    /// The Status that refuses the write (400 for undecodable or strictly
    /// checked bodies, 422 for invalid objects, 403 for denials, a
    /// webhook's own code for its denial).
    fn admit<'a>(
        &'a self,
        request: &'a AdmissionRequest<'a>,
        obj: &'a mut Value,
    ) -> BoxFuture<'a, Result<Vec<String>, ApiError>>;

    /// Admits the deletion of `request.old`; returns the warnings for the
    /// client.
    ///
    /// # Errors
    /// The Status that refuses the deletion.
    fn admit_delete<'a>(
        &'a self,
        request: &'a AdmissionRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<String>, ApiError>>;
}

/// A boxed future of the admission stage.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The 422 Invalid Status for `errors` in the object `name` of `rt`, in
/// kube-apiserver's words.
pub fn invalid_object(rt: &ResourceType, name: &str, errors: &[FieldError]) -> ApiError {
    invalid_of(&rt.group, &rt.kind, name, errors)
}

/// The 422 Invalid Status for `errors` in the object `name` of `kind` in
/// `group`. An empty kind gives the message kube gives for an internal
/// object whose kind was never set: `.<group> "<name>" is invalid: …`.
pub fn invalid_of(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let causes = errors
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.cause_type().to_string(),
            message: e.body(),
            field: e.field.clone(),
        })
        .collect();
    let kind_label = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    ApiError::invalid(
        group,
        kind,
        name,
        crate::validation::invalid_message(&kind_label, name, errors),
        causes,
    )
}
