//! Timers (interval, idle) and daemons (cancelled on deletion, then the finalizer released).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::*;
use kopr::{Context, Daemon, HandlerResult, Operator, Resource, Timer};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_run_periodically_and_wait_for_idleness() {
    let cluster = cluster().await;
    namespace(&cluster, "t1").await;
    let ticks = Arc::new(AtomicU32::new(0));
    let idle_ticks = Arc::new(AtomicU32::new(0));
    let (t, i) = (ticks.clone(), idle_ticks.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .timer(
                Timer::every(Duration::from_millis(200), move |_ctx: Context<Widget>| {
                    let ticks = t.clone();
                    async move { HandlerResult::Ok(ticks.fetch_add(1, Ordering::SeqCst) + 1) }
                })
                .id("tick"),
            )
            .timer(
                Timer::every(Duration::from_millis(100), move |_ctx: Context<Widget>| {
                    let ticks = i.clone();
                    async move {
                        ticks.fetch_add(1, Ordering::SeqCst);
                        HandlerResult::Ok(())
                    }
                })
                .id("quiet")
                .idle(Duration::from_millis(1500)),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "t1");
    create_widget(&api, "clock", "0").await;
    // The timer's result is stored in status each time it fires.
    wait_widget(&api, "clock", |w| {
        w.pointer("/status/tick")
            .and_then(|v| v.as_u64())
            .is_some_and(|n| n >= 3)
    })
    .await;
    assert!(finalizers(&api_json(&api, "clock").await).contains(&"kopr.dev/finalizer".to_string()));
    // Keep changing the object faster than the idle period: the idle timer must stay silent.
    for n in 1..=6 {
        api.patch(
            "clock",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": n.to_string()}})),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        idle_ticks.load(Ordering::SeqCst),
        0,
        "the idle timer fired while the object kept changing"
    );
    let logs = kopr::testing::capture_logs();
    // Once the object rests, the idle timer fires.
    for _ in 0..200 {
        if idle_ticks.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        idle_ticks.load(Ordering::SeqCst) > 0,
        "the idle timer never fired"
    );
    api.delete("clock", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "clock").await;
    let after_delete = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        after_delete,
        "timer kept running after deletion"
    );
    drop(logs);
    running.stop().await.unwrap();
}

async fn api_json(api: &kube::Api<Widget>, name: &str) -> serde_json::Value {
    serde_json::to_value(api.get(name).await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_are_cancelled_on_deletion_and_release_the_finalizer() {
    let cluster = cluster().await;
    namespace(&cluster, "t2").await;
    let calls = Calls::default();
    let (d, x) = (calls.clone(), calls.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .daemon(
                Daemon::new(move |ctx: Context<Widget>| {
                    let calls = d.clone();
                    async move {
                        calls.record(format!("started {}", ctx.name()));
                        ctx.cancelled().await;
                        calls.record(format!("cancelled {}", ctx.name()));
                        HandlerResult::Ok(())
                    }
                })
                .id("watcher"),
            )
            .on_delete(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = x.clone();
                    async move {
                        calls.record(format!("delete {}", ctx.name()));
                        HandlerResult::Ok(())
                    }
                })
                .id("cleanup"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "t2");
    create_widget(&api, "d1", "x").await;
    // Only a daemon and a delete handler: the finalizer, and no diff base (nothing tracks changes).
    let body = wait_widget(&api, "d1", |w| !finalizers(w).is_empty()).await;
    assert_eq!(finalizers(&body), vec!["kopr.dev/finalizer"]);
    assert!(!annotations(&body).contains_key("kopr.dev/last-handled-configuration"));
    for _ in 0..100 {
        if calls.count("started d1") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(calls.all(), vec!["started d1"]);
    api.delete("d1", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "d1").await;
    // The daemon was cancelled (and exited) before the delete handler ran and the finalizer went.
    assert_eq!(calls.all(), vec!["started d1", "cancelled d1", "delete d1"]);
    running.stop().await.unwrap();
}
