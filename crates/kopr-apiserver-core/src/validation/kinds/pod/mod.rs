//! PodSpec / PodTemplateSpec validation (ValidatePodSpec and helpers):
//! volumes, containers, init containers, ports, env, volume mounts, probes,
//! resources, security contexts, restart/DNS/preemption policies and the
//! immutability rules of pod updates.

use super::super::metadata::{validate_annotations, validate_labels};
use super::super::names;
use super::super::{Checker, FieldError, Obj, child, go_repr, index, key};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

mod containers;
mod update;
mod volumes;

#[allow(unused_imports)]
pub use self::containers::*;
#[allow(unused_imports)]
pub use self::update::*;
#[allow(unused_imports)]
pub use self::volumes::*;

/// Options that differ between Pods and embedded pod templates.
#[derive(Clone, Copy, Default)]
pub struct PodOpts<'a> {
    /// True when the spec belongs to a Pod (not a template).
    pub is_pod: bool,
    /// The pod name, when known (for ephemeral volume PVC names).
    pub pod_name: Option<&'a str>,
}

/// ValidatePodSpec. `path` is the path of the spec (e.g. `spec` or
/// `spec.template.spec`).
pub fn validate_pod_spec(ck: &mut Checker, spec: &Obj, path: &str, opts: PodOpts) {
    let grace = ck.i64(spec, "terminationGracePeriodSeconds", path);
    if grace.is_none() {
        ck.push(FieldError::required(
            child(path, "terminationGracePeriodSeconds"),
            "",
        ));
    }
    let vols = validate_volumes(ck, spec, path);
    let ctrs = validate_app_containers(ck, spec, path, &vols, grace, opts);
    validate_other_containers(ck, spec, path, &ctrs, &vols, grace, opts);
    host_network_ports(ck, spec, path, &ctrs, opts);
    validate_policies(ck, spec, path);
    validate_gates_and_names(ck, spec, path);
    validate_scheduling(ck, spec, path);
    ck.bool(spec, "hostPID", path);
    ck.bool(spec, "hostIPC", path);
    ck.bool(spec, "enableServiceLinks", path);
    ck.i32(spec, "priority", path);
    ck.string(spec, "schedulerName", path);
}

/// The app containers: each one's common checks, unique names, lifecycle,
/// probes, no `restartPolicy`; host ports unique. Returns them.
fn validate_app_containers<'a>(
    ck: &mut Checker,
    spec: &'a Obj,
    path: &str,
    vols: &BTreeMap<String, bool>,
    grace: Option<i64>,
    opts: PodOpts,
) -> Vec<(usize, &'a Obj)> {
    let cpath = child(path, "containers");
    let ctrs = ck.obj_items(spec, "containers", path);
    if ctrs.is_empty() {
        ck.push(FieldError::required(&cpath, ""));
    } else {
        let mut seen = BTreeSet::new();
        for (i, c) in &ctrs {
            let ip = index(&cpath, *i);
            validate_container_common(ck, c, &ip, vols, opts);
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            if !seen.insert(name) {
                ck.push(FieldError::duplicate(child(&ip, "name"), name));
            }
            validate_lifecycle(ck, c, &ip, grace);
            for p in ["livenessProbe", "readinessProbe", "startupProbe"] {
                validate_probe(ck, c, p, &ip, grace);
            }
            if !matches!(c.get("restartPolicy"), None | Some(Value::Null)) {
                ck.push(FieldError::forbidden(
                    child(&ip, "restartPolicy"),
                    "may not be set for non-init containers",
                ));
            }
        }
        let mut hp = BTreeSet::new();
        check_host_ports(ck, &ctrs, &cpath, &mut hp);
    }
    ctrs
}

