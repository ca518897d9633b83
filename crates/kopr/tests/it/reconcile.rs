//! The reconcile model through the embedded API server: a reconcile runs on create, on spec
//! changes, on changes and deletion of its owned children (putting back hand edits with
//! server-side apply) and on watched objects through a mapper; triggers during a run coalesce;
//! requeues run it again; errors back off per object and reset on success; cleanup runs with
//! the finalizer; cause handlers and the reconcile of one object take turns.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kopr::reconcile::{Action, Key, Reconcile};
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The ConfigMap a widget asks for: named after it, `data.message` its message.
fn desired_child(ctx: &Context<Widget>) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": ctx.name()},
        "data": {"message": ctx.object.spec.message},
    }))
    .expect("config map")
}

/// Applies the child, reads the Secret labelled `widget=<its name>` (watched), and reports
/// both in the status.
async fn reconcile_child(calls: Calls, ctx: Context<Widget>) -> HandlerResult<Action> {
    calls.record(ctx.name());
    let applied = ctx.apply(&desired_child(&ctx)).await?;
    let secrets: Api<Secret> = Api::namespaced(ctx.client().clone(), ctx.namespace().unwrap_or(""));
    let labelled = ListParams::default().labels(&format!("widget={}", ctx.name()));
    let secret = secrets.list(&labelled).await?.items.into_iter().next();
    let token = secret
        .and_then(|s| {
            s.string_data.or(s.data.map(|d| {
                d.into_iter()
                    .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                    .collect()
            }))
        })
        .and_then(|d| d.get("token").cloned());
    let owned = ctx.owned::<ConfigMap>()?;
    ctx.patch()
        .set("status.message", &ctx.object.spec.message)
        .set("status.owned", owned.len())
        .set("status.token", token)
        .set("status.childUid", applied.object.metadata.uid);
    Ok(Action::await_change())
}

fn config_maps(cluster: &kopr::testing::TestCluster, namespace: &str) -> Api<ConfigMap> {
    Api::namespaced(cluster.client(), namespace)
}

async fn wait_config_map(
    api: &Api<ConfigMap>,
    name: &str,
    check: impl Fn(&ConfigMap) -> bool + Send,
) -> ConfigMap {
    kopr::testing::wait_for(api, name, WAIT, move |cm: Option<&ConfigMap>| {
        cm.is_some_and(&check)
    })
    .await
    .expect("config map as expected")
    .expect("config map present")
}

fn message_of(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("message").map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_follows_the_object_its_children_and_watched_objects() {
    let cluster = cluster().await;
    namespace(&cluster, "rec").await;
    let calls = Calls::default();
    let recorded = calls.clone();
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .reconcile(move |ctx| reconcile_child(recorded.clone(), ctx))
            .owns::<ConfigMap>()
            .watches(|secret: &Secret| {
                let namespace = secret.metadata.namespace.clone().unwrap_or_default();
                let labels = secret.metadata.labels.iter().flatten();
                labels
                    .filter(|(k, _)| *k == "widget")
                    .map(|(_, widget)| Key::namespaced(namespace.clone(), widget.clone()))
                    .collect()
            }),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "rec");
    let children = config_maps(&cluster, "rec");

    // Created: the child is applied with an owner reference, the status reports it.
    create_widget(&api, "w", "hello").await;
    let body = wait_widget(&api, "w", |w| {
        w.pointer("/status/message") == Some(&json!("hello"))
    })
    .await;
    assert_eq!(body.pointer("/status/owned"), Some(&json!(1)), "{body}");
    let child = wait_config_map(&children, "w", |cm| message_of(cm) == Some("hello")).await;
    let owner = &child.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Widget", Some(true))
    );
    let managers: Vec<_> = child
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(managers.contains(&"kopr".to_owned()), "{managers:?}");

    // The spec changes: so does the child.
    let patch = json!({"spec": {"message": "changed"}});
    api.patch("w", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_config_map(&children, "w", |cm| message_of(cm) == Some("changed")).await;

    // A hand edit of the child is put back (the owned child's change triggers the reconcile).
    let edit = json!({"data": {"message": "by hand"}});
    children
        .patch("w", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    wait_config_map(&children, "w", |cm| message_of(cm) == Some("changed")).await;

    // A deleted child is made again.
    let old_uid = child.metadata.uid.clone();
    children
        .delete("w", &DeleteParams::default())
        .await
        .unwrap();
    let again = wait_config_map(&children, "w", |cm| cm.metadata.uid != old_uid).await;
    assert_eq!(message_of(&again), Some("changed"));

    // A watched Secret, mapped to the widget its label names, triggers it too.
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "rec");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s", "labels": {"widget": "w"}}, "stringData": {"token": "one"}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    wait_widget(&api, "w", |w| {
        w.pointer("/status/token") == Some(&json!("one"))
    })
    .await;
    let rotate = json!({"stringData": {"token": "two"}});
    secrets
        .patch("s", &PatchParams::default(), &Patch::Merge(&rotate))
        .await
        .unwrap();
    wait_widget(&api, "w", |w| {
        w.pointer("/status/token") == Some(&json!("two"))
    })
    .await;
    // Relabelled for another widget: the one it was mapped to before hears of it too.
    let moved = json!({"metadata": {"labels": {"widget": "other"}}});
    secrets
        .patch("s", &PatchParams::default(), &Patch::Merge(&moved))
        .await
        .unwrap();
    wait_widget(&api, "w", |w| w.pointer("/status/token").is_none()).await;
    let back = json!({"metadata": {"labels": {"widget": "w"}}});
    secrets
        .patch("s", &PatchParams::default(), &Patch::Merge(&back))
        .await
        .unwrap();
    wait_widget(&api, "w", |w| {
        w.pointer("/status/token") == Some(&json!("two"))
    })
    .await;
    secrets.delete("s", &DeleteParams::default()).await.unwrap();
    wait_widget(&api, "w", |w| w.pointer("/status/token").is_none()).await;
    assert!(calls.count("w") >= 6, "{:?}", calls.all());
    running.stop().await.unwrap();
}

