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
use crate::registry::{
    DeleteOptions, ListBody, ListOptions, ListParams, ListResult, Target, WatchOptions,
    WriteOptions, Written,
};
use crate::resources::kind::Sub;
use crate::resources::{Computed, ResourceType};
use crate::status::ApiError;

fn header_str(parts: &Parts, name: header::HeaderName) -> Option<&str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// One resource request, parsed: what every verb's handler needs.
struct Request<'a> {
    state: &'a AppState,
    rt: Arc<ResourceType>,
    rp: ResourcePath,
    target: Target,
    query: Query,
    repr: Representation,
    content_type: Option<&'a str>,
    body: bytes::Bytes,
    user: &'a Arc<crate::authn::UserInfo>,
    user_agent: &'a str,
}

impl Request<'_> {
    fn write_options(&self) -> WriteOptions {
        WriteOptions {
            user: Some(self.user.clone()),
            ..self.query.write_options(self.user_agent)
        }
    }

    fn namespace(&self) -> Option<&str> {
        self.rp.namespace.as_deref()
    }

    fn subresource(&self) -> Option<&str> {
        self.rp.subresource.as_deref()
    }
}

/// Handles one resource request: finds the resource, routes subresources,
/// then the verb.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    rp: ResourcePath,
    body: bytes::Bytes,
    user: &Arc<crate::authn::UserInfo>,
    user_agent: &str,
) -> Result<Response, ApiError> {
    let catalog = &state.api.catalog;
    let Some(rt) = catalog.get(&rp.group, &rp.version, &rp.plural) else {
        return Err(match catalog.serves_group_version(&rp.group, &rp.version) {
            true => ApiError::route_not_found(),
            false => ApiError::path_not_found(),
        });
    };
    if rp.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::route_not_found());
    }
    let query = Query::parse(parts.uri.query())?;
    let watch = query.watch || rp.legacy_watch;
    if let Some(verbs) = rt.only_verbs
        && rp.subresource.is_none()
        && !verbs.contains(&verb_of(&parts.method, rp.name.is_some(), watch))
    {
        return Err(ApiError::method_not_allowed());
    }
    match rt.computed {
        Some(Computed::ComponentStatus) => {
            return super::component_status::handle(parts, &rp, &rt, &query, watch);
        }
        Some(Computed::Binding) => {
            return super::binding::handle(state, parts, &rp, &body).await;
        }
        Some(computed) => return review(state, parts, &rt, &rp, &body, user, computed),
        None => {}
    }
    let target = Target {
        rt: rt.clone(),
        namespace: rp.namespace.clone(),
        name: rp.name.clone(),
    };
    if let Some(name) = rp.subresource.as_deref() {
        let named = rp.name.is_some();
        match Sub::named(name).filter(|sub| rt.serves(*sub)) {
            Some(Sub::Status | Sub::Approval) => {}
            Some(Sub::EphemeralContainers) if named => {}
            Some(Sub::Binding) if named => {
                return super::binding::handle(state, parts, &rp, &body).await;
            }
            Some(Sub::Eviction) if named => {
                return super::eviction::handle(state, parts, &rt, &rp, &query, &body, user).await;
            }
            Some(Sub::Scale) => {
                return super::scale::handle(state, parts, &target, &query, &body, user_agent)
                    .await;
            }
            Some(Sub::Log) if parts.method == Method::GET => {
                return super::logs::handle(state, &target, &query).await;
            }
            Some(Sub::Token) if named => {
                return token_request(state, parts, &rp, &body).await;
            }
            Some(Sub::Exec | Sub::Attach | Sub::PortForward) if named => {
                return super::stream::handle(state, parts, &target, name).await;
            }
            None if name == "finalize" && rt.strategy.has_spec_finalizers() => {}
            // kubectl debug, for one, reads the details of this 404 (`"details":{}`).
            _ => return Err(ApiError::route_not_found()),
        }
    }
    let named = rp.name.is_some();
    let req = Request {
        state,
        rt,
        rp,
        target,
        query,
        repr: representation(header_str(parts, header::ACCEPT)),
        content_type: header_str(parts, header::CONTENT_TYPE),
        body,
        user,
        user_agent,
    };
    if req.repr == Representation::Unacceptable {
        // Negotiated before anything is read or written, as kube's handlers do.
        return Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: {}",
            super::negotiate::ACCEPTED_MEDIA_TYPES
        )));
    }
    match (&parts.method, named) {
        (&Method::GET, _) if watch => watch_objects(&req),
        (&Method::GET, false) => list(&req).await,
        (&Method::GET, true) => get(&req).await,
        (&Method::POST, false) => create(&req).await,
        (&Method::PUT, true) => replace(&req).await,
        (&Method::PATCH, true) => patch(&req).await,
        (&Method::DELETE, true) => delete(&req).await,
        (&Method::DELETE, false) => delete_collection(&req).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The verb a request is, in discovery's and RBAC's names.
fn verb_of(method: &Method, named: bool, watch: bool) -> &'static str {
    match (method, named) {
        (&Method::GET, _) if watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::GET, true) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, false) => "deletecollection",
        (&Method::DELETE, true) => "delete",
        _ => "",
    }
}

