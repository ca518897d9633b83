//! What a resource's watch sees and how hard the operator works on it, through the embedded
//! API server: server-side label and field selectors (objects left out are never handled),
//! a per-resource limit on objects handled at once, and reconciles triggered from a channel.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::*;
use kopr::reconcile::{Action, Key};
use kopr::{Context, Handler, HandlerResult, Operator, Resource};
use kube::api::PostParams;
use serde_json::json;

async fn create_labelled(api: &kube::Api<Widget>, name: &str, labels: serde_json::Value) {
    let widget: Widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": labels}, "spec": {"message": "x"}
    }))
    .expect("widget");
    api.create(&PostParams::default(), &widget)
        .await
        .expect("created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_leave_other_objects_unseen() {
    let cluster = cluster().await;
    namespace(&cluster, "sel1").await;
    let (by_labels, by_fields) = (Calls::default(), Calls::default());
    // One worker each: objects are handled in the order their events come, so an object a
    // selector let through before the last one would have been handled before it. Two
    // operators (named apart), so each keeps its own records.
    let labels = Operator::new().name("labels").workers(1).resource(
        Resource::<Widget>::custom()
            .label_selector("team=a")
            .on_create(recording(&by_labels, "make")),
    );
    let fields = Operator::new().name("fields").workers(1).resource(
        Resource::<Widget>::custom()
            .field_selector("metadata.name=named")
            .on_create(recording(&by_fields, "make")),
    );
    let running = cluster.run(labels);
    let also = cluster.run(fields);
    let api = widgets(&cluster, "sel1");
    create_labelled(&api, "other", json!({"team": "b"})).await;
    create_labelled(&api, "named", json!({"team": "b"})).await;
    create_labelled(&api, "mine", json!({"team": "a"})).await;
    let handled = |operator: &'static str| {
        move |w: &serde_json::Value| {
            annotations(w).contains_key(&format!("{operator}.kopr.dev/last-handled-configuration"))
        }
    };
    wait_widget(&api, "mine", handled("labels")).await;
    wait_widget(&api, "named", handled("fields")).await;
    assert_eq!(by_labels.all(), ["mine"]);
    assert_eq!(by_fields.all(), ["named"]);
    also.stop().await.unwrap();
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_runs_at_most_its_workers_at_once() {
    let cluster = cluster().await;
    namespace(&cluster, "sel2").await;
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // Handlers meet in pairs: with a limit of 1 they would never get past the barrier.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let (n, m, b) = (now.clone(), most.clone(), barrier.clone());
    let handler = Handler::new(move |_ctx: Context<Widget>| {
        let (now, most, barrier) = (n.clone(), m.clone(), b.clone());
        async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(running, Ordering::SeqCst);
            barrier.wait().await;
            now.fetch_sub(1, Ordering::SeqCst);
            HandlerResult::Ok("done")
        }
    })
    .id("paired");
    let operator =
        Operator::new().resource(Resource::<Widget>::custom().workers(2).on_create(handler));
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel2");
    let names: Vec<String> = (0..6).map(|i| format!("w{i}")).collect();
    for name in &names {
        create_widget(&api, name, "x").await;
    }
    for name in &names {
        wait_widget(&api, name, |w| w["status"]["paired"] == "done").await;
    }
    assert_eq!(most.load(Ordering::SeqCst), 2, "two at a time, never more");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_a_channel_reconcile_their_objects() {
    let cluster = cluster().await;
    namespace(&cluster, "sel3").await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let (sender, receiver) = tokio::sync::mpsc::channel::<Key>(4);
    let keys = futures::stream::unfold(receiver, |mut keys| async move {
        keys.recv().await.map(|key| (key, keys))
    });
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .reconcile(move |ctx: Context<Widget>| {
                let runs = counted.clone();
                async move {
                    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    ctx.patch().status("runs", n);
                    Ok(Action::await_change())
                }
            })
            .reconcile_on(keys),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel3");
    create_widget(&api, "w", "x").await;
    wait_widget(&api, "w", |w| w["status"]["runs"] == 1).await;
    sender
        .send(Key::namespaced("sel3", "w"))
        .await
        .expect("sent");
    wait_widget(&api, "w", |w| w["status"]["runs"] == 2).await;
    // A key the operator does not know is skipped.
    sender
        .send(Key::namespaced("sel3", "nobody"))
        .await
        .expect("sent");
    sender
        .send(Key::namespaced("sel3", "w"))
        .await
        .expect("sent");
    wait_widget(&api, "w", |w| w["status"]["runs"] == 3).await;
    running.stop().await.unwrap();
}

