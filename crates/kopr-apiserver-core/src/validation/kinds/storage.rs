//! Validation of storage.k8s.io/v1 StorageClass, VolumeAttachment and
//! CSIStorageCapacity, as kube-apiserver 1.32 does it (CSIDriver and CSINode
//! live in [`super::csi`]).

use super::meta_shapes::{OnUpdate, core_meta, same_value};
#[allow(unused_imports)]
use super::*;
use crate::validation::metadata::validate_label_name;
use std::collections::BTreeMap;

const MAX_PROVISIONER_PARAMETER_SIZE: usize = 256 * (1 << 10);
const MAX_PROVISIONER_PARAMETER_LEN: usize = 512;
const MAX_ATTACHED_VOLUME_METADATA_SIZE: usize = 256 * (1 << 10);
const MAX_VOLUME_ERROR_MESSAGE_SIZE: usize = 1024;

/// `ValidateCSIDriverName` of the core validation (driver and attacher names).
pub(super) fn csi_driver_name(ck: &mut Checker, v: &str, path: &str) {
    if v.is_empty() {
        ck.push(FieldError::required(path, ""));
    }
    if v.len() > 63 {
        ck.push(FieldError::too_long(path, 63));
    }
    ck.extend(path, v, names::is_dns1123_subdomain(&v.to_lowercase()));
}

// ------------------------------------------------------------ storageclass

