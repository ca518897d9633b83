//! Per-kind validation for the built-in kinds: core v1 Namespace, ConfigMap,
//! Secret, Service, ServiceAccount, Pod, Event, Node; apps/v1 Deployment,
//! ReplicaSet, StatefulSet, DaemonSet; batch/v1 Job; coordination Lease;
//! events.k8s.io Event; RBAC roles and bindings; admission webhook
//! configurations. Pod specs live in [`pod`].

/// Pod spec and template validation.
pub mod pod;

use super::metadata::{
    FIELD_IMMUTABLE, NameFn, validate_labels, validate_object_meta, validate_object_meta_update,
};
use super::names;
use super::{Checker, FieldError, Obj, child, go_quote, go_repr, index, key};
use pod::{
    PodOpts, labels_repr, validate_pod_spec, validate_pod_spec_update, validate_pod_template_spec,
};
use serde_json::Value;
use std::collections::BTreeSet;

/// A kind's validator: `(checker, new object, old object on update)`.
pub type ValidateFn = fn(&mut Checker, &Obj, Option<&Obj>);

/// Scope and validator of a built-in kind.
pub struct KindSpec {
    /// Whether objects of the kind live in a namespace.
    pub namespaced: bool,
    /// The validator.
    pub validate: ValidateFn,
}

/// Looks up the validator for `(group, resource)`.
pub fn lookup(group: &str, resource: &str) -> Option<KindSpec> {
    let (namespaced, validate): (bool, ValidateFn) = match (group, resource) {
        ("", "namespaces") => (false, namespace),
        ("", "configmaps") => (true, config_map),
        ("", "secrets") => (true, secret),
        ("", "services") => (true, service),
        ("", "serviceaccounts") => (true, service_account),
        ("", "pods") => (true, pod_kind),
        ("", "events") => (true, core_event),
        ("", "nodes") => (false, node),
        ("apps", "deployments") => (true, deployment),
        ("apps", "replicasets") => (true, replica_set),
        ("apps", "statefulsets") => (true, stateful_set),
        ("apps", "daemonsets") => (true, daemon_set),
        ("batch", "jobs") => (true, job),
        ("coordination.k8s.io", "leases") => (true, lease),
        ("events.k8s.io", "events") => (true, events_event),
        ("rbac.authorization.k8s.io", "roles") => (true, role),
        ("rbac.authorization.k8s.io", "clusterroles") => (false, cluster_role),
        ("rbac.authorization.k8s.io", "rolebindings") => (true, role_binding),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => (false, cluster_role_binding),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            (false, validating_webhooks)
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            (false, mutating_webhooks)
        }
        _ => return None,
    };
    Some(KindSpec {
        namespaced,
        validate,
    })
}

fn empty() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

fn sub<'a>(ck: &mut Checker, o: &'a Obj, k: &str, path: &str) -> &'a Obj {
    ck.obj(o, k, path).unwrap_or(empty())
}

fn nonneg(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
    if let Some(v) = ck.i64(o, k, path)
        && v < 0
    {
        ck.push(FieldError::invalid(
            child(path, k),
            v,
            "must be greater than or equal to 0",
        ));
    }
}

fn nonneg_i32(ck: &mut Checker, o: &Obj, k: &str, path: &str) -> i64 {
    let v = ck.i32(o, k, path).unwrap_or(0);
    if v < 0 {
        ck.push(FieldError::invalid(
            child(path, k),
            v,
            "must be greater than or equal to 0",
        ));
    }
    v
}

/// Standard create/update shape: create runs `meta + body`; update runs
/// `meta update + (meta again if `revalidate`) + body`.
fn meta_for(
    ck: &mut Checker,
    root: &Obj,
    old: Option<&Obj>,
    namespaced: bool,
    f: NameFn,
    revalidate_on_update: bool,
) {
    match old {
        None => validate_object_meta(ck, root, namespaced, f, true),
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            if revalidate_on_update {
                validate_object_meta(ck, root, namespaced, f, true);
            }
        }
    }
}

fn finalizer_check(ck: &mut Checker, root: &Obj) {
    // Core-group per-index finalizer check for update paths (ValidateObjectMetaUpdate in core).
    let meta = sub(ck, root, "metadata", "");
    let fins = ck.str_list(meta, "finalizers", "metadata");
    for (i, f) in fins.iter().enumerate() {
        super::metadata::validate_kube_finalizer_name(ck, f, &index("metadata.finalizers", i));
    }
}

// ---------------------------------------------------------------- core/v1

fn namespace(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    match old {
        None => {
            validate_object_meta(ck, root, false, names::name_is_dns_label, true);
            let spec = sub(ck, root, "spec", "");
            for f in ck.str_list(spec, "finalizers", "spec") {
                ck.extend("spec.finalizers", f, names::is_qualified_name(f));
                super::metadata::validate_kube_finalizer_name(ck, f, "spec.finalizers");
            }
        }
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            finalizer_check(ck, root);
        }
    }
}

