//! The simulated kubelet's HTTP server (its port 10250), as kube-apiserver's
//! node proxy reaches it: what the kubelet answers for a method, path and
//! query, from the node, the pods bound to it and the current time.
//!
//! Served, as kubelet 1.32 serves them:
//! - `/healthz` (checks `ping`, `log`, `syncloop`; `verbose`, `exclude`) and
//!   `/healthz/<check>`: `ok`;
//! - `/pods`: the pods bound to the node as a `v1` PodList, compact JSON,
//!   each pod with the annotations the kubelet's pod config adds
//!   (`kubernetes.io/config.source: api`, `kubernetes.io/config.seen`);
//! - `/stats/summary` (GET or POST, `only_cpu_and_memory=true`):
//!   [`super::summary`];
//! - `/metrics/resource`: [`super::resource_metrics`].
//!
//! Anything else gets the kubelet's 404s: Go's `404 page not found` outside
//! its go-restful web services, go-restful's `404: Page Not Found` inside
//! `/pods` and `/stats/` (whose routes also answer `405: Method Not
//! Allowed` and `406: Not Acceptable`), and `/stats` redirects to
//! `/stats/` as Go's ServeMux does. The kubelet's other endpoints (`/exec`,
//! `/containerLogs`, `/configz`, `/metrics`, `/metrics/cadvisor`, …) are not
//! simulated and answer Go's 404.

use std::sync::Arc;

use http::{HeaderValue, Method, Response, StatusCode, header};
use serde_json::{Value, json};

use super::{resource_metrics, stats, summary};
use crate::gojson;
use crate::podutil;

use crate::node_runtime::{NodeView, ProxyRequest};

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

fn reply(
    code: StatusCode,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> Response<Vec<u8>> {
    let mut r = Response::new(body.into());
    *r.status_mut() = code;
    if let Some(ct) = content_type.and_then(|c| HeaderValue::from_str(c).ok()) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r
}

/// Go's `http.NotFound`.
fn go_not_found() -> Response<Vec<u8>> {
    let mut r = reply(StatusCode::NOT_FOUND, Some(TEXT), "404 page not found\n");
    r.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// go-restful's error for a route it cannot select (its text sniffed by
/// Go as plain text).
fn restful_error(code: StatusCode, text: &'static str) -> Response<Vec<u8>> {
    reply(code, Some(TEXT), text)
}

/// go-restful's route selection after the path matched: the method, then
/// the `Accept` header against the JSON the kubelet's services produce.
fn restful_route(req: &ProxyRequest<'_>, methods: &[Method]) -> Option<Response<Vec<u8>>> {
    if !methods.contains(req.method) {
        return Some(restful_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "405: Method Not Allowed",
        ));
    }
    let accept = req.accept.filter(|a| !a.is_empty()).unwrap_or("*/*");
    let acceptable = accept.split(',').any(|m| {
        let m = m.split(';').next().unwrap_or("").trim();
        m == "*/*" || m == JSON
    });
    (!acceptable).then(|| restful_error(StatusCode::NOT_ACCEPTABLE, "406: Not Acceptable"))
}

fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// Answers one request.
pub fn serve(req: &ProxyRequest<'_>, host: &NodeView<'_>) -> Response<Vec<u8>> {
    match req.path {
        "/healthz" => healthz(req),
        "/healthz/ping" | "/healthz/log" | "/healthz/syncloop" => {
            reply(StatusCode::OK, Some(TEXT), "ok")
        }
        "/metrics/resource" => {
            let usage = stats::node_usage(host.node, host.pods, host.now);
            reply(
                StatusCode::OK,
                Some(resource_metrics::CONTENT_TYPE),
                resource_metrics::render(&usage),
            )
        }
        "/stats" => redirect(req, "/stats/"),
        "/pods" | "/pods/" => restful_route(req, &[Method::GET]).unwrap_or_else(|| pods(host)),
        "/stats/summary" | "/stats/summary/" => restful_route(req, &[Method::GET, Method::POST])
            .unwrap_or_else(|| stats_summary(req, host)),
        p if p.starts_with("/pods/") || p.starts_with("/stats/") => {
            restful_error(StatusCode::NOT_FOUND, "404: Page Not Found")
        }
        _ => go_not_found(),
    }
}

/// Go's ServeMux sending a subtree's root without its slash to the subtree.
fn redirect(req: &ProxyRequest<'_>, to: &str) -> Response<Vec<u8>> {
    let location = match req.query {
        Some(q) if !q.is_empty() => format!("{to}?{q}"),
        _ => to.to_string(),
    };
    let get = *req.method == Method::GET;
    let head = *req.method == Method::HEAD;
    let body = if get {
        let href = location
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&#34;")
            .replace('\'', "&#39;");
        format!("<a href=\"{href}\">Moved Permanently</a>.\n\n")
    } else {
        String::new()
    };
    let content_type = (get || head).then_some("text/html; charset=utf-8");
    let mut r = reply(StatusCode::MOVED_PERMANENTLY, content_type, body);
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// apiserver's healthz handler with the kubelet's checks, all passing.
fn healthz(req: &ProxyRequest<'_>) -> Response<Vec<u8>> {
    let params = query_pairs(req.query);
    let mut excluded: std::collections::BTreeSet<String> = params
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.clone())
        .collect();
    let mut out = String::new();
    for check in ["ping", "log", "syncloop"] {
        if excluded.remove(check) {
            out.push_str(&format!("[+]{check} excluded: ok\n"));
        } else {
            out.push_str(&format!("[+]{check} ok\n"));
        }
    }
    if !excluded.is_empty() {
        let names: Vec<String> = excluded.iter().map(|n| format!("{n:?}")).collect();
        out.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            names.join(",")
        ));
    }
    let body = if params.iter().any(|(k, _)| k == "verbose") {
        out.push_str("healthz check passed\n");
        out
    } else {
        "ok".to_string()
    };
    let mut r = reply(StatusCode::OK, Some(TEXT), body);
    r.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// `GET /pods`: the pods bound to the node, as the kubelet's pod manager
