//! kube-aggregator 1.32 defaults of apiregistration.k8s.io/v1 APIService:
//! a service reference's port is 443.

use super::{Obj, existing_obj, set_val};
use serde_json::json;

/// `SetDefaults_ServiceReference` of an APIService.
pub(super) fn api_service(root: &mut Obj) {
    if let Some(svc) = existing_obj(root, "spec").and_then(|s| existing_obj(s, "service")) {
        set_val(svc, "port", json!(443));
    }
}

#[cfg(test)]
mod tests {
    use super::super::apply_defaults;
    use serde_json::{Value, json};

    fn d(mut v: Value) -> Value {
        apply_defaults("apiregistration.k8s.io", "apiservices", &mut v);
        v
    }

    #[test]
    fn api_service_defaults() {
        let v = d(json!({"spec": {"service": {"name": "s", "namespace": "n"}}}));
        assert_eq!(v["spec"]["service"]["port"], 443);
        let v = d(json!({"spec": {"service": {"name": "s", "namespace": "n", "port": 8443}}}));
        assert_eq!(v["spec"]["service"]["port"], 8443);
        let v = d(json!({"spec": {}}));
        assert!(v["spec"].get("service").is_none());
    }
}
