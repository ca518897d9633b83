//! The simulated nodes: `kopr-node-0` … `kopr-node-<n-1>`, created at start
//! if missing, with a Ready status as a kubelet would post it. A node with
//! the [`SIMULATED`] annotation (these, or any a user creates with it) has
//! its pods run by the simulated kubelet.

use serde_json::{Value, json};

use super::podutil::{self, rfc3339};
use crate::object;
use crate::registry::{Api, Target};
use crate::status::ApiError;

/// Annotation marking a node whose pods the simulated kubelet runs.
pub const SIMULATED: &str = "kopr.dev/simulated-node";

/// Allocatable CPU of a simulated node.
pub const NODE_CPU: &str = "4";
/// Allocatable memory of a simulated node.
pub const NODE_MEMORY: &str = "16Gi";
/// Pod capacity of a simulated node.
pub const NODE_PODS: &str = "110";

/// The name of the i-th simulated node.
pub fn node_name(i: usize) -> String {
    format!("kopr-node-{i}")
}

/// Whether a node is run by the simulated kubelet.
pub fn is_simulated(node: &Value) -> bool {
    object::meta(node)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(SIMULATED))
        .and_then(Value::as_str)
        == Some("true")
}

pub use kopr_apiserver_core::node_runtime::internal_ip;

fn uuid_from(seed: &str) -> String {
    let h = podutil::hex_from(seed, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The status a kubelet posts for a ready node.
pub fn ready_status(name: &str, index: usize, previous: Option<&Value>) -> Value {
    let now = rfc3339(podutil::now());
    let resources = json!({
        "cpu": NODE_CPU,
        "memory": NODE_MEMORY,
        "pods": NODE_PODS,
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    });
    let since = |ty: &str, status: &str| -> Value {
        previous
            .and_then(|p| p.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter().find(|c| {
                    c.get("type").and_then(Value::as_str) == Some(ty)
                        && c.get("status").and_then(Value::as_str) == Some(status)
                })
            })
            .and_then(|c| c.get("lastTransitionTime"))
            .cloned()
            .unwrap_or_else(|| json!(now))
    };
    let cond = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": ty,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": since(ty, status),
            "reason": reason,
            "message": message,
        })
    };
    let version = crate::version::KUBE_VERSION.2;
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": format!("172.18.0.{}", 2 + index % 250)},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": podutil::hex_from(&format!("machine/{name}"), 32),
            "systemUUID": uuid_from(&format!("system/{name}")),
            "bootID": object::new_uid(),
            "kernelVersion": "6.8.0-kopr",
            "osImage": "kopr simulated node",
            "containerRuntimeVersion": "containerd://1.7.24",
            "kubeletVersion": version,
            "kubeProxyVersion": version,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    })
}

/// Creates the simulated nodes that are missing and marks all of them
/// ready (a kubelet posts its node's status when it starts).
pub async fn ensure_nodes(api: &Api, count: usize) -> Result<(), ApiError> {
    let Some(rt) = api.catalog.get("", "v1", "nodes") else {
        return Ok(());
    };
    let opts = podutil::writer("kubelet");
    for i in 0..count {
        let name = node_name(i);
        let t = Target {
            rt: rt.clone(),
            namespace: None,
            name: Some(name.clone()),
        };
        let existing = match api.get(&t).await {
            Ok(n) => Some(n),
            Err(e) if e.code == 404 => None,
            Err(e) => return Err(e),
        };
        if existing.as_deref().is_some_and(|n| !is_simulated(n)) {
            // A node of the same name that is not ours: leave it alone.
            continue;
        }
        if existing.is_none() {
            let cidr = format!("10.244.{}.0/24", i % 256);
            let body = json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "beta.kubernetes.io/arch": "amd64",
                        "beta.kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                    },
                    "annotations": {
                        SIMULATED: "true",
                        "node.alpha.kubernetes.io/ttl": "0",
                        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                    },
                },
                "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
            });
            match api.create(&rt, None, body, &opts).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        let name2 = name.clone();
        api.mutate_status(&t, &opts, move |cur| {
            let mut n = cur.clone();
            let mut status = ready_status(&name2, i, cur.get("status"));
            if let Some(images) = cur.pointer("/status/images") {
                status["images"] = images.clone();
            }
            n["status"] = status;
            Ok(n)
        })
        .await?;
    }
    Ok(())
}
