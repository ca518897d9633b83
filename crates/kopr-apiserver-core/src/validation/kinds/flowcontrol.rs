//! Validation of flowcontrol.apiserver.k8s.io/v1 FlowSchemas and
//! PriorityLevelConfigurations (API Priority and Fairness), as
//! kube-apiserver 1.32 does it.

use super::meta_shapes::{OnUpdate, core_meta};
#[allow(unused_imports)]
use super::*;

const MAX_MATCHING_PRECEDENCE: i64 = 10000;
const MAX_QUEUES: i64 = 10_000_000;
const MAX_HASH_BITS: i64 = 60;
const SUPPORTED_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

fn has_wildcard(list: &[&str]) -> bool {
    list.contains(&"*")
}

// -------------------------------------------------------------- flowschema

fn sa_subject(ck: &mut Checker, subj: &Obj, path: &str) {
    let Some(sa) = ck.obj(subj, "serviceAccount", path) else {
        ck.push(FieldError::required(
            child(path, "serviceAccount"),
            "serviceAccount is required when subject kind is 'ServiceAccount'",
        ));
        return;
    };
    let sp = child(path, "serviceAccount");
    let name = ck.string(sa, "name", &sp);
    if name.is_empty() {
        ck.push(FieldError::required(child(&sp, "name"), ""));
    } else if name != "*" {
        ck.extend(
            &child(&sp, "name"),
            name,
            names::name_is_dns_subdomain(name, false),
        );
    }
    let ns = ck.string(sa, "namespace", &sp);
    if ns.is_empty() {
        ck.push(FieldError::required(
            child(&sp, "namespace"),
            "must specify namespace for service account",
        ));
    } else {
        ck.extend(
            &child(&sp, "namespace"),
            ns,
            names::name_is_dns_label(ns, false),
        );
    }
}

fn named_subject(ck: &mut Checker, subj: &Obj, key: &str, path: &str) {
    let Some(s) = ck.obj(subj, key, path) else {
        ck.push(FieldError::required(
            child(path, key),
            format!(
                "{key} is required when subject kind is '{}'",
                if key == "user" { "User" } else { "Group" }
            ),
        ));
        return;
    };
    let kp = child(path, key);
    if ck.string(s, "name", &kp).is_empty() {
        ck.push(FieldError::required(child(&kp, "name"), ""));
    }
}

fn subject(ck: &mut Checker, subj: &Obj, path: &str) {
    let present = |k: &str| !matches!(subj.get(k), None | Some(Value::Null));
    let forbid = |ck: &mut Checker, k: &str, kind: &str| {
        if present(k) {
            ck.push(FieldError::forbidden(
                child(path, k),
                format!("{k} is forbidden when subject kind is not '{kind}'"),
            ));
        }
    };
    match ck.string(subj, "kind", path) {
        "ServiceAccount" => {
            sa_subject(ck, subj, path);
            forbid(ck, "user", "User");
            forbid(ck, "group", "Group");
        }
        "User" => {
            named_subject(ck, subj, "user", path);
            forbid(ck, "serviceAccount", "ServiceAccount");
            forbid(ck, "group", "Group");
        }
        "Group" => {
            named_subject(ck, subj, "group", path);
            forbid(ck, "serviceAccount", "ServiceAccount");
            forbid(ck, "user", "User");
        }
        other => ck.push(FieldError::not_supported(
            child(path, "kind"),
            other,
            &["Group", "ServiceAccount", "User"],
        )),
    }
}

