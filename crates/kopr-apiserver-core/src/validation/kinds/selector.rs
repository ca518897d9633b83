//! Label selectors in objects: validation, kube's `%#v` rendering for messages,
//! and the selector-matches-template check of workloads.

#[allow(unused_imports)]
use super::*;

// -------------------------------------------------------------- selectors

pub(super) fn req_repr(r: &Obj) -> String {
    let s = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
    let values = match r.get("values").and_then(Value::as_array) {
        None => "[]string(nil)".to_string(),
        Some(a) => {
            let q: Vec<String> = a
                .iter()
                .map(|v| go_quote(v.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    };
    format!(
        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
        s("key"),
        s("operator")
    )
}

/// Go `%#v` of a `metav1.LabelSelector` (as kube 1.32 prints it).
pub fn selector_repr(sel: Option<&Obj>) -> Value {
    let Some(sel) = sel else {
        return go_repr("(*v1.LabelSelector)(nil)");
    };
    let ml = match sel.get("matchLabels").and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v.as_str().unwrap_or(""))))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    };
    let me = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(a) => {
            let parts: Vec<String> = a
                .iter()
                .filter_map(Value::as_object)
                .map(req_repr)
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    go_repr(format!(
        "v1.LabelSelector{{MatchLabels:{ml}, MatchExpressions:{me}}}"
    ))
}

/// ValidateLabelSelector (strict label values); returns whether the selector
/// converts to a usable selector.
pub(super) fn validate_label_selector(ck: &mut Checker, sel: &Obj, path: &str) -> bool {
    let ml = ck.str_map(sel, "matchLabels", path);
    validate_labels(ck, &ml, &child(path, "matchLabels"));
    let mut ok = true;
    let ep = child(path, "matchExpressions");
    for (i, r) in ck.obj_items(sel, "matchExpressions", path) {
        let ip = index(&ep, i);
        let op = ck.string(r, "operator", &ip);
        let values = ck.str_list(r, "values", &ip);
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    ok = false;
                    ck.push(FieldError::required(
                        child(&ip, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    ok = false;
                    ck.push(FieldError::forbidden(
                        child(&ip, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => {
                ok = false;
                ck.push(FieldError::invalid(
                    child(&ip, "operator"),
                    other,
                    "not a valid selector operator",
                ));
            }
        }
        let k = ck.string(r, "key", &ip);
        ck.extend(&child(&ip, "key"), k, names::is_qualified_name(k));
        for (vi, v) in values.iter().enumerate() {
            ck.extend(
                &index(&child(&ip, "values"), vi),
                v,
                names::is_valid_label_value(v),
            );
        }
    }
    ok
}

pub(super) fn selector_is_empty(sel: &Obj) -> bool {
    sel.get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty())
        && sel
            .get("matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty())
}

/// Whether a `metav1.LabelSelector` selects objects with `labels`, as
/// [`LabelSelector`](crate::selectors::LabelSelector) matches it (an
/// invalid selector selects nothing).
pub(super) fn selector_matches(sel: &Obj, labels: Option<&Obj>) -> bool {
    crate::selectors::LabelSelector::from_label_selector_value(&Value::Object(sel.clone()))
        .is_ok_and(|s| s.matches(labels))
}

/// Checks that the selector matches the template labels.
pub(super) fn check_template_match(ck: &mut Checker, sel: &Obj, tmpl: &Obj, tpath: &str) {
    if selector_is_empty(sel) {
        return;
    }
    let labels = tmpl
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    if !selector_matches(sel, labels) {
        ck.push(FieldError::invalid(
            child(&child(tpath, "metadata"), "labels"),
            labels_repr(labels),
            "`selector` does not match template `labels`",
        ));
    }
}
