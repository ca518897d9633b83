//! Routing of resource requests (`/api/v1/...`, `/apis/G/V/...`) to the
//! registry verbs, and rendering their results (JSON or Table).

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use http::request::Parts;
use http::{Method, StatusCode, header};
use serde_json::json;

use super::negotiate::{Representation, representation};
use super::path::ResourcePath;
use super::query::{Query, RvMatch, invalid_list_options};
use super::{AppState, body, response};
use crate::registry::ListParams;
use crate::registry::{DeleteOptions, ListBody, ListOptions, Target, WatchOptions};
use crate::status::ApiError;

fn header_str(parts: &Parts, name: header::HeaderName) -> Option<&str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Handles one resource request.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    rp: ResourcePath,
    body: bytes::Bytes,
    user_agent: &str,
) -> Result<Response, ApiError> {
    let Some(rt) = state.api.catalog.get(&rp.group, &rp.version, &rp.plural) else {
        return Err(ApiError::path_not_found());
    };
    if rp.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::path_not_found());
    }
    let query = Query::parse(parts.uri.query())?;
    let target = Target {
        rt: rt.clone(),
        namespace: rp.namespace.clone(),
        name: rp.name.clone(),
    };
    let repr = representation(header_str(parts, header::ACCEPT));
    let content_type = header_str(parts, header::CONTENT_TYPE);
    let sub = rp.subresource.as_deref();
    match sub {
        None => {}
        Some("status") if rt.status_subresource => {}
        Some("finalize") if rt.strategy.has_spec_finalizers() => {}
        Some("scale") if rt.scale_subresource => {
            return super::scale::handle(state, parts, &target, &query, &body, user_agent).await;
        }
        Some("log") if rt.log_subresource && parts.method == Method::GET => {
            return super::logs::handle(state, &target, &query).await;
        }
        Some(_) => return Err(ApiError::path_not_found()),
    }
    let write_opts = || query.write_options(user_agent);
    let api = &state.api;
    match (&parts.method, rp.name.is_some()) {
        (&Method::GET, false) if query.watch || rp.legacy_watch => {
            let opts = watch_options(&rt, &query)?;
            Ok(super::watch::respond(
                api.watch(rt.clone(), rp.namespace.clone(), opts),
                rt,
                repr,
                &query,
            ))
        }
        (&Method::GET, true) if query.watch || rp.legacy_watch => {
            // A watch on one object: a field selector on its name.
            let mut q = query.clone();
            let name = rp.name.clone().unwrap_or_default();
            q.field_selector = Some(match q.field_selector {
                Some(f) => format!("{f},metadata.name={name}"),
                None => format!("metadata.name={name}"),
            });
            let opts = watch_options(&rt, &q)?;
            Ok(super::watch::respond(
                api.watch(rt.clone(), rp.namespace.clone(), opts),
                rt,
                repr,
                &query,
            ))
        }
        (&Method::GET, false) => {
            let opts = list_options(&rt, &query)?;
            if query.send_initial_events.is_some() {
                return Err(invalid_list_options(
                    "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
                ));
            }
            let result = api.list(&rt, rp.namespace.as_deref(), &opts).await?;
            if repr == Representation::Table {
                let t = super::table::render(&rt, &result.items, &query, result.list_meta(), true)?;
                return Ok(response::json(StatusCode::OK, &t));
            }
            Ok(response::json(StatusCode::OK, &ListBody::new(&rt, result)))
        }
        (&Method::GET, true) => {
            let obj = api.get(&target).await?;
            if repr == Representation::Table {
                let rv = crate::object::meta_str(&obj, "resourceVersion")
                    .unwrap_or("")
                    .to_string();
                let t = super::table::render(
                    &rt,
                    &[obj],
                    &query,
                    json!({"resourceVersion": rv}),
                    true,
                )?;
                return Ok(response::json(StatusCode::OK, &t));
            }
            Ok(response::json(StatusCode::OK, &*obj))
        }
        (&Method::POST, false) => {
            if rt.namespaced && rp.namespace.is_none() {
                return Err(ApiError::path_not_found());
            }
            let obj = body::decode_object(content_type, &body)?;
            let w = api
                .create(&rt, rp.namespace.as_deref(), obj, &write_opts())
                .await?;
            Ok(response::with_warnings(
                response::json(StatusCode::CREATED, &*w.object),
                &w.warnings,
            ))
        }
        (&Method::PUT, true) => {
            let obj = body::decode_object(content_type, &body)?;
            let w = api
                .update_or_create(&target, sub, obj, &write_opts())
                .await?;
            let code = if w.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(response::with_warnings(
                response::json(code, &*w.object),
                &w.warnings,
            ))
        }
        (&Method::PATCH, true) => {
            let kind = body::PatchKind::from_content_type(content_type)?;
            if kind != body::PatchKind::Apply && query.force {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch".into(),
                    vec![crate::status::StatusCause {
                        reason: "FieldValueForbidden".into(),
                        message: "Forbidden: may not be specified for non-apply patch".into(),
                        field: "force".into(),
                    }],
                ));
            }
            let mut opts = write_opts();
            if kind == body::PatchKind::Apply {
                opts.field_manager = query.field_manager.clone().unwrap_or_default();
            }
            let doc = body::decode_patch(kind, &body, rt.strategy.accepts_strategic_merge_patch())?;
            let w = api.patch(&target, sub, &doc, &opts).await?;
            let code = if w.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(response::with_warnings(
                response::json(code, &*w.object),
                &w.warnings,
            ))
        }
        (&Method::DELETE, true) => {
            let opts = delete_options(&query, content_type, &body)?;
            let outcome = api.delete(&target, &opts).await?;
            let code = match &outcome {
                crate::registry::DeleteOutcome::Pending(_)
                    if opts.orphan_dependents == Some(false) =>
                {
                    StatusCode::ACCEPTED
                }
                _ => StatusCode::OK,
            };
            Ok(response::json(code, &outcome.response(&rt)))
        }
        (&Method::DELETE, false) => {
            let opts = delete_options(&query, content_type, &body)?;
            let list = list_options(&rt, &query)?;
            let result = api
                .delete_collection(&rt, rp.namespace.as_deref(), &list, &opts)
                .await?;
            Ok(response::json(StatusCode::OK, &ListBody::new(&rt, result)))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// List options from the query, checked as kube-apiserver checks them.
fn list_options(
    rt: &crate::resources::ResourceType,
    query: &Query,
) -> Result<ListOptions, ApiError> {
    let params = ListParams {
        label_selector: query.label_selector.as_deref(),
        field_selector: query.field_selector.as_deref(),
        resource_version: query.resource_version.as_deref(),
        resource_version_number: query.resource_version_number()?,
        resource_version_match: query.resource_version_match,
        limit: query.limit,
        continue_token: query.continue_token.as_deref(),
    };
    ListOptions::from_params(rt, &params)
}

fn delete_options(
    query: &Query,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions {
        propagation: query
            .propagation_policy
            .as_deref()
            .map(DeleteOptions::parse_propagation)
            .transpose()?,
        grace_period_seconds: query.grace_period_seconds,
        dry_run: query.dry_run,
        orphan_dependents: query.orphan_dependents,
        ..DeleteOptions::default()
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = body::decode_object(content_type, body)?;
        opts = opts.merge_body(&v)?;
    }
    opts.check()
}

fn watch_options(
    rt: &Arc<crate::resources::ResourceType>,
    query: &Query,
) -> Result<WatchOptions, ApiError> {
    let mut list_query = query.clone();
    // resourceVersionMatch is checked with watch rules below, not list rules.
    list_query.resource_version_match = None;
    let list = list_options(rt, &list_query)?;
    let rv = query.resource_version_number()?;
    let unset = query.resource_version.as_deref().unwrap_or("").is_empty();
    let send_initial = query.send_initial_events.unwrap_or(false);
    match (query.send_initial_events, query.resource_version_match) {
        (Some(_), Some(RvMatch::NotOlderThan)) => {}
        (Some(_), _) => {
            return Err(invalid_list_options(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid_list_options(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        (None, None) => {}
    }
    let starts_with_state = unset || rv == Some(0) || send_initial;
    let timeout = match query.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s),
        _ => Duration::from_secs(1800 + rand::random_range(0..1800)),
    };
    Ok(WatchOptions {
        list,
        resource_version: if starts_with_state { None } else { rv },
        send_initial_events: send_initial
            || (unset || rv == Some(0)) && query.send_initial_events.is_none(),
        allow_bookmarks: query.allow_watch_bookmarks,
        timeout,
        bookmark_interval: Duration::from_secs(60),
    })
}
