//! The `endpoints.kubernetes.io/last-change-trigger-time` annotation, as
//! kube's trigger time tracker computes it: for a Service seen for the
//! first time, its creation time; afterwards the earliest of the trigger
//! times (a pod's `Ready` transition, the Service's creation) that changed
//! since the previous sync, or none.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::object;
use crate::podutil::{self, parse_time};

#[derive(Default)]
struct ServiceState {
    service: Option<jiff::Timestamp>,
    pods: HashMap<String, jiff::Timestamp>,
}

/// Trigger times last seen, per Service.
#[derive(Default)]
pub struct TriggerTimes {
    services: Mutex<HashMap<(String, String), ServiceState>>,
}

fn pod_trigger(pod: &Value) -> Option<jiff::Timestamp> {
    podutil::condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(parse_time)
}

fn earliest(a: Option<jiff::Timestamp>, b: jiff::Timestamp) -> Option<jiff::Timestamp> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl TriggerTimes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), ServiceState>> {
        match self.services.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Records the Service's and pods' trigger times and returns the time to
    /// annotate, if any (`ComputeEndpointLastChangeTriggerTime`).
    pub fn compute(&self, svc: &Value, pods: &[Arc<Value>]) -> Option<jiff::Timestamp> {
        let key = (
            object::namespace(svc).to_string(),
            object::name(svc).to_string(),
        );
        let mut all = self.lock();
        let known = all.contains_key(&key);
        let state = all.entry(key).or_default();
        let mut changed = None;
        let mut pod_times = HashMap::new();
        for pod in pods {
            if let Some(t) = pod_trigger(pod) {
                let name = object::name(pod).to_string();
                if state.pods.get(&name).is_none_or(|prev| t > *prev) {
                    changed = earliest(changed, t);
                }
                pod_times.insert(name, t);
            }
        }
        let created = object::meta_str(svc, "creationTimestamp").and_then(parse_time);
        if let Some(t) = created
            && state.service.is_none_or(|prev| t > prev)
        {
            changed = earliest(changed, t);
        }
        state.pods = pod_times;
        state.service = created;
        if known { changed } else { created }
    }

    /// Forgets a deleted Service.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.lock()
            .remove(&(namespace.to_string(), name.to_string()));
    }
}

/// The annotation value of a trigger time (RFC 3339, UTC).
pub fn format(t: jiff::Timestamp) -> String {
    if t.subsec_nanosecond() == 0 {
        return podutil::rfc3339(t);
    }
    let frac = format!("{:09}", t.subsec_nanosecond());
    format!(
        "{}.{}Z",
        t.strftime("%Y-%m-%dT%H:%M:%S"),
        frac.trim_end_matches('0')
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ready_at: &str) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]}}),
        )
    }

    #[test]
    fn first_sync_reports_creation_then_only_changes() {
        let t = TriggerTimes::default();
        let svc = json!({"metadata": {"name": "s", "namespace": "ns",
            "creationTimestamp": "2024-01-01T00:00:00Z"}});
        let a = pod("a", "2024-01-01T00:01:00Z");
        let first = t.compute(&svc, std::slice::from_ref(&a));
        assert_eq!(first.map(format).as_deref(), Some("2024-01-01T00:00:00Z"));
        assert_eq!(t.compute(&svc, std::slice::from_ref(&a)), None);
        let b = pod("b", "2024-01-01T00:03:00Z");
        let a2 = pod("a", "2024-01-01T00:02:00Z");
        let next = t.compute(&svc, &[a2, b]);
        assert_eq!(next.map(format).as_deref(), Some("2024-01-01T00:02:00Z"));
        t.forget("ns", "s");
        assert_eq!(
            t.compute(&svc, &[]).map(format).as_deref(),
            Some("2024-01-01T00:00:00Z")
        );
    }

    #[test]
    fn fractions_are_trimmed() {
        let t: jiff::Timestamp = "2024-01-01T00:00:00.120Z".parse().unwrap();
        assert_eq!(format(t), "2024-01-01T00:00:00.12Z");
    }
}