fn data_map_checks(ck: &mut Checker, root: &Obj, field: &str) -> (Vec<String>, usize) {
    let mut keys = Vec::new();
    let mut total = 0usize;
    if let Some(m) = ck.obj(root, field, "") {
        for (k, v) in m {
            ck.extend(&key(field, k), k, names::is_config_map_key(k));
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
fn base64_len(s: &str) -> usize {
    let trimmed = s.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

const MAX_SECRET_SIZE: usize = 1024 * 1024;

fn config_map(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
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
            ck.extend(&key("data", k), k, names::is_config_map_key(k));
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

fn norm(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        other => other,
    }
}

fn secret(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
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
            ck.extend(&key("data", k), k, names::is_config_map_key(k));
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
            ck.extend(&key("data", k), k, names::is_config_map_key(k));
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

fn service_account(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
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

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

fn service(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
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
    match ty {
        "LoadBalancer" | "NodePort" if headless => {
            ck.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                "None",
                format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => {
            if !cluster_ip.is_empty() || !ips.is_empty() {
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
    let mut port_names = BTreeSet::new();
    let multi = ports.len() > 1;
    for (i, p) in &ports {
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
    let sel = ck.str_map(spec, "selector", sp);
    validate_labels(ck, &sel, "spec.selector");
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
    if ty.is_empty() {
        ck.push(FieldError::required("spec.type", ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        ck.push(FieldError::not_supported("spec.type", ty, SERVICE_TYPES));
    }
    if ty == "ClusterIP" {
        for (i, p) in &ports {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                ck.push(FieldError::forbidden(
                    child(&index("spec.ports", *i), "nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (i, p) in &ports {
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
    for (i, p) in &ports {
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

fn pod_kind(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
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

fn node(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
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
                super::FieldErrorKind::Duplicate,
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

// ------------------------------------------------------------------ events

fn event_common(ck: &mut Checker, root: &Obj, strict_v1: bool) {
    // Field names follow kube's internal Event (paths are those of core/v1).
    let meta = sub(ck, root, "metadata", "");
    let ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    let (involved, reporting_controller, note_field, event_time) = if strict_v1 {
        ("regarding", "reportingController", "note", "eventTime")
    } else {
        (
            "involvedObject",
            "reportingComponent",
            "message",
            "eventTime",
        )
    };
    let inv = sub(ck, root, involved, "");
    let inv_ns = ck.string(inv, "namespace", involved);
    let has_event_time = !matches!(root.get(event_time), None | Some(Value::Null));
    if !has_event_time {
        if inv_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                ck.push(FieldError::invalid(
                    "involvedObject.namespace",
                    inv_ns,
                    "does not match event.namespace",
                ));
            }
        } else if ns != inv_ns {
            ck.push(FieldError::invalid(
                "involvedObject.namespace",
                inv_ns,
                "does not match event.namespace",
            ));
        }
    } else {
        if inv_ns.is_empty() && ns != "default" && ns != "kube-system" {
            ck.push(FieldError::invalid(
                "involvedObject.namespace",
                inv_ns,
                "does not match event.namespace",
            ));
        }
        let rc = ck.string(root, reporting_controller, "");
        if rc.is_empty() {
            ck.push(FieldError::required(reporting_controller, ""));
        }
        ck.extend(reporting_controller, rc, names::is_qualified_name(rc));
        let limited = [
            ("reportingInstance", "reportingInstance", 128usize),
            ("action", "action", 128),
            ("reason", "reason", 128),
        ];
        for (json, go, limit) in limited {
            let v = ck.string(root, json, "");
            if v.is_empty() {
                ck.push(FieldError::required(go, ""));
            }
            if v.len() > limit {
                ck.push(FieldError::invalid(
                    go,
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        let msg = ck.string(root, note_field, "");
        if msg.len() > 1024 {
            ck.push(FieldError::invalid(
                "message",
                "",
                "can have at most 1024 characters",
            ));
        }
    }
    ck.extend("namespace", ns, names::is_dns1123_subdomain(ns));
}

fn core_event(ck: &mut Checker, root: &Obj, _old: Option<&Obj>) {
    event_common(ck, root, false);
}

fn events_event(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    event_common(ck, root, true);
    match old {
        None => validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true),
        Some(o) => validate_object_meta_update(ck, root, o),
    }
    if let Some(s) = ck.obj(root, "series", "") {
        let c = ck.i32(s, "count", "series").unwrap_or(0);
        if c < 2 {
            ck.push(FieldError::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if matches!(s.get("lastObservedTime"), None | Some(Value::Null)) {
            ck.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    if old.is_none() {
        if matches!(root.get("eventTime"), None | Some(Value::Null)) {
            ck.push(FieldError::required("eventTime", ""));
        }
        let ty = ck.string(root, "type", "");
        if ty != "Normal" && ty != "Warning" {
            ck.push(FieldError::invalid(
                "type",
                "",
                format!("has invalid value: {ty}"),
            ));
        }
        for (json, go) in [
            ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"),
        ] {
            if !matches!(root.get(json), None | Some(Value::Null)) {
                ck.push(FieldError::invalid(go, "", "needs to be unset"));
            }
        }
        if root
            .get("deprecatedCount")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            != 0
        {
            ck.push(FieldError::invalid("count", "", "needs to be unset"));
        }
        let src = root.get("deprecatedSource").and_then(Value::as_object);
        let set = src.is_some_and(|s| {
            ["component", "host"]
                .iter()
                .any(|k| !s.get(*k).and_then(Value::as_str).unwrap_or("").is_empty())
        });
        if set {
            ck.push(FieldError::invalid("source", "", "needs to be unset"));
        }
    } else if let Some(o) = old {
        for (json, go) in [
            ("regarding", "involvedObject"),
            ("reason", "reason"),
            ("note", "message"),
            ("type", "type"),
            ("eventTime", "eventTime"),
            ("action", "action"),
            ("related", "related"),
            ("reportingController", "reportingController"),
            ("reportingInstance", "reportingInstance"),
        ] {
            let n = root.get(json).cloned().unwrap_or(Value::Null);
            if n != o.get(json).cloned().unwrap_or(Value::Null) {
                ck.push(FieldError::invalid(go, n, FIELD_IMMUTABLE));
            }
        }
    }
}

// -------------------------------------------------------------- selectors

fn req_repr(r: &Obj) -> String {
    let s = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
    let values = match r.get("values").and_then(Value::as_array) {
        None => "[]string(nil)".to_string(),
        Some(a) => {
            let q: Vec<String> = a
                .iter()
                .map(|v| go_quote(v.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    };
    format!(
        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
        s("key"),
        s("operator")
    )
}

/// Go `%#v` of a `metav1.LabelSelector` (as kube 1.32 prints it).
pub fn selector_repr(sel: Option<&Obj>) -> Value {
    let Some(sel) = sel else {
        return go_repr("(*v1.LabelSelector)(nil)");
    };
    let ml = match sel.get("matchLabels").and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v.as_str().unwrap_or(""))))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    };
    let me = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(a) => {
            let parts: Vec<String> = a
                .iter()
                .filter_map(Value::as_object)
                .map(req_repr)
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    go_repr(format!(
        "v1.LabelSelector{{MatchLabels:{ml}, MatchExpressions:{me}}}"
    ))
}

/// ValidateLabelSelector (strict label values); returns whether the selector
/// converts to a usable selector.
fn validate_label_selector(ck: &mut Checker, sel: &Obj, path: &str) -> bool {
    let ml = ck.str_map(sel, "matchLabels", path);
    validate_labels(ck, &ml, &child(path, "matchLabels"));
    let mut ok = true;
    let ep = child(path, "matchExpressions");
    for (i, r) in ck.obj_items(sel, "matchExpressions", path) {
        let ip = index(&ep, i);
        let op = ck.string(r, "operator", &ip);
        let values = ck.str_list(r, "values", &ip);
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    ok = false;
                    ck.push(FieldError::required(
                        child(&ip, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    ok = false;
                    ck.push(FieldError::forbidden(
                        child(&ip, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => {
                ok = false;
                ck.push(FieldError::invalid(
                    child(&ip, "operator"),
                    other,
                    "not a valid selector operator",
                ));
            }
        }
        let k = ck.string(r, "key", &ip);
        ck.extend(&child(&ip, "key"), k, names::is_qualified_name(k));
        for (vi, v) in values.iter().enumerate() {
            ck.extend(
                &index(&child(&ip, "values"), vi),
                v,
                names::is_valid_label_value(v),
            );
        }
    }
    ok
}

fn selector_is_empty(sel: &Obj) -> bool {
    sel.get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty())
        && sel
            .get("matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty())
}

fn selector_matches(sel: &Obj, labels: Option<&Obj>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if get(k) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(me) = sel.get("matchExpressions").and_then(Value::as_array) {
        for r in me {
            let k = r.get("key").and_then(Value::as_str).unwrap_or("");
            let vals: Vec<&str> = r
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let cur = get(k);
            let ok = match r.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => cur.is_some_and(|c| vals.contains(&c)),
                "NotIn" => cur.is_none_or(|c| !vals.contains(&c)),
                "Exists" => cur.is_some(),
                "DoesNotExist" => cur.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// Checks that the selector matches the template labels.
fn check_template_match(ck: &mut Checker, sel: &Obj, tmpl: &Obj, tpath: &str) {
    if selector_is_empty(sel) {
        return;
    }
    let labels = tmpl
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    if !selector_matches(sel, labels) {
        ck.push(FieldError::invalid(
            child(&child(tpath, "metadata"), "labels"),
            labels_repr(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

// -------------------------------------------------------------------- apps

fn int_or_percent(ck: &mut Checker, o: &Obj, k: &str, path: &str) -> Option<i64> {
    let fp = child(path, k);
    match o.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => {
            let v = n.as_i64().unwrap_or(0);
            if v < 0 {
                ck.push(FieldError::invalid(
                    &fp,
                    v,
                    "must be greater than or equal to 0",
                ));
            }
            Some(v)
        }
        Some(Value::String(s)) => {
            let errs = names::is_valid_percent(s);
            if !errs.is_empty() {
                for m in errs {
                    ck.push(FieldError::invalid(&fp, s.as_str(), m));
                }
                return Some(0);
            }
            let v: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            if v > 100 {
                ck.push(FieldError::invalid(
                    &fp,
                    s.as_str(),
                    "must not be greater than 100%",
                ));
            }
            Some(v)
        }
        Some(other) => {
            ck.push(FieldError::type_invalid(
                &fp,
                other.clone(),
                "int or string",
            ));
            None
        }
    }
}

fn rs_like_spec(ck: &mut Checker, spec: &Obj, kind: &str, selector_word: &str) {
    let sp = "spec";
    nonneg_i32(ck, spec, "replicas", sp);
    if kind != "Deployment" {
        nonneg_i32(ck, spec, "minReadySeconds", sp);
    }
    let sel = ck.obj(spec, "selector", sp);
    let mut usable = false;
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            usable = validate_label_selector(ck, s, "spec.selector");
            if selector_is_empty(s) {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    format!("empty selector is invalid for {selector_word}"),
                ));
            }
        }
    }
    let tmpl = sub(ck, spec, "template", sp);
    if let Some(s) = sel {
        if usable {
            check_template_match(ck, s, tmpl, "spec.template");
        } else {
            ck.push(FieldError::invalid(
                "spec.selector",
                selector_repr(Some(s)),
                "invalid label selector",
            ));
        }
    }
    if sel.is_none() || usable {
        validate_pod_template_spec(ck, tmpl, "spec.template");
        let tspec = tmpl
            .get("spec")
            .and_then(Value::as_object)
            .unwrap_or(empty());
        let rp = tspec
            .get("restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("");
        if rp != "Always" {
            ck.push(FieldError::not_supported(
                "spec.template.spec.restartPolicy",
                rp,
                &["Always"],
            ));
        }
        if !matches!(tspec.get("activeDeadlineSeconds"), None | Some(Value::Null)) {
            ck.push(FieldError::forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                format!("activeDeadlineSeconds in {kind} is not Supported"),
            ));
        }
    }
}

fn selector_immutable(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    let Some(o) = old else { return };
    let ns = root.get("spec").and_then(|s| s.get("selector"));
    let os = o.get("spec").and_then(|s| s.get("selector"));
    if norm(ns) != norm(os) {
        ck.push(FieldError::invalid(
            "spec.selector",
            selector_repr(ns.and_then(Value::as_object)),
            FIELD_IMMUTABLE,
        ));
    }
}

fn deployment(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    rs_like_spec(ck, spec, "ReplicaSet", "deployment");
    // Strategy.
    let st = sub(ck, spec, "strategy", "spec");
    let ty = ck.string(st, "type", "spec.strategy");
    match ty {
        "Recreate" => {
            if ck.obj(st, "rollingUpdate", "spec.strategy").is_some() {
                ck.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match ck.obj(st, "rollingUpdate", "spec.strategy") {
            None => ck.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let rp = "spec.strategy.rollingUpdate";
                let mu = int_or_percent(ck, ru, "maxUnavailable", rp).unwrap_or(0);
                let ms = int_or_percent(ck, ru, "maxSurge", rp).unwrap_or(0);
                if mu == 0 && ms == 0 {
                    ck.push(FieldError::invalid(
                        "spec.strategy.rollingUpdate.maxUnavailable",
                        ru.get("maxUnavailable").cloned().unwrap_or(Value::from(0)),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
            }
        },
        other => ck.push(FieldError::not_supported(
            "spec.strategy",
            go_repr(format!(
                "apps.DeploymentStrategy{{Type:{}}}",
                go_quote(other)
            )),
            &["Recreate", "RollingUpdate"],
        )),
    }
    let mrs = nonneg_i32(ck, spec, "minReadySeconds", "spec");
    nonneg(ck, spec, "revisionHistoryLimit", "spec");
    if let Some(pds) = ck.i32(spec, "progressDeadlineSeconds", "spec") {
        if pds < 0 {
            ck.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pds,
                "must be greater than or equal to 0",
            ));
        }
        if pds <= mrs {
            ck.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    ck.bool(spec, "paused", "spec");
    selector_immutable(ck, root, old);
}

fn replica_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    rs_like_spec(ck, spec, "ReplicaSet", "deployment");
    selector_immutable(ck, root, old);
}

fn daemon_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    let spec = sub(ck, root, "spec", "");
    let sel = ck.obj(spec, "selector", "spec");
    let tmpl = sub(ck, spec, "template", "spec");
    if let Some(s) = sel {
        if validate_label_selector(ck, s, "spec.selector") {
            check_template_match(ck, s, tmpl, "spec.template");
        }
        if selector_is_empty(s) {
            ck.push(FieldError::invalid(
                "spec.selector",
                selector_repr(Some(s)),
                "empty selector is invalid for daemonset",
            ));
        }
    }
    validate_pod_template_spec(ck, tmpl, "spec.template");
    let tspec = tmpl
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let rp = tspec
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if rp != "Always" {
        ck.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            rp,
            &["Always"],
        ));
    }
    nonneg_i32(ck, spec, "minReadySeconds", "spec");
    nonneg(ck, spec, "revisionHistoryLimit", "spec");
    selector_immutable(ck, root, old);
}

fn stateful_set(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let pmp = ck.string(spec, "podManagementPolicy", sp);
    match pmp {
        "" => ck.push(FieldError::required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => ck.push(FieldError::invalid(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let us = sub(ck, spec, "updateStrategy", sp);
    let ust = ck.string(us, "type", "spec.updateStrategy");
    let ru = ck.obj(us, "rollingUpdate", "spec.updateStrategy");
    match ust {
        "" => ck.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(r) = ru {
                ck.push(FieldError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    Value::Object(r.clone()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = ru {
                nonneg_i32(ck, r, "partition", "spec.updateStrategy.rollingUpdate");
                if let Some(mu) =
                    int_or_percent(ck, r, "maxUnavailable", "spec.updateStrategy.rollingUpdate")
                    && mu == 0
                {
                    ck.push(FieldError::invalid(
                        "spec.updateStrategy.rollingUpdate.maxUnavailable",
                        r.get("maxUnavailable").cloned().unwrap_or(Value::Null),
                        "cannot be 0",
                    ));
                }
            }
        }
        other => ck.push(FieldError::invalid(
            "spec.updateStrategy",
            Value::Object(us.clone()),
            {
                let _ = other;
                "must be 'RollingUpdate' or 'OnDelete'"
            },
        )),
    }
    if let Some(p) = ck.obj(spec, "persistentVolumeClaimRetentionPolicy", sp) {
        for f in ["whenDeleted", "whenScaled"] {
            let v = ck.string(p, f, "spec.persistentVolumeClaimRetentionPolicy");
            if v != "Retain" && v != "Delete" {
                ck.push(FieldError::not_supported(
                    child("spec.persistentVolumeClaimRetentionPolicy", f),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonneg_i32(ck, spec, "replicas", sp);
    nonneg_i32(ck, spec, "minReadySeconds", sp);
    if let Some(o) = ck.obj(spec, "ordinals", sp) {
        let s = ck.i32(o, "start", "spec.ordinals").unwrap_or(0);
        if s < 0 {
            ck.push(FieldError::invalid(
                "spec.ordinals.start",
                s,
                "must be greater than or equal to 0",
            ));
        }
    }
    let sel = ck.obj(spec, "selector", sp);
    let tmpl = sub(ck, spec, "template", sp);
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            let usable = validate_label_selector(ck, s, "spec.selector");
            if selector_is_empty(s) {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    "empty selector is invalid for statefulset",
                ));
            }
            if usable {
                check_template_match(ck, s, tmpl, "spec.template");
            } else {
                ck.push(FieldError::invalid(
                    "spec.selector",
                    selector_repr(Some(s)),
                    "",
                ));
            }
        }
    }
    // kube only checks template labels/annotations for StatefulSets.
    let tmeta = tmpl
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let labels = ck.str_map(tmeta, "labels", "spec.template.metadata");
    validate_labels(ck, &labels, "spec.template.labels");
    let ann = ck.str_map(tmeta, "annotations", "spec.template.metadata");
    super::metadata::validate_annotations(ck, &ann, "spec.template.annotations");
    let tspec = tmpl
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let rp = tspec
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if rp != "Always" {
        ck.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            rp,
            &["Always"],
        ));
    }
    if !matches!(tspec.get("activeDeadlineSeconds"), None | Some(Value::Null)) {
        ck.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    if let Some(o) = old {
        let mut n = spec.clone();
        let os = o
            .get("spec")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for k in [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        ] {
            match os.get(k) {
                Some(v) => n.insert(k.into(), v.clone()),
                None => n.remove(k),
            };
        }
        if n != os {
            ck.push(FieldError::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
}

// ------------------------------------------------------------------- batch

fn job(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let meta = sub(ck, root, "metadata", "");
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    let uid = meta.get("uid").and_then(Value::as_str).unwrap_or("");
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let manual = ck.bool(spec, "manualSelector", sp) == Some(true);
    let tmpl = sub(ck, spec, "template", sp);
    let tlabels = tmpl
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let sel = ck.obj(spec, "selector", sp);
    if old.is_none()
        && !manual
        && let (Some(tl), Some(s)) = (tlabels, sel)
    {
        if uid.is_empty() {
            ck.push(FieldError::required("metadata.uid", ""));
        }
        for (k, want) in [
            ("batch.kubernetes.io/controller-uid", uid),
            ("batch.kubernetes.io/job-name", name),
        ] {
            let fp = key("spec.template.metadata.labels", k);
            match tl.get(k).and_then(Value::as_str) {
                None => ck.push(FieldError::required(fp, format!("must be '{want}'"))),
                Some(v) if v != want => ck.push(FieldError::invalid(
                    fp,
                    Value::Object(tl.clone()),
                    format!("must be '{want}'"),
                )),
                _ => {}
            }
        }
        let mut expected = Obj::new();
        expected.insert(
            "batch.kubernetes.io/controller-uid".into(),
            Value::String(uid.to_string()),
        );
        if !selector_matches(s, Some(&expected)) {
            ck.push(FieldError::invalid(
                "spec.selector",
                selector_repr(Some(s)),
                "`selector` not auto-generated",
            ));
        }
    }
    for f in [
        "parallelism",
        "completions",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonneg_i32(ck, spec, f, sp);
    }
    for f in ["activeDeadlineSeconds", "ttlSecondsAfterFinished"] {
        nonneg(ck, spec, f, sp);
    }
    if let Some(cm) = ck.str(spec, "completionMode", sp) {
        if cm != "NonIndexed" && cm != "Indexed" {
            ck.push(FieldError::not_supported(
                "spec.completionMode",
                cm,
                &["NonIndexed", "Indexed"],
            ));
        }
        if cm == "Indexed" {
            let completions = spec.get("completions").and_then(Value::as_i64);
            match completions {
                None => ck.push(FieldError::required(
                    "spec.completions",
                    "when completion mode is Indexed",
                )),
                Some(c) if c > 0 => {
                    let host = format!("{name}-{}", c - 1);
                    if !names::is_dns1123_label(&host).is_empty() {
                        ck.push(FieldError::invalid(
                            "metadata.name",
                            name,
                            format!("will not able to create pod with invalid DNS label: {host}"),
                        ));
                    }
                }
                _ => {}
            }
            if let Some(p) = spec.get("parallelism").and_then(Value::as_i64)
                && p > 100_000
            {
                ck.push(FieldError::invalid(
                    "spec.parallelism",
                    p,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
        }
    }
    if let Some(p) = ck.str(spec, "podReplacementPolicy", sp)
        && p != "TerminatingOrFailed"
        && p != "Failed"
    {
        ck.push(FieldError::not_supported(
            "spec.podReplacementPolicy",
            p,
            &["TerminatingOrFailed", "Failed"],
        ));
    }
    match sel {
        None => ck.push(FieldError::required("spec.selector", "")),
        Some(s) => {
            if validate_label_selector(ck, s, "spec.selector") {
                check_template_match(ck, s, tmpl, "spec.template");
            }
        }
    }
    validate_pod_template_spec(ck, tmpl, "spec.template");
    let tspec = tmpl
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let rp = tspec
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    let has_pfp = !matches!(spec.get("podFailurePolicy"), None | Some(Value::Null));
    if rp != "OnFailure" && rp != "Never" {
        ck.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            rp,
            &["OnFailure", "Never"],
        ));
    } else if has_pfp && rp != "Never" {
        ck.push(FieldError::invalid(
            "spec.template.spec.restartPolicy",
            rp,
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    ck.bool(spec, "suspend", sp);
    if let Some(o) = old {
        let os = o.get("spec").and_then(Value::as_object).unwrap_or(empty());
        let ns_sel = spec.get("selector");
        if norm(ns_sel) != norm(os.get("selector")) {
            ck.push(FieldError::invalid(
                "spec.selector",
                selector_repr(ns_sel.and_then(Value::as_object)),
                FIELD_IMMUTABLE,
            ));
        }
        for f in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex"] {
            if spec.get(f) != os.get(f) {
                let v = spec.get(f).cloned().unwrap_or(Value::Null);
                ck.push(FieldError::invalid(child("spec", f), v, FIELD_IMMUTABLE));
            }
        }
        let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
        if spec.get("completions") != os.get("completions") {
            let nc = spec.get("completions").cloned().unwrap_or(Value::Null);
            let same_as_par = spec.get("completions") == spec.get("parallelism");
            if !(indexed && same_as_par) {
                ck.push(FieldError::invalid("spec.completions", nc, FIELD_IMMUTABLE));
            }
        }
        let suspended = os.get("suspend").and_then(Value::as_bool) == Some(true);
        let ot = os.get("template").cloned().unwrap_or(Value::Null);
        let nt = spec.get("template").cloned().unwrap_or(Value::Null);
        if nt != ot {
            let mut nt2 = nt.clone();
            let mut ot2 = ot.clone();
            if suspended {
                // Scheduling directives may change while suspended.
                for t in [&mut nt2, &mut ot2] {
                    if let Some(s) = t.get_mut("spec").and_then(Value::as_object_mut) {
                        for k in ["nodeSelector", "tolerations", "affinity", "schedulingGates"] {
                            s.remove(k);
                        }
                    }
                    if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("labels");
                        m.remove("annotations");
                    }
                }
            }
            if nt2 != ot2 {
                ck.push(FieldError::invalid(
                    "spec.template",
                    go_repr(format!("core.PodTemplateSpec{}", nt)),
                    FIELD_IMMUTABLE,
                ));
            }
        }
    }
}

// ------------------------------------------------------------ coordination

fn lease(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    match old {
        None => validate_object_meta(ck, root, true, names::name_is_dns_subdomain, false),
        Some(o) => validate_object_meta_update(ck, root, o),
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    if let Some(d) = ck.i32(spec, "leaseDurationSeconds", sp)
        && d <= 0
    {
        ck.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            d,
            "must be greater than 0",
        ));
    }
    if let Some(t) = ck.i32(spec, "leaseTransitions", sp)
        && t < 0
    {
        ck.push(FieldError::invalid(
            "spec.leaseTransitions",
            t,
            "must be greater than or equal to 0",
        ));
    }
    ck.str(spec, "holderIdentity", sp);
    ck.str(spec, "acquireTime", sp);
    ck.str(spec, "renewTime", sp);
    let strategy = ck.str(spec, "strategy", sp);
    if let Some(s) = strategy
        && s != "OldestEmulationVersion"
    {
        ck.push(FieldError::not_supported(
            "spec.strategy",
            s,
            &["OldestEmulationVersion"],
        ));
    }
    if let Some(p) = ck.str(spec, "preferredHolder", sp)
        && !p.is_empty()
        && strategy.is_none_or(str::is_empty)
    {
        ck.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
}

// -------------------------------------------------------------------- rbac

fn policy_rules(ck: &mut Checker, root: &Obj, namespaced: bool) {
    for (i, r) in ck.obj_items(root, "rules", "") {
        let rp = index("rules", i);
        let verbs = ck.str_list(r, "verbs", &rp);
        if verbs.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = ck.str_list(r, "nonResourceURLs", &rp);
        let groups = ck.str_list(r, "apiGroups", &rp);
        let res = ck.str_list(r, "resources", &rp);
        let rn = ck.str_list(r, "resourceNames", &rp);
        if !urls.is_empty() {
            if namespaced {
                ck.push(FieldError::invalid(
                    child(&rp, "nonResourceURLs"),
                    Value::from(urls.clone()),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !groups.is_empty() || !res.is_empty() || !rn.is_empty() {
                ck.push(FieldError::invalid(
                    child(&rp, "nonResourceURLs"),
                    Value::from(urls.clone()),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if groups.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if res.is_empty() {
            ck.push(FieldError::required(
                child(&rp, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

fn rbac_meta(ck: &mut Checker, root: &Obj, old: Option<&Obj>, namespaced: bool) {
    validate_object_meta(
        ck,
        root,
        namespaced,
        names::is_valid_path_segment_name,
        false,
    );
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
}

fn role(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    rbac_meta(ck, root, old, true);
    policy_rules(ck, root, true);
}

fn cluster_role(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    rbac_meta(ck, root, old, false);
    policy_rules(ck, root, false);
    if let Some(ar) = ck.obj(root, "aggregationRule", "") {
        let sels = ck.obj_items(ar, "clusterRoleSelectors", "aggregationRule");
        if sels.is_empty() {
            ck.push(FieldError::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, s) in sels {
            validate_label_selector(ck, s, &index("aggregationRule.clusterRoleSelectors", i));
        }
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>, namespaced: bool) {
    rbac_meta(ck, root, old, namespaced);
    let rr = sub(ck, root, "roleRef", "");
    let g = ck.string(rr, "apiGroup", "roleRef");
    if g != RBAC_GROUP {
        ck.push(FieldError::not_supported(
            "roleRef.apiGroup",
            g,
            &[RBAC_GROUP],
        ));
    }
    let kind = ck.string(rr, "kind", "roleRef");
    if namespaced {
        if kind != "Role" && kind != "ClusterRole" {
            ck.push(FieldError::not_supported(
                "roleRef.kind",
                kind,
                &["Role", "ClusterRole"],
            ));
        }
    } else if kind != "ClusterRole" {
        ck.push(FieldError::not_supported(
            "roleRef.kind",
            kind,
            &["ClusterRole"],
        ));
    }
    let name = ck.string(rr, "name", "roleRef");
    if name.is_empty() {
        ck.push(FieldError::required("roleRef.name", ""));
    } else {
        ck.extend(
            "roleRef.name",
            name,
            names::is_valid_path_segment_name(name, false),
        );
    }
    for (i, s) in ck.obj_items(root, "subjects", "") {
        let sp = index("subjects", i);
        let sname = ck.string(s, "name", &sp);
        if sname.is_empty() {
            ck.push(FieldError::required(child(&sp, "name"), ""));
        }
        let sg = ck.string(s, "apiGroup", &sp);
        let sns = ck.string(s, "namespace", &sp);
        match ck.string(s, "kind", &sp) {
            "ServiceAccount" => {
                if !sname.is_empty() {
                    ck.extend(
                        &child(&sp, "name"),
                        sname,
                        names::name_is_dns_subdomain(sname, false),
                    );
                }
                if !sg.is_empty() {
                    ck.push(FieldError::not_supported(child(&sp, "apiGroup"), sg, &[""]));
                }
                if !namespaced && sns.is_empty() {
                    ck.push(FieldError::required(child(&sp, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if sg != RBAC_GROUP {
                    ck.push(FieldError::not_supported(
                        child(&sp, "apiGroup"),
                        sg,
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => ck.push(FieldError::not_supported(
                child(&sp, "kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if let Some(o) = old {
        let orr = o
            .get("roleRef")
            .and_then(Value::as_object)
            .unwrap_or(empty());
        let f = |m: &Obj, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if ["apiGroup", "kind", "name"]
            .iter()
            .any(|k| f(rr, k) != f(orr, k))
        {
            ck.push(FieldError::invalid(
                "roleRef",
                go_repr(format!(
                    "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                    go_quote(&f(rr, "apiGroup")),
                    go_quote(&f(rr, "kind")),
                    go_quote(&f(rr, "name"))
                )),
                "cannot change roleRef",
            ));
        }
    }
}

fn role_binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    binding(ck, root, old, true);
}

fn cluster_role_binding(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    binding(ck, root, old, false);
}

// -------------------------------------------------------- admission webhooks

fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

fn validate_resources_list(ck: &mut Checker, res: &[&str], path: &str) {
    if res.is_empty() {
        ck.push(FieldError::required(path, ""));
    }
    let mut res_wild_sub = BTreeSet::new();
    let mut sub_wild_res = BTreeSet::new();
    let mut double = false;
    let mut single = false;
    let mut without_sub = false;
    for (i, rs) in res.iter().enumerate() {
        if rs.is_empty() {
            ck.push(FieldError::required(index(path, i), ""));
            continue;
        }
        if *rs == "*/*" {
            double = true;
        }
        if *rs == "*" {
            single = true;
        }
        let Some((r, s)) = rs.split_once('/') else {
            without_sub = *rs != "*";
            continue;
        };
        if res_wild_sub.contains(r) {
            ck.push(FieldError::invalid(
                index(path, i),
                *rs,
                format!("if '{r}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_wild_res.contains(s) {
            ck.push(FieldError::invalid(
                index(path, i),
                *rs,
                format!("if '*/{s}' is present, must not specify {rs}"),
            ));
        }
        if s == "*" {
            res_wild_sub.insert(r);
        }
        if r == "*" {
            sub_wild_res.insert(s);
        }
    }
    if res.len() > 1 && double {
        ck.push(FieldError::invalid(
            path,
            Value::from(res.to_vec()),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && without_sub {
        ck.push(FieldError::invalid(
            path,
            Value::from(res.to_vec()),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

fn validate_rule(ck: &mut Checker, r: &Obj, rp: &str) {
    let ops = ck.str_list(r, "operations", rp);
    let op_path = child(rp, "operations");
    if ops.is_empty() {
        ck.push(FieldError::required(&op_path, ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        ck.push(FieldError::invalid(
            &op_path,
            Value::from(ops.clone()),
            "if '*' is present, must not specify other operations",
        ));
    }
    const OPS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, o) in ops.iter().enumerate() {
        if !OPS.contains(o) {
            ck.push(FieldError::not_supported(index(&op_path, i), *o, OPS));
        }
    }
    let groups = ck.str_list(r, "apiGroups", rp);
    if groups.is_empty() {
        ck.push(FieldError::required(child(rp, "apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        ck.push(FieldError::invalid(
            child(rp, "apiGroups"),
            Value::from(groups.clone()),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = ck.str_list(r, "apiVersions", rp);
    if versions.is_empty() {
        ck.push(FieldError::required(child(rp, "apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        ck.push(FieldError::invalid(
            child(rp, "apiVersions"),
            Value::from(versions.clone()),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            ck.push(FieldError::required(
                index(&child(rp, "apiVersions"), i),
                "",
            ));
        }
    }
    let res = ck.str_list(r, "resources", rp);
    validate_resources_list(ck, &res, &child(rp, "resources"));
    if let Some(s) = ck.str(r, "scope", rp)
        && !matches!(s, "*" | "Cluster" | "Namespaced")
    {
        ck.push(FieldError::not_supported(
            child(rp, "scope"),
            s,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

fn validate_webhook_url(ck: &mut Checker, url: &str, path: &str) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", url),
    };
    if scheme != "https" {
        ck.push(FieldError::invalid(
            path,
            scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (before_frag, frag) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_frag.split_once('?').unwrap_or((before_frag, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        before_query.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        ck.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        ck.push(FieldError::invalid(
            path,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !frag.is_empty() {
        ck.push(FieldError::invalid(
            path,
            frag,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        ck.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_webhook_service(ck: &mut Checker, svc: &Obj, path: &str) {
    if ck.string(svc, "name", path).is_empty() {
        ck.push(FieldError::required(
            child(path, "name"),
            "service name is required",
        ));
    }
    if ck.string(svc, "namespace", path).is_empty() {
        ck.push(FieldError::required(
            child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let port = ck.i32(svc, "port", path).unwrap_or(443);
    let errs = names::is_valid_port_num(port);
    if !errs.is_empty() {
        ck.push(FieldError::invalid(
            child(path, "port"),
            port,
            format!("port is not valid: {}", errs.join(", ")),
        ));
    }
    let Some(p) = ck.str(svc, "path", path) else {
        return;
    };
    let pp = child(path, "path");
    if p == "/" || p.is_empty() {
        return;
    }
    if p == "//" {
        ck.push(FieldError::invalid(&pp, p, "segment[0] may not be empty"));
        return;
    }
    if !p.starts_with('/') {
        ck.push(FieldError::invalid(&pp, p, "must start with a '/'"));
    }
    let mut check = p.strip_prefix('/').unwrap_or(p);
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            ck.push(FieldError::invalid(
                &pp,
                p,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for f in names::is_dns1123_subdomain(step) {
            ck.push(FieldError::invalid(&pp, p, format!("segment[{i}]: {f}")));
        }
    }
}

fn webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>, mutating: bool) {
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, false);
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
    let mut seen = BTreeSet::new();
    for (i, h) in ck.obj_items(root, "webhooks", "") {
        let hp = index("webhooks", i);
        let name = ck.string(h, "name", &hp);
        if !seen.insert(name) {
            ck.push(FieldError::duplicate(child(&hp, "name"), name));
        }
        if name.is_empty() {
            ck.push(FieldError::required(child(&hp, "name"), ""));
        } else if let Err(m) = names::is_fully_qualified_name(name) {
            ck.push(FieldError::invalid(child(&hp, "name"), name, m));
        }
        for (ri, r) in ck.obj_items(h, "rules", &hp) {
            validate_rule(ck, r, &index(&child(&hp, "rules"), ri));
        }
        if let Some(fp) = ck.str(h, "failurePolicy", &hp)
            && fp != "Fail"
            && fp != "Ignore"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "failurePolicy"),
                fp,
                &["Fail", "Ignore"],
            ));
        }
        if let Some(mp) = ck.str(h, "matchPolicy", &hp)
            && mp != "Equivalent"
            && mp != "Exact"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "matchPolicy"),
                mp,
                &["Equivalent", "Exact"],
            ));
        }
        match ck.str(h, "sideEffects", &hp) {
            None => ck.push(FieldError::required(
                child(&hp, "sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(s) if s != "None" && s != "NoneOnDryRun" => {
                ck.push(FieldError::not_supported(
                    child(&hp, "sideEffects"),
                    s,
                    &["None", "NoneOnDryRun"],
                ));
            }
            _ => {}
        }
        if let Some(t) = ck.i32(h, "timeoutSeconds", &hp)
            && !(1..=30).contains(&t)
        {
            ck.push(FieldError::invalid(
                child(&hp, "timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        for s in ["namespaceSelector", "objectSelector"] {
            if let Some(sel) = ck.obj(h, s, &hp) {
                validate_label_selector(ck, sel, &child(&hp, s));
            }
        }
        if mutating
            && let Some(rp) = ck.str(h, "reinvocationPolicy", &hp)
            && rp != "IfNeeded"
            && rp != "Never"
        {
            ck.push(FieldError::not_supported(
                child(&hp, "reinvocationPolicy"),
                rp,
                &["IfNeeded", "Never"],
            ));
        }
        let ccp = child(&hp, "clientConfig");
        let cc = sub(ck, h, "clientConfig", &hp);
        let url = ck.str(cc, "url", &ccp);
        let svc = ck.obj(cc, "service", &ccp);
        match (url, svc) {
            (Some(u), None) => validate_webhook_url(ck, u, &child(&ccp, "url")),
            (None, Some(s)) => validate_webhook_service(ck, s, &child(&ccp, "service")),
            _ => ck.push(FieldError::required(
                &ccp,
                "exactly one of url or service is required",
            )),
        }
        let arvp = child(&hp, "admissionReviewVersions");
        let versions = ck.str_list(h, "admissionReviewVersions", &hp);
        if versions.is_empty() {
            ck.push(FieldError::required(
                &arvp,
                "must specify one of v1, v1beta1",
            ));
        } else {
            let mut seen_v = BTreeSet::new();
            let mut accepted = false;
            for (vi, v) in versions.iter().enumerate() {
                if !seen_v.insert(*v) {
                    ck.push(FieldError::invalid(
                        index(&arvp, vi),
                        *v,
                        "duplicate version",
                    ));
                    continue;
                }
                ck.extend(&index(&arvp, vi), v, names::is_dns1035_label(v));
                accepted |= *v == "v1" || *v == "v1beta1";
            }
            if !accepted {
                ck.push(FieldError::invalid(
                    &arvp,
                    Value::from(versions.clone()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    }
}

fn validating_webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    webhooks(ck, root, old, false);
}

fn mutating_webhooks(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    webhooks(ck, root, old, true);
}

#[cfg(test)]
mod tests {
    use super::super::validate;
    use crate::defaults::apply_defaults;
    use serde_json::{Value, json};

    fn errs(group: &str, res: &str, mut v: Value, old: Option<Value>) -> Vec<String> {
        apply_defaults(group, res, &mut v);
        validate(group, res, &v, old.as_ref())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn pod_tmpl(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    }

    #[test]
    fn valid_minimal_objects_pass() {
        let ns = json!({"name": "x", "namespace": "default"});
        let cases = vec![
            ("", "namespaces", json!({"metadata": {"name": "team-a"}})),
            (
                "",
                "configmaps",
                json!({"metadata": ns, "data": {"a.b": "c"}}),
            ),
            (
                "",
                "secrets",
                json!({"metadata": ns, "data": {"k": "dg=="}}),
            ),
            (
                "",
                "services",
                json!({"metadata": ns, "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
            ),
            (
                "",
                "services",
                json!({"metadata": ns, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
            ),
            ("", "serviceaccounts", json!({"metadata": ns})),
            (
                "",
                "pods",
                json!({"metadata": ns, "spec": {"containers": [{"name": "c", "image": "nginx",
                "ports": [{"containerPort": 80, "name": "http"}], "env": [{"name": "A", "value": "b"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}]}], "volumes": [{"name": "v"}]}}),
            ),
            (
                "",
                "events",
                json!({"metadata": ns, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": "Started", "message": "m", "type": "Normal"}),
            ),
            ("", "nodes", json!({"metadata": {"name": "node-1"}})),
            (
                "apps",
                "deployments",
                json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
                "template": pod_tmpl(json!({"app": "a"}))}}),
            ),
            (
                "apps",
                "replicasets",
                json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
                "template": pod_tmpl(json!({"app": "a"}))}}),
            ),
            (
                "apps",
                "statefulsets",
                json!({"metadata": ns, "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "a"}},
                "template": pod_tmpl(json!({"app": "a"}))}}),
            ),
            (
                "apps",
                "daemonsets",
                json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
                "template": pod_tmpl(json!({"app": "a"}))}}),
            ),
            (
                "batch",
                "jobs",
                json!({"metadata": {"name": "j", "namespace": "default", "uid": "u-1"},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
            ),
            (
                "coordination.k8s.io",
                "leases",
                json!({"metadata": ns, "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15}}),
            ),
            (
                "events.k8s.io",
                "events",
                json!({"metadata": ns, "eventTime": "2024-01-01T00:00:00.000000Z",
                "reportingController": "kubelet", "reportingInstance": "n1", "action": "Pull", "reason": "Pulled",
                "type": "Normal", "regarding": {"namespace": "default"}}),
            ),
            (
                "rbac.authorization.k8s.io",
                "roles",
                json!({"metadata": ns, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            ),
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                json!({"metadata": {"name": "system:x"}, "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
            ),
            (
                "rbac.authorization.k8s.io",
                "rolebindings",
                json!({"metadata": ns, "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}, {"kind": "User", "name": "alice"}]}),
            ),
            (
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "name": "g"}]}),
            ),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                json!({"metadata": {"name": "w"}, "webhooks": [{
                "name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/validate"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
            ),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
                json!({"metadata": {"name": "w"}, "webhooks": [{
                "name": "mutate.example.com", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1", "v1beta1"],
                "clientConfig": {"url": "https://example.com/m"}}]}),
            ),
        ];
        for (g, r, v) in cases {
            assert_eq!(errs(g, r, v, None), Vec::<String>::new(), "{g}/{r}");
        }
    }

    #[test]
    fn pod_errors() {
        let e = errs(
            "",
            "pods",
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {}}),
            None,
        );
        assert_eq!(e, vec!["spec.containers: Required value"]);
        let e = errs(
            "",
            "pods",
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"restartPolicy": "Sometimes", "containers": [
                {"name": "A_b", "image": "x"}, {"name": "c"}, {"name": "c", "image": "y",
                 "ports": [{"containerPort": 70000, "protocol": "HTTP"}], "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "spec.containers[0].name: Invalid value: \"A_b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.containers[1].image: Required value",
                "spec.containers[2].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[2].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[2].volumeMounts[0].name: Not found: \"nope\"",
                "spec.containers[2].name: Duplicate value: \"c\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ]
        );
    }

    #[test]
    fn pod_update_rules() {
        let mut old = json!({"metadata": {"name": "p", "namespace": "d", "resourceVersion": "1"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        apply_defaults("", "pods", &mut old);
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(validate("", "pods", &new, Some(&old)).is_empty());
        new["spec"]["restartPolicy"] = json!("Never");
        let e = validate("", "pods", &new, Some(&old));
        assert_eq!(e.len(), 1);
        assert!(e[0].to_string().starts_with(
            "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
        ));
        let mut renamed = old.clone();
        renamed["metadata"]["name"] = json!("q");
        let e: Vec<String> = validate("", "pods", &renamed, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(e.contains(&"metadata.name: Invalid value: \"q\": field is immutable".to_string()));
    }

    #[test]
    fn deployment_errors() {
        let ns = json!({"name": "d", "namespace": "default"});
        let e = errs(
            "apps",
            "deployments",
            json!({"metadata": ns, "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "b"}))}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`",
            ]
        );
        let e = errs(
            "apps",
            "deployments",
            json!({"metadata": ns, "spec": {"template": pod_tmpl(json!({"app": "b"}))}}),
            None,
        );
        assert_eq!(e, vec!["spec.selector: Required value"]);
        let mut old = json!({"metadata": {"name": "d", "namespace": "default", "resourceVersion": "3"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "a", "v": "1"}))}});
        apply_defaults("apps", "deployments", &mut old);
        let mut new = old.clone();
        new["spec"]["selector"]["matchLabels"]["v"] = json!("1");
        let e: Vec<String> = validate("apps", "deployments", &new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            e,
            vec![
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"a\", \"v\":\"1\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
            ]
        );
    }

    #[test]
    fn statefulset_update_forbidden() {
        let mut old = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "3"},
            "spec": {"serviceName": "a", "selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "a"}))}});
        apply_defaults("apps", "statefulsets", &mut old);
        let mut new = old.clone();
        new["spec"]["serviceName"] = json!("b");
        let e: Vec<String> = validate("apps", "statefulsets", &new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            e,
            vec![
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );
    }

    #[test]
    fn service_configmap_secret_errors() {
        let ns = json!({"name": "s", "namespace": "default"});
        let e = errs(
            "",
            "services",
            json!({"metadata": ns, "spec": {"ports": [{"port": 80, "protocol": "ICMP"}]}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ]
        );
        let e = errs("", "services", json!({"metadata": ns, "spec": {}}), None);
        assert_eq!(e, vec!["spec.ports: Required value"]);
        let e = errs(
            "",
            "services",
            json!({"metadata": {"name": "1svc", "namespace": "d"}, "spec": {"ports": [{"port": 1}]}}),
            None,
        );
        assert!(
            e[0].starts_with(
                "metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist"
            )
        );
        let e = errs(
            "",
            "configmaps",
            json!({"metadata": ns, "data": {"a b": "x"}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        let big = "x".repeat(1024 * 1024 + 1);
        let e = errs(
            "",
            "configmaps",
            json!({"metadata": ns, "data": {"a": big}}),
            None,
        );
        assert_eq!(e, vec!["[]: Too long: must have at most 1048576 bytes"]);
        let old = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "1"}, "type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
        let new = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "1"}, "type": "kubernetes.io/tls", "immutable": true, "data": {"a": "eQ=="}});
        let e: Vec<String> = validate("", "secrets", &new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            e,
            vec![
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
                "data: Forbidden: field is immutable when `immutable` is set",
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value",
            ]
        );
    }

    #[test]
    fn job_rbac_webhook_lease_namespace_errors() {
        let e = errs(
            "batch",
            "jobs",
            json!({"metadata": {"name": "j", "namespace": "d", "uid": "u"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        let old = json!({"metadata": {"name": "b", "namespace": "d", "resourceVersion": "1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
        let new = json!({"metadata": {"name": "b", "namespace": "d", "resourceVersion": "1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}});
        let e: Vec<String> = validate(
            "rbac.authorization.k8s.io",
            "rolebindings",
            &new,
            Some(&old),
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            e,
            vec![
                "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
            ]
        );
        let e = errs(
            "rbac.authorization.k8s.io",
            "rolebindings",
            json!({"metadata": {"name": "b", "namespace": "d"}, "roleRef": {"kind": "Pod"}}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "roleRef.kind: Unsupported value: \"Pod\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
            ]
        );
        let e = errs(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            json!({"metadata": {"name": "w"}, "webhooks": [{"name": "short", "clientConfig": {}}]}),
            None,
        );
        assert_eq!(
            e,
            vec![
                "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            ]
        );
        let e = errs(
            "coordination.k8s.io",
            "leases",
            json!({"metadata": {"name": "l", "namespace": "d"}, "spec": {"leaseDurationSeconds": 0}}),
            None,
        );
        assert_eq!(
            e,
            vec!["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]
        );
        let e = errs("", "namespaces", json!({"metadata": {"name": "a.b"}}), None);
        assert_eq!(
            e,
            vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        let e = errs(
            "",
            "events",
            json!({"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}}),
            None,
        );
        assert_eq!(
            e,
            vec!["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
        );
    }

    #[test]
    fn type_errors_are_reported() {
        let e = errs(
            "",
            "pods",
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": "nope"}}),
            None,
        );
        assert_eq!(
            e[0],
            "spec.containers: Invalid value: \"nope\": must be of type array"
        );
        let v = validate(
            "apps",
            "deployments",
            &json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"replicas": "3"}}),
            None,
        );
        assert!(
            v.iter()
                .any(|e| e.kind == super::super::FieldErrorKind::TypeInvalid
                    && e.field == "spec.replicas")
        );
    }

    /// Deterministic pseudo-random JSON generator used to check that no input panics.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn value(&mut self, depth: u32) -> Value {
            const KEYS: &[&str] = &[
                "metadata",
                "spec",
                "name",
                "namespace",
                "labels",
                "annotations",
                "containers",
                "template",
                "selector",
                "matchLabels",
                "matchExpressions",
                "ports",
                "port",
                "targetPort",
                "image",
                "volumes",
                "env",
                "data",
                "type",
                "roleRef",
                "subjects",
                "webhooks",
                "rules",
                "clientConfig",
                "service",
                "url",
                "replicas",
                "strategy",
                "rollingUpdate",
                "maxSurge",
                "uid",
                "finalizers",
                "ownerReferences",
                "initContainers",
                "volumeMounts",
                "resources",
                "limits",
                "requests",
                "securityContext",
                "status",
                "operator",
                "values",
                "key",
                "restartPolicy",
                "updateStrategy",
                "path",
                "emptyDir",
                "secret",
                "livenessProbe",
                "httpGet",
                "tolerations",
                "completionMode",
                "completions",
                "deletionTimestamp",
            ];
            let pick = if depth == 0 {
                self.next() % 6
            } else {
                self.next() % 9
            };
            match pick {
                0 => Value::Null,
                1 => Value::Bool(self.next().is_multiple_of(2)),
                2 => json!((self.next() as i64) - (1 << 30)),
                3 => json!(
                    ["", "a", "Foo", "x/y/z", "é-", "-", "25%", "None", "v1", "*"]
                        [(self.next() % 10) as usize]
                ),
                4 => json!(1.5),
                5 => json!(u64::MAX),
                6 | 7 => {
                    let n = self.next() % 5;
                    let mut m = serde_json::Map::new();
                    for _ in 0..n {
                        let k = KEYS[(self.next() as usize) % KEYS.len()];
                        m.insert(k.into(), self.value(depth - 1));
                    }
                    Value::Object(m)
                }
                _ => {
                    let n = self.next() % 3;
                    Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
                }
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics() {
        let kinds = [
            ("", "namespaces"),
            ("", "configmaps"),
            ("", "secrets"),
            ("", "services"),
            ("", "serviceaccounts"),
            ("", "pods"),
            ("", "events"),
            ("", "nodes"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("apps", "daemonsets"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
            ("coordination.k8s.io", "leases"),
            ("events.k8s.io", "events"),
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
            ),
        ];
        let mut g = Gen(42);
        for _ in 0..400 {
            for (grp, res) in kinds {
                let mut a = g.value(6);
                let b = g.value(6);
                apply_defaults(grp, res, &mut a);
                for e in validate(grp, res, &a, None) {
                    let _ = e.to_string();
                }
                for e in validate(grp, res, &a, Some(&b)) {
                    let _ = e.to_string();
                }
            }
        }
    }
}