fn parameters(ck: &mut Checker, root: &Obj) {
    let params = ck.str_map(root, "parameters", "");
    if params.len() > MAX_PROVISIONER_PARAMETER_LEN {
        ck.push(FieldError::too_long(
            "parameters",
            MAX_PROVISIONER_PARAMETER_LEN,
        ));
        return;
    }
    let mut total = 0usize;
    for (k, v) in &params {
        if k.is_empty() {
            ck.push(FieldError::invalid(
                "parameters",
                *k,
                "field can not be empty.",
            ));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > MAX_PROVISIONER_PARAMETER_SIZE {
        ck.push(FieldError::too_long(
            "parameters",
            MAX_PROVISIONER_PARAMETER_SIZE,
        ));
    }
}

/// `ValidateTopologySelectorTerm`; returns the term as key -> value set.
fn topology_term(ck: &mut Checker, term: &Obj, path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let ep = child(path, "matchLabelExpressions");
    for (i, req) in ck.obj_items(term, "matchLabelExpressions", path) {
        let ip = index(&ep, i);
        let vp = child(&ip, "values");
        let values = ck.str_list(req, "values", &ip);
        if values.is_empty() {
            ck.push(FieldError::required(&vp, ""));
        }
        let mut set = BTreeSet::new();
        for (j, v) in values.iter().enumerate() {
            if !set.insert(v.to_string()) {
                ck.push(FieldError::duplicate(index(&vp, j), *v));
            }
        }
        let k = ck.string(req, "key", &ip);
        validate_label_name(ck, k, &child(&ip, "key"));
        if out.contains_key(k) {
            ck.push(FieldError::duplicate(child(&ip, "key"), k));
        }
        out.insert(k.to_string(), set);
    }
    out
}

fn allowed_topologies(ck: &mut Checker, root: &Obj) {
    let terms = ck.obj_items(root, "allowedTopologies", "");
    // kube compares each term with the earlier ones in a list that starts
    // with one empty entry per term, so an empty term is always a duplicate.
    let mut seen: Vec<BTreeMap<String, BTreeSet<String>>> = vec![BTreeMap::new(); terms.len()];
    for (i, t) in terms {
        let ip = index("allowedTopologies", i);
        let m = topology_term(ck, t, &ip);
        for prev in &seen {
            if *prev == m {
                ck.push(FieldError::duplicate(
                    child(&ip, "matchLabelExpressions"),
                    "",
                ));
            }
        }
        seen.push(m);
    }
}

fn storage_class_body(ck: &mut Checker, root: &Obj) {
    let prov = ck.string(root, "provisioner", "");
    if prov.is_empty() {
        ck.push(FieldError::required("provisioner", ""));
    } else {
        ck.extend(
            "provisioner",
            prov,
            names::is_qualified_name(&prov.to_lowercase()),
        );
    }
    parameters(ck, root);
    if let Some(rp) = ck.str(root, "reclaimPolicy", "")
        && !rp.is_empty()
        && rp != "Delete"
        && rp != "Retain"
    {
        ck.push(FieldError::not_supported(
            "reclaimPolicy",
            rp,
            &["Delete", "Retain"],
        ));
    }
    match ck.str(root, "volumeBindingMode", "") {
        None => ck.push(FieldError::required("volumeBindingMode", "")),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(other) => ck.push(FieldError::not_supported(
            "volumeBindingMode",
            other,
            &["Immediate", "WaitForFirstConsumer"],
        )),
    }
    allowed_topologies(ck, root);
    ck.bool(root, "allowVolumeExpansion", "");
    ck.str_list(root, "mountOptions", "");
}

/// storage.k8s.io/v1 StorageClass.
pub(crate) fn storage_class(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    storage_class_body(ck, root);
    let Some(o) = old else {
        return;
    };
    if !same_value(root.get("parameters"), o.get("parameters")) {
        ck.push(FieldError::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    for f in ["provisioner", "reclaimPolicy"] {
        let n = root.get(f).and_then(Value::as_str).unwrap_or("");
        let p = o.get(f).and_then(Value::as_str).unwrap_or("");
        if n != p {
            ck.push(FieldError::forbidden(
                f,
                format!("updates to {f} are forbidden."),
            ));
        }
    }
    if !same_value(root.get("volumeBindingMode"), o.get("volumeBindingMode")) {
        let v = match root.get("volumeBindingMode") {
            Some(Value::String(s)) => Value::String(s.clone()),
            _ => Value::String("null".into()),
        };
        ck.push(FieldError::invalid("volumeBindingMode", v, FIELD_IMMUTABLE));
    }
}

// -------------------------------------------------------- volumeattachment

fn ptr_repr(present: bool, ty: &str) -> String {
    if present {
        format!("(*{ty})(0xc000000000)")
    } else {
        format!("(*{ty})(nil)")
    }
}

/// Go `%#v` of a `storage.VolumeAttachmentSpec` (pointers shown as Go does,
/// with a placeholder address).
fn va_spec_repr(spec: &Obj) -> Value {
    let s = |o: &Obj, k: &str| go_quote(o.get(k).and_then(Value::as_str).unwrap_or(""));
    let src = spec
        .get("source")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    let has = |k: &str| !matches!(src.get(k), None | Some(Value::Null));
    go_repr(format!(
        "storage.VolumeAttachmentSpec{{Attacher:{}, Source:storage.VolumeAttachmentSource{{PersistentVolumeName:{}, InlineVolumeSpec:{}}}, NodeName:{}}}",
        s(spec, "attacher"),
        ptr_repr(has("persistentVolumeName"), "string"),
        ptr_repr(has("inlineVolumeSpec"), "core.PersistentVolumeSpec"),
        s(spec, "nodeName"),
    ))
}

fn volume_error(ck: &mut Checker, status: &Obj, k: &str) {
    let p = child("status", k);
    if let Some(e) = ck.obj(status, k, "status") {
        let m = ck.string(e, "message", &p);
        if m.len() > MAX_VOLUME_ERROR_MESSAGE_SIZE {
            ck.push(FieldError::too_long(
                child(&p, "message"),
                MAX_ATTACHED_VOLUME_METADATA_SIZE,
            ));
        }
    }
}

/// `ValidateVolumeAttachment` (common to all versions).
fn volume_attachment_common(ck: &mut Checker, root: &Obj) {
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    if ck.string(spec, "attacher", sp).is_empty() {
        ck.push(FieldError::required("spec.attacher", ""));
    }
    let src = sub(ck, spec, "source", sp);
    let pv = ck.str(src, "persistentVolumeName", "spec.source");
    let inline = ck.obj(src, "inlineVolumeSpec", "spec.source");
    let both = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (pv, inline) {
        (None, None) => ck.push(FieldError::required("spec.source", both)),
        (Some(_), Some(_)) => ck.push(FieldError::forbidden("spec.source", both)),
        (Some(""), None) => ck.push(FieldError::required(
            "spec.source.persistentVolumeName",
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = ck.string(spec, "nodeName", sp);
    ck.extend(
        "spec.nodeName",
        node,
        names::name_is_dns_subdomain(node, false),
    );
    let status = sub(ck, root, "status", "");
    let md = ck.str_map(status, "attachmentMetadata", "status");
    let size = md.iter().fold(0usize, |a, (k, v)| {
        a.saturating_add(k.len()).saturating_add(v.len())
    });
    if size > MAX_ATTACHED_VOLUME_METADATA_SIZE {
        ck.push(FieldError::too_long(
            "status.attachmentMetadata",
            MAX_ATTACHED_VOLUME_METADATA_SIZE,
        ));
    }
    volume_error(ck, status, "attachError");
    volume_error(ck, status, "detachError");
}

/// storage.k8s.io/v1 VolumeAttachment.
pub(crate) fn volume_attachment(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    volume_attachment_common(ck, root);
    let spec = root
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(empty());
    match old {
        None => {
            // ValidateVolumeAttachmentV1: stricter checks for new objects.
            let attacher = spec.get("attacher").and_then(Value::as_str).unwrap_or("");
            csi_driver_name(ck, attacher, "spec.attacher");
            if let Some(pv) = spec
                .get("source")
                .and_then(|s| s.get("persistentVolumeName"))
                .and_then(Value::as_str)
            {
                ck.extend(
                    "spec.source.persistentVolumeName",
                    pv,
                    names::name_is_dns_subdomain(pv, false),
                );
            }
        }
        Some(o) => {
            if !same_value(root.get("spec"), o.get("spec")) {
                ck.push(FieldError::invalid(
                    "spec",
                    va_spec_repr(spec),
                    FIELD_IMMUTABLE,
                ));
            }
        }
    }
}

// ------------------------------------------------------ csistoragecapacity

/// storage.k8s.io/v1 CSIStorageCapacity.
pub(crate) fn csi_storage_capacity(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        true,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let topo = ck.obj(root, "nodeTopology", "");
    if let Some(sel) = topo {
        validate_label_selector(ck, sel, "nodeTopology");
    }
    let class = ck.string(root, "storageClassName", "");
    ck.extend(
        "storageClassName",
        class,
        names::name_is_dns_subdomain(class, false),
    );
    for k in ["capacity", "maximumVolumeSize"] {
        let q = match root.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) => continue,
            Some(other) => {
                ck.push(FieldError::type_invalid(k, other.clone(), "quantity"));
                continue;
            }
        };
        match pod::parse_quantity(&q) {
            None => ck.push(FieldError::type_invalid(
                k,
                Value::String(q.clone()),
                "quantity",
            )),
            Some(v) if v < 0.0 && k == "capacity" => ck.push(FieldError::invalid(
                k,
                q.as_str(),
                "must be greater than or equal to 0",
            )),
            Some(_) => {}
        }
    }
    let Some(o) = old else {
        return;
    };
    if !same_value(root.get("nodeTopology"), o.get("nodeTopology")) {
        let v = match topo {
            Some(s) => selector_repr(Some(s)),
            None => Value::String("null".into()),
        };
        ck.push(FieldError::invalid("nodeTopology", v, FIELD_IMMUTABLE));
    }
    let prev = o
        .get("storageClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if prev != class {
        ck.push(FieldError::invalid(
            "storageClassName",
            class,
            FIELD_IMMUTABLE,
        ));
    }
}
