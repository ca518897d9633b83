//! Sending a cycle's writes: one merge patch for the object and one for `/status` at most, and
//! the finalizer's guarded JSON patch.

use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::{ObjectKey, ResourceRuntime};
use crate::handling::patch::split_status;

/// What sending a pair of merge patches gave.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Both parts were empty: no request was made.
    Nothing,
    /// The object is gone (404).
    Gone,
    /// The newest body, from the last response.
    Body(Value),
}

pub(crate) fn is_empty(patch: &Value) -> bool {
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
    /// A response as the reactor keeps it, like the bodies from watch events: JSON without
    /// `metadata.managedFields`, and only `apiVersion`, `kind` and `metadata` for a resource
    /// watched as metadata only.
    fn kept(&self, mut object: kube::api::DynamicObject) -> Value {
        object.metadata.managed_fields = None;
        if self.spec.metadata_only {
            object.data = Value::Object(serde_json::Map::new());
        }
        serde_json::to_value(object).unwrap_or(Value::Null)
    }

    /// The operator's patches are recorded under its field manager.
    fn patch_params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(self.shared.settings.identity.field_manager().to_owned()),
            ..PatchParams::default()
        }
    }

    /// Splits a merge patch into its `/status` part (when the resource has the subresource) and
    /// the object's part; empty parts are `None`.
    pub(crate) fn split_merge(&self, patch: Value) -> (Option<Value>, Option<Value>) {
        let (main, status) = if self.resolved.status_subresource {
            split_status(patch)
        } else {
            (patch, None)
        };
        let status = status
            .filter(|s| !is_empty(s))
            .map(|status| serde_json::json!({ "status": status }));
        (status, Some(main).filter(|m| !is_empty(m)))
    }

    /// Sends what is left of a pair of merge patches, `/status` first: the object's own patch
    /// carries the "handled" marker (the diff base), so it lands last. Each part is taken out of
    /// its option once it landed, so after an error the options hold exactly what is left.
    pub(crate) async fn send_parts(
        &self,
        key: &ObjectKey,
        status: &mut Option<Value>,
        main: &mut Option<Value>,
    ) -> Result<Sent, kube::Error> {
        let api = self.api(key.namespace());
        let mut sent = Sent::Nothing;
        if let Some(body) = status.as_ref() {
            match api
                .patch_status(key.name(), &self.patch_params(), &Patch::Merge(body))
                .await
            {
                Ok(object) => sent = Sent::Body(self.kept(object)),
                Err(error) if is_not_found(&error) => return Ok(Sent::Gone),
                Err(error) => return Err(error),
            }
            *status = None;
        }
        if let Some(body) = main.as_ref() {
            match api
                .patch(key.name(), &self.patch_params(), &Patch::Merge(body))
                .await
            {
                Ok(object) => sent = Sent::Body(self.kept(object)),
                Err(error) if is_not_found(&error) => return Ok(Sent::Gone),
                Err(error) => return Err(error),
            }
            *main = None;
        }
        Ok(sent)
    }

    /// Applies a merge patch once, sending `status` to the subresource when the resource has
    /// one (timers' and daemons' patches, which are not kept for retries).
    pub(crate) async fn apply_merge(
        &self,
        key: &ObjectKey,
        patch: Value,
    ) -> Result<(), kube::Error> {
        let (mut status, mut main) = self.split_merge(patch);
        self.send_parts(key, &mut status, &mut main).await.map(drop)
    }

    /// Applies a JSON patch (used for the finalizer, guarded by a resourceVersion test).
    /// Returns the newest body, or `None` when the object is gone.
    pub(crate) async fn apply_json(
        &self,
        key: &ObjectKey,
        patch: Value,
    ) -> Result<Option<Value>, kube::Error> {
        let operations: json_patch::Patch =
            serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
        let api = self.api(key.namespace());
        match api
            .patch(
                key.name(),
                &self.patch_params(),
                &Patch::<()>::Json(operations),
            )
            .await
        {
            Ok(object) => Ok(Some(self.kept(object))),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Reads the object afresh (to rebase a guarded patch whose test failed). `None` when gone.
    pub(crate) async fn read_fresh(&self, key: &ObjectKey) -> Result<Option<Value>, kube::Error> {
        let api = self.api(key.namespace());
        match api.get(key.name()).await {
            Ok(object) => Ok(Some(self.kept(object))),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }
}
