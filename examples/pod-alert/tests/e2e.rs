//! The pod alert operator against an in-process API server with its simulated nodes and
//! kubelet, and a local webhook receiver: pods in ImagePullBackOff, CrashLoopBackOff and
//! Unschedulable reported in the Orchestr's status with their container issues and logs, one
//! Warning Event per problematic pod, the webhook told as the set changes (and when all is
//! well again), the timer following the pods; a missing setting failing for good while other
//! Orchestrs are served; the check switched off; the scan limited to one namespace; a refusing
//! webhook reported and retried; and the `manifests` RBAC.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kopr::kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kopr::testing::{TestCluster, capture_logs, manifest_documents, wait_for};
use pod_alert::pods::PodAlert;
use pod_alert::{Config, Orchestr, OrchestrStatus};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// A webhook receiver: keeps every JSON document posted to it; refuses them with 503 while
/// `refusing` is set.
#[derive(Default)]
struct Receiver {
    documents: Mutex<Vec<Value>>,
    refusing: AtomicBool,
}

impl Receiver {
    fn documents(&self) -> Vec<Value> {
        self.documents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits for a document satisfying `condition`; returns it.
    async fn wait_for(&self, what: &str, condition: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(document) = self.documents().into_iter().find(|d| condition(d)) {
                return document;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the webhook never got {what}; it got {:#?}",
                self.documents()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn receive(State(receiver): State<Arc<Receiver>>, Json(document): Json<Value>) -> StatusCode {
    if receiver.refusing.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    receiver
        .documents
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(document);
    StatusCode::OK
}

/// Serves a receiver on a free loopback port for the rest of the test; returns it and its URL.
async fn webhook_receiver() -> (Arc<Receiver>, String) {
    let receiver = Arc::new(Receiver::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (receiver, format!("http://{address}/hook"))
}

/// Installs the CRD and starts the operator.
async fn start(cluster: &TestCluster, config: Config) -> kopr::testing::RunningOperator {
    let operator = pod_alert::operator(&config);
    operator
        .install_crds(&cluster.client())
        .await
        .expect("CRD installs");
    cluster
        .run_as_service_account(operator, &pod_alert::manifests())
        .await
        .expect("runs as its ServiceAccount")
}

/// The Orchestrs of `default` as written, unknown fields included.
fn raw_orchestrs(cluster: &TestCluster) -> Api<DynamicObject> {
    Api::namespaced_with(
        cluster.client(),
        "default",
        &ApiResource::erase::<Orchestr>(&()),
    )
}

/// Creates an Orchestr from JSON (so that fields the Rust type lacks are sent too).
async fn create_orchestr(cluster: &TestCluster, name: &str, spec: Value) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kopf.dev/v1",
        "kind": "Orchestr",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("an Orchestr");
    raw_orchestrs(cluster)
        .create(&PostParams::default(), &object)
        .await
        .expect("created");
}

async fn create_pod(cluster: &TestCluster, namespace: &str, name: &str, image: &str) {
    let pods: Api<Pod> = Api::namespaced(cluster.client(), namespace);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod created");
}

fn status_of(orchestr: Option<&Orchestr>) -> OrchestrStatus {
    orchestr.and_then(|o| o.status.clone()).unwrap_or_default()
}

fn alert<'a>(status: &'a OrchestrStatus, name: &str) -> Option<&'a PodAlert> {
    status.alerts.iter().find(|a| a.name == name)
}

/// Whether the alert about `name` has a container issue with `reason`.
fn has_issue(status: &OrchestrStatus, name: &str, reason: &str) -> bool {
    alert(status, name).is_some_and(|a| a.issues.iter().any(|i| i.reason == reason))
}

/// The first container's waiting reason.
fn waiting_reason(pod: Option<&Pod>) -> Option<String> {
    pod?.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

async fn wait_waiting(pods: &Api<Pod>, name: &str, reason: &'static str) {
    wait_for(pods, name, WAIT, move |pod: Option<&Pod>| {
        waiting_reason(pod).as_deref() == Some(reason)
    })
    .await
    .unwrap_or_else(|e| panic!("{name} never waited in {reason}: {e}"));
}

/// The Warning events about the Orchestr `name` with `reason`.
async fn warnings(cluster: &TestCluster, name: &str, reason: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let list = events
        .list(&Default::default())
        .await
        .expect("events listed");
    list.items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name)
                && e.type_.as_deref() == Some("Warning")
                && e.reason.as_deref() == Some(reason)
        })
        .filter_map(|e| e.message)
        .collect()
}

/// Waits for a Warning event about `name` with `reason` whose message contains `text`.
async fn wait_warning(cluster: &TestCluster, name: &str, reason: &str, text: &str) -> String {
    cluster
        .wait_for_warning("default", name, WAIT, |e| {
            e.reason.as_deref() == Some(reason)
                && e.message.as_deref().is_some_and(|m| m.contains(text))
        })
        .await
        .unwrap_or_else(|e| panic!("no {reason} warning about {name} with {text:?}: {e}"))
        .message
        .unwrap_or_default()
}

fn alert_names(document: &Value) -> Vec<&str> {
    document["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["name"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pull_and_crash_loop_pods_are_reported_and_followed() {
    let logs = capture_logs();
    let (receiver, url) = webhook_receiver().await;
    let cluster = TestCluster::start().await.expect("cluster starts");
    let config = Config {
        check_interval: 1,
        webhook_url: Some(url),
        log_lines: 5,
        ..Config::default()
    };
    let running = start(&cluster, config).await;

    // The pods get into trouble first, so that the first check finds them in it.
    cluster
        .apply(samples().join("pods-with-problems.yaml"))
        .await
        .expect("applied");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    wait_waiting(&pods, "web-missing-image", "ImagePullBackOff").await;
    wait_waiting(&pods, "worker-crashing", "CrashLoopBackOff").await;
    wait_for(&pods, "web-healthy", WAIT, |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| c.iter().all(|c| c.ready))
    })
    .await
    .expect("the healthy pod runs and is ready");

