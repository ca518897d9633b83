//! The operator's identity: a named operator's finalizer, annotations, field manager and
//! Events carry its name; two operators on one kind keep their records apart; objects written
//! under kopr's historical names are read and moved, not orphaned.

use kopr::kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kopr::{Context, Handler, HandlerError, HandlerResult, Identity, Operator, Resource};
use serde_json::json;

use crate::common::*;

fn calls_operator(name: &str, calls: &Calls) -> Operator {
    let (created, deleted) = (calls.clone(), calls.clone());
    let tag = name.to_owned();
    let tag2 = name.to_owned();
    Operator::new().name(name).resource(
        Resource::<Widget>::custom()
            .on_create(
                Handler::new(move |ctx: Context<Widget>| {
                    let (calls, tag) = (created.clone(), tag.clone());
                    async move {
                        calls.record(format!("{tag} create {}", ctx.name()));
                        Ok(())
                    }
                })
                .id("make"),
            )
            .on_delete(
                Handler::new(move |ctx: Context<Widget>| {
                    let (calls, tag) = (deleted.clone(), tag2.clone());
                    async move {
                        calls.record(format!("{tag} delete {}", ctx.name()));
                        Ok(())
                    }
                })
                .id("gone"),
            ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_named_operators_on_one_kind_keep_apart() {
    let cluster = cluster().await;
    namespace(&cluster, "id1").await;
    let calls = Calls::default();
    let alpha = cluster.run(calls_operator("alpha", &calls));
    let beta = cluster.run(calls_operator("beta", &calls));
    let api = widgets(&cluster, "id1");
    create_widget(&api, "w", "x").await;
    let body = wait_widget(&api, "w", |w| {
        let a = annotations(w);
        a.contains_key("alpha.kopr.dev/last-handled-configuration")
            && a.contains_key("beta.kopr.dev/last-handled-configuration")
    })
    .await;
    let mut own = finalizers(&body);
    own.sort();
    assert_eq!(own, ["alpha.kopr.dev/finalizer", "beta.kopr.dev/finalizer"]);
    assert!(
        !annotations(&body)
            .keys()
            .any(|k| k.starts_with("kopr.dev/")),
        "{body}"
    );
    // Each operator's bookkeeping is not the other's update.
    assert_eq!(calls.count("alpha create w"), 1);
    assert_eq!(calls.count("beta create w"), 1);
    let managers: Vec<String> = api
        .get("w")
        .await
        .expect("widget")
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.contains(&"alpha".to_owned()) && managers.contains(&"beta".to_owned()),
        "{managers:?}"
    );
    api.delete("w", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_gone(&api, "w").await;
    assert_eq!(calls.count("alpha delete w"), 1);
    assert_eq!(calls.count("beta delete w"), 1);
    alpha.stop().await.expect("alpha stops");
    beta.stop().await.expect("beta stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn historical_names_are_read_and_moved() {
    let cluster = cluster().await;
    namespace(&cluster, "id2").await;
    let api = widgets(&cluster, "id2");
    // As an operator before identities left it: handled, with kopr.dev/ names.
    let essence = json!({"spec": {"message": "x"}}).to_string();
    let widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": "old", "finalizers": ["kopr.dev/finalizer"],
                     "annotations": {"kopr.dev/last-handled-configuration": essence}},
        "spec": {"message": "x"}
    }))
    .expect("widget");
    api.create(&PostParams::default(), &widget)
        .await
        .expect("created");
    let calls = Calls::default();
    let running = cluster.run(calls_operator("greeting", &calls));
    wait_widget(&api, "old", |w| {
        finalizers(w) == ["greeting.kopr.dev/finalizer"]
    })
    .await;
    // Its diff base was read: no create cause.
    let change = Patch::Merge(json!({"spec": {"message": "y"}}));
    api.patch("old", &PatchParams::default(), &change)
        .await
        .expect("patched");
    let body = wait_widget(&api, "old", |w| {
        annotations(w)
            .get("greeting.kopr.dev/last-handled-configuration")
            .and_then(|v| v.as_str())
            .is_some_and(|v| v.contains("\"y\""))
    })
    .await;
    assert!(
        !annotations(&body).contains_key("kopr.dev/last-handled-configuration"),
        "moved: {body}"
    );
    assert_eq!(calls.count("greeting create old"), 0, "{:?}", calls.all());
    // The object keeps its delete handler, run once, and goes.
    api.delete("old", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_gone(&api, "old").await;
    assert_eq!(calls.count("greeting delete old"), 1);
    running.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_name_the_operator() {
    let cluster = cluster().await;
    namespace(&cluster, "id3").await;
    let operator = Operator::new().name("greeting").resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(|_ctx: Context<Widget>| async {
                let result: HandlerResult = Err(HandlerError::permanent("no greeting today"));
                result
            })
            .id("make"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "id3");
    create_widget(&api, "w", "x").await;
    let found = cluster
        .wait_for_warning("id3", "w", WAIT, |_| true)
        .await
        .expect("a Warning Event about w");
    assert_eq!(found.reporting_component.as_deref(), Some("greeting"));
    assert_eq!(
        found.source.and_then(|s| s.component).as_deref(),
        Some("greeting")
    );
    running.stop().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_kubernetes_refuses_is_a_configuration_error() {
    let cluster = cluster().await;
    let operator = Operator::new()
        .identity(Identity::new("Greeting Operator"))
        .resource(Resource::<Widget>::custom().on_create(recording(&Calls::default(), "never")));
    let error = operator
        .run_until(cluster.client(), std::future::pending())
        .await
        .expect_err("refused");
    assert!(
        matches!(&error, kopr::Error::Config(m) if m.contains("\"Greeting Operator\"")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_status_storage_named_operators_keep_apart_and_move_the_old_records() {
    use kube::api::{Patch, PatchParams};
    let cluster = cluster().await;
    namespace(&cluster, "id4").await;
    let api = widgets(&cluster, "id4");
    // As an unnamed operator with status storage left it: handled, under status.kopr.
    create_widget(&api, "old", "x").await;
    let status =
        json!({"status": {"kopr": {"lastHandledConfiguration": {"spec": {"message": "x"}}}}});
    api.patch_status("old", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status written");
    let calls = Calls::default();
    // Its successor reads the old record (no create cause) and moves it on its next write.
    let alpha = cluster.run(calls_operator("alpha", &calls).storage(kopr::Storage::Status));
    let change = Patch::Merge(json!({"spec": {"message": "z"}}));
    api.patch("old", &PatchParams::default(), &change)
        .await
        .expect("patched");
    let moved = wait_widget(&api, "old", |w| {
        w["status"]["kopr"]["alpha"]["lastHandledConfiguration"]["spec"]["message"] == "z"
    })
    .await;
    assert!(
        moved["status"]["kopr"]["lastHandledConfiguration"].is_null(),
        "the historical record is moved: {moved}"
    );
    assert_eq!(calls.count("alpha create old"), 0, "{:?}", calls.all());
    // A second operator on the kind keeps its records apart.
    let beta = cluster.run(calls_operator("beta", &calls).storage(kopr::Storage::Status));
    create_widget(&api, "new", "y").await;
    let handled = |operator: &'static str| {
        move |w: &serde_json::Value| {
            !w["status"]["kopr"][operator]["lastHandledConfiguration"].is_null()
        }
    };
    wait_widget(&api, "new", handled("alpha")).await;
    wait_widget(&api, "new", handled("beta")).await;
    assert_eq!(calls.count("alpha create new"), 1);
    assert_eq!(calls.count("beta create new"), 1);
    alpha.stop().await.expect("alpha stops");
    beta.stop().await.expect("beta stops");
}
