//! Patches: JSON patch (with kube-apiserver's `test` semantics), merge
//! patch, strategic merge patch for built-in kinds, and server-side apply,
//! as documents and algorithms; applying one to a kind's object is the
//! registry's (`registry::patching`).

pub mod apply;
pub mod last_applied;
pub mod schema;
pub mod strategic;

use serde_json::Value;

/// A decoded patch body.
#[derive(Debug, Clone)]
pub enum PatchDocument {
    /// RFC 6902 operations.
    Json(json_patch::Patch),
    /// RFC 7386 merge patch.
    Merge(Value),
    /// Strategic merge patch.
    Strategic(Value),
    /// Server-side apply configuration.
    Apply(Value),
}

/// The patch types a custom resource accepts, as a 415 lists them.
pub const CUSTOM_PATCH_TYPES: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
