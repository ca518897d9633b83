//! What the endpoints and endpointslice controllers read from Services and
//! Pods, as kube's endpoint utilities decide it: which Services select a
//! pod (and which must be synced when a pod changes), whether a pod belongs
//! in endpoints at all, the port a Service port targets on a pod (named
//! container ports included), the pod IP of a family and the hostname rule.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::informer::{Informer, Kind};
use crate::object;
use crate::podutil::{self, at, str_at};

/// The label marking Endpoints and EndpointSlices of headless Services.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// The annotation with the time of the change that triggered a write.
pub const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// A Service's selector, if it selects pods: an absent, null or empty
/// selector selects none (the Service's endpoints are managed by hand).
pub fn selector(svc: &Value) -> Option<&Map<String, Value>> {
    at(svc, "/spec/selector")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

/// Whether the controllers manage the Service's endpoints: it has a
/// selector and is not of type ExternalName.
pub fn managed(svc: &Value) -> bool {
    str_at(svc, "/spec/type") != "ExternalName" && selector(svc).is_some()
}

/// Whether a selector matches a set of labels.
pub fn matches(selector: &Map<String, Value>, labels: Option<&Map<String, Value>>) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The pods a Service selects (None when it selects none).
pub fn selected_pods(informer: &Informer, svc: &Value) -> Option<Vec<std::sync::Arc<Value>>> {
    let sel = selector(svc)?;
    Some(
        informer
            .list(Kind::Pod, Some(object::namespace(svc)))
            .into_iter()
            .filter(|p| matches(sel, object::labels(p)))
            .collect(),
    )
}

/// `spec.clusterIP` is set and not `None` (`IsServiceIPSet`).
pub fn has_cluster_ip(svc: &Value) -> bool {
    !matches!(str_at(svc, "/spec/clusterIP"), "" | "None")
}

/// `spec.publishNotReadyAddresses`.
pub fn publish_not_ready(svc: &Value) -> bool {
    at(svc, "/spec/publishNotReadyAddresses").and_then(Value::as_bool) == Some(true)
}

/// The keys of the Services in `namespace` whose selector matches `labels`.
fn services_for(
    informer: &Informer,
    namespace: &str,
    labels: Option<&Map<String, Value>>,
) -> BTreeSet<String> {
    informer
        .list(Kind::Service, Some(namespace))
        .iter()
        .filter(|s| selector(s).is_some_and(|sel| matches(sel, labels)))
        .map(|s| Kind::Service.key(object::namespace(s), object::name(s)))
        .collect()
}

/// The IPs of a pod, from `status.podIPs` (or `status.podIP`).
pub fn pod_ips(pod: &Value) -> Vec<&str> {
    let ips: Vec<&str> = at(pod, "/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("ip").and_then(Value::as_str))
        .filter(|ip| !ip.is_empty())
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    match str_at(pod, "/status/podIP") {
        "" => Vec::new(),
        ip => vec![ip],
    }
}

fn labels_or_host_changed(old: &Value, new: &Value) -> bool {
    let empty = Map::new();
    let labels = |p: &Value| object::labels(p).unwrap_or(&empty).clone();
    labels(old) != labels(new)
        || str_at(old, "/spec/hostname") != str_at(new, "/spec/hostname")
        || str_at(old, "/spec/subdomain") != str_at(new, "/spec/subdomain")
}

/// Whether a pod changed in a way that can change its endpoints
/// (`podEndpointsChanged`): deletion, readiness, IPs, or finishing.
fn endpoints_changed(old: &Value, new: &Value) -> bool {
    object::meta_str(old, "deletionTimestamp") != object::meta_str(new, "deletionTimestamp")
        || podutil::is_ready(old) != podutil::is_ready(new)
        || pod_ips(old) != pod_ips(new)
        || podutil::is_terminal(old) != podutil::is_terminal(new)
}

/// The keys of the Services to sync after a pod change
/// (`GetServicesToUpdateOnPodChange`).
pub fn services_to_update(
    informer: &Informer,
    old: Option<&Value>,
    new: Option<&Value>,
) -> BTreeSet<String> {
    let (old, new) = match (old, new) {
        (None, None) => return BTreeSet::new(),
        (Some(p), None) | (None, Some(p)) => {
            return services_for(informer, object::namespace(p), object::labels(p));
        }
        (Some(o), Some(n)) => (o, n),
    };
    if object::meta_str(old, "resourceVersion") == object::meta_str(new, "resourceVersion") {
        return BTreeSet::new();
    }
    let changed = endpoints_changed(old, new);
    let relabeled = labels_or_host_changed(old, new);
    let ns = object::namespace(new);
    match (changed, relabeled) {
        (false, false) => BTreeSet::new(),
        (true, false) => services_for(informer, ns, object::labels(new)),
        (_, true) => {
            let now = services_for(informer, ns, object::labels(new));
            let before = services_for(informer, ns, object::labels(old));
            if changed {
                now.union(&before).cloned().collect()
            } else {
                now.symmetric_difference(&before).cloned().collect()
            }
        }
    }
}

/// Whether a pod belongs in Endpoints or EndpointSlices
/// (`ShouldPodBeInEndpoints`): not finished, with an IP, and not being
/// deleted unless terminating pods are included.
pub fn belongs(pod: &Value, include_terminating: bool) -> bool {
    !podutil::is_terminal(pod)
        && !pod_ips(pod).is_empty()
        && (include_terminating || !object::is_deleting(pod))
}

/// Whether an endpoint of the pod carries its hostname (`ShouldSetHostname`).
pub fn hostname(pod: &Value, svc: &Value) -> Option<String> {
    let host = str_at(pod, "/spec/hostname");
    (!host.is_empty()
        && str_at(pod, "/spec/subdomain") == object::name(svc)
        && object::namespace(pod) == object::namespace(svc))
    .then(|| host.to_string())
}

fn protocol(v: &Value) -> &str {
    match v.get("protocol").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => p,
        _ => "TCP",
    }
}

/// The port a Service port targets on a pod (`FindPort`): a number as is, a
/// name looked up among the named ports of the containers and then of the
/// sidecars (init containers that restart always), with the same protocol.
pub fn find_port(pod: &Value, service_port: &Value) -> Option<i64> {
    match service_port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => {
            let wanted = protocol(service_port);
            let named = |containers: &str, sidecars_only: bool| {
                at(pod, containers)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(move |c| {
                        !sidecars_only
                            || c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
                    })
                    .flat_map(|c| {
                        c.get("ports")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .find(|p| {
                        p.get("name").and_then(Value::as_str) == Some(name.as_str())
                            && protocol(p) == wanted
                    })
                    .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
            };
            named("/spec/containers", false).or_else(|| named("/spec/initContainers", true))
        }
        // The API defaults targetPort to the port.
        _ => service_port.get("port").and_then(Value::as_i64),
    }
}

/// Whether an IP is IPv6.
pub fn is_ipv6(ip: &str) -> bool {
    ip.contains(':')
}

/// The IP family of a Service's endpoints (`ipFamilies[0]`, else the
/// cluster IP's, else the pod IP's for headless Services).
pub fn wants_ipv6(svc: &Value, pod: &Value) -> bool {
    if let Some(first) = at(svc, "/spec/ipFamilies")
        .and_then(Value::as_array)
        .and_then(|f| f.first())
        .and_then(Value::as_str)
    {
        return first == "IPv6";
    }
    if has_cluster_ip(svc) {
        return is_ipv6(str_at(svc, "/spec/clusterIP"));
    }
    is_ipv6(str_at(pod, "/status/podIP"))
}

/// A pod's IP of the Service's family, if it has one.
pub fn ip_for(svc: &Value, pod: &Value) -> Option<String> {
    let v6 = wants_ipv6(svc, pod);
    pod_ips(pod)
        .into_iter()
        .find(|ip| is_ipv6(ip) == v6)
        .map(str::to_string)
}

/// The reference to a pod an endpoint carries.
pub fn target_ref(pod: &Value) -> Value {
    serde_json::json!({
        "kind": "Pod",
        "namespace": object::namespace(pod),
        "name": object::name(pod),
        "uid": object::uid(pod),
    })
}

/// A service port's `appProtocol`, if set.
pub fn app_protocol(service_port: &Value) -> Option<&Value> {
    service_port.get("appProtocol").filter(|v| v.is_string())
}

/// The protocol of a service port (`TCP` when unset).
pub fn port_protocol(service_port: &Value) -> &str {
    protocol(service_port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ports: Value, init: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": [{"name": "c", "ports": ports}], "initContainers": init}})
    }

    #[test]
    fn named_ports_resolve_through_containers_and_sidecars() {
        let p = pod(
            json!([{"name": "http", "containerPort": 8080}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]),
            json!([{"name": "side", "restartPolicy": "Always", "ports": [{"name": "metrics", "containerPort": 9090}]},
                   {"name": "init", "ports": [{"name": "setup", "containerPort": 7000}]}]),
        );
        let port = |v: Value| find_port(&p, &v);
        assert_eq!(port(json!({"port": 80, "targetPort": "http"})), Some(8080));
        assert_eq!(port(json!({"port": 80, "targetPort": 81})), Some(81));
        assert_eq!(port(json!({"port": 80})), Some(80));
        assert_eq!(port(json!({"port": 53, "targetPort": "dns"})), None);
        assert_eq!(
            port(json!({"port": 53, "protocol": "UDP", "targetPort": "dns"})),
            Some(53)
        );
        assert_eq!(
            port(json!({"port": 1, "targetPort": "metrics"})),
            Some(9090)
        );
        assert_eq!(port(json!({"port": 1, "targetPort": "setup"})), None);
    }

    #[test]
    fn membership_needs_an_ip_and_a_live_pod() {
        let live = json!({"metadata": {}, "status": {"phase": "Running", "podIP": "10.0.0.1"}});
        assert!(belongs(&live, false));
        let gone = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
        assert!(!belongs(&gone, false));
        assert!(belongs(&gone, true));
        let done = json!({"status": {"phase": "Succeeded", "podIP": "10.0.0.1"}});
        assert!(!belongs(&done, true));
        assert!(!belongs(&json!({"status": {"phase": "Pending"}}), true));
    }

    #[test]
    fn selectors_select_by_every_pair() {
        let svc = json!({"spec": {"selector": {"app": "web", "tier": "fe"}}});
        let sel = selector(&svc).unwrap();
        let labels = json!({"app": "web", "tier": "fe", "x": "y"});
        assert!(matches(sel, labels.as_object()));
        assert!(!matches(sel, json!({"app": "web"}).as_object()));
        assert!(selector(&json!({"spec": {"selector": {}}})).is_none());
        assert!(!managed(
            &json!({"spec": {"type": "ExternalName", "selector": {"a": "b"}}})
        ));
    }
}
