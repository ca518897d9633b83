//! The audit log: kube's audit.k8s.io/v1 events as JSON lines, at the level the policy gives,
//! with who, what, the answer and authorization's decision, and Secrets' data never in it.

use crate::common;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: [\"/api*\", \"/openapi*\", \"/version\"]
- level: RequestResponse
";

/// The events logged so far whose `pred` holds, waiting (bounded) for at least `count`.
fn events(path: &std::path::Path, count: usize, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let found: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is JSON"))
            .filter(|e| pred(e))
            .collect();
        if found.len() >= count || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server auditing by [`POLICY`] into `<dir>/audit.log`: the directory, the log's path, the
/// fixture.
async fn audited_server() -> (tempfile::TempDir, std::path::PathBuf, common::Fixture) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("audit.log");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy written");
    let mut config = kopr_apiserver::Config::ephemeral();
    config.audit_log_path = Some(log.clone());
    config.audit_policy_file = Some(policy);
    let f = common::start_with(config).await;
    (dir, log, f)
}

#[tokio::test]
async fn requests_are_audited_at_the_policys_level_without_secrets() {
    let (_dir, log, f) = audited_server().await;

    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "audited"}, "data": {"k": "v"}}))
            .expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let secrets: Api<Secret> = Api::namespaced(f.client.clone(), "default");
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("created");
    let anon = common::anonymous_client(&f.server).await;
    let (code, _, _) = common::raw(
        &anon,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 403);

    let created = events(&log, 1, |e| {
        e["objectRef"]["name"] == "audited" && e["verb"] == "create"
    });
    let e = created.first().expect("the create is logged");
    assert_eq!(e["kind"], "Event");
    assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(e["level"], "RequestResponse");
    assert_eq!(e["stage"], "ResponseComplete");
    assert_eq!(e["user"]["username"], "kopr-admin");
    assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
    assert_eq!(
        e["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "audited", "apiGroup": "", "apiVersion": "v1"})
    );
    assert_eq!(e["responseStatus"]["code"], 201);
    assert_eq!(e["requestObject"]["data"]["k"], "v");
    assert_eq!(e["responseObject"]["metadata"]["name"], "audited");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "allow");

    let secret_events = events(&log, 1, |e| e["objectRef"]["resource"] == "secrets");
    let e = secret_events
        .first()
        .expect("the secret's create is logged");
    assert_eq!(
        e["level"], "Metadata",
        "Secrets are never logged above Metadata"
    );
    assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none());
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        !text.contains("hunter2"),
        "a Secret's data reached the audit log"
    );
    assert!(
        !text.contains(f.server.token()),
        "a token reached the audit log"
    );

    let denied = events(&log, 1, |e| {
        e["user"]["username"] == "system:anonymous" && e["verb"] == "list"
    });
    let e = denied.first().expect("the denial is logged");
    assert_eq!(e["responseStatus"]["code"], 403);
    assert_eq!(e["responseStatus"]["reason"], "Forbidden");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "forbid");
    // The policy's None rule and omitted stage hold.
    assert!(
        events(&log, 0, |e| e["requestURI"] == "/api"
            || e["stage"] == "RequestReceived")
        .is_empty()
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&log).expect("log").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn admission_annotations_reach_the_audit_event() {
    let (_dir, log, f) = audited_server().await;
    let admission = |kind: &str, plural: &str| {
        let resource = kube::discovery::ApiResource {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<kube::api::DynamicObject>::all_with(f.client.clone(), &resource)
    };
    // A webhook that annotates, and a policy that audits and annotates.
    let webhook = common::webhook::serve(
        |_, _| json!({"allowed": true, "auditAnnotations": {"checked": "yes"}}),
    )
    .await;
    let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "annotating"},
        "webhooks": [{"name": "annotate.example.com",
            "clientConfig": {"url": format!("{}/a", webhook.url), "caBundle": webhook.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    admission(
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    )
    .create(
        &PostParams::default(),
        &serde_json::from_value(configuration).expect("configuration"),
    )
    .await
    .expect("configuration created");
    let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "owner"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [{"expression": "has(object.data) && 'owner' in object.data", "message": "no owner"}],
                 "auditAnnotations": [{"key": "keys", "valueExpression": "string(size(object.data))"}]}});
    admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies")
        .create(
            &PostParams::default(),
            &serde_json::from_value(vap).expect("vap"),
        )
        .await
        .expect("policy created");
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "owner"},
        "spec": {"policyName": "owner", "validationActions": ["Audit"]}});
    admission(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    )
    .create(
        &PostParams::default(),
        &serde_json::from_value(binding).expect("binding"),
    )
    .await
    .expect("binding created");

    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "ownerless"}, "data": {"k": "v"}}))
            .expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("audited, not denied");
    let found = events(&log, 1, |e| {
        e["objectRef"]["name"] == "ownerless" && e["stage"] == "ResponseComplete"
    });
    let annotations = &found.first().expect("logged")["annotations"];
    assert_eq!(annotations["annotate.example.com/checked"], "yes");
    assert_eq!(annotations["owner/keys"], "1");
    assert_eq!(annotations["authorization.k8s.io/decision"], "allow");
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .expect("a failure"),
    )
    .expect("JSON");
    assert_eq!(
        failure,
        json!([{"message": "no owner", "policy": "owner", "binding": "owner",
                "expressionIndex": 0, "validationActions": ["Audit"]}])
    );
}
