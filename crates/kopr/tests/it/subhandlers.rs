//! Subhandlers (`Context::subhandler`, Kopf's `@kopf.subhandler`) through the embedded API
//! server: one per item of the spec, each with its own persisted progress; one failing
//! temporarily is retried without running its succeeded siblings again, across an operator
//! restart; the parent completes once all of them did, and a permanent failure fails it.

use std::time::Duration;

use crate::common::*;
use kopr::{Context, Handler, HandlerError, Operator, Resource};
use serde_json::json;

/// One subhandler per `spec.extra` entry: `ok` succeeds, `flaky` fails on its first attempt
/// (retried after a second), `broken` fails for good.
fn items_handler(calls: &Calls) -> Handler<Widget> {
    let calls = calls.clone();
    Handler::new(move |ctx: Context<Widget>| {
        let calls = calls.clone();
        async move {
            calls.record("parent");
            for (key, kind) in ctx.object.spec.extra.clone().unwrap_or_default() {
                let (calls, id) = (calls.clone(), key.clone());
                ctx.subhandler(&id, move |ctx: Context<Widget>| {
                    let (calls, key, kind) = (calls.clone(), key.clone(), kind.clone());
                    async move {
                        calls.record(format!("sub:{key}"));
                        assert_eq!(ctx.handler_id(), format!("items/{key}"));
                        match kind.as_str() {
                            "flaky" if ctx.retry() == 0 => {
                                Err(HandlerError::temporary("not yet", Duration::from_secs(1)))
                            }
                            "broken" => Err(HandlerError::permanent("cannot")),
                            _ => Ok(format!("{key} done")),
                        }
                    }
                });
            }
            Ok("all done")
        }
    })
    .id("items")
}

fn operator(calls: &Calls) -> Operator {
    Operator::new().resource(Resource::<Widget>::custom().on_create(items_handler(calls)))
}

async fn create_with_items(api: &kube::Api<Widget>, name: &str, items: serde_json::Value) {
    let widget: Widget = serde_json::from_value(json!({
        "apiVersion": "kopr.test/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"message": "m", "extra": items}
    }))
    .expect("widget");
    api.create(&kube::api::PostParams::default(), &widget)
        .await
        .expect("widget created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_subhandler_is_retried_without_its_siblings_across_a_restart() {
    let cluster = cluster().await;
    namespace(&cluster, "subs").await;
    let api = widgets(&cluster, "subs");
    let calls = Calls::default();
    // Items set before the operator runs, so its create handler sees them.
    create_with_items(&api, "w", json!({"a": "ok", "b": "flaky", "c": "ok"})).await;
    let first = cluster.run(operator(&calls));
    // The flaky one failed once and said so on the object; then the operator stops.
    wait_widget(&api, "w", |w| {
        annotations(w)
            .get("kopr.dev/items.b")
            .and_then(|v| v.as_str())
            .is_some_and(|v| v.contains("\"retries\":1"))
    })
    .await;
    first.stop().await.unwrap();
    assert_eq!(calls.count("sub:a"), 1, "{:?}", calls.all());
    assert_eq!(calls.count("sub:b"), 1, "{:?}", calls.all());

    let second = cluster.run(operator(&calls));
    // The status lands first, the object's part (records cleared, diff base) last.
    let body = wait_widget(&api, "w", |w| {
        w.pointer("/status/items") == Some(&json!("all done"))
            && annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    second.stop().await.unwrap();
    assert_eq!(
        calls.count("sub:a"),
        1,
        "a succeeded before: {:?}",
        calls.all()
    );
    assert_eq!(calls.count("sub:b"), 2, "{:?}", calls.all());
    assert_eq!(calls.count("sub:c"), 1, "{:?}", calls.all());
    assert_eq!(body.pointer("/status/items~1a"), Some(&json!("a done")));
    assert!(
        annotations(&body)
            .keys()
            .all(|k| !k.starts_with("kopr.dev/items")),
        "the records go with the cause: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subhandler_failing_for_good_fails_its_parent() {
    let cluster = cluster().await;
    namespace(&cluster, "subs-broken").await;
    let api = widgets(&cluster, "subs-broken");
    let calls = Calls::default();
    create_with_items(&api, "w", json!({"a": "ok", "z": "broken"})).await;
    let running = cluster.run(operator(&calls));
    // A failed cause is done: its records go, the diff base is stored.
    let body = wait_widget(&api, "w", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert!(
        annotations(&body)
            .keys()
            .all(|k| !k.starts_with("kopr.dev/items")),
        "{body}"
    );
    let said = cluster
        .wait_for_warning("subs-broken", "w", WAIT, |e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.contains("subhandlers failed: items/z"))
        })
        .await;
    assert!(said.is_ok(), "{said:?} {body}");
    running.stop().await.unwrap();
    assert!(body.pointer("/status/items").is_none(), "{body}");
    assert_eq!(calls.count("sub:a"), 1, "{:?}", calls.all());
    assert_eq!(calls.count("sub:z"), 1, "{:?}", calls.all());
}
