//! Wire details real clients trip on (issue 17), each as kube-apiserver 1.32 answers:
//! metadata maps a write empties are dropped, an object larger than etcd takes is refused with
//! etcd's words, an expired continue token's 410 carries a token that goes on at the latest
//! revision, objects are served as PartialObjectMetadata to kube-rs's metadata calls, a path
//! with no route under a served group has `details: {}`, half-open connections are closed
//! after the header timeout, idle ones after the idle timeout (not while a request is in
//! flight), connections beyond the limit wait for a free slot, and built-in lists' items carry
//! no `kind`/`apiVersion`.

use crate::common;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"set": "paging"}},
                                  "data": data}),
    )
    .expect("configmap")
}

#[tokio::test]
async fn metadata_maps_a_write_empties_are_dropped() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let labelled: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "m", "labels": {"a": "b"}, "annotations": {"x": "y"}}
    }))
    .unwrap();
    cms.create(&PostParams::default(), &labelled).await.unwrap();
    let strategic = json!({"metadata": {"labels": {"a": null}}});
    cms.patch("m", &PatchParams::default(), &Patch::Strategic(&strategic))
        .await
        .unwrap();
    let merge = json!({"metadata": {"annotations": {"x": null}}});
    cms.patch("m", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap();
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps/m",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let object: Value = serde_json::from_str(&body).unwrap();
    let meta = object["metadata"].as_object().unwrap();
    assert!(!meta.contains_key("labels"), "{body}");
    assert!(!meta.contains_key("annotations"), "{body}");
}

#[tokio::test]
async fn an_object_larger_than_etcd_takes_is_refused_with_etcd_s_words() {
    let f = common::start().await;
    common::two_version_crd(&f.client).await;
    let tool = |name: &str, size: usize| {
        serde_json::to_vec(&json!({
            "apiVersion": "example.com/v1", "kind": "Tool",
            "metadata": {"name": name}, "spec": {"blob": "x".repeat(size)}
        }))
        .unwrap()
    };
    let path = "/apis/example.com/v1/namespaces/default/tools";
    // Under the 3 MiB body limit, over etcd's 1.5 MiB request limit.
    let (code, _, text) = common::raw(
        &f.client,
        "POST",
        path,
        Some("application/json"),
        tool("big", 1600 * 1024),
    )
    .await;
    assert_eq!(code, 500, "{}", &text[..text.len().min(300)]);
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "etcdserver: request is too large", "code": 500})
    );
    // Just under the limit is stored; growing it over the limit by a patch is refused too.
    let (code, _, text) = common::raw(
        &f.client,
        "POST",
        path,
        Some("application/json"),
        tool("fits", 1500 * 1024),
    )
    .await;
    assert_eq!(code, 201, "{}", &text[..text.len().min(300)]);
    let grow = serde_json::to_vec(&json!({"spec": {"more": "y".repeat(100 * 1024)}})).unwrap();
    let (code, _, text) = common::raw(
        &f.client,
        "PATCH",
        &format!("{path}/fits"),
        Some("application/merge-patch+json"),
        grow,
    )
    .await;
    assert_eq!(code, 500, "{}", &text[..text.len().min(300)]);
    assert!(text.contains("etcdserver: request is too large"), "{text}");
}

#[tokio::test]
async fn an_expired_continue_token_gets_410_and_a_token_at_the_latest_revision() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    for i in 0..5 {
        let object = cm(&format!("cm-{i}"), json!({"i": i.to_string()}));
        cms.create(&PostParams::default(), &object).await.unwrap();
    }
    let first = cms
        .list(&ListParams::default().limit(2).labels("set=paging"))
        .await
        .unwrap();
    let token = first.metadata.continue_.clone().expect("a continue token");
    cms.create(&PostParams::default(), &cm("cm-5", json!({})))
        .await
        .unwrap();
    let store = &f.server.api().store;
    store.compact(store.current_revision()).await.unwrap();

    let path = format!(
        "/api/v1/namespaces/default/configmaps?limit=2&labelSelector=set%3Dpaging&continue={token}"
    );
    let (code, _, text) = common::raw(&f.client, "GET", &path, None, Vec::new()).await;
    assert_eq!(code, 410, "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["reason"], "Expired");
    assert!(
        status["message"].as_str().unwrap_or_default().starts_with(
            "The provided continue parameter is too old to display a consistent list result."
        ),
        "{text}"
    );
    assert!(status.get("details").is_none(), "{text}");
    let again = status["metadata"]["continue"]
        .as_str()
        .expect("a new token");

    // The new token goes on after the last name the first page had, at the latest revision.
    let rest = cms
        .list(
            &ListParams::default()
                .labels("set=paging")
                .continue_token(again),
        )
        .await
        .unwrap();
    let names: Vec<String> = rest
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, ["cm-2", "cm-3", "cm-4", "cm-5"]);
    assert_eq!(
        rest.metadata.resource_version,
        Some(store.current_revision().to_string())
    );
}

