//! What the endpointslice controller changes for one Service, as kube's
//! EndpointSlice reconciler decides it (without writing): one endpoint per
//! selected pod with an IP (terminating ones included) with conditions
//! `ready` / `serving` / `terminating`, `nodeName`, `zone` (the node's
//! `topology.kubernetes.io/zone`), `targetRef` and the hostname rule;
//! endpoints grouped by address type and by the ports resolved on each pod;
//! existing slices updated in place, filled up to 100 endpoints, new ones
//! created as `<service>-<random>` owned by the Service, emptied ones
//! deleted (a placeholder slice without endpoints kept when there are none),
//! and slice labels mirroring the Service's.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::pods::{self, HEADLESS_LABEL};
use crate::object;
use crate::podutil::{self, at, str_at};

/// The controller's name in the managed-by label.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// The label naming the slice's manager.
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The label naming the slice's Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Most endpoints in one slice (`--max-endpoints-per-slice`).
pub const MAX_ENDPOINTS: usize = 100;
/// A node's zone label.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The writes for one address type (or the deletions of slices of address
/// types the Service no longer has).
#[derive(Debug, Default)]
pub struct Plan {
    /// New slices (with `generateName`).
    pub create: Vec<Value>,
    /// Existing slices with their new content.
    pub update: Vec<Value>,
    /// Slices to delete.
    pub delete: Vec<Value>,
    /// Pods left out (their node is unknown).
    pub errors: Vec<String>,
}

/// The identity of an endpoint within a slice (`hashEndpoint`).
type EndpointKey = (Vec<String>, String, String, String);

fn endpoint_key(ep: &Value) -> EndpointKey {
    let mut addresses: Vec<String> = ep
        .get("addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    addresses.sort();
    let s = |p: &str| str_at(ep, p).to_string();
    (
        addresses,
        s("/hostname"),
        s("/targetRef/namespace"),
        s("/targetRef/name"),
    )
}

/// The identity of a set of ports (`NewPortMapKey`).
fn port_map_key(ports: &[Value]) -> String {
    let mut keys: Vec<_> = ports
        .iter()
        .map(|p| {
            let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
            (
                s("name"),
                p.get("port").and_then(Value::as_i64),
                s("protocol"),
                s("appProtocol"),
            )
        })
        .collect();
    keys.sort();
    format!("{keys:?}")
}

fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn labels_of(v: &Value) -> Map<String, Value> {
    object::labels(v).cloned().unwrap_or_default()
}

/// The address types of a Service's slices (`getAddressTypesForService`).
pub fn address_types(svc: &Value) -> BTreeSet<&'static str> {
    let mut types = BTreeSet::new();
    for family in at(svc, "/spec/ipFamilies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match family.as_str() {
            Some("IPv4") => types.insert("IPv4"),
            Some("IPv6") => types.insert("IPv6"),
            _ => false,
        };
    }
    if !types.is_empty() {
        return types;
    }
    // Without families (kube-apiserver sets them on every Service; here
    // headless ones may lack them) the cluster IP's family, else the
    // cluster's single family, IPv4 (kube's controller assumes both then).
    let v6 = pods::has_cluster_ip(svc) && pods::is_ipv6(str_at(svc, "/spec/clusterIP"));
    types.insert(if v6 { "IPv6" } else { "IPv4" });
    types
}

/// Whether a slice is owned by the Service.
pub fn owned_by(slice: &Value, svc: &Value) -> bool {
    object::owner_references(slice).iter().any(|r| {
        r.get("uid").and_then(Value::as_str) == Some(object::uid(svc))
            && r.get("kind").and_then(Value::as_str) == Some("Service")
            && r.get("apiVersion").and_then(Value::as_str) == Some("v1")
    })
}

fn reserved(label: &str) -> bool {
    matches!(label, SERVICE_NAME | MANAGED_BY | HEADLESS_LABEL)
}

/// The labels a slice of the Service carries, and whether the Service's own
/// labels differ from those the slice mirrors (`setEndpointSliceLabels`).
fn slice_labels(slice_labels: &Map<String, Value>, svc: &Value) -> (Map<String, Value>, bool) {
    let mirrored: Map<String, Value> = slice_labels
        .iter()
        .filter(|(k, _)| !reserved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut labels: Map<String, Value> = labels_of(svc)
        .into_iter()
        .filter(|(k, _)| !reserved(k))
        .collect();
    let changed = mirrored != labels;
    if !pods::has_cluster_ip(svc) {
        labels.insert(HEADLESS_LABEL.into(), json!(""));
    }
    labels.insert(SERVICE_NAME.into(), json!(object::name(svc)));
    labels.insert(MANAGED_BY.into(), json!(CONTROLLER_NAME));
    (labels, changed)
}

/// A new slice of the Service (`newEndpointSlice`).
pub fn new_slice(svc: &Value, ports: &[Value], address_type: &str) -> Value {
    let (labels, _) = slice_labels(&Map::new(), svc);
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{}-", object::name(svc)),
            "namespace": object::namespace(svc),
            "labels": labels,
            "ownerReferences": [podutil::new_controller_ref(svc, "v1", "Service")],
        },
        "addressType": address_type,
        "endpoints": [],
        "ports": ports,
    })
}

