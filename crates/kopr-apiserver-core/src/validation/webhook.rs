//! Webhook client configurations, as kube validates them for admission
//! webhooks and CRD conversion webhooks alike (`webhook.ValidateWebhookURL`
//! with `forceHttps`, `webhook.ValidateWebhookService`).

use super::names::{is_dns1123_subdomain, is_valid_port_num};
use super::{FieldError, child};

/// A webhook's in-cluster service reference.
#[derive(Debug, Clone, Copy)]
pub struct Service<'a> {
    /// `name`.
    pub name: &'a str,
    /// `namespace`.
    pub namespace: &'a str,
    /// `port` (443 when unset).
    pub port: i64,
    /// `path`, if set.
    pub path: Option<&'a str>,
}

/// The errors of a webhook `url` at `path`: https only, a host, no user
/// information, query or fragment. The URL is split as Go's `url.Parse`
/// splits it (the scheme up to the first `:`, case-insensitive).
pub fn url(u: &str, path: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = match u.split_once(':') {
        Some((s, r))
            if s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (s.to_ascii_lowercase(), r)
        }
        _ => (String::new(), u),
    };
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user, host) = match rest.strip_prefix("//") {
        Some(auth) => {
            let auth = auth.split('/').next().unwrap_or("");
            match auth.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, auth),
            }
        }
        None => (None, ""),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme.as_str(),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// The errors of a webhook `service` at `path`: name and namespace
/// required, a valid port, a path of DNS-subdomain segments.
pub fn service(s: &Service<'_>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s.name.is_empty() {
        errs.push(FieldError::required(
            child(path, "name"),
            "service name is required",
        ));
    }
    if s.namespace.is_empty() {
        errs.push(FieldError::required(
            child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let pe = is_valid_port_num(s.port);
    if !pe.is_empty() {
        errs.push(FieldError::invalid(
            child(path, "port"),
            s.port,
            format!("port is not valid: {}", pe.join(", ")),
        ));
    }
    let Some(up) = s.path else {
        return errs;
    };
    if up.is_empty() || up == "/" {
        return errs;
    }
    let pp = child(path, "path");
    if up == "//" {
        errs.push(FieldError::invalid(pp, up, "segment[0] may not be empty"));
        return errs;
    }
    if !up.starts_with('/') {
        errs.push(FieldError::invalid(&pp, up, "must start with a '/'"));
    }
    let check = up.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &pp,
                up,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for m in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(&pp, up, format!("segment[{i}]: {m}")));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_as_go_parses_them() {
        assert!(url("https://hook.example.com/x", "u").is_empty());
        assert!(
            url("HTTPS://hook.example.com", "u").is_empty(),
            "schemes are case-insensitive"
        );
        let errs = url("http://me@h?q=1#f", "u");
        let details: Vec<&str> = errs.iter().map(|e| e.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                "'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "user information is not permitted in the URL",
                "fragments are not permitted in the URL",
                "query parameters are not permitted in the URL",
            ]
        );
        let svc = Service {
            name: "",
            namespace: "ns",
            port: 70000,
            path: Some("/a//b"),
        };
        let errs = service(&svc, "s");
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["s.name", "s.port", "s.path"]);
    }
}
