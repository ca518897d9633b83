//! Converting stored objects to the version a request addresses, and back.
//!
//! Objects are stored in one form per storage identity. Kinds sharing
//! storage with another version (`events.k8s.io/v1` Events, stored as core
//! `v1` Events) have the fields their strategy names renamed; other
//! resources only have their `apiVersion` rewritten.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::resources::ResourceType;

fn rename(obj: &mut Map<String, Value>, renames: &[(&str, &str)], forward: bool) {
    for (a, b) in renames {
        let (from, to) = if forward { (*a, *b) } else { (*b, *a) };
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_string(), v);
        }
    }
}

/// Presents a stored object as the resource `rt` serves it; custom
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

/// Turns an object of the resource `rt` into its stored form.
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