/// The ports of a pod's endpoints (`getEndpointPorts`).
fn endpoint_ports(svc: &Value, pod: &Value) -> Vec<Value> {
    let ports = list(&svc["spec"], "ports");
    if ports.is_empty() && str_at(svc, "/spec/clusterIP") == "None" {
        return Vec::new();
    }
    ports
        .iter()
        .filter_map(|sp| {
            let n = pods::find_port(pod, sp)?;
            let mut p = json!({
                "name": sp.get("name").and_then(Value::as_str).unwrap_or(""),
                "port": n,
                "protocol": pods::port_protocol(sp),
            });
            if let Some(app) = pods::app_protocol(sp) {
                p["appProtocol"] = app.clone();
            }
            Some(p)
        })
        .collect()
}

/// A pod's endpoint (`podToEndpoint`).
fn pod_endpoint(pod: &Value, node: Option<&Value>, svc: &Value, address_type: &str) -> Value {
    let serving = podutil::is_ready(pod);
    let terminating = object::is_deleting(pod);
    let ready = pods::publish_not_ready(svc) || (serving && !terminating);
    let addresses: Vec<String> = pods::pod_ips(pod)
        .into_iter()
        .filter(|ip| pods::is_ipv6(ip) == (address_type == "IPv6"))
        .map(|ip| {
            ip.parse::<IpAddr>()
                .map_or_else(|_| ip.to_string(), |a| a.to_string())
        })
        .collect();
    let mut ep = json!({
        "addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": pods::target_ref(pod),
    });
    let node_name = str_at(pod, "/spec/nodeName");
    if !node_name.is_empty() {
        ep["nodeName"] = json!(node_name);
    }
    if let Some(zone) = node
        .and_then(object::labels)
        .and_then(|l| l.get(ZONE_LABEL))
        .and_then(Value::as_str)
        .filter(|z| !z.is_empty())
    {
        ep["zone"] = json!(zone);
    }
    if let Some(host) = pods::hostname(pod, svc) {
        ep["hostname"] = json!(host);
    }
    ep
}

fn without_version(r: Option<&Value>) -> Option<Value> {
    let mut r = r?.clone();
    if let Some(m) = r.as_object_mut() {
        m.remove("resourceVersion");
    }
    Some(r)
}

/// Whether two endpoints of the same identity agree on the rest
/// (`EndpointsEqualBeyondHash`).
fn same_beyond_key(a: &Value, b: &Value) -> bool {
    [
        "/nodeName",
        "/zone",
        "/conditions/ready",
        "/conditions/serving",
        "/conditions/terminating",
    ]
    .iter()
    .all(|p| at(a, p) == at(b, p))
        && without_version(a.get("targetRef")) == without_version(b.get("targetRef"))
}

fn endpoints_len(slice: &Value) -> usize {
    list(slice, "endpoints").len()
}

fn push_endpoint(slice: &mut Value, ep: Value) {
    match slice.get_mut("endpoints").and_then(Value::as_array_mut) {
        Some(eps) => eps.push(ep),
        None => slice["endpoints"] = json!([ep]),
    }
}

fn pop(desired: &mut BTreeMap<EndpointKey, Value>) -> Option<Value> {
    desired.pop_first().map(|(_, v)| v)
}

/// Plans the slices of the Service for its selected pods and its existing
/// managed slices (not being deleted); `node` looks up a node by name.
pub fn plan(
    svc: &Value,
    selected: &[Arc<Value>],
    existing: &[Arc<Value>],
    node: impl Fn(&str) -> Option<Arc<Value>>,
) -> Vec<Plan> {
    let types = address_types(svc);
    let mut by_type: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    let mut unsupported = Plan::default();
    for slice in existing {
        let t = str_at(slice, "/addressType");
        match types.get(t) {
            Some(t) => by_type.entry(t).or_default().push(slice),
            None => unsupported.delete.push((**slice).clone()),
        }
    }
    let mut plans: Vec<Plan> = types
        .iter()
        .map(|t| {
            let slices = by_type.remove(t).unwrap_or_default();
            plan_address_type(svc, selected, &slices, t, &node)
        })
        .collect();
    plans.push(unsupported);
    plans
}

