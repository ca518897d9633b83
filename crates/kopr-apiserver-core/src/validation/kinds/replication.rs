//! Validation of the pod-template holders without their own group rules:
//! core/v1 ReplicationControllers and PodTemplates, and apps/v1
//! ControllerRevisions.

#[allow(unused_imports)]
use super::*;

/// ReplicationController (`ValidateReplicationController[Update]`).
pub(crate) fn replication_controller(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    nonneg_i32(ck, spec, "minReadySeconds", sp);
    let selector = ck.str_map(spec, "selector", sp);
    if selector.is_empty() {
        ck.push(FieldError::required("spec.selector", ""));
    }
    nonneg_i32(ck, spec, "replicas", sp);
    let Some(tmpl) = ck.obj(spec, "template", sp) else {
        ck.push(FieldError::required("spec.template", ""));
        return;
    };
    let labels = tmpl
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let matches = selector.iter().all(|(k, v)| {
        labels
            .and_then(|l| l.get(*k))
            .and_then(Value::as_str)
            .is_some_and(|lv| lv == *v)
    });
    if !selector.is_empty() && !matches {
        ck.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels_repr(labels),
            "`selector` does not match template `labels`",
        ));
    }
    validate_pod_template_spec(ck, tmpl, "spec.template");
    restart_policy_in(ck, tmpl, &["Always"]);
    no_active_deadline(ck, tmpl, "ReplicationController");
}

/// PodTemplate (`ValidatePodTemplate[Update]`).
pub(crate) fn pod_template(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let tmpl = sub(ck, root, "template", "");
    validate_pod_template_spec(ck, tmpl, "template");
}

/// Go's `%#v` of the `runtime.Object` kube holds for a revision's data.
fn revision_data_repr(data: Option<&Value>) -> Value {
    match data {
        None | Some(Value::Null) => go_repr("<nil>"),
        Some(v) => {
            let raw = v.to_string();
            let bytes: Vec<String> = raw.bytes().map(|b| format!("0x{b:x}")).collect();
            go_repr(format!(
                "runtime.Unknown{{TypeMeta:runtime.TypeMeta{{APIVersion:\"\", Kind:\"\"}}, Raw:[]uint8{{{}}}, ContentEncoding:\"\", ContentType:\"\"}}",
                bytes.join(", ")
            ))
        }
    }
}

/// ControllerRevision (`ValidateControllerRevision[Update]`).
pub(crate) fn controller_revision(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, true);
    let data = root.get("data").filter(|v| !v.is_null());
    if data.is_none() {
        ck.push(FieldError::required("data", "data is mandatory"));
    }
    nonneg(ck, root, "revision", "");
    if let Some(o) = old {
        let od = o.get("data").filter(|v| !v.is_null());
        if data != od {
            ck.push(FieldError::invalid(
                "data",
                revision_data_repr(data),
                FIELD_IMMUTABLE,
            ));
        }
    }
}
