//! Core v1 ComponentStatus (deprecated since 1.19, still served): the
//! health of the control plane's parts. kopr-apiserver runs the scheduler,
//! the controllers and the store in its own process, so while it answers
//! all three are healthy.

use std::sync::Arc;

use axum::response::Response;
use http::request::Parts;
use http::{Method, StatusCode, header};
use serde_json::{Value, json};

use super::negotiate::{Representation, representation};
use super::path::ResourcePath;
use super::query::Query;
use super::response;
use crate::resources::ResourceType;
use crate::status::{ApiError, ResourceRef};

/// The components kube-apiserver 1.32 reports, in its order.
const COMPONENTS: &[&str] = &["scheduler", "controller-manager", "etcd-0"];

/// The warning kube-apiserver attaches to every ComponentStatus response.
const DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

fn component(name: &str) -> Value {
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    })
}

/// Serves `get` and `list` of componentstatuses, as JSON or as a Table.
///
/// # Errors
/// 405 for other verbs (watch included); 404 for an unknown name.
pub fn handle(
    parts: &Parts,
    rp: &ResourcePath,
    rt: &ResourceType,
    query: &Query,
    watch: bool,
) -> Result<Response, ApiError> {
    if parts.method != Method::GET || watch || rp.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let body = match rp.name.as_deref() {
        Some(name) if COMPONENTS.contains(&name) => component(name),
        Some(name) => {
            return Err(ApiError::not_found(
                ResourceRef {
                    group: "",
                    resource: "componentstatuses",
                },
                name,
            ));
        }
        None => json!({
            "kind": "ComponentStatusList",
            "apiVersion": "v1",
            "metadata": {},
            "items": COMPONENTS.iter().map(|c| component(c)).collect::<Vec<_>>(),
        }),
    };
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let body = match representation(accept) {
        Representation::Table => {
            let items: Vec<Arc<Value>> = match body.get("items").and_then(Value::as_array) {
                Some(items) => items.iter().cloned().map(Arc::new).collect(),
                None => vec![Arc::new(body)],
            };
            super::table::render(rt, &items, query, json!({}), true)?
        }
        _ => body,
    };
    Ok(response::with_warnings(
        response::json(StatusCode::OK, &body),
        &[DEPRECATED.to_string()],
    ))
}
