//! CRD conversion webhooks through kube-rs: a Book CRD served at v1
//! (`spec.author`) and v2 (`spec.authors`, stored), converted by a real HTTPS
//! webhook (a test server with its own CA). Objects are stored at v2 and
//! served at the version asked for: get, list (one review for the page),
//! watch, create, merge patch, server-side apply and delete. Bad answers and
//! an unreachable webhook give kube-apiserver's errors, and nothing is stored
//! half-converted.

use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::common::webhook::{WebhookServer, serve_raw};
use crate::common::*;

/// Where extra v2 authors are kept on a v1 object.
const MORE_AUTHORS: &str = "example.com/more-authors";

/// How the test webhook answers.
#[derive(Clone, PartialEq)]
enum Answer {
    Convert,
    Fail(&'static str),
    WrongUid,
    Rename,
    NoObjects,
}

/// Converts one Book between v1 and v2; a v2 Book's other authors survive a
/// trip through v1 in an annotation.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    if desired.ends_with("/v2") {
        let mut authors: Vec<Value> = spec.get("author").into_iter().cloned().collect();
        if let Some(more) = obj.pointer(&format!(
            "/metadata/annotations/{}",
            MORE_AUTHORS.replace('/', "~1")
        )) && let Ok(more) = serde_json::from_str::<Vec<Value>>(more.as_str().unwrap_or("[]"))
        {
            authors.extend(more);
        }
        if let Some(a) = out["metadata"]["annotations"].as_object_mut() {
            a.remove(MORE_AUTHORS);
        }
        out["spec"] = json!({"title": spec["title"], "authors": authors});
    } else {
        let authors = spec["authors"].as_array().cloned().unwrap_or_default();
        out["spec"] = json!({"title": spec["title"]});
        if let Some(first) = authors.first() {
            out["spec"]["author"] = first.clone();
        }
        if authors.len() > 1 {
            let more = serde_json::to_string(&authors[1..]).unwrap();
            out["metadata"]["annotations"][MORE_AUTHORS] = json!(more);
        }
    }
    out
}

struct Books {
    fx: Fixture,
    hook: WebhookServer,
    answer: Arc<Mutex<Answer>>,
}

impl Books {
    fn at(&self, version: &str) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "example.com".into(),
            version: version.into(),
            api_version: format!("example.com/{version}"),
            kind: "Book".into(),
            plural: "books".into(),
        };
        Api::namespaced_with(self.fx.client.clone(), "default", &resource)
    }

    fn answer(&self, a: Answer) {
        *self.answer.lock().unwrap() = a;
    }

    /// Creates a Book at `version`.
    async fn put(&self, version: &str, name: &str, spec: Value) -> DynamicObject {
        self.at(version)
            .create(&PostParams::default(), &book(version, name, spec))
            .await
            .unwrap()
    }

    /// The reviews received, in order.
    fn reviews(&self) -> Vec<Value> {
        self.hook.requests("/convert")
    }
}

/// A server with the Book CRD converted by a test webhook; `review_versions`
/// is the CRD's `conversionReviewVersions`.
async fn books(review_versions: &[&str]) -> Books {
    books_reached(
        review_versions,
        |hook| json!({"url": format!("{}/convert", hook.url), "caBundle": hook.ca_bundle()}),
    )
    .await
}

/// [`books`], the webhook reached by the `clientConfig` that `reach` gives.
async fn books_reached(
    review_versions: &[&str],
    reach: impl FnOnce(&WebhookServer) -> Value,
) -> Books {
    let answer = Arc::new(Mutex::new(Answer::Convert));
    let mode = answer.clone();
    let hook = serve_raw(move |_, review| {
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
        let objects = request["objects"].as_array().cloned().unwrap_or_default();
        let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
        let mut uid = request["uid"].clone();
        let mut result = json!({"status": "Success"});
        match mode.lock().unwrap().clone() {
            Answer::Convert => {}
            Answer::Fail(message) => result = json!({"status": "Failure", "message": message}),
            Answer::WrongUid => uid = json!("not-the-uid"),
            Answer::Rename => {
                for o in &mut converted {
                    o["metadata"]["name"] = json!("renamed");
                }
            }
            Answer::NoObjects => converted.clear(),
        }
        json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
               "response": {"uid": uid, "convertedObjects": converted, "result": result}})
    })
    .await;
    let fx = start().await;
    let client_config = reach(&hook);
    let schema = |spec: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec}}}})
    };
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "books.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "books", "singular": "book", "kind": "Book"},
            "versions": [
                {"name": "v1", "served": true, "storage": false, "schema": schema(json!({
                    "title": {"type": "string"}, "author": {"type": "string"}}))},
                {"name": "v2", "served": true, "storage": true, "schema": schema(json!({
                    "title": {"type": "string"},
                    "authors": {"type": "array", "items": {"type": "string"}}}))}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": review_versions,
                "clientConfig": client_config}}}}))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(fx.client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = kube::runtime::wait::await_condition(
        crds,
        "books.example.com",
        kube::runtime::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), established)
        .await
        .expect("established")
        .unwrap();
    Books { fx, hook, answer }
}

