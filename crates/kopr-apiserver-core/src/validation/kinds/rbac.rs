//! Validation of coordination.k8s.io Leases and of RBAC roles and bindings.

#[allow(unused_imports)]
use super::*;

// ------------------------------------------------------------ coordination

pub(crate) fn lease(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    match old {
        None => validate_object_meta(ck, root, true, names::name_is_dns_subdomain, false),
        Some(o) => validate_object_meta_update(ck, root, o),
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    if let Some(d) = ck.i32(spec, "leaseDurationSeconds", sp)
        && d <= 0
    {
        ck.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            d,
            "must be greater than 0",
        ));
    }
    if let Some(t) = ck.i32(spec, "leaseTransitions", sp)
        && t < 0
    {
        ck.push(FieldError::invalid(
            "spec.leaseTransitions",
            t,
            "must be greater than or equal to 0",
        ));
    }
    ck.str(spec, "holderIdentity", sp);
    ck.str(spec, "acquireTime", sp);
    ck.str(spec, "renewTime", sp);
    let strategy = ck.str(spec, "strategy", sp);
    if let Some(s) = strategy
        && s != "OldestEmulationVersion"
    {
        ck.push(FieldError::not_supported(
            "spec.strategy",
            s,
            &["OldestEmulationVersion"],
        ));
    }
    if let Some(p) = ck.str(spec, "preferredHolder", sp)
        && !p.is_empty()
        && strategy.is_none_or(str::is_empty)
    {
        ck.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
}

// -------------------------------------------------------------------- rbac

pub(super) fn policy_rules(ck: &mut Checker, root: &Obj, namespaced: bool) {
    for (i, r) in ck.obj_items(root, "rules", "") {
        let rp = index("rules", i);
        let verbs = ck.str_list(r, "verbs", &rp);
        if verbs.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = ck.str_list(r, "nonResourceURLs", &rp);
        let groups = ck.str_list(r, "apiGroups", &rp);
        let res = ck.str_list(r, "resources", &rp);
        let rn = ck.str_list(r, "resourceNames", &rp);
        if !urls.is_empty() {
            if namespaced {
                ck.push(FieldError::invalid(
                    child(&rp, "nonResourceURLs"),
                    Value::from(urls.clone()),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !groups.is_empty() || !res.is_empty() || !rn.is_empty() {
                ck.push(FieldError::invalid(
                    child(&rp, "nonResourceURLs"),
                    Value::from(urls.clone()),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if groups.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if res.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

pub(super) fn rbac_meta(ck: &mut Checker, root: &Obj, old: Option<&Obj>, namespaced: bool) {
    validate_object_meta(
        ck,
        root,
        namespaced,
        names::is_valid_path_segment_name,
        false,
    );
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
}

pub(crate) fn role(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    rbac_meta(ck, root, old, true);
    policy_rules(ck, root, true);
}

pub(crate) fn cluster_role(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    rbac_meta(ck, root, old, false);
    policy_rules(ck, root, false);
    if let Some(ar) = ck.obj(root, "aggregationRule", "") {
        let sels = ck.obj_items(ar, "clusterRoleSelectors", "aggregationRule");
        if sels.is_empty() {
            ck.push(FieldError::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, s) in sels {
            validate_label_selector(ck, s, &index("aggregationRule.clusterRoleSelectors", i));
        }
    }
}

pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

pub(super) fn binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>, namespaced: bool) {
    rbac_meta(ck, root, old, namespaced);
    let rr = sub(ck, root, "roleRef", "");
    let g = ck.string(rr, "apiGroup", "roleRef");
    if g != RBAC_GROUP {
        ck.push(FieldError::not_supported(
            "roleRef.apiGroup",
            g,
            &[RBAC_GROUP],
        ));
    }
    let kind = ck.string(rr, "kind", "roleRef");
    if namespaced {
        if kind != "Role" && kind != "ClusterRole" {
            ck.push(FieldError::not_supported(
                "roleRef.kind",
                kind,
                &["Role", "ClusterRole"],
            ));
        }
    } else if kind != "ClusterRole" {
        ck.push(FieldError::not_supported(
            "roleRef.kind",
            kind,
            &["ClusterRole"],
        ));
    }
    let name = ck.string(rr, "name", "roleRef");
    if name.is_empty() {
        ck.push(FieldError::required("roleRef.name", ""));
    } else {
        ck.extend(
            "roleRef.name",
            name,
            names::is_valid_path_segment_name(name, false),
        );
    }
    for (i, s) in ck.obj_items(root, "subjects", "") {
        let sp = index("subjects", i);
        let sname = ck.string(s, "name", &sp);
        if sname.is_empty() {
            ck.push(FieldError::required(child(&sp, "name"), ""));
        }
        let sg = ck.string(s, "apiGroup", &sp);
        let sns = ck.string(s, "namespace", &sp);
        match ck.string(s, "kind", &sp) {
            "ServiceAccount" => {
                if !sname.is_empty() {
                    ck.extend(
                        &child(&sp, "name"),
                        sname,
                        names::name_is_dns_subdomain(sname, false),
                    );
                }
                if !sg.is_empty() {
                    ck.push(FieldError::not_supported(child(&sp, "apiGroup"), sg, &[""]));
                }
                if !namespaced && sns.is_empty() {
                    ck.push(FieldError::required(child(&sp, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if sg != RBAC_GROUP {
                    ck.push(FieldError::not_supported(
                        child(&sp, "apiGroup"),
                        sg,
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => ck.push(FieldError::not_supported(
                child(&sp, "kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if let Some(o) = old {
        let orr = o
            .get("roleRef")
            .and_then(Value::as_object)
            .unwrap_or(empty());
        let f = |m: &Obj, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if ["apiGroup", "kind", "name"]
            .iter()
            .any(|k| f(rr, k) != f(orr, k))
        {
            ck.push(FieldError::invalid(
                "roleRef",
                go_repr(format!(
                    "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                    go_quote(&f(rr, "apiGroup")),
                    go_quote(&f(rr, "kind")),
                    go_quote(&f(rr, "name"))
                )),
                "cannot change roleRef",
            ));
        }
    }
}

pub(crate) fn role_binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    binding(ck, root, old, true);
}

pub(crate) fn cluster_role_binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    binding(ck, root, old, false);
}
