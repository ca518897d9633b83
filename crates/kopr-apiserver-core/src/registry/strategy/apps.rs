//! The strategy of apps/v1 DaemonSets: kube keeps a template generation
//! (`spec.templateGeneration` in its internal type, shown in apps/v1 as the
//! `deprecated.daemonset.template.generation` annotation): 1 on create
//! unless the object names a higher one, carried over on updates whatever
//! the client sends, and raised by one when the pod template changes. The
//! DaemonSet controller labels pods with it (`pod-template-generation`).

use serde_json::{Map, Value, json};

use super::Strategy;
use crate::object;

/// The annotation holding the template generation.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// DaemonSets.
#[derive(Debug, Default, Clone, Copy)]
pub struct DaemonSetStrategy;

fn generation_of(obj: &Value) -> Option<i64> {
    object::meta(obj)?
        .get("annotations")?
        .get(TEMPLATE_GENERATION)?
        .as_str()?
        .parse()
        .ok()
}

fn set_generation(meta: &mut Map<String, Value>, generation: i64) {
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if !ann.is_object() {
        *ann = json!({});
    }
    ann[TEMPLATE_GENERATION] = json!(generation.to_string());
}

/// The pod template after defaulting, in the Go form kube compares.
fn template_of(obj: &Value) -> Value {
    let mut obj = obj.clone();
    crate::defaults::apply(crate::defaults::by_kind::daemon_set, &mut obj);
    crate::gojson::pod_template_as_go_writes(obj.pointer("/spec/template").unwrap_or(&Value::Null))
}

impl Strategy for DaemonSetStrategy {
    builtin_admission!();

    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        let given = map
            .get("metadata")
            .map(|m| json!({"metadata": m}))
            .as_ref()
            .and_then(generation_of)
            .unwrap_or(0);
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            set_generation(meta, given.max(1));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) -> bool {
        if subresource.is_some() {
            return false;
        }
        let mut generation = generation_of(old).unwrap_or(0);
        if template_of(new) != template_of(old) {
            generation += 1;
        }
        if let Some(meta) = object::meta_mut(new) {
            set_generation(meta, generation);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(image: &str, generation: Option<&str>) -> Value {
        let mut d = json!({
            "metadata": {"name": "d"},
            "spec": {"template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}},
        });
        if let Some(g) = generation {
            d["metadata"]["annotations"] = json!({TEMPLATE_GENERATION: g});
        }
        d
    }

    #[test]
    fn template_changes_raise_the_generation() {
        let mut created = ds("a", None);
        if let Some(map) = created.as_object_mut() {
            DaemonSetStrategy.prepare_for_create(map);
        }
        assert_eq!(generation_of(&created), Some(1));
        let mut same = ds("a", None);
        DaemonSetStrategy.prepare_for_update(&mut same, &created, None);
        assert_eq!(generation_of(&same), Some(1));
        let mut changed = ds("b", Some("7"));
        DaemonSetStrategy.prepare_for_update(&mut changed, &created, None);
        assert_eq!(generation_of(&changed), Some(2));
    }
}
