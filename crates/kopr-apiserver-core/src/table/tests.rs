//! Table printing tests: realistic objects in various states.

use super::*;
use serde_json::json;

/// The printer of the built-in kind `group`/`resource`.
fn kind_of(group: &str, resource: &str) -> Printer {
    crate::kinds::all()
        .into_iter()
        .find(|k| k.group == group && k.plural == resource)
        .map_or(Printer::Default, |k| k.table_printer())
}

fn column_definitions(group: &str, resource: &str) -> Vec<Value> {
    super::column_definitions(kind_of(group, resource))
}

fn row_cells(group: &str, resource: &str, obj: &Value, now: Timestamp) -> Vec<Value> {
    super::row_cells(kind_of(group, resource), obj, now)
}

fn table_row(
    group: &str,
    resource: &str,
    obj: &Value,
    include_object: IncludeObject,
    now: Timestamp,
) -> Value {
    super::table_row(kind_of(group, resource), obj, include_object, now)
}

fn table(
    group: &str,
    resource: &str,
    objects: &[Value],
    include_object: IncludeObject,
    list_meta: Value,
    now: Timestamp,
) -> Value {
    super::table(
        kind_of(group, resource),
        objects,
        include_object,
        list_meta,
        now,
    )
}

fn table_with_headers(
    group: &str,
    resource: &str,
    objects: &[Value],
    include_object: IncludeObject,
    headers: bool,
    list_meta: Value,
    now: Timestamp,
) -> Value {
    super::table_with_headers(
        kind_of(group, resource),
        objects,
        include_object,
        headers,
        list_meta,
        now,
    )
}

fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap_or_default()
}

fn cells(group: &str, resource: &str, obj: Value) -> Vec<Value> {
    row_cells(group, resource, &obj, now())
}

fn pod(status: Value) -> Value {
    json!({
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2024-05-01T11:56:40Z"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "busybox"}], "nodeName": "node-1"},
        "status": status
    })
}

fn running(name: &str, ready: bool, restarts: i64) -> Value {
    json!({"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": "2024-05-01T11:57:00Z"}}})
}

#[test]
fn pod_running() {
    let c = cells(
        "",
        "pods",
        pod(json!({
            "phase": "Running",
            "podIP": "10.1.0.5",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [running("app", true, 0), running("side", true, 0)]
        })),
    );
    assert_eq!(
        c,
        vec![
            json!("web"),
            json!("2/2"),
            json!("Running"),
            json!("0"),
            json!("3m20s"),
            json!("10.1.0.5"),
            json!("node-1"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn pod_crash_loop_with_restarts_ago() {
    let c = cells(
        "",
        "pods",
        pod(json!({
            "phase": "Running",
            "containerStatuses": [
                running("side", true, 0),
                {"name": "app", "ready": false, "restartCount": 5,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T11:55:00Z"}}}
            ]
        })),
    );
    assert_eq!(c[1], json!("1/2"));
    assert_eq!(c[2], json!("CrashLoopBackOff"));
    assert_eq!(c[3], json!("5 (5m ago)"));

    let c = cells(
        "",
        "pods",
        pod(json!({
            "phase": "Running",
            "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 2,
                 "state": {"terminated": {"exitCode": 1, "reason": "Error"}}},
                {"name": "side", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]
        })),
    );
    // containers are walked last to first, so the first one's state wins
    assert_eq!(c[2], json!("Error"));
    // no lastState.terminated: no "ago" suffix
    assert_eq!(c[3], json!("2"));
}

#[test]
fn pod_pending_and_container_creating() {
    let c = cells("", "pods", pod(json!({"phase": "Pending"})));
    assert_eq!(&c[1..4], &[json!("0/2"), json!("Pending"), json!("0")]);
    assert_eq!(
        &c[5..],
        &[
            json!("<none>"),
            json!("node-1"),
            json!("<none>"),
            json!("<none>")
        ]
    );
    let c = cells(
        "",
        "pods",
        pod(json!({"phase": "Pending", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
        ]})),
    );
    assert_eq!(c[2], json!("ContainerCreating"));
    let gated = cells(
        "",
        "pods",
        pod(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
        ]})),
    );
    assert_eq!(gated[2], json!("SchedulingGated"));
}

