//! The fault-injecting proxy of `kopr::testing`: each kind of fault as a client meets it (429
//! with Retry-After, 500/503 Statuses, a connection dropped before or after the server did the
//! work, a watch cut), and an operator run through it handling every object exactly once per
//! cause: outcomes whose write failed are kept and sent again, never re-judged.

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr::kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
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

/// A handler that records `"<cause> <name>"` per run and stores `"<cause> <message>"`.
fn counting(calls: &Calls, cause: &'static str) -> kopr::Handler<Widget> {
    let calls = calls.clone();
    kopr::Handler::new(move |ctx: Context<Widget>| {
        let calls = calls.clone();
        async move {
            calls.record(format!("{cause} {}", ctx.name()));
            HandlerResult::Ok(format!("{cause} {}", ctx.object.spec.message))
        }
    })
    .id(cause)
    .backoff(std::time::Duration::from_millis(100))
}

/// An operator counting its create and update handlers' runs, and its delete handler's when
/// `deletes`.
fn counting_operator(calls: &Calls, deletes: bool) -> Operator {
    let mut widgets = Resource::<Widget>::custom()
        .on_create(counting(calls, "created"))
        .on_update(counting(calls, "updated"));
    if deletes {
        widgets = widgets.on_delete(counting(calls, "deleted"));
    }
    Operator::new().resource(widgets)
}

