//! Indices (`Resource::index`, `Context::index`) through the embedded API server: a handler
//! sees its own object and every one seen before it in the index, pairs follow changes and
//! deletions, an index on a resource without handlers serves another resource's handlers, and
//! two indices with one name are refused.

use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Widgets by message, and who else said the same: the handler's result.
async fn same_message(ctx: Context<Widget>) -> HandlerResult<Vec<String>> {
    let index = ctx
        .index::<String>("by-message")
        .expect("the index is there with String values");
    let wrong = ctx
        .index::<u64>("by-message")
        .map(|_| ())
        .expect_err("another value type");
    assert_eq!(
        wrong.to_string(),
        "the index \"by-message\" holds values of type alloc::string::String, not u64"
    );
    let unknown = ctx
        .index::<String>("by-colour")
        .map(|_| ())
        .expect_err("no such index");
    assert!(
        unknown
            .to_string()
            .starts_with("no index is named \"by-colour\" (the operator's indices: "),
        "{unknown}"
    );
    let not_owned = ctx.owned::<ConfigMap>().map(|_| ()).expect_err("not owned");
    assert_eq!(
        not_owned.to_string(),
        "ConfigMap is not owned by this operator's resources: declare it with Resource::owns"
    );
    Ok(index.get(&ctx.object.spec.message))
}

/// ConfigMaps labelled `owner=<widget>`, counted by the widget's handler; retried until both
/// of its ConfigMaps are indexed (another resource's watch).
async fn owned_config_maps(ctx: Context<Widget>) -> HandlerResult<Vec<String>> {
    let index = ctx.index::<String>("config-maps-by-owner").expect("index");
    let names = index.get(ctx.name());
    if names.len() < 2 {
        return Err(HandlerError::temporary(
            "not indexed yet",
            Duration::from_millis(50),
        ));
    }
    Ok(names)
}

/// ConfigMaps by their `owner` label: an index on a resource without handlers.
fn config_maps_by_owner() -> Resource<ConfigMap> {
    Resource::<ConfigMap>::new().index("config-maps-by-owner", |cm: &ConfigMap| {
        let owner = cm.metadata.labels.as_ref().and_then(|l| l.get("owner"));
        owner
            .map(|o| (o.clone(), cm.metadata.name.clone().unwrap_or_default()))
            .into_iter()
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_every_object_seen_before_theirs_and_changes_follow() {
    let cluster = cluster().await;
    namespace(&cluster, "idx").await;
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .index("by-message", |w: &Widget| {
                vec![(
                    w.spec.message.clone(),
                    w.metadata.name.clone().unwrap_or_default(),
                )]
            })
            .on_create(kopr::Handler::new(same_message).id("same"))
            .on_update(kopr::Handler::new(same_message).id("same")),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "idx");
    for name in ["w1", "w2", "w3"] {
        create_widget(&api, name, "same").await;
        wait_widget(&api, name, |w| w.pointer("/status/same").is_some()).await;
    }
    let w3 = api.get("w3").await.unwrap();
    let w3 = serde_json::to_value(w3).unwrap();
    assert_eq!(w3.pointer("/status/same"), Some(&json!(["w1", "w2", "w3"])));

    // w1 goes, w2 says something else: w3's next change sees only itself.
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "w1").await;
    let other = json!({"spec": {"message": "other"}});
    api.patch("w2", &PatchParams::default(), &Patch::Merge(&other))
        .await
        .unwrap();
    wait_widget(&api, "w2", |w| {
        w.pointer("/status/same") == Some(&json!(["w2"]))
    })
    .await;
    let size = json!({"spec": {"size": 3}});
    api.patch("w3", &PatchParams::default(), &Patch::Merge(&size))
        .await
        .unwrap();
    wait_widget(&api, "w3", |w| {
        w.pointer("/status/same") == Some(&json!(["w3"]))
    })
    .await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_of_a_resource_without_handlers_serves_another_s_handlers() {
    let cluster = cluster().await;
    namespace(&cluster, "idx2").await;
    let operator = Operator::new().resource(config_maps_by_owner()).resource(
        Resource::<Widget>::custom().on_create(kopr::Handler::new(owned_config_maps).id("owned")),
    );
    let running = cluster.run(operator);
    let config_maps: kube::api::Api<ConfigMap> =
        kube::api::Api::namespaced(cluster.client(), "idx2");
    for name in ["cm-b", "cm-a"] {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"owner": "owner-1"}}
        }))
        .unwrap();
        config_maps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let api = widgets(&cluster, "idx2");
    create_widget(&api, "owner-1", "m").await;
    let body: Value = wait_widget(&api, "owner-1", |w| w.pointer("/status/owned").is_some()).await;
    assert_eq!(
        body.pointer("/status/owned"),
        Some(&json!(["cm-a", "cm-b"]))
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_indices_with_one_name_are_refused() {
    let cluster = cluster().await;
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .index("twice", |_: &Widget| Vec::<(String, u8)>::new())
            .index("twice", |_: &Widget| Vec::<(String, u8)>::new()),
    );
    let ended = cluster.run(operator).stop_after_exit().await;
    assert!(
        matches!(&ended, Err(kopr::Error::Config(m)) if m.contains("'twice'")),
        "{ended:?}"
    );
}
