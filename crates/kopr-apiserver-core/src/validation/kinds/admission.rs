//! Validation of admission webhook configurations (validating and mutating):
//! rules, client configs (URL or service), match conditions.

#[allow(unused_imports)]
use super::*;
use crate::validation::webhook;

// -------------------------------------------------------- admission webhooks

pub(super) fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

pub(super) fn validate_resources_list(ck: &mut Checker, res: &[&str], path: &str) {
    if res.is_empty() {
        ck.push(FieldError::required(path, ""));
    }
    let mut res_wild_sub = BTreeSet::new();
    let mut sub_wild_res = BTreeSet::new();
    let mut double = false;
    let mut single = false;
    let mut without_sub = false;
    for (i, rs) in res.iter().enumerate() {
        if rs.is_empty() {
            ck.push(FieldError::required(index(path, i), ""));
            continue;
        }
        if *rs == "*/*" {
            double = true;
        }
        if *rs == "*" {
            single = true;
        }
        let Some((r, s)) = rs.split_once('/') else {
            without_sub = *rs != "*";
            continue;
        };
        if res_wild_sub.contains(r) {
            ck.push(FieldError::invalid(
                index(path, i),
                *rs,
                format!("if '{r}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_wild_res.contains(s) {
            ck.push(FieldError::invalid(
                index(path, i),
                *rs,
                format!("if '*/{s}' is present, must not specify {rs}"),
            ));
        }
        if s == "*" {
            res_wild_sub.insert(r);
        }
        if r == "*" {
            sub_wild_res.insert(s);
        }
    }
    if res.len() > 1 && double {
        ck.push(FieldError::invalid(
            path,
            Value::from(res.to_vec()),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && without_sub {
        ck.push(FieldError::invalid(
            path,
            Value::from(res.to_vec()),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

pub(super) fn validate_rule(ck: &mut Checker, r: &Obj, rp: &str) {
    let ops = ck.str_list(r, "operations", rp);
    let op_path = child(rp, "operations");
    if ops.is_empty() {
        ck.push(FieldError::required(&op_path, ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        ck.push(FieldError::invalid(
            &op_path,
            Value::from(ops.clone()),
            "if '*' is present, must not specify other operations",
        ));
    }
    const OPS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, o) in ops.iter().enumerate() {
        if !OPS.contains(o) {
            ck.push(FieldError::not_supported(index(&op_path, i), *o, OPS));
        }
    }
    let groups = ck.str_list(r, "apiGroups", rp);
    if groups.is_empty() {
        ck.push(FieldError::required(child(rp, "apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        ck.push(FieldError::invalid(
            child(rp, "apiGroups"),
            Value::from(groups.clone()),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = ck.str_list(r, "apiVersions", rp);
    if versions.is_empty() {
        ck.push(FieldError::required(child(rp, "apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        ck.push(FieldError::invalid(
            child(rp, "apiVersions"),
            Value::from(versions.clone()),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            ck.push(FieldError::required(
                index(&child(rp, "apiVersions"), i),
                "",
            ));
        }
    }
    let res = ck.str_list(r, "resources", rp);
    validate_resources_list(ck, &res, &child(rp, "resources"));
    if let Some(s) = ck.str(r, "scope", rp)
        && !matches!(s, "*" | "Cluster" | "Namespaced")
    {
        ck.push(FieldError::not_supported(
            child(rp, "scope"),
            s,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

pub(super) fn webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>, mutating: bool) {
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, false);
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
    let mut seen = BTreeSet::new();
    for (i, h) in ck.obj_items(root, "webhooks", "") {
        let hp = index("webhooks", i);
        let name = ck.string(h, "name", &hp);
        if !seen.insert(name) {
            ck.push(FieldError::duplicate(child(&hp, "name"), name));
        }
        if name.is_empty() {
            ck.push(FieldError::required(child(&hp, "name"), ""));
        } else if let Err(m) = names::is_fully_qualified_name(name) {
            ck.push(FieldError::invalid(child(&hp, "name"), name, m.to_string()));
        }
        for (ri, r) in ck.obj_items(h, "rules", &hp) {
            validate_rule(ck, r, &index(&child(&hp, "rules"), ri));
        }
        if let Some(fp) = ck.str(h, "failurePolicy", &hp)
            && fp != "Fail"
            && fp != "Ignore"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "failurePolicy"),
                fp,
                &["Fail", "Ignore"],
            ));
        }
        if let Some(mp) = ck.str(h, "matchPolicy", &hp)
            && mp != "Equivalent"
            && mp != "Exact"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "matchPolicy"),
                mp,
                &["Equivalent", "Exact"],
            ));
        }
        match ck.str(h, "sideEffects", &hp) {
            None => ck.push(FieldError::required(
                child(&hp, "sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(s) if s != "None" && s != "NoneOnDryRun" => {
                ck.push(FieldError::not_supported(
                    child(&hp, "sideEffects"),
                    s,
                    &["None", "NoneOnDryRun"],
                ));
            }
            _ => {}
        }
        if let Some(t) = ck.i32(h, "timeoutSeconds", &hp)
            && !(1..=30).contains(&t)
        {
            ck.push(FieldError::invalid(
                child(&hp, "timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        for s in ["namespaceSelector", "objectSelector"] {
            if let Some(sel) = ck.obj(h, s, &hp) {
                validate_label_selector(ck, sel, &child(&hp, s));
            }
        }
        if mutating
            && let Some(rp) = ck.str(h, "reinvocationPolicy", &hp)
            && rp != "IfNeeded"
            && rp != "Never"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "reinvocationPolicy"),
                rp,
                &["IfNeeded", "Never"],
            ));
        }
        let ccp = child(&hp, "clientConfig");
        let cc = sub(ck, h, "clientConfig", &hp);
        let url = ck.str(cc, "url", &ccp);
        let svc = ck.obj(cc, "service", &ccp);
        match (url, svc) {
            (Some(u), None) => {
                for e in webhook::url(u, &child(&ccp, "url")) {
                    ck.push(e);
                }
            }
            (None, Some(s)) => {
                let at = child(&ccp, "service");
                let svc = webhook::Service {
                    name: ck.string(s, "name", &at),
                    namespace: ck.string(s, "namespace", &at),
                    port: ck.i32(s, "port", &at).unwrap_or(443),
                    path: ck.str(s, "path", &at),
                };
                for e in webhook::service(&svc, &at) {
                    ck.push(e);
                }
            }
            _ => ck.push(FieldError::required(
                &ccp,
                "exactly one of url or service is required",
            )),
        }
        let arvp = child(&hp, "admissionReviewVersions");
        let versions = ck.str_list(h, "admissionReviewVersions", &hp);
        if versions.is_empty() {
            ck.push(FieldError::required(
                &arvp,
                "must specify one of v1, v1beta1",
            ));
        } else {
            let mut seen_v = BTreeSet::new();
            let mut accepted = false;
            for (vi, v) in versions.iter().enumerate() {
                if !seen_v.insert(*v) {
                    ck.push(FieldError::invalid(
                        index(&arvp, vi),
                        *v,
                        "duplicate version",
                    ));
                    continue;
                }
                ck.extend(&index(&arvp, vi), v, names::is_dns1035_label(v));
                accepted |= *v == "v1" || *v == "v1beta1";
            }
            if !accepted {
                ck.push(FieldError::invalid(
                    &arvp,
                    Value::from(versions.clone()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    }
}

pub(crate) fn validating_webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    webhooks(ck, root, old, false);
}

pub(crate) fn mutating_webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    webhooks(ck, root, old, true);
}
