//! Pod templates as kube's Go types see them. kube compares templates as
//! typed structs (`apiequality.Semantic.DeepEqual`), where an absent
//! `resources` and `resources: {}` are the same value; stored JSON keeps
//! the difference. Here a template is put in its Go form (the JSON kube's
//! encoder writes for it: zero values written, nil and empty lists alike)
//! before it is compared, hashed or recorded, and the template patch that
//! DaemonSet and StatefulSet ControllerRevisions hold is built from it.

use serde_json::{Value, json};

use super::podutil;
use crate::gojson;

/// A pod template (`PodTemplateSpec`) as kube's Go encoder writes it, read
/// back as JSON (keys sorted, as Go writes a `map[string]interface{}`).
pub fn canonical(template: &Value) -> Value {
    gojson::pod_template_as_go_writes(template)
}

/// Whether two pod templates are the same value to kube's Go types.
pub fn equal(a: &Value, b: &Value) -> bool {
    a == b || canonical(a) == canonical(b)
}

/// The pod template of a workload (`spec.template`), `null` when missing.
pub fn of(workload: &Value) -> &Value {
    podutil::at(workload, "/spec/template").unwrap_or(&Value::Null)
}

/// The strategic merge patch that replaces a workload's pod template with
/// its current one (`getPatch` of kube's DaemonSet and StatefulSet
/// controllers, and kubectl's): `{"spec":{"template":{"$patch":"replace",
/// …}}}`.
pub fn replace_patch(workload: &Value) -> Value {
    let mut template = canonical(of(workload));
    if let Some(t) = template.as_object_mut() {
        t.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// The pod template a [`replace_patch`] carries (without the directive).
pub fn from_patch(patch: &Value) -> Option<Value> {
    let mut template = podutil::at(patch, "/spec/template")?.clone();
    template.as_object_mut()?.remove("$patch");
    Some(template)
}

/// The bytes kube's Go encoder writes for a JSON value (sorted keys, Go's
/// escapes), as a `RawExtension` holds them.
pub fn raw_bytes(v: &Value) -> Vec<u8> {
    gojson::to_vec(v)
}

/// The hash of a pod template (`controller.ComputeHash`), taken over its
/// Go form so that equal templates hash alike.
pub fn hash(template: &Value, collision_count: Option<i64>) -> String {
    podutil::template_hash(&canonical(template), collision_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(resources: Option<Value>) -> Value {
        let mut c = json!({"name": "c", "image": "nginx"});
        if let Some(r) = resources {
            c["resources"] = r;
        }
        json!({
            "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
            "spec": {"containers": [c]},
        })
    }

    #[test]
    fn empty_resources_equal_absent_ones() {
        let a = template(None);
        let b = template(Some(json!({})));
        assert_ne!(a, b);
        assert!(equal(&a, &b));
        assert_eq!(hash(&a, None), hash(&b, None));
        assert!(!equal(&a, &template(Some(json!({"limits": {"cpu": "1"}})))));
        let c = canonical(&a);
        assert_eq!(c["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(c["metadata"]["creationTimestamp"], Value::Null);
        assert!(c["metadata"].get("creationTimestamp").is_some());
    }

    #[test]
    fn the_patch_replaces_the_template() {
        let ds = json!({"spec": {"template": template(None)}});
        let patch = replace_patch(&ds);
        assert_eq!(patch["spec"]["template"]["$patch"], "replace");
        let raw = String::from_utf8(raw_bytes(&patch)).unwrap_or_default();
        assert!(raw.starts_with(r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx","name":"c","resources":{}}]"#), "{raw}");
        let back = from_patch(&patch).unwrap_or_default();
        assert!(equal(&back, of(&ds)));
    }
}
