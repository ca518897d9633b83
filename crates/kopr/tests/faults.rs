//! The fault-injecting proxy of `kopr::testing`: each kind of fault as a client meets it (429
//! with Retry-After, 500/503 Statuses, a connection dropped before or after the server did the
//! work, a watch cut), and an operator run through it still handling every object.

mod common;

use common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr::kube::api::{Api, PostParams, WatchParams};
use kopr::testing::{FaultProxy, Faults};
use kopr::{Context, HandlerResult, Operator, Resource};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("cm")
}

async fn through(proxy: &FaultProxy) -> kopr::kube::Client {
    kopr::testing::client_from_yaml(&proxy.kubeconfig_yaml())
        .await
        .expect("client through the proxy")
}

/// One raw HTTP/1.1 GET through the proxy (kube-rs's client retries 429 and 503 itself, so the
/// answers are read below it): the status line's code and the headers' text.
async fn raw_get(proxy: &FaultProxy, token: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = proxy.url().trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

fn api_status(e: kopr::kube::Error) -> (u16, String) {
    match e {
        kopr::kube::Error::Api(s) => (s.code, s.reason),
        other => (0, other.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_is_what_a_client_meets() {
    let cluster = cluster().await;
    let direct: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");

    let clean = FaultProxy::start(&cluster, Faults::rate(0.0))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(through(&clean).await, "default");
    api.create(&PostParams::default(), &config_map("clean"))
        .await
        .unwrap();
    assert_eq!(clean.injected().forwarded, 1);

    let token = cluster.server().token().to_string();
    let (code, _) = raw_get(&clean, &token).await;
    assert_eq!(code, 200);

    let throttling = FaultProxy::start(&cluster, Faults::rate(1.0).only(true, false, false, false))
        .await
        .unwrap();
    let (code, text) = raw_get(&throttling, &token).await;
    assert_eq!(code, 429, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    assert!(text.contains("\"reason\":\"TooManyRequests\""), "{text}");
    assert_eq!(throttling.injected().throttled, 1);
    assert_eq!(throttling.injected().forwarded, 0);

    let failing = FaultProxy::start(
        &cluster,
        Faults::rate(1.0).only(false, true, false, false).seed(3),
    )
    .await
    .unwrap();
    let mut codes = Vec::new();
    for _ in 0..8 {
        codes.push(raw_get(&failing, &token).await.0);
    }
    assert!(codes.iter().all(|c| *c == 500 || *c == 503), "{codes:?}");
    assert!(codes.contains(&500) && codes.contains(&503), "{codes:?}");
    assert_eq!(failing.injected().server_errors, 8);
    // The same seed gives the same faults.
    let again = FaultProxy::start(
        &cluster,
        Faults::rate(1.0).only(false, true, false, false).seed(3),
    )
    .await
    .unwrap();
    let mut repeat = Vec::new();
    for _ in 0..8 {
        repeat.push(raw_get(&again, &token).await.0);
    }
    assert_eq!(codes, repeat);

    // Dropped before: nothing happened. Dropped after: the write happened, the client saw an error.
    let before = FaultProxy::start(&cluster, Faults::rate(1.0).only(false, false, true, false))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(through(&before).await, "default");
    let (code, _) = api_status(
        api.create(&PostParams::default(), &config_map("lost"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 0, "a connection error, not a Status");
    assert!(direct.get_opt("lost").await.unwrap().is_none());
    let after = FaultProxy::start(&cluster, Faults::rate(1.0).only(false, false, false, true))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(through(&after).await, "default");
    let (code, _) = api_status(
        api.create(&PostParams::default(), &config_map("landed"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 0, "a connection error, not a Status");
    assert!(
        direct.get_opt("landed").await.unwrap().is_some(),
        "the server did the write"
    );
    assert_eq!(
        (after.injected().reset_after, after.injected().forwarded),
        (1, 1)
    );

    // A watch is cut within half a second instead of running to its timeout.
    let cutting = FaultProxy::start(&cluster, Faults::rate(0.0).watch_cuts(1.0))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(through(&cutting).await, "default");
    let started = std::time::Instant::now();
    let stream = api
        .watch(&WatchParams::default().timeout(60), "0")
        .await
        .unwrap();
    let events: Vec<_> = stream.collect().await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(!events.is_empty(), "the events before the cut arrive");
    assert_eq!(cutting.injected().watches_cut, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_through_ten_percent_faults_handles_every_object() {
    let cluster = cluster().await;
    namespace(&cluster, "faulty").await;
    let proxy = FaultProxy::start(&cluster, Faults::rate(0.1).seed(42))
        .await
        .unwrap();
    let handled = kopr::Handler::new(|ctx: Context<Widget>| async move {
        HandlerResult::Ok(format!("seen {}", ctx.object.spec.message))
    })
    .id("seen")
    .backoff(std::time::Duration::from_millis(100));
    let operator = Operator::new().resource(Resource::<Widget>::custom().on_create(handled));
    let running = cluster.run_through(operator, &proxy);
    let api = widgets(&cluster, "faulty");
    for i in 0..30 {
        create_widget(&api, &format!("w{i}"), &format!("m{i}")).await;
    }
    for i in 0..30 {
        wait_widget(&api, &format!("w{i}"), move |w| {
            w["status"]["seen"] == format!("seen m{i}")
        })
        .await;
    }
    let injected = proxy.injected();
    assert!(
        injected.throttled + injected.server_errors + injected.reset_before + injected.reset_after
            > 0,
        "{injected:?}"
    );
    running.stop().await.unwrap();
}
