//! The whole of kube-apiserver 1.32's default API (issue 17): discovery lists its 58
//! resources, every storage-only kind is created and read back through kube-rs, Bindings
//! assign pods, ComponentStatuses answer, CertificateSigningRequests record their requester
//! and take approval through their `approval` subresource, and the APIServices of the served
//! group versions are registered and available.

use crate::common;

use std::collections::BTreeSet;

use base64::Engine;
use serde_json::{Value, json};

async fn get(client: &kube::Client, path: &str) -> (u16, Value) {
    let (code, _, body) = common::raw(client, "GET", path, None, Vec::new()).await;
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn send(client: &kube::Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let (code, _, text) = common::raw(
        client,
        method,
        path,
        Some("application/json"),
        serde_json::to_vec(body).unwrap(),
    )
    .await;
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The resources of kube-apiserver 1.32's default API, by preferred group version.
const KUBE_1_32: &[&str] = &[
    "v1/bindings",
    "v1/componentstatuses",
    "v1/configmaps",
    "v1/endpoints",
    "v1/events",
    "v1/limitranges",
    "v1/namespaces",
    "v1/nodes",
    "v1/persistentvolumeclaims",
    "v1/persistentvolumes",
    "v1/pods",
    "v1/podtemplates",
    "v1/replicationcontrollers",
    "v1/resourcequotas",
    "v1/secrets",
    "v1/serviceaccounts",
    "v1/services",
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "apiextensions.k8s.io/v1/customresourcedefinitions",
    "apiregistration.k8s.io/v1/apiservices",
    "apps/v1/controllerrevisions",
    "apps/v1/daemonsets",
    "apps/v1/deployments",
    "apps/v1/replicasets",
    "apps/v1/statefulsets",
    "authentication.k8s.io/v1/selfsubjectreviews",
    "authentication.k8s.io/v1/tokenreviews",
    "authorization.k8s.io/v1/localsubjectaccessreviews",
    "authorization.k8s.io/v1/selfsubjectaccessreviews",
    "authorization.k8s.io/v1/selfsubjectrulesreviews",
    "authorization.k8s.io/v1/subjectaccessreviews",
    "autoscaling/v2/horizontalpodautoscalers",
    "batch/v1/cronjobs",
    "batch/v1/jobs",
    "certificates.k8s.io/v1/certificatesigningrequests",
    "coordination.k8s.io/v1/leases",
    "discovery.k8s.io/v1/endpointslices",
    "events.k8s.io/v1/events",
    "flowcontrol.apiserver.k8s.io/v1/flowschemas",
    "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
    "networking.k8s.io/v1/ingressclasses",
    "networking.k8s.io/v1/ingresses",
    "networking.k8s.io/v1/networkpolicies",
    "node.k8s.io/v1/runtimeclasses",
    "policy/v1/poddisruptionbudgets",
    "rbac.authorization.k8s.io/v1/clusterrolebindings",
    "rbac.authorization.k8s.io/v1/clusterroles",
    "rbac.authorization.k8s.io/v1/rolebindings",
    "rbac.authorization.k8s.io/v1/roles",
    "scheduling.k8s.io/v1/priorityclasses",
    "storage.k8s.io/v1/csidrivers",
    "storage.k8s.io/v1/csinodes",
    "storage.k8s.io/v1/csistoragecapacities",
    "storage.k8s.io/v1/storageclasses",
    "storage.k8s.io/v1/volumeattachments",
];

#[tokio::test]
async fn discovery_lists_the_58_resources_of_kube_1_32() {
    let f = common::start().await;
    let (code, groups) = get(&f.client, "/apis").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "node.k8s.io",
            "discovery.k8s.io",
            "flowcontrol.apiserver.k8s.io",
        ]
    );
    let mut preferred = vec!["v1".to_string()];
    for g in groups["groups"].as_array().unwrap() {
        preferred.push(
            g["preferredVersion"]["groupVersion"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let mut found = BTreeSet::new();
    for gv in preferred {
        let path = if gv == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{gv}")
        };
        let (code, list) = get(&f.client, &path).await;
        assert_eq!(code, 200, "{path}");
        for r in list["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            if !name.contains('/') {
                found.insert(format!("{gv}/{name}"));
            }
        }
    }
    let want: BTreeSet<String> = KUBE_1_32.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, want);
    assert_eq!(found.len(), 58);

    let (_, core) = get(&f.client, "/api/v1").await;
    let resource = |name: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(resource("bindings")["verbs"], json!(["create"]));
    assert_eq!(
        resource("componentstatuses")["verbs"],
        json!(["get", "list"])
    );
    assert_eq!(resource("componentstatuses")["shortNames"], json!(["cs"]));
    assert_eq!(resource("pods/binding")["kind"], "Binding");
    assert_eq!(resource("replicationcontrollers/scale")["kind"], "Scale");
    // Each subresource with its kind and verbs, as kube-apiserver 1.32 lists them. Its pods
    // also have `proxy` (to a pod's port), which kopr does not serve.
    let pods: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str()?.strip_prefix("pods/"))
        .collect();
    assert_eq!(
        pods,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "status"
        ]
    );
    let shape = |name: &str| {
        let r = resource(name);
        (r["group"].clone(), r["kind"].clone(), r["verbs"].clone())
    };
    let core_kind = |kind: &str, verbs: Value| (Value::Null, json!(kind), verbs);
    assert_eq!(
        shape("pods/attach"),
        core_kind("PodAttachOptions", json!(["create", "get"]))
    );
    assert_eq!(
        shape("pods/portforward"),
        core_kind("PodPortForwardOptions", json!(["create", "get"]))
    );
    assert_eq!(shape("pods/log"), core_kind("Pod", json!(["get"])));
    assert_eq!(
        shape("pods/ephemeralcontainers"),
        core_kind("Pod", json!(["get", "patch", "update"]))
    );
    assert_eq!(
        shape("pods/eviction"),
        (json!("policy"), json!("Eviction"), json!(["create"]))
    );
    assert_eq!(
        shape("serviceaccounts/token"),
        (
            json!("authentication.k8s.io"),
            json!("TokenRequest"),
            json!(["create"])
        )
    );
    assert_eq!(
        shape("nodes/proxy"),
        core_kind(
            "NodeProxyOptions",
            json!(["create", "delete", "get", "patch", "update"])
        )
    );
    assert_eq!(
        shape("namespaces/finalize"),
        core_kind("Namespace", json!(["update"]))
    );
    let (_, autoscaling) = get(&f.client, "/apis/autoscaling").await;
    assert_eq!(autoscaling["preferredVersion"]["version"], "v2");
}

