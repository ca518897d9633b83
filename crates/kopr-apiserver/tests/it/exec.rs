//! The streaming pod subresources through kube-rs (`ws` feature): exec
//! with stdout, stderr, stdin and exit status over `v5.channel.k8s.io`,
//! the simulated container's files and environment, attach, port-forward
//! over `v4.channel.k8s.io`, the errors kube gives, and discovery.

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, AttachParams, PostParams};
use kube::runtime::conditions::is_pod_running;
use kube::runtime::wait::await_condition;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Awaits `f`, failing the test after 20 s.
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(std::time::Duration::from_secs(20), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done in 20 s"),
    }
}

async fn run_pod(pods: &Api<Pod>, name: &str, spec: serde_json::Value) {
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        await_condition(pods.clone(), name, is_pod_running()),
    )
    .await
    .expect("pod runs in time")
    .unwrap();
}

/// Runs a command; returns stdout, stderr and the final status.
async fn exec(
    pods: &Api<Pod>,
    name: &str,
    cmd: &[&str],
    input: Option<&str>,
) -> (String, String, serde_json::Value) {
    let ap = AttachParams::default().stdin(input.is_some());
    let mut p = pods
        .exec(name, cmd.to_vec(), &ap)
        .await
        .expect("exec starts");
    if let Some(text) = input {
        let mut stdin = p.stdin().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.shutdown().await.unwrap();
    }
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = p.stdout().unwrap();
    let mut stderr = p.stderr().unwrap();
    let status = p.take_status().unwrap();
    let (a, b) = within("exec output", async {
        tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        )
    })
    .await;
    a.unwrap();
    b.unwrap();
    let status = within("exec status", status).await.expect("a status");
    let mut status = serde_json::to_value(status).unwrap();
    // k8s-openapi adds the type fields; the server sends none.
    if let Some(o) = status.as_object_mut() {
        o.remove("kind");
        o.remove("apiVersion");
    }
    (out, err, status)
}

