//! The node proxy (`/api/v1/nodes/NAME/proxy/…`) through kube-rs, served by
//! the simulated kubelet: `/stats/summary` in the stats/v1alpha1 shape with
//! a running pod's containers, `/healthz`, `/pods`, `/metrics/resource`,
//! the kubelet's 404s and 405, a missing node's 404 Status, the redirect of
//! the bare proxy path, authorization on `nodes/proxy`, and discovery.

use crate::common;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use kube::runtime::conditions::is_pod_running;
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

const NODE: &str = "kopr-node-0";
const MIB: u64 = 1 << 20;

fn proxy(path: &str) -> String {
    format!("/api/v1/nodes/{NODE}/proxy{path}")
}

/// Runs `web` (200m CPU and 64Mi requested, 128Mi limit) on `kopr-node-0`.
async fn run_web(client: &kube::Client) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"nodeName": NODE, "containers": [{
            "name": "web", "image": "nginx:1.27",
            "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        }]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        await_condition(pods.clone(), "web", is_pod_running()),
    )
    .await
    .expect("pod runs in time")
    .expect("watch");
    pods.get("web").await.expect("pod")
}

/// GET through the kube-rs client's text request.
async fn get_text(client: &kube::Client, path: &str) -> String {
    let req = http::Request::get(path).body(Vec::new()).expect("request");
    client.request_text(req).await.expect("200")
}

