//! State on the object survives restarts and crashes: no succeeded handler runs twice, the
//! attempt in flight at a crash is retried, and resume handlers run once per start.

use std::time::Duration;

use crate::common::*;
use kopr::{Context, Handler, HandlerError, HandlerResult, Operator, Resource};
use kube::api::{Patch, PatchParams};
use serde_json::json;

fn three_step_operator(calls: &Calls) -> Operator {
    let (a, b, c) = (calls.clone(), calls.clone(), calls.clone());
    Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = a.clone();
                    async move {
                        calls.record("first");
                        HandlerResult::Ok(())
                    }
                })
                .id("first"),
            )
            .on_create(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = b.clone();
                    async move {
                        calls.record(format!("second attempt {}", ctx.retry()));
                        if ctx.retry() == 0 {
                            Err(HandlerError::temporary(
                                "later",
                                Duration::from_millis(1500),
                            ))?;
                        }
                        HandlerResult::Ok(())
                    }
                })
                .id("second"),
            )
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = c.clone();
                    async move {
                        calls.record("third");
                        HandlerResult::Ok(())
                    }
                })
                .id("third"),
            ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_runs_no_succeeded_handler_twice() {
    let cluster = cluster().await;
    namespace(&cluster, "s1").await;
    let calls = Calls::default();
    let first = cluster.run(three_step_operator(&calls));
    let api = widgets(&cluster, "s1");
    create_widget(&api, "r1", "x").await;
    wait_widget(&api, "r1", |w| {
        // "second" waits for its retry while "third", not delayed, has already run.
        annotations(w)
            .get("kopr.dev/second")
            .is_some_and(|p| p.to_string().contains("retries"))
            && annotations(w)
                .get("kopr.dev/third")
                .is_some_and(|p| p.to_string().contains("success"))
    })
    .await;
    first.stop().await.unwrap();
    assert_eq!(calls.all(), vec!["first", "second attempt 0", "third"]);

    let second = cluster.run(three_step_operator(&calls));
    wait_widget(&api, "r1", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    second.stop().await.unwrap();
    assert_eq!(
        calls.all(),
        vec!["first", "second attempt 0", "third", "second attempt 1"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_handler_completes_the_object_after_restart() {
    let cluster = cluster().await;
    namespace(&cluster, "s2").await;
    let calls = Calls::default();
    let stuck_operator = |calls: &Calls, hang: bool| {
        let (a, b) = (calls.clone(), calls.clone());
        Operator::new().resource(
            Resource::<Widget>::custom()
                .on_create(
                    Handler::new(move |_ctx: Context<Widget>| {
                        let calls = a.clone();
                        async move {
                            calls.record("slow started");
                            if hang {
                                // Never finishes: the process is killed in the middle.
                                std::future::pending::<()>().await;
                            }
                            calls.record("slow done");
                            HandlerResult::Ok(())
                        }
                    })
                    .id("slow"),
                )
                .on_create(
                    Handler::new(move |_ctx: Context<Widget>| {
                        let calls = b.clone();
                        async move {
                            calls.record("next");
                            HandlerResult::Ok(())
                        }
                    })
                    .id("next"),
                ),
        )
    };
    let doomed = cluster.run(stuck_operator(&calls, true));
    let api = widgets(&cluster, "s2");
    create_widget(&api, "k1", "x").await;
    for _ in 0..200 {
        if calls.count("slow started") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(calls.all(), vec!["slow started"]);
    doomed.kill().await;

    let revived = cluster.run(stuck_operator(&calls, false));
    wait_widget(&api, "k1", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    revived.stop().await.unwrap();
    assert_eq!(
        calls.all(),
        vec!["slow started", "slow started", "slow done", "next"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_handlers_run_once_per_start() {
    let cluster = cluster().await;
    namespace(&cluster, "s3").await;
    let calls = Calls::default();
    let operator = |calls: &Calls| {
        let (a, b) = (calls.clone(), calls.clone());
        Operator::new().resource(
            Resource::<Widget>::custom()
                .on_create(
                    Handler::new(move |ctx: Context<Widget>| {
                        let calls = a.clone();
                        async move {
                            calls.record(format!("create {}", ctx.name()));
                            HandlerResult::Ok(())
                        }
                    })
                    .id("create"),
                )
                .on_resume(
                    Handler::new(move |ctx: Context<Widget>| {
                        let calls = b.clone();
                        async move {
                            calls.record(format!("resume {}", ctx.name()));
                            HandlerResult::Ok(())
                        }
                    })
                    .id("resume"),
                ),
        )
    };
    let api = widgets(&cluster, "s3");
    let first = cluster.run(operator(&calls));
    create_widget(&api, "old", "x").await;
    wait_widget(&api, "old", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    first.stop().await.unwrap();
    assert_eq!(calls.all(), vec!["create old"]);

    let second = cluster.run(operator(&calls));
    let logs = kopr::testing::capture_logs();
    logs.wait_for(&["Handler 'resume' succeeded", "s3/old"], WAIT)
        .await
        .unwrap();
    // Later changes in the same process do not resume again.
    api.patch(
        "old",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    wait_widget(&api, "old", |w| {
        annotations(w)
            .get("kopr.dev/last-handled-configuration")
            .is_some_and(|a| a.to_string().contains("touched"))
    })
    .await;
    second.stop().await.unwrap();
    assert_eq!(calls.all(), vec!["create old", "resume old"]);
}