async fn set_message(api: &Api<Widget>, name: &str, message: &str) {
    let patch = serde_json::json!({"spec": {"message": message}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("spec patched");
}

/// Waits until every listed widget satisfies `check` and there are `count` of them.
async fn wait_all(api: &Api<Widget>, count: usize, check: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let list = api.list(&ListParams::default()).await.expect("list");
        let values: Vec<serde_json::Value> = list
            .items
            .iter()
            .map(|w| serde_json::to_value(w).expect("json"))
            .collect();
        let done = values.iter().filter(|v| check(v)).count();
        if values.len() == count && done == count {
            return;
        }
        let waiting = values
            .iter()
            .find(|v| !check(v))
            .or(values.first().filter(|_| values.len() != count));
        assert!(
            std::time::Instant::now() < deadline,
            "{done} of {} widgets ready, {count} expected; one waiting: {}",
            values.len(),
            serde_json::to_string_pretty(&waiting).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Deletes the named widgets and waits until none is left.
async fn delete_all(api: &Api<Widget>, names: &[String]) {
    for name in names {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("deleted");
    }
    wait_all(api, 0, |_| true).await;
}

/// Every cause ran exactly once for each of `names`.
fn assert_exactly_once(calls: &Calls, names: &[String], causes: &[&str]) {
    let all = calls.all();
    for name in names {
        for cause in causes {
            let entry = format!("{cause} {name}");
            let runs = all.iter().filter(|e| **e == entry).count();
            assert_eq!(runs, 1, "{entry} ran {runs} times");
        }
    }
    assert_eq!(all.len(), names.len() * causes.len(), "no other runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_server_did_but_whose_answer_was_lost_does_not_rerun_the_handler() {
    let cluster = cluster().await;
    namespace(&cluster, "lost").await;
    // The first PATCH (the create handler's outcome, `/status` first) lands, and its answer is
    // lost.
    let faults = Faults::rate(1.0)
        .only(false, false, false, true)
        .only_for(|request| request.method == http::Method::PATCH)
        .limit(1)
        .watch_cuts(0.0);
    let proxy = FaultProxy::start(&cluster, faults).await.unwrap();
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, false), &proxy);
    let api = widgets(&cluster, "lost");
    create_widget(&api, "w", "one").await;
    wait_widget(&api, "w", |w| {
        w["status"]["created"] == "created one"
            && annotations(w)
                .contains_key(&kopr::Identity::default().annotation(kopr::storage::LAST_HANDLED))
    })
    .await;
    assert_eq!(proxy.injected().reset_after, 1, "{:?}", proxy.injected());
    set_message(&api, "w", "two").await;
    wait_widget(&api, "w", |w| w["status"]["updated"] == "updated two").await;
    running.stop().await.unwrap();
    assert_eq!(calls.all(), ["created w", "updated w"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_that_landed_half_is_completed_not_judged_as_a_new_cause() {
    let cluster = cluster().await;
    namespace(&cluster, "half").await;
    // The `/status` half of the create handler's outcome lands; the object's half (the diff
    // base) fails until the test lets it through, after the spec changed.
    let proxy = blocking_object_half(&cluster).await;
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, false), &proxy);
    let api = widgets(&cluster, "half");
    create_widget(&api, "w", "one").await;
    wait_widget(&api, "w", |w| w["status"]["created"] == "created one").await;
    let stuck = wait_widget(&api, "w", |w| w["spec"]["message"] == "one").await;
    assert!(
        !annotations(&stuck)
            .contains_key(&kopr::Identity::default().annotation(kopr::storage::LAST_HANDLED)),
        "the object's half has not landed: {stuck}"
    );
    set_message(&api, "w", "two").await;
    // The changed object is seen (its event arrives) while the old outcome still cannot land.
    unblock_after_two_more(&proxy).await;
    wait_widget(&api, "w", |w| w["status"]["updated"] == "updated two").await;
    running.stop().await.unwrap();
    assert_eq!(
        calls.all(),
        ["created w", "updated w"],
        "the create handler ran once, with the old spec"
    );
}

/// Merge patches of the object itself, not of its `/status`: the half of a cycle's outcome that
/// carries the diff base.
fn object_merge_patches(request: &http::request::Parts) -> bool {
    let merge = request
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/merge-patch+json"));
    request.method == http::Method::PATCH && merge && !request.uri.path().ends_with("/status")
}

/// A proxy dropping every merge patch of the object itself before it reaches the server.
async fn blocking_object_half(cluster: &kopr::testing::TestCluster) -> FaultProxy {
    let faults = Faults::rate(1.0)
        .only(false, false, true, false)
        .only_for(object_merge_patches)
        .watch_cuts(0.0);
    FaultProxy::start(cluster, faults).await.unwrap()
}

/// Lets the blocked writes through once two more of them failed (so the operator has tried
/// again since the test's last change).
async fn unblock_after_two_more(proxy: &FaultProxy) {
    let before = proxy.injected().reset_before;
    while proxy.injected().reset_before < before + 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    proxy.set_enabled(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_while_an_outcome_waits_to_land_is_handled() {
    let cluster = cluster().await;
    namespace(&cluster, "waiting").await;
    let proxy = blocking_object_half(&cluster).await;
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, true), &proxy);
    let api = widgets(&cluster, "waiting");
    create_widget(&api, "w", "one").await;
    wait_widget(&api, "w", |w| w["status"]["created"] == "created one").await;
    api.delete("w", &DeleteParams::default())
        .await
        .expect("deleted");
    unblock_after_two_more(&proxy).await;
    wait_gone(&api, "w").await;
    running.stop().await.unwrap();
    assert_eq!(calls.all(), ["created w", "deleted w"]);
}

async fn through_faults(rate: f64, seed: u64, namespace_name: &str) {
    const OBJECTS: usize = 300;
    let cluster = cluster().await;
    namespace(&cluster, namespace_name).await;
    // Every watch is cut within half a second: the operator re-watches all the time.
    let faults = Faults::rate(rate).seed(seed).watch_cuts(1.0);
    let proxy = FaultProxy::start(&cluster, faults).await.unwrap();
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, true), &proxy);
    let api = widgets(&cluster, namespace_name);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("w{i}")).collect();
    for name in &names {
        create_widget(&api, name, &format!("{name} one")).await;
    }
    wait_all(&api, OBJECTS, |w| {
        w["status"]["created"] == format!("created {}", w["spec"]["message"].as_str().unwrap_or(""))
    })
    .await;
    for name in &names {
        set_message(&api, name, &format!("{name} two")).await;
    }
    wait_all(&api, OBJECTS, |w| {
        let name = w["metadata"]["name"].as_str().unwrap_or("");
        w["status"]["updated"] == format!("updated {name} two")
    })
    .await;
    delete_all(&api, &names).await;
    let injected = proxy.injected();
    running.stop().await.unwrap();
    assert!(
        injected.throttled > 0
            && injected.server_errors > 0
            && injected.reset_before > 0
            && injected.reset_after > 0
            && injected.watches_cut > 0,
        "every kind of fault was met: {injected:?}"
    );
    assert_eq!(
        injected.early_retries, 0,
        "Retry-After respected: {injected:?}"
    );
    assert_exactly_once(&calls, &names, &["created", "updated", "deleted"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_objects_through_ten_percent_faults_are_handled_exactly_once() {
    through_faults(0.1, 10, "ten").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_objects_through_thirty_percent_faults_are_handled_exactly_once() {
    through_faults(0.3, 30, "thirty").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_storm_is_waited_out_as_retry_after_says() {
    let cluster = cluster().await;
    namespace(&cluster, "storm").await;
    let faults = Faults::rate(0.5)
        .only(true, false, false, false)
        .seed(5)
        .watch_cuts(0.0);
    let proxy = FaultProxy::start(&cluster, faults).await.unwrap();
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, true), &proxy);
    let api = widgets(&cluster, "storm");
    let names: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
    for name in &names {
        create_widget(&api, name, "one").await;
    }
    wait_all(&api, names.len(), |w| {
        w["status"]["created"] == "created one"
    })
    .await;
    delete_all(&api, &names).await;
    let injected = proxy.injected();
    running.stop().await.unwrap();
    assert!(injected.throttled >= 20, "{injected:?}");
    assert_eq!(
        injected.early_retries, 0,
        "no throttled request came back before its Retry-After: {injected:?}"
    );
    assert!(
        kopr::client::throttled_responses() >= injected.throttled,
        "the client counts them"
    );
    assert_exactly_once(&calls, &names, &["created", "deleted"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_only_objects_whose_outcome_had_not_landed_run_again() {
    const OBJECTS: usize = 200;
    let cluster = cluster().await;
    namespace(&cluster, "crash").await;
    let faults = Faults::rate(0.3).seed(7).watch_cuts(1.0);
    let proxy = FaultProxy::start(&cluster, faults).await.unwrap();
    let calls = Calls::default();
    let running = cluster.run_through(counting_operator(&calls, true), &proxy);
    let api = widgets(&cluster, "crash");
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("c{i}")).collect();
    for name in &names {
        create_widget(&api, name, "one").await;
    }
    while calls.all().len() < OBJECTS / 2 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    running.kill().await;
    // What had fully landed when the process died: those objects must not run again.
    let landed: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|w| serde_json::to_value(w).expect("json"))
        .filter(|w| {
            annotations(w)
                .contains_key(&kopr::Identity::default().annotation(kopr::storage::LAST_HANDLED))
        })
        .filter_map(|w| w["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let running = cluster.run_through(counting_operator(&calls, true), &proxy);
    wait_all(&api, OBJECTS, |w| w["status"]["created"] == "created one").await;
    delete_all(&api, &names).await;
    running.stop().await.unwrap();
    let all = calls.all();
    let runs = |entry: &str| all.iter().filter(|e| *e == entry).count();
    for name in &names {
        let created = runs(&format!("created {name}"));
        assert!(
            (1..=2).contains(&created),
            "created {name} ran {created} times"
        );
        if landed.contains(name) {
            assert_eq!(created, 1, "{name}'s outcome had landed before the crash");
        }
        assert_eq!(runs(&format!("deleted {name}")), 1, "deleted {name}");
    }
    assert!(
        !landed.is_empty(),
        "some outcomes had landed before the crash"
    );
}