/// holds them, encoded by the `v1` codec (Go's `json.Encoder`: compact,
/// newline-terminated; a nil item slice is `null`).
fn pods(host: &NodeView<'_>) -> Response<Vec<u8>> {
    if host.pods.is_empty() {
        return reply(
            StatusCode::OK,
            Some(JSON),
            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":null}\n",
        );
    }
    let items: Vec<Arc<Value>> = host
        .pods
        .iter()
        .map(|p| {
            let mut pod = (**p).clone();
            let seen = podutil::condition(p, "PodScheduled")
                .map(|c| podutil::str_at(c, "/lastTransitionTime"))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| podutil::str_at(p, "/metadata/creationTimestamp"))
                .to_string();
            if let Some(meta) = crate::object::meta_mut(&mut pod) {
                let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Some(a) = annotations.as_object_mut() {
                    a.insert("kubernetes.io/config.seen".into(), json!(seen));
                    a.insert("kubernetes.io/config.source".into(), json!("api"));
                }
            }
            Arc::new(pod)
        })
        .collect();
    let meta = json!({});
    let mut body = gojson::to_vec(&gojson::List {
        kind: "PodList",
        api_version: "v1",
        metadata: &meta,
        items: &items,
    });
    body.push(b'\n');
    reply(StatusCode::OK, Some(JSON), body)
}

/// `/stats/summary`: the form's `only_cpu_and_memory` (query, and a
/// POST's urlencoded body) must be exactly one `true`.
fn stats_summary(req: &ProxyRequest<'_>, host: &NodeView<'_>) -> Response<Vec<u8>> {
    let mut form = query_pairs(req.query);
    let urlencoded = req
        .content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|c| c.trim() == "application/x-www-form-urlencoded");
    if *req.method == Method::POST && urlencoded {
        form.extend(form_urlencoded::parse(req.body).into_owned());
    }
    let values: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "only_cpu_and_memory")
        .map(|(_, v)| v.as_str())
        .collect();
    let only_cpu_and_memory = values == ["true"];
    let usage = stats::node_usage(host.node, host.pods, host.now);
    reply(
        StatusCode::OK,
        Some(JSON),
        summary::render(&usage, only_cpu_and_memory),
    )
}
