//! The immutability rules of pod updates (ValidatePodUpdate's spec part), and
//! the renderings kube's messages use.

#[allow(unused_imports)]
use super::*;

/// Fields a pod update may change, as listed in kube's error message.
pub(super) const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The pod-spec part of ValidatePodUpdate (after metadata/spec validation).
pub fn validate_pod_spec_update(ck: &mut Checker, new: &Obj, old: &Obj) {
    let empty = Obj::new();
    let ns = new.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let os = old.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    if !same_container_counts(ck, ns, os) || !active_deadline_update(ck, ns, os) {
        return;
    }
    tolerations_update(ck, ns, os);
    scheduling_gates_update(ck, ns, os);
    if ns == os {
        return;
    }
    let munged = with_mutable_fields_of(ns, os);
    if &munged != os {
        let diff = spec_diff(os, &munged);
        ck.push(FieldError::forbidden(
            "spec",
            format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{diff}"
            ),
        ));
    }
}

/// Containers and init containers may not be added or removed; false (after
/// reporting it) if they were.
fn same_container_counts(ck: &mut Checker, ns: &Obj, os: &Obj) -> bool {
    for k in ["containers", "initContainers"] {
        let nl = ns.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        let ol = os.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        if nl != ol {
            ck.push(FieldError::forbidden(
                child("spec", k),
                "pod updates may not add or remove containers",
            ));
            return false;
        }
    }
    true
}

/// `activeDeadlineSeconds` may only be lowered (or set); false if the update
/// must stop at its error.
fn active_deadline_update(ck: &mut Checker, ns: &Obj, os: &Obj) -> bool {
    let mut scratch = Checker::default();
    let new_ads = scratch.i64(ns, "activeDeadlineSeconds", "spec");
    let old_ads = scratch.i64(os, "activeDeadlineSeconds", "spec");
    match (new_ads, old_ads) {
        (Some(n), _) if !(0..=i32::MAX as i64).contains(&n) => {
            ck.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                names::inclusive_range_error(0, i32::MAX as i64),
            ));
            return false;
        }
        (Some(n), Some(o)) if o < n => {
            ck.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                "must be less than or equal to previous value",
            ));
            return false;
        }
        (None, Some(_)) => ck.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    true
}

/// A toleration without its `tolerationSeconds` (the part that may change).
fn without_toleration_seconds(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("tolerationSeconds");
    }
    v
}

/// Tolerations: existing ones may only change tolerationSeconds.
fn tolerations_update(ck: &mut Checker, ns: &Obj, os: &Obj) {
    let new_tol: Vec<Value> = ns
        .get("tolerations")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(without_toleration_seconds).collect())
        .unwrap_or_default();
    if let Some(old_tol) = os.get("tolerations").and_then(Value::as_array) {
        for t in old_tol {
            if !new_tol.contains(&without_toleration_seconds(t)) {
                ck.push(FieldError::forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                ));
                break;
            }
        }
    }
}

/// Scheduling gates: only deletions.
fn scheduling_gates_update(ck: &mut Checker, ns: &Obj, os: &Obj) {
    let Some(ng) = ns.get("schedulingGates").and_then(Value::as_array) else {
        return;
    };
    let og: Vec<&str> = os
        .get("schedulingGates")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|g| g.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    for (i, g) in ng.iter().enumerate() {
        let n = g.get("name").and_then(Value::as_str).unwrap_or("");
        if !og.contains(&n) {
            ck.push(FieldError::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                format!("only deletion is allowed, but found new scheduling gate '{n}'"),
            ));
        }
    }
}

/// Sets (or removes) `k` of `munged` as the old spec has it.
fn take_old(munged: &mut Obj, os: &Obj, k: &str) {
    match os.get(k) {
        Some(v) => {
            munged.insert(k.into(), v.clone());
        }
        None => {
            munged.remove(k);
        }
    }
}

/// The new spec with the fields an update may change put back to their old
/// values, to compare the rest with the old spec.
fn with_mutable_fields_of(ns: &Obj, os: &Obj) -> Obj {
    let mut munged = ns.clone();
    for k in ["containers", "initContainers"] {
        if let (Some(Value::Array(nc)), Some(Value::Array(oc))) = (munged.get_mut(k), os.get(k)) {
            for (n, o) in nc.iter_mut().zip(oc) {
                if let (Some(n), Some(o)) = (n.as_object_mut(), o.as_object()) {
                    take_old(n, o, "image");
                }
            }
        }
    }
    for k in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        take_old(&mut munged, os, k);
    }
    let old_tgp = os
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_tgp.is_some_and(|t| t < 0)
        && munged
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(1)
        && let Some(v) = os.get("terminationGracePeriodSeconds")
    {
        munged.insert("terminationGracePeriodSeconds".into(), v.clone());
    }
    if os
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        // Gated pods may add node selector entries / change node affinity.
        take_old(&mut munged, os, "nodeSelector");
    }
    munged
}

/// A short textual diff of two specs (kube prints a `cmp.Diff` of Go
/// structs, which cannot be reproduced exactly).
pub(super) fn spec_diff(old: &Obj, new: &Obj) -> String {
    let mut out = String::from("  core.PodSpec{\n");
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for k in keys {
        let (o, n) = (old.get(k), new.get(k));
        if o != n {
            if let Some(o) = o {
                out.push_str(&format!("- \t{k}: {o},\n"));
            }
            if let Some(n) = n {
                out.push_str(&format!("+ \t{k}: {n},\n"));
            }
        }
    }
    out.push_str("  }\n");
    out
}

/// Go `%#v`-like rendering of a template's labels map (nil when absent).
pub fn labels_repr(labels: Option<&Obj>) -> Value {
    match labels {
        None => go_repr("map[string]string(nil)"),
        Some(m) => Value::Object(m.clone()),
    }
}
