//! The strategy of apiregistration.k8s.io APIServices: a local APIService
//! (one without `spec.service`) is available from its creation on.

use serde_json::{Map, Value, json};

use super::Strategy;
use crate::object;

/// APIServices: the status is reset on create, and a local one is marked
/// `Available` at once, as kube-aggregator's strategy does.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    builtin_admission!();

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        let local = matches!(
            map.get("spec").and_then(|s| s.get("service")),
            None | Some(Value::Null)
        );
        if local {
            map.insert("status".into(), local_available());
        }
    }
}

/// The status of a local APIService: `Available=True`, reason `Local`.
pub fn local_available() -> Value {
    json!({"conditions": [{
        "type": "Available",
        "status": "True",
        "lastTransitionTime": object::now_rfc3339(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    }]})
}
