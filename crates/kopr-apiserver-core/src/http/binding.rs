//! Assigning a pod to a node: `POST .../bindings` and `POST
//! .../pods/<name>/binding` (a core v1 Binding), as the scheduler does.

use axum::response::Response;
use http::request::Parts;
use http::{Method, StatusCode, header};
use serde_json::{Value, json};

use super::path::ResourcePath;
use super::{AppState, body, response};
use crate::registry::Bind;
use crate::status::ApiError;
use crate::validation::FieldError;

/// Handles a Binding create: validates it, then sets the pod's node, the
/// Binding's annotations and a `PodScheduled` condition. Answers a
/// Success Status (201), as kube-apiserver does.
///
/// # Errors
/// 405 for other methods; 400 when the name in the URL and the body
/// differ; 422 for a Binding without a node; 404 for a missing pod; 409
/// when the pod is deleting or already has a node.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    rp: &ResourcePath,
    body_bytes: &[u8],
) -> Result<Response, ApiError> {
    if parts.method != Method::POST || (rp.subresource.is_none() && rp.name.is_some()) {
        return Err(ApiError::method_not_allowed());
    }
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let binding = body::decode_object(content_type, body_bytes)?;
    let meta_name = binding
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(url_name) = rp.name.as_deref()
        && url_name != meta_name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let Some(namespace) = rp.namespace.as_deref() else {
        return Err(ApiError::path_not_found());
    };
    if let Some(ns) = binding
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        && !ns.is_empty()
        && ns != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let errors = validate(&binding);
    if !errors.is_empty() {
        return Err(crate::registry::invalid_of(
            "", "Binding", meta_name, &errors,
        ));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    state
        .api
        .bind_pod(Bind {
            namespace,
            name: meta_name,
            uid: None,
            node: &node,
            annotations: &annotations,
        })
        .await?;
    Ok(response::json(
        StatusCode::CREATED,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }),
    ))
}

/// kube's `ValidatePodBinding`: a node name, and a target of kind Node.
fn validate(binding: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        errors.push(FieldError::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    let name = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        errors.push(FieldError::required("target.name", ""));
    }
    errors
}
