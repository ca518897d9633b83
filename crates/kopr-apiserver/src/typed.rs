//! Typed decoding of built-in kinds through k8s-openapi: wrong JSON types are
//! rejected as kube-apiserver's decoder rejects them, and fields the kind does
//! not have are found (for `fieldValidation`) and dropped.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::resources::ResourceType;
use crate::status::ApiError;

use k8s_openapi::api::{admissionregistration, apps, batch, coordination, core, events, rbac};

/// Decodes `obj` as its built-in type and re-encodes it. Returns the paths of
/// unknown fields that were dropped. Custom resources are left as they are.
pub fn normalize(rt: &ResourceType, obj: &mut Value) -> Result<Vec<String>, ApiError> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => round_trip::<core::v1::Namespace>(rt, obj),
        ("", "configmaps") => round_trip::<core::v1::ConfigMap>(rt, obj),
        ("", "secrets") => round_trip::<core::v1::Secret>(rt, obj),
        ("", "services") => round_trip::<core::v1::Service>(rt, obj),
        ("", "serviceaccounts") => round_trip::<core::v1::ServiceAccount>(rt, obj),
        ("", "pods") => round_trip::<core::v1::Pod>(rt, obj),
        ("", "events") => round_trip::<core::v1::Event>(rt, obj),
        ("", "nodes") => round_trip::<core::v1::Node>(rt, obj),
        ("apps", "deployments") => round_trip::<apps::v1::Deployment>(rt, obj),
        ("apps", "replicasets") => round_trip::<apps::v1::ReplicaSet>(rt, obj),
        ("apps", "statefulsets") => round_trip::<apps::v1::StatefulSet>(rt, obj),
        ("batch", "jobs") => round_trip::<batch::v1::Job>(rt, obj),
        ("coordination.k8s.io", "leases") => round_trip::<coordination::v1::Lease>(rt, obj),
        ("events.k8s.io", "events") => round_trip::<events::v1::Event>(rt, obj),
        ("rbac.authorization.k8s.io", "roles") => round_trip::<rbac::v1::Role>(rt, obj),
        ("rbac.authorization.k8s.io", "rolebindings") => {
            round_trip::<rbac::v1::RoleBinding>(rt, obj)
        }
        ("rbac.authorization.k8s.io", "clusterroles") => {
            round_trip::<rbac::v1::ClusterRole>(rt, obj)
        }
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            round_trip::<rbac::v1::ClusterRoleBinding>(rt, obj)
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            round_trip::<admissionregistration::v1::ValidatingWebhookConfiguration>(rt, obj)
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            round_trip::<admissionregistration::v1::MutatingWebhookConfiguration>(rt, obj)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            round_trip::<admissionregistration::v1::ValidatingAdmissionPolicy>(rt, obj)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            round_trip::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(rt, obj)
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            round_trip::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(
                rt, obj,
            )
        }
        _ => Ok(Vec::new()),
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
    let typed: ObjectMeta = serde_path_to_error::deserialize(&*meta).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: json: cannot unmarshal metadata.{path}: {inner}",
            kind = rt.kind,
            v = rt.version,
            path = e.path(),
            inner = e.inner()
        ))
    })?;
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

fn round_trip<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    obj: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let typed: T = serde_path_to_error::deserialize(&*obj).map_err(|e| {
        let path = e.path().to_string();
        ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: json: cannot unmarshal {path}: {inner}",
            kind = rt.kind,
            v = rt.version,
            inner = e.inner()
        ))
    })?;
    let mut back = serde_json::to_value(&typed).map_err(ApiError::internal)?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &back, &mut String::new(), &mut unknown);
    if let Some(meta) = back.get_mut("metadata") {
        omit_empty_metadata(meta);
    }
    *obj = back;
    Ok(unknown)
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

    fn cm() -> ResourceType {
        ResourceType::new("", "v1", "configmaps", "configmap", "ConfigMap", true)
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
    }
}
