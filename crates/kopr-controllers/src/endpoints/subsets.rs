//! The canonical layout of Endpoints subsets (`RepackSubsets`): every
//! address (keyed by IP and pod uid) grouped with exactly the ports it
//! serves, not-ready winning over ready for the same port, addresses sorted
//! by IP then uid; and the truncation of Endpoints past 1000 addresses
//! (`endpoints.kubernetes.io/over-capacity: truncated`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Most addresses the controller writes into one Endpoints object.
pub const MAX_CAPACITY: usize = 1000;

/// One address serving one port (or no port, for headless Services
/// without ports).
pub struct Entry {
    /// The `EndpointAddress`.
    pub address: Value,
    /// Whether it goes under `addresses` (else `notReadyAddresses`).
    pub ready: bool,
    /// The `EndpointPort`, if any.
    pub port: Option<Value>,
}

type AddrKey = (String, Option<String>);
type PortKey = (String, i64, String, Option<String>);

fn addr_key(a: &Value) -> AddrKey {
    let ip = a
        .get("ip")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = a
        .pointer("/targetRef/uid")
        .and_then(Value::as_str)
        .map(str::to_string);
    (ip, uid)
}

fn port_key(p: &Value) -> PortKey {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (
        s("name"),
        p.get("port").and_then(Value::as_i64).unwrap_or(0),
        s("protocol"),
        p.get("appProtocol")
            .and_then(Value::as_str)
            .map(str::to_string),
    )
}

/// Packs entries into canonical subsets.
pub fn repack(entries: Vec<Entry>) -> Vec<Value> {
    let mut addresses: BTreeMap<AddrKey, Value> = BTreeMap::new();
    // Port (None: the no-port sentinel) → its value and address readiness.
    type Served = (Option<Value>, BTreeMap<AddrKey, bool>);
    let mut by_port: BTreeMap<Option<PortKey>, Served> = BTreeMap::new();
    for e in entries {
        let ak = addr_key(&e.address);
        addresses.entry(ak.clone()).or_insert(e.address);
        let pk = e.port.as_ref().map(port_key);
        let (_, served) = by_port
            .entry(pk)
            .or_insert_with(|| (e.port, BTreeMap::new()));
        if served.get(&ak).is_none_or(|was_ready| *was_ready) {
            served.insert(ak, e.ready);
        }
    }
    let mut groups: BTreeMap<Vec<(AddrKey, bool)>, Vec<Value>> = BTreeMap::new();
    for (_, (port, served)) in by_port {
        let group = groups.entry(served.into_iter().collect()).or_default();
        if let Some(p) = port {
            group.push(p);
        }
    }
    groups
        .into_iter()
        .map(|(members, ports)| {
            let pick = |ready: bool| -> Vec<Value> {
                members
                    .iter()
                    .filter(|(_, r)| *r == ready)
                    .filter_map(|(k, _)| addresses.get(k).cloned())
                    .collect()
            };
            let mut subset = Map::new();
            let (ready, not_ready) = (pick(true), pick(false));
            if !ready.is_empty() {
                subset.insert("addresses".into(), json!(ready));
            }
            if !not_ready.is_empty() {
                subset.insert("notReadyAddresses".into(), json!(not_ready));
            }
            if !ports.is_empty() {
                subset.insert("ports".into(), json!(ports));
            }
            Value::Object(subset)
        })
        .collect()
}

fn count(subset: &Value, field: &str) -> usize {
    subset
        .get(field)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The number of addresses (ready or not) in subsets.
pub fn address_count(subsets: &[Value]) -> usize {
    subsets
        .iter()
        .map(|s| count(s, "addresses") + count(s, "notReadyAddresses"))
        .sum()
}

/// Truncates subsets to [`MAX_CAPACITY`] addresses, keeping ready ones
/// first and each subset's share proportional (`truncateEndpoints`).
/// Returns whether anything was truncated.
pub fn truncate(subsets: &mut [Value]) -> bool {
    let ready: usize = subsets.iter().map(|s| count(s, "addresses")).sum();
    let not_ready: usize = subsets.iter().map(|s| count(s, "notReadyAddresses")).sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready {
        (MAX_CAPACITY, ready)
    } else {
        (MAX_CAPACITY - ready, not_ready)
    };
    let mut room = max;
    for subset in subsets.iter_mut() {
        let field = if truncate_ready {
            "addresses"
        } else {
            "notReadyAddresses"
        };
        let here = count(subset, field);
        let share = (here * max).div_ceil(total.max(1)).min(room);
        if let Some(list) = subset.get_mut(field).and_then(Value::as_array_mut) {
            list.truncate(share);
        }
        if truncate_ready && let Some(map) = subset.as_object_mut() {
            map.remove("notReadyAddresses");
        }
        room -= count(subset, field);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(ip: &str, uid: &str) -> Value {
        json!({"ip": ip, "targetRef": {"kind": "Pod", "uid": uid}})
    }

    fn port(name: &str, n: i64) -> Value {
        json!({"name": name, "port": n, "protocol": "TCP"})
    }

    #[test]
    fn addresses_are_grouped_by_the_ports_they_serve() {
        let e = |a: Value, ready: bool, p: &Value| Entry {
            address: a,
            ready,
            port: Some(p.clone()),
        };
        let (http, metrics) = (port("http", 80), port("metrics", 9090));
        let subsets = repack(vec![
            e(addr("10.0.0.2", "b"), true, &http),
            e(addr("10.0.0.2", "b"), true, &metrics),
            e(addr("10.0.0.1", "a"), true, &http),
            e(addr("10.0.0.1", "a"), true, &metrics),
            e(addr("10.0.0.3", "c"), false, &http),
            e(addr("10.0.0.3", "c"), false, &metrics),
        ]);
        assert_eq!(subsets.len(), 1, "{subsets:?}");
        let s = &subsets[0];
        assert_eq!(s["addresses"][0]["ip"], "10.0.0.1");
        assert_eq!(s["addresses"][1]["ip"], "10.0.0.2");
        assert_eq!(s["notReadyAddresses"][0]["ip"], "10.0.0.3");
        assert_eq!(s["ports"], json!([http, metrics]));

        // A pod serving only one of the ports gets a subset of its own.
        let split = repack(vec![
            e(addr("10.0.0.1", "a"), true, &http),
            e(addr("10.0.0.1", "a"), true, &metrics),
            e(addr("10.0.0.2", "b"), true, &http),
        ]);
        assert_eq!(split.len(), 2, "{split:?}");
    }

    #[test]
    fn headless_services_without_ports_keep_their_addresses() {
        let subsets = repack(vec![Entry {
            address: addr("10.0.0.1", "a"),
            ready: true,
            port: None,
        }]);
        assert_eq!(subsets, vec![json!({"addresses": [addr("10.0.0.1", "a")]})]);
    }

    #[test]
    fn truncation_keeps_ready_addresses_first() {
        let many = |n: usize, prefix: &str| -> Vec<Value> {
            (0..n).map(|i| addr(&format!("{prefix}.{i}"), "")).collect()
        };
        let mut subsets =
            vec![json!({"addresses": many(900, "r"), "notReadyAddresses": many(300, "n")})];
        assert!(truncate(&mut subsets));
        assert_eq!(count(&subsets[0], "addresses"), 900);
        assert_eq!(count(&subsets[0], "notReadyAddresses"), 100);
        let mut small = vec![json!({"addresses": many(3, "r")})];
        assert!(!truncate(&mut small));
    }
}
