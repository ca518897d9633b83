//! Pod volumes: the volume sources, file modes, key-to-path items and
//! local paths.

#[allow(unused_imports)]
use super::*;

pub(super) const VOLUME_SOURCES: &[(&str, &str)] = &[
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

pub(super) const FILE_MODE_MSG: &str =
    "must be a number between 0 and 0777 (octal), both inclusive";

pub(super) fn check_mode(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
    if let Some(m) = ck.i32(o, k, path)
        && !(0..=0o777).contains(&m)
    {
        ck.push(FieldError::invalid(child(path, k), m, FILE_MODE_MSG));
    }
}

pub(super) fn check_key_to_paths(ck: &mut Checker, src: &Obj, path: &str) {
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

pub(super) fn validate_local_descending_path(ck: &mut Checker, p: &str, path: &str) {
    if p.starts_with('/') {
        ck.push(FieldError::invalid(path, p, "must be a relative path"));
    }
    if p.split(['/', '\\']).any(|s| s == "..") {
        ck.push(FieldError::invalid(path, p, "must not contain '..'"));
    }
}

pub(super) fn validate_local_non_reserved_path(ck: &mut Checker, p: &str, path: &str) {
    validate_local_descending_path(ck, p, path);
    if p.starts_with("..") {
        ck.push(FieldError::invalid(path, p, "must not start with '..'"));
    }
}

pub(super) fn validate_volume_source(ck: &mut Checker, vol: &Obj, path: &str) {
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
pub(super) fn validate_volumes(ck: &mut Checker, spec: &Obj, path: &str) -> BTreeMap<String, bool> {
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
