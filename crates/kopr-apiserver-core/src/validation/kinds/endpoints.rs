//! Validation of core/v1 Endpoints: subsets, their addresses (IPs that are
//! neither unspecified, loopback nor link-local) and ports.

#[allow(unused_imports)]
use super::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `netutils.ParseIPSloppy`: IPv4 may have leading zeros.
pub(super) fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

fn is_link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 224 && o[1] == 0 && o[2] == 0
        }
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `IsLoopback`/`IsUnspecified` see IPv4-mapped IPv6 addresses as IPv4.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// `ValidateNonSpecialIP`.
pub(super) fn validate_non_special_ip(ck: &mut Checker, ip: &str, path: &str) {
    let Some(parsed) = parse_ip_sloppy(ip).map(unmapped) else {
        ck.push(FieldError::invalid(path, ip, "must be a valid IP address"));
        return;
    };
    if parsed.is_unspecified() {
        ck.push(FieldError::invalid(
            path,
            ip,
            format!("may not be unspecified ({ip})"),
        ));
    }
    if parsed.is_loopback() {
        ck.push(FieldError::invalid(
            path,
            ip,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if is_link_local_unicast(&parsed) {
        ck.push(FieldError::invalid(
            path,
            ip,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if is_link_local_multicast(&parsed) {
        ck.push(FieldError::invalid(
            path,
            ip,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

fn endpoint_address(ck: &mut Checker, a: &Obj, path: &str) {
    let ip = ck.string(a, "ip", path);
    let ip_path = child(path, "ip");
    if parse_ip_sloppy(ip).is_none() {
        ck.push(FieldError::invalid(
            &ip_path,
            ip,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
    let host = ck.string(a, "hostname", path);
    if !host.is_empty() {
        ck.extend(
            &child(path, "hostname"),
            host,
            names::is_dns1123_label(host),
        );
    }
    if let Some(node) = ck.str(a, "nodeName", path) {
        ck.extend(
            &child(path, "nodeName"),
            node,
            names::name_is_dns_subdomain(node, false),
        );
    }
    validate_non_special_ip(ck, ip, &ip_path);
}

fn endpoint_port(ck: &mut Checker, p: &Obj, require_name: bool, path: &str) {
    let name = ck.string(p, "name", path);
    if require_name && name.is_empty() {
        ck.push(FieldError::required(child(path, "name"), ""));
    } else if !name.is_empty() {
        ck.extend(&child(path, "name"), name, names::is_dns1123_label(name));
    }
    let port = ck.i32(p, "port", path).unwrap_or(0);
    for m in names::is_valid_port_num(port) {
        ck.push(FieldError::invalid(child(path, "port"), port, m));
    }
    let proto = ck.string(p, "protocol", path);
    if proto.is_empty() {
        ck.push(FieldError::required(child(path, "protocol"), ""));
    } else if !pod::PROTOCOLS.contains(&proto) {
        ck.push(FieldError::not_supported(
            child(path, "protocol"),
            proto,
            pod::PROTOCOLS,
        ));
    }
    if let Some(ap) = ck.str(p, "appProtocol", path) {
        ck.extend(
            &child(path, "appProtocol"),
            ap,
            names::is_qualified_name(ap),
        );
    }
}

/// Endpoints (`ValidateEndpoints[Create|Update]`).
pub(crate) fn endpoints(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    for (i, ss) in ck.obj_items(root, "subsets", "") {
        let sp = index("subsets", i);
        let addrs = ck.obj_items(ss, "addresses", &sp);
        let not_ready = ck.obj_items(ss, "notReadyAddresses", &sp);
        if addrs.is_empty() && not_ready.is_empty() {
            ck.push(FieldError::required(
                &sp,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, a) in addrs {
            endpoint_address(ck, a, &index(&child(&sp, "addresses"), j));
        }
        for (j, a) in not_ready {
            endpoint_address(ck, a, &index(&child(&sp, "notReadyAddresses"), j));
        }
        let ports = ck.obj_items(ss, "ports", &sp);
        let multi = ports.len() > 1;
        for (j, p) in ports {
            endpoint_port(ck, p, multi, &index(&child(&sp, "ports"), j));
        }
    }
}
