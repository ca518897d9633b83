//! Validation of a CRD's conversion (webhook URL and service), stored
//! versions and `preserveUnknownFields`.

#[allow(unused_imports)]
use super::*;

pub(super) fn validate_conversion(
    c: &Conversion<'_>,
    require_recognized: bool,
    errs: &mut Vec<FieldError>,
) {
    let p = "spec.conversion";
    match c.strategy {
        "" => errs.push(FieldError::required(child(p, "strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            child(p, "strategy"),
            other,
            &["None", "Webhook"],
        )),
    }
    let wcc = child(p, "webhookClientConfig");
    let crv = child(p, "conversionReviewVersions");
    if c.strategy == "Webhook" {
        match &c.client_config {
            None => errs.push(FieldError::required(
                &wcc,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => match (cc.url, &cc.service) {
                (Some(u), None) => validate_webhook_url(u, &child(&wcc, "url"), errs),
                (None, Some(s)) => validate_webhook_service(s, &child(&wcc, "service"), errs),
                _ => errs.push(FieldError::required(
                    &wcc,
                    "exactly one of url or service is required",
                )),
            },
        }
        let versions: &[&str] = c.review_versions.as_deref().unwrap_or(&[]);
        if versions.is_empty() {
            errs.push(FieldError::required(&crv, ""));
        } else {
            let mut seen: Vec<&str> = Vec::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if seen.contains(v) {
                    errs.push(FieldError::invalid(index(&crv, i), *v, "duplicate version"));
                    continue;
                }
                seen.push(v);
                for m in is_dns1035_label(v) {
                    errs.push(FieldError::invalid(index(&crv, i), *v, m));
                }
                if matches!(*v, "v1" | "v1beta1") {
                    accepted = true;
                }
            }
            if require_recognized && !accepted {
                let list: Vec<Value> = versions.iter().map(|v| Value::from(*v)).collect();
                errs.push(FieldError::invalid(
                    &crv,
                    Value::Array(list),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if c.client_config.is_some() {
            errs.push(FieldError::forbidden(
                wcc,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if c.review_versions.as_ref().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                crv,
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

/// `webhook.ValidateWebhookURL` with `forceHttps`, on a simplified URL parser.
pub(super) fn validate_webhook_url(u: &str, path: &str, errs: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
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
}

/// `webhook.ValidateWebhookService`.
pub(super) fn validate_webhook_service(s: &Service<'_>, path: &str, errs: &mut Vec<FieldError>) {
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
        return;
    };
    if up.is_empty() || up == "/" {
        return;
    }
    let pp = child(path, "path");
    if up == "//" {
        errs.push(FieldError::invalid(pp, up, "segment[0] may not be empty"));
        return;
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
}

pub(super) fn validate_stored_versions(
    stored: Option<&[String]>,
    versions: &[Version<'_>],
    errs: &mut Vec<FieldError>,
) {
    let path = "status.storedVersions";
    let Some(stored) = stored.filter(|s| !s.is_empty()) else {
        let v = if stored.is_some() {
            go_repr("[]string{}")
        } else {
            go_repr("[]string(nil)")
        };
        errs.push(FieldError::invalid(
            path,
            v,
            "must have at least one stored version",
        ));
        return;
    };
    // storedVersionsMap: name -> last index.
    let mut remaining: Vec<(usize, &str)> = Vec::new();
    for (i, s) in stored.iter().enumerate() {
        remaining.retain(|(_, n)| *n != s.as_str());
        remaining.push((i, s.as_str()));
    }
    let list = || Value::Array(stored.iter().map(|s| Value::from(s.as_str())).collect());
    for v in versions {
        let found = remaining.iter().any(|(_, n)| *n == v.name);
        if v.storage && !found {
            errs.push(FieldError::invalid(
                path,
                list(),
                format!("must have the storage version {}", v.name),
            ));
        }
        if found {
            remaining.retain(|(_, n)| *n != v.name);
        }
    }
    remaining.sort_by_key(|(i, _)| *i);
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            index(path, i),
            v,
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
}

pub(super) fn validate_preserve_unknown_fields(crd: &Crd<'_>, errs: &mut Vec<FieldError>) {
    if crd.spec.preserve_unknown_fields {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}
