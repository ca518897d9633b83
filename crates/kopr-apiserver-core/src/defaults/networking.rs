//! kube 1.32 defaults of networking.k8s.io/v1 NetworkPolicy (port protocol
//! TCP, policyTypes) and IngressClass (parameters scope), and of
//! discovery.k8s.io/v1 EndpointSlice ports (name "", protocol TCP).

use super::{Obj, existing_obj, items_mut, obj_mut, set_val};
use serde_json::{Value, json};

/// `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`.
pub(super) fn network_policy(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    for rules in ["ingress", "egress"] {
        for rule in items_mut(spec, rules) {
            for port in items_mut(rule, "ports") {
                set_val(port, "protocol", json!("TCP"));
            }
        }
    }
    let no_types = match spec.get("policyTypes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if no_types {
        let has_egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// `SetDefaults_IngressClass`: a parameters reference is cluster-scoped
/// unless it says otherwise.
pub(super) fn ingress_class(root: &mut Obj) {
    if let Some(p) = existing_obj(root, "spec").and_then(|s| existing_obj(s, "parameters")) {
        set_val(p, "scope", json!("Cluster"));
    }
}

/// `SetDefaults_EndpointPort` for every port of an EndpointSlice.
pub(super) fn endpoint_slice(root: &mut Obj) {
    for port in items_mut(root, "ports") {
        set_val(port, "name", json!(""));
        set_val(port, "protocol", json!("TCP"));
    }
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
    fn network_policy_defaults() {
        let v = d(
            "networking.k8s.io",
            "networkpolicies",
            json!({"spec": {"ingress": [{"ports": [{"port": 80}, {"protocol": "UDP"}]}]}}),
        );
        assert_eq!(v["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(v["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(v["spec"]["ingress"][0]["ports"][1]["protocol"], "UDP");
        let v = d(
            "networking.k8s.io",
            "networkpolicies",
            json!({"spec": {"egress": [{"ports": [{"port": 53}]}], "policyTypes": []}}),
        );
        assert_eq!(v["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(v["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let v = d(
            "networking.k8s.io",
            "networkpolicies",
            json!({"spec": {"egress": [{}], "policyTypes": ["Egress"]}}),
        );
        assert_eq!(v["spec"]["policyTypes"], json!(["Egress"]));
        let v = d("networking.k8s.io", "networkpolicies", json!({}));
        assert_eq!(v["spec"]["policyTypes"], json!(["Ingress"]));
    }

    #[test]
    fn ingress_class_and_endpoint_slice_defaults() {
        let v = d(
            "networking.k8s.io",
            "ingressclasses",
            json!({"spec": {"controller": "a.io/c", "parameters": {"kind": "K", "name": "n"}}}),
        );
        assert_eq!(v["spec"]["parameters"]["scope"], "Cluster");
        let v = d(
            "networking.k8s.io",
            "ingressclasses",
            json!({"spec": {"controller": "a.io/c"}}),
        );
        assert!(v["spec"].get("parameters").is_none());
        let v = d(
            "discovery.k8s.io",
            "endpointslices",
            json!({"addressType": "IPv4", "ports": [{"port": 80}, {"name": "x", "protocol": "UDP"}]}),
        );
        assert_eq!(
            v["ports"],
            json!([{"port": 80, "name": "", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}])
        );
        // Ingress has no defaults: pathType is required, not defaulted.
        let ing = json!({"spec": {"rules": [{"http": {"paths": [{"path": "/"}]}}]}});
        assert_eq!(d("networking.k8s.io", "ingresses", ing.clone()), ing);
    }
}
