//! A custom resource the typed struct cannot deserialize gets a Warning Event and a status
//! message, and the other objects keep being served.

use std::time::Duration;

use crate::common::*;
use kopr::{Operator, Resource};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeserializable_object_is_reported_and_others_are_served() {
    let cluster = cluster().await;
    namespace(&cluster, "b1").await;
    let calls = Calls::default();
    let operator =
        Operator::new().resource(Resource::<Widget>::custom().on_create(recording(&calls, "make")));
    let running = cluster.run(operator);
    let api = widgets(&cluster, "b1");
    // `size` is int-or-string in the schema, but the Rust type wants an integer.
    let raw: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        cluster.client(),
        "b1",
        &kube::api::ApiResource::erase::<Widget>(&()),
    );
    let broken: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": "broken"}, "spec": {"message": "x", "size": "huge"}
    }))
    .unwrap();
    raw.create(&PostParams::default(), &broken).await.unwrap();
    create_widget(&api, "fine", "ok").await;
    wait_widget(&api, "fine", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    let status = kopr::testing::wait_for(
        &raw,
        "broken",
        WAIT,
        |o: Option<&kube::api::DynamicObject>| {
            o.and_then(|o| o.data.pointer("/status/kopr/message"))
                .is_some()
        },
    )
    .await
    .unwrap()
    .unwrap();
    let message = status
        .data
        .pointer("/status/kopr/message")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    assert!(
        message.contains("spec.size") && message.contains("invalid type"),
        "{message}"
    );
    let mut events = Vec::new();
    for _ in 0..100 {
        events = events_about(&cluster, "b1", "broken").await;
        if !events.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(events.len(), 1, "reported once: {events:?}");
    assert_eq!(events[0].0, "Warning");
    assert_eq!(events[0].1, "InvalidObject");
    assert_eq!(events[0].2, message);
    assert_eq!(calls.all(), vec!["fine"]);

    // Fixing the object gets it handled and clears the message.
    raw.patch(
        "broken",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 3}})),
    )
    .await
    .unwrap();
    let fixed = kopr::testing::wait_for(
        &raw,
        "broken",
        WAIT,
        |o: Option<&kube::api::DynamicObject>| {
            o.is_some_and(|o| {
                o.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("kopr.dev/last-handled-configuration"))
            })
        },
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(fixed.data.pointer("/status/kopr/message"), None);
    assert_eq!(calls.all(), vec!["fine", "broken"]);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unserializable_patch_value_fails_the_attempt_and_deletes_nothing() {
    use kopr::{Context, Handler, HandlerResult};
    let cluster = cluster().await;
    namespace(&cluster, "b2").await;
    let operator = Operator::new().resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(|ctx: Context<Widget>| async move {
                // A map keyed by pairs has no JSON form.
                let by_pair = std::collections::BTreeMap::from([((1, 2), "x")]);
                ctx.patch().status("phase", "Made").spec("message", by_pair);
                HandlerResult::Ok(())
            })
            .id("make"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "b2");
    create_widget(&api, "w", "keep me").await;
    let event = cluster
        .wait_for_warning("b2", "w", Duration::from_secs(20), |e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.contains("could not be serialized: spec.message: "))
        })
        .await
        .expect("the failure is reported");
    assert_eq!(
        event.reason.as_deref(),
        Some("HandlerRetrying"),
        "{event:?}"
    );
    let body = wait_widget(&api, "w", |w| w["status"]["phase"] == "Made").await;
    assert_eq!(
        body["spec"]["message"], "keep me",
        "nothing deleted: {body}"
    );
    running.stop().await.unwrap();
}
