//! Validation of apps/v1 kinds: Deployment, ReplicaSet, DaemonSet (with its
//! update strategy), StatefulSet.

#[allow(unused_imports)]
use super::*;

// -------------------------------------------------------------------- apps

pub(super) fn int_or_percent(ck: &mut Checker, o: &Obj, k: &str, path: &str) -> Option<i64> {
    let fp = child(path, k);
    match o.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => {
            let v = n.as_i64().unwrap_or(0);
            if v < 0 {
                ck.push(FieldError::invalid(
                    &fp,
                    v,
                    "must be greater than or equal to 0",
                ));
            }
            Some(v)
        }
        Some(Value::String(s)) => {
            let errs = names::is_valid_percent(s);
            if !errs.is_empty() {
                for m in errs {
                    ck.push(FieldError::invalid(&fp, s.as_str(), m));
                }
                return Some(0);
            }
            let v: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            if v > 100 {
                ck.push(FieldError::invalid(
                    &fp,
                    s.as_str(),
                    "must not be greater than 100%",
                ));
            }
            Some(v)
        }
        Some(other) => {
            ck.push(FieldError::type_invalid(
                &fp,
                other.clone(),
                "int or string",
            ));
            None
        }
    }
}

pub(super) fn rs_like_spec(ck: &mut Checker, spec: &Obj, kind: &str, selector_word: &str) {
    let sp = "spec";
    nonneg_i32(ck, spec, "replicas", sp);
    if kind != "Deployment" {
        nonneg_i32(ck, spec, "minReadySeconds", sp);
    }
    let sel = ck.obj(spec, "selector", sp);
    let mut usable = false;
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            usable = validate_label_selector(ck, s, "spec.selector");
            if selector_is_empty(s) {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    format!("empty selector is invalid for {selector_word}"),
                ));
            }
        }
    }
    let tmpl = sub(ck, spec, "template", sp);
    if let Some(s) = sel {
        if usable {
            check_template_match(ck, s, tmpl, "spec.template");
        } else {
            ck.push(FieldError::invalid(
                "spec.selector",
                selector_repr(Some(s)),
                "invalid label selector",
            ));
        }
    }
    if sel.is_none() || usable {
        validate_pod_template_spec(ck, tmpl, "spec.template");
        restart_policy_in(ck, tmpl, &["Always"]);
        no_active_deadline(ck, tmpl, kind);
    }
}

pub(super) fn selector_immutable(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    let Some(o) = old else { return };
    let ns = root.get("spec").and_then(|s| s.get("selector"));
    let os = o.get("spec").and_then(|s| s.get("selector"));
    if norm(ns) != norm(os) {
        ck.push(FieldError::invalid(
            "spec.selector",
            selector_repr(ns.and_then(Value::as_object)),
            FIELD_IMMUTABLE,
        ));
    }
}

