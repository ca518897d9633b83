//! Validation of core/v1 kinds: Namespace, ConfigMap, Secret, ServiceAccount,
//! Service, Pod (the object; its spec is in `pod`) and Node.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------- core/v1

pub(crate) fn namespace(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    match old {
        None => {
            validate_object_meta(ck, root, false, names::name_is_dns_label, true);
            let spec = sub(ck, root, "spec", "");
            for f in ck.str_list(spec, "finalizers", "spec") {
                ck.extend("spec.finalizers", f, names::is_qualified_name(f));
                crate::validation::metadata::validate_kube_finalizer_name(ck, f, "spec.finalizers");
            }
        }
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            finalizer_check(ck, root);
        }
    }
}

pub(super) fn data_map_checks(ck: &mut Checker, root: &Obj, field: &str) -> (Vec<String>, usize) {
    let mut keys = Vec::new();
    let mut total = 0usize;
    if let Some(m) = ck.obj(root, field, "") {
        for (k, v) in m {
            ck.extend_key(field, k, names::is_config_map_key(k));
            match v.as_str() {
                Some(s) => {
                    total = total.saturating_add(if field == "binaryData" {
                        base64_len(s)
                    } else {
                        s.len()
                    });
                }
                None => ck.push(FieldError::type_invalid(key(field, k), v.clone(), "string")),
            }
            keys.push(k.clone());
        }
    }
    (keys, total)
}

/// Decoded length of a base64 string (approximate for malformed input).
pub(super) fn base64_len(s: &str) -> usize {
    let trimmed = s.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

pub(super) const MAX_SECRET_SIZE: usize = 1024 * 1024;

pub(crate) fn config_map(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
        if o.get("immutable").and_then(Value::as_bool) == Some(true) {
            if root.get("immutable").and_then(Value::as_bool) != Some(true) {
                ck.push(FieldError::forbidden(
                    "immutable",
                    "field is immutable when `immutable` is set",
                ));
            }
            for f in ["data", "binaryData"] {
                if norm(root.get(f)) != norm(o.get(f)) {
                    ck.push(FieldError::forbidden(
                        f,
                        "field is immutable when `immutable` is set",
                    ));
                }
            }
        }
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    let mut total = 0usize;
    let binary: BTreeSet<String> = root
        .get("binaryData")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(m) = ck.obj(root, "data", "") {
        for (k, v) in m {
            ck.extend_key("data", k, names::is_config_map_key(k));
            if binary.contains(k) {
                ck.push(FieldError::invalid(
                    key("data", k),
                    k.as_str(),
                    "duplicate of key present in binaryData",
                ));
            }
            match v.as_str() {
                Some(s) => total = total.saturating_add(s.len()),
                None => ck.push(FieldError::type_invalid(
                    key("data", k),
                    v.clone(),
                    "string",
                )),
            }
        }
    }
    let (_, btotal) = data_map_checks(ck, root, "binaryData");
    total = total.saturating_add(btotal);
    ck.bool(root, "immutable", "");
    if total > MAX_SECRET_SIZE {
        ck.push(FieldError::too_long("[]", MAX_SECRET_SIZE));
    }
}

pub(super) fn norm(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        other => other,
    }
}

