//! The volume sources of a core/v1 PersistentVolume
//! (`PersistentVolumeSource`): exactly one, each with kube's field checks.

#[allow(unused_imports)]
use super::*;

/// The JSON keys of `PersistentVolumeSource`, in kube's check order, with
/// the path segment kube reports "more than 1 volume type" under.
pub(super) const PV_SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// A required string field: `Required` when empty; returns the value.
fn req<'a>(ck: &mut Checker, o: &'a Obj, k: &str, path: &str) -> &'a str {
    let v = ck.string(o, k, path);
    if v.is_empty() {
        ck.push(FieldError::required(child(path, k), ""));
    }
    v
}

fn no_backsteps(ck: &mut Checker, p: &str, path: &str) {
    if p.replace('\\', "/").split('/').any(|s| s == "..") {
        ck.push(FieldError::invalid(path, p, "must not contain '..'"));
    }
}

fn host_path(ck: &mut Checker, src: &Obj, sp: &str) {
    let p = ck.string(src, "path", sp);
    if p.is_empty() {
        ck.push(FieldError::required(child(sp, "path"), ""));
        return;
    }
    no_backsteps(ck, p, &child(sp, "path"));
    if let Some(t) = ck.str(src, "type", sp)
        && !HOST_PATH_TYPES.contains(&t)
    {
        ck.push(FieldError::not_supported(
            child(sp, "type"),
            t,
            HOST_PATH_TYPES,
        ));
    }
}

fn partition(ck: &mut Checker, src: &Obj, sp: &str) {
    if let Some(p) = ck.i32(src, "partition", sp)
        && !(0..=255).contains(&p)
    {
        ck.push(FieldError::invalid(
            child(sp, "partition"),
            p,
            names::inclusive_range_error(1, 255),
        ));
    }
}

/// `validatePVSecretReference`.
fn secret_reference(ck: &mut Checker, src: &Obj, k: &str, sp: &str) {
    let Some(r) = ck.obj(src, k, sp) else { return };
    let rp = child(sp, k);
    let name = ck.string(r, "name", &rp);
    if name.is_empty() {
        ck.push(FieldError::required(child(&rp, "name"), ""));
    } else {
        ck.extend(&child(&rp, "name"), name, names::is_dns1123_subdomain(name));
    }
    let ns = ck.string(r, "namespace", &rp);
    if ns.is_empty() {
        ck.push(FieldError::required(child(&rp, "namespace"), ""));
    } else {
        ck.extend(&child(&rp, "namespace"), ns, names::is_dns1123_label(ns));
    }
}

/// `ValidateCSIDriverName`.
pub(super) fn csi_driver_name(ck: &mut Checker, name: &str, path: &str) {
    if name.is_empty() {
        ck.push(FieldError::required(path, ""));
    }
    if name.len() > 63 {
        ck.push(FieldError::too_long(path, 63));
    }
    ck.extend(
        path,
        name,
        names::is_dns1123_subdomain(&name.to_lowercase()),
    );
}

/// kube's `iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`, unanchored at
/// the start.
fn matches_iqn(s: &str) -> bool {
    s.match_indices("iqn.").any(|(i, _)| {
        let rest = &s.as_bytes()[i + 4..];
        let digits = |r: &[u8]| r.iter().all(u8::is_ascii_digit);
        if rest.len() < 8 || !digits(&rest[..4]) || rest[4] != b'-' || !digits(&rest[5..7]) {
            return false;
        }
        if rest[7] != b'.' {
            return false;
        }
        let tail = &rest[8..];
        let Some(colon) = tail.iter().position(|b| *b == b':') else {
            return false;
        };
        let (host, name) = (&tail[..colon], &tail[colon + 1..]);
        !host.is_empty()
            && host
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
            && !name.is_empty()
            && name
                .iter()
                .all(|b| !b",;*&$|".contains(b) && !b.is_ascii_whitespace())
    })
}

