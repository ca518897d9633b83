//! Many objects at once: each handled exactly once, never more than the worker limit at a time,
//! and events arriving during handling coalesced rather than lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::*;
use kopr::{Context, Handler, HandlerResult, Operator, Resource};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_objects_handled_exactly_once_within_the_worker_limit() {
    const OBJECTS: usize = 500;
    const WORKERS: usize = 8;
    let cluster = cluster().await;
    namespace(&cluster, "m1").await;
    let calls = Calls::default();
    let running_now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (c, r, p) = (calls.clone(), running_now.clone(), peak.clone());
    let operator = Operator::new().workers(WORKERS).resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(move |ctx: Context<Widget>| {
                let (calls, running_now, peak) = (c.clone(), r.clone(), p.clone());
                async move {
                    let now = running_now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    calls.record(ctx.name().to_owned());
                    running_now.fetch_sub(1, Ordering::SeqCst);
                    HandlerResult::Ok(())
                }
            })
            .id("count"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "m1");
    let mut creations = Vec::new();
    for n in 0..OBJECTS {
        let api = api.clone();
        creations.push(tokio::spawn(async move {
            let widget: Widget = serde_json::from_value(json!({
                "apiVersion": "kopr.test/v1", "kind": "Widget",
                "metadata": {"name": format!("m-{n:03}")}, "spec": {"message": "x"}
            }))
            .unwrap();
            api.create(&PostParams::default(), &widget).await.unwrap();
        }));
    }
    for creation in creations {
        creation.await.unwrap();
    }
    for _ in 0..1200 {
        if calls.all().len() >= OBJECTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut names = calls.all();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, OBJECTS, "handler calls");
    assert_eq!(names.len(), OBJECTS, "each object exactly once");
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        peak <= WORKERS,
        "peak concurrency {peak} above the limit {WORKERS}"
    );
    assert!(peak > 1, "objects were handled concurrently (peak {peak})");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_during_handling_are_coalesced_not_lost() {
    let cluster = cluster().await;
    namespace(&cluster, "m2").await;
    let calls = Calls::default();
    let c = calls.clone();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(|_ctx: Context<Widget>| async { HandlerResult::Ok(()) })
            .on_update(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = c.clone();
                    async move {
                        // Slow enough that several updates arrive while it runs.
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        calls.record(ctx.object.spec.message.clone());
                        HandlerResult::Ok(())
                    }
                })
                .id("slow-update"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "m2");
    create_widget(&api, "busy", "0").await;
    wait_widget(&api, "busy", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    for n in 1..=5 {
        api.patch(
            "busy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": n.to_string()}})),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
    }
    wait_widget(&api, "busy", |w| {
        annotations(w)
            .get("kopr.dev/last-handled-configuration")
            .is_some_and(|a| a.to_string().contains("\\\"5\\\""))
    })
    .await;
    running.stop().await.unwrap();
    let seen = calls.all();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("5"),
        "the last update is always handled: {seen:?}"
    );
    assert!(
        seen.len() < 5,
        "intermediate updates were coalesced: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_while_the_create_handler_runs_is_handled_as_an_update() {
    let cluster = cluster().await;
    namespace(&cluster, "m3").await;
    let calls = Calls::default();
    let (c, u) = (calls.clone(), calls.clone());
    let client = cluster.client();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = c.clone();
                    let api: kube::Api<Widget> = kube::Api::namespaced(client.clone(), "m3");
                    async move {
                        calls.record(format!("create {}", ctx.object.spec.message));
                        // Someone else changes the spec before this handler's outcome is
                        // written: the patch response carries the change, and kopr's own
                        // write is newer than the change's watch event.
                        api.patch(
                            ctx.name(),
                            &PatchParams::default(),
                            &Patch::Merge(json!({"spec": {"message": "changed"}})),
                        )
                        .await?;
                        HandlerResult::Ok(())
                    }
                })
                .id("make"),
            )
            .on_update(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = u.clone();
                    async move {
                        calls.record(format!("update {}", ctx.object.spec.message));
                        HandlerResult::Ok(())
                    }
                })
                .id("follow"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "m3");
    create_widget(&api, "raced", "first").await;
    wait_widget(&api, "raced", |w| {
        annotations(w)
            .get("kopr.dev/last-handled-configuration")
            .is_some_and(|a| a.to_string().contains("changed"))
    })
    .await;
    running.stop().await.unwrap();
    assert_eq!(
        calls.all(),
        vec!["create first".to_owned(), "update changed".to_owned()]
    );
}
