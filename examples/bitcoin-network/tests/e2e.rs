//! The BitcoinNetwork operator against an in-process API server with its workload controllers
//! and simulated nodes: the StatefulSet and headless Service of a network, its pods listed in
//! the status as they start, scale up and down, and are deleted by hand; the children
//! garbage-collected with the network; `nodes: 0` refused by the schema; a name taken by a
//! foreign StatefulSet reported while other networks are served; and the `manifests` RBAC.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use bitcoin_network::children::{NETWORK_LABEL, P2P_PORT, RPC_PORT};
use bitcoin_network::{BitcoinNetwork, BitcoinNetworkStatus};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use kopr::kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kopr::testing::{
    RunningOperator, TestCluster, capture_logs, manifest_documents, refusals, wait_for,
};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// Starts a cluster with the CRD installed and the operator running.
async fn start() -> (TestCluster, RunningOperator) {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let operator = bitcoin_network::operator();
    operator
        .install_crds(&cluster.client())
        .await
        .expect("CRDs install");
    let running = cluster
        .run_as_service_account(operator, &bitcoin_network::manifests())
        .await
        .expect("runs as its ServiceAccount");
    (cluster, running)
}

/// Waits until `check` holds, asking again every 100 ms; panics with `what` after [`WAIT`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn status(network: Option<&BitcoinNetwork>) -> BitcoinNetworkStatus {
    network.and_then(|n| n.status.clone()).unwrap_or_default()
}

/// Whether the status lists exactly the nodes `<name>-0..count`, all ready with an IP.
fn settled(network: Option<&BitcoinNetwork>, name: &str, count: usize) -> bool {
    let status = status(network);
    let names: Vec<String> = status.nodes.iter().map(|n| n.name.clone()).collect();
    let expected: Vec<String> = (0..count).map(|i| format!("{name}-{i}")).collect();
    names == expected
        && status.ready_nodes == Some(count as i32)
        && status.nodes.iter().all(|n| n.ready && n.ip.is_some())
}

async fn wait_settled(networks: &Api<BitcoinNetwork>, name: &str, count: usize) -> BitcoinNetwork {
    wait_for(networks, name, WAIT, move |n: Option<&BitcoinNetwork>| {
        settled(n, name, count)
    })
    .await
    .unwrap_or_else(|e| panic!("{name} never listed {count} ready nodes: {e}"))
    .expect("exists")
}

/// The network's pods by name, with their IPs.
async fn pod_ips(pods: &Api<Pod>, name: &str) -> BTreeMap<String, Option<String>> {
    let selector = ListParams::default().labels(&format!("{NETWORK_LABEL}={name}"));
    pods.list(&selector)
        .await
        .expect("pods listed")
        .items
        .into_iter()
        .map(|p| {
            let ip = p.status.and_then(|s| s.pod_ip);
            (p.metadata.name.unwrap_or_default(), ip)
        })
        .collect()
}

/// Checks that the status shows each of the network's pods with its current IP.
async fn assert_status_matches_pods(pods: &Api<Pod>, network: &BitcoinNetwork) {
    let name = network.metadata.name.as_deref().unwrap_or_default();
    let listed: BTreeMap<String, Option<String>> = status(Some(network))
        .nodes
        .into_iter()
        .map(|n| (n.name, n.ip))
        .collect();
    assert_eq!(listed, pod_ips(pods, name).await);
}

fn is_running_and_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

async fn scale(networks: &Api<BitcoinNetwork>, name: &str, nodes: i32) {
    let patch = Patch::Merge(json!({"spec": {"nodes": nodes}}));
    networks
        .patch(name, &PatchParams::default(), &patch)
        .await
        .expect("scaled");
}