fn matches_prefixed_alnum(s: &str, prefix: &str, n: usize) -> bool {
    let Some(rest) = s.strip_prefix(prefix) else {
        return false;
    };
    let mut chars = rest.chars();
    chars.next().is_some()
        && chars.as_str().len() == n
        && chars.as_str().bytes().all(|b| b.is_ascii_alphanumeric())
}

/// kube's check of an iSCSI qualified name (target or initiator).
fn iscsi_name_ok(v: &str) -> bool {
    if v.starts_with("iqn") {
        matches_iqn(v)
    } else if v.starts_with("eui") {
        matches_prefixed_alnum(v, "eui", 16)
    } else if v.starts_with("naa") {
        matches_prefixed_alnum(v, "naa", 32)
    } else {
        false
    }
}

fn iscsi(ck: &mut Checker, src: &Obj, sp: &str, pv_name: &str) {
    let portal = req(ck, src, "targetPortal", sp);
    let initiator = ck.str(src, "initiatorName", sp);
    if initiator.is_some() && pv_name.len() + 1 + portal.len() > 64 {
        ck.push(FieldError::invalid(
            child(sp, "targetportal"),
            portal,
            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
        ));
    }
    let iqn = req(ck, src, "iqn", sp);
    if !iqn.is_empty() && !iscsi_name_ok(iqn) {
        ck.push(FieldError::invalid(
            child(sp, "iqn"),
            iqn,
            "must be valid format",
        ));
    }
    if let Some(lun) = ck.i32(src, "lun", sp)
        && !(0..=255).contains(&lun)
    {
        ck.push(FieldError::invalid(
            child(sp, "lun"),
            lun,
            names::inclusive_range_error(0, 255),
        ));
    }
    let chap = ck.bool(src, "chapAuthDiscovery", sp) == Some(true)
        || ck.bool(src, "chapAuthSession", sp) == Some(true);
    let secret = ck.obj(src, "secretRef", sp);
    match secret {
        None if chap => ck.push(FieldError::required(child(sp, "secretRef"), "")),
        Some(r) if ck.string(r, "name", &child(sp, "secretRef")).is_empty() => {
            ck.push(FieldError::required(
                child(&child(sp, "secretRef"), "name"),
                "",
            ));
        }
        _ => {}
    }
    if let Some(init) = initiator {
        let valid_prefix = ["iqn", "eui", "naa"].iter().any(|p| init.starts_with(p));
        if !valid_prefix || !iscsi_name_ok(init) {
            ck.push(FieldError::invalid(
                child(sp, "initiatorname"),
                init,
                "must be valid format",
            ));
        }
    }
}