    cluster
        .apply(samples().join("pod-watch.yaml"))
        .await
        .expect("applied");
    let orchestrs: Api<Orchestr> = Api::namespaced(cluster.client(), "default");
    let reported = wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        let status = status_of(o);
        has_issue(&status, "web-missing-image", "ImagePullBackOff")
            && has_issue(&status, "worker-crashing", "CrashLoopBackOff")
            && alert(&status, "too-big").is_some()
    })
    .await
    .expect("the problematic pods are reported")
    .expect("exists");
    let status = status_of(Some(&reported));
    assert!(
        alert(&status, "web-healthy").is_none(),
        "{:#?}",
        status.alerts
    );
    assert_eq!(status.problems, Some(3));
    assert!(status.checked_at.is_some());
    assert_eq!(
        status.message.as_deref(),
        Some("4 pods checked in all namespaces, 3 with problems")
    );

    let missing = alert(&status, "web-missing-image").expect("reported");
    assert_eq!(
        (missing.namespace.as_str(), missing.phase.as_str()),
        ("default", "Pending")
    );
    let issue = &missing.issues[0];
    assert_eq!(
        (issue.container.as_str(), issue.state.as_str()),
        ("web", "waiting")
    );
    assert_eq!(
        issue.message.as_deref(),
        Some("Back-off pulling image \"nginx:missing\"")
    );
    assert!(
        issue.logs.is_empty(),
        "a container that never ran has no log"
    );

    let crashing = alert(&status, "worker-crashing").expect("reported");
    assert_eq!(
        crashing.phase, "Running",
        "a crash loop keeps the pod Running"
    );
    let issue = &crashing.issues[0];
    assert_eq!(issue.exit_code, Some(1));
    assert!(issue.restart_count >= 1, "{issue:?}");
    assert!(
        issue
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("back-off ") && m.contains("container=worker")),
        "{issue:?}"
    );
    assert!(issue.logs.len() <= 5, "--log-lines 5: {:?}", issue.logs);
    assert_eq!(
        issue.logs.last().map(String::as_str),
        Some("container worker exited with code 1"),
        "{:?}",
        issue.logs
    );
    assert!(
        issue
            .logs
            .iter()
            .any(|l| l == "container worker failed: simulated error (image tag :crash)"),
        "{:?}",
        issue.logs
    );

    let unschedulable = alert(&status, "too-big").expect("reported");
    assert_eq!(unschedulable.phase, "Pending");
    assert_eq!(unschedulable.reason.as_deref(), Some("Unschedulable"));
    assert!(
        unschedulable
            .message
            .as_deref()
            .is_some_and(|m| m.contains("Insufficient cpu")),
        "{unschedulable:?}"
    );

    // A Warning Event per problematic pod, and log lines.
    for text in [
        "pod default/web-missing-image is Pending: container web is waiting: ",
        "pod default/worker-crashing is ",
        "pod default/too-big is Pending: Unschedulable (",
    ] {
        wait_warning(&cluster, "pod-watch", "PodAlert", text).await;
        logs.wait_for(&["Alert: ", text], WAIT)
            .await
            .expect("logged");
    }
    logs.wait_for(
        &[
            "4 pods checked in all namespaces, 3 with problems",
            "default/pod-watch",
        ],
        WAIT,
    )
    .await
    .expect("the check is logged");

    // The webhook hears about all three, in a Slack-friendly document.
    let document = receiver
        .wait_for("the three pods", |d| {
            let names = alert_names(d);
            ["too-big", "web-missing-image", "worker-crashing"]
                .iter()
                .all(|n| names.contains(n))
        })
        .await;
    assert_eq!(
        document["orchestr"],
        json!({"namespace": "default", "name": "pod-watch"})
    );
    assert_eq!(document["problems"], 3);
    let text = document["text"].as_str().expect("text");
    assert!(
        text.starts_with("pod-alert default/pod-watch: 3 pods have problems\n- pod default/too-big is Pending: Unschedulable"),
        "{text}"
    );
    assert!(!alert_names(&document).contains(&"web-healthy"));
    let told = wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        status_of(o).notified.is_some_and(|n| n.len() == 3)
    })
    .await
    .expect("the status says what the webhook was told")
    .expect("exists");
    assert_eq!(
        status_of(Some(&told)).notified,
        Some(vec![
            "default/too-big".to_owned(),
            "default/web-missing-image".to_owned(),
            "default/worker-crashing".to_owned()
        ])
    );

    // Later checks do not repeat the event of a pod that stays in trouble.
    let checked = status_of(Some(&told)).checked_at;
    wait_for(
        &orchestrs,
        "pod-watch",
        WAIT,
        move |o: Option<&Orchestr>| status_of(o).checked_at != checked,
    )
    .await
    .expect("the timer checks again");
    let about_missing = warnings(&cluster, "pod-watch", "PodAlert")
        .await
        .into_iter()
        .filter(|m| m.contains("default/web-missing-image"))
        .count();
    assert_eq!(about_missing, 1, "one event while the pod stays in trouble");

    // The timer follows the pods: once the broken ones are gone, all is well again.
    for name in ["web-missing-image", "worker-crashing", "too-big"] {
        pods.delete(name, &DeleteParams::default())
            .await
            .expect("deleted");
    }
    let cleared = wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        let status = status_of(o);
        status.problems == Some(0) && status.alerts.is_empty()
    })
    .await
    .expect("the timer clears the alerts")
    .expect("exists");
    assert!(
        status_of(Some(&cleared))
            .message
            .is_some_and(|m| m.ends_with("checked in all namespaces, none with problems")),
        "{:?}",
        status_of(Some(&cleared)).message
    );
    let clear = receiver
        .wait_for("the all-clear", |d| d["problems"] == 0)
        .await;
    assert_eq!(
        clear["text"],
        "pod-alert default/pod-watch: all pods are running again"
    );
    assert_eq!(clear["alerts"], json!([]));

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_setting_fails_for_good_while_others_are_served() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let config = Config {
        pod_namespace: Some("team-a".into()),
        ..Config::default()
    };
    let running = start(&cluster, config).await;
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "team-a"}})).expect("a namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
    create_pod(&cluster, "team-a", "api", "registry.local/api:missing").await;
    create_pod(
        &cluster,
        "default",
        "elsewhere",
        "registry.local/api:missing",
    )
    .await;
    // Past "ContainerCreating", so that the first check reports them at once.
    for (namespace, name) in [("team-a", "api"), ("default", "elsewhere")] {
        let pods: Api<Pod> = Api::namespaced(cluster.client(), namespace);
        wait_for(&pods, name, WAIT, |pod: Option<&Pod>| {
            waiting_reason(pod).is_some_and(|r| r.contains("ImagePull"))
        })
        .await
        .unwrap_or_else(|e| panic!("{name} never failed to pull: {e}"));
    }

    // The schema refuses a setting of the wrong type outright.
    let refused = kopr::apply::apply_paths(
        &cluster.client(),
        &[samples().join("invalid/wrong-type.yaml")],
    )
    .await
    .expect("loads");
    let error = refused[0].result.as_ref().expect_err("refused").to_string();
    assert!(
        error.contains("spec.alerts.checkRunningPods") && error.contains("boolean"),
        "{error}"
    );

    // Without the setting: a permanent failure, a Warning event and status.message.
    cluster
        .apply(samples().join("invalid/no-alert-setting.yaml"))
        .await
        .expect("applied");
    let message = wait_warning(
        &cluster,
        "no-alert-setting",
        "HandlerFailed",
        "alert must be set",
    )
    .await;
    assert!(message.contains("failed permanently"), "{message}");
    let orchestrs: Api<Orchestr> = Api::namespaced(cluster.client(), "default");
    wait_for(
        &orchestrs,
        "no-alert-setting",
        WAIT,
        |o: Option<&Orchestr>| status_of(o).message.as_deref() == Some("alert must be set"),
    )
    .await
    .expect("status.message says why");

    // The others are served: one with the check off, one checking team-a only.
    create_orchestr(
        &cluster,
        "check-off",
        json!({"alerts": {"checkRunningPods": false}}),
    )
    .await;
    create_orchestr(
        &cluster,
        "team-a-watch",
        json!({"alerts": {"checkRunningPods": true}, "team": "a"}),
    )
    .await;
    let off = wait_for(&orchestrs, "check-off", WAIT, |o: Option<&Orchestr>| {
        status_of(o).message.is_some()
    })
    .await
    .expect("the check-off Orchestr is served")
    .expect("exists");
    assert_eq!(
        status_of(Some(&off)).message.as_deref(),
        Some("the pod check is off")
    );
    assert!(status_of(Some(&off)).alerts.is_empty());

    let watched = wait_for(&orchestrs, "team-a-watch", WAIT, |o: Option<&Orchestr>| {
        status_of(o).problems.is_some()
    })
    .await
    .expect("the team-a Orchestr is served")
    .expect("exists");
    let found = status_of(Some(&watched));
    let keys: Vec<String> = found.alerts.iter().map(PodAlert::key).collect();
    assert_eq!(keys, ["team-a/api"], "only team-a's pods are checked");
    assert_eq!(
        found.message.as_deref(),
        Some("1 pod checked in namespace team-a, 1 with problems")
    );
    wait_warning(
        &cluster,
        "team-a-watch",
        "PodAlert",
        "pod team-a/api is Pending",
    )
    .await;
    // Unknown spec fields are kept as written.
    let object = raw_orchestrs(&cluster)
        .get("team-a-watch")
        .await
        .expect("read");
    assert_eq!(object.data["spec"]["team"], "a");
    assert!(
        warnings(&cluster, "check-off", "HandlerFailed")
            .await
            .is_empty(),
        "the check-off Orchestr did not fail"
    );

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_webhook_is_reported_and_told_again_later() {
    let (receiver, url) = webhook_receiver().await;
    receiver.refusing.store(true, Ordering::SeqCst);
    let cluster = TestCluster::start().await.expect("cluster starts");
    let config = Config {
        check_interval: 1,
        webhook_url: Some(url.clone()),
        ..Config::default()
    };
    let running = start(&cluster, config).await;
    create_pod(&cluster, "default", "stuck", "example/stuck:missing").await;
    cluster
        .apply(samples().join("pod-watch.yaml"))
        .await
        .expect("applied");

    let message = wait_warning(&cluster, "pod-watch", "WebhookFailed", "answered 503").await;
    assert_eq!(message, format!("the webhook at {url} answered 503: "));
    let orchestrs: Api<Orchestr> = Api::namespaced(cluster.client(), "default");
    let failed = wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        status_of(o)
            .webhook
            .is_some_and(|w| w.contains("answered 503"))
    })
    .await
    .expect("status.webhook says why")
    .expect("exists");
    let failed = status_of(Some(&failed));
    assert!(
        alert(&failed, "stuck").is_some(),
        "the alerts are kept anyway"
    );
    assert_eq!(failed.notified, None);

    // The next check tells the webhook once it accepts.
    receiver.refusing.store(false, Ordering::SeqCst);
    let document = receiver
        .wait_for("the stuck pod", |d| alert_names(d) == ["stuck"])
        .await;
    assert_eq!(document["problems"], 1);
    wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        status_of(o).notified == Some(vec!["default/stuck".to_owned()])
    })
    .await
    .expect("the status records the delivery");

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}

