//! Sending a cycle's writes: one merge patch for the object and one for `/status` at most, and
//! the finalizer's guarded JSON patch.

use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::{ObjectKey, ResourceRuntime};
use crate::handling::patch::split_status;

/// The field manager kopr's patches are recorded under.
pub(crate) const FIELD_MANAGER: &str = "kopr";

/// A patch response as the reactor keeps it: JSON without `metadata.managedFields`, like the
/// bodies from watch events.
fn without_managed_fields(mut object: kube::api::DynamicObject) -> Value {
    object.metadata.managed_fields = None;
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn is_empty(patch: &Value) -> bool {
    match patch {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

impl ResourceRuntime {
    /// Applies a merge patch, sending `status` to the subresource when the resource has one.
    /// Returns the newest body, or `None` when nothing was sent or the object is gone.
    pub(crate) async fn apply_merge(
        &self,
        key: &ObjectKey,
        patch: Value,
    ) -> Result<Option<Value>, kube::Error> {
        let (main, status) = if self.resolved.status_subresource {
            split_status(patch)
        } else {
            (patch, None)
        };
        let api = self.api(key.namespace.as_deref());
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        // Status first: the object's own patch carries the "handled" marker (diff base), so it
        // must land last.
        let mut latest = None;
        if let Some(status) = status.filter(|s| !is_empty(s)) {
            let body = serde_json::json!({ "status": status });
            match api
                .patch_status(&key.name, &params, &Patch::Merge(&body))
                .await
            {
                Ok(object) => latest = Some(without_managed_fields(object)),
                Err(error) if is_not_found(&error) => return Ok(None),
                Err(error) => return Err(error),
            }
        }
        if !is_empty(&main) {
            match api.patch(&key.name, &params, &Patch::Merge(&main)).await {
                Ok(object) => latest = Some(without_managed_fields(object)),
                Err(error) if is_not_found(&error) => return Ok(None),
                Err(error) => return Err(error),
            }
        }
        Ok(latest.filter(|v| !v.is_null()))
    }

    /// Applies a JSON patch (used for the finalizer, guarded by a resourceVersion test).
    pub(crate) async fn apply_json(
        &self,
        key: &ObjectKey,
        patch: Value,
    ) -> Result<Option<Value>, kube::Error> {
        let operations: json_patch::Patch =
            serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
        let api = self.api(key.namespace.as_deref());
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match api
            .patch(&key.name, &params, &Patch::<()>::Json(operations))
            .await
        {
            Ok(object) => Ok(Some(without_managed_fields(object))),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }
}