pub(crate) fn secret(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
        let nt = root.get("type").and_then(Value::as_str).unwrap_or("");
        let ot = o.get("type").and_then(Value::as_str).unwrap_or("");
        if nt != ot {
            ck.push(FieldError::invalid("type", nt, FIELD_IMMUTABLE));
        }
        if o.get("immutable").and_then(Value::as_bool) == Some(true) {
            if root.get("immutable").and_then(Value::as_bool) != Some(true) {
                ck.push(FieldError::forbidden(
                    "immutable",
                    "field is immutable when `immutable` is set",
                ));
            }
            if norm(root.get("data")) != norm(o.get("data")) {
                ck.push(FieldError::forbidden(
                    "data",
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    let mut total = 0usize;
    let mut data_keys = BTreeSet::new();
    if let Some(m) = ck.obj(root, "data", "") {
        for (k, v) in m {
            ck.extend_key("data", k, names::is_config_map_key(k));
            match v.as_str() {
                Some(s) => total = total.saturating_add(base64_len(s)),
                None => ck.push(FieldError::type_invalid(
                    key("data", k),
                    v.clone(),
                    "string",
                )),
            }
            data_keys.insert(k.as_str());
        }
    }
    // stringData is merged into data by the caller before validation in kube;
    // check its keys too.
    if let Some(m) = ck.obj(root, "stringData", "") {
        for (k, v) in m {
            ck.extend_key("data", k, names::is_config_map_key(k));
            if let Some(s) = v.as_str() {
                total = total.saturating_add(s.len());
            }
            data_keys.insert(k.as_str());
        }
    }
    if total > MAX_SECRET_SIZE {
        ck.push(FieldError::too_long("data", MAX_SECRET_SIZE));
    }
    ck.bool(root, "immutable", "");
    let ty = ck.string(root, "type", "");
    let has = |k: &str| data_keys.contains(k);
    match ty {
        "kubernetes.io/service-account-token" => {
            let meta = sub(ck, root, "metadata", "");
            let ann = meta.get("annotations").and_then(Value::as_object);
            let v = ann
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if v.is_empty() {
                ck.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => {
            ck.push(FieldError::required("data[.dockercfg]", ""));
        }
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
            ck.push(FieldError::required("data[.dockerconfigjson]", ""));
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            ck.push(FieldError::required("data[username]", ""));
            ck.push(FieldError::required("data[password]", ""));
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            ck.push(FieldError::required("data[ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            if !has("tls.crt") {
                ck.push(FieldError::required("data[tls.crt]", ""));
            }
            if !has("tls.key") {
                ck.push(FieldError::required("data[tls.key]", ""));
            }
        }
        _ => {}
    }
}

pub(crate) fn service_account(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    for (i, s) in ck.obj_items(root, "secrets", "") {
        ck.string(s, "name", &index("secrets", i));
    }
    ck.bool(root, "automountServiceAccountToken", "");
}

pub(super) const SERVICE_TYPES: &[&str] =
    &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

pub(crate) fn service(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        service_update(ck, root, o);
    }
    validate_object_meta(ck, root, true, names::name_is_dns1035_label, true);
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let ty = ck.string(spec, "type", sp);
    let cluster_ip = ck.string(spec, "clusterIP", sp);
    let ips = ck.str_list(spec, "clusterIPs", sp);
    let headless = cluster_ip == "None" || ips.first() == Some(&"None");
    let ports = ck.obj_items(spec, "ports", sp);
    if ports.is_empty() && !headless && ty != "ExternalName" {
        ck.push(FieldError::required("spec.ports", ""));
    }
    service_type(
        ck,
        spec,
        ty,
        !cluster_ip.is_empty() || !ips.is_empty(),
        headless,
    );
    service_ports(ck, &ports);
    let sel = ck.str_map(spec, "selector", sp);
    validate_labels(ck, &sel, "spec.selector");
    session_affinity(ck, spec);
    if ty.is_empty() {
        ck.push(FieldError::required("spec.type", ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        ck.push(FieldError::not_supported("spec.type", ty, SERVICE_TYPES));
    }
    service_port_uniqueness(ck, ty, &ports);
    traffic_and_families(ck, spec, ty);
}

/// What an update of a Service may not change: its cluster IP, unless it
/// moves to or from ExternalName.
fn service_update(ck: &mut Checker, root: &Obj, o: &Obj) {
    validate_object_meta_update(ck, root, o);
    finalizer_check(ck, root);
    let ns = root
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let os = o.get("spec").and_then(Value::as_object).unwrap_or(empty());
    // clusterIP may not change unless moving to/from ExternalName.
    let nt = ns.get("type").and_then(Value::as_str).unwrap_or("");
    let ot = os.get("type").and_then(Value::as_str).unwrap_or("");
    if nt != "ExternalName" && ot != "ExternalName" {
        let nip = ns.get("clusterIP").and_then(Value::as_str).unwrap_or("");
        let oip = os.get("clusterIP").and_then(Value::as_str).unwrap_or("");
        if !oip.is_empty() && nip != oip {
            ck.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                nip,
                "may not change once set",
            ));
        }
    }
}

/// The rules of the Service's type: no headless LoadBalancer or NodePort;
/// an ExternalName service has a DNS name and no cluster IPs or families.
fn service_type(ck: &mut Checker, spec: &Obj, ty: &str, has_cluster_ips: bool, headless: bool) {
    let sp = "spec";
    match ty {
        "LoadBalancer" | "NodePort" if headless => {
            ck.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                "None",
                format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => {
            if has_cluster_ips {
                ck.push(FieldError::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !ck.str_list(spec, "ipFamilies", sp).is_empty() {
                ck.push(FieldError::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if ck.str(spec, "ipFamilyPolicy", sp).is_some() {
                ck.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            let en = ck.string(spec, "externalName", sp);
            let cname = en.strip_suffix('.').unwrap_or(en);
            if cname.is_empty() {
                ck.push(FieldError::required("spec.externalName", ""));
            } else {
                ck.extend(
                    "spec.externalName",
                    cname,
                    names::is_dns1123_subdomain(cname),
                );
            }
        }
        _ => {}
    }
}

/// Each port: name (required when there are several, unique), number,
/// protocol, target port and app protocol.
fn service_ports(ck: &mut Checker, ports: &[(usize, &Obj)]) {
    let mut port_names = BTreeSet::new();
    let multi = ports.len() > 1;
    for (i, p) in ports {
        let pp = index("spec.ports", *i);
        let name = ck.string(p, "name", &pp);
        if multi && name.is_empty() {
            ck.push(FieldError::required(child(&pp, "name"), ""));
        } else if !name.is_empty() {
            ck.extend(&child(&pp, "name"), name, names::is_dns1123_label(name));
            if !port_names.insert(name) {
                ck.push(FieldError::duplicate(child(&pp, "name"), name));
            }
        }
        let port = ck.i32(p, "port", &pp).unwrap_or(0);
        for m in names::is_valid_port_num(port) {
            ck.push(FieldError::invalid(child(&pp, "port"), port, m));
        }
        let proto = ck.string(p, "protocol", &pp);
        if proto.is_empty() {
            ck.push(FieldError::required(child(&pp, "protocol"), ""));
        } else if !pod::PROTOCOLS.contains(&proto) {
            ck.push(FieldError::not_supported(
                child(&pp, "protocol"),
                proto,
                pod::PROTOCOLS,
            ));
        }
        let tp = child(&pp, "targetPort");
        match p.get("targetPort") {
            Some(Value::Number(n)) => {
                let v = n.as_i64().unwrap_or(0);
                for m in names::is_valid_port_num(v) {
                    ck.push(FieldError::invalid(&tp, v, m));
                }
            }
            Some(Value::String(s)) => ck.extend(&tp, s, names::is_valid_port_name(s)),
            None | Some(Value::Null) => {
                for m in names::is_valid_port_num(0) {
                    ck.push(FieldError::invalid(&tp, 0, m));
                }
            }
            Some(other) => ck.push(FieldError::type_invalid(
                &tp,
                other.clone(),
                "int or string",
            )),
        }
        if let Some(ap) = ck.str(p, "appProtocol", &pp) {
            ck.extend(&child(&pp, "appProtocol"), ap, names::is_qualified_name(ap));
        }
    }
}

/// `sessionAffinity` and its `sessionAffinityConfig`.
fn session_affinity(ck: &mut Checker, spec: &Obj) {
    let sp = "spec";
    let sa = ck.string(spec, "sessionAffinity", sp);
    match sa {
        "" => ck.push(FieldError::required("spec.sessionAffinity", "")),
        "ClientIP" => match spec
            .get("sessionAffinityConfig")
            .and_then(|c| c.get("clientIP"))
            .and_then(|c| c.get("timeoutSeconds"))
            .and_then(Value::as_i64)
        {
            None => ck.push(FieldError::required(
                "spec.sessionAffinityConfig",
                "when session affinity type is ClientIP",
            )),
            Some(t) if !(1..=86400).contains(&t) => ck.push(FieldError::invalid(
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                t,
                "must be greater than 0 and less than 86400",
            )),
            _ => {}
        },
        "None" => {
            if ck.obj(spec, "sessionAffinityConfig", sp).is_some() {
                ck.push(FieldError::forbidden(
                    "spec.sessionAffinityConfig",
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => ck.push(FieldError::not_supported(
            "spec.sessionAffinity",
            other,
            &["ClientIP", "None"],
        )),
    }
}

/// Node ports (none for ClusterIP services, unique per protocol) and ports
/// unique per protocol.
fn service_port_uniqueness(ck: &mut Checker, ty: &str, ports: &[(usize, &Obj)]) {
    if ty == "ClusterIP" {
        for (i, p) in ports {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                ck.push(FieldError::forbidden(
                    child(&index("spec.ports", *i), "nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (i, p) in ports {
        let np = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if np == 0 {
            continue;
        }
        let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
        if !node_ports.insert((proto, np)) {
            ck.push(FieldError::duplicate(
                child(&index("spec.ports", *i), "nodePort"),
                np,
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, p) in ports {
        let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !seen.insert((proto, port)) {
            ck.push(FieldError::duplicate(
                index("spec.ports", *i),
                go_repr(format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    go_quote(proto)
                )),
            ));
        }
    }
}

/// Traffic policies, load-balancer node ports, traffic distribution and IP
/// families.
fn traffic_and_families(ck: &mut Checker, spec: &Obj, ty: &str) {
    let sp = "spec";
    let etp = ck.string(spec, "externalTrafficPolicy", sp);
    let has_ext_ips = !ck.str_list(spec, "externalIPs", sp).is_empty();
    let externally = ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && has_ext_ips);
    if !externally {
        if !etp.is_empty() {
            ck.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                etp,
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        ck.push(FieldError::required("spec.externalTrafficPolicy", ""));
    } else if etp != "Cluster" && etp != "Local" {
        ck.push(FieldError::not_supported(
            "spec.externalTrafficPolicy",
            etp,
            &["Cluster", "Local"],
        ));
    }
    if ck.bool(spec, "allocateLoadBalancerNodePorts", sp).is_some() && ty != "LoadBalancer" {
        ck.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if ty == "LoadBalancer"
        && spec
            .get("allocateLoadBalancerNodePorts")
            .is_none_or(Value::is_null)
    {
        ck.push(FieldError::required("allocateLoadBalancerNodePorts", ""));
    }
    let itp = ck.str(spec, "internalTrafficPolicy", sp);
    match itp {
        None if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            ck.push(FieldError::required("spec.internalTrafficPolicy", ""));
        }
        Some(v) if v != "Cluster" && v != "Local" => {
            ck.push(FieldError::not_supported(
                "spec.internalTrafficPolicy",
                v,
                &["Cluster", "Local"],
            ));
        }
        _ => {}
    }
    if let Some(td) = ck.str(spec, "trafficDistribution", sp)
        && td != "PreferClose"
    {
        ck.push(FieldError::not_supported(
            "spec.trafficDistribution",
            td,
            &["PreferClose"],
        ));
    }
    if let Some(p) = ck.str(spec, "ipFamilyPolicy", sp)
        && !matches!(p, "SingleStack" | "PreferDualStack" | "RequireDualStack")
    {
        ck.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            p,
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    for (i, f) in ck.str_list(spec, "ipFamilies", sp).iter().enumerate() {
        if *f != "IPv4" && *f != "IPv6" {
            ck.push(FieldError::not_supported(
                index("spec.ipFamilies", i),
                *f,
                &["IPv4", "IPv6"],
            ));
        }
    }
}

pub(crate) fn pod_kind(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    let meta = sub(ck, root, "metadata", "");
    let name = meta.get("name").and_then(Value::as_str);
    let ann = meta.get("annotations").and_then(Value::as_object);
    let spec = sub(ck, root, "spec", "");
    if let Some(mirror) = ann
        .and_then(|a| a.get("kubernetes.io/config.mirror"))
        .and_then(Value::as_str)
        && spec
            .get("nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
    {
        ck.push(FieldError::invalid(
            "metadata.annotations[kubernetes.io/config.mirror]",
            mirror,
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    validate_pod_spec(
        ck,
        spec,
        "spec",
        PodOpts {
            is_pod: true,
            pod_name: name,
        },
    );
    if let Some(o) = old {
        validate_pod_spec_update(ck, root, o);
    }
}

pub(crate) fn node(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    match old {
        None => validate_object_meta(ck, root, false, names::name_is_dns_subdomain, true),
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            finalizer_check(ck, root);
        }
    }
    let spec = sub(ck, root, "spec", "");
    let mut uniq = BTreeSet::new();
    for (i, t) in ck.obj_items(spec, "taints", "spec") {
        // kube reports taint errors under metadata.taints.
        let ip = index("metadata.taints", i);
        let k = ck.string(t, "key", &ip);
        ck.extend(&child(&ip, "key"), k, names::is_qualified_name(k));
        let v = ck.string(t, "value", &ip);
        let errs = names::is_valid_label_value(v);
        if !errs.is_empty() {
            ck.push(FieldError::invalid(child(&ip, "value"), v, errs.join(";")));
        }
        let e = ck.string(t, "effect", &ip);
        if e.is_empty() {
            ck.push(FieldError::required(child(&ip, "effect"), ""));
        } else if !matches!(e, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            ck.push(FieldError::not_supported(
                child(&ip, "effect"),
                e,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
        if !uniq.insert((e, k)) {
            ck.push(FieldError::new(
                crate::validation::FieldErrorKind::Duplicate,
                ip,
                Some(Value::Object(t.clone())),
                "taints must be unique by key and effect pair",
            ));
        }
    }
    if let Some(o) = old {
        let os = o.get("spec").and_then(Value::as_object).unwrap_or(empty());
        let old_cidrs = os.get("podCIDRs").and_then(Value::as_array);
        if let Some(oc) = old_cidrs.filter(|a| !a.is_empty())
            && spec.get("podCIDRs").and_then(Value::as_array) != Some(oc)
        {
            ck.push(FieldError::forbidden(
                "spec.podCIDRs",
                "node updates may not change podCIDR except from \"\" to valid",
            ));
        }
        let op = os.get("providerID").and_then(Value::as_str).unwrap_or("");
        if !op.is_empty() && spec.get("providerID").and_then(Value::as_str).unwrap_or("") != op {
            ck.push(FieldError::forbidden(
                "spec.providerID",
                "node updates may not change providerID except from \"\" to valid",
            ));
        }
        if spec.get("externalID") != os.get("externalID") {
            ck.push(FieldError::forbidden(
                "spec.externalID",
                "may not be updated",
            ));
        }
    }
    ck.bool(spec, "unschedulable", "spec");
}
