//! Admission handlers served by the operator and called by the embedded API server: a
//! validating handler's denial and warnings reach the client in kube's words, a mutating
//! handler's change is stored, and a panicking handler answers by the failure policy.

mod common;

use common::*;
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
