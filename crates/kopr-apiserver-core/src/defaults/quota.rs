//! kube 1.32 defaults of core/v1 LimitRanges (`SetDefaults_LimitRangeItem`):
//! a Container item's default limit comes from its max, its default request
//! from its default limit, else from its min.

use super::{Obj, items_mut, obj_mut};
use serde_json::Value;

fn fill_missing(item: &mut Obj, into: &str, from: &str) {
    let Some(src) = item.get(from).and_then(Value::as_object).cloned() else {
        return;
    };
    if src.is_empty() {
        return;
    }
    if let Some(dst) = obj_mut(item, into) {
        for (k, v) in src {
            dst.entry(k).or_insert(v);
        }
    }
}

/// `SetObjectDefaults_LimitRange`.
pub(super) fn limit_range(root: &mut Obj) {
    let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for item in items_mut(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        fill_missing(item, "default", "max");
        fill_missing(item, "defaultRequest", "default");
        fill_missing(item, "defaultRequest", "min");
    }
}