#[test]
fn manifests_grant_reading_pods_and_their_logs() {
    let documents = manifest_documents(
        env!("CARGO_BIN_EXE_pod-alert"),
        &[
            "--namespace",
            "monitoring",
            "--",
            "--check-interval",
            "30",
            "--webhook-url",
            "https://hooks.example/alerts",
        ],
    )
    .expect("manifests");
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
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
    let crd = &documents[1];
    assert_eq!(crd["metadata"]["name"], "orchestrs.kopf.dev");
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    let rules = documents[3]["rules"].as_array().expect("rules");
    let grants = |resource: &str, verb: &str| {
        rules.iter().any(|rule| {
            rule["apiGroups"] == json!([""])
                && rule["resources"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r == resource))
                && rule["verbs"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v == verb))
        })
    };
    assert!(grants("pods", "list"), "{rules:#?}");
    assert!(grants("pods/log", "get"), "{rules:#?}");
    // Read-only: nothing lets the operator change pods.
    for verb in ["create", "patch", "delete", "update"] {
        assert!(!grants("pods", verb), "{verb}: {rules:#?}");
    }
    assert!(grants("events", "create"), "{rules:#?}");
    assert_eq!(
        rules[0],
        json!({"apiGroups": ["kopf.dev"], "resources": ["orchestrs"], "verbs": ["get", "list", "watch", "patch"]})
    );
    assert_eq!(
        rules[1],
        json!({"apiGroups": ["kopf.dev"], "resources": ["orchestrs/status"], "verbs": ["patch"]})
    );
    let container = &documents[8]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        json!([
            "run",
            "-A",
            "--health-listen",
            "0.0.0.0:8081",
            "--metrics-listen",
            "0.0.0.0:8080",
            "--check-interval",
            "30",
            "--webhook-url",
            "https://hooks.example/alerts"
        ])
    );
    assert_eq!(documents[8]["metadata"]["namespace"], "monitoring");

    // A webhook URL that is not http(s) is refused on the command line.
    let refused = Command::new(env!("CARGO_BIN_EXE_pod-alert"))
        .args(["manifests", "--", "--webhook-url", "ftp://example/"])
        .output()
        .expect("pod-alert runs");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("only http and https URLs are supported"),
        "{stderr}"
    );
}

