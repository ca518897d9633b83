//! Applying a patch to a kind's object, and recording a write's
//! managedFields: the kind decides the merge rules (the built-in types'
//! rules walked from its type, `crate::merge`, or a CRD's structural schema)
//! and which fields a subresource may not own.

use serde_json::Value;

use crate::merge;
use crate::patch::{CUSTOM_PATCH_TYPES, PatchDocument, apply, last_applied, strategic};
use crate::resources::ResourceType;
use crate::resources::kind::Sub;
use crate::status::{ApiError, StatusCause};

/// What a patch needs of the write's options.
#[derive(Debug, Clone, Default)]
pub struct PatchOptions {
    /// The field manager (required for apply).
    pub field_manager: String,
    /// `force` (apply only).
    pub force: bool,
}

/// Drops `test` operations that check a missing path against `null`:
/// kube-apiserver treats those as passing.
fn kube_json_patch(target: &Value, ops: &json_patch::Patch) -> json_patch::Patch {
    let kept = ops
        .0
        .iter()
        .filter(|op| match op {
            json_patch::PatchOperation::Test(t) => {
                !(t.value.is_null() && target.pointer(t.path.as_str()).is_none())
            }
            _ => true,
        })
        .cloned()
        .collect();
    json_patch::Patch(kept)
}

fn patch_failed(message: String) -> ApiError {
    let mut e = ApiError::new(422, "Invalid", message.clone());
    e.causes.push(StatusCause {
        reason: "FieldValueInvalid".into(),
        message,
        field: "patch".into(),
    });
    e
}

/// Paths a write through `subresource` may not own or change.
pub fn ignored_fields(
    rt: &ResourceType,
    subresource: Option<&str>,
) -> &'static [&'static [&'static str]] {
    match subresource {
        Some("status") => &[&["spec"]],
        _ if rt.serves(Sub::Status) => &[&["status"]],
        _ => &[],
    }
}

/// Applies a patch to the current object (None: the object doesn't exist,
/// only valid for apply).
pub fn apply_to(
    rt: &ResourceType,
    current: Option<&Value>,
    doc: &PatchDocument,
    opts: &PatchOptions,
    subresource: Option<&str>,
) -> Result<Value, ApiError> {
    let kind = rt.kind.as_str();
    match (doc, current) {
        (PatchDocument::Json(ops), Some(cur)) => {
            // kube patches the JSON its Go encoder writes: value structs (`resources: {}`) and
            // fields without `omitempty` are there to patch even when the client left them out.
            let mut target = crate::gojson::as_go_writes(cur);
            let ops = kube_json_patch(&target, ops);
            json_patch::patch(&mut target, &ops).map_err(|e| patch_failed(e.to_string()))?;
            Ok(target)
        }
        (PatchDocument::Merge(p), Some(cur)) => {
            let mut target = cur.clone();
            json_patch::merge(&mut target, p);
            Ok(target)
        }
        (PatchDocument::Strategic(p), Some(cur)) => {
            // Custom resources refuse strategic merge patch.
            if !rt.strategy.accepts_strategic_merge_patch() {
                return Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES));
            }
            let strategic_schema = merge::strategic_schema(&rt.api_version(), kind);
            strategic::strategic_merge_patch(cur, p, &strategic_schema).map_err(|e| {
                let mut err = ApiError::new(e.status_code(), e.reason(), e.status_message());
                if e.status_code() == 500 {
                    err.reason = "".into();
                }
                err
            })
        }
        (PatchDocument::Apply(applied), live) => {
            if opts.field_manager.is_empty() {
                return Err(ApiError::from_status(
                    &apply::field_manager_required_status(),
                ));
            }
            let now = crate::object::now_rfc3339();
            let api_version = rt.api_version();
            let req = apply::ApplyRequest {
                live,
                applied,
                manager: &opts.field_manager,
                force: opts.force,
                api_version: &api_version,
                kind,
                subresource,
                now: &now,
                ignored_fields: ignored_fields(rt, subresource),
            };
            let schema = rt.merge_schema();
            match apply::server_side_apply(req, schema.as_ref()) {
                Err(apply::ApplyError::Conflict(conflicts))
                    if last_applied::lifts_conflicts(
                        schema.as_ref(),
                        &opts.field_manager,
                        live,
                        &api_version,
                        &conflicts,
                    ) =>
                {
                    let forced = apply::ApplyRequest { force: true, ..req };
                    apply::server_side_apply(forced, schema.as_ref())
                }
                other => other,
            }
            .map_err(|e| ApiError::from_status(&e.to_status()))
        }
        (_, None) => Err(ApiError::not_found(rt.reference(), "")),
    }
}

/// Records a non-apply write in `metadata.managedFields`.
pub fn record_update(
    rt: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
) {
    let now = crate::object::now_rfc3339();
    let api_version = rt.api_version();
    let req = apply::UpdateRequest {
        old,
        manager,
        subresource,
        api_version: &api_version,
        now: &now,
        ignored_fields: ignored_fields(rt, subresource),
    };
    apply::update_managed_fields(req, new, rt.merge_schema().as_ref());
}
