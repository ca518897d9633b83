//! Validation of storage.k8s.io/v1 CSIDriver and CSINode, as
//! kube-apiserver 1.32 does it.

use super::meta_shapes::{OnUpdate, core_meta, go_string_slice, same_value};
use super::storage::csi_driver_name;
#[allow(unused_imports)]
use super::*;

/// Longest CSINode `nodeID` kube 1.32 accepts (its strategy always sets
/// `AllowLongNodeID`).
const CSI_NODE_ID_MAX_LENGTH: usize = 256;
const TEN_MINUTES: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;

// --------------------------------------------------------------- csidriver

fn csi_driver_spec(ck: &mut Checker, spec: &Obj) {
    let sp = "spec";
    for (k, path) in [
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
    ] {
        if ck.bool(spec, k, sp).is_none() {
            ck.push(FieldError::required(path, ""));
        }
    }
    if let Some(p) = ck.str(spec, "fsGroupPolicy", sp)
        && !matches!(p, "File" | "None" | "ReadWriteOnceWithFSType")
    {
        ck.push(FieldError::not_supported(
            "spec.fsGroupPolicy",
            p,
            &["File", "None", "ReadWriteOnceWithFSType"],
        ));
    }
    let mut audiences: BTreeSet<&str> = BTreeSet::new();
    for (i, t) in ck.obj_items(spec, "tokenRequests", sp) {
        let tp = index("spec.tokenRequests", i);
        let aud = ck.string(t, "audience", &tp);
        if !audiences.insert(aud) {
            ck.push(FieldError::duplicate(child(&tp, "audience"), aud));
            continue;
        }
        let Some(exp) = ck.i64(t, "expirationSeconds", &tp) else {
            continue;
        };
        let ep = child(&tp, "expirationSeconds");
        if exp < TEN_MINUTES {
            ck.push(FieldError::invalid(
                &ep,
                exp,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if exp > MAX_EXPIRATION {
            ck.push(FieldError::invalid(
                &ep,
                exp,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
    }
    for m in ck.str_list(spec, "volumeLifecycleModes", sp) {
        if m != "Persistent" && m != "Ephemeral" {
            ck.push(FieldError::not_supported(
                "spec.volumeLifecycleModes",
                m,
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    if ck.bool(spec, "seLinuxMount", sp).is_none() {
        ck.push(FieldError::required("spec.seLinuxMount", ""));
    }
    ck.bool(spec, "requiresRepublish", sp);
}

/// storage.k8s.io/v1 CSIDriver.
pub(crate) fn csi_driver(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::UpdateOnly,
    );
    let spec = sub(ck, root, "spec", "");
    csi_driver_spec(ck, spec);
    let Some(o) = old else {
        return;
    };
    let os = o.get("spec").and_then(Value::as_object).unwrap_or(empty());
    if !same_value(spec.get("attachRequired"), os.get("attachRequired")) {
        let v = spec.get("attachRequired").cloned().unwrap_or(Value::Null);
        ck.push(FieldError::invalid(
            "spec.attachedRequired",
            v,
            FIELD_IMMUTABLE,
        ));
    }
    let modes = |s: &Obj| -> Vec<String> {
        s.get("volumeLifecycleModes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (n, p) = (modes(spec), modes(os));
    if n != p {
        let items: Vec<&str> = n.iter().map(String::as_str).collect();
        ck.push(FieldError::invalid(
            "spec.volumeLifecycleModes",
            go_string_slice("storage.VolumeLifecycleMode", &items),
            FIELD_IMMUTABLE,
        ));
    }
}

// ----------------------------------------------------------------- csinode

fn csi_node_driver(ck: &mut Checker, d: &Obj, path: &str, seen: &mut BTreeSet<String>) {
    let name = ck.string(d, "name", path);
    csi_driver_name(ck, name, &child(path, "name"));
    let id = ck.string(d, "nodeID", path);
    let ip = child(path, "nodeID");
    if id.is_empty() {
        ck.push(FieldError::required(&ip, ""));
    }
    if id.len() > CSI_NODE_ID_MAX_LENGTH {
        ck.push(FieldError::invalid(
            &ip,
            id,
            format!("must be {CSI_NODE_ID_MAX_LENGTH} characters or less"),
        ));
    }
    if let Some(a) = ck.obj(d, "allocatable", path) {
        let ap = child(path, "allocatable");
        if let Some(c) = ck.i32(a, "count", &ap)
            && c < 0
        {
            ck.push(FieldError::invalid(
                child(&ap, "count"),
                c,
                "must be greater than or equal to 0",
            ));
        }
    }
    if !seen.insert(name.to_string()) {
        ck.push(FieldError::duplicate(child(path, "name"), name));
    }
    let keys = ck.str_list(d, "topologyKeys", path);
    let mut topo: BTreeSet<&str> = BTreeSet::new();
    for k in &keys {
        if k.is_empty() {
            ck.push(FieldError::required(path, ""));
        }
        if !topo.insert(k) {
            ck.push(FieldError::duplicate(path, *k));
        }
        for m in names::is_qualified_name(k) {
            ck.push(FieldError::invalid(path, Value::from(keys.clone()), m));
        }
    }
}

fn driver_repr(d: &Obj) -> Value {
    let s = |k: &str| go_quote(d.get(k).and_then(Value::as_str).unwrap_or(""));
    let keys = match d.get("topologyKeys").and_then(Value::as_array) {
        None => "[]string(nil)".to_string(),
        Some(a) => {
            let q: Vec<String> = a
                .iter()
                .map(|v| go_quote(v.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    };
    let alloc = if matches!(d.get("allocatable"), None | Some(Value::Null)) {
        "(*storage.VolumeNodeResources)(nil)"
    } else {
        "(*storage.VolumeNodeResources)(0xc000000000)"
    };
    go_repr(format!(
        "storage.CSINodeDriver{{Name:{}, NodeID:{}, TopologyKeys:{keys}, Allocatable:{alloc}}}",
        s("name"),
        s("nodeID"),
    ))
}

/// Semantic equality of two CSINode drivers (empty and absent lists match).
fn same_driver(a: &Obj, b: &Obj) -> bool {
    let list = |o: &Obj| -> Vec<Value> {
        o.get("topologyKeys")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    ["name", "nodeID"]
        .iter()
        .all(|k| same_value(a.get(*k), b.get(*k)))
        && list(a) == list(b)
        && same_value(a.get("allocatable"), b.get("allocatable"))
}

/// storage.k8s.io/v1 CSINode.
pub(crate) fn csi_node(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let spec = sub(ck, root, "spec", "");
    let mut seen = BTreeSet::new();
    for (i, d) in ck.obj_items(spec, "drivers", "spec") {
        csi_node_driver(ck, d, &index("spec.drivers", i), &mut seen);
    }
    let Some(o) = old else {
        return;
    };
    let drivers = |r: &Obj| -> Vec<Obj> {
        r.get("spec")
            .and_then(|s| s.get("drivers"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_object).cloned().collect())
            .unwrap_or_default()
    };
    let (new_d, old_d) = (drivers(root), drivers(o));
    for od in &old_d {
        for nd in &new_d {
            if od.get("name") == nd.get("name") && !same_driver(od, nd) {
                ck.push(FieldError::invalid(
                    "CSINodeDriver",
                    driver_repr(nd),
                    FIELD_IMMUTABLE,
                ));
            }
        }
    }
}
