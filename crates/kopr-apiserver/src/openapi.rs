//! OpenAPI v3: the `/openapi/v3` index and one document per group-version,
//! with the paths, operations and parameters kubectl looks for.

use axum::response::Response;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::http::response;
use crate::resources::{Catalog, ResourceType};
use crate::status::ApiError;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of per-group-version documents.
pub fn root(catalog: &Catalog) -> Response {
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
    response::json(StatusCode::OK, &json!({"paths": paths}))
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
pub fn group_version(catalog: &Catalog, group: &str, version: &str) -> Result<Response, ApiError> {
    if !catalog.serves_group_version(group, version) {
        return Err(ApiError::path_not_found());
    }
    Ok(response::json(
        StatusCode::OK,
        &document(catalog, group, version),
    ))
}

/// The schema name of a kind, in Kubernetes' naming style.
pub fn schema_name(rt: &ResourceType) -> String {
    crate::schemas::schema_name(&rt.group, &rt.version, &rt.kind)
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(rt: &ResourceType, verb: &str, action: &str, with_body: bool) -> Value {
    let tag = if rt.group.is_empty() {
        format!("core_{}", rt.version)
    } else {
        format!("{}_{}", rt.group.replace('.', ""), rt.version)
    };
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(rt))});
    let mut op = json!({
        "tags": [tag],
        "operationId": format!("{verb}{}", rt.kind),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(rt),
    });
    let mut params = vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
    ];
    if with_body {
        params.push(query_param("fieldValidation", "Instructs the server how to handle objects in the request with unknown or duplicate fields: Ignore, Warn or Strict."));
        let content = if verb == "patch" {
            json!({
                "application/apply-patch+yaml": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                "application/json-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                "application/merge-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                "application/strategic-merge-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
            })
        } else {
            json!({"*/*": {"schema": reference}})
        };
        op["requestBody"] = json!({"content": content, "required": true});
    }
    if verb == "patch" {
        params.push(query_param(
            "force",
            "Force is going to force Apply requests.",
        ));
    }
    op["parameters"] = Value::Array(params);
    op
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
        let coll = if rt.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
        } else {
            format!("{base}/{}", rt.plural)
        };
        paths.insert(
            coll.clone(),
            json!({"get": operation(&rt, "list", "list", false), "post": operation(&rt, "create", "post", true)}),
        );
        let item = json!({
            "get": operation(&rt, "read", "get", false),
            "put": operation(&rt, "replace", "put", true),
            "patch": operation(&rt, "patch", "patch", true),
            "delete": operation(&rt, "delete", "delete", false),
        });
        paths.insert(format!("{coll}/{{name}}"), item);
        if rt.status_subresource {
            paths.insert(
                format!("{coll}/{{name}}/status"),
                json!({"get": operation(&rt, "read", "get", false), "put": operation(&rt, "replace", "put", true), "patch": operation(&rt, "patch", "patch", true)}),
            );
        }
        for (name, schema) in crate::schemas::schemas_for(&rt) {
            schemas.entry(name).or_insert(schema);
        }
        if let Some(custom) = &rt.custom {
            let schema = crate::crd::openapi_schema(custom, &rt.group, &rt.version, &rt.kind);
            schemas.insert(schema_name(&rt), schema);
        }
    }
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::http::KUBE_VERSION.2},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: a Swagger 2.0 document without definitions. Clients use
/// v3 for validation and `explain`; kubectl falls back to v2 only for
/// group-versions v3 does not list (e.g. ones the server does not serve),
/// where an empty document lets it report the real "no matches for kind".
pub fn v2(accept: Option<&str>) -> Response {
    if accept.is_some_and(|a| a.contains("protobuf")) {
        // gnostic's openapi_v2.Document: swagger (1) = "2.0",
        // info (2) = {title (1), version (2)}, paths (8) = {}.
        let title = b"Kubernetes";
        let version = crate::http::KUBE_VERSION.2.as_bytes();
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
        return response::bytes_response(StatusCode::OK, V2_PROTOBUF, doc);
    }
    response::json(
        StatusCode::OK,
        &json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": crate::http::KUBE_VERSION.2}, "paths": {}, "definitions": {}}),
    )
}
