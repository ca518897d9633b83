//! kube 1.32 defaults of core/v1 PersistentVolumes and
//! PersistentVolumeClaims: reclaim policy `Retain`, volume mode
//! `Filesystem`, phase `Pending`, and the defaults of the PV sources that
//! have them (hostPath type, iSCSI interface, RBD pool/user/keyring, Azure
//! disk caching/kind/fsType/readOnly, ScaleIO storage mode/fsType).

use super::{Obj, existing_obj, obj_mut, set_str, set_val};
use serde_json::json;

/// Defaults of the volume source of a PersistentVolume spec.
fn pv_sources(spec: &mut Obj) {
    if let Some(h) = existing_obj(spec, "hostPath") {
        set_val(h, "type", json!(""));
    }
    if let Some(i) = existing_obj(spec, "iscsi") {
        set_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = existing_obj(spec, "rbd") {
        set_str(r, "pool", "rbd");
        set_str(r, "user", "admin");
        set_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = existing_obj(spec, "azureDisk") {
        set_val(a, "cachingMode", json!("ReadWrite"));
        set_val(a, "kind", json!("Shared"));
        set_val(a, "fsType", json!("ext4"));
        set_val(a, "readOnly", json!(false));
    }
    if let Some(s) = existing_obj(spec, "scaleIO") {
        set_str(s, "storageMode", "ThinProvisioned");
        set_str(s, "fsType", "xfs");
    }
}

/// `SetObjectDefaults_PersistentVolume`.
pub(super) fn persistent_volume(root: &mut Obj) {
    if let Some(spec) = obj_mut(root, "spec") {
        set_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_val(spec, "volumeMode", json!("Filesystem"));
        pv_sources(spec);
    }
    if let Some(status) = obj_mut(root, "status") {
        set_str(status, "phase", "Pending");
    }
}

/// `SetObjectDefaults_PersistentVolumeClaim`.
pub(super) fn persistent_volume_claim(root: &mut Obj) {
    if let Some(spec) = obj_mut(root, "spec") {
        set_val(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = obj_mut(root, "status") {
        set_str(status, "phase", "Pending");
    }
}
