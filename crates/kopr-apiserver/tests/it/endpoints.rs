//! Service endpoints through kube-rs: the endpoints and endpointslice
//! controllers keep the Endpoints and EndpointSlices of Services with a
//! selector (pods of a Deployment on the simulated nodes; a pod on a node of
//! the test's own whose readiness the test sets), named target ports are
//! resolved, unready pods move to `notReadyAddresses`, deleted pods go,
//! headless Services are labelled, Services without a selector keep the
//! Endpoints written by hand, and the `kubernetes` Service points at the
//! server itself.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Endpoints, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::watcher;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("typed")
}

fn json_of<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("json")
}

/// Waits on a watch until the named object satisfies `cond`.
async fn until<K>(api: &Api<K>, name: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + 'static,
{
    let matched = await_condition(api.clone(), name, move |o: Option<&K>| {
        o.is_some_and(|o| cond(&json_of(o)))
    });
    match tokio::time::timeout(WAIT, matched).await {
        Ok(Ok(Some(o))) => json_of(&o),
        other => panic!("{what}: not reached ({other:?})"),
    }
}

/// Waits on a watch of the Service's EndpointSlices until `cond` holds for
/// the complete set.
async fn slices_until(
    client: &kube::Client,
    service: &str,
    what: &str,
    cond: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let config =
        watcher::Config::default().labels(&format!("kubernetes.io/service-name={service}"));
    let mut stream = watcher(api, config).boxed();
    let mut known: BTreeMap<String, Value> = BTreeMap::new();
    let mut listing: BTreeMap<String, Value> = BTreeMap::new();
    let watch = async {
        while let Some(event) = stream.next().await {
            let name_of = |s: &EndpointSlice| s.metadata.name.clone().unwrap_or_default();
            match event.expect("watch event") {
                watcher::Event::Init => listing.clear(),
                watcher::Event::InitApply(s) => {
                    listing.insert(name_of(&s), json_of(&s));
                    continue;
                }
                watcher::Event::InitDone => known = std::mem::take(&mut listing),
                watcher::Event::Apply(s) => {
                    known.insert(name_of(&s), json_of(&s));
                }
                watcher::Event::Delete(s) => {
                    known.remove(&name_of(&s));
                }
            }
            let all: Vec<Value> = known.values().cloned().collect();
            if cond(&all) {
                return all;
            }
        }
        panic!("{what}: watch ended");
    };
    match tokio::time::timeout(WAIT, watch).await {
        Ok(all) => all,
        Err(_) => panic!("{what}: not reached; last seen {known:?}"),
    }
}

fn ips(list: &Value) -> Vec<String> {
    let mut ips: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect();
    ips.sort();
    ips
}

/// The endpoints of all slices.
fn endpoints_of(slices: &[Value]) -> Vec<Value> {
    slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_service_of_a_deployment_gets_its_pods_as_endpoints_and_a_slice() {
    let f = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(f.client.clone(), "default");
    let services: Api<Service> = Api::namespaced(f.client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &from(json!({
                "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                            "ports": [{"name": "http", "containerPort": 8080}]}]}}}
            })),
        )
        .await
        .unwrap();
    let svc = services
        .create(
            &PostParams::default(),
            &from(json!({
                "metadata": {"name": "web", "labels": {"team": "blue"}},
                "spec": {"selector": {"app": "web"}, "ports": [
                    {"name": "http", "port": 80, "targetPort": "http"},
                    {"name": "metrics", "port": 9090}]}
            })),
        )
        .await
        .unwrap();

    let ep = until(&endpoints, "web", "two ready addresses", |e| {
        ips(&e["subsets"][0]["addresses"]).len() == 2
    })
    .await;
    let running = pods.list(&Default::default()).await.unwrap().items;
    let mut pod_ips: Vec<String> = running
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();
    pod_ips.sort();
    assert_eq!(ips(&ep["subsets"][0]["addresses"]), pod_ips);
    assert_eq!(ep["subsets"].as_array().map(Vec::len), Some(1), "{ep}");
    assert!(ep["subsets"][0].get("notReadyAddresses").is_none(), "{ep}");
    // The named target port resolves to the container port; a numeric
    // one is taken as is.
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"},
               {"name": "metrics", "port": 9090, "protocol": "TCP"}])
    );
    for a in ep["subsets"][0]["addresses"].as_array().unwrap() {
        let pod = running
            .iter()
            .find(|p| p.metadata.name.as_deref() == a["targetRef"]["name"].as_str())
            .expect("the address names a pod");
        assert_eq!(a["targetRef"]["kind"], "Pod");
        assert_eq!(a["targetRef"]["namespace"], "default");
        assert_eq!(a["targetRef"]["uid"], json!(pod.metadata.uid));
        assert_eq!(a["nodeName"], json!(pod.spec.as_ref().unwrap().node_name));
        assert!(a["nodeName"].as_str().unwrap().starts_with("kopr-node-"));
    }
    assert_eq!(ep["metadata"]["labels"], json!({"team": "blue"}));

    let slices = slices_until(&f.client, "web", "a slice with both pods ready", |all| {
        let eps = endpoints_of(all);
        eps.len() == 2 && eps.iter().all(|e| e["conditions"]["ready"] == true)
    })
    .await;
    assert_eq!(slices.len(), 1, "{slices:?}");
    let slice = &slices[0];
    let name = slice["metadata"]["name"].as_str().unwrap();
    assert!(
        name.starts_with("web-") && name.len() == "web-".len() + 5,
        "{name}"
    );
    assert_eq!(slice["metadata"]["generateName"], "web-");
    assert_eq!(
        slice["metadata"]["labels"],
        json!({"team": "blue", "kubernetes.io/service-name": "web",
               "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"})
    );
    let owner = &slice["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Service");
    assert_eq!(owner["name"], "web");
    assert_eq!(owner["uid"], json!(svc.metadata.uid));
    assert_eq!(owner["controller"], true);
    assert_eq!(slice["addressType"], "IPv4");
    let mut slice_ports = slice["ports"].as_array().cloned().unwrap();
    slice_ports.sort_by_key(|p| p["name"].as_str().map(str::to_string));
    assert_eq!(
        slice_ports,
        vec![
            json!({"name": "http", "port": 8080, "protocol": "TCP"}),
            json!({"name": "metrics", "port": 9090, "protocol": "TCP"}),
        ]
    );
    let mut slice_ips: Vec<String> = endpoints_of(&slices)
        .iter()
        .map(|e| e["addresses"][0].as_str().unwrap().to_string())
        .collect();
    slice_ips.sort();
    assert_eq!(slice_ips, pod_ips);
    for e in endpoints_of(&slices) {
        assert_eq!(
            e["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(e["targetRef"]["kind"], "Pod");
        assert!(e["nodeName"].as_str().unwrap().starts_with("kopr-node-"));
        assert!(e.get("zone").is_none(), "the simulated nodes have no zone");
    }

    // Scaled down: the pod that goes leaves both.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    until(&endpoints, "web", "one address left", |e| {
        ips(&e["subsets"][0]["addresses"]).len() == 1
            && e["subsets"][0].get("notReadyAddresses").is_none()
    })
    .await;
    slices_until(&f.client, "web", "one endpoint left", |all| {
        endpoints_of(all).len() == 1
    })
    .await;

    // A Service deleted: its Endpoints go with it.
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let gone = await_condition(endpoints.clone(), "web", |o: Option<&Endpoints>| {
        o.is_none()
    });
    tokio::time::timeout(WAIT, gone)
        .await
        .expect("the Endpoints are deleted")
        .unwrap();
}

