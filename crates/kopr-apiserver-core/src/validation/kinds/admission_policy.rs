//! Validation of ValidatingAdmissionPolicies and their bindings, with
//! kube's messages: match constraints, CEL validations, variables and
//! match conditions that compile, validation actions, parameter references.

#[allow(unused_imports)]
use super::*;
use crate::validation::kinds::admission::validate_rule;

/// The reasons a validation may give.
const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
/// At most this many `matchConditions`.
const MAX_CONDITIONS: usize = 64;

/// A CEL expression's compile error, as kube words it.
fn compile(ck: &mut Checker, expression: &str, path: &str) {
    if let Err(e) = kube_cel::cel::Program::compile(expression) {
        ck.push(FieldError::invalid(
            path,
            expression,
            format!("compilation failed: {e}"),
        ));
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `matchConstraints` or `matchResources`; `rules_required` for a policy.
fn match_resources(ck: &mut Checker, m: &Obj, path: &str, rules_required: bool) {
    let rules = ck.obj_items(m, "resourceRules", path);
    if rules_required && rules.is_empty() {
        ck.push(FieldError::required(child(path, "resourceRules"), ""));
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in ck.obj_items(m, key, path) {
            let rp = index(&child(path, key), i);
            validate_rule(ck, r, &rp);
            for (j, name) in ck.str_list(r, "resourceNames", &rp).iter().enumerate() {
                let at = index(&child(&rp, "resourceNames"), j);
                ck.extend(&at, name, names::is_dns1123_subdomain(name));
            }
        }
    }
    if let Some(mp) = ck.str(m, "matchPolicy", path)
        && mp != "Equivalent"
        && mp != "Exact"
    {
        ck.push(FieldError::not_supported(
            child(path, "matchPolicy"),
            mp,
            &["Equivalent", "Exact"],
        ));
    }
    for s in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = ck.obj(m, s, path) {
            validate_label_selector(ck, sel, &child(path, s));
        }
    }
}

fn match_conditions(ck: &mut Checker, spec: &Obj, path: &str) {
    let at = child(path, "matchConditions");
    let conditions = ck.obj_items(spec, "matchConditions", path);
    if conditions.len() > MAX_CONDITIONS {
        ck.push(FieldError::too_many(
            &at,
            Some(conditions.len() as i64),
            MAX_CONDITIONS as i64,
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, c) in conditions {
        let cp = index(&at, i);
        let name = ck.string(c, "name", &cp);
        if name.is_empty() {
            ck.push(FieldError::required(child(&cp, "name"), ""));
        } else {
            ck.extend(&child(&cp, "name"), name, names::is_qualified_name(name));
            if !seen.insert(name) {
                ck.push(FieldError::duplicate(child(&cp, "name"), name));
            }
        }
        match ck.string(c, "expression", &cp) {
            "" => ck.push(FieldError::required(child(&cp, "expression"), "")),
            e => compile(ck, e, &child(&cp, "expression")),
        }
    }
}

fn validations(ck: &mut Checker, spec: &Obj) {
    for (i, v) in ck.obj_items(spec, "validations", "spec") {
        let vp = index("spec.validations", i);
        match ck.string(v, "expression", &vp) {
            "" => ck.push(FieldError::required(
                child(&vp, "expression"),
                "expression is not specified",
            )),
            e => compile(ck, e, &child(&vp, "expression")),
        }
        if let Some(m) = ck.str(v, "message", &vp) {
            if !m.is_empty() && m.trim().is_empty() {
                ck.push(FieldError::invalid(
                    child(&vp, "message"),
                    m,
                    "message must be non-empty if specified",
                ));
            } else if m.contains('\n') {
                ck.push(FieldError::invalid(
                    child(&vp, "message"),
                    m,
                    "message must not contain line breaks",
                ));
            }
        }
        if let Some(e) = ck.str(v, "messageExpression", &vp) {
            if e.trim().is_empty() {
                ck.push(FieldError::required(
                    child(&vp, "messageExpression"),
                    "must be non-empty if specified",
                ));
            } else {
                compile(ck, e, &child(&vp, "messageExpression"));
            }
        }
        if let Some(r) = ck.str(v, "reason", &vp)
            && !REASONS.contains(&r)
        {
            ck.push(FieldError::not_supported(child(&vp, "reason"), r, REASONS));
        }
    }
}

fn variables(ck: &mut Checker, spec: &Obj) {
    for (i, v) in ck.obj_items(spec, "variables", "spec") {
        let vp = index("spec.variables", i);
        let name = ck.string(v, "name", &vp);
        if name.is_empty() {
            ck.push(FieldError::required(
                child(&vp, "name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            ck.push(FieldError::invalid(
                child(&vp, "name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        match ck.string(v, "expression", &vp) {
            "" => ck.push(FieldError::required(
                child(&vp, "expression"),
                "expression is not specified",
            )),
            e => compile(ck, e, &child(&vp, "expression")),
        }
    }
}

/// A ValidatingAdmissionPolicy.
pub(crate) fn validating_admission_policy(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, false);
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
    let spec = sub(ck, root, "spec", "");
    match ck.str(spec, "failurePolicy", "spec") {
        None => ck.push(FieldError::required("spec.failurePolicy", "")),
        Some("Fail" | "Ignore") => {}
        Some(other) => ck.push(FieldError::not_supported(
            "spec.failurePolicy",
            other,
            &["Fail", "Ignore"],
        )),
    }
    if let Some(p) = ck.obj(spec, "paramKind", "spec") {
        for key in ["apiVersion", "kind"] {
            if ck.string(p, key, "spec.paramKind").is_empty() {
                ck.push(FieldError::required(child("spec.paramKind", key), ""));
            }
        }
    }
    match ck.obj(spec, "matchConstraints", "spec") {
        Some(m) => match_resources(ck, m, "spec.matchConstraints", true),
        None => ck.push(FieldError::required("spec.matchConstraints", "")),
    }
    let has_validations = ck
        .arr(spec, "validations", "spec")
        .is_some_and(|v| !v.is_empty());
    let has_audit = ck
        .arr(spec, "auditAnnotations", "spec")
        .is_some_and(|v| !v.is_empty());
    if !has_validations && !has_audit {
        for key in ["spec.validations", "spec.auditAnnotations"] {
            ck.push(FieldError::required(
                key,
                "validations or auditAnnotations must contain at least one item",
            ));
        }
    }
    validations(ck, spec);
    variables(ck, spec);
    match_conditions(ck, spec, "spec");
}

/// A ValidatingAdmissionPolicyBinding.
pub(crate) fn validating_admission_policy_binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, false);
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
    let spec = sub(ck, root, "spec", "");
    match ck.string(spec, "policyName", "spec") {
        "" => ck.push(FieldError::required("spec.policyName", "")),
        name => ck.extend("spec.policyName", name, names::is_dns1123_subdomain(name)),
    }
    let actions = ck.str_list(spec, "validationActions", "spec");
    if actions.is_empty() {
        ck.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let at = index("spec.validationActions", i);
        if !seen.insert(*a) {
            ck.push(FieldError::duplicate(&at, *a));
        } else if !matches!(*a, "Deny" | "Warn" | "Audit") {
            ck.push(FieldError::not_supported(
                &at,
                *a,
                &["Audit", "Deny", "Warn"],
            ));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        ck.push(FieldError::invalid(
            "spec.validationActions",
            Value::from(actions.clone()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    // kube reports these under `spec.matchResouces` (sic).
    if let Some(m) = ck.obj(spec, "matchResources", "spec") {
        match_resources(ck, m, "spec.matchResouces", false);
    }
    if let Some(p) = ck.obj(spec, "paramRef", "spec") {
        param_ref(ck, p);
    }
}

fn param_ref(ck: &mut Checker, p: &Obj) {
    let at = "spec.paramRef";
    let name = ck.string(p, "name", at);
    let selector = ck.obj(p, "selector", at);
    match (name.is_empty(), selector) {
        (false, Some(_)) => {
            for key in ["name", "selector"] {
                ck.push(FieldError::forbidden(
                    child(at, key),
                    "name and selector are mutually exclusive",
                ));
            }
        }
        (true, None) => ck.push(FieldError::required(
            at,
            "one of name or selector must be specified",
        )),
        (false, None) => ck.extend(&child(at, "name"), name, names::is_dns1123_subdomain(name)),
        (true, Some(sel)) => {
            validate_label_selector(ck, sel, &child(at, "selector"));
        }
    }
    let namespace = ck.string(p, "namespace", at);
    if !namespace.is_empty() {
        ck.extend(
            &child(at, "namespace"),
            namespace,
            names::is_dns1123_label(namespace),
        );
    }
    match ck.str(p, "parameterNotFoundAction", at) {
        None => ck.push(FieldError::required(
            child(at, "parameterNotFoundAction"),
            "",
        )),
        Some("Deny" | "Allow") => {}
        Some(other) => ck.push(FieldError::not_supported(
            child(at, "parameterNotFoundAction"),
            other,
            &["Allow", "Deny"],
        )),
    }
}
