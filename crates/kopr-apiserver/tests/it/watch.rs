//! Watch semantics through kube-rs and raw requests.

use crate::common;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
        .await
        .expect("an event within 10 s")
        .expect("stream open")
        .expect("event decodes")
}

fn describe(ev: &WatchEvent<ConfigMap>) -> (String, String) {
    match ev {
        WatchEvent::Added(o) => ("ADDED".into(), o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => (
            "MODIFIED".into(),
            o.metadata.name.clone().unwrap_or_default(),
        ),
        WatchEvent::Deleted(o) => (
            "DELETED".into(),
            o.metadata.name.clone().unwrap_or_default(),
        ),
        WatchEvent::Bookmark(b) => ("BOOKMARK".into(), b.metadata.resource_version.clone()),
        WatchEvent::Error(e) => ("ERROR".into(), e.message.clone()),
    }
}

#[tokio::test]
async fn watch_from_a_resource_version_sees_every_change_in_order() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("before", json!({})))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("w", json!({})))
        .await
        .unwrap();
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&next_event(&mut stream).await));
    }
    assert_eq!(
        seen,
        [
            ("ADDED".to_string(), "w".to_string()),
            ("MODIFIED".into(), "w".into()),
            ("DELETED".into(), "w".into())
        ]
    );
}

#[tokio::test]
async fn watch_without_resource_version_starts_with_current_state() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("existing", json!({})))
        .await
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(
        describe(&next_event(&mut stream).await),
        ("ADDED".into(), "existing".into())
    );
}

#[tokio::test]
async fn selector_transitions_become_added_and_deleted() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let start = cms
        .create(&PostParams::default(), &cm("t", json!({"stage": "no"})))
        .await
        .unwrap();
    let wp = WatchParams::default().labels("stage=yes");
    let mut stream = cms
        .watch(&wp, &start.metadata.resource_version.unwrap())
        .await
        .unwrap()
        .boxed();
    cms.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"stage": "yes"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&next_event(&mut stream).await),
        ("ADDED".into(), "t".into())
    );
    cms.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&next_event(&mut stream).await),
        ("MODIFIED".into(), "t".into())
    );
    cms.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"stage": "no"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&next_event(&mut stream).await),
        ("DELETED".into(), "t".into())
    );
}

#[tokio::test]
async fn watch_from_a_compacted_version_gets_410_expired() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let old = cms
        .create(&PostParams::default(), &cm("old", json!({})))
        .await
        .unwrap();
    let old_rv: i64 = old.metadata.resource_version.unwrap().parse().unwrap();
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("n{i}"), json!({})))
            .await
            .unwrap();
    }
    let store = &f.server.api().store;
    store.compact(store.current_revision()).await.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &(old_rv - 1).to_string())
        .await
        .unwrap()
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
            assert!(
                e.message.starts_with("too old resource version: "),
                "{}",
                e.message
            );
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    // The kube-rs watcher recovers by relisting.
    let stream = kube::runtime::watcher(cms.clone(), kube::runtime::watcher::Config::default());
    let objs: Vec<_> = kube::runtime::WatchStreamExt::applied_objects(stream)
        .take(6)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(objs.len(), 6);
}

#[tokio::test]
async fn streaming_list_ends_initial_events_with_a_bookmark() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("a", json!({"streamed": "yes"})))
        .await
        .unwrap();
    // Selected, so the namespace's kube-root-ca.crt is not among the initial events.
    let wp = WatchParams::streaming_lists().labels("streamed=yes");
    let mut stream = cms.watch(&wp, "").await.unwrap().boxed();
    assert_eq!(
        describe(&next_event(&mut stream).await),
        ("ADDED".into(), "a".into())
    );
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    // Misuse is rejected with kube's message.
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
        "{body}"
    );
}

#[tokio::test]
async fn watch_tolerates_empty_query_segments_and_times_out() {
    let f = common::start().await;
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/secrets?&watch=true&timeoutSeconds=1&resourceVersion=1",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body, "", "no events, closed by the timeout");
}

#[tokio::test]
async fn history_is_compacted_after_the_retention_window() {
    let mut config = kopr_apiserver::Config::ephemeral();
    config.history_retention = std::time::Duration::from_millis(200);
    let f = common::start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let old = cms
        .create(&PostParams::default(), &cm("early", json!({})))
        .await
        .unwrap();
    let old_rv: i64 = old.metadata.resource_version.unwrap().parse().unwrap();
    // Two ticks: the first records the revision, the second compacts to it.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    cms.create(&PostParams::default(), &cm("late", json!({})))
        .await
        .unwrap();
    assert!(f.server.api().store.compacted_revision() >= old_rv);
    let mut stream = cms
        .watch(&WatchParams::default(), &(old_rv - 1).to_string())
        .await
        .unwrap()
        .boxed();
    assert_eq!(describe(&next_event(&mut stream).await).0, "ERROR");
    // Objects themselves are never compacted away.
    assert!(cms.get_opt("early").await.unwrap().is_some());
}

#[tokio::test]
async fn an_object_leaving_a_selector_is_deleted_as_it_was_at_the_changes_version() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("w", json!({"watched": "yes"})))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.unwrap();
    // Two watchers of the selection: the lines they get are shared, and must be right for both.
    let params = WatchParams::default().labels("watched=yes");
    let mut one = cms.watch(&params, &rv).await.unwrap().boxed();
    let mut two = cms.watch(&params, &rv).await.unwrap().boxed();
    let left = cms
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"watched": "no"}}, "data": {"a": "b"}})),
        )
        .await
        .unwrap();
    let back = cms
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"watched": "yes"}}})),
        )
        .await
        .unwrap();
    for stream in [&mut one, &mut two] {
        // kube-apiserver's watch cache: the object as it was before the change (still
        // selected, without the new data), at the change's resourceVersion.
        match next_event(stream).await {
            WatchEvent::Deleted(o) => {
                assert_eq!(o.metadata.resource_version, left.metadata.resource_version);
                assert_eq!(
                    o.metadata
                        .labels
                        .unwrap_or_default()
                        .get("watched")
                        .map(String::as_str),
                    Some("yes")
                );
                assert_eq!(o.data, None);
            }
            other => panic!("expected DELETED, got {:?}", describe(&other)),
        }
        match next_event(stream).await {
            WatchEvent::Added(o) => {
                assert_eq!(o.metadata.resource_version, back.metadata.resource_version);
                assert_eq!(
                    o.data.unwrap_or_default().get("a").map(String::as_str),
                    Some("b")
                );
            }
            other => panic!("expected ADDED, got {:?}", describe(&other)),
        }
    }
}
