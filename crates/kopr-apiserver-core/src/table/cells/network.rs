//! Row cells of the networking and discovery printers added for issue 17:
//! ingresses, ingress classes, network policies and endpoint slices.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age, arr, get, name, text};
use crate::selectors::format_label_selector;

/// `formatHosts`: up to three rule hosts, `*` when none, "+ N more..." past
/// three rules.
fn hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = text(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len().saturating_sub(MAX))
    } else {
        joined
    }
}

/// The load balancer's ingress points (IP, else hostname), sorted and
/// de-duplicated; tables are wide, so never shortened.
fn address(obj: &Value) -> String {
    let points: BTreeSet<String> = arr(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .filter_map(|i| {
            let ip = text(i, &["ip"]);
            let host = text(i, &["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    points.into_iter().collect::<Vec<_>>().join(",")
}

pub(super) fn ingress(obj: &Value, now: Timestamp) -> Vec<Value> {
    let class = get(obj, &["spec", "ingressClassName"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if arr(obj, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(name(obj)),
        json!(class),
        json!(hosts(arr(obj, &["spec", "rules"]))),
        json!(address(obj)),
        json!(ports),
        age(obj, now),
    ]
}

pub(super) fn ingress_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let parameters = match get(obj, &["spec", "parameters"]) {
        Some(p) if !p.is_null() => {
            let mut s = text(p, &["kind"]);
            if let Some(group) = get(p, &["apiGroup"]).and_then(Value::as_str) {
                s.push('.');
                s.push_str(group);
            }
            format!("{s}/{}", text(p, &["name"]))
        }
        _ => "<none>".to_string(),
    };
    vec![
        json!(name(obj)),
        json!(text(obj, &["spec", "controller"])),
        json!(parameters),
        age(obj, now),
    ]
}

pub(super) fn network_policy(obj: &Value, now: Timestamp) -> Vec<Value> {
    let selector = format_label_selector(get(obj, &["spec", "podSelector"]));
    vec![json!(name(obj)), json!(selector), age(obj, now)]
}

/// `listWithMoreString`: the list, "+ N more..." past three, `<unset>` if empty.
fn list_with_more(list: &[String], more: bool, count: usize) -> String {
    const MAX: usize = 3;
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else if joined.is_empty() {
        "<unset>".to_string()
    } else {
        joined
    }
}

/// `formatDiscoveryPorts`: port numbers, else names, else `*`.
fn slice_ports(ports: &[Value]) -> String {
    let mut list = Vec::new();
    let mut more = false;
    for port in ports {
        if list.len() < 3 {
            let label = match get(port, &["port"]).and_then(Value::as_i64) {
                Some(n) => n.to_string(),
                None => match get(port, &["name"]).and_then(Value::as_str) {
                    Some(n) => n.to_string(),
                    None => "*".to_string(),
                },
            };
            list.push(label);
        } else {
            more = true;
        }
    }
    list_with_more(&list, more, ports.len())
}

/// `formatDiscoveryEndpoints`: every endpoint's addresses.
fn slice_endpoints(endpoints: &[Value]) -> String {
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for endpoint in endpoints {
        for address in arr(endpoint, &["addresses"]) {
            if list.len() < 3 {
                list.push(address.as_str().unwrap_or_default().to_string());
            } else {
                more = true;
            }
            count += 1;
        }
    }
    list_with_more(&list, more, count)
}

pub(super) fn endpoint_slice(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(text(obj, &["addressType"])),
        json!(slice_ports(arr(obj, &["ports"]))),
        json!(slice_endpoints(arr(obj, &["endpoints"]))),
        age(obj, now),
    ]
}
