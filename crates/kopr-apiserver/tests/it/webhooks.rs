//! Admission webhooks through kube-rs: the server calls real HTTPS webhooks
//! (a test server with its own CA) and answers as kube-apiserver 1.32 does:
//! denials with the webhook's code and kube's message, JSON patches applied
//! (and reinvocation), Fail and Ignore on unreachable or slow webhooks, an
//! unknown CA, selectors and matchConditions, subresource rules, dry run,
//! deletions and warnings.

use crate::common::webhook::{WebhookServer, serve};
use crate::common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("typed")
}

fn configurations(client: &kube::Client, mutating: bool) -> Api<DynamicObject> {
    let kind = if mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let resource = ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::all_with(client.clone(), &resource)
}

/// A webhook entry calling `server` at `path` for `resources` on CREATE,
/// UPDATE and DELETE.
fn hook(name: &str, server: &WebhookServer, path: &str, resources: &[&str]) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": format!("{}{path}", server.url), "caBundle": server.ca_bundle()},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": ["", "apps"],
                   "apiVersions": ["v1"], "resources": resources}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

async fn register(client: &kube::Client, mutating: bool, name: &str, hooks: Vec<Value>) {
    let kind = if mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                      "metadata": {"name": name}, "webhooks": hooks});
    configurations(client, mutating)
        .create(&PostParams::default(), &from(body))
        .await
        .expect("configuration created");
}

/// Registers a configuration of one webhook calling `server` at `path` for
/// ConfigMaps.
async fn register_one(
    client: &kube::Client,
    mutating: bool,
    configuration: &str,
    name: &str,
    server: &WebhookServer,
    path: &str,
) {
    let entry = hook(name, server, path, &["configmaps"]);
    register(client, mutating, configuration, vec![entry]).await;
}

async fn namespace(client: &kube::Client, name: &str, labels: Value) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": name, "labels": labels}})),
        )
        .await
        .expect("namespace");
}

fn config_map(name: &str, labels: Value) -> ConfigMap {
    from(json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}))
}

/// Allows everything, except (on `/validate`) objects labelled `deny`,
/// refused with code 403 and the label's value as message, and (on
/// `/mutate`) adds `mutated: yes`.
fn policy(path: &str, request: &Value) -> Value {
    let labels = &request["object"]["metadata"]["labels"];
    let protected = request["oldObject"]["metadata"]["labels"]["protected"].is_string();
    if path == "/validate" && request["operation"] == "DELETE" && protected {
        return json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "protected"}});
    }
    if let (Some(why), "/validate") = (labels["deny"].as_str(), path) {
        return json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": why}});
    }
    if path == "/mutate" && labels["mutated"].is_null() && !request["object"].is_null() {
        use base64::Engine as _;
        let ops = if labels.is_object() {
            json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
        };
        let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        return json!({"allowed": true, "patchType": "JSONPatch", "patch": patch,
                      "warnings": ["labelled by the webhook"]});
    }
    json!({"allowed": true})
}

