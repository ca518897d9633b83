//! The network's status: one entry per running node (pod name, IP, readiness), worked out from
//! the network's pods by the reconcile.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::NodeStatus;

/// One node of the network as its pod shows it, or `None` for a pod that is going away or that
/// the network's StatefulSet does not control.
pub fn node_of(pod: &Pod, network: &str) -> Option<NodeStatus> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let controlled = pod
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.kind == "StatefulSet" && r.name == network);
    if !controlled {
        return None;
    }
    let status = pod.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    Some(NodeStatus {
        name: pod.name_any(),
        ip: status.and_then(|s| s.pod_ip.clone()),
        ready,
    })
}

/// The ordinal of a StatefulSet pod (`regtest-12` is 12).
fn ordinal(name: &str) -> Option<u32> {
    name.rsplit_once('-')?.1.parse().ok()
}

/// The nodes of `network` among `pods`, in ordinal order.
pub fn nodes(pods: &[Pod], network: &str) -> Vec<NodeStatus> {
    let mut nodes: Vec<NodeStatus> = pods.iter().filter_map(|p| node_of(p, network)).collect();
    nodes.sort_by(|a, b| (ordinal(&a.name), &a.name).cmp(&(ordinal(&b.name), &b.name)));
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(name: &str, owner: &str, ip: Option<&str>, ready: &str, deleting: bool) -> Pod {
        let mut pod = json!({
            "metadata": {
                "name": name,
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner,
                    "uid": "u", "controller": true,
                }],
            },
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        });
        if let Some(ip) = ip {
            pod["status"]["podIP"] = Value::from(ip);
        }
        if deleting {
            pod["metadata"]["deletionTimestamp"] = Value::from("2024-01-01T00:00:00Z");
        }
        serde_json::from_value(pod).expect("a pod")
    }

    #[test]
    fn nodes_are_listed_by_ordinal_without_leaving_or_foreign_pods() {
        let pods = [
            pod("net-10", "net", Some("10.0.0.10"), "True", false),
            pod("net-2", "net", None, "False", false),
            pod("net-3", "net", Some("10.0.0.3"), "True", true),
            pod("net-0", "other", Some("10.0.0.9"), "True", false),
            pod("net-1", "net", Some("10.0.0.1"), "True", false),
        ];
        let listed = nodes(&pods, "net");
        let names: Vec<&str> = listed.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["net-1", "net-2", "net-10"]);
        assert_eq!(listed[0].ip.as_deref(), Some("10.0.0.1"));
        assert!(listed[0].ready);
        assert_eq!(listed[1].ip, None);
        assert!(!listed[1].ready);
    }
}