/// A minimal valid object of each storage-only kind: (collection path, body).
fn samples(csr: &str) -> Vec<(&'static str, Value)> {
    let pod_template = json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    });
    vec![
        (
            "/api/v1/namespaces/default/limitranges",
            json!({"metadata": {"name": "limits"}, "spec": {"limits": [
                {"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "250m"}}]}}),
        ),
        (
            "/api/v1/namespaces/default/resourcequotas",
            json!({"metadata": {"name": "quota"}, "spec": {"hard": {"pods": "10"}}}),
        ),
        (
            "/api/v1/namespaces/default/podtemplates",
            json!({"metadata": {"name": "tmpl"}, "template": pod_template}),
        ),
        (
            "/api/v1/persistentvolumes",
            json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv1"}}}),
        ),
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            json!({"metadata": {"name": "claim"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            "/api/v1/namespaces/default/replicationcontrollers",
            json!({"metadata": {"name": "rc"}, "spec": {"replicas": 0, "selector": {"app": "demo"},
                "template": pod_template}}),
        ),
        (
            "/api/v1/namespaces/default/endpoints",
            json!({"metadata": {"name": "ep"}, "subsets": [
                {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]}),
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            json!({"metadata": {"name": "rev-1"}, "revision": 1, "data": {"spec": {}}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            json!({"metadata": {"name": "ds"}, "spec": {"selector": {"matchLabels": {"app": "demo"}},
                "template": pod_template}}),
        ),
        (
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            json!({"metadata": {"name": "hpa"}, "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
        ),
        (
            "/apis/batch/v1/namespaces/default/cronjobs",
            json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
                "suspend": true,
                "jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "OnFailure"}}}}}}),
        ),
        (
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({"metadata": {"name": "csr1"}, "spec": {"request": csr,
                "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth"]}}),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            json!({"metadata": {"name": "slice"}, "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.1.2.3"]}],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
            json!({"metadata": {"name": "plc"}, "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 10, "limitResponse": {"type": "Reject"}}}}),
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"metadata": {"name": "fs"}, "spec": {
                "priorityLevelConfiguration": {"name": "plc"}, "matchingPrecedence": 1000}}),
        ),
        (
            "/apis/networking.k8s.io/v1/ingressclasses",
            json!({"metadata": {"name": "nginx"}, "spec": {"controller": "example.com/ingress"}}),
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            json!({"metadata": {"name": "ing"}, "spec": {"rules": [{"host": "example.com",
                "http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {},
                "policyTypes": ["Ingress"]}}),
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"metadata": {"name": "runc"}, "handler": "runc"}),
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            json!({"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1,
                "selector": {"matchLabels": {"app": "demo"}}}}),
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            json!({"metadata": {"name": "high"}, "value": 1000}),
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fake"}),
        ),
        (
            "/apis/storage.k8s.io/v1/csidrivers",
            json!({"metadata": {"name": "csi.example.com"}, "spec": {}}),
        ),
        (
            "/apis/storage.k8s.io/v1/csinodes",
            json!({"metadata": {"name": "kopr-node-0"}, "spec": {"drivers": [
                {"name": "csi.example.com", "nodeID": "n0"}]}}),
        ),
        (
            "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
            json!({"metadata": {"name": "cap"}, "storageClassName": "fast"}),
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments",
            json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com",
                "nodeName": "kopr-node-0", "source": {"persistentVolumeName": "pv1"}}}),
        ),
    ]
}

fn signing_request() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "jane");
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

#[tokio::test]
async fn every_storage_only_kind_is_created_and_read_back() {
    let f = common::start().await;
    for (path, body) in samples(&signing_request()) {
        let (code, created) = send(&f.client, "POST", path, &body).await;
        assert_eq!(code, 201, "{path}: {created}");
        let name = body["metadata"]["name"].as_str().unwrap();
        let (code, read) = get(&f.client, &format!("{path}/{name}")).await;
        assert_eq!(code, 200, "{path}/{name}: {read}");
        assert_eq!(read["metadata"]["uid"], created["metadata"]["uid"]);
        assert!(read["kind"].is_string() && read["apiVersion"].is_string());
        let (code, list) = get(&f.client, path).await;
        assert_eq!(code, 200, "{path}");
        assert!(list["kind"].as_str().unwrap().ends_with("List"), "{list}");
    }
    let (_, pv) = get(&f.client, "/api/v1/persistentvolumes/pv1").await;
    assert_eq!(pv["status"]["phase"], "Pending");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string(), "{pv}");
    let (_, claim) = get(
        &f.client,
        "/api/v1/namespaces/default/persistentvolumeclaims/claim",
    )
    .await;
    assert_eq!(claim["status"]["phase"], "Pending");
    let (_, sc) = get(&f.client, "/apis/storage.k8s.io/v1/storageclasses/fast").await;
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");

    // Scale of a ReplicationController: its selector is a plain map.
    let (code, scale) = get(
        &f.client,
        "/api/v1/namespaces/default/replicationcontrollers/rc/scale",
    )
    .await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["status"]["selector"], "app=demo");
}

#[tokio::test]
async fn a_binding_assigns_a_pod_once() {
    let f = common::start().await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "none",
        "containers": [{"name": "c", "image": "nginx"}]}});
    let (code, _) = send(&f.client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201);
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "p", "annotations": {"bound-by": "test"}},
        "target": {"kind": "Node", "name": "elsewhere"}});
    let (code, status) = send(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/pods/p/binding",
        &binding,
    )
    .await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let (_, bound) = get(&f.client, "/api/v1/namespaces/default/pods/p").await;
    assert_eq!(bound["spec"]["nodeName"], "elsewhere");
    assert_eq!(bound["metadata"]["annotations"]["bound-by"], "test");
    let scheduled = bound["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap();
    assert_eq!(scheduled["status"], "True");

    let (code, again) = send(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/bindings",
        &binding,
    )
    .await;
    assert_eq!(code, 409, "{again}");
    assert_eq!(
        again["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"elsewhere\""
    );
    let (code, mismatch) = send(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/pods/other/binding",
        &binding,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        mismatch["message"],
        "name in URL does not match name in Binding object"
    );
    let no_node = json!({"metadata": {"name": "p"}, "target": {"kind": "Pod"}});
    let (code, invalid) = send(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/bindings",
        &no_node,
    )
    .await;
    assert_eq!(code, 422, "{invalid}");
    assert_eq!(
        invalid["message"],
        "Binding \"p\" is invalid: [target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );
    let (code, _) = get(&f.client, "/api/v1/namespaces/default/bindings").await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn component_statuses_report_a_healthy_control_plane() {
    let f = common::start().await;
    let (code, headers, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/componentstatuses",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        common::warnings(&headers),
        ["299 - \"v1 ComponentStatus is deprecated in v1.19+\""]
    );
    let list: Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    let (code, one) = get(&f.client, "/api/v1/componentstatuses/etcd-0").await;
    assert_eq!(code, 200);
    assert_eq!(
        one["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    let (code, _) = get(&f.client, "/api/v1/componentstatuses/nope").await;
    assert_eq!(code, 404);
    let (code, _) = send(
        &f.client,
        "DELETE",
        "/api/v1/componentstatuses/etcd-0",
        &json!({}),
    )
    .await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn signing_requests_record_the_requester_and_take_approval() {
    let f = common::start().await;
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let csr = json!({"metadata": {"name": "jane"}, "spec": {"request": signing_request(),
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
        "username": "someone-else"}});
    let (code, created) = send(&f.client, "POST", path, &csr).await;
    assert_eq!(code, 201, "{created}");
    let (_, me) = send(
        &f.client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(
        created["spec"]["username"],
        me["status"]["userInfo"]["username"]
    );
    assert!(
        created
            .get("status")
            .is_none_or(|s| s.get("conditions").is_none())
    );

    // The main resource cannot approve: conditions come from the stored object.
    let mut approved = created.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True",
        "reason": "Test", "message": "approved by the test"}]});
    let (code, put) = send(&f.client, "PUT", &format!("{path}/jane"), &approved).await;
    assert_eq!(code, 200, "{put}");
    assert!(put["status"]["conditions"].is_null(), "{put}");

    approved["metadata"]["resourceVersion"] = put["metadata"]["resourceVersion"].clone();
    let (code, done) = send(
        &f.client,
        "PUT",
        &format!("{path}/jane/approval"),
        &approved,
    )
    .await;
    assert_eq!(code, 200, "{done}");
    let condition = &done["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert!(condition["lastUpdateTime"].is_string(), "{done}");
    assert!(condition["lastTransitionTime"].is_string(), "{done}");
    assert_eq!(done["spec"]["username"], created["spec"]["username"]);
}

#[tokio::test]
async fn api_services_cover_the_served_group_versions() {
    let f = common::start().await;
    let path = "/apis/apiregistration.k8s.io/v1/apiservices";
    let names = |list: &Value| -> BTreeSet<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Registered at start, before the server answers.
    let (_, list) = get(&f.client, path).await;
    let found = names(&list);
    for name in [
        "v1.",
        "v1.apps",
        "v2.autoscaling",
        "v1.autoscaling",
        "v1.storage.k8s.io",
    ] {
        assert!(found.contains(name), "{name} missing from {found:?}");
    }
    let (_, apps) = get(&f.client, &format!("{path}/v1.apps")).await;
    assert_eq!(apps["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(apps["spec"]["versionPriority"], 15);
    assert_eq!(
        apps["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let available = &apps["status"]["conditions"][0];
    assert_eq!(available["type"], "Available");
    assert_eq!(available["reason"], "Local");
    assert_eq!(
        available["message"],
        "Local APIServices are always available"
    );
}

#[tokio::test]
async fn autoscalers_are_served_in_v1_and_v2() {
    let f = common::start().await;
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"}, "spec": {"maxReplicas": 5, "targetCPUUtilizationPercentage": 55,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}});
    let (code, created) = send(&f.client, "POST", v1, &hpa).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"]["minReplicas"], 1);
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 55);
    let (_, as_v2) = get(&f.client, &format!("{v2}/web")).await;
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 55}}}])
    );
    let (_, as_v1) = get(&f.client, &format!("{v1}/web")).await;
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 55);
    assert!(as_v1["spec"].get("metrics").is_none(), "{as_v1}");
    let bad = json!({"metadata": {"name": "bad"}, "spec": {"maxReplicas": 0,
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}}});
    let (code, invalid) = send(&f.client, "POST", v1, &bad).await;
    assert_eq!(code, 422, "{invalid}");
}

