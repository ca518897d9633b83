//! Verbs, optimistic concurrency, metadata, selectors and paging, through
//! the kube-rs client against an in-process server.

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
    )
    .unwrap()
}

#[tokio::test]
async fn create_get_update_delete() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("a", json!({"k": "v"})))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.uid.as_ref().map(String::len), Some(36));
    assert!(meta.creation_timestamp.is_some());
    let rv1: i64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

    let got = cms.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");

    let mut changed = created.clone();
    changed.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = cms
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2: i64 = updated
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1, "resourceVersion increases: {rv1} -> {rv2}");

    // The first object's resourceVersion is now stale.
    let err = common::status_of(
        cms.replace("a", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let dup = common::status_of(
        cms.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"a\" already exists");

    let deleted = cms.delete("a", &DeleteParams::default()).await.unwrap();
    let status = deleted
        .right()
        .expect("configmaps answer a Status on delete");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    let missing = common::status_of(cms.get("a").await.unwrap_err());
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "configmaps \"a\" not found")
    );
    assert_eq!(missing.details.unwrap().kind, "configmaps");
}

#[tokio::test]
async fn generate_name_uses_kube_alphabet() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let mut obj = cm("", json!({}));
    obj.metadata.name = None;
    obj.metadata.generate_name = Some("gen-".into());
    let a = cms.create(&PostParams::default(), &obj).await.unwrap();
    let name = a.metadata.name.unwrap();
    assert_eq!(name.len(), 9, "{name}");
    assert!(name.starts_with("gen-"));
    assert!(
        name[4..]
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
        "{name}"
    );

    obj.metadata.generate_name = None;
    let err = common::status_of(cms.create(&PostParams::default(), &obj).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("name or generateName is required"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn missing_and_terminating_namespaces() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "nope");
    let err = common::status_of(
        cms.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );

    let nss: Api<Namespace> = Api::all(f.client.clone());
    let err = common::status_of(
        nss.delete("default", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );

    // A namespace with a finalizer of ours stays Terminating until we let it go.
    let ns: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "doomed", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let in_doomed: Api<ConfigMap> = Api::namespaced(f.client.clone(), "doomed");
    in_doomed
        .create(&PostParams::default(), &cm("inside", json!({})))
        .await
        .unwrap();
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let err = common::status_of(
        in_doomed
            .create(&PostParams::default(), &cm("late", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );
    // The namespace controller empties it.
    wait_until(|| async {
        in_doomed
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    let ns = nss.get("doomed").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    nss.patch(
        "doomed",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_until(|| async { nss.get_opt("doomed").await.unwrap().is_none() }).await;
}

async fn wait_until<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("condition not reached in 10 s");
}

#[tokio::test]
async fn system_namespaces_and_default_service_accounts() {
    let f = common::start().await;
    let nss: Api<Namespace> = Api::all(f.client.clone());
    let names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&ns.to_string()), "{names:?}");
        let sas: Api<ServiceAccount> = Api::namespaced(f.client.clone(), ns);
        assert!(sas.get("default").await.is_ok(), "default SA in {ns}");
    }
    // A new namespace gets one too.
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "fresh"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let sas: Api<ServiceAccount> = Api::namespaced(f.client.clone(), "fresh");
    wait_until(|| async { sas.get_opt("default").await.unwrap().is_some() }).await;
}

#[tokio::test]
async fn label_and_field_selectors_and_paging() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    for i in 0..7 {
        let mut obj = cm(&format!("c{i}"), json!({}));
        obj.metadata.labels = Some(
            [(
                "tier".to_string(),
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
            )]
            .into(),
        );
        cms.create(&PostParams::default(), &obj).await.unwrap();
    }
    let even = cms
        .list(&ListParams::default().labels("tier=even"))
        .await
        .unwrap();
    assert_eq!(even.items.len(), 4);
    let set = cms
        .list(&ListParams::default().labels("tier in (odd),tier notin (x)"))
        .await
        .unwrap();
    assert_eq!(set.items.len(), 3);
    let one = cms
        .list(&ListParams::default().fields("metadata.name=c3"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
    let bad = common::status_of(
        cms.list(&ListParams::default().fields("spec.foo=1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(bad.code, 400);

    // Pages of 3 over 7, and the namespace's kube-root-ca.crt (published by
    // a controller, so perhaps not yet).
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(3);
    loop {
        let page = cms.list(&lp).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    seen.retain(|name| name != "kube-root-ca.crt");
    assert_eq!(seen, (0..7).map(|i| format!("c{i}")).collect::<Vec<_>>());
    // Paging with a selector fills pages with matches only.
    let page = cms
        .list(&ListParams::default().labels("tier=odd").limit(2))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.metadata.continue_.is_some());

    // Selector lists follow relabels and deletes (the server reads them through a label
    // index), and page through every match in key order; repeated lists agree.
    let names = |list: kube::api::ObjectList<ConfigMap>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect()
    };
    cms.patch(
        "c1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "even"}}})),
    )
    .await
    .unwrap();
    cms.delete("c2", &Default::default()).await.unwrap();
    let evens = ["c0", "c1", "c4", "c6"].map(String::from).to_vec();
    for _ in 0..2 {
        let even = cms
            .list(&ListParams::default().labels("tier=even"))
            .await
            .unwrap();
        assert_eq!(names(even), evens);
    }
    let mut paged = Vec::new();
    let mut lp = ListParams::default()
        .labels("tier in (even),tier!=odd")
        .limit(3);
    loop {
        let page = cms.list(&lp).await.unwrap();
        paged.extend(names(page.clone()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(paged, evens);
    let odd = cms
        .list(&ListParams::default().labels("tier in (odd,none)"))
        .await
        .unwrap();
    assert_eq!(names(odd), ["c3", "c5"]);
}

#[tokio::test]
async fn patch_types() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &cm("p", json!({"a": "1", "b": "2"})),
    )
    .await
    .unwrap();
    let pp = PatchParams::default();
    let merged = cms
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.data.clone().unwrap(),
        [
            ("b".to_string(), "2".to_string()),
            ("c".to_string(), "3".to_string())
        ]
        .into()
    );
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
    ]))
    .unwrap();
    let patched = cms.patch("p", &pp, &Patch::<()>::Json(ops)).await.unwrap();
    assert_eq!(
        patched.metadata.finalizers,
        Some(vec!["example.com/f".to_string()])
    );
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/b", "value": "nope"}]))
            .unwrap();
    let err = common::status_of(
        cms.patch("p", &pp, &Patch::<()>::Json(failing))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let strategic = cms
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"metadata": {"finalizers": ["example.com/g"]}})),
        )
        .await
        .unwrap();
    // finalizers merge as a set under strategic merge patch; like
    // kube-apiserver, items new to the list come first.
    assert_eq!(
        strategic.metadata.finalizers,
        Some(vec![
            "example.com/g".to_string(),
            "example.com/f".to_string()
        ])
    );
    // Clean up the finalizers so the object can go.
    cms.patch(
        "p",
        &pp,
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let mut obj = cm("held", json!({}));
    obj.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &obj).await.unwrap();
    let pending = cms
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("object while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(0));
    let err = common::status_of(
        cms.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/new\"}"
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let out = cms
        .create(&pp, &cm("dry", json!({"k": "v"})))
        .await
        .unwrap();
    assert!(out.metadata.uid.is_some());
    assert!(out.metadata.resource_version.is_none());
    assert!(cms.get_opt("dry").await.unwrap().is_none());
}

#[tokio::test]
async fn status_subresource_rules() {
    let f = common::start().await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
        "status": {"phase": "Running"}
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    // Status is reset on create; defaults are applied.
    assert_eq!(
        created.status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );
    let spec = created.spec.as_ref().unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(
        spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    // A status change through the main resource is ignored...
    let after = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Pending"));
    // ...and a spec change through /status too.
    let after = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"phase": "Running"}, "spec": {"activeDeadlineSeconds": 5}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(after.spec.unwrap().active_deadline_seconds, None);
}

#[tokio::test]
async fn anonymous_requests_read_only_health_and_bad_tokens_get_401() {
    let f = common::start().await;
    // No credentials: system:anonymous, which the bootstrap policy lets
    // read the health and version endpoints only (kube's default).
    let anon = common::anonymous_client(&f.server).await;
    let (code, _, body) = common::raw(&anon, "GET", "/api/v1/namespaces", None, Vec::new()).await;
    assert_eq!(code, 403);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    assert_eq!(status["details"], serde_json::json!({"kind": "namespaces"}));
    let (code, _, body) = common::raw(&anon, "GET", "/api", None, Vec::new()).await;
    assert_eq!(code, 403);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    assert_eq!(status["details"], serde_json::json!({}));
    for path in ["/readyz", "/healthz", "/livez"] {
        let (code, _, body) = common::raw(&anon, "GET", path, None, Vec::new()).await;
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    let (code, _, _) = common::raw(&anon, "GET", "/version", None, Vec::new()).await;
    assert_eq!(code, 200);
    // A token nobody issued: 401, never anonymous.
    let wrong = common::client_with_token(&f.server, "not-a-token").await;
    let (code, _, body) = common::raw(&wrong, "GET", "/readyz", None, Vec::new()).await;
    assert_eq!(code, 401);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status,
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
}

#[tokio::test]
async fn bad_input_gets_kube_statuses() {
    let f = common::start().await;
    let c = &f.client;
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, _, body) = common::raw(
        c,
        "POST",
        path,
        Some("application/json"),
        b"{\"metadata\":".to_vec(),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, _, _) = common::raw(
        c,
        "POST",
        path,
        Some("application/json"),
        vec![b' '; 3 * 1024 * 1024 + 1],
    )
    .await;
    assert_eq!(code, 413);
    let (code, _, body) = common::raw(
        c,
        "PATCH",
        &format!("{path}/x"),
        Some("text/plain"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(code, 415, "{body}");
    let (code, _, body) = common::raw(
        c,
        "GET",
        &format!("{path}?labelSelector=a%20in%20(b"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, _, body) =
        common::raw(c, "PUT", path, Some("application/json"), b"{}".to_vec()).await;
    assert_eq!(code, 405, "{body}");
    let bad_name = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#;
    let (code, _, body) =
        common::raw(c, "POST", path, Some("application/json"), bad_name.to_vec()).await;
    assert_eq!(code, 422, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    // Strict field validation rejects unknown fields; Warn answers a Warning header.
    let unknown =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"spec":{"x":1}}"#;
    let (code, _, body) = common::raw(
        c,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        Some("application/json"),
        unknown.to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body.contains("strict decoding error: unknown field \\\"spec\\\""),
        "{body}"
    );
    let (code, headers, _) =
        common::raw(c, "POST", path, Some("application/json"), unknown.to_vec()).await;
    assert_eq!(code, 201);
    assert_eq!(
        headers.get("warning").unwrap(),
        "299 - \"unknown field \\\"spec\\\"\""
    );
}

/// Patches without a resourceVersion never fail with a conflict: a lost race is retried on the
/// server, as kube-apiserver's GuaranteedUpdate does. A patch naming a stale resourceVersion is
/// still a 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_without_resource_version_all_succeed() {
    let f = common::start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "racy"}})).unwrap();
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let mut tasks = Vec::new();
    for n in 0..16 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            let patch = json!({"data": {format!("k{n}"): n.to_string()}});
            api.patch("racy", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }));
    }
    for task in tasks {
        task.await
            .unwrap()
            .expect("an unconditional patch succeeds");
    }
    let data = api.get("racy").await.unwrap().data.unwrap();
    assert_eq!(data.len(), 16);
    let stale = json!({"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"x": "y"}});
    let err = api
        .patch("racy", &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
}

/// A write that changes nothing keeps the resourceVersion (kube-apiserver skips it, and
/// controllers that apply their children on every reconcile rely on that to settle).
#[tokio::test]
async fn writes_that_change_nothing_keep_the_resource_version() {
    let f = common::start().await;
    let api: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "steady"}, "data": {"a": "1"}}))
            .unwrap();
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let same = json!({"data": {"a": "1"}});
    let patched = api
        .patch("steady", &PatchParams::default(), &Patch::Merge(&same))
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.resource_version,
        created.metadata.resource_version
    );
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "steady"}, "data": {"a": "1"}});
    let params = PatchParams::apply("tester");
    let first = api
        .patch("steady", &params, &Patch::Apply(&applied))
        .await
        .unwrap();
    let second = api
        .patch("steady", &params, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(
        first.metadata.resource_version, second.metadata.resource_version,
        "a repeated apply is a no-op"
    );
    let replaced = api
        .replace("steady", &PostParams::default(), &second)
        .await
        .unwrap();
    assert_eq!(
        replaced.metadata.resource_version,
        second.metadata.resource_version
    );
}
