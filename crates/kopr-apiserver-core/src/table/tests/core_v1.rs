//! Table tests of the core/v1 printers added for issue 17.

use super::*;

fn meta() -> Value {
    json!({"name": "x", "namespace": "ns", "creationTimestamp": "2024-04-29T09:00:00Z"})
}

fn with(extra: Value) -> Value {
    let mut o = json!({"metadata": meta()});
    if let (Some(o), Value::Object(e)) = (o.as_object_mut(), extra) {
        o.extend(e);
    }
    o
}

#[test]
fn persistent_volumes() {
    let pv = with(json!({
        "spec": {"capacity": {"storage": "1.5Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
                 "claimRef": {"namespace": "ns", "name": "data"}, "volumeMode": "Filesystem"},
        "status": {"phase": "Bound"}
    }));
    assert_eq!(
        cells("", "persistentvolumes", pv.clone()),
        vec![
            json!("x"),
            json!("1536Mi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("ns/data"),
            json!("fast"),
            json!("<unset>"),
            json!(""),
            json!("2d3h"),
            json!("Filesystem"),
        ]
    );
    // The beta annotation wins over the field; deletion shows Terminating.
    let mut pv = pv;
    pv["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "old"});
    pv["metadata"]["deletionTimestamp"] = json!("2024-05-01T11:00:00Z");
    pv["spec"]["volumeAttributesClassName"] = json!("gold");
    pv["status"]["reason"] = json!("Failed");
    let c = cells("", "persistentvolumes", pv);
    assert_eq!(c[4], json!("Terminating"));
    assert_eq!(c[6], json!("old"));
    assert_eq!(c[7], json!("gold"));
    assert_eq!(c[8], json!("Failed"));
    // No capacity: the zero quantity; no claim: empty.
    let c = cells("", "persistentvolumes", with(json!({"spec": {}})));
    assert_eq!(&c[1..3], &[json!("0"), json!("")]);
    assert_eq!(c[5], json!(""));
    assert_eq!(c[10], json!("<unset>"));
}

#[test]
fn persistent_volume_claims() {
    let pending = with(json!({
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": "standard"},
        "status": {"phase": "Pending"}
    }));
    assert_eq!(
        cells("", "persistentvolumeclaims", pending),
        vec![
            json!("x"),
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!("standard"),
            json!("<unset>"),
            json!("2d3h"),
            json!("<unset>"),
        ]
    );
    let bound = with(json!({
        "spec": {"volumeName": "pv-1", "volumeMode": "Block"},
        "status": {"phase": "Bound", "capacity": {"storage": "2048Mi"},
                   "accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]}
    }));
    let c = cells("", "persistentvolumeclaims", bound);
    assert_eq!(
        &c[1..6],
        &[
            json!("Bound"),
            json!("pv-1"),
            json!("2Gi"),
            json!("ROX,RWOP"),
            json!("")
        ]
    );
    assert_eq!(c[8], json!("Block"));
}

#[test]
fn endpoints() {
    let ep = |subsets: Value| cells("", "endpoints", with(json!({"subsets": subsets})));
    assert_eq!(ep(json!([]))[1], json!("<none>"));
    assert_eq!(
        ep(
            json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                   "ports": [{"name": "http", "port": 80}]}])
        ),
        vec![json!("x"), json!("10.0.0.1:80,[fd00::1]:80"), json!("2d3h")]
    );
    // Each port repeats every address; past three entries the rest is counted.
    assert_eq!(
        ep(
            json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                   "ports": [{"port": 80}, {"port": 443}]}])
        )[1],
        json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...")
    );
    // Headless services without ports list bare addresses.
    assert_eq!(
        ep(json!([{"addresses": [{"ip": "10.0.0.7"}]}]))[1],
        json!("10.0.0.7")
    );
    assert_eq!(
        ep(json!([{"notReadyAddresses": [{"ip": "10.0.0.8"}]}]))[1],
        json!("")
    );
    let cols = column_definitions("", "endpoints");
    assert_eq!(cols[1]["name"], json!("Endpoints"));
    assert!(
        cols[1]["description"]
            .as_str()
            .unwrap_or_default()
            .starts_with("The set of all endpoints is the union of all subsets.")
    );
}

#[test]
fn replication_controllers_and_pod_templates() {
    let rc = with(json!({
        "spec": {"selector": {"app": "web", "tier": "fe"},
                 "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]}}},
        "status": {"replicas": 2, "readyReplicas": 1}
    }));
    assert_eq!(
        cells("", "replicationcontrollers", rc),
        vec![
            json!("x"),
            json!(1),
            json!(2),
            json!(1),
            json!("2d3h"),
            json!("a,b"),
            json!("nginx,redis"),
            json!("app=web,tier=fe"),
        ]
    );
    let cols = column_definitions("", "replicationcontrollers");
    assert_eq!(cols[1]["type"], json!("integer"));
    assert_eq!(cols[5]["priority"], json!(1));

    let pt = with(json!({"template": {"metadata": {"labels": {"run": "x"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}));
    assert_eq!(
        cells("", "podtemplates", pt),
        vec![json!("x"), json!("c"), json!("busybox"), json!("run=x")]
    );
    assert_eq!(
        cells("", "podtemplates", with(json!({})))[3],
        json!("<none>")
    );
    let names: Vec<Value> = column_definitions("", "podtemplates")
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![
            json!("Name"),
            json!("Containers"),
            json!("Images"),
            json!("Pod Labels")
        ]
    );
}

#[test]
fn resource_quotas_and_component_statuses() {
    let rq = with(json!({"status": {
        "hard": {"pods": "10", "limits.memory": "2Gi", "requests.cpu": "1", "limits.cpu": "2000m"},
        "used": {"pods": "3", "requests.cpu": "500m", "limits.memory": "1024Mi"}
    }}));
    assert_eq!(
        cells("", "resourcequotas", rq),
        vec![
            json!("x"),
            json!("pods: 3/10, requests.cpu: 500m/1"),
            json!("limits.cpu: 0/2, limits.memory: 1Gi/2Gi"),
            json!("2d3h"),
        ]
    );
    assert_eq!(
        cells("", "resourcequotas", with(json!({})))[1..3],
        [json!(""), json!("")]
    );

    let cs = json!({"metadata": {"name": "etcd-0"},
                    "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
    assert_eq!(
        cells("", "componentstatuses", cs),
        vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
    );
    let cs = json!({"metadata": {"name": "scheduler"},
                    "conditions": [{"type": "Healthy", "status": "False", "error": "refused"}]});
    assert_eq!(
        cells("", "componentstatuses", cs)[1..],
        [json!("Unhealthy"), json!(""), json!("refused")]
    );
    assert_eq!(
        cells("", "componentstatuses", json!({"metadata": {"name": "y"}}))[1],
        json!("Unknown")
    );
}

#[test]
fn limit_ranges_and_bindings_use_the_default_printer() {
    for resource in ["limitranges", "bindings"] {
        let cols = column_definitions("", resource);
        assert_eq!(cols.len(), 2, "{resource}");
        assert_eq!(cols[1]["name"], json!("Created At"));
    }
    assert_eq!(
        cells("", "limitranges", with(json!({}))),
        vec![json!("x"), json!("2024-04-29T09:00:00Z")]
    );
}