#[tokio::test]
async fn ephemeral_containers_are_added_through_their_subresource() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::wait::await_condition;
    let f = common::start().await;
    let pods: kube::Api<Pod> = kube::Api::namespaced(f.client.clone(), "default");
    let pod = json!({"metadata": {"name": "app"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (code, _) = send(&f.client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201);
    let path = "/api/v1/namespaces/default/pods/app/ephemeralcontainers";
    let debug = json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox",
        "stdin": true, "tty": true, "targetContainerName": "c"}]}});
    let (code, _, body) = common::raw(
        &f.client,
        "PATCH",
        path,
        Some("application/strategic-merge-patch+json"),
        serde_json::to_vec(&debug).unwrap(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let patched: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(patched["spec"]["ephemeralContainers"][0]["name"], "dbg");
    assert_eq!(patched["spec"]["containers"][0]["name"], "c");

    let running = |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|s| s.ephemeral_container_statuses.as_ref())
            .is_some_and(|s| {
                s.iter().any(|c| {
                    c.name == "dbg" && c.state.as_ref().is_some_and(|st| st.running.is_some())
                })
            })
    };
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        await_condition(pods.clone(), "app", running),
    )
    .await
    .expect("the kubelet starts the ephemeral container")
    .unwrap();

    // Other spec changes through the subresource are dropped; removing one is refused.
    let (code, _, body) = common::raw(
        &f.client,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        serde_json::to_vec(&json!({"spec": {"ephemeralContainers": null}})).unwrap(),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
    );
    let (_, discovery) = get(&f.client, "/api/v1").await;
    assert!(
        discovery["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/ephemeralcontainers")
    );
}