#[tokio::test]
async fn unready_terminating_and_deleted_pods_move_and_go() {
    let f = common::start().await;
    let nodes: Api<Node> = Api::all(f.client.clone());
    let services: Api<Service> = Api::namespaced(f.client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(f.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    // A node of the test's own: no simulated kubelet runs its pods, so the
    // test posts their status.
    nodes
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "edge",
                "labels": {"topology.kubernetes.io/zone": "zone-a"}}})),
        )
        .await
        .unwrap();
    services
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "api"},
                "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": 8080}]}})),
        )
        .await
        .unwrap();
    pods.create(
        &PostParams::default(),
        &from(
            json!({"metadata": {"name": "api-0", "labels": {"app": "api"}},
            "spec": {"nodeName": "edge", "hostname": "api-0", "subdomain": "api",
                "containers": [{"name": "c", "image": "api:1"}]}}),
        ),
    )
    .await
    .unwrap();
    // Each readiness transition at its own time: the trigger time of the
    // endpoints' next write.
    let status = |ready: &str, at: &str| {
        json!({"status": {"phase": "Running", "podIP": "10.244.9.5", "podIPs": [{"ip": "10.244.9.5"}],
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": at}]}})
    };
    let trigger_of = |o: &Value| {
        o["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"].clone()
    };
    pods.patch_status(
        "api-0",
        &PatchParams::default(),
        &Patch::Merge(status("True", "2025-01-01T00:00:00Z")),
    )
    .await
    .unwrap();

    let ep = until(&endpoints, "api", "the pod ready", |e| {
        ips(&e["subsets"][0]["addresses"]) == ["10.244.9.5"]
    })
    .await;
    assert_eq!(trigger_of(&ep), "2025-01-01T00:00:00Z");
    let address = &ep["subsets"][0]["addresses"][0];
    assert_eq!(address["hostname"], "api-0", "subdomain names the Service");
    assert_eq!(address["nodeName"], "edge");
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"port": 8080, "protocol": "TCP"}])
    );
    let slices = slices_until(&f.client, "api", "a ready endpoint", |all| {
        endpoints_of(all)
            .first()
            .is_some_and(|e| e["conditions"]["ready"] == true)
    })
    .await;
    let e = &endpoints_of(&slices)[0];
    assert_eq!(e["addresses"], json!(["10.244.9.5"]));
    assert_eq!(e["zone"], "zone-a");
    assert_eq!(e["nodeName"], "edge");
    assert_eq!(e["hostname"], "api-0");
    assert_eq!(trigger_of(&slices[0]), "2025-01-01T00:00:00Z");
    assert_eq!(
        slices[0]["ports"],
        json!([{"name": "", "port": 8080, "protocol": "TCP"}])
    );

    // Unready: under notReadyAddresses, and not ready nor serving in the slice.
    pods.patch_status(
        "api-0",
        &PatchParams::default(),
        &Patch::Merge(status("False", "2025-01-01T00:01:00Z")),
    )
    .await
    .unwrap();
    let ep = until(&endpoints, "api", "the pod not ready", |e| {
        ips(&e["subsets"][0]["notReadyAddresses"]) == ["10.244.9.5"]
    })
    .await;
    assert!(ep["subsets"][0].get("addresses").is_none(), "{ep}");
    assert_eq!(trigger_of(&ep), "2025-01-01T00:01:00Z");
    let slices = slices_until(&f.client, "api", "a not-ready endpoint", |all| {
        endpoints_of(all).first().is_some_and(|e| {
            e["conditions"] == json!({"ready": false, "serving": false, "terminating": false})
        })
    })
    .await;
    assert_eq!(trigger_of(&slices[0]), "2025-01-01T00:01:00Z");

    // Ready again, then deleted with a grace period: out of the Endpoints,
    // terminating (and still serving) in the slice.
    pods.patch_status(
        "api-0",
        &PatchParams::default(),
        &Patch::Merge(status("True", "2025-01-01T00:02:00Z")),
    )
    .await
    .unwrap();
    until(&endpoints, "api", "the pod ready again", |e| {
        ips(&e["subsets"][0]["addresses"]) == ["10.244.9.5"]
    })
    .await;
    pods.delete("api-0", &DeleteParams::default())
        .await
        .unwrap();
    until(&endpoints, "api", "the terminating pod out", |e| {
        e["subsets"].as_array().is_none_or(|s| s.is_empty())
    })
    .await;
    slices_until(&f.client, "api", "a terminating endpoint", |all| {
        endpoints_of(all).first().is_some_and(|e| {
            e["conditions"] == json!({"ready": false, "serving": true, "terminating": true})
        })
    })
    .await;

    // Gone: the slice stays, empty.
    pods.delete("api-0", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let slices = slices_until(&f.client, "api", "no endpoints", |all| {
        all.len() == 1 && endpoints_of(all).is_empty()
    })
    .await;
    assert!(
        slices[0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("api-")
    );
}

#[tokio::test]
async fn headless_services_are_labelled_and_selectorless_ones_left_alone() {
    let f = common::start().await;
    let services: Api<Service> = Api::namespaced(f.client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(f.client.clone(), "default");
    // Endpoints written by hand for a Service without a selector.
    services
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "external"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})),
        )
        .await
        .unwrap();
    let manual = endpoints
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "external"},
                "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"name": "https", "port": 8443}]}]})),
        )
        .await
        .unwrap();
    services
        .patch(
            "external",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .unwrap();

    services
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "db"},
                "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}})),
        )
        .await
        .unwrap();
    let ep = until(&endpoints, "db", "the headless Service's Endpoints", |_| {
        true
    })
    .await;
    assert_eq!(
        ep["metadata"]["labels"],
        json!({"service.kubernetes.io/headless": ""})
    );
    assert!(
        ep["subsets"].as_array().is_none_or(|s| s.is_empty()),
        "no pods yet: {ep}"
    );
    let slices = slices_until(&f.client, "db", "a placeholder slice", |all| all.len() == 1).await;
    assert_eq!(
        slices[0]["metadata"]["labels"]["service.kubernetes.io/headless"],
        ""
    );
    assert!(endpoints_of(&slices).is_empty(), "{slices:?}");

    // The hand-written Endpoints were not touched, and no slice was made
    // for their Service.
    let still = endpoints.get("external").await.unwrap();
    assert_eq!(
        still.metadata.resource_version,
        manual.metadata.resource_version
    );
    let external: Api<EndpointSlice> = Api::namespaced(f.client.clone(), "default");
    let listed = external
        .list(&kube::api::ListParams::default().labels("kubernetes.io/service-name=external"))
        .await
        .unwrap();
    assert!(listed.items.is_empty());
}

#[tokio::test]
async fn the_kubernetes_service_points_at_the_server() {
    let f = common::start().await;
    let endpoints: Api<Endpoints> = Api::namespaced(f.client.clone(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(f.client.clone(), "default");
    let port = f.server.addr().port();
    let ep = json_of(&endpoints.get("kubernetes").await.unwrap());
    assert_eq!(
        ep["metadata"]["labels"],
        json!({"endpointslice.kubernetes.io/skip-mirror": "true"})
    );
    assert_eq!(
        ep["subsets"],
        json!([{"addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
    );
    let slice = json_of(&slices.get("kubernetes").await.unwrap());
    assert_eq!(
        slice["metadata"]["labels"],
        json!({"kubernetes.io/service-name": "kubernetes"})
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["endpoints"],
        json!([{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}])
    );
    assert_eq!(
        slice["ports"],
        json!([{"name": "https", "port": port, "protocol": "TCP"}])
    );

    // Deleted, they come back.
    endpoints
        .delete("kubernetes", &DeleteParams::default())
        .await
        .unwrap();
    until(&endpoints, "kubernetes", "the Endpoints back", |e| {
        e["subsets"][0]["addresses"][0]["ip"] == "127.0.0.1"
    })
    .await;
}
