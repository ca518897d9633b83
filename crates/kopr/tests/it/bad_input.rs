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
