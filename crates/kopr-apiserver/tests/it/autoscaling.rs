//! HorizontalPodAutoscalers on the embedded cluster through kube-rs: the
//! autoscaler controller reads the target's scale, brings the replicas
//! within the autoscaler's bounds through it, and otherwise reports, as
//! kube-controller-manager does without a metrics server, that no replica
//! count can be computed; the autoscaling/v1 view carries the conditions in
//! kube's annotation.

use crate::common;

use std::future::ready;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler as HpaV1;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const NS: &str = "default";

const NO_RESOURCE_METRICS: &str = "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";

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

fn autoscaler(name: &str, target: &str, min: i32, max: i32) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min,
            "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    })
}

/// Waits until the object satisfies `check`; returns it as JSON.
async fn until<K>(api: &Api<K>, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    let cond = |o: Option<&K>| o.is_some_and(|o| check(&json_of(o)));
    let reached = tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api.clone(), name, cond),
    )
    .await;
    let last = api.get(name).await.map(|o| json_of(&o)).unwrap_or_default();
    assert!(
        reached.is_ok(),
        "{name}: {what}: not reached; last: {last:#}"
    );
    last
}

/// The condition of a type in an object's status.
fn condition(obj: &Value, ty: &str) -> Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == ty))
        .cloned()
        .unwrap_or(Value::Null)
}

fn has_condition(obj: &Value, ty: &str, status: &str, reason: &str) -> bool {
    let c = condition(obj, ty);
    c["status"] == status && c["reason"] == reason
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

#[tokio::test]
async fn autoscalers_report_that_no_metrics_are_served() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(f.client.clone(), NS);
    create(&deployments, deployment("web", 2)).await;
    create(&hpas, autoscaler("web", "web", 1, 5)).await;

    let hpa = until(&hpas, "web", "metrics reported missing", |h| {
        has_condition(h, "ScalingActive", "False", "FailedGetResourceMetric")
    })
    .await;
    let able = condition(&hpa, "AbleToScale");
    assert_eq!(able["status"], "True", "{hpa:#}");
    assert_eq!(able["reason"], "SucceededGetScale");
    assert_eq!(
        able["message"],
        "the HPA controller was able to get the target's current scale"
    );
    assert_eq!(
        condition(&hpa, "ScalingActive")["message"],
        format!("the HPA was unable to compute the replica count: {NO_RESOURCE_METRICS}")
    );
    assert!(condition(&hpa, "ScalingLimited").is_null(), "{hpa:#}");
    let status = &hpa["status"];
    assert_eq!(status["currentReplicas"], 2);
    assert_eq!(status["desiredReplicas"], 0);
    assert!(status.get("lastScaleTime").is_none(), "{hpa:#}");
    // One zero MetricStatus per failed metric, as kube records them.
    assert_eq!(status["currentMetrics"], json!([{"type": ""}]));
    // The Deployment is left alone.
    let d = deployments.get("web").await.unwrap();
    assert_eq!(d.spec.replicas, Some(2));

    let failed = event(&f.client, "web", "FailedGetResourceMetric").await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert_eq!(failed.message.as_deref(), Some(NO_RESOURCE_METRICS));
    assert_eq!(
        failed.source.and_then(|s| s.component).as_deref(),
        Some("horizontal-pod-autoscaler")
    );
    assert_eq!(
        failed.involved_object.kind.as_deref(),
        Some("HorizontalPodAutoscaler")
    );
    let compute = event(&f.client, "web", "FailedComputeMetricsReplicas").await;
    assert_eq!(
        compute.message,
        Some(format!(
            "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {NO_RESOURCE_METRICS}"
        ))
    );

    // The autoscaling/v1 view keeps the conditions in kube's annotation.
    let v1: Api<HpaV1> = Api::namespaced(f.client.clone(), NS);
    let old = json_of(&v1.get("web").await.unwrap());
    assert_eq!(old["spec"]["targetCPUUtilizationPercentage"], 50);
    assert!(old["status"].get("conditions").is_none(), "{old:#}");
    assert_eq!(old["status"]["currentReplicas"], 2);
    let annotations = &old["metadata"]["annotations"];
    let conditions: Value = serde_json::from_str(
        annotations["autoscaling.alpha.kubernetes.io/conditions"]
            .as_str()
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("no conditions annotation ({e}): {old:#}"));
    assert_eq!(conditions, hpa["status"]["conditions"]);
    assert_eq!(
        annotations["autoscaling.alpha.kubernetes.io/current-metrics"],
        r#"[{"type":""}]"#
    );
    // Written back through v1, the annotations become status and spec
    // again, not annotations.
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"tier": "web"});
    let replaced = v1
        .replace(
            "web",
            &PostParams::default(),
            &serde_json::from_value(relabelled).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        json_of(&replaced)["metadata"]["annotations"],
        old["metadata"]["annotations"]
    );
    let as_v2 = json_of(&hpas.get("web").await.unwrap());
    assert!(as_v2["metadata"].get("annotations").is_none(), "{as_v2:#}");
    assert_eq!(as_v2["status"]["conditions"], hpa["status"]["conditions"]);
}

