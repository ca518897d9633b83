//! Change handlers against the embedded API server: create, update, field, delete and resume,
//! with results in status, the diff base annotation, and the finalizer only when needed.

use crate::common::*;
use kopr::{Context, HandlerResult, Operator, Resource};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

fn merge(value: Value) -> Patch<Value> {
    Patch::Merge(value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_update_field_and_delete_handlers() {
    let cluster = cluster().await;
    namespace(&cluster, "h1").await;
    let calls = Calls::default();
    let (c1, c2, c3, c4) = (calls.clone(), calls.clone(), calls.clone(), calls.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = c1.clone();
                    async move {
                        calls.record(format!("create {}", ctx.name()));
                        ctx.patch().label("greeted", Some("yes"));
                        let said = format!("said {}", ctx.object.spec.message);
                        kopr::info(ctx.body(), "Greeted", &said);
                        ctx.warn("Careful", "a warning from the handler");
                        Ok(json!({"said": ctx.object.spec.message}))
                    }
                })
                .id("greet"),
            )
            .on_update(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = c2.clone();
                    async move {
                        let changes: Vec<String> =
                            ctx.diff().iter().map(|d| d.to_string()).collect();
                        calls.record(format!("update {}: {}", ctx.name(), changes.join("; ")));
                        HandlerResult::Ok(())
                    }
                })
                .id("changed"),
            )
            .on_field(
                "spec.message",
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = c3.clone();
                    async move {
                        let changes: Vec<String> =
                            ctx.diff().iter().map(|d| d.to_string()).collect();
                        calls.record(format!(
                            "field {} old={:?} new={:?} diff={}",
                            ctx.name(),
                            ctx.old_value().cloned(),
                            ctx.new_value().cloned(),
                            changes.join("; ")
                        ));
                        HandlerResult::Ok(())
                    }
                })
                .id("message"),
            )
            .on_delete(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = c4.clone();
                    async move {
                        calls.record(format!("delete {}", ctx.name()));
                        HandlerResult::Ok(())
                    }
                })
                .id("goodbye"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "h1");
    create_widget(&api, "w1", "hello").await;
    let body = wait_widget(&api, "w1", |w| {
        w.pointer("/status/greet/said") == Some(&json!("hello"))
            && annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert_eq!(finalizers(&body), vec!["kopr.dev/finalizer"]);
    assert_eq!(
        body.pointer("/metadata/labels/greeted"),
        Some(&json!("yes"))
    );
    let ann = annotations(&body);
    assert!(
        !ann.contains_key("kopr.dev/greet"),
        "progress cleared: {ann:?}"
    );
    let base: Value =
        serde_json::from_str(ann["kopr.dev/last-handled-configuration"].as_str().unwrap()).unwrap();
    assert_eq!(
        base,
        json!({"spec": {"message": "hello"}, "metadata": {"labels": {"greeted": "yes"}}})
    );
    assert_eq!(calls.count("create w1"), 1);
    let mut events = Vec::new();
    for _ in 0..100 {
        events = events_about(&cluster, "h1", "w1").await;
        if events.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(
        events.contains(&("Normal".into(), "Greeted".into(), "said hello".into())),
        "{events:?}"
    );
    assert!(
        events.contains(&(
            "Warning".into(),
            "Careful".into(),
            "a warning from the handler".into()
        )),
        "{events:?}"
    );
    assert!(calls.all().iter().any(|c| c == "field w1 old=None new=Some(String(\"hello\")) diff=add <root>: <none> -> \"hello\""), "{:?}", calls.all());

    api.patch(
        "w1",
        &PatchParams::default(),
        &merge(json!({"spec": {"message": "bye", "size": 3}})),
    )
    .await
    .unwrap();
    wait_widget(&api, "w1", |w| {
        annotations(w)
            .get("kopr.dev/last-handled-configuration")
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("bye"))
    })
    .await;
    let all = calls.all();
    assert!(
        all.contains(
            &"update w1: change spec.message: \"hello\" -> \"bye\"; add spec.size: <none> -> 3"
                .to_string()
        ),
        "{all:?}"
    );
    assert!(all.contains(&"field w1 old=Some(String(\"hello\")) new=Some(String(\"bye\")) diff=change <root>: \"hello\" -> \"bye\"".to_string()), "{all:?}");

    // A status-only change is not an update.
    api.patch_status(
        "w1",
        &PatchParams::default(),
        &merge(json!({"status": {"note": "x"}})),
    )
    .await
    .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "w1").await;
    let all = calls.all();
    assert_eq!(
        all.iter().filter(|c| c.starts_with("update")).count(),
        1,
        "{all:?}"
    );
    assert_eq!(calls.count("delete w1"), 1);
    assert_eq!(calls.count("create w1"), 1);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_finalizer_without_delete_handlers_timers_or_daemons() {
    let cluster = cluster().await;
    namespace(&cluster, "h2").await;
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(|_ctx: Context<Widget>| async { HandlerResult::Ok("done") })
            .on_delete(
                kopr::Handler::new(|_ctx: Context<Widget>| async { HandlerResult::Ok(()) })
                    .optional(),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "h2");
    create_widget(&api, "plain", "hi").await;
    let body = wait_widget(&api, "plain", |w| {
        w.pointer("/status")
            .and_then(Value::as_object)
            .is_some_and(|s| s.values().any(|v| v == "done"))
    })
    .await;
    assert!(finalizers(&body).is_empty(), "{body}");
    api.delete("plain", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "plain").await;
    running.stop().await.unwrap();
}

/// One `on_event` run: the object, the message it saw, and when it entered and left.
type EventRuns =
    std::sync::Arc<std::sync::Mutex<Vec<(String, String, std::time::Instant, std::time::Instant)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_object_s_events_reach_its_event_handlers_in_order_one_at_a_time() {
    let cluster = cluster().await;
    namespace(&cluster, "ordered").await;
    let runs = EventRuns::default();
    let seen = std::sync::Arc::new(tokio::sync::Notify::new());
    let (record, told) = (runs.clone(), seen.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom().on_event(
            kopr::Handler::new(move |ctx: Context<Widget>| {
                let (runs, told) = (record.clone(), told.clone());
                async move {
                    let entered = std::time::Instant::now();
                    // Some work, so that two runs for one object at once would overlap.
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    let message = ctx.object.spec.message.clone();
                    runs.lock().unwrap().push((
                        ctx.name().to_string(),
                        message,
                        entered,
                        std::time::Instant::now(),
                    ));
                    told.notify_waiters();
                    HandlerResult::Ok(())
                }
            })
            .id("log"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "ordered");
    let objects = ["o1", "o2", "o3"];
    for name in objects {
        create_widget(&api, name, "m00").await;
    }
    // Every object changes 20 times, the objects concurrently.
    let changes = objects.iter().map(|name| {
        let api = api.clone();
        async move {
            for i in 1..=20 {
                let patch = json!({"spec": {"message": format!("m{i:02}")}});
                api.patch(name, &PatchParams::default(), &merge(patch))
                    .await
                    .unwrap();
            }
        }
    });
    futures::future::join_all(changes).await;
    let all_seen = || {
        let runs = runs.lock().unwrap();
        objects
            .iter()
            .all(|name| runs.iter().any(|(o, m, _, _)| o == name && m == "m20"))
    };
    let wait = async {
        loop {
            let notified = seen.notified();
            if all_seen() {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("every object's last change reached the event handler");
    let runs = runs.lock().unwrap().clone();
    for name in objects {
        let mine: Vec<_> = runs.iter().filter(|(o, ..)| o == name).collect();
        for pair in mine.windows(2) {
            assert!(pair[0].3 <= pair[1].2, "{name}: two event runs overlapped");
            assert!(
                pair[0].1 <= pair[1].1,
                "{name}: {} after {}",
                pair[1].1,
                pair[0].1
            );
        }
        assert!(mine.len() >= 2, "{name}: {mine:?}");
    }
    running.stop().await.unwrap();
}
