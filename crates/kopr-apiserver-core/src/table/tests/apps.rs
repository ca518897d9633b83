//! Table tests of the workload and autoscaling printers added for issue 17.

use super::*;

fn obj(extra: Value) -> Value {
    let mut o = json!({"metadata": {"name": "x", "namespace": "ns",
                                    "creationTimestamp": "2024-05-01T11:00:00Z"}});
    if let (Some(o), Value::Object(e)) = (o.as_object_mut(), extra) {
        o.extend(e);
    }
    o
}

#[test]
fn daemon_sets() {
    let ds = obj(json!({
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                       "containers": [{"name": "agent", "image": "agent:1"}]}}},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                   "updatedNumberScheduled": 1, "numberAvailable": 2}
    }));
    assert_eq!(
        cells("apps", "daemonsets", ds),
        vec![
            json!("x"),
            json!(3),
            json!(3),
            json!(2),
            json!(1),
            json!(2),
            json!("kubernetes.io/os=linux"),
            json!("60m"),
            json!("agent"),
            json!("agent:1"),
            json!("app=agent"),
        ]
    );
    let c = cells("apps", "daemonsets", obj(json!({})));
    assert_eq!(c[1], json!(0));
    assert_eq!(c[6], json!("<none>"));
    let cols = column_definitions("apps", "daemonsets");
    assert_eq!(cols[3]["name"], json!("Ready"));
    assert_eq!(
        cols[3]["description"],
        json!(
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."
        )
    );
    assert_eq!(cols[10]["priority"], json!(1));
}

#[test]
fn cron_jobs() {
    let cj = obj(json!({
        "spec": {"schedule": "*/5 * * * *", "suspend": false,
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {"active": [{"name": "x-1"}], "lastScheduleTime": "2024-05-01T11:55:00Z"}
    }));
    assert_eq!(
        cells("batch", "cronjobs", cj),
        vec![
            json!("x"),
            json!("*/5 * * * *"),
            json!("<none>"),
            json!("False"),
            json!(1),
            json!("5m"),
            json!("60m"),
            json!("c"),
            json!("busybox"),
            json!("<none>"),
        ]
    );
    let cj = obj(json!({"spec": {"schedule": "@daily", "timeZone": "Etc/UTC", "suspend": true}}));
    let c = cells("batch", "cronjobs", cj);
    assert_eq!(
        &c[2..6],
        &[json!("Etc/UTC"), json!("True"), json!(0), json!("<none>")]
    );
    assert_eq!(
        cells("batch", "cronjobs", obj(json!({})))[3],
        json!("<unset>")
    );
    let cols = column_definitions("batch", "cronjobs");
    assert_eq!(cols[2]["name"], json!("Timezone"));
    assert_eq!(cols[3]["type"], json!("boolean"));
}

#[test]
fn pod_disruption_budgets_and_controller_revisions() {
    let pdb = obj(json!({"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 2}}));
    assert_eq!(
        cells("policy", "poddisruptionbudgets", pdb),
        vec![
            json!("x"),
            json!("50%"),
            json!("N/A"),
            json!(2),
            json!("60m")
        ]
    );
    let pdb = obj(json!({"spec": {"maxUnavailable": 1}}));
    assert_eq!(
        cells("policy", "poddisruptionbudgets", pdb)[1..4],
        [json!("N/A"), json!("1"), json!(0)]
    );

    let mut cr = obj(json!({"revision": 3, "data": {}}));
    cr["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": "1"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "2", "controller": true}
    ]);
    assert_eq!(
        cells("apps", "controllerrevisions", cr.clone()),
        vec![
            json!("x"),
            json!("statefulset.apps/web"),
            json!(3),
            json!("60m")
        ]
    );
    cr["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "3", "controller": true}]);
    assert_eq!(cells("apps", "controllerrevisions", cr)[1], json!("node/n"));
    assert_eq!(
        cells("apps", "controllerrevisions", obj(json!({})))[1],
        json!("<none>")
    );
}

fn hpa(spec_metrics: Value, current: Value) -> Value {
    obj(json!({
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 10, "metrics": spec_metrics},
        "status": {"currentReplicas": 2, "currentMetrics": current}
    }))
}

fn cpu(target: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": target}})
}

#[test]
fn horizontal_pod_autoscalers() {
    let cpu80 = cpu(json!({"type": "Utilization", "averageUtilization": 80}));
    assert_eq!(
        cells(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(json!([cpu80]), json!(null))
        ),
        vec![
            json!("x"),
            json!("Deployment/web"),
            json!("cpu: <unknown>/80%"),
            json!("1"),
            json!(10),
            json!(2),
            json!("60m"),
        ]
    );
    let current = json!([{"type": "Resource", "resource": {"name": "cpu",
                          "current": {"averageUtilization": 40, "averageValue": "120m"}}}]);
    assert_eq!(
        cells(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(json!([cpu80]), current)
        )[2],
        json!("cpu: 40%/80%")
    );
    // Average values, pods and external metrics, and "+ N more..." past two.
    let metrics = json!([
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}}
    ]);
    let current = json!([
        {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "512Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "1500m"}}}
    ]);
    assert_eq!(
        cells(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(metrics.clone(), current)
        )[2],
        json!("memory: 512Mi/1Gi, 1500m/1k + 1 more...")
    );
    let external_avg = json!([{"type": "External", "external": {"metric": {"name": "q"},
                               "target": {"type": "AverageValue", "averageValue": "2"}}},
                              {"type": "Object", "object": {"metric": {"name": "hits"},
                               "target": {"type": "Value", "value": "100"}}}]);
    let current = json!([{"type": "External", "external": {"current": {"averageValue": "1"}}}]);
    assert_eq!(
        cells(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(external_avg, current)
        )[2],
        json!("1/2 (avg), <unknown>/100")
    );
    let c = cells(
        "autoscaling",
        "horizontalpodautoscalers",
        hpa(
            json!([{"type": "Bogus"}, cpu(json!({"type": "Utilization"}))]),
            json!([]),
        ),
    );
    assert_eq!(c[2], json!("<unknown type>, cpu: <unknown>/<auto>"));
    let mut none = hpa(json!([]), json!([]));
    if let Some(spec) = none["spec"].as_object_mut() {
        spec.remove("minReplicas");
    }
    let c = cells("autoscaling", "horizontalpodautoscalers", none);
    assert_eq!(&c[2..4], &[json!("<none>"), json!("<unset>")]);

    // An autoscaling/v1-shaped object prints as kube converts it.
    let v1 = obj(json!({
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2,
                 "maxReplicas": 5, "targetCPUUtilizationPercentage": 70},
        "status": {"currentReplicas": 3, "currentCPUUtilizationPercentage": 55}
    }));
    assert_eq!(
        cells("autoscaling", "horizontalpodautoscalers", v1)[2..6],
        [json!("cpu: 55%/70%"), json!("2"), json!(5), json!(3)]
    );
    let names: Vec<Value> = column_definitions("autoscaling", "horizontalpodautoscalers")
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![
            json!("Name"),
            json!("Reference"),
            json!("Targets"),
            json!("MinPods"),
            json!("MaxPods"),
            json!("Replicas"),
            json!("Age")
        ]
    );
}
