//! The HTTP front end: the chain's first stages in kube's order
//! (authentication, impersonation, authorization), body limits, and routing
//! of API paths to the registry, reviews, discovery, OpenAPI and health
//! endpoints.

pub mod body;
pub mod discovery;
mod logs;
pub mod negotiate;
pub mod path;
pub mod query;
mod resource;
pub mod response;
mod scale;
mod table;
mod watch;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{StatusCode, header};
use http_body_util::BodyExt;

use crate::registry::Api;
use crate::status::ApiError;
use path::ApiPath;

pub use crate::version::KUBE_VERSION;

/// Shared state of the HTTP server.
#[derive(Clone)]
pub struct AppState {
    /// The registry.
    pub api: Api,
    /// Who requests come from.
    pub authn: Arc<crate::authn::Authentication>,
    /// What they may do.
    pub authz: Arc<crate::authz::Union>,
    /// Requests served, per client, for `/metrics`.
    pub metrics: Arc<crate::metrics::RequestMetrics>,
}

/// Builds the router serving the whole API.
pub fn router(state: AppState) -> Router {
    Router::new().fallback(handle).with_state(state)
}

/// The authorization attributes of a request.
fn attributes(req: &Request, path: &str, parsed: &ApiPath) -> crate::authz::Attributes {
    use crate::authz::{Attributes, ResourceAttributes, resource_verb};
    match parsed {
        ApiPath::Resource(rp) => {
            let watch = rp.legacy_watch || query::asks_for_watch(req.uri().query());
            Attributes {
                verb: resource_verb(req.method(), rp.name.is_some(), watch).to_string(),
                resource: Some(ResourceAttributes {
                    group: rp.group.clone(),
                    version: rp.version.clone(),
                    resource: rp.plural.clone(),
                    subresource: rp.subresource.clone(),
                    namespace: rp.namespace.clone(),
                    name: rp.name.clone(),
                }),
                path: path.to_string(),
            }
        }
        _ => Attributes {
            verb: req.method().as_str().to_ascii_lowercase(),
            resource: None,
            path: path.to_string(),
        },
    }
}

async fn handle(State(state): State<AppState>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let parsed = path::parse(&path);
    // authn, impersonation, authz: the first stages of kube's chain.
    let requestor = match state.authn.authenticate(req.headers()) {
        Ok(user) => user,
        Err(why) => {
            tracing::debug!(%path, reason = %why, "unauthenticated request");
            return response::error(&ApiError::unauthorized());
        }
    };
    let uri = req.uri().to_string();
    let user = match crate::impersonation::impersonate(requestor, req.headers(), &uri, &state.authz)
    {
        Ok(user) => user,
        Err(e) => return response::error(&e),
    };
    if let Err(e) = state.authz.check(&user, &attributes(&req, &path, &parsed)) {
        return response::error(&e);
    }
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    state.metrics.record(&user_agent);
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(e) => return response::error(&e),
    };
    let result = match parsed {
        ApiPath::Health => Ok(response::bytes_response(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            b"ok".to_vec(),
        )),
        ApiPath::Version => Ok(response::json(StatusCode::OK, &version_info())),
        ApiPath::Metrics => Ok(response::bytes_response(
            StatusCode::OK,
            "text/plain; version=0.0.4",
            state.metrics.render().into_bytes(),
        )),
        ApiPath::CoreVersions => Ok(discovery::core_versions(&state.api.catalog, &parts)),
        ApiPath::Groups => Ok(discovery::groups(&state.api.catalog, &parts)),
        ApiPath::Group(g) => discovery::group(&state.api.catalog, &g),
        ApiPath::GroupVersion(g, v) => discovery::group_version(&state.api.catalog, &g, &v),
        ApiPath::OpenApiV3Root => Ok(response::json(
            StatusCode::OK,
            &crate::openapi::root(&state.api.catalog),
        )),
        ApiPath::OpenApiV3(g, v) => crate::openapi::group_version(&state.api.catalog, &g, &v)
            .map(|doc| response::json(StatusCode::OK, &doc)),
        ApiPath::OpenApiV2 => {
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let (content_type, bytes) = crate::openapi::v2(accept);
            Ok(response::bytes_response(
                StatusCode::OK,
                content_type,
                bytes,
            ))
        }
        ApiPath::Resource(rp) => {
            resource::handle(&state, &parts, rp, body, &user, &user_agent).await
        }
        ApiPath::Unknown => Err(ApiError::path_not_found()),
    };
    result.unwrap_or_else(|e| response::error(&e))
}

async fn read_body(body: Body) -> Result<bytes::Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, body::MAX_BODY_BYTES);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(body::MAX_BODY_BYTES))
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "error reading request body: {e}"
        ))),
    }
}

/// The `/version` body.
pub fn version_info() -> serde_json::Value {
    let (major, minor, git) = KUBE_VERSION;
    serde_json::json!({
        "major": major,
        "minor": minor,
        "gitVersion": git,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}
