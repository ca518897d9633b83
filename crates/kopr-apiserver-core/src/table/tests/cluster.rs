//! Table tests of the networking, storage and cluster-level printers added
//! for issue 17, and the (group, resource) → printer mapping of every one.

use super::*;

fn obj(extra: Value) -> Value {
    let mut o = json!({"metadata": {"name": "x", "creationTimestamp": "2024-05-01T11:00:00Z"}});
    if let (Some(o), Value::Object(e)) = (o.as_object_mut(), extra) {
        o.extend(e);
    }
    o
}

const NEW_RESOURCES: &[(&str, &str, usize)] = &[
    ("", "limitranges", 2),
    ("", "resourcequotas", 4),
    ("", "podtemplates", 4),
    ("", "persistentvolumes", 11),
    ("", "persistentvolumeclaims", 9),
    ("", "replicationcontrollers", 8),
    ("", "endpoints", 3),
    ("", "bindings", 2),
    ("", "componentstatuses", 4),
    ("apps", "controllerrevisions", 4),
    ("apps", "daemonsets", 11),
    ("batch", "cronjobs", 10),
    ("autoscaling", "horizontalpodautoscalers", 7),
    ("certificates.k8s.io", "certificatesigningrequests", 6),
    ("discovery.k8s.io", "endpointslices", 5),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", 6),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        7,
    ),
    ("networking.k8s.io", "ingresses", 6),
    ("networking.k8s.io", "ingressclasses", 4),
    ("networking.k8s.io", "networkpolicies", 3),
    ("node.k8s.io", "runtimeclasses", 3),
    ("policy", "poddisruptionbudgets", 5),
    ("scheduling.k8s.io", "priorityclasses", 5),
    ("storage.k8s.io", "storageclasses", 6),
    ("storage.k8s.io", "csidrivers", 8),
    ("storage.k8s.io", "csinodes", 3),
    ("storage.k8s.io", "csistoragecapacities", 3),
    ("storage.k8s.io", "volumeattachments", 6),
    ("apiregistration.k8s.io", "apiservices", 4),
];

#[test]
fn every_new_resource_has_its_printer() {
    for (group, resource, ncols) in NEW_RESOURCES {
        let cols = column_definitions(group, resource);
        assert_eq!(cols.len(), *ncols, "{group}/{resource}");
        assert_eq!(cols[0]["name"], json!("Name"), "{group}/{resource}");
        for c in &cols {
            for key in ["name", "type", "format", "description", "priority"] {
                assert!(c.get(key).is_some(), "{group}/{resource} {key}");
            }
        }
        let kind = kind_of(group, resource);
        let default = !matches!(*resource, "limitranges" | "bindings");
        assert_eq!(
            kind != columns::Kind::Default,
            default,
            "{group}/{resource}"
        );
    }
}

#[test]
fn new_printers_survive_garbage() {
    let junk = [
        json!(null),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
        json!({"metadata": 5, "spec": [], "status": "x", "capacity": {}}),
        json!({"metadata": {"creationTimestamp": 7, "ownerReferences": [{"controller": true}]},
               "spec": {"metrics": [{"type": "Resource"}, {"type": "External", "external": 3}],
                        "capacity": {"storage": "12.5.3"}, "claimRef": 4, "rules": [null, 1],
                        "limited": {"limitResponse": {"queuing": {}}}, "parameters": {}},
               "status": {"hard": {"cpu": 1}, "conditions": [null, 1], "currentMetrics": "x"},
               "subsets": [{"addresses": [1], "ports": [{}]}], "endpoints": [{"addresses": [null]}],
               "ports": [{}], "capacity": "1Ei"}),
    ];
    for (group, resource, ncols) in NEW_RESOURCES {
        for j in &junk {
            assert_eq!(
                row_cells(group, resource, j, now()).len(),
                *ncols,
                "{group}/{resource}"
            );
        }
    }
}

