//! The `proxy` subresource of nodes (`/api/v1/nodes/NAME/proxy/PATH`), as
//! kube-apiserver's node proxy REST and its upgrade-aware proxy handler
//! serve it: authorization has already checked `nodes/proxy` (the verb from
//! the method); the name may carry a scheme and port (`https:NAME:10250`);
//! a missing node is the usual 404; the path after `proxy` (or the `path`
//! parameter) is cleaned as Go's `path.Join` does, keeping a trailing slash;
//! a GET of the bare `proxy` is redirected to `proxy/`; the request then
//! goes to the node's kubelet — through the server's
//! [`NodeRuntime`](crate::node_runtime::NodeRuntime), at the node's kubelet port — whose
//! answer is relayed with the `Location` of redirects rewritten under the proxy path. A
//! node that the runtime does not run, or another port, cannot be reached: kube's 503
//! `error trying to reach service: …`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::Value;

use super::AppState;
use super::path::NodeProxyPath;
use crate::node_runtime::{NodeView, ProxyRequest};
use crate::registry::{ListOptions, ListParams, Target};
use crate::resources::kind::Known;
use crate::status::ApiError;

/// The methods the node proxy connects (`ProxyREST.ConnectMethods`).
const METHODS: [Method; 7] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
];

/// `utilnet.SplitSchemeNamePort`: `NAME`, `NAME:PORT` or `SCHEME:NAME:PORT`
/// (scheme `http`, `https` or empty), into name and port.
fn split_scheme_name_port(id: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((name, port))
}

/// Go's `path.Clean` of a non-empty path.
fn go_clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|s| *s != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The path the kubelet receives: `JoinPreservingTrailingSlash("", p)`,
/// with a slash added when the request's path ends in one, joined to the
/// root as the reverse proxy joins it.
fn kubelet_path(p: &str, request_path: &str) -> String {
    let mut out = if p.is_empty() {
        String::new()
    } else {
        go_clean(p)
    };
    if !p.is_empty() && p.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    if !out.ends_with('/') && request_path.ends_with('/') {
        out.push('/');
    }
    if out.starts_with('/') {
        out
    } else {
        format!("/{out}")
    }
}

/// The address kube-apiserver dials: the first InternalIP, ExternalIP or
/// Hostname (`--kubelet-preferred-address-types` as clusters set it).
fn node_address(node: &Value) -> Option<&str> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)?;
    ["InternalIP", "ExternalIP", "Hostname"]
        .iter()
        .find_map(|ty| {
            addresses
                .iter()
                .find(|a| a.get("type").and_then(Value::as_str) == Some(*ty))
                .map(|a| a.get("address").and_then(Value::as_str).unwrap_or(""))
                .filter(|a| !a.is_empty())
        })
}

fn unreachable(host: &str, port: &str) -> ApiError {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    ApiError::new(
        503,
        "ServiceUnavailable",
        format!(
            "error trying to reach service: dial tcp {host}:{port}: connect: connection refused"
        ),
    )
}

/// The Node named `name`, whose kubelet a request reaches.
pub(super) async fn node_named(state: &AppState, name: &str) -> Result<Arc<Value>, ApiError> {
    let Some(rt) = state.api.catalog.known(Known::Nodes) else {
        return Err(ApiError::path_not_found());
    };
    state
        .api
        .get(&Target {
            rt,
            namespace: None,
            name: Some(name.to_string()),
        })
        .await
}

/// Serves a request to `nodes/NAME/proxy[/PATH]`.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    proxy: &NodeProxyPath,
    body: &[u8],
) -> Result<Response, ApiError> {
    if !METHODS.contains(&parts.method) {
        return Err(ApiError::method_not_allowed());
    }
    let id = proxy.node.name.as_deref().unwrap_or("");
    let Some((name, port)) = split_scheme_name_port(id) else {
        return Err(ApiError::bad_request(format!(
            "invalid node request {id:?}"
        )));
    };
    let node = node_named(state, name).await?;
    // The node's kubelet connection (`ResourceLocation`).
    let Some(address) = node_address(&node) else {
        return Err(ApiError::new(
            500,
            "",
            "no preferred addresses found; known addresses: []",
        ));
    };
    let kubelet_port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(i64::from(crate::node_runtime::DEFAULT_KUBELET_PORT))
        .to_string();
    let port = if port.is_empty() {
        kubelet_port.as_str()
    } else {
        port
    };
    // Then the proxy handler.
    let request_path = parts.uri.path();
    let subpath = match &proxy.subpath {
        Some(p) => p.clone(),
        // Without a subpath, NodeProxyOptions.Path is the `path` parameter.
        None => form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .find(|(k, _)| k == "path")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default(),
    };
    if subpath.is_empty() && (parts.method == Method::GET || parts.method == Method::HEAD) {
        return Ok(root_redirect(request_path, parts.uri.query()));
    }
    let runtime = match &state.node_runtime {
        Some(r) if port == kubelet_port && r.serves(&node) => r.clone(),
        _ => return Err(unreachable(address, port)),
    };
    let path = kubelet_path(&subpath, request_path);
    let pods = pods_on(state, name).await?;
    let header = |h: header::HeaderName| parts.headers.get(h).and_then(|v| v.to_str().ok());
    let request = ProxyRequest {
        method: &parts.method,
        path: &path,
        query: parts.uri.query(),
        accept: header(header::ACCEPT),
        content_type: header(header::CONTENT_TYPE),
        body,
    };
    let view = NodeView {
        node: &node,
        pods: &pods,
        now: jiff::Timestamp::now(),
    };
    let mut answer = runtime.proxy(&request, &view);
    rewrite_location(&mut answer, request_path, &path);
    if parts.method == Method::HEAD {
        answer.body_mut().clear();
    }
    Ok(answer.map(Body::from))
}