/// `reconcileByAddressType`.
fn plan_address_type(
    svc: &Value,
    selected: &[Arc<Value>],
    existing: &[&Value],
    address_type: &str,
    node: &impl Fn(&str) -> Option<Arc<Value>>,
) -> Plan {
    let mut plan = Plan::default();
    let mut existing_by_ports: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for slice in existing {
        if owned_by(slice, svc) {
            let key = port_map_key(list(slice, "ports"));
            existing_by_ports.entry(key).or_default().push(slice);
        } else {
            plan.delete.push((*slice).clone());
        }
    }
    type Desired = (Vec<Value>, BTreeMap<EndpointKey, Value>);
    let mut desired: BTreeMap<String, Desired> = BTreeMap::new();
    for pod in selected {
        if !pods::belongs(pod, true) {
            continue;
        }
        let ports = endpoint_ports(svc, pod);
        let key = port_map_key(&ports);
        let (_, set) = desired
            .entry(key)
            .or_insert_with(|| (ports, BTreeMap::new()));
        let node_name = str_at(pod, "/spec/nodeName");
        let found = node(node_name);
        if found.is_none() && !pods::publish_not_ready(svc) {
            plan.errors.push(format!(
                "skipping Pod {} for Service {}/{}: Node {node_name} Not Found",
                object::name(pod),
                object::namespace(svc),
                object::name(svc)
            ));
            continue;
        }
        let ep = pod_endpoint(pod, found.as_deref(), svc, address_type);
        if !list(&ep, "addresses").is_empty() {
            set.insert(endpoint_key(&ep), ep);
        }
    }
    let wanted: BTreeSet<String> = desired.keys().cloned().collect();
    for (key, (ports, mut set)) in desired {
        let current = existing_by_ports.get(&key).map_or(&[][..], Vec::as_slice);
        plan_ports(svc, current, &mut set, &ports, address_type, &mut plan);
    }
    for (key, slices) in &existing_by_ports {
        if !wanted.contains(key) {
            plan.delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    if existing.len() == plan.delete.len() && plan.create.is_empty() {
        let placeholder = new_slice(svc, &[], address_type);
        if plan.delete.len() == 1 && same_placeholder(&plan.delete[0], &placeholder) {
            plan.delete.clear();
        } else {
            plan.create.push(placeholder);
        }
    }
    plan
}

/// Whether a slice is the placeholder the controller would create.
fn same_placeholder(a: &Value, b: &Value) -> bool {
    object::namespace(a) == object::namespace(b)
        && labels_of(a) == labels_of(b)
        && a.get("addressType") == b.get("addressType")
        && list(a, "endpoints").is_empty()
        && list(a, "ports").is_empty()
        && list(b, "endpoints").is_empty()
        && list(b, "ports").is_empty()
}

/// The unchanged slice closest to full once `n` endpoints are added
/// (`getSliceToFill`).
fn slice_to_fill(
    names: &BTreeSet<String>,
    slices: &BTreeMap<String, Value>,
    n: usize,
) -> Option<String> {
    let mut closest = MAX_ENDPOINTS;
    let mut best = None;
    for name in names {
        let len = slices.get(name).map_or(0, endpoints_len);
        if n + len > MAX_ENDPOINTS {
            continue;
        }
        let diff = MAX_ENDPOINTS - (n + len);
        if diff < closest {
            closest = diff;
            best = Some(name.clone());
            if diff == 0 {
                break;
            }
        }
    }
    best
}

/// `reconcileByPortMapping`: the slices of one set of ports.
fn plan_ports(
    svc: &Value,
    existing: &[&Value],
    desired: &mut BTreeMap<EndpointKey, Value>,
    ports: &[Value],
    address_type: &str,
    plan: &mut Plan,
) {
    let mut slices: BTreeMap<String, Value> = BTreeMap::new();
    let mut unchanged = BTreeSet::new();
    let mut to_update = BTreeSet::new();
    let mut to_delete = BTreeSet::new();

    // 1. Keep the endpoints still wanted, with their current state.
    for slice in existing {
        let name = object::name(slice).to_string();
        let before = list(slice, "endpoints");
        let mut kept = Vec::new();
        let mut changed = false;
        for ep in before {
            if let Some(want) = desired.remove(&endpoint_key(ep)) {
                changed |= !same_beyond_key(&want, ep);
                kept.push(want);
            }
        }
        let (labels, relabeled) = slice_labels(&labels_of(slice), svc);
        let mut copy = (*slice).clone();
        if changed || kept.len() != before.len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
            } else {
                copy["endpoints"] = json!(kept);
                copy["metadata"]["labels"] = Value::Object(labels);
                to_update.insert(name.clone());
            }
        } else if relabeled {
            copy["metadata"]["labels"] = Value::Object(labels);
            to_update.insert(name.clone());
        } else {
            unchanged.insert(name.clone());
        }
        slices.insert(name, copy);
    }

    // 2. Fill the slices being updated, fullest first.
    if !desired.is_empty() && !to_update.is_empty() {
        let mut names: Vec<&String> = to_update.iter().collect();
        names.sort_by_key(|n| std::cmp::Reverse(slices.get(*n).map_or(0, endpoints_len)));
        for name in names {
            if let Some(slice) = slices.get_mut(name) {
                while endpoints_len(slice) < MAX_ENDPOINTS {
                    let Some(ep) = pop(desired) else { break };
                    push_endpoint(slice, ep);
                }
            }
        }
    }

    // 3. Fit what is left into an unchanged slice, or new ones.
    while !desired.is_empty() {
        let fill = if desired.len() < MAX_ENDPOINTS && !unchanged.is_empty() {
            slice_to_fill(&unchanged, &slices, desired.len())
        } else {
            None
        };
        let mut slice = match fill.as_ref().and_then(|n| slices.get(n)) {
            Some(s) => s.clone(),
            None => new_slice(svc, ports, address_type),
        };
        while endpoints_len(&slice) < MAX_ENDPOINTS {
            let Some(ep) = pop(desired) else { break };
            push_endpoint(&mut slice, ep);
        }
        match fill {
            Some(name) => {
                unchanged.remove(&name);
                to_update.insert(name.clone());
                slices.insert(name, slice);
            }
            None => plan.create.push(slice),
        }
    }
    plan.update
        .extend(to_update.iter().filter_map(|n| slices.get(n).cloned()));
    plan.delete
        .extend(to_delete.iter().filter_map(|n| slices.get(n).cloned()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}})
    }

    fn pod(name: &str, ip: &str, ready: bool) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
    }

    fn node(name: &str) -> Option<Arc<Value>> {
        (name == "n1").then(|| {
            Arc::new(json!({"metadata": {"name": "n1", "labels": {ZONE_LABEL: "zone-a"}}}))
        })
    }

    #[test]
    fn a_new_service_gets_one_slice_with_every_pod() {
        let pods = [pod("a", "10.244.0.2", true), pod("b", "10.244.0.3", false)];
        let plans = plan(&svc(), &pods, &[], node);
        let p = &plans[0];
        assert_eq!(p.create.len(), 1);
        let s = &p.create[0];
        assert_eq!(s["metadata"]["generateName"], "web-");
        assert_eq!(
            s["metadata"]["labels"],
            json!({"team": "a", SERVICE_NAME: "web", MANAGED_BY: CONTROLLER_NAME})
        );
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "svc-uid");
        assert_eq!(
            s["ports"],
            json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
        );
        let eps = list(s, "endpoints");
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[0]["addresses"], json!(["10.244.0.2"]));
        assert_eq!(eps[0]["zone"], "zone-a");
        assert_eq!(
            eps[1]["conditions"],
            json!({"ready": false, "serving": false, "terminating": false})
        );
    }

    #[test]
    fn changes_update_the_existing_slice_and_an_empty_service_keeps_a_placeholder() {
        let pods = [pod("a", "10.244.0.2", true), pod("b", "10.244.0.3", true)];
        let mut slice = plan(&svc(), &pods, &[], node).remove(0).create.remove(0);
        slice["metadata"]["name"] = json!("web-abcde");
        let slice = Arc::new(slice);
        let same = plan(&svc(), &pods, std::slice::from_ref(&slice), node);
        assert!(
            same[0].create.is_empty() && same[0].update.is_empty() && same[0].delete.is_empty()
        );

        let fewer = plan(&svc(), &pods[..1], std::slice::from_ref(&slice), node);
        assert_eq!(fewer[0].update.len(), 1);
        assert_eq!(list(&fewer[0].update[0], "endpoints").len(), 1);

        let none = plan(&svc(), &[], std::slice::from_ref(&slice), node);
        assert_eq!(none[0].delete.len(), 1);
        assert_eq!(none[0].create.len(), 1, "a placeholder replaces it");
        assert!(list(&none[0].create[0], "endpoints").is_empty());
    }

    #[test]
    fn pods_on_unknown_nodes_are_reported() {
        let mut p = (*pod("a", "10.244.0.2", true)).clone();
        p["spec"]["nodeName"] = json!("gone");
        let plans = plan(&svc(), &[Arc::new(p)], &[], node);
        assert_eq!(
            plans[0].errors,
            ["skipping Pod a for Service ns/web: Node gone Not Found"]
        );
    }

    #[test]
    fn address_types_follow_the_families() {
        let types = |s: Value| address_types(&s).into_iter().collect::<Vec<_>>();
        assert_eq!(types(json!({"spec": {"clusterIP": "None"}})), ["IPv4"]);
        assert_eq!(types(json!({"spec": {"clusterIP": "fd00::10"}})), ["IPv6"]);
        assert_eq!(
            types(json!({"spec": {"ipFamilies": ["IPv6", "IPv4"]}})),
            ["IPv4", "IPv6"]
        );
    }
}
