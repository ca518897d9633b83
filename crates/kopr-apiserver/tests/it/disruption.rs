//! PodDisruptionBudgets and evictions on the embedded cluster through
//! kube-rs: the disruption controller computes budgets' status from the
//! selected pods and their controllers' scale, and `pods/eviction` deletes
//! a pod only when its budget allows, answering kube's 429 otherwise.

use crate::common;

use std::future::ready;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const NS: &str = "default";

fn json_of<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

async fn create<K>(api: &Api<K>, v: Value) -> K
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
        .await
        .unwrap()
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

fn budget(name: &str, app: &str, rule: Value) -> Value {
    let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
    if let (Some(s), Value::Object(r)) = (spec.as_object_mut(), rule) {
        s.extend(r);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

/// Waits until the object satisfies `check`; returns it as JSON.
async fn until<K>(api: &Api<K>, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    let cond = |o: Option<&K>| o.is_some_and(|o| check(&json_of(o)));
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api.clone(), name, cond),
    )
    .await
    .unwrap_or_else(|_| panic!("{name}: {what}: not reached"))
    .unwrap();
    json_of(&api.get(name).await.unwrap())
}

/// Waits until the budget's status has these counts for its generation.
async fn budget_status(
    pdbs: &Api<PodDisruptionBudget>,
    name: &str,
    [expected, desired, current, allowed]: [i64; 4],
) -> Value {
    let what = format!("expected {expected} desired {desired} current {current} allowed {allowed}");
    until(pdbs, name, &what, |p| {
        let s = &p["status"];
        s["observedGeneration"] == p["metadata"]["generation"]
            && s["expectedPods"] == expected
            && s["desiredHealthy"] == desired
            && s["currentHealthy"] == current
            && s["disruptionsAllowed"] == allowed
    })
    .await["status"]
        .clone()
}

/// Waits until `n` pods of the app are ready; returns their names.
async fn ready_pods(client: &kube::Client, app: &str, n: usize) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let lp = watcher::Config::default().labels(&format!("app={app}"));
    let ready = |p: &Pod| {
        p.metadata.deletion_timestamp.is_none()
            && p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let mut stream = watcher(pods.clone(), lp).default_backoff().boxed();
    let wait = async {
        while stream.try_next().await.unwrap().is_some() {
            let list = pods
                .list(&ListParams::default().labels(&format!("app={app}")))
                .await
                .unwrap();
            let names: Vec<String> = list
                .items
                .iter()
                .filter(|p| ready(p))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            if names.len() == n && list.items.len() == n {
                return names;
            }
        }
        panic!("the pod watch ended");
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .unwrap_or_else(|_| panic!("{n} ready pods of {app}: not reached"))
}

/// Waits for an Event about `object` with `reason`.
async fn event(client: &kube::Client, object: &str, reason: &str) -> Event {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let mut stream = watcher(events, watcher::Config::default())
        .applied_objects()
        .try_filter(|e| {
            ready(
                e.involved_object.name.as_deref() == Some(object)
                    && e.reason.as_deref() == Some(reason),
            )
        })
        .boxed();
    tokio::time::timeout(Duration::from_secs(30), stream.try_next())
        .await
        .unwrap_or_else(|_| panic!("no {reason} event about {object}"))
        .unwrap()
        .unwrap_or_else(|| panic!("the event watch of {object} ended"))
}

/// A client that does not retry 429s (kube-rs's default client retries
/// them with a growing delay, for minutes).
async fn client_without_retries(server: &kopr_apiserver::ApiServer) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

fn condition(status: &Value) -> &Value {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .unwrap_or(&Value::Null)
}

async fn evict_raw(
    client: &kube::Client,
    pod: &str,
    query: &str,
) -> (u16, http::HeaderMap, String) {
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}});
    common::raw(
        client,
        "POST",
        &format!("/api/v1/namespaces/{NS}/pods/{pod}/eviction{query}"),
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn evictions_respect_the_budget() {
    let f = common::start().await;
    let client = &client_without_retries(&f.server).await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);

    let (code, _, discovery) = common::raw(client, "GET", "/api/v1", None, Vec::new()).await;
    assert_eq!(code, 200);
    let discovery: Value = serde_json::from_str(&discovery).unwrap();
    let eviction = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .expect("pods/eviction in discovery");
    assert_eq!(
        *eviction,
        json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
            "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    );

    create(&deps, deployment("web", 2)).await;
    let names = ready_pods(client, "web", 2).await;
    create(&pdbs, budget("web", "web", json!({"minAvailable": 2}))).await;
    let status = budget_status(&pdbs, "web", [2, 2, 2, 0]).await;
    let c = condition(&status);
    assert_eq!(
        (&c["status"], &c["reason"]),
        (&json!("False"), &json!("InsufficientPods"))
    );

    // Refused: the exact 429 kube-apiserver answers.
    let (code, headers, body) = evict_raw(client, &names[0], "").await;
    assert_eq!(code, 429);
    assert!(headers.get("retry-after").is_none());
    assert_eq!(
        body.trim_end(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 2 healthy pods and has 2 currently"}]},"code":429}"#
    );
    let refused = pods
        .evict(&names[0], &EvictParams::default())
        .await
        .map_err(common::status_of)
        .unwrap_err();
    assert_eq!(refused.code, 429);
    assert_eq!(refused.reason, "TooManyRequests");

    // Wrong names are refused before any budget is looked at.
    let body = json!({"metadata": {"name": "other"}})
        .to_string()
        .into_bytes();
    let path = format!("/api/v1/namespaces/{NS}/pods/{}/eviction", names[0]);
    let (code, _, text) = common::raw(client, "POST", &path, Some("application/json"), body).await;
    assert_eq!(code, 400);
    assert!(
        text.contains("name in URL does not match name in Eviction object"),
        "{text}"
    );

    // Allowed once the budget is relaxed; a dry run changes nothing.
    pdbs.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"minAvailable": 1}})),
    )
    .await
    .unwrap();
    let status = budget_status(&pdbs, "web", [2, 1, 2, 1]).await;
    assert_eq!(condition(&status)["reason"], "SufficientPods");
    let (code, _, body) = evict_raw(client, &names[0], "?dryRun=All").await;
    assert_eq!(
        (code, body.trim_end()),
        (
            201,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#
        )
    );
    let after_dry_run = json_of(&pdbs.get("web").await.unwrap());
    assert_eq!(after_dry_run["status"]["disruptionsAllowed"], 1);
    assert!(after_dry_run["status"].get("disruptedPods").is_none());

    let victim = pods.get(&names[0]).await.unwrap();
    let uid = victim.metadata.uid.clone().unwrap();
    let ok = pods
        .evict(&names[0], &EvictParams::default())
        .await
        .unwrap();
    assert_eq!(ok.code, 201);
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(pods.clone(), &names[0], conditions::is_deleted(&uid)),
    )
    .await
    .expect("the evicted pod is deleted")
    .unwrap();

    // The Deployment replaces the pod; the budget recovers.
    ready_pods(client, "web", 2).await;
    budget_status(&pdbs, "web", [2, 1, 2, 1]).await;

    // A second budget over the same pods: evictions are not supported.
    create(
        &pdbs,
        budget("web-too", "web", json!({"maxUnavailable": 1})),
    )
    .await;
    let names = ready_pods(client, "web", 2).await;
    let (code, _, body) = evict_raw(client, &names[0], "").await;
    assert_eq!(code, 500);
    assert_eq!(
        body.trim_end(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500}"#
    );
}

