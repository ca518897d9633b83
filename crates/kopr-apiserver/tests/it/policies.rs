//! ValidatingAdmissionPolicies through kube-rs: policies and bindings are
//! validated and defaulted as kube does, and writes and deletions are
//! denied or warned about with kube 1.32's messages: parameters by name and
//! by selector, variables, messageExpression, matchConditions, failure
//! policies, missing parameters and the type-checking status.

use crate::common;

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("object")
}

/// A policy on ConfigMaps (CREATE, UPDATE) with `spec` merged in.
async fn policy(client: &kube::Client, name: &str, spec: Value) -> DynamicObject {
    let mut full = json!({
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
    });
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        full.extend(extra.clone());
    }
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": full});
    policies(client)
        .create(&PostParams::default(), &object(body))
        .await
        .expect("policy created")
}

async fn bind(client: &kube::Client, name: &str, spec: Value) {
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec});
    bindings(client)
        .create(&PostParams::default(), &object(body))
        .await
        .expect("binding created");
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("cm")
}

async fn create(api: &Api<ConfigMap>, name: &str, data: Value) -> Result<ConfigMap, kube::Error> {
    api.create(&PostParams::default(), &config_map(name, data))
        .await
}

#[tokio::test]
async fn a_policy_with_a_parameter_denies_with_kubes_message() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    // The parameter: the most keys a ConfigMap may have.
    create(&cms, "limits", json!({"maxKeys": "2"}))
        .await
        .expect("param");
    let created = policy(
        &f.client,
        "max-keys",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "not-the-limits", "expression": "object.metadata.name != 'limits'"}],
            "variables": [{"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"}],
            "validations": [{
                "expression": "variables.keys <= int(params.data.maxKeys)",
                "messageExpression": "'at most ' + params.data.maxKeys + ' keys, got ' + string(variables.keys)",
                "reason": "Forbidden",
            }],
        }),
    )
    .await;
    // Defaults, as kube sets them.
    assert_eq!(created.data["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        created.data["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        created.data["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    assert_eq!(created.metadata.generation, Some(1));
    bind(
        &f.client,
        "max-keys-default",
        json!({"policyName": "max-keys", "validationActions": ["Deny"],
               "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
    )
    .await;

    create(&cms, "small", json!({"a": "1", "b": "2"}))
        .await
        .expect("within the limit");
    let e = status_of(
        create(&cms, "big", json!({"a": "1", "b": "2", "c": "3"}))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-default' denied request: at most 2 keys, got 3"
    );
    let details = e.details.expect("details");
    assert_eq!(details.name, "big");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(
        details.causes[0].message,
        "ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-default' denied request: at most 2 keys, got 3"
    );

    // The parameter object changed: the policy follows it.
    let mut limits = cms.get("limits").await.expect("limits");
    limits.data = Some([("maxKeys".to_string(), "3".to_string())].into());
    cms.replace("limits", &PostParams::default(), &limits)
        .await
        .expect("limit raised");
    create(&cms, "big", json!({"a": "1", "b": "2", "c": "3"}))
        .await
        .expect("allowed now");

    // In a namespace without the parameter: `Deny` when it is missing.
    Api::<Namespace>::all(f.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let other: Api<ConfigMap> = Api::namespaced(f.client.clone(), "other");
    let e = status_of(create(&other, "any", json!({})).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "configmaps \"any\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-default' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
}

#[tokio::test]
async fn warn_sends_a_warning_and_writes_go_through() {
    let f = common::start().await;
    policy(
        &f.client,
        "needs-owner",
        json!({"validations": [{"expression": "has(object.metadata.labels) && 'owner' in object.metadata.labels",
                                "message": "every ConfigMap needs an owner label"}]}),
    )
    .await;
    bind(
        &f.client,
        "needs-owner",
        json!({"policyName": "needs-owner", "validationActions": ["Warn", "Audit"]}),
    )
    .await;
    let body = serde_json::to_vec(&config_map("unowned", json!({}))).expect("body");
    let (code, headers, text) = raw(
        &f.client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        body,
    )
    .await;
    assert_eq!(code, 201, "{text}");
    assert_eq!(
        warnings(&headers),
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'needs-owner' with binding 'needs-owner': every ConfigMap needs an owner label\""
        ]
    );
}

#[tokio::test]
async fn failure_policies_decide_on_expression_errors() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    for (name, failure_policy) in [("strict", "Fail"), ("lenient", "Ignore")] {
        policy(
            &f.client,
            name,
            json!({"failurePolicy": failure_policy,
                   "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps"]}],
                        "objectSelector": {"matchLabels": {"policy": name}}},
                   "validations": [{"expression": "object.data.required == 'yes'"}]}),
        )
        .await;
        bind(
            &f.client,
            name,
            json!({"policyName": name, "validationActions": ["Deny"]}),
        )
        .await;
    }
    let labelled = |name: &str, policy: &str, data: Value| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"policy": policy}}, "data": data}),
        )
        .expect("cm")
    };
    let e = status_of(
        cms.create(&PostParams::default(), &labelled("a", "strict", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.data.required == 'yes'' resulted in error: no such key: data"
    );
    cms.create(&PostParams::default(), &labelled("b", "lenient", json!({})))
        .await
        .expect("an error is ignored under Ignore");
    // A plain false without message: kube's fallback.
    let e = status_of(
        cms.create(
            &PostParams::default(),
            &labelled("c", "lenient", json!({"required": "no"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'lenient' with binding 'lenient' denied request: failed expression: object.data.required == 'yes'"
    );
    // Neither policy matches an unlabelled ConfigMap.
    create(&cms, "d", json!({})).await.expect("not selected");
}

#[tokio::test]
async fn deletions_and_selected_parameters_are_evaluated() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    // Every ConfigMap labelled `role=protect` names one that may not be deleted.
    for (name, protected) in [("p1", "keep-me"), ("p2", "and-me")] {
        let param: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"role": "protect"}},
            "data": {"name": protected}}))
        .expect("param");
        cms.create(&PostParams::default(), &param)
            .await
            .expect("param");
    }
    policy(
        &f.client,
        "protected",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "oldObject.metadata.name != params.data.name && object == null",
                             "messageExpression": "oldObject.metadata.name + ' is protected by ' + params.metadata.name"}],
        }),
    )
    .await;
    bind(
        &f.client,
        "protected",
        json!({"policyName": "protected", "validationActions": ["Deny"],
               "paramRef": {"selector": {"matchLabels": {"role": "protect"}},
                            "parameterNotFoundAction": "Allow"}}),
    )
    .await;
    for name in ["keep-me", "and-me", "free"] {
        create(&cms, name, json!({})).await.expect("created");
    }
    let e = status_of(
        cms.delete("and-me", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "configmaps \"and-me\" is forbidden: ValidatingAdmissionPolicy 'protected' with binding 'protected' denied request: and-me is protected by p2"
    );
    cms.delete("free", &DeleteParams::default())
        .await
        .expect("unprotected");
    assert!(cms.get_opt("and-me").await.expect("get").is_some());
}