/// Records the message each run saw; the first run waits for the gate.
async fn gated(
    calls: Calls,
    entered: Arc<tokio::sync::watch::Sender<String>>,
    gate: Arc<tokio::sync::Semaphore>,
    ctx: Context<Widget>,
) -> HandlerResult<Action> {
    entered.send_replace(ctx.object.spec.message.clone());
    let _permit = gate.acquire().await.expect("gate");
    calls.record(format!("run:{}", ctx.object.spec.message));
    ctx.patch().set("status.seen", &ctx.object.spec.message);
    Ok(Action::await_change())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_during_a_run_coalesce_into_one_more_run() {
    let cluster = cluster().await;
    namespace(&cluster, "burst").await;
    let calls = Calls::default();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (seen, mut seen_by_test) = tokio::sync::watch::channel(String::new());
    let seen = Arc::new(seen);
    let (entered, mut entered_by_test) = tokio::sync::watch::channel(String::new());
    let entered = Arc::new(entered);
    let (recorded, held) = (calls.clone(), gate.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .reconcile(move |ctx| gated(recorded.clone(), entered.clone(), held.clone(), ctx))
            .on_event(move |ctx: Context<Widget>| {
                let seen = seen.clone();
                async move {
                    seen.send_replace(ctx.object.spec.message.clone());
                    Ok(())
                }
            }),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "burst");
    create_widget(&api, "b", "m0").await;
    // The first run holds at the gate while ten changes arrive.
    tokio::time::timeout(WAIT, entered_by_test.wait_for(|m| m == "m0"))
        .await
        .expect("the first run starts")
        .expect("the operator runs");
    for n in 1..=10 {
        let patch = json!({"spec": {"message": format!("m{n}")}});
        api.patch("b", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    // Event handlers see an event once it reached the object's slot.
    tokio::time::timeout(WAIT, seen_by_test.wait_for(|m| m == "m10"))
        .await
        .expect("the last event arrives")
        .expect("the operator runs");
    gate.add_permits(100);
    wait_widget(&api, "b", |w| {
        w.pointer("/status/seen") == Some(&json!("m10"))
    })
    .await;
    let runs: Vec<String> = calls
        .all()
        .into_iter()
        .filter(|c| c.starts_with("run:"))
        .collect();
    assert_eq!(runs, ["run:m0", "run:m10"], "{:?}", calls.all());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_runs_the_reconcile_again() {
    let cluster = cluster().await;
    namespace(&cluster, "requeue").await;
    let calls = Calls::default();
    let recorded = calls.clone();
    let operator = Operator::new().resource(Resource::<Widget>::custom().reconcile(
        move |ctx: Context<Widget>| {
            let calls = recorded.clone();
            async move {
                calls.record(ctx.name());
                let runs = calls.count(ctx.name());
                ctx.patch().set("status.runs", runs);
                Ok(match runs {
                    ..3 => Action::requeue(Duration::from_millis(100)),
                    _ => Action::await_change(),
                })
            }
        },
    ));
    let running = cluster.run(operator);
    let api = widgets(&cluster, "requeue");
    create_widget(&api, "r", "m").await;
    wait_widget(&api, "r", |w| w.pointer("/status/runs") == Some(&json!(3))).await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_back_off_per_object_and_reset_on_success() {
    let cluster = cluster().await;
    namespace(&cluster, "backoff").await;
    let calls = Calls::default();
    let recorded = calls.clone();
    let reconcile = Reconcile::new(move |ctx: Context<Widget>| {
        let calls = recorded.clone();
        async move {
            let name = ctx.name().to_owned();
            calls.record(format!("{name}:retry{}", ctx.retry()));
            let message = ctx.object.spec.message.clone();
            if message == "bad" {
                return Err(HandlerError::permanent("bad message"));
            }
            if message.starts_with("flaky") && calls.count(&format!("{name}:retry0")) == 1 {
                // Fails twice on its first cause, then succeeds.
                if ctx.retry() < 2 {
                    return Err(kopr::HandlerError::message("not yet"));
                }
            }
            if message == "slow" && ctx.retry() == 0 {
                return Err(HandlerError::temporary("wait", Duration::from_millis(50)));
            }
            ctx.patch().set("status.done", &message);
            Ok(Action::await_change())
        }
    })
    .id("checked");
    let operator = Operator::new()
        .max_error_backoff(Duration::from_millis(200))
        .resource(Resource::<Widget>::custom().reconcile(reconcile));
    let running = cluster.run(operator);
    let api = widgets(&cluster, "backoff");
    create_widget(&api, "flaky", "flaky-1").await;
    create_widget(&api, "steady", "fine").await;
    create_widget(&api, "broken", "bad").await;
    create_widget(&api, "slow", "slow").await;
    // Others are served while one fails.
    wait_widget(&api, "steady", |w| {
        w.pointer("/status/done") == Some(&json!("fine"))
    })
    .await;
    wait_widget(&api, "slow", |w| {
        w.pointer("/status/done") == Some(&json!("slow"))
    })
    .await;
    wait_widget(&api, "flaky", |w| {
        w.pointer("/status/done") == Some(&json!("flaky-1"))
    })
    .await;
    assert_eq!(calls.count("flaky:retry1"), 1, "{:?}", calls.all());
    assert_eq!(calls.count("flaky:retry2"), 1, "{:?}", calls.all());
    assert_eq!(
        calls.count("slow:retry1"),
        1,
        "a temporary error's delay: {:?}",
        calls.all()
    );
    // Reset by the success: the next change starts from retry 0.
    let patch = json!({"spec": {"message": "flaky-2"}});
    api.patch("flaky", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_widget(&api, "flaky", |w| {
        w.pointer("/status/done") == Some(&json!("flaky-2"))
    })
    .await;
    assert_eq!(calls.count("flaky:retry0"), 2, "{:?}", calls.all());
    // A permanent error waits for a change: one run, no retries, one Warning event.
    assert_eq!(calls.count("broken:retry1"), 0, "{:?}", calls.all());
    // Events are posted in the background: wait for it rather than read once.
    let warned = cluster
        .wait_for_warning("backoff", "broken", WAIT, |e| {
            e.reason.as_deref() == Some("ReconcileFailed")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("bad message"))
        })
        .await;
    assert!(
        warned.is_ok(),
        "{:?}",
        events_about(&cluster, "backoff", "broken").await
    );
    let patch = json!({"spec": {"message": "good"}});
    api.patch("broken", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_widget(&api, "broken", |w| {
        w.pointer("/status/done") == Some(&json!("good"))
    })
    .await;
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_runs_with_the_finalizer_and_cause_handlers_take_turns() {
    let cluster = cluster().await;
    namespace(&cluster, "turns").await;
    let calls = Calls::default();
    let (on_reconcile, on_cleanup, on_created) = (calls.clone(), calls.clone(), calls.clone());
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = on_created.clone();
                    async move {
                        calls.record("created");
                        ctx.patch().set("status.created", true);
                        Ok(())
                    }
                })
                .id("created"),
            )
            .reconcile(move |ctx: Context<Widget>| {
                let calls = on_reconcile.clone();
                async move {
                    // The create handler ran first, and its write landed.
                    let created = ctx.status().get("created") == Some(&json!(true));
                    calls.record(format!("reconcile:created={created}"));
                    ctx.patch()
                        .set("status.reconciled", &ctx.object.spec.message);
                    Ok(Action::await_change())
                }
            })
            .on_delete(
                kopr::Handler::new(move |ctx: Context<Widget>| {
                    let calls = on_cleanup.clone();
                    async move {
                        calls.record("cleanup");
                        if calls.count("cleanup") == 1 {
                            return Err(HandlerError::temporary(
                                "once more",
                                Duration::from_millis(50),
                            ));
                        }
                        let _ = ctx;
                        Ok(())
                    }
                })
                .id("cleanup"),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "turns");
    create_widget(&api, "t", "one").await;
    let body = wait_widget(&api, "t", |w| {
        w.pointer("/status/reconciled") == Some(&json!("one"))
    })
    .await;
    assert_eq!(
        finalizers(&body).len(),
        1,
        "cleanup needs the finalizer: {body}"
    );
    assert_eq!(calls.count("created"), 1);
    assert_eq!(
        calls.count("reconcile:created=false"),
        0,
        "{:?}",
        calls.all()
    );
    api.delete("t", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "t").await;
    assert_eq!(calls.count("cleanup"), 2, "{:?}", calls.all());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owning_without_a_reconcile_is_refused() {
    let cluster = cluster().await;
    let operator = Operator::new().resource(Resource::<Widget>::custom().owns::<ConfigMap>());
    let result = operator
        .run_until(cluster.client(), std::future::pending())
        .await;
    let error = result.expect_err("refused").to_string();
    assert!(error.contains("no reconcile"), "{error}");
}