fn verbs(ck: &mut Checker, verbs: &[&str], path: &str) {
    let vp = child(path, "verbs");
    if verbs.is_empty() {
        ck.push(FieldError::required(
            vp,
            "verbs must contain at least one value",
        ));
    } else if has_wildcard(verbs) {
        if verbs.len() > 1 {
            ck.push(FieldError::invalid(
                vp,
                Value::from(verbs.to_vec()),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if verbs.iter().any(|v| !SUPPORTED_VERBS.contains(v)) {
        ck.push(FieldError::not_supported(
            vp,
            Value::from(verbs.to_vec()),
            SUPPORTED_VERBS,
        ));
    }
}

/// `ValidateNonResourceURLPath`.
fn non_resource_url_error(p: &str) -> Option<&'static str> {
    if p.is_empty() {
        return Some("must not be empty");
    }
    if p == "/" {
        return None;
    }
    if !p.starts_with('/') {
        return Some("must start with slash");
    }
    if p.contains(' ') {
        return Some("must not contain white-space");
    }
    if p.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = p.matches('*').count();
    if stars > 1 || (stars == 1 && !p.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn resource_rule(ck: &mut Checker, r: &Obj, path: &str) {
    let v = ck.str_list(r, "verbs", path);
    verbs(ck, &v, path);
    for (k, none_msg, many_msg) in [
        (
            "apiGroups",
            "resource rules must supply at least one api group",
            "if '*' is present, must not specify other api groups",
        ),
        (
            "resources",
            "resource rules must supply at least one resource",
            "if '*' is present, must not specify other resources",
        ),
    ] {
        let list = ck.str_list(r, k, path);
        if list.is_empty() {
            ck.push(FieldError::required(child(path, k), none_msg));
        } else if list.len() > 1 && has_wildcard(&list) {
            ck.push(FieldError::invalid(
                child(path, k),
                Value::from(list.clone()),
                many_msg,
            ));
        }
    }
    let cluster_scope = ck.bool(r, "clusterScope", path).unwrap_or(false);
    let ns = ck.str_list(r, "namespaces", path);
    let np = child(path, "namespaces");
    if ns.is_empty() && !cluster_scope {
        ck.push(FieldError::required(
            np,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(&ns) {
        if ns.len() > 1 {
            ck.push(FieldError::invalid(
                np,
                Value::from(ns.clone()),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, n) in ns.iter().enumerate() {
            for m in names::name_is_dns_label(n, false) {
                ck.push(FieldError::invalid(
                    index(&np, i),
                    *n,
                    format!("{NS_ERR_INTRO}{m}"),
                ));
            }
        }
    }
}

fn non_resource_rule(ck: &mut Checker, r: &Obj, path: &str) {
    let v = ck.str_list(r, "verbs", path);
    verbs(ck, &v, path);
    let urls = ck.str_list(r, "nonResourceURLs", path);
    let up = child(path, "nonResourceURLs");
    if urls.is_empty() {
        ck.push(FieldError::required(
            up,
            "nonResourceURLs must contain at least one value",
        ));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            ck.push(FieldError::invalid(
                up,
                Value::from(urls.clone()),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, u) in urls.iter().enumerate() {
            if let Some(m) = non_resource_url_error(u) {
                ck.push(FieldError::invalid(index(&up, i), *u, m));
            }
        }
    }
}

fn policy_rules(ck: &mut Checker, rule: &Obj, path: &str) {
    let sp = child(path, "subjects");
    let subjects = ck.obj_items(rule, "subjects", path);
    if subjects.is_empty() {
        ck.push(FieldError::required(
            &sp,
            "subjects must contain at least one value",
        ));
    }
    for (i, s) in subjects {
        subject(ck, s, &index(&sp, i));
    }
    let rr = ck.obj_items(rule, "resourceRules", path);
    let nr = ck.obj_items(rule, "nonResourceRules", path);
    if rr.is_empty() && nr.is_empty() {
        ck.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in rr {
        resource_rule(ck, r, &index(&child(path, "resourceRules"), i));
    }
    for (i, r) in nr {
        non_resource_rule(ck, r, &index(&child(path, "nonResourceRules"), i));
    }
}

/// flowcontrol.apiserver.k8s.io/v1 FlowSchema.
pub(crate) fn flow_schema(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let prec = ck.i32(spec, "matchingPrecedence", sp).unwrap_or(0);
    let pp = "spec.matchingPrecedence";
    if prec <= 0 {
        ck.push(FieldError::invalid(pp, prec, "must be a positive value"));
    }
    if prec > MAX_MATCHING_PRECEDENCE {
        ck.push(FieldError::invalid(
            pp,
            prec,
            format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if prec == 1 && name != "exempt" {
        ck.push(FieldError::invalid(
            pp,
            prec,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(dm) = ck.obj(spec, "distinguisherMethod", sp) {
        let t = ck.string(dm, "type", "spec.distinguisherMethod");
        if t != "ByNamespace" && t != "ByUser" {
            ck.push(FieldError::not_supported(
                "spec.distinguisherMethod.type",
                go_repr(format!(
                    "flowcontrol.FlowDistinguisherMethod{{Type:{}}}",
                    go_quote(t)
                )),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let plc = sub(ck, spec, "priorityLevelConfiguration", sp);
    let plc_name = ck.string(plc, "name", "spec.priorityLevelConfiguration");
    let np = "spec.priorityLevelConfiguration.name";
    if plc_name.is_empty() {
        ck.push(FieldError::required(np, "must reference a priority level"));
    } else {
        ck.extend(np, plc_name, names::name_is_dns_subdomain(plc_name, false));
    }
    for (i, r) in ck.obj_items(spec, "rules", sp) {
        policy_rules(ck, r, &index("spec.rules", i));
    }
}

// ------------------------------------------------- prioritylevelconfiguration

fn percent_0_100(ck: &mut Checker, o: &Obj, path: &str) {
    if let Some(p) = ck.i32(o, "lendablePercent", path)
        && !(0..=100).contains(&p)
    {
        ck.push(FieldError::invalid(
            child(path, "lendablePercent"),
            p,
            "must be between 0 and 100, inclusive",
        ));
    }
}

fn non_negative_shares(ck: &mut Checker, o: &Obj, path: &str) {
    if let Some(n) = ck.i32(o, "nominalConcurrencyShares", path)
        && n < 0
    {
        ck.push(FieldError::invalid(
            child(path, "nominalConcurrencyShares"),
            n,
            "must be a non-negative integer",
        ));
    }
}

/// `shufflesharding.RequiredEntropyBits`.
fn required_entropy_bits(deck: i64, hand: i64) -> i64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let bits = ((deck as f64).log2() * hand as f64).ceil() as i64;
    bits
}

fn queuing(ck: &mut Checker, q: &Obj, path: &str) {
    let positive = "must be positive";
    let qll = ck.i32(q, "queueLengthLimit", path).unwrap_or(0);
    if qll <= 0 {
        ck.push(FieldError::invalid(
            child(path, "queueLengthLimit"),
            qll,
            positive,
        ));
    }
    let queues = ck.i32(q, "queues", path).unwrap_or(0);
    if queues <= 0 {
        ck.push(FieldError::invalid(child(path, "queues"), queues, positive));
    } else if queues > MAX_QUEUES {
        ck.push(FieldError::invalid(
            child(path, "queues"),
            queues,
            format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = ck.i32(q, "handSize", path).unwrap_or(0);
    let hp = child(path, "handSize");
    if hand <= 0 {
        ck.push(FieldError::invalid(hp, hand, positive));
    } else if hand > queues {
        ck.push(FieldError::invalid(
            hp,
            hand,
            format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        ck.push(FieldError::invalid(
            hp,
            hand,
            format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
}

fn limit_response(ck: &mut Checker, lr: &Obj, path: &str) {
    let q = ck.obj(lr, "queuing", path);
    let qp = child(path, "queuing");
    match ck.string(lr, "type", path) {
        "Reject" => {
            if q.is_some() {
                ck.push(FieldError::forbidden(
                    qp,
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match q {
            None => ck.push(FieldError::required(
                qp,
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing(ck, q, &qp),
        },
        other => ck.push(FieldError::not_supported(
            child(path, "type"),
            other,
            &["Queue", "Reject"],
        )),
    }
}

fn limited(ck: &mut Checker, l: &Obj, path: &str) {
    non_negative_shares(ck, l, path);
    let lr = sub(ck, l, "limitResponse", path);
    limit_response(ck, lr, &child(path, "limitResponse"));
    percent_0_100(ck, l, path);
    if let Some(b) = ck.i32(l, "borrowingLimitPercent", path)
        && b < 0
    {
        ck.push(FieldError::invalid(
            child(path, "borrowingLimitPercent"),
            b,
            "if specified, must be a non-negative integer",
        ));
    }
}

/// flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration.
pub(crate) fn priority_level_configuration(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let ty = ck.string(spec, "type", sp);
    if (name == "exempt") != (ty == "Exempt") {
        ck.push(FieldError::invalid(
            "spec.type",
            ty,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    let lim = ck.obj(spec, "limited", sp);
    let ex = ck.obj(spec, "exempt", sp);
    match ty {
        "Exempt" => {
            if lim.is_some() {
                ck.push(FieldError::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(e) = ex {
                non_negative_shares(ck, e, "spec.exempt");
                percent_0_100(ck, e, "spec.exempt");
            }
        }
        "Limited" => {
            if ex.is_some() {
                ck.push(FieldError::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match lim {
                None => ck.push(FieldError::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(l) => limited(ck, l, "spec.limited"),
            }
        }
        other => ck.push(FieldError::not_supported(
            "spec.type",
            other,
            &["Exempt", "Limited"],
        )),
    }
}
