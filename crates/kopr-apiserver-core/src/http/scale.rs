//! The `scale` subresource (autoscaling/v1 Scale) of workload kinds.

use axum::response::Response;
use http::request::Parts;
use http::{Method, StatusCode, header};
use serde_json::json;

use super::query::Query;
use super::{AppState, body, response};
use crate::object;
use crate::registry::Target;
use crate::registry::scale::scale_of;
use crate::status::ApiError;

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
            let patched = crate::registry::patching::apply_to(
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