#[tokio::test]
async fn exec_runs_commands_in_simulated_containers() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "cfg"}, "data": {"greeting": "hello"}}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    run_pod(
        &pods,
        "box",
        json!({
            "containers": [{"name": "c", "image": "busybox", "env": [{"name": "FOO", "value": "bar"}],
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}],
            "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]
        }),
    )
    .await;

    let (out, err, status) = exec(&pods, "box", &["echo", "hi"], None).await;
    assert_eq!((out.as_str(), err.as_str()), ("hi\n", ""));
    assert_eq!(status, json!({"metadata": {}, "status": "Success"}));

    let (out, err, status) = exec(
        &pods,
        "box",
        &["sh", "-c", "echo out; echo err >&2; exit 3"],
        None,
    )
    .await;
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));
    assert_eq!(
        status,
        json!({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": "command terminated with non-zero exit code: command terminated with exit code 3",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}})
    );

    // stdin through `cat`, closed with v5's close signal.
    let (out, _, status) = exec(&pods, "box", &["cat"], Some("from stdin\n")).await;
    assert_eq!(out, "from stdin\n");
    assert_eq!(status["status"], "Success");

    // The container's files, environment and scratch space.
    let sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    let (out, ..) = exec(
        &pods,
        "box",
        &["cat", &format!("{sa}/namespace"), "/etc/cfg/greeting"],
        None,
    )
    .await;
    assert_eq!(out, "defaulthello");
    let (out, ..) = exec(&pods, "box", &["ls", sa], None).await;
    assert_eq!(out, "ca.crt\nnamespace\ntoken\n");
    let (out, ..) = exec(
        &pods,
        "box",
        &[
            "sh",
            "-c",
            "echo $FOO; hostname; echo x > /tmp/f && cat /tmp/f",
        ],
        None,
    )
    .await;
    assert_eq!(out, "bar\nbox\nx\n");
    let (out, ..) = exec(&pods, "box", &["cat", "/tmp/f"], None).await;
    assert_eq!(
        out, "x\n",
        "the scratch area lasts as long as the container"
    );
    let (_, err, status) = exec(
        &pods,
        "box",
        &["sh", "-c", "echo no > /etc/cfg/greeting"],
        None,
    )
    .await;
    assert_eq!(
        err,
        "sh: can't create /etc/cfg/greeting: Read-only file system\n"
    );
    assert_eq!(status["details"]["causes"][0]["message"], "1");
    let (_, err, status) = exec(&pods, "box", &["nope"], None).await;
    assert_eq!(err, "nope: command not found\n");
    assert_eq!(status["details"]["causes"][0]["message"], "127");
}

#[tokio::test]
async fn exec_errors_are_kubes() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    run_pod(
        &pods,
        "one",
        json!({"containers": [{"name": "c", "image": "busybox"}]}),
    )
    .await;

    let ap = AttachParams::default().container("x");
    let e = common::status_of(
        pods.exec("one", ["true"], &ap)
            .await
            .err()
            .expect("refused"),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "container x is not valid for pod one")
    );
    let e = common::status_of(
        pods.exec("missing", ["true"], &AttachParams::default())
            .await
            .err()
            .expect("refused"),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "pods \"missing\" not found")
    );

    // A container that does not run: the translator's status after the upgrade.
    let pending: Pod = serde_json::from_value(
        json!({"metadata": {"name": "stuck"}, "spec": {"containers": [{"name": "c", "image": "busybox:missing"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pending).await.unwrap();
    let scheduled = |p: Option<&Pod>| {
        p.and_then(|p| p.spec.as_ref())
            .and_then(|s| s.node_name.as_ref())
            .is_some()
    };
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        await_condition(pods.clone(), "stuck", scheduled),
    )
    .await
    .expect("scheduled in time")
    .unwrap();
    let (_, _, status) = exec(&pods, "stuck", &["true"], None).await;
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(status["code"], 500);
    assert_eq!(
        status["message"],
        "Internal error occurred: unable to upgrade connection: container not found (\"c\")"
    );

    // Discovery lists the subresources as kube does.
    let (_, _, body) = common::raw(&f.client, "GET", "/api/v1", None, Vec::new()).await;
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let exec = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/exec")
        .expect("pods/exec listed");
    assert_eq!(exec["kind"], "PodExecOptions");
    assert_eq!(exec["verbs"], json!(["create", "get"]));
}

#[tokio::test]
async fn attach_and_port_forward() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    run_pod(
        &pods,
        "web",
        json!({"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}),
    )
    .await;

    // attach: the simulated main process echoes stdin.
    let ap = AttachParams::default().stdin(true).stderr(false);
    let mut p = pods.attach("web", &ap).await.unwrap();
    let mut stdin = p.stdin().unwrap();
    let mut stdout = p.stdout().unwrap();
    stdin.write_all(b"ping\n").await.unwrap();
    let mut buf = [0u8; 5];
    within("attach echo", stdout.read_exact(&mut buf))
        .await
        .unwrap();
    assert_eq!(&buf, b"ping\n");
    stdin.shutdown().await.unwrap();
    let status = within("attach status", p.take_status().unwrap())
        .await
        .unwrap();
    assert_eq!(status.status.as_deref(), Some("Success"));

    // port-forward: an echo, an HTTP answer, and a port nobody declares.
    let mut pf = pods.portforward("web", &[80, 81]).await.unwrap();
    let mut conn = pf.take_stream(80).unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: web\r\n\r\n")
        .await
        .unwrap();
    let mut answer = vec![0u8; 256];
    let n = within("forwarded answer", conn.read(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]).into_owned();
    assert!(
        answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with("\r\n\r\nok"),
        "{answer}"
    );
    let refused = within("refusal", pf.take_error(81).unwrap())
        .await
        .expect("an error");
    assert!(
        refused.starts_with("error forwarding port 81 to pod ")
            && refused.contains("connect: connection refused"),
        "{refused}"
    );
    drop(conn);
    pf.abort();
}
