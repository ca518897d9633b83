//! The node proxy through real kubectl (`kubectl get --raw`) against a
//! `kopr apiserver` child process: the simulated kubelet's
//! `/stats/summary` with a running pod, `/healthz`, `/pods`,
//! `/metrics/resource`, and the errors kubectl shows for the kubelet's 404
//! and a missing node.

use crate::support::Server;

const POD: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  nodeName: kopr-node-0
  containers:
  - name: web
    image: nginx:1.27
    resources:
      requests: {cpu: 100m, memory: 32Mi}
";

fn raw(path: &str) -> String {
    format!("/api/v1/nodes/kopr-node-0/proxy{path}")
}

#[test]
fn kubectl_get_raw_reaches_the_simulated_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], POD),
        "pod/web created\n"
    );
    server.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/web",
        "--timeout=60s",
    ]);

    let text = server.ok(&["get", "--raw", &raw("/stats/summary")]);
    assert!(
        text.starts_with("{\n \"node\": {\n  \"nodeName\": \"kopr-node-0\",\n"),
        "{text}"
    );
    let summary: serde_json::Value = serde_json::from_str(&text).expect("summary is JSON");
    let web = summary["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .find(|p| p["podRef"]["name"] == "web")
        .unwrap_or_else(|| panic!("web in {text}"));
    assert_eq!(web["podRef"]["namespace"], "default");
    assert_eq!(web["containers"][0]["name"], "web");
    // A tenth of the 100m request, half of the 32Mi.
    assert_eq!(web["containers"][0]["cpu"]["usageNanoCores"], 10_000_000);
    assert_eq!(
        web["containers"][0]["memory"]["workingSetBytes"],
        16 * 1024 * 1024
    );
    assert!(summary["node"]["fs"]["capacityBytes"].as_u64().unwrap() > 0);

    assert_eq!(server.ok(&["get", "--raw", &raw("/healthz")]), "ok");

    let pods = server.ok(&["get", "--raw", &raw("/pods")]);
    let list: serde_json::Value = serde_json::from_str(&pods).expect("pods are JSON");
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["items"][0]["metadata"]["name"], "web");

    let metrics = server.ok(&["get", "--raw", &raw("/metrics/resource")]);
    assert!(
        metrics.contains(
            "\n# TYPE container_cpu_usage_seconds_total counter\ncontainer_cpu_usage_seconds_total{container=\"web\",namespace=\"default\",pod=\"web\"} "
        ),
        "{metrics}"
    );
    assert!(metrics.contains("\nresource_scrape_error 0\n"), "{metrics}");

    // The kubelet's 404 (not a Status): kubectl names the code.
    let out = server.kubectl(&["get", "--raw", &raw("/nope")]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (NotFound): the server could not find the requested resource\n"
    );
    // A missing node: kube-apiserver's Status.
    let out = server.kubectl(&["get", "--raw", "/api/v1/nodes/nope/proxy/stats/summary"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (NotFound): nodes \"nope\" not found\n"
    );
}
