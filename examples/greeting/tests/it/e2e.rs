//! The Greeting operator against an in-process API server: the samples applied through
//! `kopr::apply`, then every handler's log line, the create handler's result in status, and
//! the finalizer released after the delete handler ran.

use std::path::PathBuf;
use std::time::Duration;

use greeting::{Config, Greeting};
use kopr::kube::api::{Api, DeleteParams, Patch, PatchParams};
use kopr::testing::{TestCluster, capture_logs, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// GETs `/metrics` from the operator's metrics endpoint.
async fn scrape(address: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("metrics endpoint");
    let request = "GET /metrics HTTP/1.1\r\nHost: op\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut text = String::new();
    stream.read_to_string(&mut text).await.expect("answer");
    text
}

// ANCHOR: test
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_are_greeted_updated_timed_and_deleted() {
    let logs = capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let operator = greeting::operator(&Config { timer_interval: 1 }).metrics_listen(metrics);
    operator.install_crds(&client).await.expect("CRDs install");
    let running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("greeting"))
        .await
        .expect("runs as its ServiceAccount");

    let applied = kopr::apply::apply_paths(&client, &[samples()])
        .await
        .expect("samples load");
    let names: Vec<&str> = applied.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        ["good-morning", "hello-world"],
        "samples: {applied:?}"
    );
    for outcome in &applied {
        assert!(outcome.result.is_ok(), "{outcome}");
    }

    logs.wait_for(&["Greeting: Hello, World!", "default/hello-world"], WAIT)
        .await
        .expect("create handler");
    logs.wait_for(&["Greeting: Good morning!", "default/good-morning"], WAIT)
        .await
        .expect("create handler");

    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let greeted = |g: Option<&Greeting>| {
        g.and_then(|g| g.status.as_ref())
            .and_then(|s| s.greet.as_deref())
            == Some("greeted with 'Hello, World!'")
    };
    let greeting = wait_for(&greetings, "hello-world", WAIT, greeted)
        .await
        .expect("result in status");
    let finalizers = greeting
        .and_then(|g| g.metadata.finalizers)
        .unwrap_or_default();
    assert_eq!(
        finalizers,
        ["greeting.kopr.dev/finalizer"],
        "the delete handler needs a finalizer"
    );

    // Its own metric, beside kopr's, on the operator's /metrics: two greetings so far.
    let scraped = scrape(metrics).await;
    assert!(
        scraped.contains("# TYPE greeting_greetings counter")
            && scraped.lines().any(|l| l == "greeting_greetings_total 2"),
        "{scraped}"
    );
    assert!(scraped.contains("kopr_handler_runs_total{"), "{scraped}");

    logs.wait_for(&["Timer: Hello, World!", "default/hello-world"], WAIT)
        .await
        .expect("timer");

    let change = Patch::Merge(json!({"spec": {"message": "Hello again!"}}));
    greetings
        .patch("hello-world", &PatchParams::default(), &change)
        .await
        .expect("patched");
    logs.wait_for(&["Update: Hello again!", "default/hello-world"], WAIT)
        .await
        .expect("update handler");

    greetings
        .delete("hello-world", &DeleteParams::default())
        .await
        .expect("deleted");
    logs.wait_for(&["Delete: Hello again!", "default/hello-world"], WAIT)
        .await
        .expect("delete handler");
    wait_for(&greetings, "hello-world", WAIT, |g: Option<&Greeting>| {
        g.is_none()
    })
    .await
    .expect("the finalizer is removed and the Greeting goes");
    assert_eq!(
        logs.count(&["Delete: ", "default/good-morning"]),
        0,
        "only the deleted one"
    );

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}
// ANCHOR_END: test

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_invalid_sample_is_refused_by_the_schema() {
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    greeting::operator(&Config::default())
        .install_crds(&client)
        .await
        .expect("CRDs install");
    let applied = kopr::apply::apply_paths(&client, &[samples().join("invalid")])
        .await
        .expect("loads");
    assert_eq!(applied.len(), 1);
    let error = applied[0].result.as_ref().expect_err("refused").to_string();
    assert!(
        error.contains("wrong-type.yaml:4: Greeting wrong-type:"),
        "{error}"
    );
    assert!(
        error.contains("spec.message") && error.contains("must be of type string"),
        "{error}"
    );
    cluster.shutdown().await;
}

/// What a user does most: edit a sample and apply it again with kubectl, client-side (a
/// merge patch, as kubectl sends for custom resources) and server-side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_sample_applied_again_with_kubectl_reaches_the_update_handler() {
    let logs = capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    let client = cluster.client();
    let operator = greeting::operator(&Config {
        timer_interval: 3600,
    });
    operator.install_crds(&client).await.expect("CRDs install");
    let running = cluster
        .run_as_service_account(operator, &kopr::manifests::Manifests::new("greeting"))
        .await
        .expect("runs as its ServiceAccount");
    let kubectl = cluster.kubectl().expect("kubectl");
    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let sample = samples().join("hello-world.yaml");
    let message_is = |expected: &'static str| {
        move |g: Option<&Greeting>| g.is_some_and(|g| g.spec.message == expected)
    };

    let text = std::fs::read_to_string(&sample).expect("sample");
    assert_eq!(
        kubectl.apply(&text, false).await.expect("applied"),
        "greeting.example.com/hello-world created\n"
    );
    wait_for(&greetings, "hello-world", WAIT, |g: Option<&Greeting>| {
        g.and_then(|g| g.status.as_ref())
            .is_some_and(|s| s.greet.is_some())
    })
    .await
    .expect("create handler");

    let edited =
        kopr::testing::edited(&sample, &[("Hello, World!", "Hello, kubectl!")]).expect("edit");
    assert_eq!(
        kubectl.apply(&edited, false).await.expect("applied again"),
        "greeting.example.com/hello-world configured\n"
    );
    wait_for(
        &greetings,
        "hello-world",
        WAIT,
        message_is("Hello, kubectl!"),
    )
    .await
    .expect("the change reached the object");
    logs.wait_for(&["Update: Hello, kubectl!", "default/hello-world"], WAIT)
        .await
        .expect("update handler");

    // The same object taken over by server-side apply (kubectl's field manager takes the
    // fields its client-side apply set), then edited again.
    let edited =
        kopr::testing::edited(&sample, &[("Hello, World!", "Hello, server side!")]).expect("edit");
    assert_eq!(
        kubectl
            .apply(&edited, true)
            .await
            .expect("applied server-side"),
        "greeting.example.com/hello-world serverside-applied\n"
    );
    logs.wait_for(
        &["Update: Hello, server side!", "default/hello-world"],
        WAIT,
    )
    .await
    .expect("update handler");
    let edited =
        kopr::testing::edited(&sample, &[("Hello, World!", "Hello, twice!")]).expect("edit");
    kubectl
        .apply(&edited, true)
        .await
        .expect("applied server-side again");
    wait_for(&greetings, "hello-world", WAIT, message_is("Hello, twice!"))
        .await
        .expect("the change reached the object");
    logs.wait_for(&["Update: Hello, twice!", "default/hello-world"], WAIT)
        .await
        .expect("update handler");

    running.stop().await.expect("operator stops cleanly");
    cluster.shutdown().await;
}