/// The decoded JSON body of a create of a computed resource.
fn decode_create(parts: &Parts, body: &[u8]) -> Result<serde_json::Value, ApiError> {
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    body::decode_object(header_str(parts, header::CONTENT_TYPE), body)
}

/// A create of a review resource, answered at once with its status.
fn review(
    state: &AppState,
    parts: &Parts,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    body: &[u8],
    user: &crate::authn::UserInfo,
    computed: crate::resources::Computed,
) -> Result<Response, ApiError> {
    if rp.name.is_some() || rp.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let mut obj = decode_create(parts, body)?;
    if let Some(ns) = rp.namespace.as_deref() {
        match obj["metadata"]["namespace"].as_str() {
            None | Some("") => obj["metadata"]["namespace"] = json!(ns),
            Some(other) if other != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            Some(_) => {}
        }
    }
    let review = crate::reviews::Review {
        rt,
        user,
        namespace: rp.namespace.as_deref(),
        authorizer: &state.authz,
        authentication: &state.authn,
        api: &state.api,
    };
    let answer = crate::reviews::create(&review, computed, obj)?;
    Ok(response::json(StatusCode::CREATED, &answer))
}

/// `POST serviceaccounts/<name>/token`: a TokenRequest.
async fn token_request(
    state: &AppState,
    parts: &Parts,
    rp: &ResourcePath,
    body: &[u8],
) -> Result<Response, ApiError> {
    let obj = decode_create(parts, body)?;
    let Some(tokens) = state.authn.service_accounts() else {
        return Err(ApiError::path_not_found());
    };
    let (Some(namespace), Some(name)) = (rp.namespace.as_deref(), rp.name.as_deref()) else {
        return Err(ApiError::path_not_found());
    };
    let answer = crate::reviews::request_token(&state.api, tokens, namespace, name, obj).await?;
    Ok(response::json(StatusCode::CREATED, &answer))
}

/// A watch of the collection, or of one object (a field selector on its name).
fn watch_objects(req: &Request<'_>) -> Result<Response, ApiError> {
    let opts = match &req.rp.name {
        Some(name) => {
            let mut q = req.query.clone();
            q.field_selector = Some(match q.field_selector {
                Some(f) => format!("{f},metadata.name={name}"),
                None => format!("metadata.name={name}"),
            });
            watch_options(&req.rt, &q)?
        }
        None => watch_options(&req.rt, &req.query)?,
    };
    Ok(super::watch::respond(
        req.state
            .api
            .watch(req.rt.clone(), req.rp.namespace.clone(), opts),
        req.rt.clone(),
        req.repr,
        &req.query,
    ))
}

async fn list(req: &Request<'_>) -> Result<Response, ApiError> {
    let (rt, query) = (&req.rt, &req.query);
    let opts = list_options(rt, query)?;
    if query.send_initial_events.is_some() {
        return Err(invalid_list_options(
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ));
    }
    if matches!(req.repr, Representation::Json) {
        // Plain JSON: items come encoded, most from the store's cache of them.
        let page = req
            .state
            .api
            .list_encoded(rt, req.namespace(), &opts)
            .await?;
        let mut body = crate::gojson::encoded_list(
            &format!("{}List", rt.kind),
            &rt.api_version(),
            &page.list_meta(),
            &page.items,
        );
        body.push(b'\n');
        return Ok(response::bytes_response(
            StatusCode::OK,
            "application/json",
            body,
        ));
    }
    let result = req.state.api.list(rt, req.namespace(), &opts).await?;
    list_response(req, result)
}

async fn get(req: &Request<'_>) -> Result<Response, ApiError> {
    let obj = req.state.api.get(&req.target).await?;
    object_response(req, StatusCode::OK, &obj, None)
}

