//! The HTTP front end: the chain's first stages in kube's order
//! (authentication, impersonation, authorization), body limits, and routing
//! of API paths to the registry, reviews, discovery, OpenAPI and health
//! endpoints.

mod binding;
pub mod body;
mod component_status;
pub mod discovery;
mod eviction;
mod logs;
pub mod negotiate;
mod node_proxy;
pub mod path;
pub mod query;
mod resource;
pub mod response;
mod scale;
mod stream;
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
    /// The audit log, if one is kept.
    pub audit: Option<Arc<crate::audit::Auditor>>,
    /// The kubelets of the nodes, if any are reachable (logs, exec, attach, port-forward,
    /// the node proxy).
    pub node_runtime: Option<Arc<dyn crate::node_runtime::NodeRuntime>>,
}

/// The client's address, put on each request by the server's accept loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// The certificate chain the client presented in the TLS handshake (leaf
/// first), unverified, put on each request of the connection by the
/// server's accept loop; authentication verifies it.
#[derive(Debug, Clone)]
pub struct ClientCertificates(pub Arc<[rustls::pki_types::CertificateDer<'static>]>);

/// Builds the router serving the whole API.
pub fn router(state: AppState) -> Router {
    Router::new().fallback(handle).with_state(state)
}

/// The authorization attributes of a request.
fn attributes(req: &Request, path: &str, parsed: &ApiPath) -> crate::authz::Attributes {
    use crate::authz::{Attributes, ResourceAttributes, resource_verb};
    let of_resource = |rp: &path::ResourcePath, verb: &str| Attributes {
        verb: verb.to_string(),
        resource: Some(ResourceAttributes {
            group: rp.group.clone(),
            version: rp.version.clone(),
            resource: rp.plural.clone(),
            subresource: rp.subresource.clone(),
            namespace: rp.namespace.clone(),
            name: rp.name.clone(),
        }),
        path: path.to_string(),
    };
    match parsed {
        ApiPath::Resource(rp) => {
            let watch = rp.legacy_watch || query::asks_for_watch(req.uri().query());
            of_resource(rp, resource_verb(req.method(), rp.name.is_some(), watch))
        }
        // A connect request names its object: never a list or a watch.
        ApiPath::NodeProxy(p) => of_resource(&p.node, resource_verb(req.method(), true, false)),
        _ => Attributes {
            verb: req.method().as_str().to_ascii_lowercase(),
            resource: None,
            path: path.to_string(),
        },
    }
}

async fn handle(State(state): State<AppState>, req: Request) -> Response {
    // Go's net/http hands kube-apiserver the path percent-decoded.
    let path = percent_encoding::percent_decode_str(req.uri().path())
        .decode_utf8_lossy()
        .into_owned();
    let parsed = path::parse(&path);
    let attributes = attributes(&req, &path, &parsed);
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let uri = req.uri().to_string();
    // authn, then audit, impersonation and authz: kube's chain.
    let client_chain = req
        .extensions()
        .get::<ClientCertificates>()
        .map(|c| c.0.clone());
    let requestor = state
        .authn
        .authenticate_request(req.headers(), client_chain.as_deref().unwrap_or_default());
    let mut record = state.audit.as_ref().and_then(|a| {
        a.begin(crate::audit::RequestInfo {
            user: requestor.as_ref().ok(),
            attributes: &attributes,
            uri: &uri,
            peer: req.extensions().get::<Peer>().map(|p| p.0),
            user_agent: &user_agent,
        })
    });
    let (response, annotations) = crate::admission::annotations::collecting(async {
        match requestor {
            Ok(user) => {
                let incoming = Incoming {
                    req,
                    parsed,
                    attributes: &attributes,
                    uri: &uri,
                    user_agent: &user_agent,
                };
                authorize_and_serve(&state, incoming, user, &mut record).await
            }
            Err(why) => {
                tracing::debug!(%path, reason = %why, "unauthenticated request");
                response::error(&ApiError::unauthorized())
            }
        }
    })
    .await;
    if let Some(record) = record.as_mut() {
        record.admission_annotations(annotations);
    }
    match record {
        Some(record) => audited(record, response, attributes.verb == "watch").await,
        None => response,
    }
}

/// Completes a request's audit record with its response.
async fn audited(record: crate::audit::Record, response: Response, watch: bool) -> Response {
    let code = response.status().as_u16();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") && !t.contains("stream"));
    if watch || !json || (code < 400 && !record.wants_response_body()) {
        record.complete(code, None, watch);
        return response;
    }
    let (parts, body) = response.into_parts();
    match body.collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            record.complete(code, Some(&bytes), false);
            Response::from_parts(parts, Body::from(bytes))
        }
        Err(e) => {
            record.complete(code, None, false);
            response::error(&ApiError::internal(e))
        }
    }
}

/// An authenticated request, with what the chain has made of it.
struct Incoming<'a> {
    req: Request,
    parsed: ApiPath,
    attributes: &'a crate::authz::Attributes,
    uri: &'a str,
    user_agent: &'a str,
}

/// Impersonation, authorization, then the request itself.
async fn authorize_and_serve(
    state: &AppState,
    incoming: Incoming<'_>,
    requestor: crate::authn::UserInfo,
    record: &mut Option<crate::audit::Record>,
) -> Response {
    use crate::authz::Decision;
    let Incoming {
        req,
        parsed,
        attributes,
        uri,
        user_agent,
    } = incoming;
    let impersonating = crate::impersonation::requested(req.headers());
    let user = match crate::impersonation::impersonate(requestor, req.headers(), uri, &state.authz)
    {
        // Shared from here on: every write's admission request carries it.
        Ok(user) => Arc::new(user),
        Err(e) => return response::error(&e),
    };
    if let Some(r) = record.as_mut().filter(|_| impersonating) {
        r.impersonating(&user);
    }
    let decision = state.authz.decide(&user, attributes);
    let (allowed, reason) = match &decision {
        Decision::Allow(why) => (true, why.as_str()),
        Decision::Deny(why) | Decision::NoOpinion(why) => (false, why.as_str()),
    };
    if let Some(r) = record.as_mut() {
        r.authorized(allowed, reason);
    }
    if !allowed {
        return response::error(&crate::authz::forbidden(&user, attributes, reason));
    }
    state.metrics.record(user_agent);
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(e) => return response::error(&e),
    };
    if let Some(r) = record.as_mut() {
        r.request_body(&body);
    }
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
        ApiPath::Resource(rp) => resource::handle(state, &parts, rp, body, &user, user_agent).await,
        ApiPath::NodeProxy(p) => node_proxy::handle(state, &parts, &p, &body).await,
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
