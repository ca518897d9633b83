//! CustomResourceDefinitions through kube-rs: the CRD kind's own validation
//! and status, and custom resources served from it.

use crate::common;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

fn greeting_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "greetings.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"message": {"type": "string"}}}}
            }}}]
        }
    }))
    .unwrap()
}

async fn established(crds: &Api<CustomResourceDefinition>, name: &str) -> CustomResourceDefinition {
    for _ in 0..500 {
        let crd = crds.get(name).await.unwrap();
        let ok = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if ok {
            return crd;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{name} not established in 5 s");
}

fn greetings(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Greeting"),
        "greetings",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

/// Installs the Greeting CRD and creates one Greeting, `name` with `spec.message`; returns it
/// as sent, and the Greetings' API.
async fn one_greeting(
    crds: &Api<CustomResourceDefinition>,
    client: &kube::Client,
    name: &str,
    message: &str,
) -> (DynamicObject, Api<DynamicObject>) {
    crds.create(&PostParams::default(), &greeting_crd())
        .await
        .unwrap();
    established(crds, "greetings.example.com").await;
    let api = greetings(client);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Greeting",
        "metadata": {"name": name}, "spec": {"message": message}
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    (obj, api)
}

/// Replaces the Greeting CRD's schema of `spec` with one of these `properties`.
async fn set_spec_properties(crds: &Api<CustomResourceDefinition>, properties: serde_json::Value) {
    let patch = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": properties}}}}}]}});
    crds.patch(
        "greetings.example.com",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn crd_status_and_serving() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    crds.create(&PostParams::default(), &greeting_crd())
        .await
        .unwrap();
    let crd = established(&crds, "greetings.example.com").await;
    let status = crd.status.unwrap();
    let names_accepted = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "NamesAccepted")
        .unwrap();
    assert_eq!(
        (
            names_accepted.status.as_str(),
            names_accepted.reason.as_deref()
        ),
        ("True", Some("NoConflicts"))
    );
    assert_eq!(status.stored_versions, Some(vec!["v1".to_string()]));
    assert_eq!(status.accepted_names.unwrap().kind, "Greeting");

    let api = greetings(&f.client);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Greeting",
        "metadata": {"name": "hello"}, "spec": {"message": "hi", "extra": 1}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"message": "hi"}),
        "unknown fields are pruned"
    );
    assert_eq!(created.metadata.generation, Some(1));

    // Wrong type: kube-openapi's message and cause type.
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "bad"}, "spec": {"message": 5}
    }))
    .unwrap();
    let err = common::status_of(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Greeting.example.com \"bad\" is invalid: spec.message: Invalid value: \"integer\": spec.message in body must be of type string: \"integer\""
    );
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueTypeInvalid", "spec.message")
    );

    // Server-side apply and merge patch work; strategic merge patch does not.
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "hello"}, "spec": {"message": "applied"}});
    let after = api
        .patch(
            "hello",
            &PatchParams::apply("tester").force(),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(after.data["spec"]["message"], "applied");
    assert_eq!(after.metadata.generation, Some(2));
    let err = common::status_of(
        api.patch(
            "hello",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 415);
    assert_eq!(
        err.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    // The wrong scope is not served.
    let (code, _, _) = common::raw(
        &f.client,
        "GET",
        "/apis/example.com/v1/greetings/hello",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 404);

    // Deleting the CRD deletes its objects, then the API.
    crds.delete("greetings.example.com", &DeleteParams::default())
        .await
        .unwrap();
    for _ in 0..500 {
        if crds
            .get_opt("greetings.example.com")
            .await
            .unwrap()
            .is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        crds.get_opt("greetings.example.com")
            .await
            .unwrap()
            .is_none()
    );
    let (code, _, _) = common::raw(
        &f.client,
        "GET",
        "/apis/example.com/v1/namespaces/default/greetings",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 404);
    // Re-created, the API starts empty.
    crds.create(&PostParams::default(), &greeting_crd())
        .await
        .unwrap();
    established(&crds, "greetings.example.com").await;
    assert!(
        api.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn invalid_crds_are_rejected_with_kube_messages() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let mut crd = serde_json::to_value(greeting_crd()).unwrap();
    crd["metadata"]["name"] = json!("wrong.example.com");
    let err = common::status_of(
        crds.create(
            &PostParams::default(),
            &serde_json::from_value(crd).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(err.message.contains("metadata.name: Invalid value: \"wrong.example.com\": must be spec.names.plural+\".\"+spec.group"), "{}", err.message);

    let mut crd = serde_json::to_value(greeting_crd()).unwrap();
    let mut second = crd["spec"]["versions"][0].clone();
    second["name"] = json!("v2");
    crd["spec"]["versions"].as_array_mut().unwrap().push(second);
    let err = common::status_of(
        crds.create(
            &PostParams::default(),
            &serde_json::from_value(crd).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        err.message
            .contains("must have exactly one version marked as storage version"),
        "{}",
        err.message
    );
}

/// Validation ratcheting: after a CRD's schema is tightened, objects stored under the old schema
/// can still be updated as long as the update leaves the now-invalid values alone; changing such
/// a value to another invalid one is rejected.
#[tokio::test]
async fn schema_validation_ratchets_on_update() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let (obj, api) = one_greeting(&crds, &f.client, "old-style", "a rather long message").await;
    set_spec_properties(
        &crds,
        json!({"message": {"type": "string", "maxLength": 5}, "note": {"type": "string"}}),
    )
    .await;
    // The new schema applies (a new object is checked against it)...
    let mut fresh = obj.clone();
    fresh.metadata.name = Some("new-style".into());
    let mut rejected = None;
    for _ in 0..200 {
        match api.create(&PostParams::default(), &fresh).await {
            Err(kube::Error::Api(s)) if s.code == 422 => {
                rejected = Some(s);
                break;
            }
            Ok(_) => {
                api.delete("new-style", &DeleteParams::default())
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let rejected = rejected.expect("the tightened schema is enforced on create");
    assert!(
        rejected
            .message
            .contains("spec.message: Too long: may not be longer than 5"),
        "{}",
        rejected.message
    );
    // ...but an update that leaves the old message alone passes,
    let note = json!({"spec": {"note": "hi"}});
    api.patch("old-style", &PatchParams::default(), &Patch::Merge(&note))
        .await
        .expect("unchanged invalid values are ratcheted");
    // and one that changes it to another invalid value does not.
    let worse = json!({"spec": {"message": "an even longer message"}});
    let err = api
        .patch("old-style", &PatchParams::default(), &Patch::Merge(&worse))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );
}

/// A client that sees `Established` through a watch finds the resource in
/// discovery at once (the operator pattern: install the CRD, wait, resolve).
#[tokio::test]
async fn an_established_crd_is_already_in_discovery() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    for i in 0..10 {
        let mut crd = greeting_crd();
        let group = format!("g{i}.example.com");
        crd.metadata.name = Some(format!("greetings.{group}"));
        crd.spec.group = group.clone();
        crds.create(&PostParams::default(), &crd).await.unwrap();
        let name = format!("greetings.{group}");
        let wait = kube::runtime::wait::await_condition(
            crds.clone(),
            &name,
            kube::runtime::conditions::is_crd_established(),
        );
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("established in time")
            .unwrap();
        let served = f
            .client
            .list_api_group_resources(&format!("{group}/v1"))
            .await
            .unwrap();
        assert!(
            served.resources.iter().any(|r| r.name == "greetings"),
            "{group}: {served:?}"
        );
    }
}

/// A default added to a CRD applies to objects already stored, in lists too: a list keeps
/// each object's encoding for the next list, but not for a CRD with defaults.
#[tokio::test]
async fn a_default_added_later_shows_in_lists() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let (_, api) = one_greeting(&crds, &f.client, "g1", "hi").await;
    for _ in 0..2 {
        let listed = api.list(&Default::default()).await.unwrap();
        assert_eq!(listed.items[0].data["spec"], json!({"message": "hi"}));
    }
    set_spec_properties(
        &crds,
        json!({"message": {"type": "string"}, "color": {"type": "string", "default": "blue"}}),
    )
    .await;
    let mut got = json!(null);
    for _ in 0..500 {
        got = api.get("g1").await.unwrap().data["spec"].clone();
        if got.get("color").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        got,
        json!({"message": "hi", "color": "blue"}),
        "GET applies it"
    );
    let listed = api.list(&Default::default()).await.unwrap();
    assert_eq!(
        listed.items[0].data["spec"],
        json!({"message": "hi", "color": "blue"}),
        "so does a list"
    );
}

/// As kube-apiserver's PrepareForCreate (issue 39): the object `create` returns has a status
/// with the storage version stored and the names not yet accepted.
#[tokio::test]
async fn a_crd_s_create_response_has_its_initial_status() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let created = crds
        .create(&PostParams::default(), &greeting_crd())
        .await
        .unwrap();
    let status = created.status.expect("a status on the create response");
    assert_eq!(status.stored_versions, Some(vec!["v1".to_string()]));
    let names = status.accepted_names.expect("acceptedNames");
    assert_eq!(names.plural, "");
    assert_eq!(names.kind, "");
    assert!(status.conditions.unwrap_or_default().is_empty());
    // The controller then accepts the names.
    let established = established(&crds, "greetings.example.com").await;
    let accepted = established
        .status
        .and_then(|s| s.accepted_names)
        .expect("accepted");
    assert_eq!(accepted.plural, "greetings");
}
