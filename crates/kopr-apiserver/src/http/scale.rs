//! The `scale` subresource (autoscaling/v1 Scale) of workload kinds.

use axum::response::Response;
use http::request::Parts;
use http::{Method, StatusCode, header};
use serde_json::{Value, json};

use super::query::Query;
use super::{AppState, body, response};
use crate::crd;
use crate::object;
use crate::registry::Target;
use crate::resources::ResourceType;
use crate::status::ApiError;

/// The Scale view of a workload object.
pub fn scale_of(rt: &ResourceType, obj: &Value) -> Value {
    let meta = object::meta(obj).cloned().unwrap_or_default();
    let mut m = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    let paths = rt.scale_paths();
    let selector = match &paths.label_selector {
        // Custom resources name a path holding the selector string.
        Some(p) if rt.custom.is_some() => crd::value_at(obj, p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => obj
            .pointer("/spec/selector")
            .map(selector_string)
            .unwrap_or_default(),
    };
    let replicas = |p: &str| crd::value_at(obj, p).cloned().unwrap_or(json!(0));
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": m,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": {
            "replicas": replicas(&paths.status_replicas),
            "selector": selector,
        },
    })
}

/// A workload's selector as a string: a LabelSelector, or a plain label
/// map (ReplicationControllers).
fn selector_string(selector: &Value) -> String {
    let plain = selector.as_object().filter(|m| {
        !m.contains_key("matchLabels")
            && !m.contains_key("matchExpressions")
            && m.values().all(Value::is_string)
    });
    if let Some(map) = plain {
        return map
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(",");
    }
    crate::selectors::LabelSelector::from_label_selector_value(selector)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// Serves GET, PUT and PATCH on `.../scale`.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    target: &Target,
    query: &Query,
    raw: &[u8],
    user_agent: &str,
) -> Result<Response, ApiError> {
    let api = &state.api;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let opts = query.write_options(user_agent);
    let replicas = match parts.method {
        Method::GET => {
            let obj = api.get(target).await?;
            return Ok(response::json(StatusCode::OK, &scale_of(&target.rt, &obj)));
        }
        Method::PUT => {
            let scale = body::decode_object(content_type, raw)?;
            let precondition = object::meta_str(&scale, "resourceVersion").map(str::to_string);
            let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
            (replicas, precondition)
        }
        Method::PATCH => {
            let kind = body::PatchKind::from_content_type(content_type)?;
            let current = api.get(target).await?;
            let scale_rt = crate::resources::ResourceType::new(
                "autoscaling",
                "v1",
                "scale",
                "scale",
                "Scale",
                true,
            );
            // Scale has no lists, so a strategic merge patch merges like a
            // merge patch.
            let kind = match kind {
                body::PatchKind::Strategic => body::PatchKind::Merge,
                other => other,
            };
            let doc = body::decode_patch(kind, raw, true)?;
            let patched = crate::patch::apply_to(
                &scale_rt,
                Some(&scale_of(&target.rt, &current)),
                &doc,
                &(&opts).into(),
                None,
            )?;
            (
                patched
                    .pointer("/spec/replicas")
                    .cloned()
                    .unwrap_or(json!(0)),
                None,
            )
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let (replicas, precondition) = replicas;
    if !replicas.is_i64() || replicas.as_i64().is_some_and(|r| r < 0) {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            target.name(),
            format!(
                "Scale.autoscaling \"{}\" is invalid: spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0",
                target.name()
            ),
            vec![crate::status::StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }],
        ));
    }
    let w = api
        .set_replicas(target, replicas, precondition.as_deref(), &opts)
        .await?;
    Ok(response::json(
        StatusCode::OK,
        &scale_of(&target.rt, &w.object),
    ))
}