#[tokio::test]
async fn kube_rs_reads_objects_as_partial_object_metadata() {
    use futures::{StreamExt, TryStreamExt};
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    let created = cms
        .create(
            &PostParams::default(),
            &cm("meta", json!({"secret": "not sent"})),
        )
        .await
        .unwrap();
    let one = cms.get_metadata("meta").await.unwrap();
    assert_eq!(
        one.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    assert_eq!(one.metadata.uid, created.metadata.uid);
    let listed = cms
        .list_metadata(&ListParams::default().labels("set=paging"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("meta"));
    // Only metadata travels: the raw answer has no data.
    let (code, _, text) = common::raw_with_headers(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps?labelSelector=set%3Dpaging",
        &[(
            "accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1".to_owned(),
        )],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["items"][0].get("data").is_none(), "{text}");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    // A list asked for as one object is not acceptable.
    let (code, _, text) = common::raw_with_headers(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[(
            "accept",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1".to_owned(),
        )],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 406, "{text}");
    // The metadata watcher sees changes, as client-go's metadata informers do.
    let metadata: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(f.client.clone(), "default");
    let watcher = kube::runtime::watcher(
        metadata,
        kube::runtime::watcher::Config::default().labels("set=paging"),
    );
    let mut names = kube::runtime::WatchStreamExt::applied_objects(watcher).boxed();
    let first = names.try_next().await.unwrap().expect("the listed object");
    assert_eq!(first.metadata.name.as_deref(), Some("meta"));
    cms.create(&PostParams::default(), &cm("meta-2", json!({})))
        .await
        .unwrap();
    let second = names.try_next().await.unwrap().expect("the new object");
    assert_eq!(second.metadata.name.as_deref(), Some("meta-2"));
}

#[tokio::test]
async fn a_path_under_a_served_group_with_no_route_has_empty_details() {
    let f = common::start().await;
    let get = |path: &'static str| {
        let client = f.client.clone();
        async move {
            common::raw(
                &client,
                "PATCH",
                path,
                Some("application/strategic-merge-patch+json"),
                b"{}".to_vec(),
            )
            .await
        }
    };
    let within = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "the server could not find the requested resource",
                        "reason": "NotFound", "details": {}, "code": 404});
    // A subresource no resource serves (kubectl reads these details).
    for path in [
        "/api/v1/namespaces/default/pods/x/nosuchsubresource",
        "/api/v1/namespaces/default/foos/x",
    ] {
        let (code, _, text) = get(path).await;
        assert_eq!(code, 404, "{path}: {text}");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            within,
            "{path}"
        );
    }
    // Outside every served group version there is no details object.
    let (code, _, text) = get("/apis/nowhere.example.com/v1/namespaces/default/things/x").await;
    assert_eq!(code, 404, "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert!(status.get("details").is_none(), "{text}");
}

/// Whether the server closes `stream` within 20 s (it should after the short timeout).
async fn closed_by_server(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    read.await.is_ok()
}