#[tokio::test]
async fn pending_pods_are_evicted_whatever_the_budget() {
    let f = common::start().await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(f.client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), NS);
    create(&pdbs, budget("stuck", "stuck", json!({"minAvailable": 1}))).await;
    let pod = create(
        &pods,
        json!({
            "metadata": {"name": "stuck", "labels": {"app": "stuck"}},
            "spec": {
                "nodeSelector": {"no-such": "node"},
                "containers": [{"name": "c", "image": "nginx"}],
            },
        }),
    )
    .await;
    let status = budget_status(&pdbs, "stuck", [1, 1, 0, 0]).await;
    assert_eq!(condition(&status)["status"], "False");
    let ok = pods.evict("stuck", &EvictParams::default()).await.unwrap();
    assert_eq!(
        ok.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    let uid = pod.metadata.uid.unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(pods.clone(), "stuck", conditions::is_deleted(&uid)),
    )
    .await
    .expect("the pending pod is deleted")
    .unwrap();
}

#[tokio::test]
async fn budget_status_follows_the_controllers_scale() {
    let f = common::start().await;
    let client = &f.client;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);

    // A Deployment's pods: percentages of the Deployment's scale.
    create(&deps, deployment("api", 4)).await;
    create(
        &pdbs,
        budget("api", "api", json!({"maxUnavailable": "25%"})),
    )
    .await;
    ready_pods(client, "api", 4).await;
    let status = budget_status(&pdbs, "api", [4, 3, 4, 1]).await;
    let c = condition(&status);
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "SufficientPods");
    assert_eq!(c["message"], "");
    assert_eq!(c["observedGeneration"], 1);

    deps.patch(
        "api",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 6}})),
    )
    .await
    .unwrap();
    ready_pods(client, "api", 6).await;
    budget_status(&pdbs, "api", [6, 4, 6, 2]).await;

    // A bare pod has no scale: the budget reports it and allows nothing.
    create(
        &pods,
        json!({
            "metadata": {"name": "solo", "labels": {"app": "solo"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }),
    )
    .await;
    create(&pdbs, budget("solo", "solo", json!({"maxUnavailable": 1}))).await;
    budget_status(&pdbs, "solo", [0, 0, 1, 0]).await;
    let unmanaged = event(client, "solo", "UnmanagedPods").await;
    assert_eq!(unmanaged.type_.as_deref(), Some("Warning"));
    assert_eq!(
        unmanaged.message.as_deref(),
        Some(
            "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: solo,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."
        )
    );

    // A Job has no scale subresource: the sync fails safe.
    create(
        &jobs,
        json!({
            "metadata": {"name": "batch"},
            "spec": {"template": {
                "metadata": {"labels": {"app": "batch"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            }},
        }),
    )
    .await;
    create(
        &pdbs,
        budget("batch", "batch", json!({"minAvailable": "50%"})),
    )
    .await;
    let failed = until(&pdbs, "batch", "SyncFailed", |p| {
        condition(&p["status"])["reason"] == "SyncFailed"
    })
    .await;
    let c = condition(&failed["status"]);
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        "jobs.batch does not implement the scale subresource"
    );
    assert_eq!(failed["status"]["disruptionsAllowed"], 0);
    let calc = event(client, "batch", "CalculateExpectedPodCountFailed").await;
    assert_eq!(
        calc.message.as_deref(),
        Some(
            "Failed to calculate the number of expected pods: jobs.batch does not implement the scale subresource"
        )
    );
}
