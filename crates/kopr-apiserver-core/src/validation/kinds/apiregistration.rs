//! Validation of apiregistration.k8s.io/v1 APIServices, as the 1.32
//! kube-aggregator does it: the name must be `<version>.<group>`, priority
//! ranges, and a service reference or a local service (no caBundle, no
//! insecureSkipTLSVerify).

#[allow(unused_imports)]
use super::*;
use base64::Engine;

fn name_errors(name: &str, required: &str) -> Vec<String> {
    let base = names::is_valid_path_segment_name(name, false);
    if !base.is_empty() {
        return base;
    }
    if name != required {
        return vec![format!(
            "must be `spec.version+\".\"+spec.group`: {}",
            go_quote(required)
        )];
    }
    Vec::new()
}

/// ObjectMeta with kube's closure name check, applied (like kube) to both
/// `name` and `generateName`.
fn apiservice_meta(ck: &mut Checker, root: &Obj, required: &str) {
    let mut scratch = Checker::default();
    validate_object_meta(
        &mut scratch,
        root,
        false,
        names::is_valid_path_segment_name,
        false,
    );
    let meta = root
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let field_of = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let mut extra = Vec::new();
    for (k, path) in [
        ("generateName", "metadata.generateName"),
        ("name", "metadata.name"),
    ] {
        let v = field_of(k);
        if v.is_empty() {
            continue;
        }
        // The generic check ran in prefix mode for generateName, which
        // allows "." and ".."; kube's closure ignores the prefix flag.
        let checked = names::is_valid_path_segment_name(v, k == "generateName");
        let errs: Vec<String> = name_errors(v, required)
            .into_iter()
            .filter(|m| !checked.contains(m))
            .collect();
        for m in errs {
            extra.push(FieldError::invalid(path, v, m));
        }
    }
    // The name checks come first in ValidateObjectMeta: after any
    // generateName errors, before the namespace, labels and the rest.
    let at = scratch
        .errs
        .iter()
        .take_while(|e| e.field == "metadata.generateName")
        .count();
    let rest = scratch.errs.split_off(at);
    ck.errs.extend(scratch.errs);
    ck.errs.extend(extra);
    ck.errs.extend(rest);
}

/// apiregistration.k8s.io/v1 APIService.
pub(crate) fn api_service(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let group = ck.string(spec, "group", sp);
    let version = ck.string(spec, "version", sp);
    apiservice_meta(ck, root, &format!("{version}.{group}"));
    if group.is_empty() && version != "v1" {
        ck.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        ck.extend("spec.group", group, names::is_dns1123_subdomain(group));
    }
    ck.extend("spec.version", version, names::is_dns1035_label(version));
    let gpm = ck.i32(spec, "groupPriorityMinimum", sp).unwrap_or(0);
    if gpm <= 0 || gpm > 20000 {
        ck.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            gpm,
            "must be positive and less than 20000",
        ));
    }
    let vp = ck.i32(spec, "versionPriority", sp).unwrap_or(0);
    if vp <= 0 || vp > 1000 {
        ck.push(FieldError::invalid(
            "spec.versionPriority",
            vp,
            "must be positive and less than 1000",
        ));
    }
    let ca = ck.string(spec, "caBundle", sp);
    let ca_len = base64::engine::general_purpose::STANDARD
        .decode(ca)
        .map_or(ca.len(), |b| b.len());
    let insecure = ck.bool(spec, "insecureSkipTLSVerify", sp).unwrap_or(false);
    let Some(svc) = ck.obj(spec, "service", sp) else {
        if ca_len != 0 {
            ck.push(FieldError::invalid(
                "spec.caBundle",
                format!("{ca_len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            ck.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                insecure,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return;
    };
    let svp = "spec.service";
    for k in ["namespace", "name"] {
        if ck.string(svc, k, svp).is_empty() {
            ck.push(FieldError::required(child(svp, k), ""));
        }
    }
    let port = ck.i32(svc, "port", svp).unwrap_or(0);
    let port_errs = names::is_valid_port_num(port);
    if !port_errs.is_empty() {
        ck.push(FieldError::invalid(
            "spec.service.port",
            port,
            format!("port is not valid: {}", port_errs.join(", ")),
        ));
    }
    if insecure && ca_len > 0 {
        ck.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            insecure,
            "may not be true if caBundle is present",
        ));
    }
}
