//! `POST .../pods/<name>/eviction`: decodes the Eviction (policy/v1, or
//! policy/v1beta1 as kube also accepts), checks its name and namespace
//! against the URL, merges the request's dry run into its `deleteOptions`
//! and answers the eviction's outcome: a Success Status (201), or the
//! refusal, with `Retry-After` when it names a delay.

use std::sync::Arc;

use axum::response::Response;
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use super::path::ResourcePath;
use super::query::Query;
use super::{AppState, body, response};
use crate::registry::{DeleteOptions, Evict};
use crate::resources::ResourceType;
use crate::status::ApiError;

/// The versions of Eviction the subresource takes.
const ACCEPTED: &[&str] = &["policy/v1", "policy/v1beta1"];

/// Handles an eviction.
///
/// # Errors
/// 405 for other methods; 400 for a body that is not an Eviction, names
/// another pod or namespace, or has bad delete options; the eviction's own
/// errors (404, 409, 429, 500, ...).
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    query: &Query,
    body_bytes: &[u8],
    user: &Arc<crate::authn::UserInfo>,
) -> Result<Response, ApiError> {
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let (Some(namespace), Some(name)) = (rp.namespace.as_deref(), rp.name.as_deref()) else {
        return Err(ApiError::path_not_found());
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let eviction = body::decode_object(content_type, body_bytes)?;
    check_type(&eviction)?;
    if let Some(ns) = eviction
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        && !ns.is_empty()
        && ns != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let body_name = eviction
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let options = delete_options(&eviction, query.dry_run)?;
    let evict = Evict {
        pods: rt,
        namespace,
        name,
        options: DeleteOptions {
            user: Some(user.clone()),
            ..options
        },
    };
    match state.api.evict_pod(&evict).await {
        Ok(()) => Ok(response::json(
            StatusCode::CREATED,
            &json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            }),
        )),
        Err(e) => Ok(refusal(&e)),
    }
}

/// The error answer, with `Retry-After` when the Status suggests a delay.
fn refusal(e: &ApiError) -> Response {
    let mut r = response::error(e);
    if let Some(secs) = e.retry_after_seconds.filter(|s| *s > 0)
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Checks that the body is an Eviction of an accepted version, and that
/// its fields have the types an Eviction's have.
fn check_type(eviction: &Value) -> Result<(), ApiError> {
    let kind = eviction.get("kind").and_then(Value::as_str).unwrap_or("");
    let version = eviction
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !kind.is_empty() && kind != "Eviction" {
        let v = version.rsplit('/').next().unwrap_or("");
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a Eviction: no kind \"{kind}\" is registered for version \"{version}\""
        )));
    }
    if !version.is_empty() && !ACCEPTED.contains(&version) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version (policy/v1)"
        )));
    }
    type Eviction = k8s_openapi::api::policy::v1::Eviction;
    // The typed decode checks field types; the version was checked above.
    let mut typed = eviction.clone();
    typed["apiVersion"] = json!("policy/v1");
    typed["kind"] = json!("Eviction");
    if let Err(e) = serde_path_to_error::deserialize::<_, Eviction>(&typed) {
        let v = match version.rsplit('/').next() {
            Some(v) if !v.is_empty() => v,
            _ => "v1",
        };
        return Err(ApiError::bad_request(format!(
            "Eviction in version \"{v}\" cannot be handled as a Eviction: json: cannot unmarshal {}: {}",
            e.path(),
            e.inner()
        )));
    }
    Ok(())
}

/// The Eviction's delete options, with the request's dry run when the
/// options name none (`propagateDryRun`).
fn delete_options(eviction: &Value, request_dry_run: bool) -> Result<DeleteOptions, ApiError> {
    let given = eviction.get("deleteOptions").filter(|v| !v.is_null());
    let mut options = match given {
        Some(v) => DeleteOptions::default().merge_body(v)?,
        None => DeleteOptions::default(),
    };
    let body_dry_run: Vec<&str> = given
        .and_then(|v| v.get("dryRun"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if body_dry_run.is_empty() {
        options.dry_run = request_dry_run;
    } else if request_dry_run && body_dry_run != ["All"] {
        return Err(ApiError::new(
            500,
            "Unknown",
            format!(
                "Non-matching dry-run options in request and content: [All] and [{}]",
                body_dry_run.join(" ")
            ),
        ));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_dry_run_fills_in_the_options() {
        let ev = json!({"metadata": {"name": "p"}});
        assert!(delete_options(&ev, true).unwrap().dry_run);
        let ev = json!({"metadata": {"name": "p"}, "deleteOptions": {"gracePeriodSeconds": 5, "preconditions": {"uid": "u"}}});
        let o = delete_options(&ev, false).unwrap();
        assert!(!o.dry_run);
        assert_eq!(o.grace_period_seconds, Some(5));
        assert_eq!(o.precondition_uid.as_deref(), Some("u"));
        let ev = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["All"]}});
        assert!(delete_options(&ev, false).unwrap().dry_run);
        let ev = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["All", "All"]}});
        let e = delete_options(&ev, true).unwrap_err();
        assert_eq!(
            e.message,
            "Non-matching dry-run options in request and content: [All] and [All All]"
        );
    }

    #[test]
    fn only_evictions_are_accepted() {
        assert!(check_type(&json!({"apiVersion": "policy/v1beta1", "kind": "Eviction"})).is_ok());
        assert!(check_type(&json!({"metadata": {"name": "p"}})).is_ok());
        let e = check_type(&json!({"apiVersion": "policy/v2", "kind": "Eviction"})).unwrap_err();
        assert_eq!(
            e.message,
            "the API version in the data (policy/v2) does not match the expected API version (policy/v1)"
        );
        let e = check_type(&json!({"metadata": {"name": 5}})).unwrap_err();
        assert_eq!(e.code, 400);
    }
}
