//! kubectl end to end against a `kopr apiserver` child process, asserting
//! the lines kubectl prints as it would against a real cluster.

use crate::support;

use crate::support::{Server, rows};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  labels:\n    app: demo\ndata:\n  greeting: hello\n";

#[test]
fn kubectl_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // Tables from the server.
    let ns = server.ok(&["get", "namespaces"]);
    let table = rows(&ns);
    assert_eq!(table[0], ["NAME", "STATUS", "AGE"]);
    for name in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert!(
            table.iter().any(|r| r[0] == name && r[1] == "Active"),
            "{ns}"
        );
    }

    // Client-side apply: created, unchanged, configured.
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], CM),
        "configmap/demo created\n"
    );
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], CM),
        "configmap/demo unchanged\n"
    );
    let changed = CM.replace("hello", "bonjour");
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], &changed),
        "configmap/demo configured\n"
    );

    let got = rows(&server.ok(&["get", "configmap", "demo"]));
    assert_eq!(got[0], ["NAME", "DATA", "AGE"]);
    assert_eq!(&got[1][..2], ["demo", "1"]);
    assert_eq!(
        server.ok(&["get", "cm", "demo", "-o", "jsonpath={.data.greeting}"]),
        "bonjour"
    );
    let json: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "cm", "demo", "-o", "json"])).unwrap();
    assert_eq!(json["metadata"]["labels"]["app"], "demo");
    assert!(
        server
            .ok(&["get", "cm", "demo", "-o", "yaml"])
            .contains("greeting: bonjour")
    );
    assert!(
        server
            .ok(&["get", "cm", "-l", "app=demo", "-o", "name"])
            .contains("configmap/demo")
    );

    // Server-side apply.
    let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n";
    assert_eq!(
        server.ok_stdin(&["apply", "--server-side", "-f", "-"], ssa),
        "configmap/ssa serverside-applied\n"
    );
    let managed = server.ok(&[
        "get",
        "cm",
        "ssa",
        "-o",
        "jsonpath={.metadata.managedFields[0].manager}",
    ]);
    assert_eq!(managed, "kubectl");

    // Patches of every type.
    assert_eq!(
        server.ok(&[
            "patch",
            "cm",
            "demo",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"m":"1"}}"#
        ]),
        "configmap/demo patched\n"
    );
    assert_eq!(
        server.ok(&[
            "patch",
            "cm",
            "demo",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/data/j","value":"2"}]"#
        ]),
        "configmap/demo patched\n"
    );
    assert_eq!(
        server.ok(&["patch", "cm", "demo", "-p", r#"{"data":{"s":"3"}}"#]),
        "configmap/demo patched\n"
    );
    assert_eq!(
        server.ok(&[
            "get",
            "cm",
            "demo",
            "-o",
            "jsonpath={.data.m}{.data.j}{.data.s}"
        ]),
        "123"
    );

    // Replace.
    let replaced = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  only: one\n";
    assert_eq!(
        server.ok_stdin(&["replace", "-f", "-"], replaced),
        "configmap/demo replaced\n"
    );

    // Describe.
    let described = server.ok(&["describe", "cm", "demo"]);
    assert!(described.contains("Name:         demo"), "{described}");
    assert!(described.contains("Namespace:    default"), "{described}");

    // api-resources from discovery.
    let resources = server.ok(&["api-resources"]);
    let line = resources
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .expect("configmaps listed");
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["configmaps", "cm", "v1", "true", "ConfigMap"]
    );
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("deployments ") && l.contains("apps/v1"))
    );

    // Delete and wait for deletion.
    assert_eq!(
        server.ok(&["delete", "cm", "demo"]),
        "configmap \"demo\" deleted\n"
    );
    let out = server.kubectl(&["get", "cm", "demo"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (NotFound): configmaps \"demo\" not found\n"
    );
    let waiter = std::thread::spawn({
        let kubeconfig = server.kubeconfig.clone();
        move || {
            std::process::Command::new(support::kubectl_path())
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["wait", "--for=delete", "cm/ssa", "--timeout=20s"])
                .output()
                .unwrap()
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.ok(&["delete", "cm", "ssa"]);
    let waited = waiter.join().unwrap();
    assert!(
        waited.status.success(),
        "{}",
        String::from_utf8_lossy(&waited.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout),
        "configmap/ssa condition met\n"
    );
}

#[test]
fn kubectl_errors_match_a_real_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let out = server.kubectl(&["create", "configmap", "x", "-n", "missing"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: failed to create configmap: namespaces \"missing\" not found\n"
    );
    let out = server.kubectl(&["delete", "namespace", "kube-system"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (Forbidden): namespaces \"kube-system\" is forbidden: this namespace may not be deleted\n"
    );
    // With a wrong token kubectl reports Unauthorized.
    let out = std::process::Command::new(support::kubectl_path())
        .args([
            "--server",
            &server.url,
            "--insecure-skip-tls-verify",
            "--token",
            "wrong",
            "get",
            "pods",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: You must be logged in to the server (Unauthorized)\n"
    );
    // Typed kubectl commands send protobuf bodies.
    assert_eq!(
        server.ok(&["create", "namespace", "team-a"]),
        "namespace/team-a created\n"
    );
    assert_eq!(
        server.ok(&[
            "create",
            "configmap",
            "from-lit",
            "-n",
            "team-a",
            "--from-literal=k=v"
        ]),
        "configmap/from-lit created\n"
    );
    assert_eq!(
        server.ok(&[
            "get",
            "cm",
            "from-lit",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.k}"
        ]),
        "v"
    );
    assert_eq!(
        server.ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2"
        ]),
        "deployment.apps/web created\n"
    );
    assert_eq!(
        server.ok(&["scale", "deployment", "web", "--replicas=4"]),
        "deployment.apps/web scaled\n"
    );
    assert_eq!(
        server.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]),
        "4"
    );
    assert_eq!(
        server.ok(&["delete", "namespace", "team-a"]),
        "namespace \"team-a\" deleted\n"
    );
}

