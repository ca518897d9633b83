//! PodSpec / PodTemplateSpec validation (ValidatePodSpec and helpers):
//! volumes, containers, init containers, ports, env, volume mounts, probes,
//! resources, security contexts, restart/DNS/preemption policies and the
//! immutability rules of pod updates.

use super::super::metadata::{validate_annotations, validate_labels};
use super::super::names;
use super::super::{Checker, FieldError, Obj, child, go_repr, index, key};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Options that differ between Pods and embedded pod templates.
#[derive(Clone, Copy, Default)]
pub struct PodOpts<'a> {
    /// True when the spec belongs to a Pod (not a template).
    pub is_pod: bool,
    /// The pod name, when known (for ephemeral volume PVC names).
    pub pod_name: Option<&'a str>,
}

const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

fn check_mode(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
    if let Some(m) = ck.i32(o, k, path)
        && !(0..=0o777).contains(&m)
    {
        ck.push(FieldError::invalid(child(path, k), m, FILE_MODE_MSG));
    }
}

fn check_key_to_paths(ck: &mut Checker, src: &Obj, path: &str) {
    for (i, kp) in ck.obj_items(src, "items", path) {
        let ip = index(&child(path, "items"), i);
        if ck.string(kp, "key", &ip).is_empty() {
            ck.push(FieldError::required(child(&ip, "key"), ""));
        }
        let p = ck.string(kp, "path", &ip);
        if p.is_empty() {
            ck.push(FieldError::required(child(&ip, "path"), ""));
        }
        validate_local_non_reserved_path(ck, p, &child(&ip, "path"));
        check_mode(ck, kp, "mode", &ip);
    }
}

fn validate_local_descending_path(ck: &mut Checker, p: &str, path: &str) {
    if p.starts_with('/') {
        ck.push(FieldError::invalid(path, p, "must be a relative path"));
    }
    if p.split(['/', '\\']).any(|s| s == "..") {
        ck.push(FieldError::invalid(path, p, "must not contain '..'"));
    }
}

fn validate_local_non_reserved_path(ck: &mut Checker, p: &str, path: &str) {
    validate_local_descending_path(ck, p, path);
    if p.starts_with("..") {
        ck.push(FieldError::invalid(path, p, "must not start with '..'"));
    }
}

