//! Who may point a ValidatingAdmissionPolicy at parameters (issue 33): a policy's
//! `paramKind` needs `get` on all objects of that kind, a binding's `paramRef` needs `get`
//! on the object it names, checked for the writer as kube-apiserver 1.32's
//! admissionregistration storage does, through kube-rs clients impersonating users.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common;

use crate::common::{bindings, policies};

/// A client of the server's admin that acts as `user` (groups: system:authenticated).
async fn client_as(server: &kopr_apiserver::ApiServer, user: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.auth_info.impersonate = Some(user.to_string());
    kube::Client::try_from(config).unwrap()
}

/// Grants `user` the cluster-wide `rules`.
async fn grant(admin: &kube::Client, user: &str, name: &str, rules: Value) {
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let role = serde_json::from_value(json!({"metadata": {"name": name}, "rules": rules})).unwrap();
    roles.create(&PostParams::default(), &role).await.unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let binding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

fn policy(name: &str, param_kind: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "paramKind": param_kind,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "true"}],
        },
    }))
    .unwrap()
}

fn binding(name: &str, policy: &str, param_ref: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": ["Deny"], "paramRef": param_ref},
    }))
    .unwrap()
}

fn assert_forbidden_field(e: kube::Error, field: &str, message: &str) {
    let s = common::status_of(e);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
    assert_eq!(s.message, message);
    let causes = s.details.map(|d| d.causes).unwrap_or_default();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].field, field);
    assert_eq!(causes[0].reason, "FieldValueForbidden");
}

const WRITE_POLICIES: &str = r#"[{"apiGroups": ["admissionregistration.k8s.io"],
    "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
    "verbs": ["create", "update", "patch", "get"]}]"#;

#[tokio::test]
async fn a_policy_s_param_kind_needs_get_on_all_its_objects() {
    let f = common::start().await;
    grant(
        &f.client,
        "bob",
        "policy-writer",
        serde_json::from_str(WRITE_POLICIES).unwrap(),
    )
    .await;
    let bob = client_as(&f.server, "bob").await;
    let e = policies(&bob)
        .create(
            &PostParams::default(),
            &policy("p", json!({"apiVersion": "v1", "kind": "ConfigMap"})),
        )
        .await
        .unwrap_err();
    assert_forbidden_field(
        e,
        "spec.paramKind",
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"p\" is invalid: spec.paramKind: Forbidden: user &{bob  [system:authenticated] map[]} must have \"get\" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)",
    );
    assert!(
        policies(&f.client).get_opt("p").await.unwrap().is_none(),
        "nothing stored"
    );
    // A policy without parameters needs nothing more.
    let mut plain = policy("plain", Value::Null);
    plain.data["spec"]
        .as_object_mut()
        .unwrap()
        .remove("paramKind");
    policies(&bob)
        .create(&PostParams::default(), &plain)
        .await
        .unwrap();

    // With get on config maps everywhere, bob may.
    grant(
        &f.client,
        "bob",
        "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    )
    .await;
    policies(&bob)
        .create(
            &PostParams::default(),
            &policy("p", json!({"apiVersion": "v1", "kind": "ConfigMap"})),
        )
        .await
        .unwrap();
    // Changing the paramKind to one bob cannot read is refused; an unknown kind needs get
    // on every resource of its group.
    // (Patched, not replaced: the policy's status controller writes meanwhile.)
    let e = policies(&bob)
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"paramKind": {"apiVersion": "example.com/v1", "kind": "Nope"}}}),
            ),
        )
        .await
        .unwrap_err();
    assert_forbidden_field(
        e,
        "spec.paramKind",
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"p\" is invalid: spec.paramKind: Forbidden: user &{bob  [system:authenticated] map[]} must have \"get\" permission on all objects of the referenced paramKind (kind=Nope, apiVersion=example.com/v1)",
    );
    // Another user may update the policy as long as its paramKind stays.
    grant(
        &f.client,
        "carol",
        "carol-writer",
        serde_json::from_str(WRITE_POLICIES).unwrap(),
    )
    .await;
    let carol = client_as(&f.server, "carol").await;
    policies(&carol)
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_binding_s_param_ref_needs_get_on_the_object_it_names() {
    let f = common::start().await;
    policies(&f.client)
        .create(
            &PostParams::default(),
            &policy("p", json!({"apiVersion": "v1", "kind": "ConfigMap"})),
        )
        .await
        .unwrap();
    grant(
        &f.client,
        "eve",
        "binding-writer",
        serde_json::from_str(WRITE_POLICIES).unwrap(),
    )
    .await;
    let eve = client_as(&f.server, "eve").await;
    let param_ref =
        json!({"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"});
    let refused = "user &{eve  [system:authenticated] map[]} does not have \"get\" permission on the object referenced by paramRef";
    let e = bindings(&eve)
        .create(
            &PostParams::default(),
            &binding("b", "p", param_ref.clone()),
        )
        .await
        .unwrap_err();
    assert_forbidden_field(
        e,
        "spec.paramRef",
        &format!(
            "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.paramRef: Forbidden: {refused}"
        ),
    );
    // The policy of a binding that is not there yet: get on everything is needed.
    let e = bindings(&eve)
        .create(
            &PostParams::default(),
            &binding("early", "missing", param_ref.clone()),
        )
        .await
        .unwrap_err();
    assert_forbidden_field(
        e,
        "spec.paramRef",
        &format!(
            "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"early\" is invalid: spec.paramRef: Forbidden: {refused}"
        ),
    );

    // get on exactly that config map is enough.
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(f.client.clone(), "default");
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "limits-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                           "resourceNames": ["limits"], "verbs": ["get"]}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    let role_bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(f.client.clone(), "default");
    role_bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "limits-reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "limits-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "eve"}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    let created = bindings(&eve)
        .create(&PostParams::default(), &binding("b", "p", param_ref))
        .await
        .unwrap();
    // Pointing it at another object is checked again, on update.
    let mut moved = created.clone();
    moved.data["spec"]["paramRef"]["name"] = json!("other");
    let e = bindings(&eve)
        .replace("b", &PostParams::default(), &moved)
        .await
        .unwrap_err();
    assert_forbidden_field(
        e,
        "spec.paramRef",
        &format!(
            "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.paramRef: Forbidden: {refused}"
        ),
    );
    // The cluster's admin (system:masters) is never asked.
    bindings(&f.client)
        .replace("b", &PostParams::default(), &moved)
        .await
        .unwrap();
}