/// A ConfigMap controlled by `owner`, with `labels`.
async fn create_child(
    cluster: &kopr::testing::TestCluster,
    owner: &Widget,
    name: &str,
    labels: serde_json::Value,
) {
    let namespace = owner.metadata.namespace.as_deref().unwrap_or("default");
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cluster.client(), namespace);
    let child = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": [{
            "apiVersion": "kopr.test/v1", "kind": "Widget", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "controller": true}]},
        "data": {"k": "v"}
    }))
    .expect("config map");
    api.create(&PostParams::default(), &child)
        .await
        .expect("child created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_and_watched_kinds_are_watched_as_their_options_say() {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kopr::selection::{Predicate, WatchOptions};
    let cluster = cluster().await;
    namespace(&cluster, "sel4").await;
    let seen_data = Calls::default();
    let recorded = seen_data.clone();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .reconcile(|ctx: Context<Widget>| async move {
                let owned: Vec<String> = ctx
                    .owned::<ConfigMap>()?
                    .into_iter()
                    .filter_map(|c| c.metadata.name)
                    .collect();
                ctx.patch().status("owned", owned);
                Ok(Action::await_change())
            })
            .owns_with::<ConfigMap>(WatchOptions::new().labels("keep=yes").predicate(
                Predicate::custom(|child| child["metadata"]["name"] != "w-quiet"),
            ))
            .watches_with(
                WatchOptions::new().metadata_only(),
                move |secret: &Secret| {
                    recorded.record(format!("data {}", secret.data.is_some()));
                    vec![Key::namespaced("sel4", "w")]
                },
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel4");
    let widget = create_widget(&api, "w", "x").await;
    wait_widget(&api, "w", |w| w["status"]["owned"] == json!([])).await;
    // Left out by the selector, then let through: when the second one's change is handled,
    // the first one would be in the cache too if the watch had seen it.
    create_child(&cluster, &widget, "w-other", json!({"keep": "no"})).await;
    create_child(&cluster, &widget, "w-kept", json!({"keep": "yes"})).await;
    wait_widget(&api, "w", |w| w["status"]["owned"] == json!(["w-kept"])).await;

    // Metadata only: the mapper gets the Secret without its data.
    let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client(), "sel4");
    let secret = serde_json::from_value(json!({
        "metadata": {"name": "s"}, "stringData": {"token": "hidden"}
    }))
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("secret created");
    for _ in 0..400 {
        if !seen_data.all().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen_data.all().first().map(String::as_str),
        Some("data false")
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_kind_watched_two_ways_is_a_configuration_error() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kopr::selection::WatchOptions;
    let cluster = cluster().await;
    let reconcile = |_ctx: Context<Widget>| async { Ok(Action::await_change()) };
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .reconcile(reconcile)
            .owns::<ConfigMap>()
            .watches_with(WatchOptions::new().labels("a=b"), |_: &ConfigMap| {
                Vec::new()
            }),
    );
    let error = operator
        .run_until(cluster.client(), std::future::pending())
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("different selectors"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_resource_handles_every_object() {
    let cluster = cluster().await;
    namespace(&cluster, "sel5").await;
    let calls = Calls::default();
    // A burst of 5, then 5 a second: the 8 objects take their turns, none is lost.
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .rate_limit(5)
            .on_create(recording(&calls, "paced")),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel5");
    for i in 0..8 {
        create_widget(&api, &format!("w{i}"), "x").await;
    }
    for i in 0..8 {
        let name = format!("w{i}");
        wait_widget(&api, &name, |w| {
            annotations(w).contains_key("kopr.dev/last-handled-configuration")
        })
        .await;
    }
    assert_eq!(calls.all().len(), 8);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_resource_spaces_its_starts() {
    use std::time::{Duration, Instant};
    let cluster = cluster().await;
    namespace(&cluster, "sel7").await;
    let starts = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let recorded = starts.clone();
    let handler = Handler::new(move |_ctx: Context<Widget>| {
        let starts = recorded.clone();
        async move {
            starts.lock().expect("starts").push(Instant::now());
            HandlerResult::Ok("done")
        }
    })
    .id("paced");
    // 2 a second in bursts of 2: whatever the machine's load, the k-th start (counting
    // from 0) cannot come before (k - 1) half-seconds after the operator began, since every
    // start was reserved after that. Unpaced, all 5 would start within a few milliseconds.
    let began = Instant::now();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .rate_limit(2)
            .on_create(handler),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel7");
    for i in 0..5 {
        create_widget(&api, &format!("w{i}"), "x").await;
    }
    for i in 0..5 {
        wait_widget(&api, &format!("w{i}"), |w| w["status"]["paced"] == "done").await;
    }
    let mut starts = starts.lock().expect("starts").clone();
    starts.sort();
    assert_eq!(starts.len(), 5, "each object handled once");
    for (k, start) in starts.iter().enumerate().skip(2) {
        let earliest = Duration::from_millis(500) * (k as u32 - 1);
        assert!(
            start.duration_since(began) >= earliest,
            "start {k} came {:?} after the operator began, before its turn at {earliest:?}",
            start.duration_since(began)
        );
    }
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_a_predicate_filters_out_triggers_nothing() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kopr::selection::{Predicate, WatchOptions};
    use kube::api::{Patch, PatchParams};
    let cluster = cluster().await;
    namespace(&cluster, "sel8").await;
    let runs = Calls::default();
    let counted = runs.clone();
    // One worker: keys are reconciled in the order their triggers came, so had the filtered
    // change to w1's child triggered, w1 would run again before w2 does.
    let operator = Operator::new().workers(1).resource(
        Resource::<Widget>::custom()
            .reconcile(move |ctx: Context<Widget>| {
                let runs = counted.clone();
                async move {
                    runs.record(ctx.name().to_string());
                    let n = runs.count(ctx.name());
                    ctx.patch().status("runs", n);
                    Ok(Action::await_change())
                }
            })
            .owns_with::<ConfigMap>(WatchOptions::new().predicate(Predicate::LabelsChanged)),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "sel8");
    let at_least = |n: u64| move |w: &serde_json::Value| w["status"]["runs"].as_u64() >= Some(n);
    // The widgets and their children come while the operator starts: how often each runs
    // before the part under test is not what this test is about, only that it has run.
    let w1 = create_widget(&api, "w1", "x").await;
    let w2 = create_widget(&api, "w2", "x").await;
    wait_widget(&api, "w1", at_least(1)).await;
    wait_widget(&api, "w2", at_least(1)).await;
    // A new child passes LabelsChanged.
    create_child(&cluster, &w1, "c1", json!({"a": "1"})).await;
    wait_widget(&api, "w1", at_least(2)).await;
    create_child(&cluster, &w2, "c2", json!({"a": "1"})).await;
    wait_widget(&api, "w2", at_least(2)).await;

    let children: kube::Api<ConfigMap> = kube::Api::namespaced(cluster.client(), "sel8");
    let merge = |body: serde_json::Value| Patch::Merge(body);
    let relabel = |value: &'static str| {
        let children = children.clone();
        async move {
            children
                .patch(
                    "c2",
                    &PatchParams::default(),
                    &merge(json!({"metadata": {"labels": {"a": value}}})),
                )
                .await
                .expect("labels changed");
        }
    };
    // A barrier: a label change to w2's child runs w2 once more, after whatever the earlier
    // events made due (one worker runs keys in the order their triggers came).
    let before = runs.count("w2") as u64;
    relabel("2").await;
    wait_widget(&api, "w2", at_least(before + 1)).await;
    let mark = runs.all().len();

    children
        .patch(
            "c1",
            &PatchParams::default(),
            &merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .expect("data changed");
    let before = runs.count("w2") as u64;
    relabel("3").await;
    wait_widget(&api, "w2", at_least(before + 1)).await;
    let after: Vec<String> = runs.all().split_off(mark);
    assert!(after.contains(&"w2".to_string()), "{after:?}");
    assert!(
        !after.contains(&"w1".to_string()),
        "the data change to w1's child triggered w1: {after:?}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_only_resource_sees_metadata_and_settles() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Patch, PatchParams};
    let cluster = cluster().await;
    namespace(&cluster, "sel6").await;
    let calls = Calls::default();
    let (created, updated) = (calls.clone(), calls.clone());
    let operator = Operator::new().resource(
        Resource::<ConfigMap>::new()
            .metadata_only()
            .label_selector("app=meta")
            .on_create(
                Handler::new(move |ctx: Context<ConfigMap>| {
                    let calls = created.clone();
                    async move {
                        calls.record(format!(
                            "create {} data {}",
                            ctx.name(),
                            ctx.object.data.is_some()
                        ));
                        HandlerResult::Ok(())
                    }
                })
                .id("create"),
            )
            .on_update(
                Handler::new(move |ctx: Context<ConfigMap>| {
                    let calls = updated.clone();
                    async move {
                        calls.record(format!("update {}", ctx.name()));
                        HandlerResult::Ok(())
                    }
                })
                .id("update"),
            ),
    );
    let running = cluster.run(operator);
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(cluster.client(), "sel6");
    let make = |name: &str| {
        serde_json::from_value::<ConfigMap>(json!({
            "metadata": {"name": name, "labels": {"app": "meta"}}, "data": {"big": "x".repeat(1000)}
        }))
        .expect("config map")
    };
    let handled = |c: &ConfigMap| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kopr.dev/last-handled-configuration"))
            .cloned()
    };
    api.create(&PostParams::default(), &make("one"))
        .await
        .expect("created");
    kopr::testing::wait_for(&api, "one", WAIT, |c: Option<&ConfigMap>| {
        c.and_then(handled).is_some()
    })
    .await
    .expect("handled");
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"tier": "gold"}}}));
    api.patch("one", &PatchParams::default(), &relabel)
        .await
        .expect("relabelled");
    kopr::testing::wait_for(&api, "one", WAIT, |c: Option<&ConfigMap>| {
        c.and_then(handled)
            .is_some_and(|base| base.contains("gold"))
    })
    .await
    .expect("the update handled");
    // Another object handled after: had the first one looped, its handlers would show again.
    api.create(&PostParams::default(), &make("two"))
        .await
        .expect("created");
    kopr::testing::wait_for(&api, "two", WAIT, |c: Option<&ConfigMap>| {
        c.and_then(handled).is_some()
    })
    .await
    .expect("handled");
    assert_eq!(
        calls.all(),
        [
            "create one data false",
            "update one",
            "create two data false"
        ]
    );
    let data = api.get("one").await.expect("one").data.unwrap_or_default();
    assert_eq!(data["big"].len(), 1000, "the data was never written back");
    running.stop().await.unwrap();
}