fn validate_volume_source(ck: &mut Checker, vol: &Obj, path: &str) {
    let mut count = 0;
    for (json_key, go_name) in VOLUME_SOURCES {
        let Some(src) = ck.obj(vol, json_key, path) else {
            continue;
        };
        if count > 0 {
            ck.push(FieldError::forbidden(
                child(path, go_name),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let sp = child(path, json_key);
        match *json_key {
            "hostPath" => {
                let p = ck.string(src, "path", &sp);
                if p.is_empty() {
                    ck.push(FieldError::required(child(&sp, "path"), ""));
                } else if p.split('/').any(|s| s == "..") {
                    ck.push(FieldError::invalid(
                        child(&sp, "path"),
                        p,
                        "must not contain '..'",
                    ));
                }
                let t = ck.string(src, "type", &sp);
                const TYPES: &[&str] = &[
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t) {
                    ck.push(FieldError::not_supported(child(&sp, "type"), t, TYPES));
                }
            }
            "secret" => {
                if ck.string(src, "secretName", &sp).is_empty() {
                    ck.push(FieldError::required(child(&sp, "secretName"), ""));
                }
                check_mode(ck, src, "defaultMode", &sp);
                check_key_to_paths(ck, src, &sp);
            }
            "configMap" => {
                if ck.string(src, "name", &sp).is_empty() {
                    ck.push(FieldError::required(child(&sp, "name"), ""));
                }
                check_mode(ck, src, "defaultMode", &sp);
                check_key_to_paths(ck, src, &sp);
            }
            "persistentVolumeClaim" if ck.string(src, "claimName", &sp).is_empty() => {
                ck.push(FieldError::required(child(&sp, "claimName"), ""));
            }
            "nfs" => {
                if ck.string(src, "server", &sp).is_empty() {
                    ck.push(FieldError::required(child(&sp, "server"), ""));
                }
                let p = ck.string(src, "path", &sp);
                if p.is_empty() {
                    ck.push(FieldError::required(child(&sp, "path"), ""));
                }
                if !p.starts_with('/') {
                    ck.push(FieldError::invalid(
                        child(&sp, "path"),
                        p,
                        "must be an absolute path",
                    ));
                }
            }
            "downwardAPI" => {
                check_mode(ck, src, "defaultMode", &sp);
            }
            "projected" => {
                check_mode(ck, src, "defaultMode", &sp);
            }
            "csi" if ck.string(src, "driver", &sp).is_empty() => {
                ck.push(FieldError::required(child(&sp, "driver"), ""));
            }
            _ => {}
        }
    }
    if count == 0 {
        ck.push(FieldError::required(path, "must specify a volume type"));
    }
}

/// Validates `volumes`; returns the names of valid volumes and whether each is a PVC.
fn validate_volumes(ck: &mut Checker, spec: &Obj, path: &str) -> BTreeMap<String, bool> {
    let mut names_ok: BTreeMap<String, bool> = BTreeMap::new();
    let vpath = child(path, "volumes");
    for (i, vol) in ck.obj_items(spec, "volumes", path) {
        let ip = index(&vpath, i);
        let mut sub = Checker::default();
        validate_volume_source(&mut sub, vol, &ip);
        let name = sub.string(vol, "name", &ip);
        let np = child(&ip, "name");
        if name.is_empty() {
            sub.push(FieldError::required(&np, ""));
        } else {
            sub.extend(&np, name, names::is_dns1123_label(name));
        }
        if names_ok.contains_key(name) {
            sub.push(FieldError::duplicate(&np, name));
        }
        if sub.errs.is_empty() {
            let is_pvc = vol
                .get("persistentVolumeClaim")
                .is_some_and(Value::is_object)
                || vol.get("ephemeral").is_some_and(Value::is_object);
            names_ok.insert(name.to_string(), is_pvc);
        } else {
            ck.errs.extend(sub.errs);
        }
    }
    names_ok
}

fn validate_ports(ck: &mut Checker, ctr: &Obj, path: &str) {
    let ppath = child(path, "ports");
    let mut seen = BTreeSet::new();
    for (i, port) in ck.obj_items(ctr, "ports", path) {
        let ip = index(&ppath, i);
        let name = ck.string(port, "name", &ip);
        if !name.is_empty() {
            let msgs = names::is_valid_port_name(name);
            if !msgs.is_empty() {
                ck.extend(&child(&ip, "name"), name, msgs);
            } else if !seen.insert(name) {
                ck.push(FieldError::duplicate(child(&ip, "name"), name));
            }
        }
        let cp = ck.i32(port, "containerPort", &ip).unwrap_or(0);
        if cp == 0 {
            ck.push(FieldError::required(child(&ip, "containerPort"), ""));
        } else {
            for m in names::is_valid_port_num(cp) {
                ck.push(FieldError::invalid(child(&ip, "containerPort"), cp, m));
            }
        }
        let hp = ck.i32(port, "hostPort", &ip).unwrap_or(0);
        if hp != 0 {
            for m in names::is_valid_port_num(hp) {
                ck.push(FieldError::invalid(child(&ip, "hostPort"), hp, m));
            }
        }
        let proto = ck.string(port, "protocol", &ip);
        if proto.is_empty() {
            ck.push(FieldError::required(child(&ip, "protocol"), ""));
        } else if !PROTOCOLS.contains(&proto) {
            ck.push(FieldError::not_supported(
                child(&ip, "protocol"),
                proto,
                PROTOCOLS,
            ));
        }
    }
}

/// Supported port protocols, sorted as kube lists them.
pub const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

fn validate_env(ck: &mut Checker, ctr: &Obj, path: &str) {
    let epath = child(path, "env");
    for (i, ev) in ck.obj_items(ctr, "env", path) {
        let ip = index(&epath, i);
        let name = ck.string(ev, "name", &ip);
        if name.is_empty() {
            ck.push(FieldError::required(child(&ip, "name"), ""));
        } else {
            ck.extend(
                &child(&ip, "name"),
                name,
                names::is_relaxed_env_var_name(name),
            );
        }
        let vf_path = child(&ip, "valueFrom");
        if let Some(vf) = ck.obj(ev, "valueFrom", &ip) {
            let mut n = 0;
            for k in [
                "fieldRef",
                "resourceFieldRef",
                "configMapKeyRef",
                "secretKeyRef",
            ] {
                if let Some(r) = ck.obj(vf, k, &vf_path) {
                    n += 1;
                    let rp = child(&vf_path, k);
                    match k {
                        "fieldRef" => {
                            if ck.string(r, "fieldPath", &rp).is_empty() {
                                ck.push(FieldError::required(child(&rp, "fieldPath"), ""));
                            }
                        }
                        "resourceFieldRef" => {
                            if ck.string(r, "resource", &rp).is_empty() {
                                ck.push(FieldError::required(child(&rp, "resource"), ""));
                            }
                        }
                        _ => {
                            if ck.string(r, "key", &rp).is_empty() {
                                ck.push(FieldError::required(child(&rp, "key"), ""));
                            } else {
                                let kk = ck.string(r, "key", &rp);
                                ck.extend(&child(&rp, "key"), kk, names::is_config_map_key(kk));
                            }
                        }
                    }
                }
            }
            if n == 0 {
                ck.push(FieldError::invalid(
                    &vf_path,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if !ck.string(ev, "value", &ip).is_empty() {
                ck.push(FieldError::invalid(
                    &vf_path,
                    "",
                    "may not be specified when `value` is not empty",
                ));
            } else if n > 1 {
                ck.push(FieldError::invalid(
                    &vf_path,
                    "",
                    "may not have more than one field specified at a time",
                ));
            }
        }
    }
}

fn validate_volume_mounts(ck: &mut Checker, ctr: &Obj, path: &str, vols: &BTreeMap<String, bool>) {
    let mpath = child(path, "volumeMounts");
    let mut points = BTreeSet::new();
    for (i, m) in ck.obj_items(ctr, "volumeMounts", path) {
        let ip = index(&mpath, i);
        let name = ck.string(m, "name", &ip);
        if name.is_empty() {
            ck.push(FieldError::required(child(&ip, "name"), ""));
        }
        if !vols.contains_key(name) {
            ck.push(FieldError::not_found(child(&ip, "name"), name));
        }
        let mp = ck.string(m, "mountPath", &ip);
        if mp.is_empty() {
            ck.push(FieldError::required(child(&ip, "mountPath"), ""));
        }
        if !points.insert(mp) {
            ck.push(FieldError::invalid(
                child(&ip, "mountPath"),
                mp,
                "must be unique",
            ));
        }
        let sub = ck.string(m, "subPath", &ip);
        if !sub.is_empty() {
            validate_local_descending_path(ck, sub, &child(&mpath, "subPath"));
        }
        let sub_expr = ck.string(m, "subPathExpr", &ip);
        if !sub_expr.is_empty() && !sub.is_empty() {
            ck.push(FieldError::invalid(
                child(&ip, "subPathExpr"),
                sub_expr,
                "subPathExpr and subPath are mutually exclusive",
            ));
        }
        if let Some(mprop) = ck.str(m, "mountPropagation", &ip) {
            const P: &[&str] = &["Bidirectional", "HostToContainer", "None"];
            if !P.contains(&mprop) {
                ck.push(FieldError::not_supported(
                    child(&ip, "mountPropagation"),
                    mprop,
                    P,
                ));
            }
        }
        ck.bool(m, "readOnly", &ip);
    }
}

/// Parses a resource quantity into a float (approximate, for comparisons).
pub fn parse_quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            let exp: i32 = e.parse().ok()?;
            10f64.powi(exp)
        }
    };
    Some(n * mult)
}

fn quantity_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

fn validate_resources(ck: &mut Checker, ctr: &Obj, path: &str) {
    let Some(res) = ck.obj(ctr, "resources", path) else {
        return;
    };
    let rpath = child(path, "resources");
    let mut parsed: BTreeMap<&str, BTreeMap<String, (String, f64)>> = BTreeMap::new();
    for which in ["limits", "requests"] {
        let wp = child(&rpath, which);
        let mut out = BTreeMap::new();
        if let Some(m) = ck.obj(res, which, &rpath) {
            for (name, v) in m {
                let fp = key(&wp, name);
                let Some(qs) = quantity_str(v) else {
                    ck.push(FieldError::type_invalid(&fp, v.clone(), "quantity"));
                    continue;
                };
                let name_errs = names::is_qualified_name(name);
                if !name_errs.is_empty() {
                    ck.extend(&fp, name, name_errs);
                } else if !name.contains('/') && !is_standard_container_resource(name) {
                    ck.push(FieldError::invalid(
                        &fp,
                        name.as_str(),
                        "must be a standard resource for containers",
                    ));
                }
                match parse_quantity(&qs) {
                    Some(q) if q < 0.0 => {
                        ck.push(FieldError::invalid(
                            &fp,
                            qs.as_str(),
                            "must be greater than or equal to 0",
                        ));
                    }
                    Some(q) => {
                        out.insert(name.clone(), (qs, q));
                    }
                    None => ck.push(FieldError::type_invalid(&fp, v.clone(), "quantity")),
                }
            }
        }
        parsed.insert(which, out);
    }
    let limits = parsed.get("limits").cloned().unwrap_or_default();
    if let Some(reqs) = parsed.get("requests") {
        let req_path = child(&rpath, "requests");
        for (name, (rs, rq)) in reqs {
            if let Some((ls, lq)) = limits.get(name) {
                let overcommit = !name.starts_with("hugepages-")
                    && (matches!(name.as_str(), "cpu" | "memory" | "ephemeral-storage")
                        || name.starts_with("requests.")
                        || !name.contains('/')
                        || name.starts_with("kubernetes.io/"));
                if !overcommit && rq != lq {
                    ck.push(FieldError::invalid(
                        &req_path,
                        rs.as_str(),
                        format!("must be equal to {name} limit of {ls}"),
                    ));
                } else if rq > lq {
                    ck.push(FieldError::invalid(
                        &req_path,
                        rs.as_str(),
                        format!("must be less than or equal to {name} limit of {ls}"),
                    ));
                }
            }
        }
    }
}

fn validate_security_context(ck: &mut Checker, o: &Obj, path: &str) {
    let Some(sc) = ck.obj(o, "securityContext", path) else {
        return;
    };
    let sp = child(path, "securityContext");
    for f in ["runAsUser", "runAsGroup"] {
        if let Some(v) = ck.i64(sc, f, &sp)
            && !(0..=4294967295).contains(&v)
        {
            ck.push(FieldError::invalid(
                child(&sp, f),
                v,
                names::inclusive_range_error(0, 4294967295),
            ));
        }
    }
    let privileged = ck.bool(sc, "privileged", &sp);
    let ape = ck.bool(sc, "allowPrivilegeEscalation", &sp);
    if ape == Some(false) && privileged == Some(true) {
        ck.push(FieldError::invalid(
            &sp,
            Value::Object(sc.clone()),
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        ));
    }
    ck.bool(sc, "runAsNonRoot", &sp);
    ck.bool(sc, "readOnlyRootFilesystem", &sp);
}

fn validate_port_num_or_name(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
    let fp = child(path, k);
    match o.get(k) {
        Some(Value::Number(n)) => {
            let v = n.as_i64().unwrap_or(0);
            for m in names::is_valid_port_num(v) {
                ck.push(FieldError::invalid(&fp, v, m));
            }
        }
        Some(Value::String(s)) => ck.extend(&fp, s, names::is_valid_port_name(s)),
        None | Some(Value::Null) => {
            for m in names::is_valid_port_num(0) {
                ck.push(FieldError::invalid(&fp, 0, m));
            }
        }
        Some(other) => ck.push(FieldError::type_invalid(
            &fp,
            other.clone(),
            "int or string",
        )),
    }
}

fn validate_handler(ck: &mut Checker, h: &Obj, path: &str, allow: &[&str], grace: Option<i64>) {
    let mut n = 0;
    for k in allow {
        let Some(a) = ck.obj(h, k, path) else {
            continue;
        };
        let hp = child(path, k);
        if n > 0 {
            ck.push(FieldError::forbidden(
                &hp,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        n += 1;
        match *k {
            "exec" if ck.str_list(a, "command", &hp).is_empty() => {
                ck.push(FieldError::required(child(&hp, "command"), ""));
            }
            "httpGet" => {
                if ck.string(a, "path", &hp).is_empty() {
                    ck.push(FieldError::required(child(&hp, "path"), ""));
                }
                validate_port_num_or_name(ck, a, "port", &hp);
                let scheme = ck.string(a, "scheme", &hp);
                if scheme != "HTTP" && scheme != "HTTPS" {
                    ck.push(FieldError::not_supported(
                        child(&hp, "scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
                for (_, hdr) in ck.obj_items(a, "httpHeaders", &hp) {
                    let name = ck.string(hdr, "name", &hp);
                    ck.extend(
                        &child(&hp, "httpHeaders"),
                        name,
                        names::is_http_header_name(name),
                    );
                }
            }
            "tcpSocket" => validate_port_num_or_name(ck, a, "port", &hp),
            "grpc" => {
                let p = ck.i32(a, "port", &hp).unwrap_or(0);
                for m in names::is_valid_port_num(p) {
                    ck.push(FieldError::invalid(child(&hp, "port"), p, m));
                }
            }
            "sleep" => {
                let s = ck.i64(a, "seconds", &hp).unwrap_or(0);
                if let Some(g) = grace
                    && (s < 0 || s > g)
                {
                    ck.push(FieldError::invalid(
                        &hp,
                        s,
                        format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({g})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if n == 0 {
        ck.push(FieldError::required(path, "must specify a handler type"));
    }
}

fn validate_probe(ck: &mut Checker, ctr: &Obj, k: &str, path: &str, grace: Option<i64>) {
    let Some(p) = ck.obj(ctr, k, path) else {
        return;
    };
    let pp = child(path, k);
    validate_handler(ck, p, &pp, &["exec", "httpGet", "tcpSocket", "grpc"], grace);
    for f in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        if let Some(v) = ck.i32(p, f, &pp)
            && v < 0
        {
            ck.push(FieldError::invalid(
                child(&pp, f),
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
    let tgp = ck.i64(p, "terminationGracePeriodSeconds", &pp);
    if let Some(t) = tgp
        && t <= 0
    {
        ck.push(FieldError::invalid(
            child(&pp, "terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
    let st = ck.i32(p, "successThreshold", &pp).unwrap_or(0);
    match k {
        "livenessProbe" | "startupProbe" if st != 1 => {
            ck.push(FieldError::invalid(
                child(&pp, "successThreshold"),
                st,
                "must be 1",
            ));
        }
        "readinessProbe" => {
            if let Some(t) = tgp {
                ck.push(FieldError::invalid(
                    child(&pp, "terminationGracePeriodSeconds"),
                    t,
                    "must not be set for readinessProbes",
                ));
            }
        }
        _ => {}
    }
}

fn validate_lifecycle(ck: &mut Checker, ctr: &Obj, path: &str, grace: Option<i64>) {
    let Some(l) = ck.obj(ctr, "lifecycle", path) else {
        return;
    };
    let lp = child(path, "lifecycle");
    for k in ["postStart", "preStop"] {
        if let Some(h) = ck.obj(l, k, &lp) {
            validate_handler(
                ck,
                h,
                &child(&lp, k),
                &["exec", "httpGet", "tcpSocket", "sleep"],
                grace,
            );
        }
    }
}

const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];

fn validate_container_common(
    ck: &mut Checker,
    ctr: &Obj,
    path: &str,
    vols: &BTreeMap<String, bool>,
    opts: PodOpts,
) {
    let name = ck.string(ctr, "name", path);
    if name.is_empty() {
        ck.push(FieldError::required(child(path, "name"), ""));
    } else {
        ck.extend(&child(path, "name"), name, names::is_dns1123_label(name));
    }
    let image = ck.string(ctr, "image", path);
    if image.is_empty() {
        ck.push(FieldError::required(child(path, "image"), ""));
    }
    let tmp = ck.string(ctr, "terminationMessagePolicy", path);
    match tmp {
        "File" | "FallbackToLogsOnError" => {}
        "" => ck.push(FieldError::required(
            child(path, "terminationMessagePolicy"),
            "",
        )),
        other => ck.push(FieldError::not_supported(
            child(path, "terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    validate_ports(ck, ctr, path);
    validate_env(ck, ctr, path);
    validate_volume_mounts(ck, ctr, path, vols);
    let pp = ck.string(ctr, "imagePullPolicy", path);
    match pp {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => ck.push(FieldError::required(child(path, "imagePullPolicy"), "")),
        other => ck.push(FieldError::not_supported(
            child(path, "imagePullPolicy"),
            other,
            PULL_POLICIES,
        )),
    }
    validate_resources(ck, ctr, path);
    validate_security_context(ck, ctr, path);
    ck.str_list(ctr, "command", path);
    ck.str_list(ctr, "args", path);
    ck.str(ctr, "workingDir", path);
    if opts.is_pod && image.len() != image.trim().len() {
        ck.push(FieldError::invalid(
            child(path, "image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
}

fn check_host_ports(
    ck: &mut Checker,
    ctrs: &[(usize, &Obj)],
    path: &str,
    seen: &mut BTreeSet<String>,
) {
    for (ci, c) in ctrs {
        let Some(ports) = c.get("ports").and_then(Value::as_array) else {
            continue;
        };
        for (pi, p) in ports.iter().enumerate() {
            let Some(p) = p.as_object() else { continue };
            let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            let ip = p.get("hostIP").and_then(Value::as_str).unwrap_or("");
            let k = format!("{proto}/{ip}/{hp}");
            if !seen.insert(k.clone()) {
                let fp = child(&index(&child(&index(path, *ci), "ports"), pi), "hostPort");
                ck.push(FieldError::duplicate(fp, k));
            }
        }
    }
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
    let cpath = child(path, "containers");
    let ctrs = ck.obj_items(spec, "containers", path);
    if ctrs.is_empty() {
        ck.push(FieldError::required(&cpath, ""));
    } else {
        let mut seen = BTreeSet::new();
        for (i, c) in &ctrs {
            let ip = index(&cpath, *i);
            validate_container_common(ck, c, &ip, &vols, opts);
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
    let ipath = child(path, "initContainers");
    let inits = ck.obj_items(spec, "initContainers", path);
    let mut all_names: BTreeSet<&str> = ctrs
        .iter()
        .map(|(_, c)| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    for (i, c) in &inits {
        let ip = index(&ipath, *i);
        validate_container_common(ck, c, &ip, &vols, opts);
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
        validate_container_common(ck, c, &ip, &vols, opts);
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if all_names.contains(name) {
            ck.push(FieldError::duplicate(child(&ip, "name"), name));
        } else {
            all_names.insert(name);
        }
    }
    // hostNetwork: hostPort must match containerPort.
    if ck.bool(spec, "hostNetwork", path) == Some(true) {
        for (i, c) in &ctrs {
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
    ck.bool(spec, "hostPID", path);
    ck.bool(spec, "hostIPC", path);
    ck.bool(spec, "enableServiceLinks", path);
    ck.i32(spec, "priority", path);
    ck.string(spec, "schedulerName", path);
}

fn validate_tolerations(ck: &mut Checker, spec: &Obj, path: &str) {
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

/// Fields a pod update may change, as listed in kube's error message.
const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The pod-spec part of ValidatePodUpdate (after metadata/spec validation).
pub fn validate_pod_spec_update(ck: &mut Checker, new: &Obj, old: &Obj) {
    let mut scratch = Checker::default();
    let empty = Obj::new();
    let ns = new.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let os = old.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    for k in ["containers", "initContainers"] {
        let nl = ns.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        let ol = os.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        if nl != ol {
            ck.push(FieldError::forbidden(
                child("spec", k),
                "pod updates may not add or remove containers",
            ));
            return;
        }
    }
    let new_ads = scratch.i64(ns, "activeDeadlineSeconds", "spec");
    let old_ads = scratch.i64(os, "activeDeadlineSeconds", "spec");
    match (new_ads, old_ads) {
        (Some(n), _) if !(0..=i32::MAX as i64).contains(&n) => {
            ck.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                names::inclusive_range_error(0, i32::MAX as i64),
            ));
            return;
        }
        (Some(n), Some(o)) if o < n => {
            ck.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                "must be less than or equal to previous value",
            ));
            return;
        }
        (None, Some(_)) => ck.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    // Tolerations: existing ones may only change tolerationSeconds.
    let strip_secs = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("tolerationSeconds");
        }
        v
    };
    let new_tol: Vec<Value> = ns
        .get("tolerations")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(strip_secs).collect())
        .unwrap_or_default();
    if let Some(old_tol) = os.get("tolerations").and_then(Value::as_array) {
        for t in old_tol {
            if !new_tol.contains(&strip_secs(t)) {
                ck.push(FieldError::forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                ));
                break;
            }
        }
    }
    // Scheduling gates: only deletions.
    if let Some(ng) = ns.get("schedulingGates").and_then(Value::as_array) {
        let og: Vec<&str> = os
            .get("schedulingGates")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        for (i, g) in ng.iter().enumerate() {
            let n = g.get("name").and_then(Value::as_str).unwrap_or("");
            if !og.contains(&n) {
                ck.push(FieldError::forbidden(
                    format!("spec.schedulingGates[{i}].name"),
                    format!("only deletion is allowed, but found new scheduling gate '{n}'"),
                ));
            }
        }
    }
    if ns == os {
        return;
    }
    // Munge the mutable fields and compare the rest.
    let mut munged = ns.clone();
    for k in ["containers", "initContainers"] {
        if let (Some(Value::Array(nc)), Some(Value::Array(oc))) = (munged.get_mut(k), os.get(k)) {
            for (n, o) in nc.iter_mut().zip(oc) {
                if let (Some(n), Some(o)) = (n.as_object_mut(), o.as_object()) {
                    match o.get("image") {
                        Some(img) => {
                            n.insert("image".into(), img.clone());
                        }
                        None => {
                            n.remove("image");
                        }
                    }
                }
            }
        }
    }
    for k in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match os.get(k) {
            Some(v) => {
                munged.insert(k.into(), v.clone());
            }
            None => {
                munged.remove(k);
            }
        }
    }
    let old_tgp = os
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_tgp.is_some_and(|t| t < 0)
        && munged
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(1)
        && let Some(v) = os.get("terminationGracePeriodSeconds")
    {
        munged.insert("terminationGracePeriodSeconds".into(), v.clone());
    }
    if old.get("spec").and_then(Value::as_object).is_some_and(|o| {
        o.get("schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty())
    }) {
        // Gated pods may add node selector entries / change node affinity.
        for k in ["nodeSelector"] {
            match os.get(k) {
                Some(v) => {
                    munged.insert(k.into(), v.clone());
                }
                None => {
                    munged.remove(k);
                }
            }
        }
    }
    if &munged != os {
        let diff = spec_diff(os, &munged);
        ck.push(FieldError::forbidden(
            "spec",
            format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{diff}"
            ),
        ));
    }
}

/// A short textual diff of two specs (kube prints a `cmp.Diff` of Go
/// structs, which cannot be reproduced exactly).
fn spec_diff(old: &Obj, new: &Obj) -> String {
    let mut out = String::from("  core.PodSpec{\n");
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for k in keys {
        let (o, n) = (old.get(k), new.get(k));
        if o != n {
            if let Some(o) = o {
                out.push_str(&format!("- \t{k}: {o},\n"));
            }
            if let Some(n) = n {
                out.push_str(&format!("+ \t{k}: {n},\n"));
            }
        }
    }
    out.push_str("  }\n");
    out
}

/// Go `%#v`-like rendering of a template's labels map (nil when absent).
pub fn labels_repr(labels: Option<&Obj>) -> Value {
    match labels {
        None => go_repr("map[string]string(nil)"),
        Some(m) => Value::Object(m.clone()),
    }
}