#[tokio::test]
async fn half_open_connections_are_closed_after_the_header_timeout() {
    use tokio::io::AsyncWriteExt;
    let config = kopr_apiserver::Config {
        read_header_timeout: std::time::Duration::from_millis(300),
        ..kopr_apiserver::Config::ephemeral()
    };
    let f = common::start_with(config).await;
    // A TCP connection that never starts its TLS handshake.
    let mut silent = tokio::net::TcpStream::connect(f.server.addr())
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut silent).await,
        "handshake never started"
    );

    // A TLS connection whose request headers never end.
    let connector = common::tls_connector(&f.server, &[]);
    let tcp = tokio::net::TcpStream::connect(f.server.addr())
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut stream = connector.connect(name.clone(), tcp).await.unwrap();
    stream
        .write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut stream).await,
        "headers never finished"
    );
    // A TLS connection that never sends a byte of HTTP (no request line, no HTTP/2 preface).
    let tcp = tokio::net::TcpStream::connect(f.server.addr())
        .await
        .unwrap();
    let mut mute = connector.connect(name, tcp).await.unwrap();
    assert!(closed_by_server(&mut mute).await, "no HTTP bytes ever sent");
    // The server still serves everyone else.
    let (code, _, _) = common::raw(&f.client, "GET", "/version", None, Vec::new()).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn bodies_are_written_as_kube_s_go_encoder_writes_them() {
    let f = common::start().await;
    // A Status: metav1.Status's field order, Go's HTML-safe escapes, a closing newline.
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps/no%3Csuch%3E",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"no\\u003csuch\\u003e\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"no\\u003csuch\\u003e\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );

    // A built-in object: Go struct order, and Go's zero values for value structs
    // (a Service's `status.loadBalancer`) and fields without omitempty.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    let (code, _, body) = common::raw(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/services",
        Some("application/json"),
        serde_json::to_vec(&service).unwrap(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert!(body.ends_with("}\n"), "{body}");
    assert!(
        body.starts_with("{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":"),
        "{body}"
    );
    assert!(
        body.contains(",\"status\":{\"loadBalancer\":{}}}"),
        "{body}"
    );
    let spec = body.find("\"spec\":").unwrap();
    let status = body.find("\"status\":").unwrap();
    assert!(spec < status, "{body}");
    assert!(
        body.contains("\"ports\":[{\"protocol\":\"TCP\",\"port\":80,\"targetPort\":80}]"),
        "{body}"
    );

    // A ReplicaSet's status.replicas has no omitempty: 0 is written.
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, _, body) = common::raw(
        &f.client,
        "POST",
        "/apis/apps/v1/namespaces/default/replicasets",
        Some("application/json"),
        serde_json::to_vec(&rs).unwrap(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert!(body.contains("\"status\":{\"replicas\":0}"), "{body}");
    // The template's metadata: creationTimestamp is a Go value (metav1.Time): null.
    assert!(
        body.contains(
            "\"template\":{\"metadata\":{\"creationTimestamp\":null,\"labels\":{\"a\":\"b\"}}"
        ),
        "{body}"
    );

    // Lists: kind, apiVersion, metadata, items.
    let (_, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/services",
        None,
        Vec::new(),
    )
    .await;
    assert!(
        body.starts_with(
            "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
        ),
        "{body}"
    );
    assert!(body.ends_with("]}\n"), "{body}");
}

#[tokio::test]
async fn built_in_list_items_carry_no_type_meta_custom_ones_do() {
    let f = common::start().await;
    common::two_version_crd(&f.client).await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("listed", json!({"a": "b"})))
        .await
        .unwrap();
    let (code, _, body) = common::raw(
        &f.client,
        "GET",
        "/api/v1/namespaces/default/configmaps?labelSelector=set%3Dpaging",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // A typed Go list: its own TypeMeta, none on the items.
    assert!(
        body.starts_with(
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"#
        ),
        "{body}"
    );
    assert!(
        body.contains(r#""items":[{"metadata":{"name":"listed","#),
        "{body}"
    );
    // kube-rs reads it all the same.
    let listed = cms
        .list(&ListParams::default().labels("set=paging"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].data.as_ref().unwrap()["a"], "b");

    let tool = json!({"apiVersion": "example.com/v1", "kind": "Tool", "metadata": {"name": "t"}, "spec": {}});
    let path = "/apis/example.com/v1/namespaces/default/tools";
    let (code, _, text) = common::raw(
        &f.client,
        "POST",
        path,
        Some("application/json"),
        serde_json::to_vec(&tool).unwrap(),
    )
    .await;
    assert_eq!(code, 201, "{text}");
    let (_, _, body) = common::raw(&f.client, "GET", path, None, Vec::new()).await;
    let list: Value = serde_json::from_str(&body).unwrap();
    // An UnstructuredList keeps each item's own apiVersion and kind.
    assert_eq!(list["items"][0]["kind"], "Tool", "{body}");
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1", "{body}");
}

async fn tls_connect(
    server: &kopr_apiserver::ApiServer,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    common::tls_connector(server, &[])
        .connect(name, tcp)
        .await
        .unwrap()
}

#[tokio::test]
async fn idle_connections_close_and_busy_ones_stay() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let config = kopr_apiserver::Config {
        idle_timeout: std::time::Duration::from_millis(300),
        ..kopr_apiserver::Config::ephemeral()
    };
    let f = common::start_with(config).await;
    // A keep-alive connection whose request is answered, then left alone.
    let mut idle = tls_connect(&f.server).await;
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    assert!(
        closed_by_server(&mut idle).await,
        "an idle connection stays open"
    );

    // A watch in flight keeps its connection however quiet it is.
    let mut watching = tls_connect(&f.server).await;
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n",
        f.server.token()
    );
    watching.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    watching.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let mut buf = [0u8; 256];
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(1500), async {
        loop {
            match watching.read(&mut buf).await {
                Ok(0) | Err(_) => return "closed",
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        quiet.is_err(),
        "a connection with a watch in flight was closed"
    );
}

#[tokio::test]
async fn connections_over_the_limit_wait_for_a_free_slot() {
    let config = kopr_apiserver::Config {
        max_connections: 2,
        ..kopr_apiserver::Config::ephemeral()
    };
    let f = common::start_with(config).await;
    let one = tls_connect(&f.server).await;
    let _two = tls_connect(&f.server).await;
    let addr = f.server.addr();
    let connector = common::tls_connector(&f.server, &[]);
    let mut third = tokio::spawn(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        connector.connect(name, tcp).await.map(|_| ())
    });
    let waited = tokio::time::timeout(std::time::Duration::from_millis(500), &mut third).await;
    assert!(
        waited.is_err(),
        "a third connection was served beyond the limit"
    );
    drop(one);
    let served = tokio::time::timeout(std::time::Duration::from_secs(20), third)
        .await
        .expect("the third connection is served once one closes");
    assert!(served.unwrap().is_ok());
}

#[tokio::test]
async fn tables_and_partial_metadata_are_in_go_field_order() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("tabled", json!({"a": "b"})))
        .await
        .unwrap();
    let get = |accept: &'static str, path: &'static str| {
        let client = f.client.clone();
        async move {
            let req = http::Request::builder()
                .uri(path)
                .header("accept", accept)
                .body(kube::client::Body::empty())
                .unwrap();
            let response = client.send(req).await.unwrap();
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    };
    let table = get(
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "/api/v1/namespaces/default/configmaps/tabled",
    )
    .await;
    assert!(
        table.starts_with(
            r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"#
        ),
        "{table}"
    );
    assert!(
        table.contains(
            r#""columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"#
        ),
        "{table}"
    );
    // Every column field is written, an empty format too.
    assert!(
        table.contains(r#"{"name":"Data","type":"string","format":"","description":"#),
        "{table}"
    );
    assert!(
        table.contains(r#""rows":[{"cells":["tabled",1,"#),
        "{table}"
    );
    assert!(
        table.contains(r#""object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"tabled","namespace":"default","uid":"#),
        "{table}"
    );
    let bare = get(
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "/api/v1/namespaces/default/configmaps/tabled?includeObject=None",
    )
    .await;
    assert!(bare.contains(r#""object":null}]}"#), "{bare}");
    let partial = get(
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "/api/v1/namespaces/default/configmaps?labelSelector=set%3Dpaging",
    )
    .await;
    assert!(
        partial.starts_with(r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"#),
        "{partial}"
    );
    assert!(
        partial.contains(r#""items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"tabled","namespace":"default","uid":"#),
        "{partial}"
    );
}
