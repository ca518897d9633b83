//! The representations an Accept header may ask of every verb that answers with an object
//! (issue 39): PartialObjectMetadata, PartialObjectMetadataList and Table for get, list,
//! create, update, patch, delete and deletecollection, and 406 for one the server lacks.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::common;

const PARTIAL: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    accept: &str,
    content_type: &str,
    body: Value,
) -> (u16, Value) {
    let (code, _, text) = common::raw_with_headers(
        client,
        method,
        path,
        &[
            ("accept", accept.to_string()),
            ("content-type", content_type.to_string()),
        ],
        if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
    )
    .await;
    let v = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{code}: {text}"));
    (code, v)
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "x"}}, "data": {"k": "v"}})
}

fn assert_partial(code: u16, v: &Value, want_code: u16, name: &str) {
    assert_eq!(code, want_code, "{v}");
    assert_eq!(v["kind"], "PartialObjectMetadata", "{v}");
    assert_eq!(v["apiVersion"], "meta.k8s.io/v1", "{v}");
    assert_eq!(v["metadata"]["name"], name, "{v}");
    assert!(v.get("data").is_none(), "only metadata: {v}");
}

#[tokio::test]
async fn every_verb_answers_with_partial_object_metadata_when_asked() {
    let f = common::start().await;
    let c = &f.client;
    let json_ct = "application/json";
    let (code, v) = send(c, "POST", CMS, PARTIAL, json_ct, cm("a")).await;
    assert_partial(code, &v, 201, "a");
    assert_eq!(v["metadata"]["labels"]["app"], "x");

    let (code, v) = send(c, "GET", &format!("{CMS}/a"), PARTIAL, json_ct, Value::Null).await;
    assert_partial(code, &v, 200, "a");
    let rv = v["metadata"]["resourceVersion"].clone();

    let mut updated = cm("a");
    updated["metadata"]["resourceVersion"] = rv;
    updated["data"]["k"] = json!("w");
    let (code, v) = send(c, "PUT", &format!("{CMS}/a"), PARTIAL, json_ct, updated).await;
    assert_partial(code, &v, 200, "a");

    let (code, v) = send(
        c,
        "PATCH",
        &format!("{CMS}/a"),
        PARTIAL,
        "application/merge-patch+json",
        json!({"metadata": {"annotations": {"seen": "yes"}}}),
    )
    .await;
    assert_partial(code, &v, 200, "a");
    assert_eq!(v["metadata"]["annotations"]["seen"], "yes");

    // A delete that answers with the object (a finalizer keeps it) is partial too; one that
    // answers with a Status keeps the Status.
    let (code, v) = send(
        c,
        "PATCH",
        &format!("{CMS}/a"),
        "application/json",
        "application/merge-patch+json",
        json!({"metadata": {"finalizers": ["example.com/hold"]}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let (code, v) = send(
        c,
        "DELETE",
        &format!("{CMS}/a"),
        PARTIAL,
        json_ct,
        Value::Null,
    )
    .await;
    assert_partial(code, &v, 200, "a");
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");

    // The list forms: list and deletecollection.
    send(c, "POST", CMS, json_ct, json_ct, cm("b")).await;
    let ours = format!("{CMS}?labelSelector=app%3Dx");
    let (code, v) = send(c, "GET", &ours, PARTIAL_LIST, json_ct, Value::Null).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["kind"], "PartialObjectMetadataList");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2), "{v}");
    let (code, v) = send(c, "DELETE", &ours, PARTIAL_LIST, json_ct, Value::Null).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["kind"], "PartialObjectMetadataList", "{v}");
    assert_eq!(v["apiVersion"], "meta.k8s.io/v1", "{v}");
    assert!(
        v["items"].as_array().is_some_and(|items| items
            .iter()
            .all(|i| i["kind"] == "PartialObjectMetadata" && i.get("data").is_none())),
        "{v}"
    );
    // The single form of a list, and the list form of a single object: 406.
    let (code, v) = send(c, "GET", CMS, PARTIAL, json_ct, Value::Null).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (406, Some("NotAcceptable")),
        "{v}"
    );
    let (code, v) = send(c, "POST", CMS, PARTIAL_LIST, json_ct, cm("c")).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (406, Some("NotAcceptable")),
        "{v}"
    );
    assert_eq!(
        v["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list"
    );
}

#[tokio::test]
async fn kube_rs_patch_metadata_gets_partial_object_metadata() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    cms.create(
        &Default::default(),
        &serde_json::from_value(cm("m")).unwrap(),
    )
    .await
    .unwrap();
    let patched = cms
        .patch_metadata(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"patched": "yes"}}})),
        )
        .await
        .unwrap();
    let types = patched.types.expect("types");
    assert_eq!(types.kind, "PartialObjectMetadata");
    assert_eq!(types.api_version, "meta.k8s.io/v1");
    assert_eq!(
        patched.metadata.labels.unwrap()["patched"],
        "yes".to_string()
    );
    let deleted = cms.delete("m", &DeleteParams::default()).await.unwrap();
    assert!(
        deleted.is_right(),
        "a ConfigMap's delete answers with a Status"
    );
}

#[tokio::test]
async fn a_create_asked_for_a_table_answers_with_its_row() {
    let f = common::start().await;
    let (code, v) = send(&f.client, "POST", CMS, TABLE, "application/json", cm("t")).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["kind"], "Table");
    assert_eq!(v["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(v["rows"][0]["cells"][0], "t", "{v}");
    assert!(v["metadata"]["resourceVersion"].is_string(), "{v}");
}

#[tokio::test]
async fn an_unknown_representation_is_not_acceptable_and_nothing_is_written() {
    let f = common::start().await;
    let c = &f.client;
    let bogus = "application/json;as=Bogus;g=meta.k8s.io;v=v1";
    let (code, v) = send(c, "POST", CMS, bogus, "application/json", cm("never")).await;
    assert_eq!(code, 406, "{v}");
    assert_eq!(v["kind"], "Status");
    assert_eq!(v["reason"], "NotAcceptable");
    assert_eq!(
        v["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    assert!(cms.get_opt("never").await.unwrap().is_none(), "not created");
    // With an acceptable alternative after it, the alternative is served.
    let (code, v) = send(
        c,
        "GET",
        CMS,
        &format!("{bogus}, application/json"),
        "application/json",
        Value::Null,
    )
    .await;
    assert_eq!(
        (code, v["kind"].as_str()),
        (200, Some("ConfigMapList")),
        "{v}"
    );
}