#[tokio::test]
async fn stats_summary_shows_the_node_and_its_running_pods() {
    let f = common::start().await;
    let pod = run_web(&f.client).await;
    let uid = pod.metadata.uid.clone().expect("uid");

    let text = get_text(&f.client, &proxy("/stats/summary")).await;
    // go-restful's json.MarshalIndent(v, "", " "): one space a level.
    assert!(
        text.starts_with(&format!("{{\n \"node\": {{\n  \"nodeName\": \"{NODE}\",\n  \"systemContainers\": [\n   {{\n    \"name\": \"kubelet\",")),
        "{text}"
    );
    assert!(!text.ends_with('\n'));
    let s: Value = serde_json::from_str(&text).expect("json");
    let node = &s["node"];
    let names: Vec<&str> = node["systemContainers"]
        .as_array()
        .expect("system containers")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["kubelet", "runtime", "pods"]);
    for key in [
        "startTime",
        "cpu",
        "memory",
        "network",
        "fs",
        "runtime",
        "rlimit",
        "swap",
    ] {
        assert!(node.get(key).is_some(), "node.{key}: {node}");
    }
    assert_eq!(node["network"]["name"], "eth0");
    assert_eq!(node["runtime"]["imageFs"], node["runtime"]["containerFs"]);
    assert_eq!(node["swap"]["swapUsageBytes"], 0);
    let memory = &node["memory"];
    assert_eq!(
        memory["availableBytes"].as_u64().unwrap() + memory["workingSetBytes"].as_u64().unwrap(),
        16 << 30
    );

    let pods = s["pods"].as_array().expect("pods");
    let web = pods
        .iter()
        .find(|p| p["podRef"]["name"] == "web")
        .unwrap_or_else(|| panic!("web in {text}"));
    assert_eq!(
        web["podRef"],
        json!({"name": "web", "namespace": "default", "uid": uid})
    );
    let containers = web["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["name"], "web");
    // Synthesized: a tenth of the CPU request, half the memory request.
    assert_eq!(c["cpu"]["usageNanoCores"], 20_000_000);
    assert_eq!(c["memory"]["workingSetBytes"], 32 * MIB);
    assert_eq!(c["memory"]["availableBytes"], 96 * MIB);
    for key in ["startTime", "rootfs", "logs", "swap"] {
        assert!(c.get(key).is_some(), "container.{key}: {c}");
    }
    assert!(c["logs"]["usedBytes"].as_u64().unwrap() > 0);
    assert_eq!(web["cpu"]["usageNanoCores"], 20_000_000);
    assert_eq!(web["process_stats"]["process_count"], 2);
    let volumes: Vec<&str> = web["volume"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| v["name"].as_str().unwrap_or(""))
        .collect();
    assert!(
        volumes.iter().any(|v| v.starts_with("kube-api-access-")),
        "{volumes:?}"
    );
    assert!(web.get("ephemeral-storage").is_some());
    // The node is its pods plus the system daemons.
    let pods_container = &node["systemContainers"][2];
    let pods_cpu: u64 = pods
        .iter()
        .map(|p| p["cpu"]["usageNanoCores"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(pods_container["cpu"]["usageNanoCores"], pods_cpu);
    assert!(node["cpu"]["usageNanoCores"].as_u64().unwrap() > pods_cpu);

    // The CPU and memory summary.
    let text = get_text(&f.client, &proxy("/stats/summary?only_cpu_and_memory=true")).await;
    let s: Value = serde_json::from_str(&text).expect("json");
    for key in ["network", "fs", "runtime", "rlimit"] {
        assert!(s["node"].get(key).is_none(), "node.{key}: {text}");
    }
    let web = &s["pods"][0];
    assert!(web.get("volume").is_none() && web.get("network").is_none());
    assert!(web["containers"][0].get("rootfs").is_none());
    assert_eq!(web["containers"][0]["memory"]["workingSetBytes"], 32 * MIB);

    let (code, headers, _) =
        common::raw(&f.client, "GET", &proxy("/stats/summary"), None, vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "application/json");
}

#[tokio::test]
async fn healthz_pods_and_resource_metrics() {
    let f = common::start().await;
    run_web(&f.client).await;

    assert_eq!(get_text(&f.client, &proxy("/healthz")).await, "ok");
    assert_eq!(
        get_text(&f.client, &proxy("/healthz?verbose")).await,
        "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"
    );
    assert_eq!(get_text(&f.client, &proxy("/healthz/syncloop")).await, "ok");
    let (code, headers, _) = common::raw(&f.client, "GET", &proxy("/healthz"), None, vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");

    let text = get_text(&f.client, &proxy("/pods")).await;
    assert!(
        text.starts_with("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"web\""),
        "{text}"
    );
    assert!(text.ends_with("}\n"));
    let list: Value = serde_json::from_str(&text).expect("json");
    let web = &list["items"][0];
    assert!(web.get("kind").is_none(), "items carry no TypeMeta");
    assert_eq!(web["spec"]["nodeName"], NODE);
    assert_eq!(
        web["metadata"]["annotations"]["kubernetes.io/config.source"],
        "api"
    );
    assert_eq!(web["status"]["phase"], "Running");

    let text = get_text(&f.client, &proxy("/metrics/resource")).await;
    assert!(
        text.starts_with(
            "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n\
             # TYPE container_cpu_usage_seconds_total counter\n\
             container_cpu_usage_seconds_total{container=\"web\",namespace=\"default\",pod=\"web\"} "
        ),
        "{text}"
    );
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        families,
        [
            "container_cpu_usage_seconds_total",
            "container_memory_working_set_bytes",
            "container_start_time_seconds",
            "container_swap_usage_bytes",
            "node_cpu_usage_seconds_total",
            "node_memory_working_set_bytes",
            "node_swap_usage_bytes",
            "pod_cpu_usage_seconds_total",
            "pod_memory_working_set_bytes",
            "pod_swap_usage_bytes",
            "resource_scrape_error",
        ]
    );
    // 32 MiB as Go formats a float64, then a millisecond timestamp.
    let sample = text
        .lines()
        .find(|l| l.starts_with("container_memory_working_set_bytes{container=\"web\""))
        .expect("web's working set");
    let fields: Vec<&str> = sample.split(' ').collect();
    assert_eq!(fields[1], "3.3554432e+07", "{sample}");
    assert!(
        fields[2].len() == 13 && fields[2].parse::<i64>().is_ok(),
        "{sample}"
    );
    assert!(text.contains("\nresource_scrape_error 0\n"), "{text}");
    let start = text
        .lines()
        .find(|l| l.starts_with("container_start_time_seconds{"))
        .expect("start time");
    assert_eq!(start.split(' ').count(), 2, "no timestamp: {start}");
    let (_, headers, _) =
        common::raw(&f.client, "GET", &proxy("/metrics/resource"), None, vec![]).await;
    assert_eq!(
        headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8; escaping=values"
    );
}

#[tokio::test]
async fn the_kubelets_errors_and_the_apiservers() {
    let f = common::start().await;
    run_web(&f.client).await;

    // Go's ServeMux outside the kubelet's web services, go-restful inside.
    let (code, headers, body) = common::raw(&f.client, "GET", &proxy("/nope"), None, vec![]).await;
    assert_eq!((code, body.as_str()), (404, "404 page not found\n"));
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let (code, _, body) = common::raw(&f.client, "GET", &proxy("/stats/nope"), None, vec![]).await;
    assert_eq!((code, body.as_str()), (404, "404: Page Not Found"));
    let (code, _, body) = common::raw(&f.client, "POST", &proxy("/pods"), None, vec![]).await;
    assert_eq!((code, body.as_str()), (405, "405: Method Not Allowed"));
    // `/stats` goes to `/stats/`, under the proxy path.
    let (code, headers, _) = common::raw(&f.client, "GET", &proxy("/stats"), None, vec![]).await;
    assert_eq!(code, 301);
    assert_eq!(headers["location"], proxy("/stats/"));
    // The bare proxy path goes to `proxy/`.
    let (code, headers, body) = common::raw(&f.client, "GET", &proxy(""), None, vec![]).await;
    assert_eq!((code, body.as_str()), (301, ""));
    assert_eq!(headers["location"], proxy("/"));
    // A node name with the kubelet's port is the same kubelet.
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        &format!("/api/v1/nodes/{NODE}:10250/proxy/healthz"),
        None,
        vec![],
    )
    .await;
    assert_eq!((code, body.as_str()), (200, "ok"));

    // A missing node: kube-apiserver's NotFound.
    let req = http::Request::get("/api/v1/nodes/nope/proxy/stats/summary")
        .body(Vec::new())
        .expect("request");
    let e = common::status_of(f.client.request_text(req).await.expect_err("404"));
    assert_eq!(e.code, 404);
    assert_eq!(e.reason, "NotFound");
    assert_eq!(e.message, "nodes \"nope\" not found");
    let (_, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/nodes/nope/proxy/healthz",
        None,
        vec![],
    )
    .await;
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(status["details"], json!({"name": "nope", "kind": "nodes"}));
    // Another port of the node: nothing listens there.
    let (code, _, body) = common::raw(
        &common::client_without_retries(&f.server).await,
        "GET",
        &format!("/api/v1/nodes/{NODE}:8080/proxy/"),
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 503, "{body}");
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(status["reason"], "ServiceUnavailable");
    assert_eq!(
        status["message"],
        "error trying to reach service: dial tcp 172.18.0.2:8080: connect: connection refused"
    );
}

#[tokio::test]
async fn authorization_is_on_nodes_proxy() {
    let f = common::start().await;
    let as_bob = |method: &str, path: String| {
        let client = f.client.clone();
        let method = method.to_string();
        async move {
            common::raw_with_headers(
                &client,
                &method,
                &path,
                &[("impersonate-user", "bob".to_string())],
                vec![],
            )
            .await
        }
    };
    let (code, _, body) = as_bob("GET", proxy("/healthz")).await;
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(
        status["message"],
        format!(
            "nodes \"{NODE}\" is forbidden: User \"bob\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope"
        )
    );
    assert_eq!(status["details"], json!({"name": NODE, "kind": "nodes"}));
    let (code, _, body) = as_bob("POST", proxy("/stats/summary")).await;
    assert_eq!(code, 403);
    assert!(
        body.contains("cannot create resource \\\"nodes/proxy\\\""),
        "{body}"
    );

    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "node-proxy-reader"},
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}],
    }))
    .expect("role");
    Api::<ClusterRole>::all(f.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "bob-node-proxy"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-proxy-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(f.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
    let (code, _, body) = as_bob("GET", proxy("/healthz")).await;
    assert_eq!((code, body.as_str()), (200, "ok"));
    // `get` on nodes/proxy is not `get` on nodes.
    let (code, _, _) = as_bob("GET", format!("/api/v1/nodes/{NODE}")).await;
    assert_eq!(code, 403);
    // Nor `create` on nodes/proxy.
    let (code, _, _) = as_bob("POST", proxy("/stats/summary")).await;
    assert_eq!(code, 403);
}

#[tokio::test]
async fn discovery_lists_nodes_proxy() {
    let f = common::start().await;
    let text = get_text(&f.client, "/api/v1").await;
    let list: Value = serde_json::from_str(&text).expect("json");
    let proxy = list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "nodes/proxy")
        .expect("nodes/proxy");
    assert_eq!(
        *proxy,
        json!({"name": "nodes/proxy", "singularName": "", "namespaced": false,
               "kind": "NodeProxyOptions", "verbs": ["create", "delete", "get", "patch", "update"]})
    );
}