async fn replicas_become(sets: &Api<StatefulSet>, name: &str, replicas: i32) {
    wait_for(sets, name, WAIT, move |s: Option<&StatefulSet>| {
        s.and_then(|s| s.spec.replicas) == Some(replicas)
    })
    .await
    .unwrap_or_else(|e| panic!("the StatefulSet never had {replicas} replicas: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_runs_its_nodes_and_its_status_follows_them() {
    let logs = capture_logs();
    let (cluster, running) = start().await;
    let client = cluster.client();
    cluster
        .apply(samples().join("regtest.yaml"))
        .await
        .expect("applied");
    logs.wait_for(
        &["BitcoinNetwork regtest: StatefulSet regtest runs 3 nodes"],
        WAIT,
    )
    .await
    .expect("the create handler logs");

    let networks: Api<BitcoinNetwork> = Api::namespaced(client.clone(), "default");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    // Three ready nodes, listed with the IPs their pods have.
    let network = wait_settled(&networks, "regtest", 3).await;
    assert_status_matches_pods(&pods, &network).await;
    assert!(
        status(Some(&network))
            .message
            .is_some_and(|m| m.contains("StatefulSet regtest runs 3 nodes")),
        "{:?}",
        network.status
    );
    let uid = network.metadata.uid.clone().expect("uid");
    for i in 0..3 {
        let pod = pods.get(&format!("regtest-{i}")).await.expect("pod exists");
        assert!(is_running_and_ready(&pod), "{:?}", pod.status);
    }

    // The children: owned by the network, a StatefulSet of 3 and a headless Service.
    let set = sets.get("regtest").await.expect("the StatefulSet exists");
    let owners = set.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (
            owners[0].kind.as_str(),
            owners[0].name.as_str(),
            owners[0].uid.as_str()
        ),
        ("BitcoinNetwork", "regtest", uid.as_str())
    );
    assert_eq!(owners[0].controller, Some(true));
    let spec = set.spec;
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.service_name.as_deref(), Some("regtest"));
    let service = services.get("regtest").await.expect("the Service exists");
    let owners = service.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].uid, uid);
    let spec = service.spec.expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    let ports: Vec<i32> = spec
        .ports
        .unwrap_or_default()
        .iter()
        .map(|p| p.port)
        .collect();
    assert_eq!(ports, [P2P_PORT, RPC_PORT]);

    // Scaling up: the StatefulSet follows, then the status.
    scale(&networks, "regtest", 5).await;
    replicas_become(&sets, "regtest", 5).await;
    let network = wait_settled(&networks, "regtest", 5).await;
    assert_status_matches_pods(&pods, &network).await;

    // Scaling down: the highest ordinals go, and leave the status.
    scale(&networks, "regtest", 2).await;
    replicas_become(&sets, "regtest", 2).await;
    wait_settled(&networks, "regtest", 2).await;
    eventually("pods regtest-2..4 are gone", || async {
        pod_ips(&pods, "regtest").await.len() == 2
    })
    .await;
    let network = wait_settled(&networks, "regtest", 2).await;
    assert_status_matches_pods(&pods, &network).await;

    // A pod deleted by hand is recreated by the StatefulSet controller; the status shows the
    // new pod (the simulated kubelet hands out a fresh IP).
    let old = pods.get("regtest-1").await.expect("pod exists");
    let old_uid = old.metadata.uid.clone();
    let old_ip = old.status.and_then(|s| s.pod_ip).expect("an IP");
    pods.delete("regtest-1", &DeleteParams::default())
        .await
        .expect("deleted");
    let new = wait_for(&pods, "regtest-1", WAIT, |p: Option<&Pod>| {
        p.is_some_and(|p| p.metadata.uid != old_uid && is_running_and_ready(p))
    })
    .await
    .expect("the StatefulSet recreates the pod")
    .expect("exists");
    let new_ip = new.status.and_then(|s| s.pod_ip).expect("an IP");
    assert_ne!(new_ip, old_ip);
    let network = wait_for(&networks, "regtest", WAIT, |n: Option<&BitcoinNetwork>| {
        settled(n, "regtest", 2) && status(n).nodes[1].ip.as_deref() == Some(new_ip.as_str())
    })
    .await
    .expect("the status shows the new pod")
    .expect("exists");
    assert_status_matches_pods(&pods, &network).await;

    // Deleting the network garbage-collects the StatefulSet, the Service and the pods.
    networks
        .delete("regtest", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_for(&sets, "regtest", WAIT, |s: Option<&StatefulSet>| {
        s.is_none()
    })
    .await
    .expect("the StatefulSet is garbage-collected");
    wait_for(&services, "regtest", WAIT, |s: Option<&Service>| {
        s.is_none()
    })
    .await
    .expect("the Service is garbage-collected");
    eventually("the pods are gone", || async {
        pod_ips(&pods, "regtest").await.is_empty()
    })
    .await;

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_needs_at_least_one_node() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    bitcoin_network::operator()
        .install_crds(&client)
        .await
        .expect("CRDs install");
    let errors = refusals(&client, samples().join("invalid"))
        .await
        .expect("every invalid sample refused");
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("no-nodes.yaml:3: BitcoinNetwork unsized:")
            && errors[0].contains("spec.nodes: Required value"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("zero-nodes.yaml:3: BitcoinNetwork empty:")
            && errors[1].contains(
                "spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1"
            ),
        "{}",
        errors[1]
    );

    // Scaling an existing network to zero is refused just the same.
    cluster
        .apply(samples().join("regtest.yaml"))
        .await
        .expect("applied");
    let networks: Api<BitcoinNetwork> = Api::namespaced(client, "default");
    let refused = networks
        .patch(
            "regtest",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nodes": 0}})),
        )
        .await
        .expect_err("refused");
    match refused {
        kopr::kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert_eq!(
                status.message,
                "BitcoinNetwork.christianb93.github.com \"regtest\" is invalid: spec.nodes: \
                 Invalid value: 0: spec.nodes in body should be greater than or equal to 1"
            );
        }
        other => panic!("expected a 422, got {other}"),
    }
    assert_eq!(networks.get("regtest").await.expect("exists").spec.nodes, 3);
    cluster.shutdown().await;
}