/// An object answer (of get, create, update, patch or delete) in the representation the
/// Accept header asked for: the object, its Table row, or its PartialObjectMetadata. A
/// Status (a delete's Success) is sent as it is, as kube does. `change` is the write that
/// stored `obj`, when `obj` is that change's object: the object's JSON is then taken from
/// the change's watch line, encoded once for the response and the watchers.
fn object_response(
    req: &Request<'_>,
    code: StatusCode,
    obj: &Arc<serde_json::Value>,
    change: Option<&Arc<crate::storage::WatchEvent>>,
) -> Result<Response, ApiError> {
    if obj.get("kind").and_then(serde_json::Value::as_str) == Some("Status") {
        return Ok(response::json(code, &**obj));
    }
    match req.repr {
        Representation::Table => {
            let rv = crate::object::meta_str(obj, "resourceVersion")
                .unwrap_or("")
                .to_string();
            let t = super::table::render(
                &req.rt,
                std::slice::from_ref(obj),
                &req.query,
                json!({"resourceVersion": rv}),
                true,
            )?;
            Ok(response::json(code, &t))
        }
        Representation::PartialMetadata(version) => {
            let partial = super::negotiate::partial_metadata(obj, version);
            Ok(response::json(code, &partial))
        }
        Representation::PartialMetadataList(_) => Err(ApiError::not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list",
        )),
        _ => match change.and_then(|c| super::watch::shared_object(c, obj)) {
            Some(bytes) => Ok(response::bytes_response(code, "application/json", bytes)),
            None => Ok(response::json(code, &**obj)),
        },
    }
}

async fn create(req: &Request<'_>) -> Result<Response, ApiError> {
    if req.rt.namespaced && req.rp.namespace.is_none() {
        return Err(ApiError::path_not_found());
    }
    let obj = body::decode_object(req.content_type, &req.body)?;
    let w = req
        .state
        .api
        .create(&req.rt, req.namespace(), obj, &req.write_options())
        .await?;
    Ok(response::with_warnings(
        object_response(req, StatusCode::CREATED, &w.object, w.change.as_ref())?,
        &w.warnings,
    ))
}

/// The answer to a PUT or PATCH: 201 when it created the object.
fn written(req: &Request<'_>, w: &Written) -> Result<Response, ApiError> {
    let code = if w.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(response::with_warnings(
        object_response(req, code, &w.object, w.change.as_ref())?,
        &w.warnings,
    ))
}

async fn replace(req: &Request<'_>) -> Result<Response, ApiError> {
    let obj = body::decode_object(req.content_type, &req.body)?;
    let w = req
        .state
        .api
        .update_or_create(&req.target, req.subresource(), obj, &req.write_options())
        .await?;
    written(req, &w)
}

async fn patch(req: &Request<'_>) -> Result<Response, ApiError> {
    let kind = body::PatchKind::from_content_type(req.content_type)?;
    if kind != body::PatchKind::Apply && req.query.force {
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
    let mut opts = req.write_options();
    if kind == body::PatchKind::Apply {
        opts.field_manager = req.query.field_manager.clone().unwrap_or_default();
    }
    let doc = body::decode_patch(
        kind,
        &req.body,
        req.rt.strategy.accepts_strategic_merge_patch(),
    )?;
    let w = req
        .state
        .api
        .patch(&req.target, req.subresource(), &doc, &opts)
        .await?;
    written(req, &w)
}

async fn delete(req: &Request<'_>) -> Result<Response, ApiError> {
    let mut opts = delete_options(&req.query, req.content_type, &req.body)?;
    opts.user = Some(req.user.clone());
    let outcome = req.state.api.delete(&req.target, &opts).await?;
    let code = match &outcome {
        crate::registry::DeleteOutcome::Pending(_) if opts.orphan_dependents == Some(false) => {
            StatusCode::ACCEPTED
        }
        _ => StatusCode::OK,
    };
    object_response(req, code, &Arc::new(outcome.response(&req.rt)), None)
}

async fn delete_collection(req: &Request<'_>) -> Result<Response, ApiError> {
    let mut opts = delete_options(&req.query, req.content_type, &req.body)?;
    opts.user = Some(req.user.clone());
    let list = list_options(&req.rt, &req.query)?;
    let result = req
        .state
        .api
        .delete_collection(&req.rt, req.namespace(), &list, &opts)
        .await?;
    list_response(req, result)
}

/// A list answer (of list or deletecollection) in the representation asked for: the list,
/// a Table, or a PartialObjectMetadataList.
fn list_response(req: &Request<'_>, result: ListResult) -> Result<Response, ApiError> {
    match req.repr {
        Representation::Table => {
            let t =
                super::table::render(&req.rt, &result.items, &req.query, result.list_meta(), true)?;
            Ok(response::json(StatusCode::OK, &t))
        }
        Representation::PartialMetadataList(version) => {
            let items: Vec<serde_json::Value> = result
                .items
                .iter()
                .map(|o| super::negotiate::partial_metadata(o, version))
                .collect();
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": result.list_meta(),
                "items": items,
            });
            Ok(response::json(StatusCode::OK, &list))
        }
        Representation::PartialMetadata(_) => Err(ApiError::not_acceptable(
            "you requested PartialObjectMetadata, but the requested object is a list",
        )),
        _ => Ok(response::json(
            StatusCode::OK,
            &ListBody::new(&req.rt, result),
        )),
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
