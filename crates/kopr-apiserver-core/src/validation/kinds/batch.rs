//! Validation of batch/v1 Jobs.

#[allow(unused_imports)]
use super::*;

// ------------------------------------------------------------------- batch

/// Job (`ValidateJob` on create, plus `ValidateJobUpdate` on update).
pub(crate) fn job(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let meta = sub(ck, root, "metadata", "");
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    let uid = meta.get("uid").and_then(Value::as_str).unwrap_or("");
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let manual = ck.bool(spec, "manualSelector", sp) == Some(true);
    let tmpl = sub(ck, spec, "template", sp);
    let tlabels = tmpl
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let sel = ck.obj(spec, "selector", sp);
    if old.is_none()
        && !manual
        && let (Some(tl), Some(s)) = (tlabels, sel)
    {
        job_generated_selector(ck, tl, s, name, uid);
    }
    for f in [
        "parallelism",
        "completions",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonneg_i32(ck, spec, f, sp);
    }
    for f in ["activeDeadlineSeconds", "ttlSecondsAfterFinished"] {
        nonneg(ck, spec, f, sp);
    }
    if let Some(cm) = ck.str(spec, "completionMode", sp) {
        job_completion_mode(ck, spec, cm, name);
    }
    if let Some(p) = ck.str(spec, "podReplacementPolicy", sp)
        && p != "TerminatingOrFailed"
        && p != "Failed"
    {
        ck.push(FieldError::not_supported(
            "spec.podReplacementPolicy",
            p,
            &["TerminatingOrFailed", "Failed"],
        ));
    }
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            if validate_label_selector(ck, s, "spec.selector") {
                check_template_match(ck, s, tmpl, "spec.template");
            }
        }
    }
    validate_pod_template_spec(ck, tmpl, "spec.template");
    let has_pfp = !matches!(spec.get("podFailurePolicy"), None | Some(Value::Null));
    let rp = restart_policy_in(ck, tmpl, &["OnFailure", "Never"]);
    if let Some(rp) = rp.filter(|rp| has_pfp && *rp != "Never") {
        ck.push(FieldError::invalid(
            "spec.template.spec.restartPolicy",
            rp,
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    ck.bool(spec, "suspend", sp);
    if let Some(o) = old {
        let os = o.get("spec").and_then(Value::as_object).unwrap_or(empty());
        job_spec_update(ck, spec, os);
    }
}

/// The labels and selector a new Job without `manualSelector` must have been
/// given by the generator (`validateGeneratedSelector`).
fn job_generated_selector(ck: &mut Checker, tl: &Obj, s: &Obj, name: &str, uid: &str) {
    if uid.is_empty() {
        ck.push(FieldError::required("metadata.uid", ""));
    }
    for (k, want) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
    ] {
        let fp = key("spec.template.metadata.labels", k);
        match tl.get(k).and_then(Value::as_str) {
            None => ck.push(FieldError::required(fp, format!("must be '{want}'"))),
            Some(v) if v != want => ck.push(FieldError::invalid(
                fp,
                Value::Object(tl.clone()),
                format!("must be '{want}'"),
            )),
            _ => {}
        }
    }
    let mut expected = Obj::new();
    expected.insert(
        "batch.kubernetes.io/controller-uid".into(),
        Value::String(uid.to_string()),
    );
    if !selector_matches(s, Some(&expected)) {
        ck.push(FieldError::invalid(
            "spec.selector",
            selector_repr(Some(s)),
            "`selector` not auto-generated",
        ));
    }
}

/// `spec.completionMode` and what Indexed mode requires of completions,
/// parallelism and the pods' host names.
fn job_completion_mode(ck: &mut Checker, spec: &Obj, cm: &str, name: &str) {
    if cm != "NonIndexed" && cm != "Indexed" {
        ck.push(FieldError::not_supported(
            "spec.completionMode",
            cm,
            &["NonIndexed", "Indexed"],
        ));
    }
    if cm != "Indexed" {
        return;
    }
    let completions = spec.get("completions").and_then(Value::as_i64);
    match completions {
        None => ck.push(FieldError::required(
            "spec.completions",
            "when completion mode is Indexed",
        )),
        Some(c) if c > 0 => {
            let host = format!("{name}-{}", c - 1);
            if !names::is_dns1123_label(&host).is_empty() {
                ck.push(FieldError::invalid(
                    "metadata.name",
                    name,
                    format!("will not able to create pod with invalid DNS label: {host}"),
                ));
            }
        }
        _ => {}
    }
    if let Some(p) = spec.get("parallelism").and_then(Value::as_i64)
        && p > 100_000
    {
        ck.push(FieldError::invalid(
            "spec.parallelism",
            p,
            "must be less than or equal to 100000 when completion mode is Indexed",
        ));
    }
}

/// The immutable parts of a Job's spec (`ValidateJobSpecUpdate`): `spec` is
/// the new spec, `os` the old one.
fn job_spec_update(ck: &mut Checker, spec: &Obj, os: &Obj) {
    let ns_sel = spec.get("selector");
    if norm(ns_sel) != norm(os.get("selector")) {
        ck.push(FieldError::invalid(
            "spec.selector",
            selector_repr(ns_sel.and_then(Value::as_object)),
            FIELD_IMMUTABLE,
        ));
    }
    for f in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex"] {
        if spec.get(f) != os.get(f) {
            let v = spec.get(f).cloned().unwrap_or(Value::Null);
            ck.push(FieldError::invalid(child("spec", f), v, FIELD_IMMUTABLE));
        }
    }
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if spec.get("completions") != os.get("completions") {
        let nc = spec.get("completions").cloned().unwrap_or(Value::Null);
        let same_as_par = spec.get("completions") == spec.get("parallelism");
        if !(indexed && same_as_par) {
            ck.push(FieldError::invalid("spec.completions", nc, FIELD_IMMUTABLE));
        }
    }
    job_template_update(ck, spec, os);
}

/// `spec.template` is immutable, except for the scheduling directives of a
/// suspended Job.
fn job_template_update(ck: &mut Checker, spec: &Obj, os: &Obj) {
    let suspended = os.get("suspend").and_then(Value::as_bool) == Some(true);
    let ot = os.get("template").cloned().unwrap_or(Value::Null);
    let nt = spec.get("template").cloned().unwrap_or(Value::Null);
    if nt == ot {
        return;
    }
    let mut nt2 = nt.clone();
    let mut ot2 = ot.clone();
    if suspended {
        // Scheduling directives may change while suspended.
        for t in [&mut nt2, &mut ot2] {
            if let Some(s) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for k in ["nodeSelector", "tolerations", "affinity", "schedulingGates"] {
                    s.remove(k);
                }
            }
            if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("labels");
                m.remove("annotations");
            }
        }
    }
    if nt2 != ot2 {
        ck.push(FieldError::invalid(
            "spec.template",
            go_repr(format!("core.PodTemplateSpec{}", nt)),
            FIELD_IMMUTABLE,
        ));
    }
}