#[test]
fn ingresses_and_classes() {
    let ing = obj(json!({
        "spec": {"ingressClassName": "nginx",
                 "rules": [{"host": "a.example.com"}, {}, {"host": "b.example.com"}],
                 "tls": [{"hosts": ["a.example.com"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.9"}]}}
    }));
    assert_eq!(
        cells("networking.k8s.io", "ingresses", ing),
        vec![
            json!("x"),
            json!("nginx"),
            json!("a.example.com,b.example.com"),
            json!("10.0.0.9,lb.example.com"),
            json!("80, 443"),
            json!("60m"),
        ]
    );
    let rules = json!([{"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}, {}]);
    let c = cells(
        "networking.k8s.io",
        "ingresses",
        obj(json!({"spec": {"rules": rules}})),
    );
    assert_eq!(
        &c[1..5],
        &[
            json!("<none>"),
            json!("a,b,c + 2 more..."),
            json!(""),
            json!("80")
        ]
    );
    let c = cells(
        "networking.k8s.io",
        "ingresses",
        obj(json!({"spec": {"rules": [{}]}})),
    );
    assert_eq!(c[2], json!("*"));

    let class = obj(json!({"spec": {"controller": "k8s.io/ingress-nginx",
        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}));
    assert_eq!(
        cells("networking.k8s.io", "ingressclasses", class),
        vec![
            json!("x"),
            json!("k8s.io/ingress-nginx"),
            json!("IngressParameters.k8s.example.com/external-lb"),
            json!("60m"),
        ]
    );
    let class =
        obj(json!({"spec": {"controller": "c", "parameters": {"kind": "ConfigMap", "name": "p"}}}));
    assert_eq!(
        cells("networking.k8s.io", "ingressclasses", class)[2],
        json!("ConfigMap/p")
    );
    assert_eq!(
        cells(
            "networking.k8s.io",
            "ingressclasses",
            obj(json!({"spec": {}}))
        )[2],
        json!("<none>")
    );
}

#[test]
fn network_policies_and_endpoint_slices() {
    let np = |sel: Value| {
        cells(
            "networking.k8s.io",
            "networkpolicies",
            obj(json!({"spec": {"podSelector": sel}})),
        )[1]
        .clone()
    };
    assert_eq!(np(json!({})), json!("<none>"));
    assert_eq!(np(json!({"matchLabels": {"app": "db"}})), json!("app=db"));
    assert_eq!(
        np(json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]})),
        json!("tier in (a,b)")
    );

    let es = obj(json!({"addressType": "IPv4",
        "ports": [{"name": "http", "port": 80}, {"name": "metrics"}, {}, {"port": 9000}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]}]}));
    assert_eq!(
        cells("discovery.k8s.io", "endpointslices", es),
        vec![
            json!("x"),
            json!("IPv4"),
            json!("80,metrics,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."),
            json!("60m"),
        ]
    );
    let c = cells(
        "discovery.k8s.io",
        "endpointslices",
        obj(json!({"addressType": "FQDN"})),
    );
    assert_eq!(&c[2..4], &[json!("<unset>"), json!("<unset>")]);
}

#[test]
fn storage_printers() {
    let mut sc = obj(
        json!({"provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
    );
    sc["metadata"]["annotations"] = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    assert_eq!(
        cells("storage.k8s.io", "storageclasses", sc),
        vec![
            json!("x (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("WaitForFirstConsumer"),
            json!(false),
            json!("60m"),
        ]
    );
    let mut sc =
        obj(json!({"provisioner": "p", "reclaimPolicy": "Retain", "allowVolumeExpansion": true}));
    sc["metadata"]["annotations"] =
        json!({"storageclass.beta.kubernetes.io/is-default-class": "false"});
    assert_eq!(
        cells("storage.k8s.io", "storageclasses", sc)[..5],
        [
            json!("x"),
            json!("p"),
            json!("Retain"),
            json!("Immediate"),
            json!(true)
        ]
    );

    let va = obj(
        json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                                 "source": {"persistentVolumeName": "pv-1"}},
                        "status": {"attached": true}}),
    );
    assert_eq!(
        cells("storage.k8s.io", "volumeattachments", va),
        vec![
            json!("x"),
            json!("csi.example.com"),
            json!("pv-1"),
            json!("node-1"),
            json!(true),
            json!("60m"),
        ]
    );
    assert_eq!(
        column_definitions("storage.k8s.io", "volumeattachments")[1]["format"],
        json!("name")
    );

    let driver = obj(
        json!({"spec": {"podInfoOnMount": true, "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                                     "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
    );
    assert_eq!(
        cells("storage.k8s.io", "csidrivers", driver),
        vec![
            json!("x"),
            json!(true),
            json!(true),
            json!(false),
            json!("a,b"),
            json!(false),
            json!("Persistent,Ephemeral"),
            json!("60m"),
        ]
    );
    let c = cells(
        "storage.k8s.io",
        "csidrivers",
        obj(json!({"spec": {"attachRequired": false, "tokenRequests": []}})),
    );
    assert_eq!(
        &c[1..7],
        &[
            json!(false),
            json!(false),
            json!(false),
            json!(""),
            json!(false),
            json!("<none>")
        ]
    );
    assert_eq!(
        cells("storage.k8s.io", "csidrivers", obj(json!({"spec": {}})))[4],
        json!("<unset>")
    );

    let node = obj(json!({"spec": {"drivers": [{"name": "a"}, {"name": "b"}]}}));
    assert_eq!(
        cells("storage.k8s.io", "csinodes", node),
        vec![json!("x"), json!(2), json!("60m")]
    );
    let cap = obj(json!({"storageClassName": "fast", "capacity": "1000Mi"}));
    assert_eq!(
        cells("storage.k8s.io", "csistoragecapacities", cap),
        vec![json!("x"), json!("fast"), json!("1000Mi")]
    );
    assert_eq!(
        cells(
            "storage.k8s.io",
            "csistoragecapacities",
            obj(json!({"storageClassName": "fast"}))
        )[2],
        json!("<unset>")
    );
}

#[test]
fn certificate_signing_requests() {
    let csr = |status: Value| {
        obj(json!({
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice",
                     "expirationSeconds": 86400, "request": "LS0t"},
            "status": status
        }))
    };
    let group = "certificates.k8s.io";
    let resource = "certificatesigningrequests";
    assert_eq!(
        cells(group, resource, csr(json!({}))),
        vec![
            json!("x"),
            json!("60m"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Pending"),
        ]
    );
    let issued =
        json!({"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"});
    assert_eq!(
        cells(group, resource, csr(issued))[5],
        json!("Approved,Issued")
    );
    let denied = json!({"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]});
    assert_eq!(cells(group, resource, csr(denied))[5], json!("Denied"));
    let failed = json!({"conditions": [{"type": "Failed", "status": "True"}]});
    assert_eq!(
        cells(group, resource, csr(failed))[5],
        json!("Pending,Failed")
    );
    let c = cells(group, resource, obj(json!({"spec": {}})));
    assert_eq!(&c[2..5], &[json!("<none>"), json!(""), json!("<none>")]);
    let cols = column_definitions(group, resource);
    assert_eq!(cols[1]["name"], json!("Age"));
    assert_eq!(cols[3]["name"], json!("Requestor"));
    assert_eq!(
        cols[3]["description"],
        json!("Base64-encoded PKCS#10 CSR data")
    );
}

#[test]
fn scheduling_and_node_classes() {
    let pc = obj(json!({"value": 1000000, "globalDefault": true, "preemptionPolicy": "Never"}));
    assert_eq!(
        cells("scheduling.k8s.io", "priorityclasses", pc),
        vec![
            json!("x"),
            json!(1000000),
            json!(true),
            json!("60m"),
            json!("Never")
        ]
    );
    let cols = column_definitions("scheduling.k8s.io", "priorityclasses");
    assert_eq!(cols[2]["type"], json!("boolean"));
    assert_eq!(cols[4]["priority"], json!(0));

    let rc = obj(json!({"handler": "runc"}));
    assert_eq!(
        cells("node.k8s.io", "runtimeclasses", rc),
        vec![json!("x"), json!("runc"), json!("60m")]
    );
    assert_eq!(
        column_definitions("node.k8s.io", "runtimeclasses")[1]["description"],
        json!("")
    );
}

#[test]
fn flow_control() {
    let group = "flowcontrol.apiserver.k8s.io";
    let fs = |name: &str, precedence: i64, extra: Value| {
        let mut o = obj(
            json!({"spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                                        "matchingPrecedence": precedence}}),
        );
        o["metadata"]["name"] = json!(name);
        if let (Some(spec), Value::Object(e)) = (o["spec"].as_object_mut(), extra) {
            spec.extend(e);
        }
        o
    };
    let global = fs(
        "global-default",
        9900,
        json!({"distinguisherMethod": {"type": "ByUser"}}),
    );
    assert_eq!(
        cells(group, "flowschemas", global.clone()),
        vec![
            json!("global-default"),
            json!("workload-low"),
            json!(9900),
            json!("ByUser"),
            json!("60m"),
            json!("?"),
        ]
    );
    let mut dangling = fs("b", 500, json!({}));
    dangling["status"] = json!({"conditions": [{"type": "Dangling", "status": "False"}]});
    let c = cells(group, "flowschemas", dangling.clone());
    assert_eq!(&c[3..], &[json!("<none>"), json!("60m"), json!("False")]);
    // Lists are sorted by matching precedence, then name.
    let t = table(
        group,
        "flowschemas",
        &[global, dangling, fs("a", 500, json!({}))],
        IncludeObject::None,
        json!({}),
        now(),
    );
    let order: Vec<Value> = t["rows"]
        .as_array()
        .map(|rows| rows.iter().map(|r| r["cells"][0].clone()).collect())
        .unwrap_or_default();
    assert_eq!(order, vec![json!("a"), json!("b"), json!("global-default")]);

    let limited = obj(
        json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}}),
    );
    assert_eq!(
        cells(group, "prioritylevelconfigurations", limited),
        vec![
            json!("x"),
            json!("Limited"),
            json!(100),
            json!(128),
            json!(6),
            json!(50),
            json!("60m"),
        ]
    );
    let reject =
        obj(json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}));
    assert_eq!(
        cells(group, "prioritylevelconfigurations", reject)[2..6],
        [json!(30), json!("<none>"), json!("<none>"), json!("<none>")]
    );
    let exempt = obj(json!({"spec": {"type": "Exempt", "exempt": {}}}));
    assert_eq!(
        cells(group, "prioritylevelconfigurations", exempt)[1..6],
        [
            json!("Exempt"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn api_services() {
    let local = obj(json!({"spec": {"group": "apps", "version": "v1"},
                           "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}));
    assert_eq!(
        cells("apiregistration.k8s.io", "apiservices", local),
        vec![json!("x"), json!("Local"), json!("True"), json!("60m")]
    );
    let remote = obj(
        json!({"spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}),
    );
    assert_eq!(
        cells("apiregistration.k8s.io", "apiservices", remote)[1..3],
        [
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)")
        ]
    );
    assert_eq!(
        cells("apiregistration.k8s.io", "apiservices", obj(json!({})))[2],
        json!("Unknown")
    );
}
