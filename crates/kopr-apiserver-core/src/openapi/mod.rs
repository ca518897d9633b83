//! OpenAPI: the `/openapi/v3` index, one v3 document per group-version
//! (paths and operations in `routes`, schemas from `schemas` and the CRDs),
//! and the definition-less `/openapi/v2` document. The HTTP layer serves
//! what these functions build.

mod custom;
mod routes;

use serde_json::{Map, Value, json};

use crate::resources::{Catalog, ResourceType};
use crate::status::ApiError;
use crate::version::KUBE_VERSION;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of per-group-version documents.
pub fn root(catalog: &Catalog) -> Value {
    let mut paths = Map::new();
    for (group, versions) in catalog.groups() {
        for v in versions {
            let p = gv_path(&group, &v);
            let hash = document_hash(catalog, &group, &v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

fn document_hash(catalog: &Catalog, group: &str, version: &str) -> String {
    let doc = document(catalog, group, version);
    let text = doc.to_string();
    // FNV-1a: a stable fingerprint so clients re-fetch when a document changes.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016X}")
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/G/V`.
pub fn group_version(catalog: &Catalog, group: &str, version: &str) -> Result<Value, ApiError> {
    if !catalog.serves_group_version(group, version) {
        return Err(ApiError::path_not_found());
    }
    Ok(document(catalog, group, version))
}

/// The schema name of a kind, in Kubernetes' naming style.
pub fn schema_name(rt: &ResourceType) -> String {
    crate::schemas::schema_name(&rt.group, &rt.version, &rt.kind)
}

/// The OpenAPI document of one group-version.
pub fn document(catalog: &Catalog, group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let base = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for rt in catalog
        .all()
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let resource =
            routes::Resource::new(&rt, schema_name(&rt), rt.strategy.returns_deleted_object());
        for (path, item) in resource.paths(&base) {
            paths.insert(path, item);
        }
        for (name, schema) in crate::schemas::schemas_for(&rt) {
            schemas.entry(name).or_insert(schema);
        }
        if let Some(custom) = &rt.custom {
            let mut schema = crate::crd::openapi_schema(custom, &rt.group, &rt.version, &rt.kind);
            custom::unfold(&mut schema);
            schemas.insert(schema_name(&rt), schema);
        }
        let list = format!("{}List", schema_name(&rt));
        if !schemas.contains_key(&list) {
            let kind_schema = schemas.get(&schema_name(&rt)).cloned().unwrap_or_default();
            schemas.insert(list, crate::schemas::list_schema_for(&rt, &kind_schema));
        }
    }
    for (name, schema) in crate::schemas::operation_schemas() {
        schemas.entry(name).or_insert(schema);
    }
    schemas.insert(
        routes::PATCH_SCHEMA.into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION.2},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: a Swagger 2.0 document without definitions. Clients use
/// v3 for validation and `explain`; kubectl falls back to v2 only for
/// group-versions v3 does not list (e.g. ones the server does not serve),
/// where an empty document lets it report the real "no matches for kind".
pub fn v2(accept: Option<&str>) -> (&'static str, Vec<u8>) {
    if accept.is_some_and(|a| a.contains("protobuf")) {
        // gnostic's openapi_v2.Document: swagger (1) = "2.0",
        // info (2) = {title (1), version (2)}, paths (8) = {}.
        let title = b"Kubernetes";
        let version = KUBE_VERSION.2.as_bytes();
        let mut info = vec![0x0a, title.len() as u8];
        info.extend_from_slice(title);
        info.push(0x12);
        info.push(version.len() as u8);
        info.extend_from_slice(version);
        let mut doc = vec![0x0a, 3];
        doc.extend_from_slice(b"2.0");
        doc.push(0x12);
        doc.push(info.len() as u8);
        doc.extend_from_slice(&info);
        doc.extend_from_slice(&[0x42, 0x00]);
        return (V2_PROTOBUF, doc);
    }
    let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": KUBE_VERSION.2}, "paths": {}, "definitions": {}});
    ("application/json", doc.to_string().into_bytes())
}