#[test]
fn pod_completed_and_failed() {
    let done = pod(json!({
        "phase": "Succeeded",
        "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ]
    }));
    let c = cells("", "pods", done.clone());
    assert_eq!(&c[1..3], &[json!("0/2"), json!("Completed")]);
    let row = table_row("", "pods", &done, IncludeObject::None, now());
    assert_eq!(
        row["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}])
    );
    assert_eq!(row["object"], Value::Null);

    let c = cells(
        "",
        "pods",
        pod(json!({"phase": "Failed", "containerStatuses": [
            {"name": "app", "state": {"terminated": {"exitCode": 137, "signal": 9}}}
        ]})),
    );
    assert_eq!(c[2], json!("Signal:9"));
    let c = cells(
        "",
        "pods",
        pod(json!({"phase": "Failed", "containerStatuses": [
            {"name": "app", "state": {"terminated": {"exitCode": 3}}}
        ]})),
    );
    assert_eq!(c[2], json!("ExitCode:3"));
    let c = cells(
        "",
        "pods",
        pod(json!({"phase": "Failed", "reason": "Evicted"})),
    );
    assert_eq!(c[2], json!("Evicted"));
}

#[test]
fn pod_completed_with_running_sibling() {
    let st = |ready_cond: &str| {
        pod(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": ready_cond}],
            "containerStatuses": [
                running("side", true, 0),
                {"name": "app", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ]
        }))
    };
    assert_eq!(cells("", "pods", st("True"))[2], json!("Running"));
    assert_eq!(cells("", "pods", st("False"))[2], json!("NotReady"));
}

#[test]
fn pod_init_containers() {
    let mut p = pod(json!({
        "phase": "Pending",
        "initContainerStatuses": [
            {"name": "init-a", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "init-b", "restartCount": 0, "state": {"running": {}}}
        ]
    }));
    p["spec"]["initContainers"] =
        json!([{"name": "init-a"}, {"name": "init-b"}, {"name": "init-c"}]);
    assert_eq!(cells("", "pods", p.clone())[2], json!("Init:1/3"));

    p["status"]["initContainerStatuses"][1]["state"] =
        json!({"waiting": {"reason": "ImagePullBackOff"}});
    assert_eq!(
        cells("", "pods", p.clone())[2],
        json!("Init:ImagePullBackOff")
    );
    p["status"]["initContainerStatuses"][1]["state"] =
        json!({"waiting": {"reason": "PodInitializing"}});
    assert_eq!(cells("", "pods", p.clone())[2], json!("Init:1/3"));
    p["status"]["initContainerStatuses"][1]["state"] = json!({"terminated": {"exitCode": 2}});
    assert_eq!(cells("", "pods", p.clone())[2], json!("Init:ExitCode:2"));
    p["status"]["initContainerStatuses"][1]["state"] =
        json!({"terminated": {"exitCode": 1, "reason": "Error"}});
    p["status"]["initContainerStatuses"][1]["restartCount"] = json!(3);
    let c = cells("", "pods", p.clone());
    assert_eq!(c[2], json!("Init:Error"));
    assert_eq!(c[3], json!("3"));
}

#[test]
fn pod_sidecar_init_container() {
    let mut p = pod(json!({
        "phase": "Running",
        "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
        "initContainerStatuses": [
            {"name": "proxy", "ready": true, "started": true, "restartCount": 1,
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T11:00:00Z"}},
             "state": {"running": {}}}
        ],
        "containerStatuses": [running("app", true, 0), running("side", true, 0)]
    }));
    p["spec"]["initContainers"] = json!([{"name": "proxy", "restartPolicy": "Always"}]);
    let c = cells("", "pods", p);
    assert_eq!(
        &c[1..4],
        &[json!("3/3"), json!("Running"), json!("1 (60m ago)")]
    );
}

#[test]
fn pod_terminating_and_wide_fields() {
    let mut p = pod(json!({
        "phase": "Running",
        "podIPs": [{"ip": "10.1.0.9"}, {"ip": "fd00::9"}],
        "nominatedNodeName": "node-2",
        "conditions": [{"type": "example.com/gate", "status": "True"}],
        "containerStatuses": [running("app", true, 0), running("side", true, 0)]
    }));
    p["metadata"]["deletionTimestamp"] = json!("2024-05-01T11:59:00Z");
    p["spec"]["readinessGates"] =
        json!([{"conditionType": "example.com/gate"}, {"conditionType": "other"}]);
    let c = cells("", "pods", p.clone());
    assert_eq!(c[2], json!("Terminating"));
    assert_eq!(
        &c[5..],
        &[
            json!("10.1.0.9"),
            json!("node-1"),
            json!("node-2"),
            json!("1/2")
        ]
    );

    p["status"]["reason"] = json!("NodeLost");
    assert_eq!(cells("", "pods", p.clone())[2], json!("Unknown"));
    p["status"]["reason"] = Value::Null;
    p["status"]["phase"] = json!("Succeeded");
    p["status"]["containerStatuses"] = json!([]);
    assert_eq!(cells("", "pods", p)[2], json!("Succeeded"));
}

