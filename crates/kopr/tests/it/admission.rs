//! Admission handlers served by the operator and called by the embedded API server: a
//! validating handler's denial and warnings reach the client in kube's words, a mutating
//! handler's change is stored, and a panicking handler answers by the failure policy.

use crate::common::*;
use kopr::kube::api::{Api, DynamicObject, PostParams};
use kopr::webhooks::{FailurePolicy, Webhooks};
use kopr::{Denial, Operator, Resource, Review};

async fn validate(review: Review<Widget>) -> Result<(), Denial> {
    let Some(widget) = &review.object else {
        return Ok(());
    };
    if widget.spec.message.contains("bad") {
        return Err(Denial::new(format!(
            "message {:?} is not allowed",
            widget.spec.message
        )));
    }
    review.warn("messages are checked");
    Ok(())
}

async fn stamp(review: Review<Widget>) -> Result<(), Denial> {
    review.patch().label("stamped", Some("yes"));
    if review.name == "explode" {
        panic!("the handler broke");
    }
    Ok(())
}

/// Waits until the operator registered its configurations.
async fn registered(cluster: &kopr::testing::TestCluster, name: &str) {
    let resource = kopr::webhooks::configuration_resource(true);
    let api: Api<DynamicObject> = Api::all_with(cluster.client(), &resource);
    for _ in 0..500 {
        if api.get_opt(name).await.unwrap().is_some() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{name} was not registered");
}

fn operator(policy: FailurePolicy, name: &str) -> Operator {
    Operator::new()
        .resource(
            Resource::<Widget>::custom()
                .on_validate("no-bad", validate)
                .on_mutate("stamp", stamp),
        )
        .webhooks(Webhooks::local().name(name).failure_policy(policy))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_and_mutating_handlers_are_called_by_the_api_server() {
    let cluster = cluster().await;
    namespace(&cluster, "adm").await;
    let running = cluster.run(operator(FailurePolicy::Fail, "widgets-fail"));
    registered(&cluster, "widgets-fail").await;
    let api = widgets(&cluster, "adm");

    let good = create_widget(&api, "good", "fine").await;
    let labels = good.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("stamped").map(String::as_str),
        Some("yes"),
        "mutated"
    );

    let widget: Widget = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": "nope"}, "spec": {"message": "bad words"}
    }))
    .unwrap();
    let refused = api
        .create(&PostParams::default(), &widget)
        .await
        .expect_err("denied");
    let kopr::kube::Error::Api(status) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "admission webhook \"no-bad.widgets.kopr.test\" denied the request: message \"bad words\" is not allowed"
    );

    // A panic under Fail refuses the write with code 500.
    let widget: Widget = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": "explode"}, "spec": {"message": "boom"}
    }))
    .unwrap();
    let kopr::kube::Error::Api(status) = api
        .create(&PostParams::default(), &widget)
        .await
        .expect_err("refused")
    else {
        panic!("not a Status")
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "admission webhook \"stamp.widgets.kopr.test\" denied the request: admission handler 'stamp' panicked"
    );
    assert!(api.get_opt("explode").await.unwrap().is_none());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_under_ignore_lets_the_write_through() {
    let cluster = cluster().await;
    namespace(&cluster, "ign").await;
    let running = cluster.run(operator(FailurePolicy::Ignore, "widgets-ignore"));
    registered(&cluster, "widgets-ignore").await;
    let api = widgets(&cluster, "ign");
    let created = create_widget(&api, "explode", "boom").await;
    assert!(
        !created
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("stamped"),
        "no mutation from a handler that panicked"
    );
    running.stop().await.unwrap();
}

/// Writes a new CA and a certificate it signs for the loopback address into `dir`, in the
/// layout of a `kubernetes.io/tls` Secret; returns the CA's PEM.
fn write_certificates(dir: &std::path::Path) -> String {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
    ca.pem()
}

/// The configuration's `caBundle` leads with `pem` (the CAs registered before follow it).
fn ca_bundle_is(pem: &str) -> impl Fn(Option<&DynamicObject>) -> bool + use<> {
    use base64::Engine as _;
    let wanted = pem.trim().to_string();
    move |o: Option<&DynamicObject>| {
        o.and_then(|o| o.data["webhooks"][0]["clientConfig"]["caBundle"].as_str())
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .is_some_and(|bundle| bundle.starts_with(&wanted))
    }
}

