//! `greeting run` as a separate process against a cluster given by `--kubeconfig`: namespace
//! patterns (`-n`, globs, `!`), JSON log lines, `crd`, and a graceful stop on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use greeting::{Greeting, operator};
use kopr::kube::api::{Api, PostParams};
use kopr::testing::TestCluster;
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_greeting");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_matching_namespaces_with_json_logs() {
    let cluster = TestCluster::start().await.expect("cluster");
    let client = cluster.client();
    for crd in operator(&Default::default()).crds() {
        cluster.install_crd(&crd).await.expect("crd");
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in ["shop-a", "shop-b", "shop-secret", "other"] {
        let body = serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns");
        namespaces
            .create(&PostParams::default(), &body)
            .await
            .expect("namespace");
    }
    let dir = std::env::temp_dir().join(format!("greeting-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).expect("kubeconfig");

    let mut child = Command::new(BINARY)
        .args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["-n", "!shop-secret", "-n", "shop-*", "--log-format", "json"])
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("greeting run starts");
    let stderr = child.stderr.take().expect("stderr");
    let (lines, receive) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    for ns in ["shop-a", "shop-b", "shop-secret", "other"] {
        let api: Api<Greeting> = Api::namespaced(client.clone(), ns);
        let greeting = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Greeting",
            "metadata": {"name": "hi"}, "spec": {"message": format!("hello {ns}")}
        }))
        .expect("greeting");
        api.create(&PostParams::default(), &greeting)
            .await
            .expect("created");
    }
    let mut greeted = Vec::new();
    let mut json_lines = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while greeted.len() < 2 && Instant::now() < deadline {
        let Ok(line) = receive.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        let parsed: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a JSON log line: {line}"));
        json_lines += 1;
        if let Some(message) = parsed.pointer("/fields/message").and_then(Value::as_str)
            && let Some(text) = message.strip_prefix("Greeting: ")
        {
            greeted.push(text.to_owned());
        }
    }
    greeted.sort();
    assert_eq!(greeted, vec!["hello shop-a", "hello shop-b"]);
    assert!(json_lines >= 2);
    // The excluded namespaces were never handled (their objects got no finalizer).
    for ns in ["shop-secret", "other"] {
        let api: Api<Greeting> = Api::namespaced(client.clone(), ns);
        let object = api.get("hi").await.expect("still there");
        assert!(object.metadata.finalizers.is_none(), "{ns} was handled");
    }
    // SIGTERM: a graceful stop with exit code 0.
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
    cluster.shutdown().await;
}

#[test]
fn crd_prints_the_custom_resource_definition() {
    let output = Command::new(BINARY)
        .arg("crd")
        .output()
        .expect("greeting crd");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let crd: Value = serde_saphyr::from_str(text.trim_start_matches("---\n")).expect("yaml");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "greetings.example.com");
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"],
        json!(["message"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_are_accepted_by_kubectl_apply() {
    let cluster = TestCluster::start().await.expect("cluster");
    let dir = std::env::temp_dir().join(format!("greeting-manifests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).expect("kubeconfig");
    let manifests = Command::new(BINARY)
        .args([
            "manifests",
            "--image",
            "greeting:test",
            "--namespace",
            "greeting-system",
        ])
        .output()
        .expect("greeting manifests");
    assert!(manifests.status.success());
    let file = dir.join("manifests.yaml");
    std::fs::write(&file, &manifests.stdout).expect("write manifests");
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "/usr/bin/kubectl".into());
    let apply = {
        let (kubectl, kubeconfig, file) = (kubectl.clone(), kubeconfig.clone(), file.clone());
        tokio::task::spawn_blocking(move || {
            Command::new(kubectl)
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["apply", "-f"])
                .arg(file)
                .output()
        })
        .await
        .expect("join")
        .expect("kubectl runs (is kubectl at /usr/bin/kubectl or KUBECTL?)")
    };
    let stdout = String::from_utf8_lossy(&apply.stdout);
    assert!(
        apply.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    for line in [
        "namespace/greeting-system created",
        "customresourcedefinition.apiextensions.k8s.io/greetings.example.com created",
        "serviceaccount/greeting created",
        "clusterrole.rbac.authorization.k8s.io/greeting created",
        "clusterrolebinding.rbac.authorization.k8s.io/greeting created",
        "deployment.apps/greeting created",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    cluster.shutdown().await;
}