/// Init containers (sidecars with `restartPolicy: Always` may have probes
/// and lifecycle hooks, others may not) and ephemeral containers, with
/// names unique across all containers.
#[allow(clippy::too_many_arguments)]
fn validate_other_containers(
    ck: &mut Checker,
    spec: &Obj,
    path: &str,
    ctrs: &[(usize, &Obj)],
    vols: &BTreeMap<String, bool>,
    grace: Option<i64>,
    opts: PodOpts,
) {
    let ipath = child(path, "initContainers");
    let inits = ck.obj_items(spec, "initContainers", path);
    let mut all_names: BTreeSet<&str> = ctrs
        .iter()
        .map(|(_, c)| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    for (i, c) in &inits {
        let ip = index(&ipath, *i);
        validate_container_common(ck, c, &ip, vols, opts);
        let rp = ck.str(c, "restartPolicy", &ip);
        if let Some(r) = rp
            && r != "Always"
        {
            ck.push(FieldError::not_supported(
                child(&ip, "restartPolicy"),
                r,
                &["Always"],
            ));
        }
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if all_names.contains(name) {
            ck.push(FieldError::duplicate(child(&ip, "name"), name));
        } else if !name.is_empty() {
            all_names.insert(name);
        }
        let mut hp = BTreeSet::new();
        check_host_ports(ck, &[(*i, *c)], &ipath, &mut hp);
        if rp == Some("Always") {
            validate_lifecycle(ck, c, &ip, grace);
            for p in ["livenessProbe", "readinessProbe", "startupProbe"] {
                validate_probe(ck, c, p, &ip, grace);
            }
        } else {
            for p in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if !matches!(c.get(p), None | Some(Value::Null)) {
                    ck.push(FieldError::forbidden(
                        child(&ip, p),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    let epath = child(path, "ephemeralContainers");
    for (i, c) in ck.obj_items(spec, "ephemeralContainers", path) {
        let ip = index(&epath, i);
        validate_container_common(ck, c, &ip, vols, opts);
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if all_names.contains(name) {
            ck.push(FieldError::duplicate(child(&ip, "name"), name));
        } else {
            all_names.insert(name);
        }
    }
}

/// With `hostNetwork`, each host port must match its container port.
fn host_network_ports(
    ck: &mut Checker,
    spec: &Obj,
    path: &str,
    ctrs: &[(usize, &Obj)],
    opts: PodOpts,
) {
    let cpath = child(path, "containers");
    // hostNetwork: hostPort must match containerPort.
    if ck.bool(spec, "hostNetwork", path) == Some(true) {
        for (i, c) in ctrs {
            let pp = child(&index(&cpath, *i), "ports");
            let Some(ports) = c.get("ports").and_then(Value::as_array) else {
                continue;
            };
            for (j, p) in ports.iter().enumerate() {
                let Some(p) = p.as_object() else { continue };
                let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                let cp = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
                if (opts.is_pod || hp != 0) && hp != cp {
                    ck.push(FieldError::invalid(
                        child(&index(&pp, j), "hostPort"),
                        hp,
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
}

/// Restart and DNS policies, the node selector, the pod security context
/// and the DNS config.
fn validate_policies(ck: &mut Checker, spec: &Obj, path: &str) {
    let rp = ck.string(spec, "restartPolicy", path);
    match rp {
        "Always" | "OnFailure" | "Never" => {}
        "" => ck.push(FieldError::required(child(path, "restartPolicy"), "")),
        other => ck.push(FieldError::not_supported(
            child(path, "restartPolicy"),
            other,
            &["Always", "OnFailure", "Never"],
        )),
    }
    let dns = ck.string(spec, "dnsPolicy", path);
    match dns {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => ck.push(FieldError::required(child(path, "dnsPolicy"), "")),
        other => ck.push(FieldError::not_supported(
            child(path, "dnsPolicy"),
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    let ns = ck.str_map(spec, "nodeSelector", path);
    validate_labels(ck, &ns, &child(path, "nodeSelector"));
    if let Some(psc) = ck.obj(spec, "securityContext", path) {
        let sp = child(path, "securityContext");
        for f in ["runAsUser", "runAsGroup", "fsGroup"] {
            if let Some(v) = ck.i64(psc, f, &sp)
                && !(0..=4294967295).contains(&v)
            {
                ck.push(FieldError::invalid(
                    child(&sp, f),
                    v,
                    names::inclusive_range_error(0, 4294967295),
                ));
            }
        }
        if let Some(p) = ck.str(psc, "fsGroupChangePolicy", &sp)
            && p != "OnRootMismatch"
            && p != "Always"
        {
            ck.push(FieldError::not_supported(
                child(&sp, "fsGroupChangePolicy"),
                p,
                &["Always", "OnRootMismatch"],
            ));
        }
    }
    let dns_config = ck.obj(spec, "dnsConfig", path);
    if dns == "None" {
        match dns_config {
            None => ck.push(FieldError::required(
                child(path, "dnsConfig"),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )),
            Some(dc) => {
                if ck
                    .str_list(dc, "nameservers", &child(path, "dnsConfig"))
                    .is_empty()
                {
                    ck.push(FieldError::required(
                        child(&child(path, "dnsConfig"), "nameservers"),
                        "must provide at least one DNS nameserver when `dnsPolicy` is None",
                    ));
                }
            }
        }
    }
}

/// Readiness and scheduling gates, and the names a pod refers to (service
/// account, node, hostname, subdomain), and its active deadline.
fn validate_gates_and_names(ck: &mut Checker, spec: &Obj, path: &str) {
    for (i, g) in ck.obj_items(spec, "readinessGates", path) {
        let gp = index(&child(path, "readinessGates"), i);
        let ct = ck.string(g, "conditionType", &gp);
        ck.extend(
            &child(&gp, "conditionType"),
            ct,
            names::is_qualified_name(ct),
        );
    }
    let mut gates = BTreeSet::new();
    for (i, g) in ck.obj_items(spec, "schedulingGates", path) {
        let gp = index(&child(path, "schedulingGates"), i);
        let n = ck.string(g, "name", &gp);
        ck.extend(&gp, n, names::is_qualified_name(n));
        if !gates.insert(n) {
            ck.push(FieldError::duplicate(&gp, n));
        }
    }
    let sa = ck.string(spec, "serviceAccountName", path);
    if !sa.is_empty() {
        ck.extend(
            &child(path, "serviceAccountName"),
            sa,
            names::name_is_dns_subdomain(sa, false),
        );
    }
    let node = ck.string(spec, "nodeName", path);
    if !node.is_empty() {
        ck.extend(
            &child(path, "nodeName"),
            node,
            names::name_is_dns_subdomain(node, false),
        );
    }
    if let Some(ads) = ck.i64(spec, "activeDeadlineSeconds", path)
        && !(1..=i32::MAX as i64).contains(&ads)
    {
        ck.push(FieldError::invalid(
            child(path, "activeDeadlineSeconds"),
            ads,
            names::inclusive_range_error(1, i32::MAX as i64),
        ));
    }
    for f in ["hostname", "subdomain"] {
        let v = ck.string(spec, f, path);
        if !v.is_empty() {
            ck.extend(&child(path, f), v, names::is_dns1123_label(v));
        }
    }
}

/// Tolerations, priority class, preemption policy and OS.
fn validate_scheduling(ck: &mut Checker, spec: &Obj, path: &str) {
    validate_tolerations(ck, spec, path);
    let pc = ck.string(spec, "priorityClassName", path);
    if !pc.is_empty() {
        ck.extend(
            &child(path, "priorityClassName"),
            pc,
            names::name_is_dns_subdomain(pc, false),
        );
    }
    if let Some(pp) = ck.str(spec, "preemptionPolicy", path) {
        match pp {
            "PreemptLowerPriority" | "Never" => {}
            "" => ck.push(FieldError::required(child(path, "preemptionPolicy"), "")),
            other => ck.push(FieldError::not_supported(
                child(path, "preemptionPolicy"),
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
    if let Some(os) = ck.obj(spec, "os", path) {
        let n = ck.string(os, "name", &child(path, "os"));
        if n.is_empty() {
            ck.push(FieldError::required(child(&child(path, "os"), "name"), ""));
        } else if n != "linux" && n != "windows" {
            ck.push(FieldError::not_supported(
                child(&child(path, "os"), "name"),
                n,
                &["linux", "windows"],
            ));
        }
    }
}

/// kube's `ValidateTolerations` for `<path>.tolerations` (pod specs and
/// RuntimeClass scheduling).
pub(crate) fn validate_tolerations(ck: &mut Checker, spec: &Obj, path: &str) {
    let tp = child(path, "tolerations");
    for (i, t) in ck.obj_items(spec, "tolerations", path) {
        let ip = index(&tp, i);
        let k = ck.string(t, "key", &ip);
        if !k.is_empty() {
            ck.extend(&child(&ip, "key"), k, names::is_qualified_name(k));
        }
        let op = ck.string(t, "operator", &ip);
        if k.is_empty() && op != "Exists" {
            ck.push(FieldError::invalid(
                child(&ip, "operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = ck.string(t, "effect", &ip);
        if ck.i64(t, "tolerationSeconds", &ip).is_some() && effect != "NoExecute" {
            ck.push(FieldError::invalid(
                child(&ip, "effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let v = ck.string(t, "value", &ip);
        match op {
            "Equal" | "" => {
                let errs = names::is_valid_label_value(v);
                if !errs.is_empty() {
                    ck.push(FieldError::invalid(
                        child(&ip, "operator"),
                        v,
                        errs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !v.is_empty() {
                    ck.push(FieldError::invalid(
                        child(&ip, "operator"),
                        v,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => ck.push(FieldError::not_supported(
                child(&ip, "operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            ck.push(FieldError::not_supported(
                child(&ip, "effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

/// ValidatePodTemplateSpec for a template at `path` (e.g. `spec.template`).
pub fn validate_pod_template_spec(ck: &mut Checker, tmpl: &Obj, path: &str) {
    let empty = Obj::new();
    let meta = ck.obj(tmpl, "metadata", path).unwrap_or(&empty);
    let mp = child(path, "metadata");
    let labels = ck.str_map(meta, "labels", &mp);
    validate_labels(ck, &labels, &child(path, "labels"));
    let ann = ck.str_map(meta, "annotations", &mp);
    validate_annotations(ck, &ann, &child(path, "annotations"));
    let spec = ck.obj(tmpl, "spec", path).unwrap_or(&empty);
    let sp = child(path, "spec");
    validate_pod_spec(ck, spec, &sp, PodOpts::default());
    if !ck.obj_items(spec, "ephemeralContainers", &sp).is_empty() {
        ck.push(FieldError::forbidden(
            child(&sp, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}