#[test]
fn pod_columns() {
    let cols = column_definitions("", "pods");
    let names: Vec<&str> = cols.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(cols[0]["format"], json!("name"));
    assert_eq!(cols[3]["type"], json!("string"));
    assert_eq!(cols[4]["format"], json!(""));
    assert_eq!(cols[4]["priority"], json!(0));
    assert_eq!(cols[5]["priority"], json!(1));
    assert!(
        cols[4]["description"]
            .as_str()
            .unwrap_or_default()
            .starts_with("CreationTimestamp is a timestamp")
    );
}

#[test]
fn simple_kinds() {
    let meta = json!({"name": "x", "namespace": "ns", "creationTimestamp": "2024-04-29T09:00:00Z"});
    let with = |extra: Value| {
        let mut o = json!({"metadata": meta.clone()});
        if let (Some(o), Value::Object(e)) = (o.as_object_mut(), extra) {
            o.extend(e);
        }
        o
    };
    assert_eq!(
        cells(
            "",
            "namespaces",
            with(json!({"status": {"phase": "Active"}}))
        ),
        vec![json!("x"), json!("Active"), json!("2d3h")]
    );
    assert_eq!(
        cells(
            "",
            "configmaps",
            with(json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}}))
        ),
        vec![json!("x"), json!(3), json!("2d3h")]
    );
    assert_eq!(
        cells(
            "",
            "secrets",
            with(json!({"type": "Opaque", "data": {"a": "MQ=="}}))
        ),
        vec![json!("x"), json!("Opaque"), json!(1), json!("2d3h")]
    );
    assert_eq!(
        cells("", "serviceaccounts", with(json!({}))),
        vec![json!("x"), json!(0), json!("2d3h")]
    );
    assert_eq!(
        cells(
            "coordination.k8s.io",
            "leases",
            with(json!({"spec": {"holderIdentity": "node-1"}}))
        ),
        vec![json!("x"), json!("node-1"), json!("2d3h")]
    );
    assert_eq!(
        cells(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            with(json!({"webhooks": [{}, {}]}))
        ),
        vec![json!("x"), json!(2), json!("2d3h")]
    );
    assert_eq!(
        cells(
            "rbac.authorization.k8s.io",
            "rolebindings",
            with(json!({
                "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [
                    {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                    {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}
                ]
            }))
        ),
        vec![
            json!("x"),
            json!("ClusterRole/view"),
            json!("2d3h"),
            json!("alice, bob"),
            json!("devs"),
            json!("ns/sa")
        ]
    );
    // unknown creation time
    assert_eq!(
        cells("", "namespaces", json!({"metadata": {"name": "y"}}))[2],
        json!("<unknown>")
    );
}