#[tokio::test]
async fn invalid_policies_and_bindings_are_refused() {
    let f = common::start().await;
    let bad = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "bad"},
        "spec": {"validations": [{"expression": "object.x ==", "reason": "Teapot"}]}});
    let e = status_of(
        policies(&f.client)
            .create(&PostParams::default(), &object(bad))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: ["
        ),
        "{}",
        e.message
    );
    let fields: Vec<String> = e
        .details
        .expect("details")
        .causes
        .iter()
        .map(|c| format!("{} {}", c.reason, c.field))
        .collect();
    assert!(
        fields.contains(&"FieldValueRequired spec.matchConstraints".to_string()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"FieldValueInvalid spec.validations[0].expression".to_string()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"FieldValueNotSupported spec.validations[0].reason".to_string()),
        "{fields:?}"
    );

    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"],
                 "paramRef": {"name": "x", "selector": {}}}});
    let e = status_of(
        bindings(&f.client)
            .create(&PostParams::default(), &object(binding))
            .await
            .unwrap_err(),
    );
    assert!(
        e.message.contains("spec.validationActions: Invalid value: []string{\"Deny\", \"Warn\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("spec.paramRef.name: Forbidden: name and selector are mutually exclusive"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("spec.paramRef.parameterNotFoundAction: Required value"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn a_binding_without_its_policy_and_admission_objects_are_left_alone() {
    let f = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(f.client.clone(), "default");
    bind(
        &f.client,
        "orphan",
        json!({"policyName": "not-there", "validationActions": ["Deny"]}),
    )
    .await;
    create(&cms, "fine", json!({})).await.expect("no policy");
    // A policy denying everything does not lock policies or bindings.
    policy(
        &f.client,
        "deny-all",
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
            "operations": ["*"], "resources": ["*"]}]},
               "validations": [{"expression": "false", "message": "no"}]}),
    )
    .await;
    bind(
        &f.client,
        "deny-all",
        json!({"policyName": "deny-all", "validationActions": ["Deny"]}),
    )
    .await;
    let e = status_of(create(&cms, "refused", json!({})).await.unwrap_err());
    assert!(e.message.ends_with("denied request: no"), "{}", e.message);
    bindings(&f.client)
        .delete("deny-all", &DeleteParams::default())
        .await
        .expect("bindings stay writable");
    create(&cms, "refused", json!({}))
        .await
        .expect("allowed again");
}