#[tokio::test]
async fn validating_and_mutating_webhooks_deny_patch_and_see_kubes_request() {
    let fx = start().await;
    let server = serve(policy).await;
    register_one(
        &fx.client,
        false,
        "validate",
        "validate.example.com",
        &server,
        "/validate",
    )
    .await;
    register_one(
        &fx.client,
        true,
        "mutate",
        "mutate.example.com",
        &server,
        "/mutate",
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");

    let created = api
        .create(
            &PostParams::default(),
            &config_map("plain", json!({"app": "x"})),
        )
        .await
        .expect("allowed");
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("mutated").map(String::as_str),
        Some("yes"),
        "the patch applied"
    );

    let refused = api
        .create(
            &PostParams::default(),
            &config_map("bad", json!({"deny": "not-today"})),
        )
        .await
        .map_err(status_of)
        .expect_err("denied");
    // The mutating webhook passes it; the validating one refuses.
    assert_eq!(refused.code, 403);
    assert_eq!(refused.reason, "Forbidden");
    assert_eq!(
        refused.message,
        "admission webhook \"validate.example.com\" denied the request: not-today"
    );
    assert!(
        api.get_opt("bad").await.unwrap().is_none(),
        "nothing stored"
    );

    let requests = server.requests("/validate");
    let request = requests
        .iter()
        .find(|r| r["name"] == "plain" && r["operation"] == "CREATE")
        .expect("the validating webhook saw the create");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(
        request["object"]["metadata"]["labels"]["mutated"], "yes",
        "validation sees the mutation"
    );
    assert!(request["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(
        request["userInfo"]["username"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );

    // An update carries the old object; a deletion carries only the old one.
    let patch = json!({"data": {"k": "w"}});
    api.patch("plain", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("update allowed");
    api.delete("plain", &DeleteParams::default())
        .await
        .expect("delete allowed");
    let requests = server.requests("/validate");
    let update = requests
        .iter()
        .find(|r| r["operation"] == "UPDATE")
        .expect("update seen");
    assert_eq!(update["oldObject"]["data"]["k"], "v");
    assert_eq!(update["object"]["data"]["k"], "w");
    assert_eq!(update["options"]["kind"], "UpdateOptions");
    let delete = requests
        .iter()
        .find(|r| r["operation"] == "DELETE")
        .expect("delete seen");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["oldObject"]["metadata"]["name"], "plain");
    assert_eq!(delete["options"]["kind"], "DeleteOptions");

    // A deletion a webhook denies does not happen.
    api.create(
        &PostParams::default(),
        &config_map("kept", json!({"protected": "yes"})),
    )
    .await
    .unwrap();
    let refused_delete = api
        .delete("kept", &DeleteParams::default())
        .await
        .map_err(status_of)
        .expect_err("deletion denied");
    assert_eq!(
        refused_delete.message,
        "admission webhook \"validate.example.com\" denied the request: protected"
    );
    assert!(api.get_opt("kept").await.unwrap().is_some(), "still there");
    let label = json!({"metadata": {"labels": {"deny": "keep-it"}}});
    let refused_label = api
        .patch("kept", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .map_err(status_of)
        .expect_err("labelling denied");
    assert_eq!(
        refused_label.message,
        "admission webhook \"validate.example.com\" denied the request: keep-it"
    );
}

#[tokio::test]
async fn warnings_reach_the_client_as_warning_headers() {
    let fx = start().await;
    let server = serve(policy).await;
    register_one(
        &fx.client,
        true,
        "mutate",
        "mutate.example.com",
        &server,
        "/mutate",
    )
    .await;
    let body = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}),
    )
    .unwrap();
    let (code, headers, text) = raw(
        &fx.client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        body,
    )
    .await;
    assert_eq!(code, 201, "{text}");
    assert_eq!(warnings(&headers), ["299 - \"labelled by the webhook\""]);
}

#[tokio::test]
async fn reinvocation_runs_an_if_needed_webhook_again_after_a_later_change() {
    let fx = start().await;
    let server = serve(|path, request| {
        use base64::Engine as _;
        let labels = &request["object"]["metadata"]["labels"];
        let (key, value) = if path == "/first" {
            ("first", "1")
        } else {
            ("second", "2")
        };
        if !labels[key].is_null() {
            return json!({"allowed": true});
        }
        let ops = json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": value}]);
        let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        json!({"allowed": true, "patchType": "JSONPatch", "patch": patch})
    })
    .await;
    let mut first = hook("first.example.com", &server, "/first", &["configmaps"]);
    first["reinvocationPolicy"] = json!("IfNeeded");
    // Ordered by configuration name: "a-first" before "b-second".
    register(&fx.client, true, "a-first", vec![first]).await;
    register_one(
        &fx.client,
        true,
        "b-second",
        "second.example.com",
        &server,
        "/second",
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &config_map("r", json!({"app": "r"})),
        )
        .await
        .unwrap();
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("first").map(String::as_str), Some("1"));
    assert_eq!(labels.get("second").map(String::as_str), Some("2"));
    let first_calls = server.requests("/first");
    assert_eq!(
        first_calls.len(),
        2,
        "called again after the second webhook changed the object"
    );
    assert_eq!(
        first_calls[1]["object"]["metadata"]["labels"]["second"],
        "2"
    );
    assert_eq!(
        server.requests("/second").len(),
        1,
        "Never: not called again"
    );
}

