//! `{}` for a Go value struct, `""`, `0` and `false` are the same as absent (issue 39): a
//! kube-rs client that reads an object and writes it back (k8s-openapi writes `resources: {}`
//! and `metadata: {}` where the stored object has none) changes only what it changed, as
//! kube-apiserver decides after decoding into Go structs.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common;

fn editor() -> PostParams {
    PostParams {
        field_manager: Some("editor".into()),
        ..PostParams::default()
    }
}

/// The fields `manager` owns, as its managedFields entry lists them.
fn owned_by(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    manager: &str,
) -> serde_json::Value {
    meta.managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some(manager))
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| f.0.clone())
        .unwrap_or(serde_json::Value::Null)
}

/// Reads `name`, changes it with `change` and writes it back, again when a controller's
/// write came in between (409), as a client does.
async fn read_change_replace<K>(api: &Api<K>, name: &str, change: impl Fn(&mut K)) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    for _ in 0..50 {
        let mut read = api.get(name).await.unwrap();
        change(&mut read);
        match api.replace(name, &editor(), &read).await {
            Ok(written) => return written,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("replace {name}: {e}"),
        }
    }
    panic!("replace {name}: 50 conflicts in a row")
}

#[tokio::test]
async fn a_read_pod_written_back_with_a_new_deadline_is_accepted() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    // Gated, so that no scheduler or kubelet writes to it while the test reads and writes.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {
            "schedulingGates": [{"name": "example.com/hold"}],
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let read = pods.get("p").await.unwrap();
    // What the client sends back has `resources: {}`; the stored pod has none.
    let sent = serde_json::to_value(&read).unwrap();
    assert_eq!(sent["spec"]["containers"][0]["resources"], json!({}));

    // Unchanged: a no-op that keeps the resourceVersion.
    let same = pods.replace("p", &editor(), &read).await.unwrap();
    assert_eq!(
        same.metadata.resource_version, read.metadata.resource_version,
        "writing back what was read changes nothing"
    );

    // The pod-spec rule sees no change but the deadline.
    let mut changed = read.clone();
    changed.spec.as_mut().unwrap().active_deadline_seconds = Some(600);
    let updated = pods.replace("p", &editor(), &changed).await.unwrap();
    assert_eq!(updated.spec.unwrap().active_deadline_seconds, Some(600));
    assert_ne!(
        updated.metadata.resource_version,
        read.metadata.resource_version
    );
    // managedFields: the editor owns the deadline it set, not the empty resources.
    let owned = owned_by(&updated.metadata, "editor");
    assert_eq!(
        owned,
        json!({"f:spec": {"f:activeDeadlineSeconds": {}}}),
        "{owned}"
    );

    // An immutable field really changed is still refused, naming only that change.
    let mut image = pods.get("p").await.unwrap();
    image.spec.as_mut().unwrap().containers[0].working_dir = Some("/tmp".into());
    let err = pods.replace("p", &editor(), &image).await.unwrap_err();
    let status = common::status_of(err);
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.contains("pod updates may not change fields"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn a_read_deployment_written_back_keeps_its_generation() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    // Written back as read: no spec change, so no new generation.
    let same = read_change_replace(&deployments, "d", |_| {}).await;
    assert_eq!(same.metadata.generation, Some(1));
    // A label on the object is not a spec change either.
    let updated = read_change_replace(&deployments, "d", |d| {
        d.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("tier".into(), "web".into());
    })
    .await;
    assert_eq!(updated.metadata.generation, Some(1));
    assert_eq!(
        owned_by(&updated.metadata, "editor"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}})
    );
    // A JSON patch may add under a value struct the stored object lacks, as kube's
    // encoding always has it (`resources: {}`).
    let patched = deployments
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([{
                    "op": "add",
                    "path": "/spec/template/spec/containers/0/resources/limits",
                    "value": {"cpu": "1"},
                }]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    let limits = patched.spec.template.spec.clone().unwrap().containers[0]
        .resources
        .clone()
        .and_then(|r| r.limits)
        .unwrap();
    assert_eq!(limits["cpu"].0, "1");
    assert_eq!(patched.metadata.generation, Some(2));
}

#[tokio::test]
async fn a_read_service_written_back_passes_the_immutable_field_checks() {
    let f = common::start().await;
    let services: Api<Service> = Api::namespaced(f.client.clone(), "default");
    let s: Service = serde_json::from_value(json!({
        "metadata": {"name": "s"},
        "spec": {"selector": {"app": "s"}, "ports": [{"port": 80}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &s).await.unwrap();
    let read = services.get("s").await.unwrap();
    let same = services.replace("s", &editor(), &read).await.unwrap();
    assert_eq!(
        same.metadata.resource_version,
        read.metadata.resource_version
    );
    let mut changed = read.clone();
    changed.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].name = Some("http".into());
    let updated = services.replace("s", &editor(), &changed).await.unwrap();
    let spec = updated.spec.unwrap();
    assert_eq!(spec.ports.unwrap()[0].name.as_deref(), Some("http"));
    assert_eq!(spec.cluster_ip, read.spec.unwrap().cluster_ip);
}
