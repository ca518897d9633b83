//! kube 1.32 defaults of scheduling.k8s.io/v1 PriorityClass:
//! preemptionPolicy PreemptLowerPriority.

use super::{Obj, set_val};
use serde_json::json;

/// `SetDefaults_PriorityClass`.
pub(super) fn priority_class(root: &mut Obj) {
    set_val(root, "preemptionPolicy", json!("PreemptLowerPriority"));
}

#[cfg(test)]
mod tests {
    use super::super::apply_defaults;
    use serde_json::{Value, json};

    fn d(group: &str, res: &str, mut v: Value) -> Value {
        apply_defaults(group, res, &mut v);
        v
    }

    #[test]
    fn priority_class_defaults() {
        let v = d("scheduling.k8s.io", "priorityclasses", json!({"value": 10}));
        assert_eq!(v["preemptionPolicy"], "PreemptLowerPriority");
        let v = d(
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"value": 10, "preemptionPolicy": "Never"}),
        );
        assert_eq!(v["preemptionPolicy"], "Never");
    }
}