#[test]
fn services() {
    let svc = |spec: Value, status: Value| json!({"metadata": {"name": "s", "creationTimestamp": "2024-05-01T11:00:00Z"}, "spec": spec, "status": status});
    assert_eq!(
        cells(
            "",
            "services",
            svc(
                json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                       "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                       "selector": {"k8s-app": "kube-dns"}}),
                json!({})
            )
        ),
        vec![
            json!("s"),
            json!("ClusterIP"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("53/UDP,53/TCP"),
            json!("60m"),
            json!("k8s-app=kube-dns"),
        ]
    );
    let np = cells(
        "",
        "services",
        svc(
            json!({"type": "NodePort", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
            json!({}),
        ),
    );
    assert_eq!(&np[3..5], &[json!("<none>"), json!("80:30080/TCP")]);
    assert_eq!(np[6], json!("<none>"));
    let lb = cells(
        "",
        "services",
        svc(
            json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"], "ports": []}),
            json!({}),
        ),
    );
    assert_eq!(&lb[3..5], &[json!("<pending>"), json!("<none>")]);
    let lb = cells(
        "",
        "services",
        svc(
            json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"], "externalIPs": ["1.1.1.1"]}),
            json!({"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}, {"hostname": "a-very-long-hostname.example.com"}]}}),
        ),
    );
    assert_eq!(
        lb[3],
        json!("9.9.9.9,a-very-long-hostname.example.com,1.1.1.1")
    );
    let ext = cells(
        "",
        "services",
        svc(
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
            json!({}),
        ),
    );
    assert_eq!(
        &ext[1..4],
        &[
            json!("ExternalName"),
            json!("<none>"),
            json!("db.example.com")
        ]
    );
}

#[test]
fn nodes() {
    let n = json!({
        "metadata": {"name": "n1", "creationTimestamp": "2024-04-01T12:00:00Z",
                     "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "", "kubernetes.io/role": "master"}},
        "spec": {"unschedulable": true},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": "n1"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian", "kernelVersion": "6.1", "containerRuntimeVersion": ""}
        }
    });
    assert_eq!(
        cells("", "nodes", n),
        vec![
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,master"),
            json!("30d"),
            json!("v1.32.0"),
            json!("192.168.1.10"),
            json!("<none>"),
            json!("Debian"),
            json!("6.1"),
            json!("<unknown>"),
        ]
    );
    let bare = cells("", "nodes", json!({"metadata": {"name": "n2"}}));
    assert_eq!(&bare[1..3], &[json!("Unknown"), json!("<none>")]);
}

#[test]
fn events_core_and_events_api() {
    let core = json!({
        "metadata": {"name": "web.17c", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled", "type": "Normal", "message": "  Successfully pulled image \n",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-05-01T11:00:00Z", "lastTimestamp": "2024-05-01T11:59:30Z", "count": 4
    });
    assert_eq!(
        cells("", "events", core),
        vec![
            json!("30s"),
            json!("Normal"),
            json!("Pulled"),
            json!("pod/web"),
            json!("spec.containers{app}"),
            json!("kubelet, node-1"),
            json!("Successfully pulled image"),
            json!("60m"),
            json!(4),
            json!("web.17c"),
        ]
    );
    let new_api = json!({
        "metadata": {"name": "e2"},
        "eventTime": "2024-05-01T11:58:00.000000Z",
        "regarding": {"kind": "Node", "name": ""},
        "reportingController": "scheduler", "reportingInstance": "sched-1",
        "reason": "Scheduled", "type": "Normal", "note": "ok",
        "series": {"count": 7, "lastObservedTime": "2024-05-01T11:59:50.000000Z"}
    });
    assert_eq!(
        cells("events.k8s.io", "events", new_api),
        vec![
            json!("10s"),
            json!("Normal"),
            json!("Scheduled"),
            json!("node"),
            json!(""),
            json!("scheduler, sched-1"),
            json!("ok"),
            json!("2m"),
            json!(7),
            json!("e2"),
        ]
    );
    let singleton = cells(
        "",
        "events",
        json!({"metadata": {"name": "e3"}, "eventTime": "2024-05-01T11:59:00Z"}),
    );
    assert_eq!(
        (&singleton[0], &singleton[7], &singleton[8]),
        (&json!("60s"), &json!("60s"), &json!(1))
    );
    assert_eq!(column_definitions("", "events")[9]["priority"], json!(1));
}

#[test]
fn workloads() {
    let template = json!({"spec": {"containers": [{"name": "app", "image": "nginx:1"}, {"name": "log", "image": "fluent"}]}});
    let d = json!({
        "metadata": {"name": "d", "creationTimestamp": "2024-05-01T11:59:55Z"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}}, "template": template},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    });
    assert_eq!(
        cells("apps", "deployments", d),
        vec![
            json!("d"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("5s"),
            json!("app,log"),
            json!("nginx:1,fluent"),
            json!("app=d"),
        ]
    );
    let bad = cells(
        "apps",
        "deployments",
        json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Nope"}]}}}),
    );
    assert_eq!((&bad[1], &bad[7]), (&json!("0/1"), &json!("<invalid>")));

    let rs = json!({
        "metadata": {"name": "rs"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d", "pod-template-hash": "abc"}}, "template": template},
        "status": {"replicas": 2, "readyReplicas": 1}
    });
    assert_eq!(
        cells("apps", "replicasets", rs),
        vec![
            json!("rs"),
            json!(2),
            json!(2),
            json!(1),
            json!("<unknown>"),
            json!("app,log"),
            json!("nginx:1,fluent"),
            json!("app=d,pod-template-hash=abc"),
        ]
    );
    let sts = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 3}});
    assert_eq!(
        cells("apps", "statefulsets", sts),
        vec![
            json!("db"),
            json!("3/3"),
            json!("<unknown>"),
            json!("app,log"),
            json!("nginx:1,fluent")
        ]
    );
}

#[test]
fn jobs() {
    let job = |spec: Value, status: Value| json!({"metadata": {"name": "j", "creationTimestamp": "2024-05-01T11:00:00Z"}, "spec": spec, "status": status});
    let c = cells(
        "batch",
        "jobs",
        job(
            json!({"completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                   "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}),
            json!({"succeeded": 1, "startTime": "2024-05-01T11:00:00Z", "completionTime": "2024-05-01T11:00:42Z",
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
        ),
    );
    assert_eq!(
        c,
        vec![
            json!("j"),
            json!("Complete"),
            json!("1/1"),
            json!("42s"),
            json!("60m"),
            json!("pi"),
            json!("perl"),
            json!("batch.kubernetes.io/controller-uid=u"),
        ]
    );
    let c = cells(
        "batch",
        "jobs",
        job(
            json!({"parallelism": 3}),
            json!({"startTime": "2024-05-01T11:30:00Z"}),
        ),
    );
    assert_eq!(
        &c[1..4],
        &[json!("Running"), json!("0/1 of 3"), json!("30m")]
    );
    assert_eq!(c[7], json!("<none>"));
    let c = cells(
        "batch",
        "jobs",
        job(
            json!({"completions": 5}),
            json!({"conditions": [{"type": "Failed", "status": "True"}]}),
        ),
    );
    assert_eq!(&c[1..4], &[json!("Failed"), json!("0/5"), json!("")]);
    let c = cells(
        "batch",
        "jobs",
        job(
            json!({}),
            json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
        ),
    );
    assert_eq!(c[1], json!("Suspended"));
}

#[test]
fn default_table_and_include_object() {
    let cm = json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
                    "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2024-05-01T10:00:00Z", "resourceVersion": "7"},
                    "rules": []});
    let t = table(
        "rbac.authorization.k8s.io",
        "roles",
        std::slice::from_ref(&cm),
        IncludeObject::Metadata,
        json!({"resourceVersion": "9"}),
        now(),
    );
    assert_eq!(t["kind"], json!("Table"));
    assert_eq!(t["apiVersion"], json!("meta.k8s.io/v1"));
    assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
    let cols = t["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(cols.len(), 2);
    assert_eq!(cols[1]["name"], json!("Created At"));
    assert_eq!(cols[1]["type"], json!("date"));
    assert_eq!(t["rows"][0]["cells"], json!(["r", "2024-05-01T10:00:00Z"]));
    assert_eq!(
        t["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2024-05-01T10:00:00Z", "resourceVersion": "7"}})
    );
    assert!(t["rows"][0].get("conditions").is_none());
    let t = table("", "pods", &[], IncludeObject::Object, Value::Null, now());
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["metadata"], json!({}));
    let t = table_with_headers(
        "",
        "pods",
        &[],
        IncludeObject::None,
        false,
        json!({}),
        now(),
    );
    assert_eq!(t["columnDefinitions"], Value::Null);
    let t = table(
        "example.com",
        "widgets",
        &[],
        IncludeObject::Object,
        json!({}),
        now(),
    );
    assert_eq!(t["rows"], Value::Null);
    let row = table_row("", "configmaps", &cm, IncludeObject::Object, now());
    assert_eq!(row["object"], cm);
    assert_eq!(
        partial_object_metadata(&json!({"metadata": {"name": "a"}}))["metadata"],
        json!({"name": "a", "creationTimestamp": null})
    );
    assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse("None"), Ok(IncludeObject::None));
    assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
    assert_eq!(
        IncludeObject::parse("all").map_err(|e| e.to_string()),
        Err("unrecognized includeObject value: \"all\"".to_string())
    );
}

#[test]
fn garbage_objects_do_not_panic() {
    let resources = [
        ("", "pods"),
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "nodes"),
        ("", "events"),
        ("events.k8s.io", "events"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("coordination.k8s.io", "leases"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        ),
        ("x", "y"),
    ];
    let junk = [
        json!(null),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
        json!({"metadata": 5, "spec": [], "status": "x"}),
        json!({"metadata": {"creationTimestamp": 7}, "spec": {"containers": 3, "replicas": "x", "selector": 4},
               "status": {"containerStatuses": [1, null, {"state": 2}], "initContainerStatuses": {"a": 1},
                          "conditions": [null], "loadBalancer": {"ingress": [null]}}}),
    ];
    for (g, r) in resources {
        let ncols = column_definitions(g, r).len();
        for j in &junk {
            assert_eq!(row_cells(g, r, j, now()).len(), ncols, "{g}/{r}");
            let _ = table(
                g,
                r,
                std::slice::from_ref(j),
                IncludeObject::Metadata,
                Value::Null,
                now(),
            );
        }
    }
}

// The printers added for issue 17, by API area.
mod apps;
mod cluster;
mod core_v1;
