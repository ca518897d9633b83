//! kube 1.32 defaults of flowcontrol.apiserver.k8s.io/v1: FlowSchema
//! matchingPrecedence 1000; PriorityLevelConfiguration limited
//! nominalConcurrencyShares 30 and lendablePercent 0, exempt shares and
//! lendablePercent 0, queuing handSize 8, queues 64, queueLengthLimit 50.

use super::{Obj, existing_obj, obj_mut, set_val};
use serde_json::{Value, json};

/// Sets an int32 field kube keeps as a plain (non-pointer) value: absent,
/// null and zero all take the default.
fn set_nonzero(o: &mut Obj, k: &str, v: i64) {
    let zero = match o.get(k) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    };
    if zero {
        o.insert(k.into(), json!(v));
    }
}

/// `SetDefaults_FlowSchemaSpec`.
pub(super) fn flow_schema(root: &mut Obj) {
    if let Some(spec) = obj_mut(root, "spec") {
        set_nonzero(spec, "matchingPrecedence", 1000);
    }
}

/// `SetDefaults_LimitedPriorityLevelConfiguration`,
/// `SetDefaults_ExemptPriorityLevelConfiguration` and
/// `SetDefaults_QueuingConfiguration`.
pub(super) fn priority_level_configuration(root: &mut Obj) {
    let Some(spec) = existing_obj(root, "spec") else {
        return;
    };
    if let Some(ex) = existing_obj(spec, "exempt") {
        set_val(ex, "nominalConcurrencyShares", json!(0));
        set_val(ex, "lendablePercent", json!(0));
    }
    if let Some(lim) = existing_obj(spec, "limited") {
        set_val(lim, "nominalConcurrencyShares", json!(30));
        set_val(lim, "lendablePercent", json!(0));
        if let Some(q) =
            existing_obj(lim, "limitResponse").and_then(|lr| existing_obj(lr, "queuing"))
        {
            set_nonzero(q, "handSize", 8);
            set_nonzero(q, "queues", 64);
            set_nonzero(q, "queueLengthLimit", 50);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::apply_defaults;
    use serde_json::{Value, json};

    const G: &str = "flowcontrol.apiserver.k8s.io";

    fn d(res: &str, mut v: Value) -> Value {
        apply_defaults(G, res, &mut v);
        v
    }

    #[test]
    fn flow_schema_defaults() {
        assert_eq!(
            d("flowschemas", json!({}))["spec"]["matchingPrecedence"],
            1000
        );
        let v = d("flowschemas", json!({"spec": {"matchingPrecedence": 0}}));
        assert_eq!(v["spec"]["matchingPrecedence"], 1000);
        let v = d("flowschemas", json!({"spec": {"matchingPrecedence": 500}}));
        assert_eq!(v["spec"]["matchingPrecedence"], 500);
    }

    #[test]
    fn priority_level_defaults() {
        let v = d(
            "prioritylevelconfigurations",
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0}}}}}),
        );
        assert_eq!(
            v["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Queue",
                   "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        // An explicit zero share count is kept in v1 (a "jail" level).
        let v = d(
            "prioritylevelconfigurations",
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}}),
        );
        assert_eq!(v["spec"]["limited"]["nominalConcurrencyShares"], 0);
        let v = d(
            "prioritylevelconfigurations",
            json!({"spec": {"type": "Exempt", "exempt": {}}}),
        );
        assert_eq!(
            v["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
        let v = d(
            "prioritylevelconfigurations",
            json!({"spec": {"type": "Exempt"}}),
        );
        assert!(v["spec"].get("exempt").is_none());
    }
}