fn fc(ck: &mut Checker, src: &Obj, sp: &str) {
    let wwns = ck.str_list(src, "targetWWNs", sp);
    let wwids = ck.str_list(src, "wwids", sp);
    if wwns.is_empty() && wwids.is_empty() {
        ck.push(FieldError::required(
            child(sp, "targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        let v: Vec<Value> = wwns.iter().map(|s| Value::String((*s).into())).collect();
        ck.push(FieldError::invalid(
            child(sp, "targetWWNs"),
            Value::Array(v),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match ck.i32(src, "lun", sp) {
            None => ck.push(FieldError::required(
                child(sp, "lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(l) if !(0..=255).contains(&l) => ck.push(FieldError::invalid(
                child(sp, "lun"),
                l,
                names::inclusive_range_error(0, 255),
            )),
            _ => {}
        }
    }
}

fn flex(ck: &mut Checker, src: &Obj, sp: &str) {
    req(ck, src, "driver", sp);
    for (k, _) in ck.str_map(src, "options", sp) {
        let ns = k.split_once('/').map_or(k, |(n, _)| n);
        let normalized = format!(".{}", ns.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            ck.push(FieldError::invalid(
                key(&child(sp, "options"), k),
                k,
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
}

const CACHING_MODES: &[&str] = &["None", "ReadOnly", "ReadWrite"];
const DISK_KINDS: &[&str] = &["Dedicated", "Managed", "Shared"];

fn azure_disk(ck: &mut Checker, src: &Obj, sp: &str) {
    req(ck, src, "diskName", sp);
    let uri = req(ck, src, "diskURI", sp);
    if let Some(m) = ck.str(src, "cachingMode", sp)
        && !CACHING_MODES.contains(&m)
    {
        ck.push(FieldError::not_supported(
            child(sp, "cachingMode"),
            m,
            CACHING_MODES,
        ));
    }
    let kind = ck.str(src, "kind", sp);
    if let Some(k) = kind
        && !DISK_KINDS.contains(&k)
    {
        ck.push(FieldError::not_supported(child(sp, "kind"), k, DISK_KINDS));
    }
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => {
            ck.push(FieldError::not_supported(
                child(sp, "diskURI"),
                uri,
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        Some(k) if k != "Managed" && !uri.starts_with("https://") => {
            ck.push(FieldError::not_supported(
                child(sp, "diskURI"),
                uri,
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
        _ => {}
    }
}

fn quobyte(ck: &mut Checker, src: &Obj, sp: &str) {
    let registry = ck.string(src, "registry", sp);
    let tenant = ck.string(src, "tenant", sp);
    if registry.is_empty() {
        ck.push(FieldError::required(
            child(sp, "registry"),
            "must be a host:port pair or multiple pairs separated by commas",
        ));
    } else if tenant.len() >= 65 {
        ck.push(FieldError::required(
            child(sp, "tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !is_host_port(pair) {
                ck.push(FieldError::invalid(
                    child(sp, "registry"),
                    registry,
                    "must be a host:port pair or multiple pairs separated by commas",
                ));
            }
        }
    }
    req(ck, src, "volume", sp);
}

/// Whether `net.SplitHostPort` accepts the string.
fn is_host_port(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('[') {
        let Some((host, port)) = rest.split_once(']') else {
            return false;
        };
        return !host.contains('[') && port.starts_with(':') && !port[1..].contains(':');
    }
    match s.rsplit_once(':') {
        Some((host, _)) => !host.contains(':') && !s.contains('[') && !s.contains(']'),
        None => false,
    }
}

fn storageos(ck: &mut Checker, src: &Obj, sp: &str) {
    let vn = ck.string(src, "volumeName", sp);
    if vn.is_empty() {
        ck.push(FieldError::required(child(sp, "volumeName"), ""));
    } else {
        ck.extend(&child(sp, "volumeName"), vn, names::is_dns1123_label(vn));
    }
    let ns = ck.string(src, "volumeNamespace", sp);
    if !ns.is_empty() {
        ck.extend(
            &child(sp, "volumeNamespace"),
            ns,
            names::is_dns1123_label(ns),
        );
    }
    if let Some(r) = ck.obj(src, "secretRef", sp) {
        let rp = child(sp, "secretRef");
        req(ck, r, "name", &rp);
        req(ck, r, "namespace", &rp);
    }
}

fn one_source(ck: &mut Checker, json_key: &str, src: &Obj, sp: &str, pv_name: &str) {
    match json_key {
        "hostPath" => host_path(ck, src, sp),
        "gcePersistentDisk" => {
            let p = "spec.persistentDisk";
            req(ck, src, "pdName", p);
            partition(ck, src, p);
        }
        "awsElasticBlockStore" => {
            req(ck, src, "volumeID", sp);
            partition(ck, src, sp);
        }
        "glusterfs" => {
            req(ck, src, "endpoints", sp);
            req(ck, src, "path", sp);
            if let Some(ns) = ck.str(src, "endpointsNamespace", sp) {
                let np = child(sp, "endpointsNamespace");
                if ns.is_empty() {
                    ck.push(FieldError::invalid(
                        np,
                        ns,
                        "if the endpointnamespace is set, it must be a valid namespace name",
                    ));
                } else {
                    ck.extend(&np, ns, names::name_is_dns_label(ns, false));
                }
            }
        }
        "flocker" => {
            let name = ck.string(src, "datasetName", sp);
            let uuid = ck.string(src, "datasetUUID", sp);
            if name.is_empty() && uuid.is_empty() {
                ck.push(FieldError::required(
                    sp,
                    "one of datasetName and datasetUUID is required",
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                ck.push(FieldError::invalid(
                    sp,
                    "resource",
                    "datasetName and datasetUUID can not be specified simultaneously",
                ));
            }
            if name.contains('/') {
                ck.push(FieldError::invalid(
                    child(sp, "datasetName"),
                    name,
                    "must not contain '/'",
                ));
            }
        }
        "nfs" => {
            req(ck, src, "server", sp);
            let p = req(ck, src, "path", sp);
            if !p.starts_with('/') {
                ck.push(FieldError::invalid(
                    child(sp, "path"),
                    p,
                    "must be an absolute path",
                ));
            }
        }
        "rbd" => {
            if ck.str_list(src, "monitors", sp).is_empty() {
                ck.push(FieldError::required(child(sp, "monitors"), ""));
            }
            req(ck, src, "image", sp);
        }
        "quobyte" => quobyte(ck, src, sp),
        "cephfs" if ck.str_list(src, "monitors", sp).is_empty() => {
            ck.push(FieldError::required(child(sp, "monitors"), ""));
        }
        "iscsi" => iscsi(ck, src, sp, pv_name),
        "cinder" => {
            req(ck, src, "volumeID", sp);
            if let Some(r) = ck.obj(src, "secretRef", sp) {
                let rp = child(sp, "secretRef");
                req(ck, r, "name", &rp);
                req(ck, r, "namespace", &rp);
            }
        }
        "fc" => fc(ck, src, sp),
        "flexVolume" => flex(ck, src, sp),
        "azureFile" => {
            req(ck, src, "secretName", sp);
            req(ck, src, "shareName", sp);
            if ck.str(src, "secretNamespace", sp) == Some("") {
                ck.push(FieldError::required(child(sp, "secretNamespace"), ""));
            }
        }
        "vsphereVolume" => {
            req(ck, src, "volumePath", sp);
        }
        "photonPersistentDisk" => {
            req(ck, src, "pdID", sp);
        }
        "portworxVolume" => {
            req(ck, src, "volumeID", sp);
        }
        "azureDisk" => azure_disk(ck, src, sp),
        "scaleIO" => {
            for k in ["gateway", "system", "volumeName"] {
                req(ck, src, k, sp);
            }
        }
        "local" => {
            let p = ck.string(src, "path", sp);
            if p.is_empty() {
                ck.push(FieldError::required(child(sp, "path"), ""));
            } else {
                no_backsteps(ck, p, &child(sp, "path"));
            }
        }
        "storageos" => storageos(ck, src, sp),
        "csi" => {
            let driver = ck.string(src, "driver", sp);
            csi_driver_name(ck, driver, &child(sp, "driver"));
            req(ck, src, "volumeHandle", sp);
            for k in [
                "controllerPublishSecretRef",
                "controllerExpandSecretRef",
                "nodePublishSecretRef",
                "nodeExpandSecretRef",
            ] {
                secret_reference(ck, src, k, sp);
            }
        }
        _ => {}
    }
}

/// Validates the volume source of a PersistentVolume spec; returns whether
/// it is a `local` volume (which requires node affinity).
pub(super) fn pv_volume_sources(ck: &mut Checker, spec: &Obj, pv_name: &str) -> bool {
    let mut count = 0;
    let mut local = false;
    for (json_key, go_name) in PV_SOURCES {
        let Some(src) = ck.obj(spec, json_key, "spec") else {
            continue;
        };
        let sp = child("spec", json_key);
        // kube counts flexVolume without the "more than 1" check.
        if count > 0 && *json_key != "flexVolume" {
            ck.push(FieldError::forbidden(
                child("spec", go_name),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        if *json_key == "local" {
            local = true;
        }
        one_source(ck, json_key, src, &sp, pv_name);
    }
    if count == 0 {
        ck.push(FieldError::required("spec", "must specify a volume type"));
    }
    local
}