#[tokio::test]
async fn autoscalers_keep_their_targets_within_bounds() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(f.client.clone(), NS);
    create(&deployments, deployment("api", 1)).await;
    create(&hpas, autoscaler("api", "api", 3, 4)).await;

    until(&deployments, "api", "scaled up to minReplicas", |d| {
        d["spec"]["replicas"] == 3
    })
    .await;
    let rescaled = event(&f.client, "api", "SuccessfulRescale").await;
    assert_eq!(rescaled.type_.as_deref(), Some("Normal"));
    assert_eq!(
        rescaled.message.as_deref(),
        Some("New size: 3; reason: Current number of replicas below Spec.MinReplicas")
    );
    // Once the target has the new size, the next sync is the metrics one.
    let hpa = until(&hpas, "api", "synced at the new size", |h| {
        h["status"]["currentReplicas"] == 3
            && has_condition(h, "ScalingActive", "False", "FailedGetResourceMetric")
    })
    .await;
    assert_eq!(hpa["status"]["desiredReplicas"], 3, "{hpa:#}");
    assert!(hpa["status"]["lastScaleTime"].is_string(), "{hpa:#}");
    assert!(has_condition(
        &hpa,
        "AbleToScale",
        "True",
        "SucceededGetScale"
    ));

    // Scaled by hand past maxReplicas, the target is brought back.
    let scale = json!({"spec": {"replicas": 7}});
    deployments
        .patch_scale("api", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .unwrap();
    until(&deployments, "api", "scaled down to maxReplicas", |d| {
        d["spec"]["replicas"] == 4
    })
    .await;
    let hpa = until(&hpas, "api", "rescaled to maxReplicas", |h| {
        h["status"]["desiredReplicas"] == 4
    })
    .await;
    assert_eq!(hpa["status"]["desiredReplicas"], 4);

    // A target scaled to zero disables autoscaling.
    let zero = json!({"spec": {"replicas": 0}});
    deployments
        .patch_scale("api", &PatchParams::default(), &Patch::Merge(&zero))
        .await
        .unwrap();
    let hpa = until(&hpas, "api", "scaling disabled", |h| {
        has_condition(h, "ScalingActive", "False", "ScalingDisabled")
    })
    .await;
    assert_eq!(
        condition(&hpa, "ScalingActive")["message"],
        "scaling is disabled since the replica count of the target is zero"
    );
    assert_eq!(hpa["status"]["desiredReplicas"], 0);
    assert!(hpa["status"].get("currentReplicas").is_none(), "{hpa:#}");
    let d = deployments.get("api").await.unwrap();
    assert_eq!(d.spec.replicas, Some(0));
}

