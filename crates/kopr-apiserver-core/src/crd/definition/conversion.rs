//! Validation of a CRD's conversion (webhook URL and service), stored
//! versions and `preserveUnknownFields`.

#[allow(unused_imports)]
use super::*;
use crate::validation::webhook;

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
                (Some(u), None) => errs.extend(webhook::url(u, &child(&wcc, "url"))),
                (None, Some(s)) => errs.extend(webhook::service(
                    &webhook::Service {
                        name: s.name,
                        namespace: s.namespace,
                        port: s.port,
                        path: s.path,
                    },
                    &child(&wcc, "service"),
                )),
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
