//! kube 1.32 defaults of storage.k8s.io/v1: StorageClass reclaimPolicy
//! Delete and volumeBindingMode Immediate; CSIDriver attachRequired true,
//! podInfoOnMount, storageCapacity, requiresRepublish and seLinuxMount false,
//! fsGroupPolicy ReadWriteOnceWithFSType, volumeLifecycleModes [Persistent].

use super::{Obj, obj_mut, set_val};
use serde_json::{Value, json};

/// `SetDefaults_StorageClass`.
pub(super) fn storage_class(root: &mut Obj) {
    set_val(root, "reclaimPolicy", json!("Delete"));
    set_val(root, "volumeBindingMode", json!("Immediate"));
}

/// `SetDefaults_CSIDriver` (all feature gates involved are on in 1.32).
pub(super) fn csi_driver(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_val(spec, "attachRequired", json!(true));
    set_val(spec, "podInfoOnMount", json!(false));
    set_val(spec, "storageCapacity", json!(false));
    set_val(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    let no_modes = match spec.get("volumeLifecycleModes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if no_modes {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_val(spec, "requiresRepublish", json!(false));
    set_val(spec, "seLinuxMount", json!(false));
}

#[cfg(test)]
mod tests {
    use super::super::apply_defaults;
    use serde_json::{Value, json};

    const G: &str = "storage.k8s.io";

    fn d(res: &str, mut v: Value) -> Value {
        apply_defaults(G, res, &mut v);
        v
    }

    #[test]
    fn storage_class_defaults() {
        let v = d("storageclasses", json!({"provisioner": "x.io/p"}));
        assert_eq!(v["reclaimPolicy"], "Delete");
        assert_eq!(v["volumeBindingMode"], "Immediate");
        let v = d(
            "storageclasses",
            json!({"provisioner": "x.io/p", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"}),
        );
        assert_eq!(v["reclaimPolicy"], "Retain");
        assert_eq!(v["volumeBindingMode"], "WaitForFirstConsumer");
    }

    #[test]
    fn csi_driver_defaults() {
        let v = d("csidrivers", json!({"metadata": {"name": "d.example.com"}}));
        assert_eq!(
            v["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                   "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                   "requiresRepublish": false, "seLinuxMount": false})
        );
        let v = d(
            "csidrivers",
            json!({"spec": {"attachRequired": false, "volumeLifecycleModes": ["Ephemeral"], "fsGroupPolicy": "File"}}),
        );
        assert_eq!(v["spec"]["attachRequired"], false);
        assert_eq!(v["spec"]["volumeLifecycleModes"], json!(["Ephemeral"]));
        assert_eq!(v["spec"]["fsGroupPolicy"], "File");
        // No defaults for the other storage kinds.
        let va = json!({"spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "p"}}});
        assert_eq!(d("volumeattachments", va.clone()), va);
    }
}
