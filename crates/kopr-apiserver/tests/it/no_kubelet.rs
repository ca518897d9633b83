//! The core server without the controllers crate: nothing runs pods and no kubelet can be
//! reached, so the requests that go to a kubelet get kube-apiserver's answers for a kubelet
//! it cannot dial, while the rest of the API works.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::common;

#[tokio::test]
async fn without_a_kubelet_requests_to_one_fail_as_kubes_do() {
    let server = kopr_apiserver::core::ApiServer::start(kopr_apiserver::Config::ephemeral())
        .await
        .expect("core server starts");
    let client = common::client_for(&server).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.1.2.3"}]},
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // No controller ran: the pod was not touched.
    let got = pods.get("p").await.unwrap();
    let status = got.status.unwrap_or_default();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert!(
        status.container_statuses.is_none(),
        "no kubelet posted a status"
    );

    let status = |body: &str| -> serde_json::Value { serde_json::from_str(body).unwrap() };
    let (code, _, body) = common::raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/p/exec?command=true&stdout=true",
        None,
        Vec::new(),
    )
    .await;
    let s = status(&body);
    assert_eq!((code, s["code"].as_i64()), (500, Some(500)));
    assert_eq!(
        s["reason"],
        json!(null),
        "a plain Go error has no reason: {body}"
    );
    assert_eq!(
        s["message"],
        "error dialing backend: dial tcp 10.1.2.3:10250: connect: connection refused"
    );

    let (code, _, body) = common::raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/p/log",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        status(&body)["message"],
        "Get \"https://10.1.2.3:10250/containerLogs/default/p/c\": dial tcp 10.1.2.3:10250: connect: connection refused"
    );

    // 503: a client that does not retry it.
    let client = common::client_without_retries(&server).await;
    let (code, _, body) = common::raw(
        &client,
        "GET",
        "/api/v1/nodes/n1/proxy/healthz",
        None,
        Vec::new(),
    )
    .await;
    let s = status(&body);
    assert_eq!(
        (code, s["reason"].as_str()),
        (503, Some("ServiceUnavailable"))
    );
    assert_eq!(
        s["message"],
        "error trying to reach service: dial tcp 10.1.2.3:10250: connect: connection refused"
    );
}
