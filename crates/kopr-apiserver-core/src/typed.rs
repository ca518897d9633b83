//! Typed decoding of built-in kinds through k8s-openapi: wrong JSON types are
//! rejected as kube-apiserver's decoder rejects them, and fields the kind does
//! not have are found (for `fieldValidation`) and dropped.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::resources::ResourceType;
use crate::status::ApiError;

/// Decodes `obj` as its built-in type and re-encodes it (the kind's
/// [`Decode`](crate::resources::kind::Decode), from its definition in
/// `crate::kinds`). Returns the paths of unknown fields that were dropped.
/// Custom resources are left as they are.
pub fn normalize(rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
    match rt.def.and_then(|d| d.decode) {
        Some(decode) => decode(rt, obj),
        None => Ok(Vec::new()),
    }
}

/// Metadata coercion of a custom resource: `metadata` is decoded as an
/// ObjectMeta (wrong types rejected, unknown fields dropped and reported).
pub fn normalize_metadata(rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let Some(map) = obj.as_object_mut() else {
        return Ok(Vec::new());
    };
    let Some(meta) = map.get_mut("metadata") else {
        return Ok(Vec::new());
    };
    if !force_round_trip() && crate::protobuf::object_meta_unchanged(meta) {
        omit_empty_metadata(meta);
        return Ok(Vec::new());
    }
    let typed: ObjectMeta = decode(rt, meta, "metadata.")?;
    let mut back = serde_json::to_value(&typed).map_err(ApiError::internal)?;
    let mut unknown = Vec::new();
    unknown_fields(meta, &back, &mut "metadata".to_string(), &mut unknown);
    omit_empty_metadata(&mut back);
    *meta = back;
    Ok(unknown)
}

/// Drops the metadata lists and maps that Go's encoder omits when empty (`labels: {}`,
/// `annotations: {}`, `finalizers: []`, `ownerReferences: []`, `managedFields: []`), as kube
/// writes ObjectMeta: an update or patch that empties one leaves no key behind.
fn omit_empty_metadata(meta: &mut Value) {
    if let Some(map) = meta.as_object_mut() {
        for key in [
            "labels",
            "annotations",
            "finalizers",
            "ownerReferences",
            "managedFields",
        ] {
            let empty = match map.get(key) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if empty {
                map.remove(key);
            }
        }
    }
}

/// Decodes `value` (found at `prefix` in the object) as a `T`. Decoded without tracking
/// paths (the common case, and the cheaper); only a failure is decoded again to name where
/// it failed, as kube's message does.
fn decode<T: DeserializeOwned>(
    rt: &ResourceType,
    value: &Value,
    prefix: &str,
) -> Result<T, ApiError> {
    if let Ok(typed) = T::deserialize(value) {
        return Ok(typed);
    }
    let failure = match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => return Err(ApiError::internal("a decode failed only once")),
        Err(e) => e,
    };
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{v}\" cannot be handled as a {kind}: json: cannot unmarshal {prefix}{path}: {inner}",
        kind = rt.kind,
        v = rt.version,
        path = failure.path(),
        inner = failure.inner()
    )))
}

/// Decodes `obj` as `T` (a Go type's k8s-openapi twin) and encodes it back: a
/// built-in kind's [`Decode`](crate::resources::kind::Decode).
///
/// When the object is already what the round trip would give back (proved from the kind's
/// field table by [`crate::protobuf::decodes_unchanged`]), it is left as it is: the result is
/// the same, without decoding and encoding the whole object.
pub fn decode_as<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    obj: &mut Value,
) -> Result<Vec<String>, ApiError> {
    if !force_round_trip() && crate::protobuf::decodes_unchanged(&rt.api_version(), &rt.kind, obj) {
        if let Some(meta) = obj.get_mut("metadata") {
            omit_empty_metadata(meta);
        }
        return Ok(Vec::new());
    }
    let typed: T = decode(rt, obj, "")?;
    let mut back = serde_json::to_value(&typed).map_err(ApiError::internal)?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &back, &mut String::new(), &mut unknown);
    if let Some(meta) = back.get_mut("metadata") {
        omit_empty_metadata(meta);
    }
    *obj = back;
    Ok(unknown)
}

#[cfg(test)]
thread_local! {
    /// Tests compare the proof's shortcut with the round trip it stands for.
    pub(crate) static FORCE_ROUND_TRIP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn force_round_trip() -> bool {
    #[cfg(test)]
    {
        FORCE_ROUND_TRIP.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Collects the paths present (and not null) in `original` but absent from `typed`.
fn unknown_fields(original: &Value, typed: &Value, path: &mut String, out: &mut Vec<String>) {
    match (original, typed) {
        (Value::Object(o), Value::Object(t)) => {
            for (k, v) in o {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match t.get(k) {
                    None if !v.is_null() => out.push(path.clone()),
                    Some(tv) => unknown_fields(v, tv, path, out),
                    None => {}
                }
                path.truncate(len);
            }
        }
        (Value::Array(o), Value::Array(t)) if o.len() == t.len() => {
            for (i, (ov, tv)) in o.iter().zip(t).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                unknown_fields(ov, tv, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    static CONFIG_MAPS: crate::resources::kind::KindDef = crate::resources::kind::KindDef::new(
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        crate::resources::kind::Scope::Namespaced,
    )
    .stored(
        || std::sync::Arc::new(crate::resources::NoStrategy),
        decode_as::<k8s_openapi::api::core::v1::ConfigMap>,
    );

    fn cm() -> ResourceType {
        CONFIG_MAPS.resource_type()
    }

    #[test]
    fn finds_and_drops_unknown_fields() {
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true});
        let unknown = normalize(&cm(), &mut v).unwrap();
        assert_eq!(
            unknown,
            vec!["extra".to_string(), "metadata.bogus".to_string()]
        );
        assert!(v.get("extra").is_none());
        assert_eq!(v["data"]["k"], "v");
    }

    #[test]
    fn rejects_wrong_types() {
        let mut v = json!({"metadata": {"name": "a"}, "data": {"k": 5}});
        let e = normalize(&cm(), &mut v).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap"),
            "{}",
            e.message
        );
        // The failure is decoded again to name where it is.
        assert!(
            e.message.contains("json: cannot unmarshal data.k: "),
            "{}",
            e.message
        );
        let mut v = json!({"metadata": {"name": 5}});
        let e = normalize_metadata(&cm(), &mut v).unwrap_err();
        assert!(
            e.message.contains("json: cannot unmarshal metadata.name: "),
            "{}",
            e.message
        );
    }
}