/// The pods bound to the node.
async fn pods_on(state: &AppState, node: &str) -> Result<Vec<Arc<Value>>, ApiError> {
    let Some(rt) = state.api.catalog.known(Known::Pods) else {
        return Ok(Vec::new());
    };
    let selector = format!("spec.nodeName={node}");
    let opts = ListOptions::from_params(
        &rt,
        &ListParams {
            field_selector: Some(&selector),
            ..ListParams::default()
        },
    )?;
    Ok(state.api.list(&rt, None, &opts).await?.items)
}

/// The upgrade-aware handler's redirect of a GET of the bare proxy path.
fn root_redirect(request_path: &str, query: Option<&str>) -> Response {
    let query = query
        .filter(|q| !q.is_empty())
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(v) = HeaderValue::from_str(&format!("{request_path}/{query}")) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The proxy transport's rewrite of a kubelet-relative `Location` (and of
/// the link in an HTML redirect body) under the proxy path.
fn rewrite_location(answer: &mut http::Response<Vec<u8>>, request_path: &str, kubelet_path: &str) {
    let Some(location) = answer
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return;
    };
    if !location.starts_with('/') {
        return;
    }
    let mut suffix = kubelet_path.to_string();
    if request_path.ends_with('/') && !suffix.ends_with('/') {
        suffix.push('/');
    }
    let prepend = request_path.strip_suffix(&suffix).unwrap_or(request_path);
    if location.starts_with(prepend) {
        return;
    }
    let (path, query) = match location.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (location.as_str(), None),
    };
    let mut rewritten = go_clean(&format!("{prepend}/{path}"));
    if path.ends_with('/') && !rewritten.ends_with('/') {
        rewritten.push('/');
    }
    if let Some(q) = query {
        rewritten = format!("{rewritten}?{q}");
    }
    if let Ok(v) = HeaderValue::from_str(&rewritten) {
        answer.headers_mut().insert(header::LOCATION, v);
    }
    let html = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html"));
    if html && let Ok(text) = std::str::from_utf8(answer.body()) {
        let escape = |s: &str| s.replace('&', "&amp;");
        let body = text.replace(
            &format!("href=\"{}\"", escape(&location)),
            &format!("href=\"{}\"", escape(&rewritten)),
        );
        *answer.body_mut() = body.into_bytes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_and_cleaning() {
        assert_eq!(split_scheme_name_port("n"), Some(("n", "")));
        assert_eq!(split_scheme_name_port("n:10250"), Some(("n", "10250")));
        assert_eq!(
            split_scheme_name_port("https:n:10250"),
            Some(("n", "10250"))
        );
        assert_eq!(split_scheme_name_port("ftp:n:1"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        assert_eq!(split_scheme_name_port(":1"), None);
        assert_eq!(go_clean("/a//b/./c/../d"), "/a/b/d");
        assert_eq!(go_clean("/../x"), "/x");
        assert_eq!(go_clean("a/.."), ".");
        let base = "/api/v1/nodes/n/proxy";
        assert_eq!(kubelet_path("/stats/summary", "x"), "/stats/summary");
        assert_eq!(kubelet_path("//pods/", "x/"), "/pods/");
        assert_eq!(kubelet_path("/", base), "/");
        assert_eq!(kubelet_path("healthz", base), "/healthz");
        assert_eq!(kubelet_path("", base), "/");
        let mut r = http::Response::new(b"<a href=\"/stats/\">Moved Permanently</a>.\n\n".to_vec());
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/stats/"));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        rewrite_location(&mut r, &format!("{base}/stats"), "/stats");
        assert_eq!(
            r.headers()[header::LOCATION],
            "/api/v1/nodes/n/proxy/stats/"
        );
        assert_eq!(
            std::str::from_utf8(r.body()).unwrap(),
            "<a href=\"/api/v1/nodes/n/proxy/stats/\">Moved Permanently</a>.\n\n"
        );
    }
}
