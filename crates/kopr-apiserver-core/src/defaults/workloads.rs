//! kube 1.32 defaults of ReplicationControllers beyond replicas (selector
//! and labels from the template's labels) and of CronJob job templates
//! (only the pod template and pod-failure-policy pattern defaults: kube's
//! `SetDefaults_Job` applies to Jobs, not to job templates).

use super::{Obj, default_template_in, existing_obj, items_mut, obj_mut, set_str};
use serde_json::{Map, Value};

fn is_empty_map(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_none_or(Map::is_empty)
}

/// The selector and labels part of `SetDefaults_ReplicationController`.
pub(super) fn rc_selector_and_labels(root: &mut Obj) {
    let labels = root
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    let Some(labels) = labels else { return };
    if let Some(spec) = existing_obj(root, "spec")
        && is_empty_map(spec.get("selector"))
    {
        spec.insert("selector".into(), labels.clone());
    }
    if let Some(meta) = obj_mut(root, "metadata")
        && is_empty_map(meta.get("labels"))
    {
        meta.insert("labels".into(), labels);
    }
}

/// The defaults kube applies inside a CronJob's `jobTemplate.spec`.
pub(super) fn job_template_spec(js: &mut Obj) {
    if let Some(pfp) = existing_obj(js, "podFailurePolicy") {
        for rule in items_mut(pfp, "rules") {
            for pat in items_mut(rule, "onPodConditions") {
                set_str(pat, "status", "True");
            }
        }
    }
    default_template_in(js);
}