#[tokio::test]
async fn a_missing_target_fails_to_get_its_scale_until_it_exists() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(f.client.clone(), NS);
    create(&hpas, autoscaler("late", "late", 2, 3)).await;

    let hpa = until(&hpas, "late", "no scale", |h| {
        has_condition(h, "AbleToScale", "False", "FailedGetScale")
    })
    .await;
    assert_eq!(
        condition(&hpa, "AbleToScale")["message"],
        r#"the HPA controller was unable to get the target's current scale: deployments.apps "late" not found"#
    );
    assert!(condition(&hpa, "ScalingActive").is_null(), "{hpa:#}");
    let failed = event(&f.client, "late", "FailedGetScale").await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert_eq!(
        failed.message.as_deref(),
        Some(r#"deployments.apps "late" not found"#)
    );

    // The target created later is found and scaled to minReplicas.
    create(&deployments, deployment("late", 1)).await;
    until(&deployments, "late", "scaled up to minReplicas", |d| {
        d["spec"]["replicas"] == 2
    })
    .await;
    let hpa = until(&hpas, "late", "able to scale", |h| {
        has_condition(h, "AbleToScale", "True", "SucceededGetScale")
            && h["status"]["currentReplicas"] == 2
    })
    .await;
    assert!(has_condition(
        &hpa,
        "ScalingActive",
        "False",
        "FailedGetResourceMetric"
    ));

    // A kind that does not exist in the group.
    let mut unknown = autoscaler("odd", "late", 1, 3);
    unknown["spec"]["scaleTargetRef"]["kind"] = json!("Deploymant");
    create(&hpas, unknown).await;
    let hpa = until(&hpas, "odd", "no mapping", |h| {
        has_condition(h, "AbleToScale", "False", "FailedGetScale")
    })
    .await;
    assert_eq!(
        condition(&hpa, "AbleToScale")["message"],
        r#"the HPA controller was unable to get the target's current scale: no matches for kind "Deploymant" in group "apps""#
    );
}

#[tokio::test]
async fn custom_resources_are_scaled_through_their_scale_subresource() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    create(
        &crds,
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema,
                    "subresources": {"status": {}, "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.size",
                        "labelSelectorPath": ".status.selector"}}}]},
        }),
    )
    .await;
    tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(
            crds,
            "widgets.example.com",
            kube::runtime::conditions::is_crd_established(),
        ),
    )
    .await
    .expect("established")
    .unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        f.client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}});
    widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(widget).unwrap(),
        )
        .await
        .unwrap();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(f.client.clone(), NS);
    let mut hpa = autoscaler("w", "w", 2, 3);
    hpa["spec"]["scaleTargetRef"] =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"});
    create(&hpas, hpa).await;

    until(&widgets, "w", "scaled up to minReplicas", |w| {
        w["spec"]["size"] == 2
    })
    .await;
    let rescaled = event(&f.client, "w", "SuccessfulRescale").await;
    assert_eq!(
        rescaled.message.as_deref(),
        Some("New size: 2; reason: Current number of replicas below Spec.MinReplicas")
    );
    // Its scale shows no selector until the widget's status has one.
    let hpa = until(&hpas, "w", "selector missing", |h| {
        has_condition(h, "ScalingActive", "False", "InvalidSelector")
    })
    .await;
    assert_eq!(
        condition(&hpa, "ScalingActive")["message"],
        "the HPA target's scale is missing a selector"
    );
    assert_eq!(hpa["status"]["currentReplicas"], 2);
    let required = event(&f.client, "w", "SelectorRequired").await;
    assert_eq!(required.message.as_deref(), Some("selector is required"));
    let compute = event(&f.client, "w", "FailedComputeMetricsReplicas").await;
    assert_eq!(compute.message.as_deref(), Some("selector is required"));
}

#[tokio::test]
async fn two_autoscalers_of_the_same_pods_are_ambiguous() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(f.client.clone(), NS);
    create(&deployments, deployment("shop", 2)).await;
    create(&hpas, autoscaler("first", "shop", 1, 5)).await;
    create(&hpas, autoscaler("second", "shop", 1, 5)).await;

    let message =
        "pods by selector app=shop are controlled by multiple HPAs: [default/first default/second]";
    for name in ["first", "second"] {
        let hpa = until(&hpas, name, "ambiguous", |h| {
            has_condition(h, "ScalingActive", "False", "AmbiguousSelector")
        })
        .await;
        assert_eq!(condition(&hpa, "ScalingActive")["message"], message);
    }
    let ambiguous = event(&f.client, "first", "AmbiguousSelector").await;
    assert_eq!(ambiguous.message.as_deref(), Some(message));

    // With one of them gone, the other one's pods are its own again.
    hpas.delete("second", &Default::default()).await.unwrap();
    until(&hpas, "first", "unambiguous", |h| {
        has_condition(h, "ScalingActive", "False", "FailedGetResourceMetric")
    })
    .await;
}
