//! The pod `log` subresource: plain-text container logs.
//!
//! Until the simulated kubelet runs containers, a pod's log is the start-up
//! lines of each container, derived from its spec.

use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

use super::query::Query;
use super::{AppState, response};
use crate::registry::Target;
use crate::status::ApiError;

/// Serves GET `.../pods/NAME/log`.
pub async fn handle(
    state: &AppState,
    target: &Target,
    query: &Query,
) -> Result<Response, ApiError> {
    let pod = state.api.get(target).await?;
    let containers: Vec<&Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let container = match &query.container {
        Some(c) => containers
            .iter()
            .find(|x| x.get("name").and_then(Value::as_str) == Some(c.as_str()))
            .copied()
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "container {c} is not valid for pod {}",
                    target.name()
                ))
            })?,
        None if containers.len() == 1 => containers[0],
        None => {
            let names: Vec<&str> = containers
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect();
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {}, choose one of: [{}]",
                target.name(),
                names.join(" ")
            )));
        }
    };
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return Err(ApiError::bad_request(format!(
            "container \"{}\" in pod \"{}\" is waiting to start: ContainerCreating",
            container.get("name").and_then(Value::as_str).unwrap_or(""),
            target.name()
        )));
    }
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    let name = container.get("name").and_then(Value::as_str).unwrap_or("");
    let mut lines = vec![
        format!("starting container {name} from image {image}"),
        format!("container {name} is running"),
    ];
    if let Some(n) = query.tail_lines {
        let n = n.max(0) as usize;
        let skip = lines.len().saturating_sub(n);
        lines.drain(..skip);
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(response::bytes_response(
        StatusCode::OK,
        "text/plain",
        text.into_bytes(),
    ))
}
