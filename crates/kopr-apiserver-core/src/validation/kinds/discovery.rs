//! Validation of discovery.k8s.io/v1 EndpointSlices, as kube-apiserver 1.32
//! does it.

use super::meta_shapes::{OnUpdate, core_meta};
use super::netaddr::{non_special_ip_errors, parse_ip};
#[allow(unused_imports)]
use super::*;

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PORT_PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_ZONE_HINTS: usize = 8;

fn count(n: usize) -> Option<i64> {
    i64::try_from(n).ok()
}

fn too_many(path: &str, n: usize, max: usize) -> FieldError {
    FieldError::too_many(path, count(n), count(max).unwrap_or(-1))
}

/// `IsFullyQualifiedDomainName`.
fn fqdn(ck: &mut Checker, name: &str, path: &str) {
    if name.is_empty() {
        ck.push(FieldError::required(path, ""));
        return;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = names::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        ck.push(FieldError::invalid(path, name, errs.join(",")));
        return;
    }
    if name.split('.').count() < 2 {
        ck.push(FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        ));
        return;
    }
    for label in name.split('.') {
        let errs = names::is_dns1123_label(label);
        if !errs.is_empty() {
            ck.push(FieldError::invalid(path, label, errs.join(",")));
            return;
        }
    }
}

fn address(ck: &mut Checker, addr_type: &str, a: &str, path: &str) {
    match addr_type {
        "IPv4" | "IPv6" => {
            let v4 = parse_ip(a).and_then(|ip| ip.to4()).is_some();
            let ok = parse_ip(a).is_some() && (v4 == (addr_type == "IPv4"));
            if !ok {
                let msg = if addr_type == "IPv4" {
                    "must be a valid IPv4 address"
                } else {
                    "must be a valid IPv6 address"
                };
                ck.push(FieldError::invalid(path, a, msg));
            }
            ck.extend(path, a, non_special_ip_errors(a));
        }
        "FQDN" => fqdn(ck, a, path),
        _ => {}
    }
}

fn hints(ck: &mut Checker, h: &Obj, path: &str) {
    let fp = child(path, "forZones");
    let zones = ck.obj_items(h, "forZones", path);
    if zones.len() > MAX_ZONE_HINTS {
        ck.push(too_many(&fp, zones.len(), MAX_ZONE_HINTS));
        return;
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, z) in zones {
        let zp = child(&index(&fp, i), "name");
        let name = ck.string(z, "name", &index(&fp, i));
        if !seen.insert(name) {
            ck.push(FieldError::duplicate(&zp, name));
        }
        ck.extend(&zp, name, names::is_valid_label_value(name));
    }
}

pub(crate) fn endpoints(ck: &mut Checker, root: &Obj, addr_type: &str) {
    let eps = ck.obj_items(root, "endpoints", "");
    if eps.len() > MAX_ENDPOINTS {
        ck.push(too_many("endpoints", eps.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, ep) in eps {
        let ip = index("endpoints", i);
        let ap = child(&ip, "addresses");
        let addrs = ck.str_list(ep, "addresses", &ip);
        if addrs.is_empty() {
            ck.push(FieldError::required(&ap, "must contain at least 1 address"));
        } else if addrs.len() > MAX_ADDRESSES {
            ck.push(too_many(&ap, addrs.len(), MAX_ADDRESSES));
        }
        for (j, a) in addrs.iter().enumerate() {
            address(ck, addr_type, a, &index(&ap, j));
        }
        if let Some(n) = ck.str(ep, "nodeName", &ip) {
            ck.extend(
                &child(&ip, "nodeName"),
                n,
                names::name_is_dns_subdomain(n, false),
            );
        }
        let tp = child(&ip, "deprecatedTopology");
        let topo = ck.str_map(ep, "deprecatedTopology", &ip);
        if topo.len() > MAX_TOPOLOGY_LABELS {
            ck.push(too_many(&tp, topo.len(), MAX_TOPOLOGY_LABELS));
        }
        validate_labels(ck, &topo, &tp);
        if let Some(h) = ck.str(ep, "hostname", &ip) {
            ck.extend(&child(&ip, "hostname"), h, names::is_dns1123_label(h));
        }
        if let Some(h) = ck.obj(ep, "hints", &ip) {
            hints(ck, h, &child(&ip, "hints"));
        }
    }
}

fn ports(ck: &mut Checker, root: &Obj) {
    let items = ck.obj_items(root, "ports", "");
    if items.len() > MAX_PORTS {
        ck.push(too_many("ports", items.len(), MAX_PORTS));
        return;
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, p) in items {
        let ip = index("ports", i);
        let name = ck.string(p, "name", &ip);
        let np = child(&ip, "name");
        if !name.is_empty() {
            ck.extend(&np, name, names::is_dns1123_label(name));
        }
        if !seen.insert(name) {
            ck.push(FieldError::duplicate(&np, name));
        }
        match ck.str(p, "protocol", &ip) {
            None => ck.push(FieldError::required(child(&ip, "protocol"), "")),
            Some(proto) if !PORT_PROTOCOLS.contains(&proto) => ck.push(FieldError::not_supported(
                child(&ip, "protocol"),
                proto,
                PORT_PROTOCOLS,
            )),
            Some(_) => {}
        }
        if let Some(ap) = ck.str(p, "appProtocol", &ip) {
            ck.extend(&child(&ip, "appProtocol"), ap, names::is_qualified_name(ap));
        }
        ck.i32(p, "port", &ip);
    }
}

/// discovery.k8s.io/v1 EndpointSlice.
pub(crate) fn endpoint_slice(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        true,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let addr_type = ck.string(root, "addressType", "");
    if addr_type.is_empty() {
        ck.push(FieldError::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&addr_type) {
        ck.push(FieldError::not_supported(
            "addressType",
            addr_type,
            ADDRESS_TYPES,
        ));
    }
    endpoints(ck, root, addr_type);
    ports(ck, root);
    if let Some(o) = old {
        let prev = o.get("addressType").and_then(Value::as_str).unwrap_or("");
        if prev != addr_type {
            ck.push(FieldError::invalid(
                "addressType",
                addr_type,
                FIELD_IMMUTABLE,
            ));
        }
    }
}
