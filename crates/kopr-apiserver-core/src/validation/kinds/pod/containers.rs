//! Containers: ports, env, volume mounts, resources and quantities, security
//! contexts, probes, lifecycle handlers and host ports.

#[allow(unused_imports)]
use super::*;

pub(super) fn validate_ports(ck: &mut Checker, ctr: &Obj, path: &str) {
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

pub(super) fn validate_env(ck: &mut Checker, ctr: &Obj, path: &str) {
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

pub(super) fn validate_volume_mounts(
    ck: &mut Checker,
    ctr: &Obj,
    path: &str,
    vols: &BTreeMap<String, bool>,
) {
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

pub(super) fn quantity_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(super) fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

pub(super) fn validate_resources(ck: &mut Checker, ctr: &Obj, path: &str) {
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

pub(super) fn validate_security_context(ck: &mut Checker, o: &Obj, path: &str) {
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

pub(super) fn validate_port_num_or_name(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
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

pub(super) fn validate_handler(
    ck: &mut Checker,
    h: &Obj,
    path: &str,
    allow: &[&str],
    grace: Option<i64>,
) {
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

pub(super) fn validate_probe(ck: &mut Checker, ctr: &Obj, k: &str, path: &str, grace: Option<i64>) {
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

pub(super) fn validate_lifecycle(ck: &mut Checker, ctr: &Obj, path: &str, grace: Option<i64>) {
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

pub(super) const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];

pub(super) fn validate_container_common(
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

pub(super) fn check_host_ports(
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
