//! CEL validation rules of CRDs through kube-rs: rules with optional types
//! (`optionalOldSelf`, `.?field`, `optMap`, `orValue`) served and enforced on
//! create and update with kube's messages, and CRDs whose rules do not
//! compile refused with kube's 422.

use crate::common;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

const CRD_NAME: &str = "widgets.example.com";

fn widget_crd(rules: Value, name_rules: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": rules,
                    "properties": {
                        "x": {"type": "boolean"},
                        "name": {"type": "string", "x-kubernetes-validations": name_rules},
                        "sub": {"type": "object", "properties": {"a": {"type": "string"}}}
                    }
                }}
            }}}]
        }
    }))
    .unwrap()
}

fn optional_rules() -> (Value, Value) {
    (
        json!([
            {"rule": "oldSelf.optMap(o, !o.x || self.x).orValue(true)", "optionalOldSelf": true,
             "message": "x may not be turned off"},
            {"rule": "self.?name.orValue('') != 'wrong'", "message": "name may not be wrong"},
            {"rule": "!oldSelf.?sub.?a.hasValue() || self.?sub.?a.hasValue()", "optionalOldSelf": true,
             "messageExpression": "'sub.a may not be removed, it was ' + oldSelf.?sub.?a.orValue('unset')"}
        ]),
        json!([
            {"rule": "oldSelf.hasValue() || self.startsWith('w')", "optionalOldSelf": true,
             "message": "a new name must start with w"}
        ]),
    )
}

async fn established(crds: &Api<CustomResourceDefinition>, name: &str) {
    let wait = kube::runtime::wait::await_condition(
        crds.clone(),
        name,
        kube::runtime::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("established in time")
        .unwrap();
}

fn widgets(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

/// The 422 message of a rejected request.
fn invalid(r: Result<DynamicObject, kube::Error>) -> String {
    match r {
        Err(kube::Error::Api(s)) if s.code == 422 => s.message,
        other => panic!("expected a 422, got {other:?}"),
    }
}

#[tokio::test]
async fn optional_rules_are_served_and_enforced() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let (rules, name_rules) = optional_rules();
    crds.create(&PostParams::default(), &widget_crd(rules, name_rules))
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;
    let api = widgets(&f.client);
    let pp = PostParams::default();

    // Create: transition rules with optionalOldSelf run, oldSelf is none.
    api.create(&pp, &widget("w1", json!({"x": true, "name": "wa"})))
        .await
        .unwrap();
    assert_eq!(
        invalid(
            api.create(&pp, &widget("w2", json!({"name": "wrong"})))
                .await
        ),
        "Widget.example.com \"w2\" is invalid: spec: Invalid value: \"object\": name may not be wrong"
    );
    assert_eq!(
        invalid(api.create(&pp, &widget("w3", json!({"name": "abc"}))).await),
        "Widget.example.com \"w3\" is invalid: spec.name: Invalid value: \"string\": a new name must start with w"
    );
    api.create(&pp, &widget("w4", json!({"sub": {}})))
        .await
        .unwrap();

    // Update: oldSelf holds the old value.
    let patch = |spec: Value| Patch::Merge(json!({ "spec": spec }));
    let pat = PatchParams::default();
    assert_eq!(
        invalid(api.patch("w1", &pat, &patch(json!({"x": false}))).await),
        "Widget.example.com \"w1\" is invalid: spec: Invalid value: \"object\": x may not be turned off"
    );
    // The name existed: it may change to anything.
    let w1 = api
        .patch("w1", &pat, &patch(json!({"name": "abc"})))
        .await
        .unwrap();
    assert_eq!(w1.data["spec"]["name"], "abc");
    api.patch("w1", &pat, &patch(json!({"sub": {"a": "1"}})))
        .await
        .unwrap();
    assert_eq!(
        invalid(
            api.patch("w1", &pat, &patch(json!({"sub": {"a": null}})))
                .await
        ),
        "Widget.example.com \"w1\" is invalid: spec: Invalid value: \"object\": sub.a may not be removed, it was 1"
    );
    // A name added by an update has no old value: it must start with w.
    api.create(&pp, &widget("w5", json!({"x": false})))
        .await
        .unwrap();
    assert_eq!(
        invalid(api.patch("w5", &pat, &patch(json!({"name": "zz"}))).await),
        "Widget.example.com \"w5\" is invalid: spec.name: Invalid value: \"string\": a new name must start with w"
    );
    api.patch("w5", &pat, &patch(json!({"name": "wz", "x": true})))
        .await
        .unwrap();
}

#[tokio::test]
async fn crds_with_rules_that_do_not_compile_are_refused() {
    let f = common::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(f.client.clone());
    let broken = widget_crd(json!([{"rule": "self.nope > 1"}]), json!([]));
    let err = common::status_of(
        crds.create(&PostParams::default(), &broken)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.nope > 1\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 1\n | ....^"
    );
    let details = err.details.expect("details");
    let causes: Vec<(String, String)> = details
        .causes
        .iter()
        .map(|c| (c.reason.clone(), c.field.clone()))
        .collect();
    assert_eq!(
        causes,
        [(
            "FieldValueInvalid".to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
                .to_string()
        )]
    );
    assert!(crds.get_opt(CRD_NAME).await.unwrap().is_none());

    // Update: a valid CRD may not be given a rule that does not compile, nor
    // an optionalOldSelf rule that does not use oldSelf.
    let (rules, name_rules) = optional_rules();
    crds.create(&PostParams::default(), &widget_crd(rules, name_rules))
        .await
        .unwrap();
    established(&crds, CRD_NAME).await;
    let mut crd = crds.get(CRD_NAME).await.unwrap();
    let mut spec = serde_json::to_value(&crd.spec).unwrap();
    spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([
        {"rule": "self.x == 'yes'", "message": "m"},
        {"rule": "self.x", "optionalOldSelf": true}
    ]);
    crd.spec = serde_json::from_value(spec).unwrap();
    let err = common::status_of(
        crds.replace(CRD_NAME, &PostParams::default(), &crd)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let p = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        err.message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: [{p}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.x == 'yes'\", Message:\"m\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(bool, string)'\n | self.x == 'yes'\n | .......^, {p}[1].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule]"
        )
    );
    // The served version keeps the old rules.
    let api = widgets(&f.client);
    api.create(&PostParams::default(), &widget("w1", json!({"x": true})))
        .await
        .unwrap();
    assert_eq!(
        invalid(
            api.patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"x": false}}))
            )
            .await
        ),
        "Widget.example.com \"w1\" is invalid: spec: Invalid value: \"object\": x may not be turned off"
    );
}