fn book(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Book",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

fn spec(o: &DynamicObject) -> Value {
    o.data["spec"].clone()
}

#[tokio::test]
async fn objects_are_stored_at_the_storage_version_and_served_at_the_one_asked() {
    let b = books(&["v1"]).await;
    let created = b
        .at("v1")
        .create(
            &PostParams::default(),
            &book("v1", "one", json!({"title": "T", "author": "Ann"})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.types.as_ref().unwrap().api_version,
        "example.com/v1"
    );
    assert_eq!(spec(&created), json!({"title": "T", "author": "Ann"}));
    let v2 = b.at("v2").get("one").await.unwrap();
    assert_eq!(spec(&v2), json!({"title": "T", "authors": ["Ann"]}));
    // Create at v1 is converted to v2 to be stored, and back for the answer.
    let reviews = b.reviews();
    assert_eq!(reviews.len(), 2, "{reviews:#?}");
    assert_eq!(reviews[0]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(reviews[1]["desiredAPIVersion"], "example.com/v1");
    // Objects already at the storage version are not sent.
    let before = b.reviews().len();
    b.put("v2", "two", json!({"title": "U", "authors": ["Bo", "Cy"]}))
        .await;
    b.at("v2").get("two").await.unwrap();
    assert_eq!(b.reviews().len(), before);
    let one = b.at("v1").get("two").await.unwrap();
    assert_eq!(spec(&one)["author"], "Bo");
    assert_eq!(one.types.as_ref().unwrap().api_version, "example.com/v1");
}

#[tokio::test]
async fn a_list_is_converted_in_one_review_and_a_watch_per_event() {
    let b = books(&["v1"]).await;
    for (name, author) in [("a", "Ann"), ("b", "Bo"), ("c", "Cy")] {
        b.put("v2", name, json!({"title": name, "authors": [author]}))
            .await;
    }
    let before = b.reviews().len();
    let list = b.at("v1").list(&ListParams::default()).await.unwrap();
    let authors: Vec<Value> = list
        .items
        .iter()
        .map(|o| spec(o)["author"].clone())
        .collect();
    assert_eq!(authors, vec![json!("Ann"), json!("Bo"), json!("Cy")]);
    let reviews = b.reviews();
    assert_eq!(reviews.len(), before + 1);
    assert_eq!(reviews[before]["objects"].as_array().map(Vec::len), Some(3));

    let rv = list.metadata.resource_version.unwrap();
    let mut events = b
        .at("v1")
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    b.at("v2")
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"authors": ["Ada", "Al"]}})),
        )
        .await
        .unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Modified(o)) => {
            assert_eq!(o.types.as_ref().unwrap().api_version, "example.com/v1");
            assert_eq!(spec(&o)["author"], "Ada");
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
}

#[tokio::test]
async fn writes_through_the_other_version_keep_what_it_cannot_express() {
    let b = books(&["v1", "v1beta1"]).await;
    b.at("v2")
        .create(
            &PostParams::default(),
            &book(
                "v2",
                "many",
                json!({"title": "T", "authors": ["Ann", "Bo"]}),
            ),
        )
        .await
        .unwrap();
    // A merge patch through v1 changes the title and keeps both authors.
    let patched = b
        .at("v1")
        .patch(
            "many",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"title": "T2"}})),
        )
        .await
        .unwrap();
    assert_eq!(spec(&patched)["author"], "Ann");
    let v2 = b.at("v2").get("many").await.unwrap();
    assert_eq!(spec(&v2), json!({"title": "T2", "authors": ["Ann", "Bo"]}));
    // Server-side apply through v1.
    let applied = book("v1", "applied", json!({"title": "S", "author": "Cy"}));
    b.at("v1")
        .patch(
            "applied",
            &PatchParams::apply("tester"),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(
        spec(&b.at("v2").get("applied").await.unwrap())["authors"],
        json!(["Cy"])
    );
    // Delete answers with the object at the version asked.
    let deleted = b
        .at("v1")
        .delete("many", &DeleteParams::default())
        .await
        .unwrap();
    let gone = deleted.left().expect("deleted at once");
    assert_eq!(spec(&gone)["author"], "Ann");
    // The review is in the first version the CRD allows.
    let review = b.reviews().pop().unwrap();
    assert!(
        review["uid"].as_str().is_some_and(|u| u.len() == 36),
        "{review}"
    );
}

#[tokio::test]
async fn the_first_supported_review_version_is_used() {
    let b = books(&["v9", "v1beta1", "v1"]).await;
    // v1beta1 reviews are not checked for their uid: a wrong one passes.
    b.answer(Answer::WrongUid);
    b.put("v1", "old", json!({"title": "T", "author": "A"}))
        .await;
    // The test webhook echoes the review's apiVersion: a v1beta1 answer.
    assert_eq!(
        spec(&b.at("v2").get("old").await.unwrap())["authors"],
        json!(["A"])
    );
}

