//! Operator-level handlers and settings: startup handlers gate watching (temporary failures
//! retried, permanent ones stop the operator), cleanup handlers run on stop, and storing
//! handler results in status can be switched off.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::*;
use kopr::{Context, Error, Handler, HandlerError, HandlerResult, Lifecycle, Operator, Resource};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_gates_watching_and_cleanup_runs_on_stop() {
    let cluster = cluster().await;
    namespace(&cluster, "l1").await;
    let calls = Calls::default();
    let attempts = Arc::new(AtomicU32::new(0));
    let (s, c, h, a) = (
        calls.clone(),
        calls.clone(),
        calls.clone(),
        attempts.clone(),
    );
    let operator = Operator::new()
        .memo(String::from("memo-value"))
        .on_startup(move |lifecycle: Lifecycle| {
            let (calls, attempts) = (s.clone(), a.clone());
            async move {
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(HandlerError::temporary(
                        "not ready",
                        Duration::from_millis(200),
                    ));
                }
                let memo = lifecycle.memo::<String>().map(|m| m.as_str().to_owned());
                calls.record(format!("startup {}", memo.unwrap_or_default()));
                Ok(())
            }
        })
        .on_cleanup(move |_lifecycle: Lifecycle| {
            let calls = c.clone();
            async move {
                calls.record("cleanup");
                Ok(())
            }
        })
        .resource(
            Resource::<Widget>::custom().on_create(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = h.clone();
                    async move {
                        calls.record(format!("create {}", ctx.name()));
                        HandlerResult::Ok("stored")
                    }
                })
                .id("make"),
            ),
        );
    let api = widgets(&cluster, "l1");
    create_widget(&api, "early", "x").await;
    let running = cluster.run(operator);
    wait_widget(&api, "early", |w| w.pointer("/status/make").is_some()).await;
    running.stop().await.unwrap();
    assert_eq!(
        calls.all(),
        vec!["startup memo-value", "create early", "cleanup"]
    );
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        2,
        "the temporary startup failure was retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_startup_failure_stops_the_operator() {
    let cluster = cluster().await;
    let operator = Operator::new()
        .on_startup(|_lifecycle: Lifecycle| async { Err(HandlerError::permanent("no licence")) })
        .resource(Resource::<Widget>::custom().on_create(recording(&Calls::default(), "never")));
    let result = cluster.run(operator).stop_after_exit().await;
    match result {
        Err(Error::Startup { message, .. }) => assert_eq!(message, "no licence"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_in_status_can_be_switched_off() {
    let cluster = cluster().await;
    namespace(&cluster, "l2").await;
    let operator = Operator::new().store_results(false).resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(|_ctx: Context<Widget>| async { HandlerResult::Ok("not stored") })
                .id("quiet"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "l2");
    create_widget(&api, "q", "x").await;
    let body = wait_widget(&api, "q", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert!(body.pointer("/status/quiet").is_none(), "{body}");
    running.stop().await.unwrap();
}