pub(crate) fn deployment(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    rs_like_spec(ck, spec, "ReplicaSet", "deployment");
    // Strategy.
    let st = sub(ck, spec, "strategy", "spec");
    let ty = ck.string(st, "type", "spec.strategy");
    match ty {
        "Recreate" => {
            if ck.obj(st, "rollingUpdate", "spec.strategy").is_some() {
                ck.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match ck.obj(st, "rollingUpdate", "spec.strategy") {
            None => ck.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let rp = "spec.strategy.rollingUpdate";
                let mu = int_or_percent(ck, ru, "maxUnavailable", rp).unwrap_or(0);
                let ms = int_or_percent(ck, ru, "maxSurge", rp).unwrap_or(0);
                if mu == 0 && ms == 0 {
                    ck.push(FieldError::invalid(
                        "spec.strategy.rollingUpdate.maxUnavailable",
                        ru.get("maxUnavailable").cloned().unwrap_or(Value::from(0)),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
            }
        },
        other => ck.push(FieldError::not_supported(
            "spec.strategy",
            go_repr(format!(
                "apps.DeploymentStrategy{{Type:{}}}",
                go_quote(other)
            )),
            &["Recreate", "RollingUpdate"],
        )),
    }
    let mrs = nonneg_i32(ck, spec, "minReadySeconds", "spec");
    nonneg(ck, spec, "revisionHistoryLimit", "spec");
    if let Some(pds) = ck.i32(spec, "progressDeadlineSeconds", "spec") {
        if pds < 0 {
            ck.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pds,
                "must be greater than or equal to 0",
            ));
        }
        if pds <= mrs {
            ck.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    ck.bool(spec, "paused", "spec");
    selector_immutable(ck, root, old);
}

pub(crate) fn replica_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    rs_like_spec(ck, spec, "ReplicaSet", "deployment");
    selector_immutable(ck, root, old);
}

pub(crate) fn daemon_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    // kube runs the create validation (metadata included) on updates too.
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, true);
    let spec = sub(ck, root, "spec", "");
    let sel = ck.obj(spec, "selector", "spec");
    let tmpl = sub(ck, spec, "template", "spec");
    let usable = match sel {
        Some(s) => validate_label_selector(ck, s, "spec.selector"),
        None => true,
    };
    if usable {
        // A missing selector selects nothing, so it never matches the template.
        let matches = match sel {
            Some(s) => selector_is_empty(s) || selector_matches(s, template_labels(tmpl)),
            None => false,
        };
        if !matches {
            ck.push(FieldError::invalid(
                "spec.template.metadata.labels",
                labels_repr(template_labels(tmpl)),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(s) = sel
        && selector_is_empty(s)
    {
        ck.push(FieldError::invalid(
            "spec.selector",
            selector_repr(Some(s)),
            "empty selector is invalid for daemonset",
        ));
    }
    validate_pod_template_spec(ck, tmpl, "spec.template");
    restart_policy_in(ck, tmpl, &["Always"]);
    no_active_deadline(ck, tmpl, "DaemonSet");
    nonneg_i32(ck, spec, "minReadySeconds", "spec");
    daemon_set_update_strategy(ck, spec);
    nonneg(ck, spec, "revisionHistoryLimit", "spec");
    selector_immutable(ck, root, old);
}

fn template_labels(tmpl: &Obj) -> Option<&Obj> {
    tmpl.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
}

/// kube's `ValidateDaemonSetUpdateStrategy` (on the defaulted strategy).
fn daemon_set_update_strategy(ck: &mut Checker, spec: &Obj) {
    let p = "spec.updateStrategy";
    let us = sub(ck, spec, "updateStrategy", "spec");
    let ty = ck.string(us, "type", p);
    let ru = ck.obj(us, "rollingUpdate", p);
    match ty {
        "OnDelete" => {}
        "RollingUpdate" => match ru {
            None => ck.push(FieldError::required(child(p, "rollingUpdate"), "")),
            Some(ru) => {
                let rp = child(p, "rollingUpdate");
                let zero = super::policy::IntOrStr::Int(0);
                let mu = super::policy::int_or_str(ck, ru, "maxUnavailable", &rp).unwrap_or(zero);
                let ms = super::policy::int_or_str(ck, ru, "maxSurge", &rp).unwrap_or(zero);
                let mup = child(&rp, "maxUnavailable");
                let msp = child(&rp, "maxSurge");
                super::policy::positive_int_or_percent(ck, mu, &mup);
                super::policy::positive_int_or_percent(ck, ms, &msp);
                super::policy::not_more_than_100_percent(ck, mu, &mup);
                super::policy::not_more_than_100_percent(ck, ms, &msp);
                match (mu.value() != 0, ms.value() != 0) {
                    (true, true) => ck.push(FieldError::invalid(
                        msp,
                        ms.repr(),
                        "may not be set when maxUnavailable is non-zero",
                    )),
                    (false, false) => {
                        ck.push(FieldError::required(mup, "cannot be 0 when maxSurge is 0"))
                    }
                    _ => {}
                }
            }
        },
        other => {
            let ru_repr = if ru.is_some() {
                "(*apps.RollingUpdateDaemonSet)(0xc000000000)"
            } else {
                "(*apps.RollingUpdateDaemonSet)(nil)"
            };
            ck.push(FieldError::not_supported(
                p,
                go_repr(format!(
                    "apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:{ru_repr}}}",
                    go_quote(other)
                )),
                &["RollingUpdate", "OnDelete"],
            ));
        }
    }
}

pub(crate) fn stateful_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let pmp = ck.string(spec, "podManagementPolicy", sp);
    match pmp {
        "" => ck.push(FieldError::required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => ck.push(FieldError::invalid(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let us = sub(ck, spec, "updateStrategy", sp);
    let ust = ck.string(us, "type", "spec.updateStrategy");
    let ru = ck.obj(us, "rollingUpdate", "spec.updateStrategy");
    match ust {
        "" => ck.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(r) = ru {
                ck.push(FieldError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    Value::Object(r.clone()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = ru {
                nonneg_i32(ck, r, "partition", "spec.updateStrategy.rollingUpdate");
                if let Some(mu) =
                    int_or_percent(ck, r, "maxUnavailable", "spec.updateStrategy.rollingUpdate")
                    && mu == 0
                {
                    ck.push(FieldError::invalid(
                        "spec.updateStrategy.rollingUpdate.maxUnavailable",
                        r.get("maxUnavailable").cloned().unwrap_or(Value::Null),
                        "cannot be 0",
                    ));
                }
            }
        }
        other => ck.push(FieldError::invalid(
            "spec.updateStrategy",
            Value::Object(us.clone()),
            {
                let _ = other;
                "must be 'RollingUpdate' or 'OnDelete'"
            },
        )),
    }
    if let Some(p) = ck.obj(spec, "persistentVolumeClaimRetentionPolicy", sp) {
        for f in ["whenDeleted", "whenScaled"] {
            let v = ck.string(p, f, "spec.persistentVolumeClaimRetentionPolicy");
            if v != "Retain" && v != "Delete" {
                ck.push(FieldError::not_supported(
                    child("spec.persistentVolumeClaimRetentionPolicy", f),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonneg_i32(ck, spec, "replicas", sp);
    nonneg_i32(ck, spec, "minReadySeconds", sp);
    if let Some(o) = ck.obj(spec, "ordinals", sp) {
        let s = ck.i32(o, "start", "spec.ordinals").unwrap_or(0);
        if s < 0 {
            ck.push(FieldError::invalid(
                "spec.ordinals.start",
                s,
                "must be greater than or equal to 0",
            ));
        }
    }
    let sel = ck.obj(spec, "selector", sp);
    let tmpl = sub(ck, spec, "template", sp);
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            let usable = validate_label_selector(ck, s, "spec.selector");
            if selector_is_empty(s) {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    "empty selector is invalid for statefulset",
                ));
            }
            if usable {
                check_template_match(ck, s, tmpl, "spec.template");
            } else {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    "",
                ));
            }
        }
    }
    // kube only checks template labels/annotations for StatefulSets.
    let tmeta = tmpl
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let labels = ck.str_map(tmeta, "labels", "spec.template.metadata");
    validate_labels(ck, &labels, "spec.template.labels");
    let ann = ck.str_map(tmeta, "annotations", "spec.template.metadata");
    crate::validation::metadata::validate_annotations(ck, &ann, "spec.template.annotations");
    restart_policy_in(ck, tmpl, &["Always"]);
    no_active_deadline(ck, tmpl, "StatefulSet");
    if let Some(o) = old {
        let mut n = spec.clone();
        let os = o
            .get("spec")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for k in [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        ] {
            match os.get(k) {
                Some(v) => n.insert(k.into(), v.clone()),
                None => n.remove(k),
            };
        }
        if n != os {
            ck.push(FieldError::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
}

/// A pod template's `restartPolicy` when it is one of `allowed`; otherwise
/// a NotSupported error and `None`.
pub(super) fn restart_policy_in<'a>(
    ck: &mut Checker,
    tmpl: &'a Obj,
    allowed: &[&str],
) -> Option<&'a str> {
    let rp = tmpl
        .get("spec")
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if allowed.contains(&rp) {
        return Some(rp);
    }
    ck.push(FieldError::not_supported(
        "spec.template.spec.restartPolicy",
        rp,
        allowed,
    ));
    None
}

/// Workload pods run until replaced: a template may not set
/// `activeDeadlineSeconds`.
pub(super) fn no_active_deadline(ck: &mut Checker, tmpl: &Obj, kind: &str) {
    let deadline = tmpl
        .get("spec")
        .and_then(|s| s.get("activeDeadlineSeconds"));
    if !matches!(deadline, None | Some(Value::Null)) {
        ck.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}