async fn status_of_get(b: &Books, name: &str) -> kube::core::Status {
    status_of(b.at("v1").get(name).await.unwrap_err())
}

#[tokio::test]
async fn bad_answers_give_kubes_errors() {
    let b = books(&["v1"]).await;
    b.put("v2", "x", json!({"title": "T", "authors": ["A"]}))
        .await;
    let prefix = "conversion webhook for example.com/v2, Kind=Book";

    b.answer(Answer::Fail("cannot convert this book"));
    let s = status_of_get(&b, "x").await;
    assert_eq!((s.code, s.reason.as_str()), (500, ""));
    assert_eq!(
        s.message,
        format!("{prefix} failed: cannot convert this book")
    );

    b.answer(Answer::WrongUid);
    let s = status_of_get(&b, "x").await;
    assert!(
        s.message
            .starts_with(&format!("{prefix} failed: expected response.uid=\"")),
        "{}",
        s.message
    );
    assert!(
        s.message.ends_with(", got \"not-the-uid\""),
        "{}",
        s.message
    );

    b.answer(Answer::Rename);
    let s = status_of_get(&b, "x").await;
    assert_eq!(
        s.message,
        format!("{prefix} returned invalid object: must have the same name: x != renamed")
    );

    b.answer(Answer::NoObjects);
    let s = status_of_get(&b, "x").await;
    assert_eq!(
        s.message,
        format!("{prefix} returned 0 objects, expected 1")
    );

    // A list names the list it converts.
    b.answer(Answer::Fail("no"));
    let s = status_of(b.at("v1").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(s.code, 500);
    assert_eq!(
        s.message,
        "conversion webhook for example.com/v1, Kind=BookList failed: no"
    );

    // A failed conversion of a write stores nothing.
    let s = status_of(
        b.at("v1")
            .create(
                &PostParams::default(),
                &book("v1", "y", json!({"title": "T", "author": "B"})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        s.message,
        "conversion webhook for example.com/v1, Kind=Book failed: no"
    );
    let s = status_of(
        b.at("v1")
            .patch(
                "x",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"title": "N"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 500);
    b.answer(Answer::Convert);
    let stored = b.at("v2").list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = stored
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["x".to_string()]);
    assert_eq!(spec(&stored.items[0])["title"], "T");
}

#[tokio::test]
async fn a_watch_ends_with_an_internal_error_when_conversion_fails() {
    let b = books(&["v1"]).await;
    let list = b.at("v1").list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut events = b
        .at("v1")
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    b.answer(Answer::Fail("down for repairs"));
    b.put("v2", "w", json!({"title": "T", "authors": ["A"]}))
        .await;
    match events.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
            assert_eq!(
                e.message,
                "Internal error occurred: conversion webhook for example.com/v2, Kind=Book failed: down for repairs"
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_webhook_is_a_failed_call() {
    let b = books(&["v1"]).await;
    b.put("v2", "z", json!({"title": "T", "authors": ["A"]}))
        .await;
    let url = b.hook.url.clone();
    let v1 = b.at("v1");
    drop(b.hook);
    let s = status_of(v1.get("z").await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (500, ""));
    let expected = format!(
        "conversion webhook for example.com/v2, Kind=Book failed: Post \"{url}/convert?timeout=30s\": "
    );
    assert!(s.message.starts_with(&expected), "{}", s.message);
}

#[tokio::test]
async fn a_webhook_behind_a_service_is_reached_through_its_endpoints() {
    let b = books_reached(&["v1"], |hook| {
        json!({"service": {"namespace": "default", "name": "hook", "path": "/convert", "port": 8443},
               "caBundle": hook.ca_bundle()})
    })
    .await;
    b.put("v2", "s", json!({"title": "T", "authors": ["A"]}))
        .await;
    let s = status_of(b.at("v1").get("s").await.unwrap_err());
    assert_eq!(
        s.message,
        "conversion webhook for example.com/v2, Kind=Book failed: Post \"https://hook.default.svc:8443/convert?timeout=30s\": service \"hook\" not found"
    );
    let port: u16 = b.hook.url.rsplit(':').next().unwrap().parse().unwrap();
    let core = |kind: &str| {
        let resource = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()).replace("endpointss", "endpoints"),
        };
        Api::<DynamicObject>::namespaced_with(b.fx.client.clone(), "default", &resource)
    };
    let object = |v: Value| -> DynamicObject { serde_json::from_value(v).unwrap() };
    core("Service")
        .create(
            &PostParams::default(),
            &object(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "hook"},
            "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": 9443}]}})),
        )
        .await
        .unwrap();
    core("Endpoints")
        .create(
            &PostParams::default(),
            &object(json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "hook"},
            "subsets": [{"addresses": [{"ip": crate::common::webhook::host_address()}],
                         "ports": [{"name": "https", "port": port}]}]})),
        )
        .await
        .unwrap();
    let v1 = b.at("v1").get("s").await.unwrap();
    assert_eq!(spec(&v1)["author"], "A");
}