#[tokio::test]
async fn unreachable_slow_and_untrusted_webhooks_fail_closed_or_open() {
    let fx = start().await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_port = closed.local_addr().unwrap().port();
    drop(closed);
    let server = serve(|_, _| json!({"allowed": true, "__delay_ms": 3000})).await;
    let mut unreachable = hook("closed.example.com", &server, "/", &["configmaps"]);
    unreachable["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{dead_port}/check"));
    unreachable["objectSelector"] = json!({"matchLabels": {"case": "unreachable"}});
    let mut slow = hook("slow.example.com", &server, "/slow", &["configmaps"]);
    slow["timeoutSeconds"] = json!(1);
    slow["objectSelector"] = json!({"matchLabels": {"case": "slow"}});
    let mut untrusted = hook("untrusted.example.com", &server, "/", &["configmaps"]);
    let other = serve(|_, _| json!({"allowed": true})).await;
    untrusted["clientConfig"]["caBundle"] = json!(other.ca_bundle());
    untrusted["objectSelector"] = json!({"matchLabels": {"case": "untrusted"}});
    register(
        &fx.client,
        false,
        "failing",
        vec![unreachable.clone(), slow.clone(), untrusted.clone()],
    )
    .await;

    let refuse = |case: &'static str| {
        let api = api.clone();
        async move {
            api.create(
                &PostParams::default(),
                &config_map(case, json!({"case": case})),
            )
            .await
            .map_err(status_of)
            .expect_err("refused under Fail")
        }
    };
    let e = refuse("unreachable").await;
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    assert_eq!(
        e.message,
        format!(
            "Internal error occurred: failed calling webhook \"closed.example.com\": failed to call webhook: Post \"https://127.0.0.1:{dead_port}/check?timeout=10s\": dial tcp 127.0.0.1:{dead_port}: connect: connection refused"
        )
    );
    let e = refuse("slow").await;
    assert_eq!(
        e.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}/slow?timeout=1s\": context deadline exceeded",
            server.url
        )
    );
    let e = refuse("untrusted").await;
    assert!(
        e.message.ends_with(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ),
        "{}",
        e.message
    );

    // The same webhooks under Ignore let every write through.
    let ignoring: Vec<Value> = [unreachable, slow, untrusted]
        .into_iter()
        .map(|mut h| {
            h["name"] = json!(format!("ignore-{}", h["name"].as_str().unwrap()));
            h["failurePolicy"] = json!("Ignore");
            h
        })
        .collect();
    configurations(&fx.client, false)
        .delete("failing", &DeleteParams::default())
        .await
        .unwrap();
    register(&fx.client, false, "ignoring", ignoring).await;
    for case in ["unreachable", "slow", "untrusted"] {
        api.create(
            &PostParams::default(),
            &config_map(case, json!({"case": case})),
        )
        .await
        .unwrap_or_else(|e| panic!("{case} allowed under Ignore: {e}"));
    }
}

