//! Outcomes: temporary errors retried with their delay, permanent errors stopping retries,
//! retry limits, panics caught, errors modes; all seen in progress annotations and Events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::*;
use kopr::{Context, ErrorsMode, Handler, HandlerError, HandlerResult, Operator, Resource};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_errors_are_retried_until_success() {
    let cluster = cluster().await;
    namespace(&cluster, "r1").await;
    let attempts = Arc::new(AtomicU32::new(0));
    let seen = attempts.clone();
    let operator = Operator::new().success_events(true).resource(
        Resource::<Widget>::custom().on_create(
            Handler::new(move |ctx: Context<Widget>| {
                let attempts = seen.clone();
                async move {
                    let n = attempts.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(ctx.retry(), n, "retry count passed to the handler");
                    if n < 2 {
                        Err(HandlerError::temporary(
                            format!("not yet ({n})"),
                            Duration::from_millis(400),
                        ))?;
                    }
                    Ok(json!({"attempts": n + 1}))
                }
            })
            .id("flaky"),
        ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "r1");
    create_widget(&api, "f1", "x").await;
    // The progress annotation shows the first failure while the handler waits for its retry.
    let body = wait_widget(&api, "f1", |w| {
        annotations(w)
            .get("kopr.dev/flaky")
            .and_then(Value::as_str)
            .is_some_and(|p| p.contains("\"retries\":1"))
    })
    .await;
    let progress: Value =
        serde_json::from_str(annotations(&body)["kopr.dev/flaky"].as_str().unwrap()).unwrap();
    assert_eq!(progress["message"], "not yet (0)");
    assert!(
        progress["delayed"].is_string() && progress["started"].is_string(),
        "{progress}"
    );
    let body = wait_widget(&api, "f1", |w| {
        w.pointer("/status/flaky/attempts") == Some(&json!(3))
            && annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert!(
        !annotations(&body).contains_key("kopr.dev/flaky"),
        "progress cleared after success"
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    let logs = kopr::testing::capture_logs();
    logs.wait_for(&["Handler 'flaky' succeeded", "r1/f1"], WAIT)
        .await
        .unwrap();
    // Warning events for both failures, Normal for the success (posted in the background).
    let mut events = Vec::new();
    for _ in 0..100 {
        events = events_about(&cluster, "r1", "f1").await;
        if events.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let retrying: Vec<_> = events
        .iter()
        .filter(|e| e.0 == "Warning" && e.1 == "HandlerRetrying")
        .collect();
    assert_eq!(retrying.len(), 2, "{events:?}");
    assert!(
        retrying.iter().any(|e| e.2.contains("not yet (0)")),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.0 == "Normal" && e.2 == "Handler 'flaky' succeeded."),
        "{events:?}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_errors_limits_panics_and_modes() {
    let cluster = cluster().await;
    namespace(&cluster, "r2").await;
    let calls = Calls::default();
    let (a, b, c, d, e) = (
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
    );
    let operator = Operator::new().resource(
        Resource::<Widget>::custom()
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = a.clone();
                    async move {
                        calls.record("permanent");
                        Err::<(), _>(HandlerError::permanent("cannot ever work"))
                    }
                })
                .id("perm"),
            )
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = b.clone();
                    async move {
                        calls.record("limited");
                        HandlerResult::<()>::Err(HandlerError::message("still broken"))
                    }
                })
                .id("limited")
                .retries(2)
                .backoff(Duration::from_millis(100)),
            )
            .on_create(
                Handler::new(move |ctx: Context<Widget>| {
                    let calls = c.clone();
                    async move {
                        calls.record("panicky");
                        if ctx.retry() == 0 {
                            panic!("boom in handler");
                        }
                        HandlerResult::Ok("recovered")
                    }
                })
                .id("panicky")
                .backoff(Duration::from_millis(100)),
            )
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = d.clone();
                    async move {
                        calls.record("ignored");
                        HandlerResult::<()>::Err(HandlerError::message("never mind"))
                    }
                })
                .id("ignored")
                .errors(ErrorsMode::Ignored),
            )
            .on_create(
                Handler::new(move |_ctx: Context<Widget>| {
                    let calls = e.clone();
                    async move {
                        calls.record("strict");
                        HandlerResult::<()>::Err(HandlerError::message("plain error"))
                    }
                })
                .id("strict")
                .errors(ErrorsMode::Permanent),
            ),
    );
    let running = cluster.run(operator);
    let api = widgets(&cluster, "r2");
    create_widget(&api, "p1", "x").await;
    let body = wait_widget(&api, "p1", |w| {
        annotations(w).contains_key("kopr.dev/last-handled-configuration")
    })
    .await;
    assert_eq!(body.pointer("/status/panicky"), Some(&json!("recovered")));
    assert_eq!(calls.count("permanent"), 1, "{:?}", calls.all());
    assert_eq!(calls.count("limited"), 2, "{:?}", calls.all());
    assert_eq!(calls.count("panicky"), 2, "{:?}", calls.all());
    assert_eq!(calls.count("ignored"), 1);
    assert_eq!(calls.count("strict"), 1);
    let mut events = Vec::new();
    for _ in 0..100 {
        events = events_about(&cluster, "r2", "p1").await;
        if events.iter().filter(|e| e.1 == "HandlerFailed").count() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let failed: Vec<&String> = events
        .iter()
        .filter(|e| e.0 == "Warning" && e.1 == "HandlerFailed")
        .map(|e| &e.2)
        .collect();
    assert!(
        failed.contains(&&"Handler 'perm' failed permanently: cannot ever work".to_string()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&&"Handler 'limited' has exceeded 2 retries: still broken".to_string()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&&"Handler 'strict' failed permanently: plain error".to_string()),
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .any(|m| m.contains("ignored") && m.contains("never mind")),
        "{failed:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.1 == "HandlerRetrying" && e.2.contains("panicked: boom in handler")),
        "{events:?}"
    );
    running.stop().await.unwrap();
}
