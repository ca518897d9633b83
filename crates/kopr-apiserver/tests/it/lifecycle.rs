//! Garbage collection, server-side apply, subresources, discovery, tables
//! and shared event storage.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: not reached in 10 s");
}

async fn owner_and_child(cms: &Api<ConfigMap>, owner: &str, child: &str, block: bool) {
    let o = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": owner}})).unwrap(),
        )
        .await
        .unwrap();
    let child_obj: ConfigMap = serde_json::from_value(json!({"metadata": {"name": child, "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": o.metadata.uid.unwrap(), "blockOwnerDeletion": block
    }]}}))
    .unwrap();
    cms.create(&PostParams::default(), &child_obj)
        .await
        .unwrap();
}

#[tokio::test]
async fn garbage_collection_follows_the_propagation_policy() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");

    owner_and_child(&cms, "bg", "bg-child", false).await;
    cms.delete("bg", &DeleteParams::background()).await.unwrap();
    eventually("background dependent deleted", || async {
        cms.get_opt("bg-child").await.unwrap().is_none()
    })
    .await;

    owner_and_child(&cms, "orph", "orph-child", false).await;
    cms.delete("orph", &DeleteParams::orphan()).await.unwrap();
    eventually("orphaning owner gone", || async {
        cms.get_opt("orph").await.unwrap().is_none()
    })
    .await;
    let child = cms.get("orph-child").await.unwrap();
    assert!(
        child.metadata.owner_references.is_none(),
        "owner reference removed from the orphan"
    );

    owner_and_child(&cms, "fg", "fg-child", true).await;
    let pending = cms
        .delete("fg", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .expect("owner stays while dependents exist");
    assert!(
        pending
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    eventually("foreground owner deleted after its dependent", || async {
        cms.get_opt("fg-child").await.unwrap().is_none()
            && cms.get_opt("fg").await.unwrap().is_none()
    })
    .await;
    let _ = PropagationPolicy::Background;
}

#[tokio::test]
async fn objects_written_with_absent_owners_are_collected() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let absent = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "never-was",
                        "uid": "0b7e4ad4-0000-4000-8000-000000000000"});
    // Its only owner does not exist: it is deleted.
    let orphan: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "dangling", "ownerReferences": [absent.clone()]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &orphan).await.unwrap();
    eventually("a dependent of an absent owner deleted", || async {
        cms.get_opt("dangling").await.unwrap().is_none()
    })
    .await;
    // One owner is alive: only the dangling reference goes.
    let alive = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "alive"}})).unwrap(),
        )
        .await
        .unwrap();
    let alive_uid = alive.metadata.uid.unwrap();
    let shared: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "shared", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "alive", "uid": alive_uid},
            absent,
        ]}}))
        .unwrap();
    cms.create(&PostParams::default(), &shared).await.unwrap();
    eventually("the dangling reference dropped", || async {
        cms.get_opt("shared").await.unwrap().is_some_and(|c| {
            c.metadata
                .owner_references
                .is_some_and(|refs| refs.len() == 1 && refs[0].uid == alive_uid)
        })
    })
    .await;
}

#[tokio::test]
async fn server_side_apply_conflicts_and_force() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "one"}});
    let created = cms
        .patch("ssa", &PatchParams::apply("alice"), &Patch::Apply(&applied))
        .await
        .unwrap();
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(mf[0].manager.as_deref(), Some("alice"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));

    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "two"}});
    let err = common::status_of(
        cms.patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(&other))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .data.k"
    );
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.k");

    let forced = cms
        .patch(
            "ssa",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(&other),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "two");

    // Apply without a field manager is rejected.
    let (code, _, body) = common::raw(
        &f.client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ssa",
        Some("application/apply-patch+yaml"),
        b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}".to_vec(),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("fieldManager: Required value: is required for apply patch"));
}

