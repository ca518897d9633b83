//! Validation of core/v1 PersistentVolumes and PersistentVolumeClaims:
//! access modes, capacity and requests, classes, volume modes, node
//! affinity, data sources, and what updates may change. The volume sources
//! of a PersistentVolume are in `pv_sources`.

use super::pv_sources::{PV_SOURCES, pv_volume_sources};
use super::quota::{resource_list, validate_quantity_value};
#[allow(unused_imports)]
use super::*;
use crate::quantity::Quantity;

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

fn access_modes(ck: &mut Checker, spec: &Obj, required_detail: &str) {
    let modes = ck.str_list(spec, "accessModes", "spec");
    if modes.is_empty() {
        ck.push(FieldError::required("spec.accessModes", required_detail));
    }
    let (mut rwop, mut other) = (false, false);
    for m in &modes {
        if !ACCESS_MODES.contains(m) {
            ck.push(FieldError::not_supported(
                "spec.accessModes",
                *m,
                ACCESS_MODES,
            ));
        }
        if *m == "ReadWriteOncePod" {
            rwop = true;
        } else if ACCESS_MODES.contains(m) {
            other = true;
        }
    }
    if rwop && other {
        ck.push(FieldError::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

fn class_name(ck: &mut Checker, spec: &Obj) {
    if let Some(c) = ck.str(spec, "storageClassName", "spec")
        && !c.is_empty()
    {
        ck.extend(
            "spec.storageClassName",
            c,
            names::name_is_dns_subdomain(c, false),
        );
    }
}

fn volume_mode(ck: &mut Checker, spec: &Obj) {
    if let Some(m) = ck.str(spec, "volumeMode", "spec")
        && !VOLUME_MODES.contains(&m)
    {
        ck.push(FieldError::not_supported(
            "spec.volumeMode",
            m,
            VOLUME_MODES,
        ));
    }
}

/// Go's `%#v` of a `core.ResourceList` (keys sorted, as fmt prints maps).
fn resource_list_repr(list: &[(&str, Quantity)], present: bool) -> Value {
    if !present {
        return go_repr("core.ResourceList(nil)");
    }
    let mut items: Vec<(&str, &Quantity)> = list.iter().map(|(k, q)| (*k, q)).collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = items
        .iter()
        .map(|(k, q)| {
            let inner = crate::validation::go_repr(q.go_struct(q.parse_cache()));
            let inner = inner
                .get(crate::validation::GO_REPR_KEY)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            format!("{}:{inner}", go_quote(k))
        })
        .collect();
    go_repr(format!("core.ResourceList{{{}}}", parts.join(", ")))
}

fn node_selector_requirement(ck: &mut Checker, r: &Obj, path: &str) {
    let op = ck.string(r, "operator", path);
    let n = ck.str_list(r, "values", path).len();
    match op {
        "In" | "NotIn" if n == 0 => ck.push(FieldError::required(
            child(path, "values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if n > 0 => ck.push(FieldError::forbidden(
            child(path, "values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if n != 1 => ck.push(FieldError::required(
            child(path, "values"),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => ck.push(FieldError::invalid(
            child(path, "operator"),
            other,
            "not a valid selector operator",
        )),
    }
    let k = ck.string(r, "key", path);
    ck.extend(&child(path, "key"), k, names::is_qualified_name(k));
}

fn node_field_requirement(ck: &mut Checker, r: &Obj, path: &str) {
    let op = ck.string(r, "operator", path);
    let values = ck.str_list(r, "values", path);
    match op {
        "In" | "NotIn" if values.len() != 1 => ck.push(FieldError::required(
            child(path, "values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        other => ck.push(FieldError::invalid(
            child(path, "operator"),
            other,
            "not a valid selector operator",
        )),
    }
    let k = ck.string(r, "key", path);
    if k == "metadata.name" {
        for (i, v) in values.iter().enumerate() {
            ck.extend(
                &index(&child(path, "values"), i),
                v,
                names::name_is_dns_subdomain(v, false),
            );
        }
    } else {
        ck.push(FieldError::invalid(
            child(path, "key"),
            k,
            "not a valid field selector key",
        ));
    }
}

/// `validateVolumeNodeAffinity`: the required node selector.
fn volume_node_affinity(ck: &mut Checker, na: &Obj) {
    let p = "spec.nodeAffinity";
    let Some(req) = ck.obj(na, "required", p) else {
        ck.push(FieldError::required(
            child(p, "required"),
            "must specify required node constraints",
        ));
        return;
    };
    let tp = "spec.nodeAffinity.required.nodeSelectorTerms";
    let terms = ck.obj_items(req, "nodeSelectorTerms", "spec.nodeAffinity.required");
    if terms.is_empty() {
        ck.push(FieldError::required(
            tp,
            "must have at least one node selector term",
        ));
        return;
    }
    for (i, term) in terms {
        let ip = index(tp, i);
        for (j, r) in ck.obj_items(term, "matchExpressions", &ip) {
            node_selector_requirement(ck, r, &index(&child(&ip, "matchExpressions"), j));
        }
        for (j, r) in ck.obj_items(term, "matchFields", &ip) {
            node_field_requirement(ck, r, &index(&child(&ip, "matchFields"), j));
        }
    }
}

fn pv_spec(ck: &mut Checker, root: &Obj) {
    let meta = root.get("metadata").and_then(Value::as_object);
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = sub(ck, root, "spec", "");
    access_modes(ck, spec, "");
    let capacity = resource_list(ck, spec, "capacity", "spec");
    if capacity.is_empty() {
        ck.push(FieldError::required("spec.capacity", ""));
    }
    if !capacity.iter().any(|(k, _)| *k == "storage") || capacity.len() > 1 {
        ck.push(FieldError::not_supported(
            "spec.capacity",
            resource_list_repr(
                &capacity,
                spec.get("capacity").is_some_and(Value::is_object),
            ),
            &["storage"],
        ));
    }
    for (k, q) in &capacity {
        let cp = key("spec.capacity", k);
        if q.value() < 0 {
            ck.push(FieldError::invalid(
                &cp,
                i64::try_from(q.value()).unwrap_or(i64::MIN),
                "must be a valid resource quantity",
            ));
        }
        if q.sign() <= 0 {
            ck.push(FieldError::invalid(
                &cp,
                q.canonical(),
                "must be greater than zero",
            ));
        }
    }
    let reclaim = ck.string(spec, "persistentVolumeReclaimPolicy", "spec");
    if !reclaim.is_empty() && !RECLAIM_POLICIES.contains(&reclaim) {
        ck.push(FieldError::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            reclaim,
            RECLAIM_POLICIES,
        ));
    }
    let na = ck.obj(spec, "nodeAffinity", "spec");
    if let Some(na) = na {
        volume_node_affinity(ck, na);
    }
    let local = pv_volume_sources(ck, spec, name);
    if local && na.is_none() {
        ck.push(FieldError::required(
            "spec.nodeAffinity",
            "Local volume requires node affinity",
        ));
    }
    let host_root = spec
        .get("hostPath")
        .and_then(|h| h.get("path"))
        .and_then(Value::as_str)
        .is_some_and(cleans_to_root);
    if host_root && reclaim == "Recycle" {
        ck.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    class_name(ck, spec);
    volume_mode(ck, spec);
}

/// Whether Go's `path.Clean` turns `p` into `/`.
fn cleans_to_root(p: &str) -> bool {
    if !p.starts_with('/') {
        return false;
    }
    let mut depth = 0usize;
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => depth = depth.saturating_sub(1),
            _ => depth += 1,
        }
    }
    depth == 0
}

/// A short textual diff of two objects (kube prints a `cmp.Diff` of Go
/// structs, which cannot be reproduced exactly).
fn obj_diff(ty: &str, old: &Obj, new: &Obj) -> String {
    let mut out = format!("  {ty}{{\n");
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

fn spec_of(o: &Obj) -> Obj {
    o.get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn ptr_string_repr(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_str) {
        Some(s) => Value::String(s.to_string()),
        None => Value::Null,
    }
}

/// PersistentVolume (`ValidatePersistentVolume[Update]`).
pub(crate) fn persistent_volume(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    validate_object_meta(ck, root, false, names::name_is_dns_subdomain, true);
    pv_spec(ck, root);
    let Some(o) = old else { return };
    let (mut ns, os) = (spec_of(root), spec_of(o));
    // An unset controllerExpandSecretRef may be set.
    let old_has_ref = os
        .get("csi")
        .and_then(|c| c.get("controllerExpandSecretRef"))
        .is_some_and(|r| !r.is_null());
    if os.get("csi").is_some_and(Value::is_object)
        && !old_has_ref
        && let Some(csi) = ns.get_mut("csi").and_then(Value::as_object_mut)
    {
        csi.remove("controllerExpandSecretRef");
    }
    let source = |s: &Obj| -> Obj {
        PV_SOURCES
            .iter()
            .filter_map(|(k, _)| {
                s.get(*k)
                    .filter(|v| !v.is_null())
                    .map(|v| ((*k).to_string(), v.clone()))
            })
            .collect()
    };
    let (nsrc, osrc) = (source(&ns), source(&os));
    if nsrc != osrc {
        ck.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            format!(
                "spec.persistentvolumesource is immutable after creation\n{}",
                obj_diff("core.PersistentVolumeSource", &osrc, &nsrc)
            ),
        ));
    }
    if ns.get("volumeMode") != os.get("volumeMode") {
        ck.push(FieldError::invalid(
            "volumeMode",
            ptr_string_repr(ns.get("volumeMode")),
            FIELD_IMMUTABLE,
        ));
    }
    let old_na = os.get("nodeAffinity").filter(|v| !v.is_null());
    let new_na = ns.get("nodeAffinity").filter(|v| !v.is_null());
    if old_na.is_some() && old_na != new_na {
        let repr = match new_na {
            None => Value::Null,
            Some(na) => go_repr(format!(
                "core.VolumeNodeAffinity{{Required:{}}}",
                if na.get("required").is_some_and(|r| !r.is_null()) {
                    "(*core.NodeSelector)(0xc000000000)"
                } else {
                    "(*core.NodeSelector)(nil)"
                }
            )),
        };
        ck.push(FieldError::invalid("nodeAffinity", repr, FIELD_IMMUTABLE));
    }
}

// ------------------------------------------------------------------ claims

fn data_source(ck: &mut Checker, ds: &Obj, path: &str, with_namespace: bool) {
    if ck.string(ds, "name", path).is_empty() {
        ck.push(FieldError::required(child(path, "name"), ""));
    }
    let kind = ck.string(ds, "kind", path);
    if kind.is_empty() {
        ck.push(FieldError::required(child(path, "kind"), ""));
    }
    let group = ck.string(ds, "apiGroup", path);
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        ck.push(FieldError::invalid(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        ck.extend(
            &child(path, "apiGroup"),
            group,
            names::is_dns1123_subdomain(group),
        );
    }
    if with_namespace
        && let Some(ns) = ck.str(ds, "namespace", path)
        && !ns.is_empty()
    {
        ck.extend(
            &child(path, "namespace"),
            ns,
            names::name_is_dns_label(ns, false),
        );
    }
}

fn path_repr(name: &str) -> Value {
    go_repr(format!(
        "field.Path{{name:{}, index:\"\", parent:(*field.Path)(0xc000000000)}}",
        go_quote(name)
    ))
}

/// `ValidatePersistentVolumeClaimSpec`.
fn pvc_spec(ck: &mut Checker, spec: &Obj) {
    access_modes(ck, spec, "at least 1 access mode is required");
    if let Some(sel) = ck.obj(spec, "selector", "spec") {
        validate_label_selector(ck, sel, "spec.selector");
    }
    let sp = "spec.resources[storage]";
    let res = sub(ck, spec, "resources", "spec");
    let requests = resource_list(ck, res, "requests", "spec.resources");
    match requests.iter().find(|(k, _)| *k == "storage") {
        None => ck.push(FieldError::required(sp, "")),
        Some((_, q)) if q.sign() <= 0 => {
            ck.push(FieldError::invalid(
                sp,
                q.canonical(),
                "must be greater than zero",
            ));
        }
        Some((_, q)) => validate_quantity_value(ck, "storage", q, sp),
    }
    class_name(ck, spec);
    volume_mode(ck, spec);
    let ds = ck.obj(spec, "dataSource", "spec");
    let dsr = ck.obj(spec, "dataSourceRef", "spec");
    if let Some(d) = ds {
        data_source(ck, d, "spec.dataSource", false);
    }
    if let Some(d) = dsr {
        data_source(ck, d, "spec.dataSourceRef", true);
    }
    let ref_ns = dsr
        .and_then(|d| d.get("namespace"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if ref_ns {
        if ds.is_some() {
            ck.push(FieldError::invalid(
                "spec",
                path_repr("dataSource"),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(d), Some(r)) = (ds, dsr) {
        let same = ["apiGroup", "kind", "name"]
            .iter()
            .all(|k| d.get(*k).filter(|v| !v.is_null()) == r.get(*k).filter(|v| !v.is_null()));
        if !same {
            ck.push(FieldError::invalid(
                "spec",
                path_repr("dataSource"),
                "must match dataSourceRef",
            ));
        }
    }
}

fn storage_request(o: &Obj) -> Option<Quantity> {
    o.get("spec")
        .and_then(|s| s.get("resources"))
        .and_then(|r| r.get("requests"))
        .and_then(|r| r.get("storage"))
        .and_then(Quantity::from_value)
}

const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

fn annotation<'a>(o: &'a Obj, k: &str) -> Option<&'a str> {
    o.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(k))
        .and_then(Value::as_str)
}

/// The spec-immutability part of `ValidatePersistentVolumeClaimUpdate`.
fn pvc_update(ck: &mut Checker, root: &Obj, old: &Obj) {
    let (mut ns, mut os) = (spec_of(root), spec_of(old));
    let has = |s: &Obj, k: &str| s.get(k).is_some_and(|v| !v.is_null());
    if os
        .get("volumeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        match ns.get("volumeName") {
            Some(v) => os.insert("volumeName".into(), v.clone()),
            None => os.remove("volumeName"),
        };
    }
    let old_ann = annotation(old, BETA_CLASS);
    let new_ann = annotation(root, BETA_CLASS);
    let new_class = ns.get("storageClassName").and_then(Value::as_str);
    let upgrade_from_annotation = old_ann.is_some()
        && !has(&os, "storageClassName")
        && new_class.is_some()
        && new_class == old_ann
        && (new_ann.is_none() || new_ann == old_ann);
    if upgrade_from_annotation {
        ns.remove("storageClassName");
    } else {
        if new_ann.unwrap_or("") != old_ann.unwrap_or("") {
            ck.push(FieldError::invalid(
                format!("metadata.annotations.{BETA_CLASS}"),
                new_ann.unwrap_or(""),
                FIELD_IMMUTABLE,
            ));
        }
        let from_nil = new_class.is_some()
            && !has(&os, "storageClassName")
            && (old_ann.is_none() || new_class == old_ann);
        if from_nil {
            ns.remove("storageClassName");
        }
    }
    let bound = root
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        == Some("Bound");
    if bound {
        let old_storage = old
            .get("spec")
            .and_then(|s| s.get("resources"))
            .and_then(|r| r.get("requests"))
            .and_then(|r| r.get("storage"))
            .cloned();
        if let Some(req) = ns
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
            .and_then(Value::as_object_mut)
        {
            match old_storage {
                Some(v) => req.insert("storage".into(), v),
                None => req.remove("storage"),
            };
        }
    }
    let equal = {
        let norm = |s: &Obj| -> Value {
            let mut v = Value::Object(s.clone());
            strip_empty(&mut v);
            v
        };
        norm(&ns) == norm(&os)
    };
    if !equal {
        ck.push(FieldError::forbidden(
            "spec",
            format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                obj_diff("core.PersistentVolumeClaimSpec", &os, &ns)
            ),
        ));
    }
    let zero = Quantity::parse("0");
    let new_size = storage_request(root).or_else(|| zero.clone());
    let old_size = storage_request(old).or_else(|| zero.clone());
    if let (Some(n), Some(o)) = (&new_size, &old_size)
        && n.nano < o.nano
    {
        let status_size = old
            .get("status")
            .and_then(|s| s.get("capacity"))
            .and_then(|c| c.get("storage"))
            .and_then(Quantity::from_value)
            .map_or(0, |q| q.nano);
        if n.nano <= status_size {
            ck.push(FieldError::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    if root.get("spec").and_then(|s| s.get("volumeMode"))
        != old.get("spec").and_then(|s| s.get("volumeMode"))
    {
        ck.push(FieldError::invalid(
            "volumeMode",
            ptr_string_repr(root.get("spec").and_then(|s| s.get("volumeMode"))),
            FIELD_IMMUTABLE,
        ));
    }
}

/// Drops nulls and empty objects/arrays, as Go's semantic equality ignores
/// nil-versus-empty differences.
fn strip_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for x in m.values_mut() {
                strip_empty(x);
            }
            m.retain(|_, x| match x {
                Value::Null => false,
                Value::Object(o) => !o.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            });
        }
        Value::Array(a) => a.iter_mut().for_each(strip_empty),
        _ => {}
    }
}

/// PersistentVolumeClaim (`ValidatePersistentVolumeClaim[Update]`).
pub(crate) fn persistent_volume_claim(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    let spec = sub(ck, root, "spec", "");
    pvc_spec(ck, spec);
    if let Some(o) = old {
        pvc_update(ck, root, o);
    }
}
