//! Converting stored objects to the version a request addresses, and back.
//!
//! Objects are stored in one form per storage identity. Kinds sharing
//! storage with another version (`events.k8s.io/v1` Events, stored as core
//! `v1` Events) have the fields their strategy names renamed; other
//! resources only have their `apiVersion` rewritten. Custom resources whose
//! CRD names a conversion webhook are converted by it ([`Api::view`],
//! [`Api::views`], [`Api::storage_form`]), batched per request.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Api;
use crate::crd::conversion::{ConversionError, Webhook};
use crate::resources::ResourceType;
use crate::status::ApiError;

/// The conversion webhook that converts objects of `rt` stored at another version.
fn webhook(rt: &ResourceType) -> Option<&Webhook> {
    rt.custom.as_ref()?.conversion.as_deref()
}

/// Whether objects of `rt` stored at another version are converted by a webhook.
pub fn converts_by_webhook(rt: &ResourceType) -> bool {
    webhook(rt).is_some()
}

/// Whether `stored` needs the webhook to be seen as `rt` serves it.
fn needs_webhook(rt: &ResourceType, stored: &Value) -> bool {
    webhook(rt).is_some()
        && stored.get("apiVersion").and_then(Value::as_str) != Some(rt.api_version().as_str())
}

/// A failed conversion as a client sees it: kube-apiserver relays the
/// converter's error as it is, a 500 with no reason.
pub fn conversion_failed(e: &ConversionError) -> ApiError {
    tracing::warn!(error = %e, "custom resource conversion failed");
    ApiError::new(500, "", e.to_string())
}

impl Api {
    /// Presents a stored object as `rt` serves it, through the CRD's
    /// conversion webhook when it is stored at another version.
    ///
    /// # Errors
    /// A 500 naming the webhook's failure.
    pub async fn view(
        &self,
        rt: &ResourceType,
        stored: &Arc<Value>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut views = self.views(rt, std::slice::from_ref(stored), None).await?;
        Ok(views.pop().unwrap_or_else(|| to_view(rt, stored)))
    }

    /// Presents stored objects as `rt` serves them, converting those stored at
    /// another version in one review. `list_kind` is the list they are served
    /// in (it names a failure), none for objects served one by one.
    ///
    /// # Errors
    /// A 500 naming the webhook's failure; nothing is returned then.
    pub async fn views(
        &self,
        rt: &ResourceType,
        stored: &[Arc<Value>],
        list_kind: Option<&str>,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        match webhook(rt) {
            Some(hook) if stored.iter().any(|o| needs_webhook(rt, o)) => {
                let converted = hook
                    .convert(&self.caller, &rt.api_version(), stored, list_kind)
                    .await
                    .map_err(|e| conversion_failed(&e))?;
                Ok(converted.iter().map(|o| to_view(rt, o)).collect())
            }
            _ => Ok(stored.iter().map(|o| to_view(rt, o)).collect()),
        }
    }

    /// Turns an object of `rt` into its stored form, at the storage version,
    /// through the CRD's conversion webhook when that is another version.
    ///
    /// # Errors
    /// A 500 naming the webhook's failure: nothing may be stored then.
    pub async fn storage_form(&self, rt: &ResourceType, obj: Value) -> Result<Value, ApiError> {
        let Some(hook) = webhook(rt).filter(|_| rt.storage_api_version != rt.api_version()) else {
            return Ok(to_storage(rt, obj, &rt.storage_api_version));
        };
        let mut obj = obj;
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(rt.api_version()));
            map.insert("kind".into(), Value::String(rt.kind.clone()));
        }
        let converted = hook
            .convert(
                &self.caller,
                &rt.storage_api_version,
                &[Arc::new(obj)],
                None,
            )
            .await
            .map_err(|e| conversion_failed(&e))?;
        converted
            .into_iter()
            .next()
            .map(Arc::unwrap_or_clone)
            .ok_or_else(|| ApiError::internal("conversion returned no object"))
    }
}

fn rename(obj: &mut Map<String, Value>, renames: &[(&str, &str)], forward: bool) {
    for (a, b) in renames {
        let (from, to) = if forward { (*a, *b) } else { (*b, *a) };
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_string(), v);
        }
    }
}

/// Presents a stored object as the resource `rt` serves it, without a
/// conversion webhook ([`Api::view`] calls it when the CRD has one); custom
/// resources are defaulted on read, as apiextensions-apiserver does.
pub fn to_view(rt: &ResourceType, stored: &Arc<Value>) -> Arc<Value> {
    if let Some(custom) = rt.custom.as_ref().filter(|c| c.has_defaults) {
        let mut v = (**stored).clone();
        if let Some(map) = v.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(rt.api_version()));
        }
        custom.schema.apply_defaults(&mut v);
        return Arc::new(v);
    }
    let api_version = rt.api_version();
    let same_version =
        stored.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str());
    let renames = rt.strategy.field_renames();
    if same_version && renames.is_empty() {
        return stored.clone();
    }
    let mut v = (**stored).clone();
    if let Some(map) = v.as_object_mut() {
        rename(map, renames, false);
        if !same_version {
            rt.strategy.view_of_stored(map);
        }
        map.insert("apiVersion".into(), Value::String(api_version));
        map.insert("kind".into(), Value::String(rt.kind.clone()));
    }
    Arc::new(v)
}

/// Turns an object of the resource `rt` into its stored form, without a
/// conversion webhook ([`Api::storage_form`] calls it when the CRD has one).
pub fn to_storage(rt: &ResourceType, mut obj: Value, storage_api_version: &str) -> Value {
    if let Some(map) = obj.as_object_mut() {
        rename(map, rt.strategy.field_renames(), true);
        if storage_api_version != rt.api_version() {
            rt.strategy.stored_of_view(map);
        }
        map.insert(
            "apiVersion".into(),
            Value::String(storage_api_version.to_string()),
        );
        map.insert("kind".into(), Value::String(rt.kind.clone()));
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip() {
        let rt = ResourceType::new("events.k8s.io", "v1", "events", "event", "Event", true)
            .strategy(crate::registry::strategy::EventStrategy);
        let stored = to_storage(&rt, json!({"note": "hi", "regarding": {"name": "p"}}), "v1");
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["involvedObject"]["name"], "p");
        let view = to_view(&rt, &Arc::new(stored));
        assert_eq!(view["note"], "hi");
        assert_eq!(view["apiVersion"], "events.k8s.io/v1");
    }
}
