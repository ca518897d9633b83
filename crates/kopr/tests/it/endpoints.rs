//! The health and metrics endpoints of an operator running against the embedded API server:
//! `/healthz` answers while the process runs, `/readyz` only once every resource is listed,
//! and `/metrics` counts handler runs by outcome, durations, watches, API requests and
//! leadership in the OpenMetrics text format.

use std::time::Duration;

use crate::common::*;
use kopr::{Context, HandlerError, HandlerResult, Operator, Resource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// GETs `path` over plain HTTP; returns the status and body.
async fn get(address: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    let code = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((code, body))
}

/// Waits until `path` answers `code`; returns the body.
async fn until(address: std::net::SocketAddr, path: &str, code: u16) -> String {
    for _ in 0..500 {
        if let Some((got, body)) = get(address, path).await
            && got == code
        {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{path} never answered {code}");
}

/// Polls `path` until it answers `code` with `body`; the last answer is in the panic.
async fn until_answer(address: std::net::SocketAddr, path: &str, code: u16, body: &str) {
    let mut last = None;
    for _ in 0..500 {
        last = get(address, path).await;
        if last.as_ref().is_some_and(|(c, b)| *c == code && b == body) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{path} never answered {code} {body:?}; last: {last:?}");
}

/// The value of the sample `name{labels}` (labels as written, in order).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_waits_for_resources_that_are_not_served() {
    let cluster = cluster().await;
    let health = free_address();
    let operator = Operator::new()
        .resource(Resource::dynamic("example.com", "v1", "nothings"))
        .health_listen(health);
    let running = cluster.run(operator);
    assert_eq!(until(health, "/healthz", 200).await, "ok");
    assert_eq!(
        get(health, "/readyz").await,
        Some((503, "watches are not caught up yet".to_string()))
    );
    assert_eq!(get(health, "/metrics").await.map(|r| r.0), Some(404));
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_handler_runs_by_outcome() {
    let cluster = cluster().await;
    namespace(&cluster, "metered").await;
    let (health, metrics) = (free_address(), free_address());
    let handler = kopr::Handler::new(|ctx: Context<Widget>| async move {
        if ctx.object.spec.message == "refuse" {
            return Err(HandlerError::permanent("refused"));
        }
        HandlerResult::Ok(())
    })
    .id("metered");
    let operator = Operator::new()
        .resource(Resource::<Widget>::custom().on_create(handler))
        .health_listen(health)
        .metrics_listen(metrics);
    let running = cluster.run(operator);
    until(health, "/readyz", 200).await;
    let api = widgets(&cluster, "metered");
    for (name, message) in [("one", "fine"), ("two", "fine"), ("three", "refuse")] {
        create_widget(&api, name, message).await;
    }
    let series = |outcome: &str| {
        format!(
            "kopr_handler_runs_total{{resource=\"kopr.test/v1/widgets\",handler=\"metered\",outcome=\"{outcome}\"}}"
        )
    };
    let mut text = String::new();
    for _ in 0..500 {
        text = until(metrics, "/metrics", 200).await;
        // The runs are counted when they end; their outcomes are written after.
        if sample(&text, &series("success")) == Some(2.0)
            && sample(&text, &series("permanent")) == Some(1.0)
            && sample(
                &text,
                "kopr_api_requests_total{verb=\"PATCH\",code=\"200\"}",
            )
            .is_some_and(|n| n >= 3.0)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sample(&text, &series("success")), Some(2.0), "{text}");
    assert_eq!(sample(&text, &series("permanent")), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "kopr_handler_duration_seconds_count{resource=\"kopr.test/v1/widgets\",handler=\"metered\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "kopr_watch_starts_total{resource=\"kopr.test/v1/widgets\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "kopr_api_requests_total{verb=\"PATCH\",code=\"200\"}"
        )
        .is_some_and(|n| n >= 3.0),
        "{text}"
    );
    // (Other tests' operators in this process may lead too.)
    assert!(
        sample(&text, "kopr_leader").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        text.contains("# TYPE kopr_handler_duration_seconds histogram"),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_member_reports_the_shards_it_owns_and_the_members_it_sees() {
    let cluster = cluster().await;
    let metrics = free_address();
    let sharding = kopr::shards::Sharding::new(
        kopr::leader::LeaderElection::new("metered-shards")
            .namespace("default")
            .identity("only")
            .lease_duration(Duration::from_secs(3))
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(200)),
    )
    .count(16);
    let operator = Operator::new()
        .resource(
            Resource::<Widget>::custom()
                .on_create(|_ctx: Context<Widget>| async { HandlerResult::Ok(()) }),
        )
        .sharding(sharding)
        .metrics_listen(metrics);
    let running = cluster.run(operator);
    let mut owned = None;
    for _ in 0..500 {
        let text = until(metrics, "/metrics", 200).await;
        owned = sample(&text, "kopr_shards_owned");
        if owned == Some(16.0) {
            assert_eq!(sample(&text, "kopr_shard_members"), Some(1.0));
            // Other tests of this binary may run operators in this process at the same time.
            assert!(sample(&text, "kopr_leader").is_some_and(|n| n >= 1.0));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(owned, Some(16.0), "the only member owns every shard");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authors_checks_and_metrics_are_served_beside_kopr_s() {
    use kopr::metrics::prometheus_client::metrics::counter::Counter;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let cluster = cluster().await;
    let (health, metrics) = (free_address(), free_address());
    let (connected, alive) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(true)),
    );
    let (c, a) = (connected.clone(), alive.clone());
    let counter: Counter =
        kopr::metrics::register("widgets_polished", "Widgets polished", Counter::default())
            .expect("a new name");
    let operator = Operator::new()
        .resource(Resource::<Widget>::custom())
        .readiness_check("backend", move || {
            if c.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("not connected yet")
            }
        })
        .liveness_check("loop", move || {
            if a.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("the loop stopped")
            }
        })
        .health_listen(health)
        .metrics_listen(metrics);
    let running = cluster.run(operator);
    // Once the watches are caught up (503 "watches are not caught up yet" before), the
    // author's failing check keeps it not ready, with its reason.
    until_answer(
        health,
        "/readyz",
        503,
        "[-]backend failed: not connected yet\n",
    )
    .await;
    connected.store(true, Ordering::SeqCst);
    assert_eq!(until(health, "/readyz", 200).await, "ok");
    assert_eq!(until(health, "/healthz", 200).await, "ok");
    alive.store(false, Ordering::SeqCst);
    assert_eq!(
        until(health, "/healthz", 500).await,
        "[-]loop failed: the loop stopped\n"
    );

    counter.inc();
    counter.inc();
    let text = until(metrics, "/metrics", 200).await;
    assert_eq!(sample(&text, "widgets_polished_total"), Some(2.0), "{text}");
    assert!(text.contains("# TYPE kopr_leader gauge"), "{text}");
    // The same name again is the same metric; kopr's prefix and bad names are refused.
    let again: Counter =
        kopr::metrics::register("widgets_polished", "Widgets polished", Counter::default())
            .expect("the same metric");
    assert_eq!(again.get(), 2);
    assert!(matches!(
        kopr::metrics::register("kopr_mine", "x", Counter::<u64>::default()),
        Err(kopr::metrics::MetricsError::Reserved(_))
    ));
    assert!(matches!(
        kopr::metrics::register(
            "widgets_polished",
            "x",
            kopr::metrics::prometheus_client::metrics::gauge::Gauge::<i64>::default()
        ),
        Err(kopr::metrics::MetricsError::Conflict(_))
    ));
    assert!(matches!(
        kopr::metrics::register("bad-name", "x", Counter::<u64>::default()),
        Err(kopr::metrics::MetricsError::Name(_))
    ));
    running.stop().await.unwrap();
}