#[tokio::test]
async fn selectors_conditions_subresources_and_dry_run_choose_what_is_sent() {
    let fx = start().await;
    let server = serve(|_, _| json!({"allowed": true})).await;
    namespace(&fx.client, "watched", json!({"webhooks": "on"})).await;
    namespace(&fx.client, "quiet", json!({})).await;
    let mut by_namespace = hook("ns.example.com", &server, "/ns", &["configmaps"]);
    by_namespace["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    let mut by_condition = hook("cel.example.com", &server, "/cel", &["configmaps"]);
    by_condition["matchConditions"] = json!([
        {"name": "x-only", "expression": "object != null && object.metadata.name.startsWith('x')"}
    ]);
    let status_only = hook(
        "status.example.com",
        &server,
        "/status",
        &["deployments/status"],
    );
    let mut side_effects = hook("side.example.com", &server, "/side", &["configmaps"]);
    side_effects["sideEffects"] = json!("NoneOnDryRun");
    register(
        &fx.client,
        false,
        "choosing",
        vec![by_namespace, by_condition, status_only, side_effects],
    )
    .await;

    for ns in ["watched", "quiet"] {
        let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), ns);
        api.create(&PostParams::default(), &config_map("xray", json!({})))
            .await
            .unwrap();
        api.create(&PostParams::default(), &config_map("yak", json!({})))
            .await
            .unwrap();
    }
    let names = |path: &str| -> Vec<String> {
        server
            .requests(path)
            .iter()
            .map(|r| {
                format!(
                    "{}/{}",
                    r["namespace"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(names("/ns"), ["watched/xray", "watched/yak"]);
    assert_eq!(names("/cel"), ["watched/xray", "quiet/xray"]);

    // A dry run reaches webhooks without side effects, marked as such.
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "quiet");
    api.create(
        &PostParams {
            dry_run: true,
            ..Default::default()
        },
        &config_map("dry", json!({})),
    )
    .await
    .unwrap();
    let dry = server
        .requests("/side")
        .into_iter()
        .find(|r| r["name"] == "dry")
        .expect("called on a dry run");
    assert_eq!(dry["dryRun"], true);
    assert!(api.get_opt("dry").await.unwrap().is_none());

    // A status write reaches the status rule; a spec write does not.
    let deployments: Api<Deployment> = Api::namespaced(fx.client.clone(), "quiet");
    let deployment = from(json!({"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}));
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    // (The deployment controller writes the status too, so status requests
    // may come before ours; none is the spec write.)
    let status = json!({"status": {"observedGeneration": 7}});
    deployments
        .patch_status("d", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let seen = server.requests("/status");
    assert!(!seen.is_empty(), "the status write was sent");
    assert!(
        seen.iter()
            .all(|r| r["subResource"] == "status" && r["kind"]["kind"] == "Deployment")
    );
}

#[tokio::test]
async fn a_dry_run_refuses_webhooks_with_side_effects_and_a_condition_error_is_forbidden() {
    let fx = start().await;
    let server = serve(|_, _| json!({"allowed": true})).await;
    let mut bad_condition = hook("broken.example.com", &server, "/broken", &["configmaps"]);
    bad_condition["matchConditions"] =
        json!([{"name": "bad", "expression": "object.metadata.nothing == 'x'"}]);
    register(&fx.client, false, "broken", vec![bad_condition]).await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    let e = api
        .create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .map_err(status_of)
        .expect_err("a failing condition refuses under Fail");
    assert_eq!(e.code, 403);
    assert!(
        e.message.starts_with("configmaps \"c\" is forbidden: expression 'object.metadata.nothing == 'x'' resulted in error: "),
        "{}",
        e.message
    );
    assert!(server.requests("/broken").is_empty(), "not called");
}

#[tokio::test]
async fn a_service_webhook_is_reached_through_its_endpoints() {
    let fx = start().await;
    let server =
        serve(|_, _| json!({"allowed": false, "status": {"message": "via the service"}})).await;
    let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut via_service = hook("svc.example.com", &server, "/", &["configmaps"]);
    via_service["clientConfig"] = json!({
        "service": {"namespace": "default", "name": "hook", "path": "/admit", "port": 8443},
        "caBundle": server.ca_bundle(),
    });
    register(&fx.client, false, "service", vec![via_service]).await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");

    // No Service yet: kube's words, under Fail.
    let e = api
        .create(&PostParams::default(), &config_map("a", json!({})))
        .await
        .map_err(status_of)
        .expect_err("no service");
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: Post \"https://hook.default.svc:8443/admit?timeout=10s\": service \"hook\" not found"
    );
    // A Service without endpoints.
    let services: Api<DynamicObject> = Api::namespaced_with(
        fx.client.clone(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()),
    );
    services
        .create(
            &PostParams::default(),
            &from(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "hook"},
            "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": 9443}]}})),
        )
        .await
        .unwrap();
    let e = api
        .create(&PostParams::default(), &config_map("b", json!({})))
        .await
        .map_err(status_of)
        .expect_err("no endpoints");
    assert!(
        e.message
            .ends_with("no endpoints available for service \"hook\""),
        "{}",
        e.message
    );
    // Endpoints at the webhook's address: called, with the Service's name in TLS.
    let endpoints: Api<DynamicObject> = Api::namespaced_with(
        fx.client.clone(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::Endpoints>(&()),
    );
    endpoints
        .create(&PostParams::default(), &from(json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "hook"},
            "subsets": [{"addresses": [{"ip": webhook::host_address()}], "ports": [{"name": "https", "port": port}]}]})))
        .await
        .unwrap();
    let e = api
        .create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .map_err(status_of)
        .expect_err("denied by the webhook");
    assert_eq!(e.code, 400, "no code from the webhook: 400");
    assert_eq!(
        e.message,
        "admission webhook \"svc.example.com\" denied the request: via the service"
    );
    assert_eq!(server.requests("/admit").len(), 1);
}

