//! Parsing request paths into what they address, as kube-apiserver's
//! RequestInfo does.

/// A path under `/api/v1` or `/apis/G/V` naming resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Plural resource name.
    pub plural: String,
    /// Object name, if any.
    pub name: Option<String>,
    /// Subresource, if any.
    pub subresource: Option<String>,
    /// Whether the legacy `/watch/` prefix was used.
    pub legacy_watch: bool,
}

/// `/api/v1/nodes/NAME/proxy[/PATH]`: the `proxy` subresource of a node,
/// which kube-apiserver forwards to the node's kubelet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeProxyPath {
    /// The node (`nodes`, its name, subresource `proxy`) as authorization
    /// sees it; the name may carry a scheme and port (`https:NAME:10250`).
    pub node: ResourcePath,
    /// What follows `/proxy` as the client wrote it (`/stats/summary`, `/`),
    /// or `None` when the path ends at `proxy`.
    pub subpath: Option<String>,
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiPath {
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/G`
    Group(String),
    /// `/api/v1` or `/apis/G/V`
    GroupVersion(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// A node's `proxy` subresource, with the path to forward.
    NodeProxy(NodeProxyPath),
    /// `/healthz`, `/livez`, `/readyz` and their sub-checks.
    Health,
    /// `/version`
    Version,
    /// `/openapi/v3`
    OpenApiV3Root,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/G/V`: (group, version).
    OpenApiV3(String, String),
    /// `/openapi/v2`
    OpenApiV2,
    /// `/metrics`
    Metrics,
    /// Anything else.
    Unknown,
}

/// Parses a request path.
pub fn parse(path: &str) -> ApiPath {
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match parts.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => ApiPath::Health,
        ["version"] => ApiPath::Version,
        ["metrics"] => ApiPath::Metrics,
        ["openapi", "v2"] => ApiPath::OpenApiV2,
        ["openapi", "v3"] => ApiPath::OpenApiV3Root,
        ["openapi", "v3", "api", v] => ApiPath::OpenApiV3(String::new(), v.to_string()),
        ["openapi", "v3", "apis", g, v] => ApiPath::OpenApiV3(g.to_string(), v.to_string()),
        ["api"] => ApiPath::CoreVersions,
        ["api", v] => ApiPath::GroupVersion(String::new(), v.to_string()),
        ["api", "v1", "nodes", name, "proxy", ..] => node_proxy(path, name),
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis"] => ApiPath::Groups,
        ["apis", g] => ApiPath::Group(g.to_string()),
        ["apis", g, v] => ApiPath::GroupVersion(g.to_string(), v.to_string()),
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        _ => ApiPath::Unknown,
    }
}

/// `/api/v1/nodes/NAME/proxy…`, keeping what follows `proxy` verbatim
/// (kube-apiserver's connect handler passes it on, trailing slash included).
fn node_proxy(path: &str, name: &str) -> ApiPath {
    // The raw text after the fifth non-empty segment (`proxy`).
    let mut seen = 0;
    let mut offset = 0;
    for segment in path.split('/') {
        offset += segment.len() + 1;
        if !segment.is_empty() {
            seen += 1;
            if seen == 5 {
                break;
            }
        }
    }
    let rest = path.get(offset.saturating_sub(1)..).unwrap_or("");
    ApiPath::NodeProxy(NodeProxyPath {
        node: ResourcePath {
            group: String::new(),
            version: "v1".into(),
            namespace: None,
            plural: "nodes".into(),
            name: Some(name.to_string()),
            subresource: Some("proxy".into()),
            legacy_watch: false,
        },
        subpath: (!rest.is_empty()).then(|| rest.to_string()),
    })
}

fn resource(group: &str, version: &str, mut rest: &[&str]) -> ApiPath {
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_string());
        // `namespaces/N/status` and `namespaces/N/finalize` address the
        // namespace itself.
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => return ApiPath::Unknown,
    };
    // A namespace's own path: the namespace segment is its name.
    if plural == "namespaces" {
        namespace = None;
    }
    ApiPath::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        plural: plural.to_string(),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
        legacy_watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(path: &str) -> ResourcePath {
        match parse(path) {
            ApiPath::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn namespaced_paths() {
        let r = rp("/api/v1/namespaces/default/configmaps/x");
        assert_eq!(r.namespace.as_deref(), Some("default"));
        assert_eq!(r.plural, "configmaps");
        assert_eq!(r.name.as_deref(), Some("x"));
        let r = rp("/apis/apps/v1/namespaces/a/deployments/d/scale");
        assert_eq!(
            (r.group.as_str(), r.subresource.as_deref()),
            ("apps", Some("scale"))
        );
        let r = rp("/apis/apps/v1/deployments");
        assert_eq!((r.namespace, r.name), (None, None));
    }

    #[test]
    fn namespace_paths() {
        let r = rp("/api/v1/namespaces/foo");
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("foo"), None)
        );
        let r = rp("/api/v1/namespaces/foo/finalize");
        assert_eq!(
            (r.name.as_deref(), r.subresource.as_deref()),
            (Some("foo"), Some("finalize"))
        );
        let r = rp("/api/v1/namespaces");
        assert_eq!(r.name, None);
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(parse("/api"), ApiPath::CoreVersions);
        assert_eq!(parse("/apis/apps"), ApiPath::Group("apps".into()));
        assert_eq!(
            parse("/api/v1"),
            ApiPath::GroupVersion(String::new(), "v1".into())
        );
        assert_eq!(
            parse("/openapi/v3/apis/apps/v1"),
            ApiPath::OpenApiV3("apps".into(), "v1".into())
        );
        assert!(rp("/api/v1/watch/namespaces/a/pods").legacy_watch);
    }

    #[test]
    fn node_proxy_paths_keep_what_follows_proxy() {
        let proxy = |path: &str| match parse(path) {
            ApiPath::NodeProxy(p) => p,
            other => panic!("{path}: {other:?}"),
        };
        let p = proxy("/api/v1/nodes/kopr-node-0/proxy/stats/summary");
        assert_eq!(p.node.name.as_deref(), Some("kopr-node-0"));
        assert_eq!(p.node.subresource.as_deref(), Some("proxy"));
        assert_eq!(p.subpath.as_deref(), Some("/stats/summary"));
        assert_eq!(proxy("/api/v1/nodes/n/proxy").subpath, None);
        assert_eq!(
            proxy("/api/v1/nodes/n/proxy/").subpath.as_deref(),
            Some("/")
        );
        assert_eq!(
            proxy("/api/v1/nodes/n:10250/proxy//pods/")
                .subpath
                .as_deref(),
            Some("//pods/")
        );
        assert_eq!(
            parse("/api/v1/nodes/n/status"),
            ApiPath::Resource(rp("/api/v1/nodes/n/status"))
        );
    }
}