#[tokio::test]
async fn deployments_scale_and_track_generation() {
    let f = common::start().await;
    let deps: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = deps.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.spec.replicas, Some(1), "defaulted");
    let scale = deps.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    deps.patch_scale(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let after = deps.get("web").await.unwrap();
    assert_eq!(after.spec.replicas, Some(3));
    assert_eq!(after.metadata.generation, Some(2));
    // A label-only change leaves generation alone.
    let relabeled = deps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(relabeled.metadata.generation, Some(2));
    // A mismatched selector is invalid.
    let mut bad = d.clone();
    bad.metadata.name = Some("bad".into());
    bad.spec.template.metadata.as_mut().unwrap().labels =
        Some([("app".to_string(), "other".to_string())].into());
    let err = common::status_of(deps.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("`selector` does not match template `labels`"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn core_and_events_k8s_io_share_events() {
    let f = common::start().await;
    let core: Api<Event> = Api::namespaced(f.client.clone(), "default");
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Started", "message": "hello", "type": "Normal"
    }))
    .unwrap();
    core.create(&PostParams::default(), &ev).await.unwrap();
    let by_object = core
        .list(&ListParams::default().fields("involvedObject.name=p1"))
        .await
        .unwrap();
    assert_eq!(by_object.items.len(), 1);
    let none = core
        .list(&ListParams::default().fields("involvedObject.name=p2"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    let new_api: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(f.client.clone(), "default");
    let seen = new_api.get("e1").await.unwrap();
    assert_eq!(seen.note.as_deref(), Some("hello"));
    assert_eq!(seen.regarding.unwrap().name.as_deref(), Some("p1"));
    let selected = new_api
        .list(&ListParams::default().fields("regarding.name=p1"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
    let err = common::status_of(
        core.list(&ListParams::default().fields("spec.bogus=1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "field label not supported: spec.bogus")
    );
}

#[tokio::test]
async fn discovery_and_tables() {
    let f = common::start().await;
    let c = &f.client;
    let (code, _, body) = common::raw(c, "GET", "/api/v1", None, Vec::new()).await;
    assert_eq!(code, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let pods = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert!(
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/log")
    );

    let req = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = c.send(req).await.unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );

    let req = http::Request::get("/api/v1/namespaces")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let text = c.request_text(req).await.unwrap();
    let table: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Status", "Age"]);
    assert!(
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["cells"][0] == "default" && r["cells"][1] == "Active")
    );

    let (code, _, body) = common::raw(c, "GET", "/openapi/v3", None, Vec::new()).await;
    assert_eq!(code, 200);
    let root: serde_json::Value = serde_json::from_str(&body).unwrap();
    let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, body) = common::raw(c, "GET", &url, None, Vec::new()).await;
    assert_eq!(code, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object());
}

#[tokio::test]
async fn graceful_pod_deletion_ends_with_the_grace_period() {
    use k8s_openapi::api::core::v1::Pod;
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "graceful"},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pending = pods
        .delete("graceful", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("still there during the grace period");
    assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(1));
    assert!(pods.get_opt("graceful").await.unwrap().is_some());
    eventually("pod gone after its grace period", || async {
        pods.get_opt("graceful").await.unwrap().is_none()
    })
    .await;
    // An unscheduled pod goes at once. (It names a scheduler nobody runs, so the in-process
    // scheduler cannot bind it before the delete.)
    let mut unbound = pod.clone();
    unbound.metadata.name = Some("unbound".into());
    unbound.spec.as_mut().unwrap().node_name = None;
    unbound.spec.as_mut().unwrap().scheduler_name = Some("nobody".into());
    pods.create(&PostParams::default(), &unbound).await.unwrap();
    pods.delete("unbound", &DeleteParams::default())
        .await
        .unwrap();
    assert!(pods.get_opt("unbound").await.unwrap().is_none());
}

#[tokio::test]
async fn services_get_cluster_ips_and_node_ports() {
    use k8s_openapi::api::core::v1::Service;
    let f = common::start().await;
    let svcs: Api<Service> = Api::namespaced(f.client.clone(), "default");
    let kubernetes = svcs.get("kubernetes").await.unwrap();
    assert_eq!(
        kubernetes.spec.unwrap().cluster_ip.as_deref(),
        Some("10.96.0.1")
    );
    let mut seen = std::collections::HashSet::new();
    for (name, kind) in [("a", "ClusterIP"), ("b", "NodePort")] {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": name}, "ports": [{"port": 80}]}
        }))
        .unwrap();
        let created = svcs.create(&PostParams::default(), &svc).await.unwrap();
        let spec = created.spec.unwrap();
        let ip = spec.cluster_ip.unwrap();
        assert!(ip.starts_with("10.96."), "{ip}");
        assert!(seen.insert(ip), "cluster IPs are unique");
        let port = &spec.ports.unwrap()[0];
        assert_eq!(
            port.target_port,
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80))
        );
        if kind == "NodePort" {
            assert!((30000..=32767).contains(&port.node_port.unwrap()));
        } else {
            assert_eq!(port.node_port, None);
        }
    }
}
