//! Validation of networking.k8s.io/v1 kinds: Ingress, IngressClass and
//! NetworkPolicy, as kube-apiserver 1.32 does it.

use super::meta_shapes::{OnUpdate, core_meta, go_string_slice};
use super::netaddr::{parse_cidr, parse_ip};
#[allow(unused_imports)]
use super::*;

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const ANNOTATION_INGRESS_CLASS: &str = "kubernetes.io/ingress.class";
const MAX_LEN_INGRESS_CLASS_CONTROLLER: usize = 250;
const WILDCARD_ERR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const WILDCARD_FMT: &str = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

fn label_matches(l: &str) -> bool {
    let b = l.as_bytes();
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&e)) => ok(f) && ok(e) && b.iter().all(|&c| ok(c) || c == b'-'),
        _ => false,
    }
}

/// `IsWildcardDNS1123Subdomain`.
fn wildcard_subdomain_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > names::DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(names::max_len_error(names::DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let ok = v
        .strip_prefix("*.")
        .is_some_and(|rest| rest.split('.').all(label_matches));
    if !ok {
        errs.push(names::regex_error(
            WILDCARD_ERR,
            WILDCARD_FMT,
            &["*.example.com"],
        ));
    }
    errs
}

/// A host of a rule or TLS entry: a wildcard or plain DNS subdomain.
fn check_host(ck: &mut Checker, host: &str, path: &str) -> bool {
    if host.contains('*') {
        ck.extend(path, host, wildcard_subdomain_errors(host));
        true
    } else {
        ck.extend(path, host, names::is_dns1123_subdomain(host));
        false
    }
}

// ------------------------------------------------------------------ ingress

#[derive(Default, Clone, Copy)]
struct IngressOpts {
    allow_invalid_secret_name: bool,
    allow_invalid_wildcard_host_rule: bool,
}

/// `validateIngressTypedLocalObjectReference`.
fn typed_local_ref(ck: &mut Checker, r: &Obj, path: &str) {
    if let Some(g) = ck.str(r, "apiGroup", path) {
        ck.extend(&child(path, "apiGroup"), g, names::is_dns1123_subdomain(g));
    }
    for (k, msg) in [("kind", "kind is required"), ("name", "name is required")] {
        let v = ck.string(r, k, path);
        let fp = child(path, k);
        if v.is_empty() {
            ck.push(FieldError::required(fp, msg));
        } else {
            ck.extend(&fp, v, names::is_valid_path_segment_name(v, false));
        }
    }
}

fn ingress_backend(ck: &mut Checker, b: &Obj, path: &str) {
    let res = ck.obj(b, "resource", path);
    let svc = ck.obj(b, "service", path);
    match (res, svc) {
        (Some(_), Some(_)) => ck.push(FieldError::invalid(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(r), None) => typed_local_ref(ck, r, &child(path, "resource")),
        (None, Some(s)) => {
            let sp = child(path, "service");
            let name = ck.string(s, "name", &sp);
            let np = child(&sp, "name");
            if name.is_empty() {
                ck.push(FieldError::required(np, ""));
            } else {
                ck.extend(&np, name, names::name_is_dns1035_label(name, false));
            }
            let pp = child(&sp, "port");
            let port = sub(ck, s, "port", &sp);
            let pname = ck.string(port, "name", &pp);
            let pnum = ck.i32(port, "number", &pp).unwrap_or(0);
            match (pname.is_empty(), pnum == 0) {
                (false, false) => ck.push(FieldError::invalid(
                    path,
                    "",
                    "cannot set both port name & port number",
                )),
                (false, true) => {
                    ck.extend(&child(&pp, "name"), pname, names::is_valid_port_name(pname));
                }
                (true, false) => {
                    for m in names::is_valid_port_num(pnum) {
                        ck.push(FieldError::invalid(child(&pp, "number"), pnum, m));
                    }
                }
                (true, true) => ck.push(FieldError::required(
                    path,
                    "port name or number is required",
                )),
            }
        }
        (None, None) => ck.push(FieldError::invalid(
            path,
            "",
            "resource or service backend is required",
        )),
    }
}

fn http_path(ck: &mut Checker, p: &Obj, path: &str) {
    let Some(pt) = ck.str(p, "pathType", path) else {
        ck.push(FieldError::required(
            child(path, "pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = ck.string(p, "path", path);
    let vp = child(path, "path");
    match pt {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                ck.push(FieldError::invalid(&vp, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(seq) {
                        ck.push(FieldError::invalid(
                            &vp,
                            value,
                            format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        ck.push(FieldError::invalid(
                            &vp,
                            value,
                            format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                ck.push(FieldError::invalid(&vp, value, "must be an absolute path"));
            }
        }
        other => ck.push(FieldError::not_supported(
            child(path, "pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    let backend = sub(ck, p, "backend", path);
    ingress_backend(ck, backend, &child(path, "backend"));
}

/// `validateIngressRuleValue`.
fn rule_value(ck: &mut Checker, rule: &Obj, path: &str) {
    let Some(http) = ck.obj(rule, "http", path) else {
        return;
    };
    let hp = child(path, "http");
    let count = http
        .get("paths")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if count == 0 {
        ck.push(FieldError::required(child(&hp, "paths"), ""));
    }
    let pp = child(&hp, "paths");
    for (i, p) in ck.obj_items(http, "paths", &hp) {
        http_path(ck, p, &index(&pp, i));
    }
}

fn ingress_spec(ck: &mut Checker, spec: &Obj, opts: IngressOpts) {
    let sp = "spec";
    let rule_count = spec
        .get("rules")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let default_backend = ck.obj(spec, "defaultBackend", sp);
    if rule_count == 0 && default_backend.is_none() {
        let repr = match spec.get("rules") {
            Some(Value::Array(_)) => "[]networking.IngressRule{}",
            _ => "[]networking.IngressRule(nil)",
        };
        ck.push(FieldError::invalid(
            sp,
            go_repr(repr),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        ingress_backend(ck, b, "spec.defaultBackend");
    }
    for (i, r) in ck.obj_items(spec, "rules", sp) {
        let rp = index("spec.rules", i);
        let host = ck.string(r, "host", &rp);
        let mut wildcard = false;
        if !host.is_empty() {
            let hp = child(&rp, "host");
            if parse_ip(host).is_some() {
                ck.push(FieldError::invalid(
                    &hp,
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            wildcard = check_host(ck, host, &hp);
        }
        if !wildcard || !opts.allow_invalid_wildcard_host_rule {
            rule_value(ck, r, &rp);
        }
    }
    for (ti, t) in ck.obj_items(spec, "tls", sp) {
        let tp = index("spec.tls", ti);
        let hosts = ck.str_list(t, "hosts", &tp);
        for (i, h) in hosts.iter().enumerate() {
            check_host(ck, h, &index(&child(&tp, "hosts"), i));
        }
        let secret = ck.string(t, "secretName", &tp);
        if !opts.allow_invalid_secret_name && !secret.is_empty() {
            ck.extend(
                &child(&tp, "secretName"),
                secret,
                names::name_is_dns_subdomain(secret, false),
            );
        }
    }
    if let Some(c) = ck.str(spec, "ingressClassName", sp) {
        ck.extend(
            "spec.ingressClassName",
            c,
            names::name_is_dns_subdomain(c, false),
        );
    }
}

/// The update leniencies kube grants when the stored Ingress already holds
/// an invalid TLS secret name or an invalid rule under a wildcard host.
fn ingress_opts_for(old: &Obj) -> IngressOpts {
    let mut scratch = Checker::default();
    let spec = sub(&mut scratch, old, "spec", "");
    let mut opts = IngressOpts::default();
    for (_, t) in scratch.obj_items(spec, "tls", "spec") {
        let s = t.get("secretName").and_then(Value::as_str).unwrap_or("");
        if !s.is_empty() && !names::name_is_dns_subdomain(s, false).is_empty() {
            opts.allow_invalid_secret_name = true;
        }
    }
    for (_, r) in scratch.obj_items(spec, "rules", "spec") {
        let host = r.get("host").and_then(Value::as_str).unwrap_or("");
        if host.contains('*') {
            let mut rc = Checker::default();
            rule_value(&mut rc, r, "");
            if !rc.errs.is_empty() {
                opts.allow_invalid_wildcard_host_rule = true;
            }
        }
    }
    opts
}

/// networking.k8s.io/v1 Ingress.
pub(crate) fn ingress(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        true,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let opts = old.map(ingress_opts_for).unwrap_or_default();
    let spec = sub(ck, root, "spec", "");
    ingress_spec(ck, spec, opts);
    if old.is_none() {
        let ann = root
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(ANNOTATION_INGRESS_CLASS))
            .and_then(Value::as_str);
        let class = spec.get("ingressClassName").and_then(Value::as_str);
        if let (Some(a), Some(c)) = (ann, class)
            && a != c
        {
            ck.push(FieldError::invalid(
                format!("annotations.{ANNOTATION_INGRESS_CLASS}"),
                a,
                "must match `ingressClassName` when both are specified",
            ));
        }
    }
}

// ------------------------------------------------------------ ingressclass

/// `IsDomainPrefixedPath`.
fn domain_prefixed_path(ck: &mut Checker, v: &str, path: &str) {
    if v.is_empty() {
        ck.push(FieldError::required(path, ""));
        return;
    }
    let Some((host, rest)) = v
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        ck.push(FieldError::invalid(
            path,
            v,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    ck.extend(path, host, names::is_dns1123_subdomain(host));
    let ok = rest.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'/' | b'-'
                    | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
            )
    });
    if !ok {
        ck.push(FieldError::invalid(
            path,
            rest,
            names::regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
}

fn ingress_class_params(ck: &mut Checker, p: &Obj, path: &str) {
    typed_local_ref(ck, p, path);
    let Some(scope) = ck.str(p, "scope", path) else {
        ck.push(FieldError::required(child(path, "scope"), ""));
        return;
    };
    let ns = ck.str(p, "namespace", path);
    let np = child(path, "namespace");
    match scope {
        "Namespace" => match ns {
            None => ck.push(FieldError::required(
                np,
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(n) => ck.extend(&np, n, names::name_is_dns_label(n, false)),
        },
        "Cluster" => {
            if ns.is_some() {
                ck.push(FieldError::forbidden(
                    np,
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        other => ck.push(FieldError::not_supported(
            child(path, "scope"),
            other,
            &["Cluster", "Namespace"],
        )),
    }
}

fn ingress_class_body(ck: &mut Checker, root: &Obj) {
    let spec = sub(ck, root, "spec", "");
    let controller = ck.string(spec, "controller", "spec");
    if controller.len() > MAX_LEN_INGRESS_CLASS_CONTROLLER {
        ck.push(FieldError::too_long(
            "spec.controller",
            MAX_LEN_INGRESS_CLASS_CONTROLLER,
        ));
    }
    domain_prefixed_path(ck, controller, "spec.controller");
    if let Some(p) = ck.obj(spec, "parameters", "spec") {
        ingress_class_params(ck, p, "spec.parameters");
    }
}

/// networking.k8s.io/v1 IngressClass.
pub(crate) fn ingress_class(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        core_meta(
            ck,
            root,
            old,
            false,
            names::name_is_dns_subdomain,
            OnUpdate::UpdateOnly,
        );
        let get = |m: &Obj| {
            m.get("spec")
                .and_then(|s| s.get("controller"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (n, p) = (get(root), get(o));
        if n != p {
            ck.push(FieldError::invalid("spec.controller", n, FIELD_IMMUTABLE));
        }
    }
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, true);
    ingress_class_body(ck, root);
}

// ----------------------------------------------------------- networkpolicy

fn np_port(ck: &mut Checker, p: &Obj, path: &str) {
    if let Some(proto) = ck.str(p, "protocol", path)
        && !PROTOCOLS.contains(&proto)
    {
        ck.push(FieldError::not_supported(
            child(path, "protocol"),
            proto,
            PROTOCOLS,
        ));
    }
    let end = ck.i32(p, "endPort", path);
    let ep = child(path, "endPort");
    let pp = child(path, "port");
    match p.get("port") {
        None | Some(Value::Null) => {
            if let Some(e) = end {
                ck.push(FieldError::invalid(
                    ep,
                    e,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
        Some(Value::String(name)) => {
            if let Some(e) = end {
                ck.push(FieldError::invalid(
                    ep,
                    e,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            ck.extend(&pp, name, names::is_valid_port_name(name));
        }
        Some(_) => {
            let Some(port) = ck.i32(p, "port", path) else {
                return;
            };
            for m in names::is_valid_port_num(port) {
                ck.push(FieldError::invalid(&pp, port, m));
            }
            if let Some(e) = end {
                if e < port {
                    ck.push(FieldError::invalid(
                        &ep,
                        port,
                        "must be greater than or equal to `port`",
                    ));
                }
                for m in names::is_valid_port_num(e) {
                    ck.push(FieldError::invalid(&ep, e, m));
                }
            }
        }
    }
}

/// `ValidateIPBlock` (1.32: plain CIDR parsing, first bad `except` stops).
fn ip_block(ck: &mut Checker, b: &Obj, path: &str) {
    let cidr = ck.string(b, "cidr", path);
    let cp = child(path, "cidr");
    if cidr.is_empty() {
        ck.push(FieldError::required(cp, ""));
        return;
    }
    let Some(net) = parse_cidr(cidr) else {
        ck.push(FieldError::invalid(cp, cidr, "not a valid CIDR"));
        return;
    };
    let xp = child(path, "except");
    for (i, e) in ck.str_list(b, "except", path).into_iter().enumerate() {
        let ip = index(&xp, i);
        let Some(inner) = parse_cidr(e) else {
            ck.push(FieldError::invalid(ip, e, "not a valid CIDR"));
            return;
        };
        if !net.strictly_contains(&inner) {
            ck.push(FieldError::invalid(
                ip,
                e,
                "must be a strict subset of `cidr`",
            ));
        }
    }
}

fn np_peer(ck: &mut Checker, peer: &Obj, path: &str) {
    let mut count = 0;
    for k in ["podSelector", "namespaceSelector"] {
        if let Some(s) = ck.obj(peer, k, path) {
            count += 1;
            validate_label_selector(ck, s, &child(path, k));
        }
    }
    let block = ck.obj(peer, "ipBlock", path);
    if let Some(b) = block {
        count += 1;
        ip_block(ck, b, &child(path, "ipBlock"));
    }
    if count == 0 {
        ck.push(FieldError::required(path, "must specify a peer"));
    } else if count > 1 && block.is_some() {
        ck.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

fn np_spec(ck: &mut Checker, spec: &Obj) {
    let sp = "spec";
    let ps = sub(ck, spec, "podSelector", sp);
    validate_label_selector(ck, ps, "spec.podSelector");
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        let rp = child(sp, rules);
        for (i, r) in ck.obj_items(spec, rules, sp) {
            let ip = index(&rp, i);
            let portp = child(&ip, "ports");
            for (j, p) in ck.obj_items(r, "ports", &ip) {
                np_port(ck, p, &index(&portp, j));
            }
            let peerp = child(&ip, peers);
            for (j, p) in ck.obj_items(r, peers, &ip) {
                np_peer(ck, p, &index(&peerp, j));
            }
        }
    }
    let types = ck.str_list(spec, "policyTypes", sp);
    if types.len() > 2 {
        ck.push(FieldError::invalid(
            "spec.policyTypes",
            go_string_slice("networking.PolicyType", &types),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in types.iter().enumerate() {
        if *t != "Ingress" && *t != "Egress" {
            ck.push(FieldError::not_supported(
                index("spec.policyTypes", i),
                *t,
                &["Ingress", "Egress"],
            ));
        }
    }
}

/// networking.k8s.io/v1 NetworkPolicy.
pub(crate) fn network_policy(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        true,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let spec = sub(ck, root, "spec", "");
    np_spec(ck, spec);
}
