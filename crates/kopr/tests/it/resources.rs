//! Resources and watching: a CRD installed after the operator started, dynamic resources by
//! group/version/plural and by short name, namespace patterns, raw event handlers, the memo,
//! status storage, adopted children, and an object too large for the diff-base annotation.

use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr::kube::CustomResourceExt;
use kopr::kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kopr::testing::TestCluster;
use kopr::{Context, Handler, HandlerResult, NamespacePatterns, Operator, Resource, Storage};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_created_after_the_operator_started_is_picked_up() {
    kopr::testing::capture_logs();
    let cluster = TestCluster::start().await.unwrap();
    let calls = Calls::default();
    let operator =
        Operator::new().resource(Resource::<Widget>::custom().on_create(recording(&calls, "late")));
    let running = cluster.run(operator);
    let logs = kopr::testing::capture_logs();
    logs.wait_for(&["kopr.test/v1/widgets", "not served yet"], WAIT)
        .await
        .unwrap();
    cluster.install_crd(&widget_crd()).await.unwrap();
    namespace(&cluster, "late").await;
    let api = widgets(&cluster, "late");
    create_widget(&api, "w", "x").await;
    wait_widget(&api, "w", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert_eq!(calls.all(), vec!["w"]);
    running.stop().await.unwrap();
}

fn dynamic_recorder(calls: &Calls, id: &'static str) -> Handler<DynamicObject> {
    let calls = calls.clone();
    Handler::new(move |ctx: Context<DynamicObject>| {
        let calls = calls.clone();
        async move {
            let message = ctx.object.data["spec"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            calls.record(format!(
                "{id} {}/{} {message}",
                ctx.namespace().unwrap_or_default(),
                ctx.name()
            ));
            HandlerResult::Ok(())
        }
    })
    .id(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_resources_and_namespace_patterns() {
    let cluster = cluster().await;
    for ns in ["team-a", "team-b", "team-skip", "other"] {
        namespace(&cluster, ns).await;
    }
    let calls = Calls::default();
    let operator = Operator::new()
        .namespaces(NamespacePatterns::parse(["!team-skip", "team-*"]).unwrap())
        .resource(Resource::lookup("wd").on_create(dynamic_recorder(&calls, "by-shortname")));
    let running = cluster.run(operator);
    for ns in ["team-a", "team-b", "team-skip", "other"] {
        create_widget(&widgets(&cluster, ns), "w", ns).await;
    }
    for ns in ["team-a", "team-b"] {
        wait_widget(&widgets(&cluster, ns), "w", |w| {
            annotations(w).contains_key("kopr.dev/last-handled-configuration")
        })
        .await;
    }
    running.stop().await.unwrap();
    let mut all = calls.all();
    all.sort();
    assert_eq!(
        all,
        vec![
            "by-shortname team-a/w team-a",
            "by-shortname team-b/w team-b"
        ]
    );
    for ns in ["team-skip", "other"] {
        let untouched =
            serde_json::to_value(widgets(&cluster, ns).get("w").await.unwrap()).unwrap();
        assert!(annotations(&untouched).is_empty(), "{ns}: {untouched}");
    }

    // The same objects by group/version/plural, as Kopf names them, in one exact namespace.
    let operator = Operator::new()
        .namespaces(NamespacePatterns::parse(["other"]).unwrap())
        .resource(
            Resource::dynamic("kopr.test", "v1", "widgets")
                .on_create(dynamic_recorder(&calls, "by-plural")),
        );
    let running = cluster.run(operator);
    wait_widget(&widgets(&cluster, "other"), "w", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    running.stop().await.unwrap();
    assert_eq!(
        calls.count("by-plural other/w other"),
        1,
        "{:?}",
        calls.all()
    );
    assert_eq!(calls.all().len(), 3, "{:?}", calls.all());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_handlers_memo_and_status_storage() {
    let cluster = cluster().await;
    namespace(&cluster, "ev").await;
    let calls = Calls::default();
    let (e, m) = (calls.clone(), calls.clone());
    let operator = Operator::new()
        .storage(Storage::Status)
        .memo(String::from("shared-greeting"))
        .resource(
            Resource::<Widget>::custom()
                .on_event(
                    Handler::new(move |ctx: Context<Widget>| {
                        let calls = e.clone();
                        async move {
                            calls.record(format!("event {}", ctx.event_type().unwrap_or("?")));
                            Err::<(), _>(kopr::HandlerError::message("ignored failure"))
                        }
                    })
                    .id("raw"),
                )
                .on_create(
                    Handler::new(move |ctx: Context<Widget>| {
                        let calls = m.clone();
                        async move {
                            let memo = ctx.memo::<String>().map(|s| s.as_str().to_owned());
                            calls.record(format!("memo {}", memo.unwrap_or_default()));
                            HandlerResult::Ok(())
                        }
                    })
                    .id("make"),
                ),
        );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "ev");
    create_widget(&api, "e1", "x").await;
    let body = wait_widget(&api, "e1", |w| {
        w.pointer("/status/kopr/lastHandledConfiguration").is_some()
    })
    .await;
    assert_eq!(
        body.pointer("/status/kopr/lastHandledConfiguration"),
        Some(&json!({"spec": {"message": "x"}}))
    );
    assert!(
        !annotations(&body)
            .keys()
            .any(|k| k.starts_with("kopr.dev/")),
        "{body}"
    );
    // Everything kopr keeps went through `/status`: it never wrote the object itself.
    let managers: Vec<(String, Option<String>)> = body
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| {
            let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
            (text("manager").unwrap_or_default(), text("subresource"))
        })
        .collect();
    assert!(
        managers.contains(&("kopr".to_owned(), Some("status".to_owned()))),
        "{managers:?}"
    );
    assert!(
        !managers.contains(&("kopr".to_owned(), None)),
        "{managers:?}"
    );
    api.delete("e1", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "e1").await;
    for _ in 0..100 {
        if calls.count("event DELETED") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let all = calls.all();
    assert!(all.contains(&"memo shared-greeting".to_string()), "{all:?}");
    assert!(
        all.contains(&"event ADDED".to_string()) || all.contains(&"event MODIFIED".to_string()),
        "{all:?}"
    );
    assert_eq!(calls.count("event DELETED"), 1, "{all:?}");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopted_children_are_garbage_collected_with_their_owner() {
    let cluster = cluster().await;
    namespace(&cluster, "kids").await;
    let operator = Operator::new().resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(|ctx: Context<Widget>| async move {
                let mut child: ConfigMap =
                    serde_json::from_value(json!({"data": {"message": ctx.object.spec.message}}))?;
                kopr::adopt(&mut child, &*ctx.object)?;
                let api: Api<ConfigMap> =
                    Api::namespaced(ctx.client().clone(), ctx.namespace().unwrap_or("default"));
                let created = api.create(&PostParams::default(), &child).await?;
                HandlerResult::Ok(created.metadata.name)
            })
            .id("child"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "kids");
    let owner = serde_json::to_value(create_widget(&api, "parent", "hi").await).unwrap();
    let body = wait_widget(&api, "parent", |w| w.pointer("/status/child").is_some()).await;
    let child_name = body["status"]["child"].as_str().unwrap().to_owned();
    assert!(child_name.starts_with("parent-"), "{child_name}");
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "kids");
    let child = maps.get(&child_name).await.unwrap();
    let reference = &child.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(reference.uid, owner["metadata"]["uid"].as_str().unwrap());
    assert_eq!(
        (reference.controller, reference.block_owner_deletion),
        (Some(true), Some(true))
    );
    api.delete("parent", &DeleteParams::default())
        .await
        .unwrap();
    kopr::testing::wait_for(&maps, &child_name, WAIT, |c: Option<&ConfigMap>| {
        c.is_none()
    })
    .await
    .unwrap();
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_too_large_for_the_annotation_gets_a_warning_not_a_patch_loop() {
    let cluster = cluster().await;
    namespace(&cluster, "big").await;
    let calls = Calls::default();
    let operator =
        Operator::new().resource(Resource::<Widget>::custom().on_create(recording(&calls, "big")));
    let running = cluster.run(operator);
    let api = widgets(&cluster, "big");
    let mut extra = serde_json::Map::new();
    for n in 0..40 {
        extra.insert(format!("k{n}"), Value::String("x".repeat(8 * 1024)));
    }
    let widget: Widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": "huge"}, "spec": {"message": "m", "extra": extra}
    }))
    .unwrap();
    api.create(&PostParams::default(), &widget).await.unwrap();
    let mut events = Vec::new();
    for _ in 0..200 {
        events = events_about(&cluster, "big", "huge").await;
        if events.iter().any(|e| e.1 == "DiffBaseTooLarge") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        events
            .iter()
            .any(|e| e.0 == "Warning" && e.1 == "DiffBaseTooLarge"),
        "{events:?}"
    );
    let before = api.get("huge").await.unwrap().metadata.resource_version;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = api.get("huge").await.unwrap().metadata.resource_version;
    assert_eq!(before, after, "no patch loop");
    assert_eq!(calls.all(), vec!["huge"]);
    assert_eq!(
        events.iter().filter(|e| e.1 == "DiffBaseTooLarge").count(),
        1
    );
    let _ = Widget::crd();
    running.stop().await.unwrap();
}
