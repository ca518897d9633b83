//! ResourceQuotas and LimitRanges on the embedded cluster through kube-rs:
//! the quota controller computes `status.used`, quota admission charges and
//! refuses writes with kube's 403 messages, deletions give usage back, and
//! LimitRanger defaults and bounds pods' and claims' resources.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event, LimitRange, PersistentVolumeClaim, Pod, ResourceQuota,
};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

const NS: &str = "default";

fn json_of<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

async fn create<K>(api: &Api<K>, v: Value) -> Result<K, kube::core::Status>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
        .await
        .map_err(common::status_of)
}

fn pod(name: &str, cpu: Option<&str>) -> Value {
    let resources = match cpu {
        Some(c) => {
            json!({"requests": {"cpu": c, "memory": "64Mi"}, "limits": {"cpu": c, "memory": "64Mi"}})
        }
        None => json!({}),
    };
    json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]},
    })
}

/// Waits until the quota's `status.used` is `used`.
async fn used_becomes(quotas: &Api<ResourceQuota>, name: &str, used: Value) {
    let want = used.clone();
    let cond =
        move |q: Option<&ResourceQuota>| q.is_some_and(|q| json_of(q)["status"]["used"] == want);
    let reached = tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(quotas.clone(), name, cond),
    )
    .await;
    if reached.is_err() {
        let now = json_of(&quotas.get(name).await.unwrap());
        panic!(
            "quota {name}: used never became {used}; status is {}",
            now["status"]
        );
    }
}

#[tokio::test]
async fn quotas_count_charge_refuse_and_replenish() {
    let f = common::start().await;
    let client = &f.client;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);

    // One ConfigMap is there before the quota: the first count includes it.
    create(&cms, json!({"metadata": {"name": "before"}}))
        .await
        .unwrap();
    let q = create(
        &quotas,
        json!({
            "metadata": {"name": "compute"},
            "spec": {"hard": {"pods": "2", "requests.cpu": "1", "limits.memory": "1Gi", "count/configmaps": "3"}},
        }),
    )
    .await
    .unwrap();
    // kube-root-ca.crt is a ConfigMap of the namespace too.
    let cm_before = cms.list(&ListParams::default()).await.unwrap().items.len();
    assert_eq!(
        json_of(&q)["status"],
        json!({}),
        "a new quota's status is the controller's"
    );
    used_becomes(
        &quotas,
        "compute",
        json!({"count/configmaps": cm_before.to_string(), "limits.memory": "0", "pods": "0", "requests.cpu": "0"}),
    )
    .await;
    let hard = json_of(&quotas.get("compute").await.unwrap())["status"]["hard"].clone();
    assert_eq!(
        hard,
        json!({"count/configmaps": "3", "limits.memory": "1Gi", "pods": "2", "requests.cpu": "1"})
    );

    // Admission charges a pod as it admits it.
    create(&pods, pod("a", Some("400m"))).await.unwrap();
    let used = json_of(&quotas.get("compute").await.unwrap())["status"]["used"].clone();
    assert_eq!(used["pods"], "1");
    assert_eq!(used["requests.cpu"], "400m");
    assert_eq!(used["limits.memory"], "64Mi");

    // A pod without the limited requests and limits.
    let e = create(&pods, pod("bare", None)).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(e.reason, "Forbidden");
    assert_eq!(
        e.message,
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"
    );
    // Too much cpu.
    let e = create(&pods, pod("big", Some("700m"))).await.unwrap_err();
    assert_eq!(
        e.message,
        "pods \"big\" is forbidden: exceeded quota: compute, requested: requests.cpu=700m, used: requests.cpu=400m, limited: requests.cpu=1"
    );
    // A dry run is checked but not charged.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    pods.create(
        &dry,
        &serde_json::from_value(pod("dry", Some("100m"))).unwrap(),
    )
    .await
    .unwrap();
    create(&pods, pod("b", Some("600m"))).await.unwrap();
    let e = create(&pods, pod("c", Some("0"))).await.unwrap_err();
    assert_eq!(
        e.message,
        "pods \"c\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
    );

    // Object counts.
    for i in cm_before..3 {
        create(&cms, json!({"metadata": {"name": format!("cm-{i}")}}))
            .await
            .unwrap();
    }
    let e = create(&cms, json!({"metadata": {"generateName": "extra-"}}))
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "configmaps \"extra-\" is forbidden: exceeded quota: compute, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3"
    );

    // Deleting gives usage back, and the pod then fits.
    pods.delete("a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    used_becomes(
        &quotas,
        "compute",
        json!({"count/configmaps": "3", "limits.memory": "64Mi", "pods": "1", "requests.cpu": "600m"}),
    )
    .await;
    create(&pods, pod("c", Some("100m"))).await.unwrap();

    // Raising the limits recounts at once.
    let mut q = quotas.get("compute").await.unwrap();
    let hard = q.spec.as_mut().unwrap().hard.as_mut().unwrap();
    hard.insert(
        "pods".into(),
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("5".into()),
    );
    quotas
        .replace("compute", &PostParams::default(), &q)
        .await
        .unwrap();
    let cond =
        |q: Option<&ResourceQuota>| q.is_some_and(|q| json_of(q)["status"]["hard"]["pods"] == "5");
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(quotas.clone(), "compute", cond),
    )
    .await
    .unwrap()
    .unwrap();
}

#[tokio::test]
async fn a_replica_set_over_quota_reports_kubes_event() {
    let f = common::start().await;
    let client = &f.client;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    create(
        &quotas,
        json!({"metadata": {"name": "two"}, "spec": {"hard": {"pods": "2"}}}),
    )
    .await
    .unwrap();
    used_becomes(&quotas, "two", json!({"pods": "0"})).await;
    create(
        &rss,
        json!({
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            },
        }),
    )
    .await
    .unwrap();
    used_becomes(&quotas, "two", json!({"pods": "2"})).await;
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let list = events.list(&ListParams::default()).await.unwrap();
            if let Some(e) = list
                .items
                .iter()
                .find(|e| e.reason.as_deref() == Some("FailedCreate"))
            {
                return e.message.clone().unwrap_or_default();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("a FailedCreate event");
    assert!(
        found.starts_with("Error creating: pods \"web-")
            && found.ends_with("is forbidden: exceeded quota: two, requested: pods=1, used: pods=2, limited: pods=2"),
        "{found}"
    );
}

#[tokio::test]
async fn limit_ranges_default_and_bound_resources() {
    let f = common::start().await;
    let client = &f.client;
    let ranges: Api<LimitRange> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    create(
        &ranges,
        json!({
            "metadata": {"name": "limits"},
            "spec": {"limits": [
                {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
                 "defaultRequest": {"cpu": "250m"}, "max": {"cpu": "1"}},
                {"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}},
            ]},
        }),
    )
    .await
    .unwrap();
    let p = json_of(&create(&pods, pod("plain", None)).await.unwrap());
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    );
    let e = create(&pods, pod("huge", Some("2"))).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods \"huge\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    let claim = |size: &str| {
        json!({
            "metadata": {"name": format!("data-{}", size.to_lowercase())},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
        })
    };
    create(&claims, claim("1Gi")).await.unwrap();
    let e = create(&claims, claim("10Gi")).await.unwrap_err();
    assert_eq!(
        e.message,
        "persistentvolumeclaims \"data-10gi\" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"
    );
}
