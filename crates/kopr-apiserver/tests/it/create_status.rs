//! The status a create response carries, as kube-apiserver's `PrepareForCreate`s set it
//! (issue 39): read back through kube-rs from the object `create` returns.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use crate::common;

/// A pod with scheduling gates is created `PodScheduled=False`, reason `SchedulingGated`;
/// one without gates has no condition yet.
#[tokio::test]
async fn a_gated_pod_is_created_with_the_scheduling_gated_condition() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let gated: Pod = serde_json::from_value(json!({
        "metadata": {"name": "gated"},
        "spec": {
            "schedulingGates": [{"name": "example.com/quota"}],
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &gated).await.unwrap();
    let status = created.status.expect("status");
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let conditions = status.conditions.expect("conditions");
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    let c = &conditions[0];
    assert_eq!(c.type_, "PodScheduled");
    assert_eq!(c.status, "False");
    assert_eq!(c.reason.as_deref(), Some("SchedulingGated"));
    assert_eq!(
        c.message.as_deref(),
        Some("Scheduling is blocked due to non-empty scheduling gates")
    );
    assert!(c.last_transition_time.is_some());
    assert!(c.last_probe_time.is_none());

    let plain: Pod = serde_json::from_value(json!({
        "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &plain).await.unwrap();
    assert!(created.status.and_then(|s| s.conditions).is_none());
}

/// A local APIService (no `spec.service`) is available from its create response on; one
/// backed by a service starts without conditions.
#[tokio::test]
async fn a_local_api_service_is_created_available() {
    let f = common::start().await;
    let gvk = GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "apiservices");
    let services: Api<DynamicObject> = Api::all_with(f.client.clone(), &ar);
    let local: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.local.example.com"},
        "spec": {
            "group": "local.example.com",
            "version": "v1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
        },
        // What a client sends as status is not kept.
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "Mine"}]},
    }))
    .unwrap();
    let created = services
        .create(&PostParams::default(), &local)
        .await
        .unwrap();
    let conditions = &created.data["status"]["conditions"];
    assert_eq!(conditions.as_array().map(Vec::len), Some(1), "{conditions}");
    assert_eq!(conditions[0]["type"], "Available");
    assert_eq!(conditions[0]["status"], "True");
    assert_eq!(conditions[0]["reason"], "Local");
    assert_eq!(
        conditions[0]["message"],
        "Local APIServices are always available"
    );
    assert!(conditions[0]["lastTransitionTime"].is_string());

    let remote: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.remote.example.com"},
        "spec": {
            "group": "remote.example.com",
            "version": "v1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "insecureSkipTLSVerify": true,
            "service": {"namespace": "default", "name": "remote", "port": 443},
        },
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Mine"}]},
    }))
    .unwrap();
    let created = services
        .create(&PostParams::default(), &remote)
        .await
        .unwrap();
    let status = &created.data["status"];
    assert!(
        status
            .get("conditions")
            .is_none_or(serde_json::Value::is_null),
        "{status}"
    );
}

/// A node keeps the status its kubelet registers with, except the dynamic kubelet
/// configuration.
#[tokio::test]
async fn a_node_keeps_the_status_it_is_created_with() {
    let f = common::start().await;
    let nodes: Api<Node> = Api::all(f.client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "registered"},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}],
            "nodeInfo": {
                "machineID": "m", "systemUUID": "s", "bootID": "b",
                "kernelVersion": "6.1", "osImage": "Debian", "containerRuntimeVersion": "containerd://2.0",
                "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "config": {"error": "from the client"},
        },
    }))
    .unwrap();
    let created = nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = created.status.expect("status kept");
    let capacity = status.capacity.expect("capacity");
    assert_eq!(capacity["cpu"].0, "4");
    assert_eq!(capacity["memory"].0, "8Gi");
    // Defaulted from the capacity, as kube's SetDefaults_NodeStatus.
    assert_eq!(status.allocatable.expect("allocatable")["cpu"].0, "4");
    assert_eq!(status.addresses.expect("addresses")[0].address, "10.0.0.7");
    assert_eq!(
        status.node_info.expect("nodeInfo").kubelet_version,
        "v1.32.0"
    );
    assert!(
        status.config.is_none(),
        "status.config is dropped on create"
    );
}

/// A new namespace gets the `kubernetes` finalizer after the ones its client asked for.
#[tokio::test]
async fn a_namespace_gets_the_kubernetes_finalizer_after_its_own() {
    let f = common::start().await;
    let namespaces: Api<Namespace> = Api::all(f.client.clone());
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {"name": "with-finalizer"},
        "spec": {"finalizers": ["example.com/cleanup"]},
        "status": {"phase": "Terminating"},
    }))
    .unwrap();
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(
        created.spec.and_then(|s| s.finalizers),
        Some(vec![
            "example.com/cleanup".to_string(),
            "kubernetes".to_string()
        ])
    );
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
    let plain: Namespace = serde_json::from_value(json!({"metadata": {"name": "plain"}})).unwrap();
    let created = namespaces
        .create(&PostParams::default(), &plain)
        .await
        .unwrap();
    assert_eq!(
        created.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_string()])
    );
}