/// Waits for a Warning event about `name` whose message contains `text`; returns its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_name_is_reported_while_other_networks_are_served() {
    let (cluster, running) = start().await;
    let client = cluster.client();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let foreign: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "taken"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "foreign"}},
            "template": {
                "metadata": {"labels": {"app": "foreign"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }))
    .expect("a StatefulSet");
    sets.create(&PostParams::default(), &foreign)
        .await
        .expect("created");

    let networks: Api<BitcoinNetwork> = Api::namespaced(client.clone(), "default");
    let taken: BitcoinNetwork = serde_json::from_value(json!({
        "apiVersion": "christianb93.github.com/v1",
        "kind": "BitcoinNetwork",
        "metadata": {"name": "taken"},
        "spec": {"nodes": 1},
    }))
    .expect("a network");
    networks
        .create(&PostParams::default(), &taken)
        .await
        .expect("created");
    cluster
        .apply(samples().join("regtest.yaml"))
        .await
        .expect("applied");

    let complaint = "StatefulSet taken already exists and does not belong to this BitcoinNetwork";
    let reason = cluster
        .wait_for_warning("default", "taken", WAIT, |e| {
            e.message.as_deref().is_some_and(|m| m.contains(complaint))
        })
        .await
        .expect("a warning about the taken name")
        .reason
        .unwrap_or_default();
    assert_eq!(reason, "ReconcileFailed");
    wait_for(&networks, "taken", WAIT, |n: Option<&BitcoinNetwork>| {
        status(n).message.as_deref() == Some(complaint)
    })
    .await
    .expect("status.message says why");
    // The other network is served meanwhile; nothing of the taken one is created or touched.
    wait_settled(&networks, "regtest", 3).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    assert!(services.get_opt("taken").await.expect("asked").is_none());
    let set = sets.get("taken").await.expect("still there");
    assert!(set.metadata.owner_references.is_none());
    assert_eq!(set.spec.replicas, Some(1));

    // Once the name is free, the retry creates the network's own StatefulSet.
    sets.delete("taken", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_settled(&networks, "taken", 1).await;
    // The handler writes its message when it returns, which may be after the pod events
    // have already listed the node.
    let network = wait_for(&networks, "taken", WAIT, |n: Option<&BitcoinNetwork>| {
        status(n).message.as_deref()
            == Some("StatefulSet taken runs 1 node behind the headless Service taken")
    })
    .await
    .unwrap_or_else(|e| panic!("the retry never reported its StatefulSet: {e}"))
    .expect("exists");
    let set = sets.get("taken").await.expect("the network's own");
    assert_eq!(
        set.metadata.owner_references.unwrap_or_default()[0].uid,
        network.metadata.uid.unwrap_or_default()
    );

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[test]
fn manifests_grant_statefulsets_services_and_pods() {
    let documents =
        manifest_documents(env!("CARGO_BIN_EXE_bitcoin-network"), &[]).expect("manifests");
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment"
        ]
    );
    let crd = &documents[0];
    assert_eq!(
        crd["metadata"]["name"],
        "bitcoinnetworks.christianb93.github.com"
    );
    let nodes = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["nodes"];
    assert_eq!(nodes["type"], "integer");
    assert_eq!(nodes["minimum"].as_f64(), Some(1.0));
    assert_eq!(
        documents[2]["rules"],
        json!([
            {"apiGroups": ["christianb93.github.com"], "resources": ["bitcoinnetworks"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["christianb93.github.com"], "resources": ["bitcoinnetworks/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
            {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        ])
    );
    let container = &documents[7]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "bitcoin-network:latest");
    assert_eq!(
        container["args"],
        json!([
            "run",
            "-A",
            "--health-listen",
            "0.0.0.0:8081",
            "--metrics-listen",
            "0.0.0.0:8080"
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edits_and_deletions_of_the_children_are_put_back() {
    let (cluster, running) = start().await;
    let client = cluster.client();
    cluster
        .apply(samples().join("regtest.yaml"))
        .await
        .expect("applied");
    let networks: Api<BitcoinNetwork> = Api::namespaced(client.clone(), "default");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    wait_settled(&networks, "regtest", 3).await;
    let before = sets.get("regtest").await.expect("the StatefulSet exists");
    let generation = before.metadata.generation.expect("a generation");

    // Someone scales the StatefulSet by hand: it goes back to the network's 3 nodes, with one
    // write of its spec (the repair) after the edit, and no further ones.
    sets.patch(
        "regtest",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .expect("scaled by hand");
    replicas_become(&sets, "regtest", 3).await;
    let network = wait_settled(&networks, "regtest", 3).await;
    let after = sets.get("regtest").await.expect("the StatefulSet exists");
    assert_eq!(after.metadata.generation, Some(generation + 2));

    // Someone deletes the Service: a new one, owned by the network, takes its place.
    let old_service = services.get("regtest").await.expect("the Service exists");
    services
        .delete("regtest", &DeleteParams::default())
        .await
        .expect("deleted by hand");
    let old_uid = old_service.metadata.uid.clone();
    let service = wait_for(&services, "regtest", WAIT, move |s: Option<&Service>| {
        s.is_some_and(|s| s.metadata.uid != old_uid)
    })
    .await
    .expect("the Service comes back")
    .expect("exists");
    let owner = service
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .find(|r| r.controller == Some(true))
        .expect("a controller");
    assert_eq!(Some(owner.uid), network.metadata.uid);
    assert_eq!(
        service.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("None")
    );
    running.stop().await.expect("stops");
    cluster.shutdown().await;
}

/// The sample edited and applied again with kubectl, client-side and server-side: each
/// change of `nodes` reaches the object, the update handler, the StatefulSet and the status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_rescales_the_network() {
    let (cluster, running) = start().await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let networks: Api<BitcoinNetwork> = Api::namespaced(cluster.client(), "default");
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let sample = samples().join("regtest.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        "bitcoinnetwork.christianb93.github.com/regtest created\n"
    );
    wait_settled(&networks, "regtest", 3).await;

    for (nodes, server_side, said) in [(2, false, "configured"), (1, true, "serverside-applied")] {
        let edited = kopr::testing::edited(&sample, &[("nodes: 3", &format!("nodes: {nodes}"))])
            .expect("edit");
        assert_eq!(
            kubectl
                .apply(&edited, server_side)
                .await
                .expect("applied again"),
            format!("bitcoinnetwork.christianb93.github.com/regtest {said}\n")
        );
        replicas_become(&sets, "regtest", nodes).await;
        let network = wait_settled(&networks, "regtest", nodes as usize).await;
        assert_eq!(network.spec.nodes, nodes);
    }

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}