#[tokio::test]
async fn connections_to_a_webhook_are_kept_and_reused() {
    let fx = start().await;
    let server = serve(|_, _| json!({"allowed": true})).await;
    register_one(
        &fx.client,
        false,
        "reuse",
        "reuse.example.com",
        &server,
        "/reuse",
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    for i in 0..20 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("c{i}"), json!({})),
        )
        .await
        .unwrap();
    }
    assert_eq!(server.requests("/reuse").len(), 20);
    let connections = server.connections.load(std::sync::atomic::Ordering::SeqCst);
    assert!(connections < 10, "{connections} connections for 20 calls");
}

#[tokio::test]
async fn equivalent_match_policy_calls_a_webhook_for_another_version() {
    let fx = start().await;
    two_version_crd(&fx.client).await;
    let server = serve(|path, request| {
        if path == "/mutate" {
            let patch = r#"[{"op":"add","path":"/spec/stamped","value":"yes"}]"#;
            use base64::Engine as _;
            let _ = request;
            return json!({"allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch)});
        }
        json!({"allowed": true})
    })
    .await;
    let v1_rule = |name: &str, path: &str, policy: &str| {
        json!({"name": name,
            "clientConfig": {"url": format!("{}{path}", server.url), "caBundle": server.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["tools"]}],
            "matchPolicy": policy, "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    };
    register(
        &fx.client,
        false,
        "tools-validating",
        vec![
            v1_rule("equivalent.example.com", "/equivalent", "Equivalent"),
            v1_rule("exact.example.com", "/exact", "Exact"),
        ],
    )
    .await;
    register(
        &fx.client,
        true,
        "tools-mutating",
        vec![v1_rule("mutate.example.com", "/mutate", "Equivalent")],
    )
    .await;
    let v2 = ApiResource {
        group: "example.com".into(),
        version: "v2".into(),
        api_version: "example.com/v2".into(),
        kind: "Tool".into(),
        plural: "tools".into(),
    };
    let tools: Api<DynamicObject> = Api::namespaced_with(fx.client.clone(), "default", &v2);
    let created = tools
        .create(
            &PostParams::default(),
            &from(json!({"apiVersion": "example.com/v2", "kind": "Tool",
                "metadata": {"name": "hammer"}, "spec": {"weight": 3}})),
        )
        .await
        .unwrap();
    // The mutation, made on the v1 form, is in the v2 answer.
    assert_eq!(created.data["spec"], json!({"weight": 3, "stamped": "yes"}));
    assert_eq!(
        created.types.as_ref().unwrap().api_version,
        "example.com/v2"
    );
    let seen = server.requests("/equivalent");
    assert_eq!(seen.len(), 1, "called through the equivalent v1");
    assert_eq!(
        seen[0]["kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Tool"})
    );
    assert_eq!(
        seen[0]["requestKind"],
        json!({"group": "example.com", "version": "v2", "kind": "Tool"})
    );
    assert_eq!(seen[0]["resource"]["version"], "v1");
    assert_eq!(seen[0]["requestResource"]["version"], "v2");
    assert_eq!(seen[0]["object"]["apiVersion"], "example.com/v1");
    assert!(server.requests("/exact").is_empty(), "Exact: not called");
}

/// As kube's BeforeCreate runs between the two stages, mutating webhooks see a create without
/// a generated name, `uid` or `creationTimestamp`, and validating webhooks with them.
#[tokio::test]
async fn mutating_webhooks_see_a_create_before_the_server_names_it() {
    let fx = start().await;
    let server = serve(|_, _| json!({"allowed": true})).await;
    register_one(&fx.client, true, "m", "m.example.com", &server, "/m").await;
    register_one(&fx.client, false, "v", "v.example.com", &server, "/v").await;
    let api: Api<ConfigMap> = Api::namespaced(fx.client.clone(), "default");
    let cm: ConfigMap = from(json!({"metadata": {"generateName": "gen-"}}));
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.clone().unwrap();
    assert!(name.starts_with("gen-") && name.len() > 4, "{name}");
    let mutating = &server.requests("/m")[0];
    assert_eq!(mutating["name"], Value::Null, "no name yet: {mutating}");
    let meta = &mutating["object"]["metadata"];
    assert!(meta["name"].is_null() && meta["uid"].is_null(), "{meta}");
    assert!(meta["creationTimestamp"].is_null(), "{meta}");
    let validating = &server.requests("/v")[0];
    let meta = &validating["object"]["metadata"];
    assert_eq!(meta["name"], name.as_str());
    assert_eq!(meta["uid"], created.metadata.uid.clone().unwrap().as_str());
    assert!(meta["creationTimestamp"].is_string(), "{meta}");
}