#[tokio::test]
async fn the_status_reports_type_checking_of_each_generation() {
    let f = common::start().await;
    policy(
        &f.client,
        "typed",
        json!({"validations": [{"expression": "object.datum.size() < 3"},
                               {"expression": "size(object.data) < 3"}]}),
    )
    .await;
    let checked = |generation: i64| {
        move |o: Option<&DynamicObject>| {
            o.is_some_and(|o| o.data["status"]["observedGeneration"] == generation)
        }
    };
    let wait = kube::runtime::wait::await_condition(policies(&f.client), "typed", checked(1));
    let seen = tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .expect("status in time")
        .expect("watch")
        .expect("policy");
    assert_eq!(
        seen.data["status"]["typeChecking"],
        json!({"expressionWarnings": [{"fieldRef": "spec.validations[0].expression",
            "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'datum'\n | object.datum.size() < 3\n | ......^\n"}]})
    );
    // A fixed expression: generation 2, no warnings.
    let patch = json!({"spec": {"validations": [{"expression": "size(object.data) < 3"}]}});
    policies(&f.client)
        .patch(
            "typed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("patched");
    let wait = kube::runtime::wait::await_condition(policies(&f.client), "typed", checked(2));
    let seen = tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .expect("status in time")
        .expect("watch")
        .expect("policy");
    assert_eq!(seen.data["status"]["typeChecking"], json!({}));
    assert_eq!(seen.metadata.generation, Some(2));
}

#[tokio::test]
async fn an_equivalent_version_is_evaluated_as_the_policy_matches_it() {
    let f = common::start().await;
    two_version_crd(&f.client).await;
    policy(
        &f.client,
        "tool-weight",
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["tools"]}]},
               "validations": [{"expression": "object.spec.weight < 10",
                   "messageExpression": "object.apiVersion + ' (asked as ' + request.requestKind.version + '): too heavy'"}]}),
    )
    .await;
    bind(
        &f.client,
        "tool-weight",
        json!({"policyName": "tool-weight", "validationActions": ["Deny"]}),
    )
    .await;
    let v2 = ApiResource {
        group: "example.com".into(),
        version: "v2".into(),
        api_version: "example.com/v2".into(),
        kind: "Tool".into(),
        plural: "tools".into(),
    };
    let tools: Api<DynamicObject> = Api::namespaced_with(f.client.clone(), "default", &v2);
    let heavy = object(json!({"apiVersion": "example.com/v2", "kind": "Tool",
        "metadata": {"name": "anvil"}, "spec": {"weight": 50}}));
    let e = status_of(
        tools
            .create(&PostParams::default(), &heavy)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "tools.example.com \"anvil\" is forbidden: ValidatingAdmissionPolicy 'tool-weight' with binding 'tool-weight' denied request: example.com/v1 (asked as v2): too heavy"
    );
}