/// The sample edited and applied again with kubectl, client-side and server-side: the check
/// switched off and on again reaches the object, and the timer (this operator's handler of
/// changes) reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_switches_the_check() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let config = Config {
        check_interval: 1,
        ..Config::default()
    };
    let running = start(&cluster, config).await;
    let kubectl = cluster.kubectl().expect("kubectl");
    let orchestrs: Api<Orchestr> = Api::namespaced(cluster.client(), "default");
    let sample = samples().join("pod-watch.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        "orchestr.kopf.dev/pod-watch created\n"
    );
    let checked = |o: Option<&Orchestr>| {
        let message = status_of(o).message;
        message.is_some() && message.as_deref() != Some(pod_alert::CHECK_OFF)
    };
    wait_for(&orchestrs, "pod-watch", WAIT, checked)
        .await
        .expect("checked");

    let off = kopr::testing::edited(
        &sample,
        &[("checkRunningPods: true", "checkRunningPods: false")],
    )
    .expect("edit");
    assert_eq!(
        kubectl.apply(&off, false).await.expect("applied again"),
        "orchestr.kopf.dev/pod-watch configured\n"
    );
    let switched_off = wait_for(&orchestrs, "pod-watch", WAIT, |o: Option<&Orchestr>| {
        status_of(o).message.as_deref() == Some(pod_alert::CHECK_OFF)
    })
    .await
    .expect("the check is off")
    .expect("exists");
    assert_eq!(pod_alert::setting(&switched_off), Some(false));

    assert_eq!(
        kubectl
            .apply(&text, true)
            .await
            .expect("applied server-side"),
        "orchestr.kopf.dev/pod-watch serverside-applied\n"
    );
    let switched_on = wait_for(&orchestrs, "pod-watch", WAIT, checked)
        .await
        .expect("the check is on again")
        .expect("exists");
    assert_eq!(pod_alert::setting(&switched_on), Some(true));

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}