async fn refused_message(api: &Api<Widget>, name: &str) -> String {
    let widget: Widget = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"message": "bad words"}
    }))
    .unwrap();
    match api.create(&PostParams::default(), &widget).await {
        Err(kopr::kube::Error::Api(status)) => status.message,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_directory_is_served_and_a_renewed_ca_registered() {
    let cluster = cluster().await;
    namespace(&cluster, "files").await;
    let dir = tempfile::tempdir().unwrap();
    let first = write_certificates(dir.path());
    let webhooks = Webhooks::local()
        .name("widgets-files")
        .certificate_dir(dir.path())
        .reload_every(std::time::Duration::from_millis(20));
    let operator = Operator::new()
        .resource(Resource::<Widget>::custom().on_validate("no-bad", validate))
        .webhooks(webhooks);
    let running = cluster.run(operator);
    let resource = kopr::webhooks::configuration_resource(false);
    let configurations: Api<DynamicObject> = Api::all_with(cluster.client(), &resource);
    let within = std::time::Duration::from_secs(20);
    let registered = kopr::kube::runtime::wait::await_condition(
        configurations.clone(),
        "widgets-files",
        ca_bundle_is(&first),
    );
    tokio::time::timeout(within, registered)
        .await
        .expect("registered with the directory's CA")
        .unwrap();
    let api = widgets(&cluster, "files");
    let denied = "admission webhook \"no-bad.widgets.kopr.test\" denied the request: message \"bad words\" is not allowed";
    assert_eq!(refused_message(&api, "one").await, denied);

    // cert-manager renews: a new CA and certificate in the same files.
    let second = write_certificates(dir.path());
    let renewed = kopr::kube::runtime::wait::await_condition(
        configurations,
        "widgets-files",
        ca_bundle_is(&second),
    );
    tokio::time::timeout(within, renewed)
        .await
        .expect("registered again with the new CA")
        .unwrap();
    // The API server trusts the new certificate through the new bundle.
    assert_eq!(refused_message(&api, "two").await, denied);
    running.stop().await.unwrap();
}

async fn frozen(_: Review<Widget>) -> Result<(), Denial> {
    Err(Denial::new("the widget is frozen"))
}

async fn status_check(review: Review<Widget>) -> Result<(), Denial> {
    match review
        .body()
        .pointer("/status/phase")
        .and_then(|p| p.as_str())
    {
        Some("Broken") => Err(Denial::new("a widget is never Broken").code(422)),
        _ => Ok(()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_subresources_and_filters_choose_what_a_handler_sees() {
    use kopr::Filtered;
    use kopr::admission::{Admission, Operation};
    use kopr::kube::api::{Patch, PatchParams};
    let cluster = cluster().await;
    namespace(&cluster, "opts").await;
    let operator = Operator::new()
        .resource(
            Resource::<Widget>::custom()
                .admission(
                    Admission::validate("frozen", frozen)
                        .operations([Operation::Update, Operation::Delete])
                        .label_matches("frozen", "yes"),
                )
                .admission(Admission::validate("status-check", status_check).subresource("status")),
        )
        .webhooks(Webhooks::local().name("widgets-options"));
    let running = cluster.run(operator);
    let resource = kopr::webhooks::configuration_resource(false);
    let configurations: Api<DynamicObject> = Api::all_with(cluster.client(), &resource);
    let registered = kopr::kube::runtime::wait::await_condition(
        configurations,
        "widgets-options",
        |o: Option<&DynamicObject>| o.is_some(),
    );
    let configuration = tokio::time::timeout(std::time::Duration::from_secs(20), registered)
        .await
        .expect("registered")
        .unwrap()
        .expect("configuration");
    let rules: Vec<_> = configuration.data["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["rules"][0].clone())
        .collect();
    assert_eq!(
        rules[0]["operations"],
        serde_json::json!(["UPDATE", "DELETE"])
    );
    assert_eq!(rules[1]["resources"], serde_json::json!(["widgets/status"]));

    let api = widgets(&cluster, "opts");
    let labelled = |name: &str, frozen: &str| -> Widget {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kopr.test/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {"frozen": frozen}}, "spec": {"message": "m"}
        }))
        .unwrap()
    };
    // Creation is not registered; updates of frozen widgets are refused, others pass.
    for (name, value) in [("ice", "yes"), ("water", "no")] {
        api.create(&PostParams::default(), &labelled(name, value))
            .await
            .expect("created");
    }
    let change = serde_json::json!({"spec": {"message": "changed"}});
    let refused = api
        .patch("ice", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .expect_err("frozen");
    assert!(
        refused.to_string().contains("the widget is frozen"),
        "{refused}"
    );
    api.patch("water", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .expect("not frozen");
    // The status handler sees status writes only.
    let broken = serde_json::json!({"status": {"phase": "Broken"}});
    let kopr::kube::Error::Api(status) = api
        .patch_status("water", &PatchParams::default(), &Patch::Merge(&broken))
        .await
        .expect_err("refused")
    else {
        panic!("not a Status")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "admission webhook \"status-check.widgets.kopr.test\" denied the request: a widget is never Broken"
    );
    let fine = serde_json::json!({"status": {"phase": "Fine"}});
    api.patch_status("water", &PatchParams::default(), &Patch::Merge(&fine))
        .await
        .expect("a fine status");
    running.stop().await.unwrap();
}