#[test]
fn sigterm_stops_cleanly_and_data_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    server.ok(&["create", "configmap", "kept", "--from-literal=a=b"]);
    assert!(server.terminate(), "exit status 0 on SIGTERM");
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.ok(&["get", "cm", "kept", "-o", "jsonpath={.data.a}"]),
        "b"
    );
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: nginx}]\n";

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\nspec:\n  nodeName: node-1\n  containers:\n  - name: c\n    image: nginx:1.27\n";

fn spawn_kubectl(server: &Server, args: &[&str]) -> std::process::Child {
    std::process::Command::new(support::kubectl_path())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kubectl_watch_wait_explain_logs_and_cascades() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // get -w prints a row per change, headers once.
    let watcher = spawn_kubectl(&server, &["get", "cm", "-w", "--request-timeout=3s"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    server.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\ndata: {a: b}\n",
    );
    server.ok(&["patch", "cm", "watched", "-p", r#"{"data":{"c":"d"}}"#]);
    let out = watcher.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Every namespace also holds the cluster's kube-root-ca.crt, as in kube.
    let table: Vec<Vec<String>> = rows(&text)
        .into_iter()
        .filter(|row| row[0] != "kube-root-ca.crt")
        .collect();
    assert_eq!(table[0], ["NAME", "DATA", "AGE"], "{text}");
    assert_eq!(&table[1][..2], ["watched", "1"], "{text}");
    assert_eq!(&table[2][..2], ["watched", "2"], "{text}");

    // wait --for=condition sees a status condition appear.
    assert_eq!(
        server.ok_stdin(&["apply", "--server-side", "-f", "-"], DEPLOYMENT),
        "deployment.apps/web serverside-applied\n"
    );
    let waiter = spawn_kubectl(
        &server,
        &[
            "wait",
            "--for=condition=Available",
            "deploy/web",
            "--timeout=20s",
        ],
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let condition = r#"{"status":{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok"}]}}"#;
    server.ok(&[
        "patch",
        "deploy",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        condition,
    ]);
    let waited = waiter.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout),
        "deployment.apps/web condition met\n"
    );
    let table = rows(&server.ok(&["get", "deploy"]));
    assert_eq!(
        table[0],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );

    // explain reads the OpenAPI v3 documents.
    let explained = server.ok(&["explain", "configmaps"]);
    assert!(
        explained.starts_with("KIND:       ConfigMap\nVERSION:    v1\n"),
        "{explained}"
    );
    assert!(
        explained.contains("binaryData\t<map[string]string>"),
        "{explained}"
    );
    let nested = server.ok(&["explain", "deployments.spec.template"]);
    assert!(
        nested.contains("FIELD: template <PodTemplateSpec>"),
        "{nested}"
    );

    // Pods: table, describe, logs.
    assert_eq!(
        server.ok_stdin(&["apply", "-f", "-"], POD),
        "pod/p1 created\n"
    );
    let pods = rows(&server.ok(&["get", "pods"]));
    assert_eq!(pods[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(&pods[1][..4], ["p1", "0/1", "Pending", "0"]);
    let described = server.ok(&["describe", "pod", "p1"]);
    assert!(
        described.contains("Service Account:  default"),
        "{described}"
    );
    assert!(
        described.contains("Node:             node-1/"),
        "{described}"
    );
    // The service-account volume's lines widen kubectl's columns, as on a real cluster.
    assert!(
        described
            .lines()
            .any(|l| l.split_whitespace().eq(["QoS", "Class:", "BestEffort"])),
        "{described}"
    );
    assert!(
        described.contains("/var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-"),
        "{described}"
    );
    let logs = server.ok(&["logs", "p1"]);
    assert!(logs.contains("nginx:1.27"), "{logs}");
    assert_eq!(server.ok(&["logs", "p1", "--tail=1"]).lines().count(), 1);

    // Cascading deletes: orphan keeps the dependent, background and
    // foreground remove it.
    for (mode, child_survives) in [
        ("orphan", true),
        ("background", false),
        ("foreground", false),
    ] {
        let owner = format!("owner-{mode}");
        let child = format!("child-{mode}");
        server.ok_stdin(
            &["apply", "-f", "-"],
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {owner}\n"),
        );
        let uid = server.ok(&["get", "cm", &owner, "-o", "jsonpath={.metadata.uid}"]);
        let child_yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {child}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: true\n"
        );
        server.ok_stdin(&["apply", "-f", "-"], &child_yaml);
        let cascade = format!("--cascade={mode}");
        assert_eq!(
            server.ok(&["delete", "cm", &owner, &cascade]),
            format!("configmap \"{owner}\" deleted\n")
        );
        if child_survives {
            server.ok(&[
                "wait",
                "--for=delete",
                &format!("cm/{owner}"),
                "--timeout=20s",
            ]);
            let refs = server.ok(&[
                "get",
                "cm",
                &child,
                "-o",
                "jsonpath={.metadata.ownerReferences}",
            ]);
            assert_eq!(refs, "", "the orphan lost its owner reference");
        } else {
            server.ok(&[
                "wait",
                "--for=delete",
                &format!("cm/{child}"),
                "--timeout=20s",
            ]);
            server.ok(&[
                "wait",
                "--for=delete",
                &format!("cm/{owner}"),
                "--timeout=20s",
            ]);
        }
    }
}
