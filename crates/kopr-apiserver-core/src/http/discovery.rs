//! API discovery: `/api`, `/apis`, `/apis/G`, `/api/v1` and `/apis/G/V` in
//! the legacy format, and aggregated discovery (apidiscovery.k8s.io/v2) when
//! the Accept header asks for it.

use axum::response::Response;
use http::StatusCode;
use http::request::Parts;
use serde_json::{Value, json};

use super::negotiate::{Representation, representation};
use super::response;
use crate::resources::kind::Sub;
use crate::resources::{Catalog, ResourceType};
use crate::status::ApiError;

const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn wants_aggregated(parts: &Parts) -> bool {
    let accept = parts
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    representation(accept) == Representation::AggregatedDiscovery
}

fn aggregated(body: Value) -> Response {
    match serde_json::to_vec(&body) {
        Ok(bytes) => response::bytes_response(StatusCode::OK, AGGREGATED_CONTENT_TYPE, bytes),
        Err(e) => response::error(&ApiError::internal(e)),
    }
}

/// `/api`
pub fn core_versions(catalog: &Catalog, parts: &Parts) -> Response {
    if wants_aggregated(parts) {
        return aggregated(core_aggregated(catalog));
    }
    response::json(
        StatusCode::OK,
        &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}),
    )
}

/// `/apis`
pub fn groups(catalog: &Catalog, parts: &Parts) -> Response {
    if wants_aggregated(parts) {
        let items: Vec<Value> = catalog
            .groups()
            .into_iter()
            .filter(|(g, _)| !g.is_empty())
            .map(|(g, versions)| aggregated_group(catalog, &g, &versions))
            .collect();
        return aggregated(
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}),
        );
    }
    let groups: Vec<Value> = catalog
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| api_group(&g, &versions))
        .collect();
    response::json(
        StatusCode::OK,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    )
}

/// The core group's aggregated discovery document (served at `/api`).
pub fn core_aggregated(catalog: &Catalog) -> Value {
    let items: Vec<Value> = catalog
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty())
        .map(|(g, versions)| aggregated_group(catalog, &g, &versions))
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn api_group(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis/G`
pub fn group(catalog: &Catalog, group: &str) -> Result<Response, ApiError> {
    let Some((g, versions)) = catalog
        .groups()
        .into_iter()
        .find(|(g, _)| g == group && !g.is_empty())
    else {
        return Err(ApiError::path_not_found());
    };
    let mut body = api_group(&g, &versions);
    body["kind"] = json!("APIGroup");
    body["apiVersion"] = json!("v1");
    Ok(response::json(StatusCode::OK, &body))
}

fn subresources(rt: &ResourceType) -> Vec<(&'static str, &'static [&'static str], Value)> {
    let own = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let mut out: Vec<_> = Sub::ALL
        .into_iter()
        .filter(|sub| rt.serves(*sub))
        .map(|sub| {
            let kind = match sub.kind() {
                Some((group, version, kind)) => {
                    json!({"group": group, "version": version, "kind": kind})
                }
                None => own.clone(),
            };
            (sub.name(), sub.verbs(), kind)
        })
        .collect();
    if rt.strategy.has_spec_finalizers() {
        out.push(("finalize", &["update"][..], own));
    }
    out.sort_by_key(|(name, ..)| *name);
    out
}

/// `/api/v1` and `/apis/G/V`
pub fn group_version(catalog: &Catalog, group: &str, version: &str) -> Result<Response, ApiError> {
    if !catalog.serves_group_version(group, version) {
        return Err(ApiError::path_not_found());
    }
    let mut resources = Vec::new();
    let mut rts: Vec<_> = catalog
        .all()
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    rts.sort_by(|a, b| a.plural.cmp(&b.plural));
    for rt in rts {
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs(),
        });
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        resources.push(r);
        for (sub, verbs, kind) in subresources(&rt) {
            let mut s = json!({
                "name": format!("{}/{sub}", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": kind["kind"],
                "verbs": verbs,
            });
            if kind["group"] != json!(rt.group) {
                s["group"] = kind["group"].clone();
                s["version"] = kind["version"].clone();
            }
            resources.push(s);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(response::json(
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    ))
}

fn aggregated_group(catalog: &Catalog, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let mut rts: Vec<_> = catalog.all().into_iter().filter(|r| r.group == group && &r.version == v).collect();
            rts.sort_by(|a, b| a.plural.cmp(&b.plural));
            let resources: Vec<Value> = rts
                .iter()
                .map(|rt| {
                    let mut r = json!({
                        "resource": rt.plural,
                        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": rt.singular,
                        "verbs": rt.verbs(),
                    });
                    if !rt.short_names.is_empty() {
                        r["shortNames"] = json!(rt.short_names);
                    }
                    if !rt.categories.is_empty() {
                        r["categories"] = json!(rt.categories);
                    }
                    let subs: Vec<Value> = subresources(rt)
                        .into_iter()
                        .map(|(sub, verbs, kind)| json!({"subresource": sub, "responseKind": kind, "verbs": verbs}))
                        .collect();
                    if !subs.is_empty() {
                        r["subresources"] = json!(subs);
                    }
                    r
                })
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
}
